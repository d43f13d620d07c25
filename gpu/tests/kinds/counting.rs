//! The counting filter: inserts, deletes (the core's key-by-key semantics, refusals,
//! conflicting batches, hostile batches that saturate), lookups and counts, bit-identical to
//! the core on every layout, 4- and 8-bit counters and every insert path.

use bloomlanes_core::golden::unhex;
use bloomlanes_core::{
    CounterBits, CountingFilter, FilterKind, Keys, Layout, Params, Records, Strings,
};
use bloomlanes_gpu::{DeviceBuffer, DeviceKeys, GpuCountingFilter, GpuError, InsertKernel};
use rand::seq::SliceRandom;
use rand::Rng;

use crate::common::{self, answers, byte_keys};
use crate::words;

const BITS: [CounterBits; 2] = [CounterBits::Four, CounterBits::Eight];

fn counting_params(layout: Layout, blocks: u32, seed: u64, bits: CounterBits) -> Params {
    Params::new(layout, blocks)
        .with_seed(seed)
        .with_kind(FilterKind::Counting { counter_bits: bits })
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
    answers(keys, f.params().seed, |h| f.contains_hash(h))
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
    common::on_every_layout(
        "counting_every_layout_and_width_bit_identical",
        14,
        |r, layout| {
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
                            let keys: Vec<u64> =
                                (0..len).map(|_| pool[r.gen_range(0..3000)]).collect();
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
                        let want = core_answers(&f, Keys::U64(&probe));
                        common::check_image_lookups(&mut g, &probe, &want, &what);
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
        },
    );
}

#[test]
fn counting_golden_vectors() {
    for (layout, blocks, seed, f) in common::gpu_golden("counting_golden_vectors", "counting", 8) {
        let bits = CounterBits::from_bits(f[0].parse().unwrap()).unwrap();
        let (n, d): (u64, u64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        let (image, counters) = (words(&unhex(&f[3]).unwrap()), words(&unhex(&f[4]).unwrap()));
        for kernel in [InsertKernel::BulkReduce, InsertKernel::Partitioned] {
            let what = format!("{layout} {blocks} {bits:?} {kernel:?}");
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
            assert_eq!((rep.deleted, rep.refused), (d, 0), "{what}");
            let back = g.download().unwrap();
            assert!(back.image_words() == image, "{what}: image");
            assert!(back.counter_words() == counters, "{what}: counters");
        }
    }
}

#[test]
fn counting_deletes_of_absent_keys_are_refused_and_change_nothing() {
    common::on_every_layout(
        "counting_deletes_of_absent_keys_are_refused_and_change_nothing",
        15,
        |r, layout| {
            let mut f =
                CountingFilter::counting(Params::new(layout, 4096).with_seed(3), CounterBits::Four);
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
        },
    );
}

#[test]
fn counting_conflicting_deletes_equal_the_core_in_input_order() {
    // Tiny filters and keys deleted more often than inserted: attempts underflow and are split,
    // and the result is still the core's key-by-key delete.
    common::with_gpu(
        "counting_conflicting_deletes_equal_the_core_in_input_order",
        16,
        |r| {
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
        },
    );
}

#[test]
fn counting_records_and_strings_match_core() {
    common::on_every_layout(
        "counting_records_and_strings_match_core",
        17,
        |r, layout| {
            let params = counting_params(layout, 777, 42, CounterBits::Eight);
            let mut f = CountingFilter::new(params).unwrap();
            let mut g = GpuCountingFilter::new(params).unwrap();
            g.set_chunk_keys(128);
            let (rec, data, offsets) = byte_keys(r, 1500);
            let records = Keys::Records(Records::new(&rec, 13).unwrap());
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
        },
    );
}

#[test]
fn counting_hostile_batches_saturate_and_delete_exactly_as_the_core() {
    common::with_gpu(
        "counting_hostile_batches_saturate_and_delete_exactly_as_the_core",
        41,
        |r| {
            let paths = [
                ("direct", InsertKernel::BulkReduce, true),
                (
                    "partitioned, shared slices",
                    InsertKernel::Partitioned,
                    true,
                ),
                ("partitioned, CAS", InsertKernel::Partitioned, false),
            ];
            for layout in [Layout::L8x32, Layout::L16x64] {
                for bits in [CounterBits::Four, CounterBits::Eight] {
                    for (name, kernel, shared) in paths {
                        let what = format!("{layout} {bits:?} {name}");
                        let params = Params::new(layout, 3000)
                            .with_seed(r.gen())
                            .with_kind(FilterKind::Counting { counter_bits: bits });
                        let mut f = CountingFilter::new(params).unwrap();
                        let mut g = GpuCountingFilter::new(params).unwrap();
                        g.set_insert_kernel(kernel);
                        g.set_shared_slices(shared);
                        // One key 2^20 times, one 300 times (past an 8-bit counter's 255), one 3 times,
                        // and 20,000 distinct keys, shuffled into one batch.
                        let mut batch = vec![1u64; 1 << 20];
                        batch.extend(std::iter::repeat_n(2u64, 300));
                        batch.extend([3u64; 3]);
                        batch.extend(1000..21_000u64);
                        batch.shuffle(r);
                        let dk = DeviceBuffer::from_host(&batch).unwrap();
                        g.insert_device(DeviceKeys::U64(&dk)).unwrap();
                        let seed = params.seed;
                        let keys = Keys::U64(&batch);
                        for i in 0..keys.len() {
                            f.insert_hash(keys.hash(i, seed));
                        }
                        assert_same(&g, &f, &format!("{what}: insert"));
                        // Deletes: the saturated key 2^20 times (always accepted, its saturated counters
                        // stay), key 3 five times (the last ones refused unless other keys keep its
                        // counters up), keys deleted twice and absent keys; per-key results in input
                        // order.
                        let mut del = vec![1u64; 1 << 20];
                        del.extend([3u64; 5]);
                        del.extend(1000..3000u64);
                        del.extend(1000..1100u64);
                        del.extend((0..2000).map(|_| r.gen::<u64>()));
                        del.shuffle(r);
                        let want: Vec<u8> = {
                            let keys = Keys::U64(&del);
                            (0..keys.len())
                                .map(|i| f.remove_hash(keys.hash(i, seed)).is_ok() as u8)
                                .collect()
                        };
                        let dk = DeviceBuffer::from_host(&del).unwrap();
                        let mut out = DeviceBuffer::<u8>::zeros(del.len()).unwrap();
                        let rep = g
                            .remove_device(DeviceKeys::U64(&dk), Some(&mut out))
                            .unwrap();
                        let got = out.to_host().unwrap();
                        let first_diff = got.iter().zip(&want).position(|(a, b)| a != b);
                        assert_eq!(first_diff, None, "{what}: per-key delete results");
                        let deleted = want.iter().filter(|&&w| w == 1).count() as u64;
                        assert_eq!(rep.deleted, deleted, "{what}: deleted");
                        assert_same(&g, &f, &format!("{what}: delete"));
                    }
                }
            }
        },
    );
}

#[test]
fn counting_counts_match_the_core() {
    common::on_every_layout("counting_counts_match_the_core", 42, |r, layout| {
        for bits in BITS {
            let params = counting_params(layout, 500, r.gen(), bits);
            let mut f = CountingFilter::new(params).unwrap();
            let pool: Vec<u64> = (0..300).map(|_| r.gen()).collect();
            let ins: Vec<u64> = (0..20_000).map(|_| pool[r.gen_range(0..300)]).collect();
            core_insert(&mut f, Keys::U64(&ins));
            let mut g = GpuCountingFilter::upload(&f).unwrap();
            let probe = common::some_present(r, &pool, 4099, 2);
            let want: Vec<u32> = (0..probe.len())
                .map(|i| f.count_hash(Keys::U64(&probe).hash(i, params.seed)))
                .collect();
            let dk = DeviceBuffer::from_host(&probe).unwrap();
            let mut out = DeviceBuffer::<u32>::zeros(probe.len()).unwrap();
            g.count_device(DeviceKeys::U64(&dk), &mut out).unwrap();
            assert_eq!(
                out.to_host().unwrap(),
                want,
                "{layout} {bits:?}: device counts"
            );
            let mut got = vec![0u32; probe.len()];
            g.reduce(
                Keys::U64(&probe),
                bloomlanes_core::CellReduce::Min,
                &mut got,
            )
            .unwrap();
            assert_eq!(got, want, "{layout} {bits:?}: host counts");
        }
    });
}
