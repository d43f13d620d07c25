//! The spatial filter and the generic cell filter: inserts with a class per batch or per key
//! (host and device keys, u64 keys and hashes), class lookups into u8, u16 and u32 answers,
//! every `CellUpdate` and `CellReduce` of the cell algebra, on every layout, 4-, 8- and 16-bit
//! cells and every path (direct, partitioned in shared-memory slices, partitioned with
//! compare-and-swap on the words), bit-identical to core's `SpatialFilter` and `CellsMut`; and
//! classes refused as the core refuses them, before anything is inserted.

use bloomlanes_core::cell::reduce_cells;
use bloomlanes_core::{
    CellBits, CellReduce, CellUpdate, FilterKind, Keys, Layout, Params, SpatialFilter,
};
use bloomlanes_gpu::{
    CellAnswer, DeviceBuffer, DeviceKeys, GpuCellFilter, GpuError, GpuSpatialFilter, GpuStream,
    InsertKernel, LookupKernel,
};
use rand::seq::SliceRandom;
use rand::Rng;

use crate::common::{self, answers};

const WIDTHS: [CellBits; 3] = [CellBits::Four, CellBits::Eight, CellBits::Sixteen];

/// The insert paths: (name, insert kernel, shared-memory slices).
const PATHS: [(&str, InsertKernel, bool); 3] = [
    ("direct", InsertKernel::BulkReduce, true),
    ("partitioned, slices", InsertKernel::Partitioned, true),
    ("partitioned, CAS", InsertKernel::Partitioned, false),
];

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

/// A core spatial filter with `classes` classes (at most what the width holds).
fn spatial(
    layout: Layout,
    blocks: u32,
    bits: CellBits,
    classes: usize,
    seed: u64,
) -> SpatialFilter {
    let params = Params::new(layout, blocks).with_seed(seed);
    let n = classes.min(bits.max() as usize);
    SpatialFilter::new(params, bits.bits(), &NAMES[..n]).unwrap()
}

/// Sets `g`'s insert path, with 7-block partitions so that small filters have several.
fn set_path(g: &mut GpuCellFilter, kernel: InsertKernel, shared: bool) {
    g.set_insert_kernel(kernel);
    g.set_shared_slices(shared);
    let seven_blocks = 7 * g.layout().block_bytes() as u64;
    g.set_partition_bytes(seven_blocks);
}

fn assert_same(g: &GpuSpatialFilter, f: &SpatialFilter, what: &str) {
    let d = g.download().unwrap();
    assert!(d.image_words() == f.image_words(), "{what}: image differs");
    assert!(d.cell_words() == f.cell_words(), "{what}: cells differ");
    assert_eq!(
        d.keys_per_class(),
        f.keys_per_class(),
        "{what}: keys per class"
    );
    assert!(d == *f, "{what}: the filters differ");
}

/// The GPU's class of each key (u32, u16 and, for cells of at most 8 bits, u8 answers; device
/// directly and partitioned, and host) against the core's `class_of_hash`.
fn check_classes(g: &mut GpuSpatialFilter, f: &SpatialFilter, keys: &[u64], what: &str) {
    let seed = f.params().seed;
    let want: Vec<u32> = (0..keys.len())
        .map(|i| f.class_of_hash(Keys::U64(keys).hash(i, seed)))
        .collect();
    let dk = DeviceBuffer::from_host(keys).unwrap();
    let s = GpuStream::new().unwrap();
    for kernel in [LookupKernel::Direct, LookupKernel::Partitioned] {
        g.set_lookup_kernel(kernel);
        let mut out = DeviceBuffer::<u32>::from_host(&vec![77; keys.len()]).unwrap();
        g.classes_device_async(DeviceKeys::U64(&dk), &mut out, &s)
            .unwrap();
        s.synchronize().unwrap();
        assert_eq!(
            out.to_host().unwrap(),
            want,
            "{what}: {kernel:?} u32 classes"
        );
        let narrow = |v: &[u32]| v.iter().map(|&c| c as u16).collect::<Vec<u16>>();
        let mut out = DeviceBuffer::<u16>::zeros(keys.len()).unwrap();
        g.classes_device_async(DeviceKeys::U64(&dk), &mut out, &s)
            .unwrap();
        s.synchronize().unwrap();
        assert_eq!(
            out.to_host().unwrap(),
            narrow(&want),
            "{what}: {kernel:?} u16"
        );
        let mut bytes = DeviceBuffer::<u8>::zeros(keys.len()).unwrap();
        let r = g.classes_device_async(DeviceKeys::U64(&dk), &mut bytes, &s);
        if f.cell_bits() == CellBits::Sixteen {
            assert!(matches!(r, Err(GpuError::Unsupported(_))), "{what}: {r:?}");
        } else {
            r.unwrap();
            s.synchronize().unwrap();
            let got: Vec<u32> = bytes.to_host().unwrap().iter().map(|&c| c.into()).collect();
            assert_eq!(got, want, "{what}: {kernel:?} u8 classes");
        }
    }
    let mut got = vec![9u32; keys.len()];
    g.classes_of(Keys::U64(keys), &mut got).unwrap();
    assert_eq!(got, want, "{what}: host classes");
    // Membership in any class: the static lookups of the projection.
    let present = answers(Keys::U64(keys), seed, |h| f.contains_hash(h));
    common::check_image_lookups(g, keys, &present, &format!("{what}: membership"));
}

#[test]
fn spatial_filters_are_refused_as_the_core_refuses_them() {
    // Checked before any device is touched: holds with or without a GPU.
    let shape = Params::new(Layout::L8x32, 100);
    let sixteen: Vec<String> = (0..16).map(|i| format!("c{i}")).collect();
    let sixteen: Vec<&str> = sixteen.iter().map(String::as_str).collect();
    for (bits, names) in [
        (5, &NAMES[..2]),
        (8, &[][..]),
        (4, &sixteen[..]),
        (8, &["x", "x"][..]),
    ] {
        let e = GpuSpatialFilter::new(shape, bits, names).unwrap_err();
        let core = SpatialFilter::new(shape, bits, names).unwrap_err();
        assert_eq!(
            e,
            GpuError::Spatial(core.to_string()),
            "{bits} bits, {names:?}"
        );
    }
    let e = GpuCellFilter::new(shape.with_kind(FilterKind::Static)).unwrap_err();
    assert!(matches!(e, GpuError::WrongKind { .. }), "{e:?}");
}

#[test]
fn spatial_every_layout_width_and_path_bit_identical() {
    common::on_every_layout(
        "spatial_every_layout_width_and_path_bit_identical",
        31,
        |r, layout| {
            for bits in WIDTHS {
                for (case, (name, kernel, shared)) in PATHS.into_iter().enumerate() {
                    let blocks = [3u32, 1000, 65_537][case];
                    let mut f = spatial(layout, blocks, bits, 5, r.gen());
                    let what = format!("{layout} {bits:?} {blocks} blocks {name}");
                    let n = u32::from(f.classes());
                    let mut g = GpuSpatialFilter::upload(&f).unwrap();
                    set_path(&mut g, kernel, shared);
                    g.set_chunk_keys(1000);
                    // Small pools, so that keys repeat in several classes.
                    let pool: Vec<u64> = (0..3000).map(|_| r.gen()).collect();
                    for (i, len) in [0usize, 1, 63, 4097, 20_011, 65_536]
                        .into_iter()
                        .enumerate()
                    {
                        let keys: Vec<u64> = (0..len).map(|_| pool[r.gen_range(0..3000)]).collect();
                        let per_key: Vec<u32> = (0..len).map(|_| r.gen_range(1..=n)).collect();
                        let class = r.gen_range(1..=n);
                        let dk = DeviceBuffer::from_host(&keys).unwrap();
                        let dc = DeviceBuffer::from_host(&per_key).unwrap();
                        let hashes = i % 2 == 1;
                        let dkeys = if hashes {
                            DeviceKeys::Hashes(&dk)
                        } else {
                            DeviceKeys::U64(&dk)
                        };
                        let hkeys = if hashes {
                            Keys::Hashes(&keys)
                        } else {
                            Keys::U64(&keys)
                        };
                        match i % 4 {
                            0 => g.insert(hkeys, class).unwrap(),
                            1 => g.insert_device(dkeys, class).unwrap(),
                            2 => g.insert_classes(hkeys, &per_key).unwrap(),
                            _ => g.insert_device_classes(dkeys, &dc).unwrap(),
                        }
                        for (j, &pc) in per_key.iter().enumerate() {
                            let c = if i % 4 < 2 { class } else { pc };
                            f.insert_hash(hkeys.hash(j, f.params().seed), c).unwrap();
                        }
                        assert_same(&g, &f, &format!("{what}: batch {i}"));
                    }
                    let probe = crate::common::some_present(r, &pool, 5001, 2);
                    check_classes(&mut g, &f, &probe, &what);
                    let up = GpuSpatialFilter::upload(&f).unwrap();
                    assert_same(&up, &f, &format!("{what}: upload"));
                }
            }
        },
    );
}

#[test]
fn spatial_classes_are_checked_before_anything_is_inserted() {
    common::with_gpu(
        "spatial_classes_are_checked_before_anything_is_inserted",
        32,
        |r| {
            let mut f = spatial(Layout::L16x64, 777, CellBits::Eight, 3, 9);
            for k in 0..500u64 {
                f.insert(&k, (k % 3 + 1) as u32).unwrap();
            }
            let mut g = GpuSpatialFilter::upload(&f).unwrap();
            let keys: Vec<u64> = (0..2000).map(|_| r.gen()).collect();
            let dk = DeviceBuffer::from_host(&keys).unwrap();
            for class in [0u32, 4, u32::MAX] {
                assert!(matches!(
                    g.insert(Keys::U64(&keys), class),
                    Err(GpuError::Spatial(_))
                ));
                assert!(matches!(
                    g.insert_device(DeviceKeys::U64(&dk), class),
                    Err(GpuError::Spatial(_))
                ));
                let mut classes = vec![1u32; keys.len()];
                classes[777] = class;
                let e = g.insert_classes(Keys::U64(&keys), &classes).unwrap_err();
                assert!(matches!(e, GpuError::Spatial(_)), "{e:?}");
                let dc = DeviceBuffer::from_host(&classes).unwrap();
                let e = g
                    .insert_device_classes(DeviceKeys::U64(&dk), &dc)
                    .unwrap_err();
                assert!(e.to_string().contains("key 777"), "{e}");
                assert!(e.to_string().contains(&format!("class {class} ")), "{e}");
            }
            // Fewer classes than keys.
            let short = DeviceBuffer::from_host(&vec![1u32; keys.len() - 1]).unwrap();
            let e = g
                .insert_device_classes(DeviceKeys::U64(&dk), &short)
                .unwrap_err();
            assert!(matches!(e, GpuError::InputTooShort { .. }), "{e:?}");
            let e = g.insert_classes(Keys::U64(&keys), &[1, 2]).unwrap_err();
            assert!(matches!(e, GpuError::InputTooShort { .. }), "{e:?}");
            // Nothing was inserted, the per-class counts are unchanged.
            assert_same(&g, &f, "after refused inserts");
        },
    );
}

#[test]
fn spatial_one_key_in_every_class_keeps_the_highest() {
    // One key 2^20 times with shuffled classes (and others), in one batch on every path: Max
    // commutes, so the cells are the core's whatever the order.
    let Some(mut r) = common::gpu_rng("spatial_one_key_in_every_class_keeps_the_highest", 33)
    else {
        return;
    };
    for (name, kernel, shared) in PATHS {
        for bits in WIDTHS {
            let mut f = spatial(Layout::L8x32, 3000, bits, 5, r.gen());
            let mut g = GpuSpatialFilter::upload(&f).unwrap();
            set_path(&mut g, kernel, shared);
            let mut keys = vec![1u64; 1 << 20];
            keys.extend(1000..21_000u64);
            keys.shuffle(&mut r);
            let classes: Vec<u32> = (0..keys.len()).map(|_| r.gen_range(1..=5)).collect();
            let (dk, dc) = (
                DeviceBuffer::from_host(&keys).unwrap(),
                DeviceBuffer::from_host(&classes).unwrap(),
            );
            g.insert_device_classes(DeviceKeys::U64(&dk), &dc).unwrap();
            for (k, &c) in keys.iter().zip(&classes) {
                f.insert(k, c).unwrap();
            }
            assert_same(&g, &f, &format!("{name} {bits:?}"));
            assert_eq!(f.class_of(&1u64), 5, "the highest class wins");
        }
    }
}

#[test]
fn cell_filter_every_update_and_reduction_matches_cells_mut() {
    common::on_every_layout(
        "cell_filter_every_update_and_reduction_matches_cells_mut",
        34,
        |r, layout| {
            for bits in WIDTHS {
                let max = bits.max();
                for (case, u) in [
                    CellUpdate::Set,
                    CellUpdate::Increment,
                    CellUpdate::Decrement,
                    CellUpdate::Decay,
                    CellUpdate::Max(max / 2),
                    CellUpdate::Max(max + 3),
                ]
                .into_iter()
                .enumerate()
                {
                    let (name, kernel, shared) = PATHS[case % 3];
                    let what = format!("{layout} {bits:?} {u:?} {name}");
                    // A varied state: keys at random classes and counts.
                    let mut f = spatial(layout, [5u32, 700, 20_000][case % 3], bits, 1, r.gen());
                    let mut v = f.as_view_mut();
                    for _ in 0..30_000 {
                        let op = [CellUpdate::Increment, CellUpdate::Max(r.gen_range(0..=max))]
                            [r.gen_range(0..2)];
                        v.update_hash(r.gen(), op);
                    }
                    let params = *f.params();
                    let mut g =
                        GpuCellFilter::upload(params, f.image_words(), f.cell_words(), None)
                            .unwrap();
                    set_path(&mut g, kernel, shared);
                    let keys: Vec<u64> = (0..40_000).map(|_| r.gen()).collect();
                    let dk = DeviceBuffer::from_host(&keys).unwrap();
                    g.update_device(DeviceKeys::Hashes(&dk), u).unwrap();
                    for &h in &keys {
                        f.as_view_mut().update_hash(h, u);
                    }
                    let (mut image, mut cells) =
                        (f.image_words().to_vec(), f.cell_words().to_vec());
                    g.download_into(&mut image, &mut cells).unwrap();
                    assert!(image == f.image_words(), "{what}: image");
                    assert!(cells == f.cell_words(), "{what}: cells");
                    for reduce in [CellReduce::AllNonZero, CellReduce::Min] {
                        let want: Vec<u32> = keys
                            .iter()
                            .map(|&h| reduce_cells(&params, bits, f.cell_words(), h, reduce))
                            .collect();
                        check_reduce::<u32>(&mut g, &dk, reduce, &want, &what);
                        check_reduce::<u16>(&mut g, &dk, reduce, &want, &what);
                        if bits != CellBits::Sixteen {
                            check_reduce::<u8>(&mut g, &dk, reduce, &want, &what);
                        }
                    }
                }
            }
        },
    );
}

/// `reduce` of `keys` (hashes) into `T` answers, directly and partitioned.
fn check_reduce<T: CellAnswer + Into<u32>>(
    g: &mut GpuCellFilter,
    keys: &DeviceBuffer<u64>,
    reduce: CellReduce,
    want: &[u32],
    what: &str,
) {
    for kernel in [LookupKernel::Direct, LookupKernel::Partitioned] {
        g.set_lookup_kernel(kernel);
        let mut out = DeviceBuffer::<T>::zeros(want.len()).unwrap();
        g.reduce_device(DeviceKeys::Hashes(keys), reduce, &mut out)
            .unwrap();
        let got: Vec<u32> = out.to_host().unwrap().into_iter().map(Into::into).collect();
        let bytes = std::mem::size_of::<T>();
        assert!(
            got == want,
            "{what}: {reduce:?} into {bytes}-byte answers, {kernel:?}"
        );
    }
}
