//! GPU tests of the filter kinds of issue #14: the counting filter (inserts, deletes, lookups)
//! and the sliding-window filter, bit-identical to the core on every layout, with 4- and 8-bit
//! counters, odd batch sizes, batches spanning rotations and refused deletes. Without a GPU every
//! device test prints a SKIP line and passes; the argument checks that need no device run
//! everywhere.

mod common;

use bloomlanes_core::golden::{unhex, VECTORS};
use bloomlanes_core::{
    CounterBits, CountingFilter, FilterKind, Keys, Layout, Params, Records, Strings, WindowFilter,
    WindowUnit,
};
use bloomlanes_gpu::{
    DeviceBuffer, DeviceKeys, GpuCountingFilter, GpuError, GpuStream, GpuWindowFilter,
    InsertKernel, LookupKernel, LookupOutput,
};
use rand::{Rng, SeedableRng};

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

const BITS: [CounterBits; 2] = [CounterBits::Four, CounterBits::Eight];

fn counting_params(layout: Layout, blocks: u32, seed: u64, bits: CounterBits) -> Params {
    Params::new(layout, blocks)
        .with_seed(seed)
        .with_kind(FilterKind::Counting { counter_bits: bits })
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn assert_same(g: &GpuCountingFilter, f: &CountingFilter, what: &str) {
    let d = g.download().unwrap();
    assert!(d.image_words() == f.image_words(), "{what}: image differs");
    assert!(
        d.counter_words() == f.counter_words(),
        "{what}: counters differ"
    );
    assert_eq!(d.key_count(), f.key_count(), "{what}: key count");
}

/// The core's answers (and the core's per-key delete results, applying them to `f`).
fn core_answers(f: &CountingFilter, keys: Keys<'_>) -> Vec<u8> {
    let seed = f.params().seed;
    (0..keys.len())
        .map(|i| f.contains_hash(keys.hash(i, seed)) as u8)
        .collect()
}

fn core_remove(f: &mut CountingFilter, keys: Keys<'_>) -> Vec<u8> {
    let seed = f.params().seed;
    (0..keys.len())
        .map(|i| f.remove_hash(keys.hash(i, seed)).is_ok() as u8)
        .collect()
}

fn core_insert(f: &mut CountingFilter, keys: Keys<'_>) {
    let seed = f.params().seed;
    for i in 0..keys.len() {
        f.insert_hash(keys.hash(i, seed));
    }
}

fn check_counting_lookups(g: &mut GpuCountingFilter, f: &CountingFilter, keys: &[u64], what: &str) {
    let want = core_answers(f, Keys::U64(keys));
    let mut got = vec![9u8; keys.len()];
    g.contains(Keys::U64(keys), &mut got).unwrap();
    assert_eq!(got, want, "{what}: host lookups");
    let dk = DeviceBuffer::from_host(keys).unwrap();
    let mut out = DeviceBuffer::<u8>::zeros(keys.len()).unwrap();
    g.contains_device(DeviceKeys::U64(&dk), &mut out).unwrap();
    assert_eq!(out.to_host().unwrap(), want, "{what}: device lookups");
    for kernel in [LookupKernel::Direct, LookupKernel::Partitioned] {
        g.set_lookup_kernel(kernel);
        let mut bits = DeviceBuffer::<u64>::zeros(keys.len().div_ceil(64)).unwrap();
        g.lookup_device(DeviceKeys::U64(&dk), LookupOutput::Bitmap(&mut bits))
            .unwrap();
        let bits = bits.to_host().unwrap();
        for (i, &w) in want.iter().enumerate() {
            assert_eq!(
                (bits[i / 64] >> (i % 64)) & 1,
                u64::from(w),
                "{what}: bit {i}"
            );
        }
    }
}

#[test]
fn counting_filters_need_counting_parameters() {
    // Checked before any device is touched: holds with or without a GPU.
    for kind in [
        FilterKind::Static,
        FilterKind::Stable {
            counter_bits: CounterBits::Four,
            decrements: 3,
        },
    ] {
        let e = GpuCountingFilter::new(Params::new(Layout::L8x32, 10).with_kind(kind)).unwrap_err();
        assert!(
            matches!(
                e,
                GpuError::WrongKind {
                    expected: "counting",
                    ..
                }
            ),
            "{kind}: {e:?}"
        );
        assert!(e.to_string().contains("counting"), "{e}");
    }
}

#[test]
fn counting_every_layout_and_width_bit_identical() {
    if !common::gpu("counting_every_layout_and_width_bit_identical") {
        return;
    }
    let mut r = rng(14);
    for layout in Layout::ALL {
        for bits in BITS {
            for kernel in [InsertKernel::BulkReduce, InsertKernel::Partitioned] {
                for blocks in [1u32, 3, 1000, 65_537] {
                    let seed = r.gen::<u64>();
                    let what = format!("{layout} {bits:?} {kernel:?} {blocks}");
                    let params = counting_params(layout, blocks, seed, bits);
                    let mut f = CountingFilter::new(params).unwrap();
                    let mut g = GpuCountingFilter::new(params).unwrap();
                    g.set_insert_kernel(kernel);
                    g.set_partition_bytes(7 * layout.block_bytes() as u64);
                    g.set_chunk_keys(1000);
                    // Odd batch sizes, host and device, u64 keys and hashes; small pools so that
                    // keys repeat (and 4-bit counters of tiny filters saturate).
                    let pool: Vec<u64> = (0..3000).map(|_| r.gen()).collect();
                    let mut inserted = Vec::new();
                    for (i, len) in [0usize, 1, 63, 65, 4097, 20_011].into_iter().enumerate() {
                        let keys: Vec<u64> = (0..len).map(|_| pool[r.gen_range(0..3000)]).collect();
                        if i % 2 == 0 {
                            g.insert(Keys::U64(&keys)).unwrap();
                        } else {
                            let dk = DeviceBuffer::from_host(&keys).unwrap();
                            g.insert_device(DeviceKeys::U64(&dk)).unwrap();
                        }
                        core_insert(&mut f, Keys::U64(&keys));
                        inserted.extend(keys);
                    }
                    assert_same(&g, &f, &format!("{what}: inserts"));
                    // Deletes: inserted keys, keys deleted twice, and absent keys; per-key
                    // results from the core's key-by-key delete.
                    for (i, len) in [1usize, 64, 999, 5003].into_iter().enumerate() {
                        let keys: Vec<u64> = (0..len)
                            .map(|_| match r.gen_range(0..10) {
                                0 => r.gen(),
                                _ => inserted[r.gen_range(0..inserted.len())],
                            })
                            .collect();
                        let want = core_remove(&mut f, Keys::U64(&keys));
                        let report = if i % 2 == 0 {
                            let mut out = vec![7u8; keys.len()];
                            let rep = g.remove(Keys::U64(&keys), Some(&mut out)).unwrap();
                            assert_eq!(out, want, "{what}: host delete results");
                            rep
                        } else {
                            let dk = DeviceBuffer::from_host(&keys).unwrap();
                            let mut out = DeviceBuffer::<u8>::zeros(keys.len()).unwrap();
                            let rep = g
                                .remove_device(DeviceKeys::U64(&dk), Some(&mut out))
                                .unwrap();
                            assert_eq!(out.to_host().unwrap(), want, "{what}: device results");
                            rep
                        };
                        let deleted = want.iter().filter(|&&w| w == 1).count() as u64;
                        assert_eq!(report.deleted, deleted, "{what}: deleted");
                        assert_eq!(report.refused, len as u64 - deleted, "{what}: refused");
                        assert_same(&g, &f, &format!("{what}: delete of {len}"));
                    }
                    let probe: Vec<u64> = (0..4099)
                        .map(|i| if i % 2 == 0 { pool[i % 3000] } else { r.gen() })
                        .collect();
                    check_counting_lookups(&mut g, &f, &probe, &what);
                    // Upload, download and the projection.
                    let up = GpuCountingFilter::upload(&f).unwrap();
                    assert_same(&up, &f, &format!("{what}: upload"));
                    assert_eq!(
                        up.download_projection().unwrap().to_image(),
                        f.to_static().to_image(),
                        "{what}: projection"
                    );
                }
            }
        }
    }
}

#[test]
fn counting_golden_vectors() {
    if !common::gpu("counting_golden_vectors") {
        return;
    }
    let mut seen = 0;
    for line in VECTORS.lines().filter(|l| l.starts_with("counting ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let layout = Layout::from_name(f[1]).unwrap();
        let blocks: u32 = f[2].parse().unwrap();
        let seed: u64 = f[3].parse().unwrap();
        let bits = CounterBits::from_bits(f[4].parse().unwrap()).unwrap();
        let (n, d): (u64, u64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
        let image = words(&unhex(f[7]).unwrap());
        let counters = words(&unhex(f[8]).unwrap());
        for kernel in [InsertKernel::BulkReduce, InsertKernel::Partitioned] {
            let mut g =
                GpuCountingFilter::new(counting_params(layout, blocks, seed, bits)).unwrap();
            g.set_insert_kernel(kernel);
            // Keys 0..n, multiples of 3 twice (inserts commute), then 0..d deleted once.
            let keys: Vec<u64> = (0..n).collect();
            let threes: Vec<u64> = (0..n).filter(|k| k % 3 == 0).collect();
            let dk = DeviceBuffer::from_host(&keys).unwrap();
            g.insert_device(DeviceKeys::U64(&dk)).unwrap();
            g.insert(Keys::U64(&threes)).unwrap();
            let gone: Vec<u64> = (0..d).collect();
            let rep = g.remove(Keys::U64(&gone), None).unwrap();
            assert_eq!((rep.deleted, rep.refused), (d, 0), "{line}");
            let back = g.download().unwrap();
            assert!(
                back.image_words() == image,
                "{layout} {blocks} {kernel:?}: image"
            );
            assert!(
                back.counter_words() == counters,
                "{layout} {blocks} {kernel:?}: counters"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 8, "a counting line per layout and width");
}

#[test]
fn counting_deletes_of_absent_keys_are_refused_and_change_nothing() {
    if !common::gpu("counting_deletes_of_absent_keys_are_refused_and_change_nothing") {
        return;
    }
    let mut r = rng(15);
    for layout in Layout::ALL {
        let params = counting_params(layout, 4096, 3, CounterBits::Four);
        let mut f = CountingFilter::new(params).unwrap();
        let present: Vec<u64> = (0..2000).map(|_| r.gen()).collect();
        core_insert(&mut f, Keys::U64(&present));
        let mut g = GpuCountingFilter::upload(&f).unwrap();
        // Keys the core refuses (one counter zero): the GPU refuses them all, changing nothing.
        let absent: Vec<u64> = (0..100_000)
            .map(|_| r.gen())
            .filter(|&k| !f.contains(&k))
            .take(5000)
            .collect();
        let dk = DeviceBuffer::from_host(&absent).unwrap();
        let mut out = DeviceBuffer::<u8>::zeros(absent.len()).unwrap();
        let rep = g
            .remove_device(DeviceKeys::U64(&dk), Some(&mut out))
            .unwrap();
        assert_eq!(
            (rep.deleted, rep.refused),
            (0, absent.len() as u64),
            "{layout}"
        );
        assert!(out.to_host().unwrap().iter().all(|&b| b == 0));
        assert_same(&g, &f, &format!("{layout}: after refused deletes"));
        // Every present key deleted (in one batch): the filter is empty again.
        let rep = g.remove(Keys::U64(&present), None).unwrap();
        assert_eq!(rep.deleted, present.len() as u64, "{layout}");
        assert_eq!(rep.retries, 0, "{layout}: present keys never conflict");
        let d = g.download().unwrap();
        assert!(d.image_words().iter().all(|&w| w == 0), "{layout}: image");
        assert!(
            d.counter_words().iter().all(|&w| w == 0),
            "{layout}: counters"
        );
    }
}

#[test]
fn counting_conflicting_deletes_equal_the_core_in_input_order() {
    if !common::gpu("counting_conflicting_deletes_equal_the_core_in_input_order") {
        return;
    }
    // Tiny filters and keys deleted more often than inserted: attempts underflow and are split,
    // and the result is still the core's key-by-key delete.
    let mut r = rng(16);
    let mut retried = 0;
    for round in 0..40 {
        let layout = Layout::ALL[round % 4];
        let bits = BITS[round % 2];
        let params = counting_params(layout, r.gen_range(1..4), r.gen(), bits);
        let mut f = CountingFilter::new(params).unwrap();
        let pool: Vec<u64> = (0..r.gen_range(2..40)).map(|_| r.gen()).collect();
        let ins: Vec<u64> = (0..r.gen_range(1..100))
            .map(|_| pool[r.gen_range(0..pool.len())])
            .collect();
        core_insert(&mut f, Keys::U64(&ins));
        let mut g = GpuCountingFilter::upload(&f).unwrap();
        g.set_insert_kernel(if round % 3 == 0 {
            InsertKernel::Partitioned
        } else {
            InsertKernel::BulkReduce
        });
        let batch: Vec<u64> = (0..r.gen_range(1..200))
            .map(|_| {
                if r.gen_bool(0.8) {
                    pool[r.gen_range(0..pool.len())]
                } else {
                    r.gen()
                }
            })
            .collect();
        let want = core_remove(&mut f, Keys::U64(&batch));
        let mut got = vec![7u8; batch.len()];
        let rep = g.remove(Keys::U64(&batch), Some(&mut got)).unwrap();
        assert_eq!(got, want, "round {round}: per-key results");
        assert_same(&g, &f, &format!("round {round}"));
        retried += u32::from(rep.retries > 0);
    }
    assert!(
        retried > 5,
        "only {retried} rounds exercised the split path"
    );
}

#[test]
fn counting_records_and_strings_match_core() {
    if !common::gpu("counting_records_and_strings_match_core") {
        return;
    }
    let mut r = rng(17);
    for layout in Layout::ALL {
        let params = counting_params(layout, 777, 42, CounterBits::Eight);
        let mut f = CountingFilter::new(params).unwrap();
        let mut g = GpuCountingFilter::new(params).unwrap();
        g.set_chunk_keys(128);
        let rec: Vec<u8> = (0..13 * 999).map(|_| r.gen()).collect();
        let records = Keys::Records(Records::new(&rec, 13).unwrap());
        let mut data = Vec::new();
        let mut offsets = vec![0u64];
        for i in 0..1500 {
            data.extend((0..i % 81).map(|_| r.gen::<u8>()));
            offsets.push(data.len() as u64);
        }
        let strings = Keys::Strings(Strings::new(&data, &offsets).unwrap());
        for keys in [records, strings] {
            g.insert(keys).unwrap();
            core_insert(&mut f, keys);
        }
        // Device records and strings too.
        let dr = DeviceBuffer::from_host(&rec).unwrap();
        let dd = DeviceBuffer::from_host(&data).unwrap();
        let doff = DeviceBuffer::from_host(&offsets).unwrap();
        let drec = DeviceKeys::Records {
            data: &dr,
            width: 13,
        };
        let dstr = DeviceKeys::Strings {
            data: &dd,
            offsets: &doff,
        };
        g.insert_device(drec).unwrap();
        g.insert_device(dstr).unwrap();
        core_insert(&mut f, records);
        core_insert(&mut f, strings);
        assert_same(&g, &f, &format!("{layout}: inserts"));
        let want = core_remove(&mut f, strings.slice(0..700));
        let mut got = vec![0u8; 700];
        g.remove(strings.slice(0..700), Some(&mut got)).unwrap();
        assert_eq!(got, want, "{layout}: string deletes");
        let want = core_remove(&mut f, records);
        let mut out = DeviceBuffer::<u8>::zeros(999).unwrap();
        g.remove_device(drec, Some(&mut out)).unwrap();
        assert_eq!(out.to_host().unwrap(), want, "{layout}: record deletes");
        assert_same(&g, &f, &format!("{layout}: deletes"));
        let mut got = vec![0u8; 1500];
        g.contains(strings, &mut got).unwrap();
        assert_eq!(got, core_answers(&f, strings), "{layout}: string lookups");
    }
}

// ---- window ------------------------------------------------------------------------------------

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

fn check_window_lookups(g: &mut GpuWindowFilter, f: &WindowFilter, keys: &[u64], what: &str) {
    let seed = f.params().seed;
    let want: Vec<u8> = (0..keys.len())
        .map(|i| f.contains_hash(Keys::U64(keys).hash(i, seed)) as u8)
        .collect();
    let mut got = vec![9u8; keys.len()];
    g.contains(Keys::U64(keys), &mut got).unwrap();
    assert_eq!(got, want, "{what}: host lookups");
    let dk = DeviceBuffer::from_host(keys).unwrap();
    let mut out = DeviceBuffer::<u8>::zeros(keys.len()).unwrap();
    g.contains_device(DeviceKeys::U64(&dk), &mut out).unwrap();
    assert_eq!(out.to_host().unwrap(), want, "{what}: device lookups");
    let mut bits =
        DeviceBuffer::<u64>::from_host(&vec![u64::MAX; keys.len().div_ceil(64)]).unwrap();
    let s = GpuStream::new().unwrap();
    g.contains_bitmap_device_async(DeviceKeys::U64(&dk), &mut bits, &s)
        .unwrap();
    s.synchronize().unwrap();
    let bits = bits.to_host().unwrap();
    for (i, &w) in want.iter().enumerate() {
        assert_eq!(
            (bits[i / 64] >> (i % 64)) & 1,
            u64::from(w),
            "{what}: bit {i}"
        );
    }
    if !keys.len().is_multiple_of(64) {
        assert_eq!(
            bits[keys.len() / 64] >> (keys.len() % 64),
            0,
            "{what}: tail"
        );
    }
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
    if !common::gpu("window_every_layout_bit_identical_across_rotations") {
        return;
    }
    let mut r = rng(18);
    for layout in Layout::ALL {
        for (blocks, g, span) in [
            (1u32, 1u16, 1u64),
            (3, 2, 7),
            (1000, 3, 500),
            (4099, 4, 20_000),
        ] {
            let what = format!("{layout} {blocks} blocks g={g} span={span}");
            let params = window_params(layout, blocks, g, WindowUnit::Keys, span);
            let mut f = WindowFilter::new(params).unwrap();
            let mut gw = GpuWindowFilter::new(params).unwrap();
            gw.set_chunk_keys(1000);
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
            check_window_lookups(&mut gw, &f, &probe, &what);
            let up = GpuWindowFilter::upload(&f).unwrap();
            assert_same_window(&up, &f, &format!("{what}: upload"));
        }
    }
}

#[test]
fn window_time_batches_match_core() {
    if !common::gpu("window_time_batches_match_core") {
        return;
    }
    let mut r = rng(19);
    for layout in Layout::ALL {
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
    }
}

#[test]
fn window_golden_vectors() {
    if !common::gpu("window_golden_vectors") {
        return;
    }
    let mut seen = 0;
    for line in VECTORS.lines().filter(|l| l.starts_with("window ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let layout = Layout::from_name(f[1]).unwrap();
        let blocks: u32 = f[2].parse().unwrap();
        let seed: u64 = f[3].parse().unwrap();
        let g: u16 = f[4].parse().unwrap();
        let span: u64 = f[5].parse().unwrap();
        let n: u64 = f[6].parse().unwrap();
        let (current, in_current): (u16, u64) = (f[7].parse().unwrap(), f[8].parse().unwrap());
        let want = words(&unhex(f[9]).unwrap());
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
            assert!(d.words() == want, "{line}");
            assert_eq!(
                (d.state().current, d.state().keys_in_current),
                (current, in_current),
                "{line}"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 4, "a window line per layout");
}

#[test]
fn window_records_and_strings_match_core() {
    if !common::gpu("window_records_and_strings_match_core") {
        return;
    }
    let mut r = rng(20);
    let params = window_params(Layout::L16x64, 500, 2, WindowUnit::Keys, 300);
    let mut f = WindowFilter::new(params).unwrap();
    let mut gw = GpuWindowFilter::new(params).unwrap();
    let rec: Vec<u8> = (0..13 * 999).map(|_| r.gen()).collect();
    let records = Keys::Records(Records::new(&rec, 13).unwrap());
    let mut data = Vec::new();
    let mut offsets = vec![0u64];
    for i in 0..700 {
        data.extend((0..i % 81).map(|_| r.gen::<u8>()));
        offsets.push(data.len() as u64);
    }
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
    let want: Vec<u8> = (0..700)
        .map(|i| f.contains_hash(strings.hash(i, seed)) as u8)
        .collect();
    assert_eq!(out.to_host().unwrap(), want);
}
