//! GPU tests: byte-identical filters and answers versus the core, for every layout and key form.
//! Without a GPU every test prints a SKIP line and passes.

mod common;

use bloomlanes_core::golden::filter_vectors;
use bloomlanes_core::Params;
use bloomlanes_core::{Filter, Keys, Layout, Records, Strings};
use bloomlanes_gpu::{
    probe, DeviceBuffer, DeviceKeys, GpuError, GpuFilter, GpuStream, InsertKernel, PinnedBuffer,
};
use common::{answers, assert_bitmap, byte_keys};
use rand::Rng;

fn core_answers(f: &Filter, keys: Keys<'_>) -> Vec<u8> {
    answers(keys, f.seed(), |h| f.contains_hash(h))
}

fn core_insert(f: &mut Filter, keys: Keys<'_>) {
    for i in 0..keys.len() {
        f.insert_hash(keys.hash(i, f.seed()));
    }
}

/// `g` downloads as `f`: the same bits, header and key count.
fn assert_downloads_as(g: &GpuFilter, f: &Filter, what: &str) {
    let d = g.download().unwrap();
    assert_eq!(d.to_image(), f.to_image(), "{what}: bits");
    assert_eq!(d, *f, "{what}: header and key count");
}

fn check_lookups(g: &GpuFilter, f: &Filter, keys: Keys<'_>, what: &str) {
    let want = core_answers(f, keys);
    let mut got = vec![7u8; keys.len()];
    g.contains(keys, &mut got).unwrap();
    assert_eq!(got, want, "{what}: byte answers");
    let mut bits = vec![u64::MAX; keys.len().div_ceil(64)];
    g.contains_bitmap(keys, &mut bits).unwrap();
    assert_bitmap(&bits, &want, what);
}

#[test]
fn probe_never_panics() {
    match probe() {
        Ok(d) => eprintln!("device: {d:?}"),
        Err(e) => common::skip(format_args!("probe_never_panics: {e}")),
    }
}

#[test]
fn u64_keys_every_layout_bit_identical() {
    common::with_gpu("u64_keys_every_layout_bit_identical", 1, |r| {
        for (layout, kernel) in Layout::ALL
            .into_iter()
            .flat_map(|l| [(l, InsertKernel::Atomic), (l, InsertKernel::BulkReduce)])
        {
            for blocks in [1u32, 3, 1000, 65_537] {
                let seed = r.gen::<u64>();
                let mut f = Filter::new(Params::new(layout, blocks).with_seed(seed));
                let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(seed)).unwrap();
                g.set_insert_kernel(kernel);
                // Several batches in a row, with empty and odd lengths; small chunks force the pipeline.
                g.set_chunk_keys(1000);
                for len in [0usize, 1, 63, 64, 65, 4097, 20_011] {
                    let keys: Vec<u64> = (0..len).map(|_| r.gen()).collect();
                    g.insert(Keys::U64(&keys)).unwrap();
                    core_insert(&mut f, Keys::U64(&keys));
                }
                assert_downloads_as(&g, &f, &format!("{layout} {blocks} {kernel:?}"));
                let present: Vec<u64> = (0..3000).map(|_| r.gen()).collect();
                g.insert(Keys::U64(&present)).unwrap();
                core_insert(&mut f, Keys::U64(&present));
                let absent: Vec<u64> = (0..5001).map(|_| r.gen()).collect();
                check_lookups(&g, &f, Keys::U64(&present), "present");
                check_lookups(&g, &f, Keys::U64(&absent), "absent");
                check_lookups(&g, &f, Keys::U64(&[]), "empty");
                assert!(core_answers(&f, Keys::U64(&present))
                    .iter()
                    .all(|&a| a == 1));
            }
        }
    });
}

#[test]
fn all_key_forms_match_core() {
    common::on_every_layout("all_key_forms_match_core", 2, |r, layout| {
        let blocks = 777;
        let seed = 42;
        let mut f = Filter::new(Params::new(layout, blocks).with_seed(seed));
        let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(seed)).unwrap();
        g.set_chunk_keys(128);
        let hashes: Vec<u64> = (0..1001).map(|_| r.gen()).collect();
        let (rec, data, offsets) = byte_keys(r, 1500);
        let records = Keys::Records(Records::new(&rec, 13).unwrap());
        let strings = Keys::Strings(Strings::new(&data, &offsets).unwrap());
        for keys in [Keys::Hashes(&hashes), records, strings] {
            g.insert(keys.slice(0..keys.len() / 2)).unwrap();
            core_insert(&mut f, keys.slice(0..keys.len() / 2));
        }
        assert_eq!(g.download().unwrap().to_image(), f.to_image(), "{layout}");
        for keys in [Keys::Hashes(&hashes), records, strings] {
            check_lookups(
                &g,
                &f,
                keys,
                &format!("{layout} {keys:?}")
                    .chars()
                    .take(40)
                    .collect::<String>(),
            );
        }
        // The same keys from device memory.
        let mut g2 = GpuFilter::new(Params::new(layout, blocks).with_seed(seed)).unwrap();
        let dh = DeviceBuffer::from_host(&hashes[..500]).unwrap();
        let dr = DeviceBuffer::from_host(&rec[..13 * 499]).unwrap();
        let half = (offsets.len() - 1) / 2; // the keys the host path inserted
        let dd = DeviceBuffer::from_host(&data[..offsets[half] as usize]).unwrap();
        let doff = DeviceBuffer::from_host(&offsets[..=half]).unwrap();
        g2.insert_device(DeviceKeys::Hashes(&dh)).unwrap();
        g2.insert_device(DeviceKeys::Records {
            data: &dr,
            width: 13,
        })
        .unwrap();
        g2.insert_device(DeviceKeys::Strings {
            data: &dd,
            offsets: &doff,
        })
        .unwrap();
        assert_eq!(
            g2.download().unwrap().to_image(),
            f.to_image(),
            "{layout} device keys"
        );
        let mut out = DeviceBuffer::<u8>::zeros(1001).unwrap();
        let all = DeviceBuffer::from_host(&hashes).unwrap();
        g2.contains_device(DeviceKeys::Hashes(&all), &mut out)
            .unwrap();
        assert_eq!(
            out.to_host().unwrap(),
            core_answers(&f, Keys::Hashes(&hashes))
        );
    });
}

#[test]
fn golden_vectors() {
    if !common::gpu("golden_vectors") {
        return;
    }
    let vectors = filter_vectors();
    assert!(!vectors.is_empty());
    for v in vectors {
        for kernel in InsertKernel::PATHS {
            // From host memory and from device memory.
            let keys: Vec<u64> = (0..v.keys).collect();
            let dk = DeviceBuffer::from_host(&keys).unwrap();
            for from_host in [true, false] {
                let params = Params::new(v.layout, v.blocks).with_seed(v.seed);
                let mut g = GpuFilter::new(params).unwrap();
                g.set_insert_kernel(kernel);
                if from_host {
                    g.insert(Keys::U64(&keys)).unwrap();
                } else {
                    g.insert_device(DeviceKeys::U64(&dk)).unwrap();
                }
                let what = format!("{} {} {kernel:?} host {from_host}", v.layout, v.blocks);
                assert_eq!(g.download().unwrap().to_image(), v.image, "{what}");
            }
        }
    }
}

#[test]
fn partitioned_insert_every_layout_bit_identical() {
    common::on_every_layout(
        "partitioned_insert_every_layout_bit_identical",
        4,
        |r, layout| {
            for blocks in [1u32, 3, 1000, 65_537] {
                // (partition bytes, scratch cap): the default (one partition for filters this small),
                // 7-block partitions with chunks of 1000 keys, and the most partitions (1-byte target:
                // more partitions than blocks for tiny filters, 2048 for the largest; for the radix
                // grouping, two levels from 257 partitions, up to 32,768).
                for (part_bytes, scratch) in [
                    (0u64, None),
                    (7 * layout.block_bytes() as u64, Some(1000)),
                    (1, Some(4096)),
                ] {
                    for kernel in [
                        InsertKernel::Partitioned,
                        InsertKernel::Radix,
                        InsertKernel::Sliced,
                    ] {
                        partitioned_case(r, layout, blocks, part_bytes, scratch, kernel);
                    }
                }
            }
        },
    );
}

/// One filter of `blocks` blocks inserted into by `kernel` (partitions of `part_bytes`, scratch
/// capped at `scratch`) in several batches, against core; then the one-level grouping alone.
fn partitioned_case(
    r: &mut impl Rng,
    layout: Layout,
    blocks: u32,
    part_bytes: u64,
    scratch: Option<usize>,
    kernel: InsertKernel,
) {
    let seed = r.gen::<u64>();
    let what = format!("{layout} {blocks} {part_bytes} {scratch:?} {kernel:?}");
    let mut f = Filter::new(Params::new(layout, blocks).with_seed(seed));
    let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(seed)).unwrap();
    g.set_insert_kernel(kernel);
    g.set_partition_bytes(part_bytes);
    if let Some(s) = scratch {
        g.set_scratch_keys(s);
    }
    assert!(g.partitioned_for(0), "{what}");
    assert!((1..=2048).contains(&g.partitions()), "{what}");
    let plan = g.insert_plan(100_003);
    assert_eq!(plan.kernel, kernel, "{what}");
    assert!(
        plan.levels() >= 1 && plan.partitions >= 1,
        "{what}: {plan:?}"
    );
    // Several batches in a row, empty and odd lengths, across tile (4096) boundaries.
    for len in [0usize, 1, 63, 64, 65, 4095, 4097, 20_011, 100_003] {
        let keys: Vec<u64> = (0..len).map(|_| r.gen()).collect();
        let dk = DeviceBuffer::from_host(&keys).unwrap();
        if len % 2 == 1 {
            g.insert_device(DeviceKeys::Hashes(&dk)).unwrap();
            core_insert(&mut f, Keys::Hashes(&keys));
        } else {
            g.insert_device(DeviceKeys::U64(&dk)).unwrap();
            core_insert(&mut f, Keys::U64(&keys));
        }
    }
    assert_downloads_as(&g, &f, &what);
    if kernel != InsertKernel::Partitioned {
        return;
    }
    // The grouped hashes are a permutation of the batch's hashes, in partition order.
    let keys: Vec<u64> = (0..9999).map(|_| r.gen()).collect();
    let dk = DeviceBuffer::from_host(&keys).unwrap();
    let mut out = DeviceBuffer::<u64>::zeros(keys.len()).unwrap();
    let s = GpuStream::new().unwrap();
    g.partition_device_async(DeviceKeys::U64(&dk), &mut out, &s)
        .unwrap();
    s.synchronize().unwrap();
    let got = out.to_host().unwrap();
    let parts = u64::from(g.partitions());
    let part = |h: u64| ((h >> 32) * parts) >> 32;
    assert!(
        got.windows(2).all(|w| part(w[0]) <= part(w[1])),
        "{what}: grouped"
    );
    let mut want: Vec<u64> = (0..keys.len())
        .map(|i| Keys::U64(&keys).hash(i, seed))
        .collect();
    let mut got = got;
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want, "{what}: same hashes");
}

#[test]
fn auto_insert_takes_the_cheapest_estimate_and_matches_core() {
    common::with_gpu(
        "auto_insert_takes_the_cheapest_estimate_and_matches_core",
        5,
        |r| {
            let layout = Layout::L8x32;
            let probe = GpuFilter::new(Params::new(layout, 1)).unwrap();
            assert_eq!(probe.insert_kernel(), InsertKernel::Auto);
            assert!(
                !probe.partitioned_for(1 << 24),
                "a 32-byte filter fits in L2"
            );
            // Filters of the L2's size and four times it, batches of 2^22 keys (chunks of 2^20).
            let l2 = probe.l2_bytes().max(32 << 20);
            for bytes in [l2, 4 * l2] {
                let blocks = (bytes / layout.block_bytes() as u64) as u32;
                let seed = r.gen();
                let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(seed)).unwrap();
                g.set_scratch_keys(1 << 20);
                let n = 1usize << 22;
                let plan = g.insert_plan(n);
                for k in InsertKernel::PATHS {
                    let other = g.insert_plan_with(k, n);
                    assert_eq!(other.kernel, k);
                    let candidate = !matches!(k, InsertKernel::Atomic | InsertKernel::Partitioned);
                    if candidate {
                        assert!(plan.estimate_ms <= other.estimate_ms, "{plan:?} {other:?}");
                    }
                }
                assert_eq!(g.partitioned_for(n), plan.levels() > 0, "{plan:?}");
                let keys: Vec<u64> = (0..n as u64 + 3).map(|_| r.gen()).collect();
                let mut f = Filter::new(Params::new(layout, blocks).with_seed(seed));
                core_insert(&mut f, Keys::U64(&keys));
                let dk = DeviceBuffer::from_host(&keys).unwrap();
                g.insert_device(DeviceKeys::U64(&dk)).unwrap();
                let d = g.download().unwrap();
                assert!(d.to_image() == f.to_image(), "auto ({plan:?}) differs");
                assert_eq!(d.key_count(), f.key_count());
            }
        },
    );
}

#[test]
fn upload_union_intersect_and_device_paths() {
    common::on_every_layout("upload_union_intersect_and_device_paths", 3, |r, layout| {
        let (blocks, seed) = (4099, 9);
        let a: Vec<u64> = (0..20_000).map(|_| r.gen()).collect();
        let b: Vec<u64> = (0..20_000).map(|_| r.gen()).collect();
        let mut fa = Filter::new(Params::new(layout, blocks).with_seed(seed));
        let mut fb = Filter::new(Params::new(layout, blocks).with_seed(seed));
        core_insert(&mut fa, Keys::U64(&a));
        core_insert(&mut fb, Keys::U64(&b));
        let mut ga = GpuFilter::upload(&fa).unwrap();
        assert_eq!(ga.download().unwrap(), fa);
        // Device-resident keys, async on a separate stream.
        let mut gb = GpuFilter::new(Params::new(layout, blocks).with_seed(seed)).unwrap();
        let db = DeviceBuffer::from_host(&b).unwrap();
        let s = GpuStream::new().unwrap();
        gb.insert_device_async(DeviceKeys::U64(&db), &s).unwrap();
        s.synchronize().unwrap();
        assert_eq!(gb.download().unwrap().to_image(), fb.to_image());
        let mut bits = DeviceBuffer::<u64>::zeros(b.len().div_ceil(64)).unwrap();
        gb.contains_bitmap_device_async(DeviceKeys::U64(&db), &mut bits, &s)
            .unwrap();
        s.synchronize().unwrap();
        assert!(
            bits.to_host().unwrap().iter().all(|&w| w == u64::MAX) || !b.len().is_multiple_of(64)
        );
        // Pinned fast path.
        let pk = PinnedBuffer::from_slice(&a).unwrap();
        let mut pout = PinnedBuffer::<u8>::zeros(a.len()).unwrap();
        ga.set_chunk_keys(4096);
        ga.contains_pinned(&pk, &mut pout).unwrap();
        assert!(pout.iter().all(|&x| x == 1));
        let mut gp = GpuFilter::new(Params::new(layout, blocks).with_seed(seed)).unwrap();
        gp.set_chunk_keys(4096);
        gp.insert_pinned(&pk).unwrap();
        assert_eq!(gp.download().unwrap().to_image(), fa.to_image());
        // Union and intersection.
        let mut fu = fa.clone();
        fu.union_with(&fb).unwrap();
        let mut fi = fa.clone();
        fi.intersect_with(&fb).unwrap();
        let mut gi = GpuFilter::upload(&fa).unwrap();
        ga.union_with(&gb).unwrap();
        gi.intersect_with(&gb).unwrap();
        assert_eq!(ga.download().unwrap(), fu);
        assert_eq!(gi.download().unwrap(), fi);
        let other = GpuFilter::new(Params::new(layout, blocks + 1).with_seed(seed)).unwrap();
        assert!(matches!(
            ga.union_with(&other),
            Err(GpuError::Incompatible(_))
        ));
    });
}

#[test]
fn too_large_for_the_device_is_a_clear_error() {
    if !common::gpu("too_large_for_the_device_is_a_clear_error") {
        return;
    }
    // 2^32 − 1 blocks of 128 bytes: 512 GiB.
    match GpuFilter::new(Params::new(Layout::L16x64, u32::MAX)) {
        Err(GpuError::OutOfMemory {
            requested_bytes,
            free_bytes,
            ..
        }) => {
            assert_eq!(requested_bytes, u64::from(u32::MAX) * 128);
            assert!(free_bytes < requested_bytes);
            let msg = GpuFilter::new(Params::new(Layout::L16x64, u32::MAX))
                .unwrap_err()
                .to_string();
            assert!(msg.contains("out of GPU memory"), "{msg}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

#[test]
fn device_string_offsets_are_checked_before_launch() {
    if !common::gpu("device_string_offsets_are_checked_before_launch") {
        return;
    }
    let params = Params::new(Layout::L8x32, 101).with_seed(5);
    let data = b"the quick brown fox".to_vec();
    let dd = DeviceBuffer::from_host(&data).unwrap();
    let len = data.len() as u64;
    // Out of order, past the end, past the end at the last offset, and a valid batch.
    for offsets in [
        vec![0u64, 4, 3, 9],
        vec![0, 4, len + 1, len],
        vec![0, 4, 9, len + 7],
        vec![0, 4, 9, len],
    ] {
        let want = Strings::new(&data, &offsets).map(|_| ());
        let doff = DeviceBuffer::from_host(&offsets).unwrap();
        let keys = DeviceKeys::Strings {
            data: &dd,
            offsets: &doff,
        };
        let mut g = GpuFilter::new(params).unwrap();
        let got = g.insert_device(keys);
        let mut out = DeviceBuffer::<u8>::zeros(offsets.len() - 1).unwrap();
        let looked = g.contains_device(keys, &mut out);
        let mut bits = DeviceBuffer::<u64>::zeros(1).unwrap();
        let s = GpuStream::new().unwrap();
        let bitmap = g.contains_bitmap_device_async(keys, &mut bits, &s);
        s.synchronize().unwrap();
        match want {
            Err(e) => {
                // The same error as core's check, and nothing inserted.
                for r in [&got, &looked, &bitmap] {
                    assert_eq!(r, &Err(GpuError::Batch(e)), "{offsets:?}");
                }
                let d = g.download().unwrap();
                assert_eq!(d.to_image(), Filter::new(params).to_image(), "{offsets:?}");
                assert_eq!(d.key_count(), Some(0));
            }
            Ok(()) => {
                got.unwrap();
                looked.unwrap();
                bitmap.unwrap();
                let mut f = Filter::new(params);
                let keys = Keys::Strings(Strings::new(&data, &offsets).unwrap());
                core_insert(&mut f, keys);
                assert_eq!(g.download().unwrap().to_image(), f.to_image());
                assert!(out.to_host().unwrap().iter().all(|&b| b == 1));
            }
        }
    }
    // Partitioning takes u64 keys or hashes only, whatever the offsets.
    let doff = DeviceBuffer::from_host(&[0u64, 99]).unwrap();
    let mut g = GpuFilter::new(params).unwrap();
    let mut out = DeviceBuffer::<u64>::zeros(1).unwrap();
    let s = GpuStream::new().unwrap();
    assert!(matches!(
        g.partition_device_async(
            DeviceKeys::Strings {
                data: &dd,
                offsets: &doff
            },
            &mut out,
            &s
        ),
        Err(GpuError::HashMismatch(_))
    ));
    // Malformed records are refused on the host.
    let r = g.insert_device(DeviceKeys::Records {
        data: &dd,
        width: 7,
    });
    assert!(matches!(r, Err(GpuError::Batch(_))), "{r:?}");
}

#[test]
fn lookups_on_another_stream_wait_for_queued_inserts() {
    if !common::gpu("lookups_on_another_stream_wait_for_queued_inserts") {
        return;
    }
    // Inserts hand the kernels the filter's words mutably, so a lookup queued on another stream
    // right after an asynchronous insert waits for it (cudarc's events), for every insert path.
    for kernel in InsertKernel::PATHS {
        let keys = DeviceBuffer::random_u64(1 << 20, 99).unwrap();
        let mut g = GpuFilter::new(Params::new(Layout::L8x32, 1 << 16).with_seed(3)).unwrap();
        g.set_insert_kernel(kernel);
        let (s1, s2) = (GpuStream::new().unwrap(), GpuStream::new().unwrap());
        g.insert_device_async(DeviceKeys::U64(&keys), &s1).unwrap();
        let mut out = DeviceBuffer::<u8>::zeros(keys.len()).unwrap();
        g.contains_device_async(DeviceKeys::U64(&keys), &mut out, &s2)
            .unwrap();
        s2.synchronize().unwrap();
        assert!(
            out.to_host().unwrap().iter().all(|&b| b == 1),
            "{kernel:?}: a lookup ran before the insert it follows"
        );
        s1.synchronize().unwrap();
    }
}
