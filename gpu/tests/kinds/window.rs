//! The sliding-window filter: inserts that rotate where the core does (batches spanning
//! rotations, windows counted in keys and in time), lookups over every generation through the
//! static lookup paths, bit-identical to the core on every layout.

use bloomlanes_core::golden::unhex;
use bloomlanes_core::{
    FilterKind, Keys, Layout, Params, Records, Strings, WindowFilter, WindowUnit,
};
use bloomlanes_gpu::{DeviceBuffer, DeviceKeys, GpuError, GpuWindowFilter, InsertKernel};
use rand::Rng;

use crate::common::{self, answers, byte_keys};
use crate::words;

fn window_params(layout: Layout, blocks: u32, g: u16, unit: WindowUnit, span: u64) -> Params {
    Params::new(layout, blocks)
        .with_seed(7)
        .with_kind(FilterKind::Window {
            generations: g,
            unit,
            span,
        })
}

fn assert_same_window(g: &GpuWindowFilter, f: &WindowFilter, what: &str) {
    let d = g.download().unwrap();
    assert!(d.words() == f.words(), "{what}: words differ");
    assert_eq!(d.state(), f.state(), "{what}: state");
    assert_eq!(d.key_count(), f.key_count(), "{what}: key count");
}

#[test]
fn window_filters_need_window_parameters() {
    // Checked before any device is touched: holds with or without a GPU.
    let e = GpuWindowFilter::new(Params::new(Layout::L8x32, 10)).unwrap_err();
    assert!(
        matches!(
            e,
            GpuError::WrongKind {
                expected: "window",
                ..
            }
        ),
        "{e:?}"
    );
    let e =
        GpuWindowFilter::new(window_params(Layout::L8x32, 10, 0, WindowUnit::Keys, 5)).unwrap_err();
    assert!(matches!(e, GpuError::Unsupported(_)), "{e:?}");
    let e =
        GpuWindowFilter::new(window_params(Layout::L8x32, 10, 3, WindowUnit::Keys, 0)).unwrap_err();
    assert!(matches!(e, GpuError::Unsupported(_)), "{e:?}");
}

#[test]
fn window_every_layout_bit_identical_across_rotations() {
    common::on_every_layout(
        "window_every_layout_bit_identical_across_rotations",
        18,
        |r, layout| {
            for (case, (blocks, g, span)) in [
                (1u32, 1u16, 1u64),
                (3, 2, 7),
                (1000, 3, 500),
                (4099, 4, 20_000),
            ]
            .into_iter()
            .enumerate()
            {
                let what = format!("{layout} {blocks} blocks g={g} span={span}");
                let params = window_params(layout, blocks, g, WindowUnit::Keys, span);
                let mut f = WindowFilter::new(params).unwrap();
                let mut gw = GpuWindowFilter::new(params).unwrap();
                gw.set_chunk_keys(1000);
                // The static insert paths into a generation, in turn (7-block partitions, so that
                // small filters have several; the slice insert's window twin on every layout).
                let kernel = [
                    InsertKernel::BulkReduce,
                    InsertKernel::Atomic,
                    InsertKernel::Partitioned,
                    InsertKernel::Radix,
                    InsertKernel::Sliced,
                ][(case + layout as usize) % 5];
                gw.set_insert_kernel(kernel);
                gw.set_partition_bytes(7 * layout.block_bytes() as u64);
                let what = format!("{what} {kernel:?}");
                // Batches shorter than a generation, spanning one rotation, and longer than the
                // whole window, from host and device memory.
                for (i, len) in [0usize, 1, 63, 65, 4097, 20_011, 100_003]
                    .into_iter()
                    .enumerate()
                {
                    let keys: Vec<u64> = (0..len).map(|_| r.gen()).collect();
                    if i % 2 == 0 {
                        gw.insert(Keys::U64(&keys)).unwrap();
                    } else {
                        let dk = DeviceBuffer::from_host(&keys).unwrap();
                        gw.insert_device(DeviceKeys::U64(&dk)).unwrap();
                    }
                    for &k in &keys {
                        f.insert(&k);
                    }
                    assert_same_window(&gw, &f, &format!("{what}: batch {i}"));
                }
                gw.rotate().unwrap();
                f.as_view_mut().rotate();
                assert_same_window(&gw, &f, &format!("{what}: rotate"));
                let probe: Vec<u64> = (0..5001).map(|_| r.gen()).collect();
                let want = answers(Keys::U64(&probe), f.params().seed, |h| f.contains_hash(h));
                common::check_image_lookups(&mut gw, &probe, &want, &what);
                let up = GpuWindowFilter::upload(&f).unwrap();
                assert_same_window(&up, &f, &format!("{what}: upload"));
            }
        },
    );
}

#[test]
fn window_time_batches_match_core() {
    common::on_every_layout("window_time_batches_match_core", 19, |r, layout| {
        let params = window_params(layout, 300, 3, WindowUnit::Nanos, 1_000);
        let mut f = WindowFilter::new(params).unwrap();
        let mut gw = GpuWindowFilter::new(params).unwrap();
        let mut time = 10_000u64;
        for step in 0..30 {
            time = match step % 5 {
                0 => time + 5_000,
                1 => time.saturating_sub(700),
                _ => time + r.gen_range(0..1_500),
            };
            let keys: Vec<u64> = (0..r.gen_range(0..3000)).map(|_| r.gen()).collect();
            if step % 2 == 0 {
                gw.insert_at(Keys::U64(&keys), time).unwrap();
            } else {
                let dk = DeviceBuffer::from_host(&keys).unwrap();
                gw.insert_device_at(DeviceKeys::U64(&dk), time).unwrap();
            }
            for &k in &keys {
                f.insert_at(&k, time);
            }
            assert_same_window(&gw, &f, &format!("{layout} step {step}"));
        }
        // A time window takes no insert without a time.
        assert!(matches!(
            gw.insert(Keys::U64(&[1, 2, 3])),
            Err(GpuError::Unsupported(_))
        ));
    });
}

#[test]
fn window_golden_vectors() {
    for (layout, blocks, seed, f) in common::gpu_golden("window_golden_vectors", "window", 4) {
        let (g, span, n): (u16, u64, u64) = (
            f[0].parse().unwrap(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        );
        let (current, in_current): (u16, u64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        let want = words(&unhex(&f[5]).unwrap());
        let params = window_params(layout, blocks, g, WindowUnit::Keys, span).with_seed(seed);
        // In one batch and key by key in batches of 3.
        let keys: Vec<u64> = (0..n).collect();
        let mut one = GpuWindowFilter::new(params).unwrap();
        one.insert(Keys::U64(&keys)).unwrap();
        let mut threes = GpuWindowFilter::new(params).unwrap();
        for c in keys.chunks(3) {
            let dk = DeviceBuffer::from_host(c).unwrap();
            threes.insert_device(DeviceKeys::U64(&dk)).unwrap();
        }
        for gw in [&one, &threes] {
            let d = gw.download().unwrap();
            let what = format!("{layout} {blocks} g={g} span={span} n={n}");
            assert!(d.words() == want, "{what}");
            let state = (d.state().current, d.state().keys_in_current);
            assert_eq!(state, (current, in_current), "{what}");
        }
    }
}

#[test]
fn window_records_and_strings_match_core() {
    common::with_gpu("window_records_and_strings_match_core", 20, |r| {
        let params = window_params(Layout::L16x64, 500, 2, WindowUnit::Keys, 300);
        let mut f = WindowFilter::new(params).unwrap();
        let mut gw = GpuWindowFilter::new(params).unwrap();
        let (rec, data, offsets) = byte_keys(r, 700);
        let records = Keys::Records(Records::new(&rec, 13).unwrap());
        let strings = Keys::Strings(Strings::new(&data, &offsets).unwrap());
        let seed = params.seed;
        for keys in [records, strings] {
            gw.insert(keys).unwrap();
            for i in 0..keys.len() {
                f.insert_hash(keys.hash(i, seed));
            }
        }
        let dd = DeviceBuffer::from_host(&data).unwrap();
        let doff = DeviceBuffer::from_host(&offsets).unwrap();
        gw.insert_device(DeviceKeys::Strings {
            data: &dd,
            offsets: &doff,
        })
        .unwrap();
        for i in 0..strings.len() {
            f.insert_hash(strings.hash(i, seed));
        }
        assert_same_window(&gw, &f, "records and strings");
        let mut out = DeviceBuffer::<u8>::zeros(700).unwrap();
        gw.contains_device(
            DeviceKeys::Strings {
                data: &dd,
                offsets: &doff,
            },
            &mut out,
        )
        .unwrap();
        let want = answers(strings, seed, |h| f.contains_hash(h));
        assert_eq!(out.to_host().unwrap(), want);
    });
}
