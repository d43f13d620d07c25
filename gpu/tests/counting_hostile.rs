//! GPU tests of counting filters under hostile batches: one key repeated 2^20 times in a batch
//! (its counters saturate and stick), keys deleted more often than inserted, on every insert and
//! delete path (direct compare-and-swap, partitioned with shared-memory slices, partitioned with
//! compare-and-swap), bit-identical to the core. Without a GPU the test prints a SKIP line and
//! passes.

mod common;

use bloomlanes_core::{CounterBits, CountingFilter, FilterKind, Keys, Layout, Params};
use bloomlanes_gpu::{DeviceBuffer, DeviceKeys, GpuCountingFilter, InsertKernel};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

fn assert_same(g: &GpuCountingFilter, f: &CountingFilter, what: &str) {
    let d = g.download().unwrap();
    assert!(d.image_words() == f.image_words(), "{what}: image differs");
    assert!(
        d.counter_words() == f.counter_words(),
        "{what}: counters differ"
    );
    assert_eq!(d.key_count(), f.key_count(), "{what}: key count");
}

#[test]
fn counting_hostile_batches_saturate_and_delete_exactly_as_the_core() {
    if !common::gpu("counting_hostile_batches_saturate_and_delete_exactly_as_the_core") {
        return;
    }
    let mut r = rand::rngs::StdRng::seed_from_u64(41);
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
                batch.shuffle(&mut r);
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
                del.shuffle(&mut r);
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
}
