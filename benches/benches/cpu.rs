//! CPU benchmarks: bulk lookups (present and absent keys) and inserts per second, one thread and
//! all threads, for filters of 64 KiB … 1 GiB at 10 bits per key, against `sbbf-rs-safe`, the
//! `parquet` crate's `Sbbf`, `fastbloom` and `bloomfilter`, plus a speed-of-light reference
//! (random one-cache-line reads, one per key, with the same group-and-prefetch batching).
//!
//! Environment:
//! - `BLOOMLANES_BENCH_SIZES` — comma-separated filter sizes (`64K,1M,16M,256M,1G`, the default).
//! - `BLOOMLANES_BENCH_FILL_CAP` — at most this many keys are inserted before the lookups
//!   (default 16M, so every filter up to 16 MiB is filled to 10 bits/key and larger ones only
//!   partly; a split-block lookup reads its whole block whatever the fill, so this changes the
//!   memory traffic of no SBBF).
//! - `BLOOMLANES_SIMD` — forces the bloomlanes path (see `bloomlanes-simd`).
//! - `BLOOMLANES_BENCH_CLOCK` — `wall` (the default) or `thread-cpu`: the CPU time of the
//!   benchmarking thread (`CLOCK_THREAD_CPUTIME_ID`, Unix only), which leaves out the time the
//!   thread waits for a core. For A/B comparisons on a machine shared with other jobs; only the
//!   one-thread benchmarks (`/1t`, `paths`, `hash_u64`) mean anything under it, since the
//!   `/all` ones run on other threads while this one waits.
//!
//! `cargo bench -p bloomlanes-benches --bench cpu` (filter with a criterion name regex as usual).

use std::hint::black_box;
use std::time::Duration;

use bloomlanes_benches::{
    criterion_main, env_size, present, random, sizes, speed_of_light, static_filter, Benches,
    Clock, BITS_PER_KEY,
};
use bloomlanes_core::{xxh64_u64, Filter, Keys, Layout, Params};
use bloomlanes_simd::{available_paths, bench_support, Probe};
use criterion::measurement::Measurement;
use criterion::{BenchmarkId, Criterion, Throughput};
use rayon::prelude::*;

/// Keys looked up (or inserted) per iteration.
const BATCH: usize = 1 << 18;
const SEED: u64 = 0;

struct Peers {
    sbbf: sbbf_rs_safe::Filter,
    parquet: parquet::bloom_filter::Sbbf,
    fastbloom: fastbloom::BloomFilter,
    bloomfilter: bloomfilter::Bloom<u64>,
}

fn bench_size<M: Measurement>(c: &mut Criterion<M>, label: &str, bytes: usize) {
    let probe = Probe::active();
    let n_keys = bytes * 8 / BITS_PER_KEY;
    let n_insert = n_keys.min(env_size("BLOOMLANES_BENCH_FILL_CAP", 16 << 20));
    let inserted = random(n_insert, 1);
    let absent = random(BATCH, 2);
    let present = present(&inserted, BATCH, 2);
    let mut ours = static_filter(&probe, bytes, &inserted);
    let mut peers = Peers {
        sbbf: sbbf_rs_safe::Filter::new(BITS_PER_KEY, n_keys),
        parquet: parquet::bloom_filter::Sbbf::new(&vec![0u8; bytes]),
        fastbloom: fastbloom::BloomFilter::with_num_bits(bytes * 8).expected_items(n_keys),
        bloomfilter: bloomfilter::Bloom::new_with_seed(bytes, n_keys, &[7u8; 32]).unwrap(),
    };
    for &k in &inserted {
        peers.sbbf.insert_hash(xxh64_u64(k, SEED));
        peers.parquet.insert(&k);
        peers.fastbloom.insert(&k);
        peers.bloomfilter.set(&k);
    }
    let sol_buf: Vec<u64> = (0..bytes / 8).map(|i| i as u64).collect();
    eprintln!(
        "size {label}: {bytes} bytes, {n_keys} keys at 10 bits/key, {n_insert} inserted, \
         bloomlanes fill {:.3}, path {}",
        ours.fill_ratio(),
        probe.path()
    );

    let mut g = c.benchmark_group(format!("lookup/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut out = vec![0u8; BATCH];
    for (kind, keys) in [("present", &present), ("absent", &absent)] {
        g.bench_function(BenchmarkId::new("bloomlanes/1t", kind), |b| {
            b.iter(|| probe.contains(ours.as_view(), Keys::U64(keys), &mut out))
        });
        g.bench_function(BenchmarkId::new("bloomlanes/all", kind), |b| {
            b.iter(|| probe.par_contains(ours.as_view(), Keys::U64(keys), &mut out))
        });
        g.bench_function(BenchmarkId::new("sbbf-rs-safe/1t", kind), |b| {
            b.iter(|| {
                for (o, &k) in out.iter_mut().zip(keys.iter()) {
                    *o = u8::from(peers.sbbf.contains_hash(xxh64_u64(k, SEED)));
                }
            })
        });
        g.bench_function(BenchmarkId::new("sbbf-rs-safe/all", kind), |b| {
            b.iter(|| {
                out.par_chunks_mut(16 << 10)
                    .zip(keys.par_chunks(16 << 10))
                    .for_each(|(o, k)| {
                        for (o, &k) in o.iter_mut().zip(k) {
                            *o = u8::from(peers.sbbf.contains_hash(xxh64_u64(k, SEED)));
                        }
                    })
            })
        });
        g.bench_function(BenchmarkId::new("parquet/1t", kind), |b| {
            b.iter(|| {
                for (o, k) in out.iter_mut().zip(keys.iter()) {
                    *o = u8::from(peers.parquet.check(k));
                }
            })
        });
        g.bench_function(BenchmarkId::new("fastbloom/1t", kind), |b| {
            b.iter(|| {
                for (o, k) in out.iter_mut().zip(keys.iter()) {
                    *o = u8::from(peers.fastbloom.contains(k));
                }
            })
        });
        g.bench_function(BenchmarkId::new("bloomfilter/1t", kind), |b| {
            b.iter(|| {
                for (o, k) in out.iter_mut().zip(keys.iter()) {
                    *o = u8::from(peers.bloomfilter.check(k));
                }
            })
        });
        g.bench_function(BenchmarkId::new("speed-of-light/1t", kind), |b| {
            b.iter(|| black_box(speed_of_light(&sol_buf, keys)))
        });
        g.bench_function(BenchmarkId::new("speed-of-light/all", kind), |b| {
            b.iter(|| {
                keys.par_chunks(16 << 10)
                    .map(|k| speed_of_light(&sol_buf, k))
                    .reduce(|| 0, u64::wrapping_add)
            })
        });
    }
    g.finish();

    // Inserts go last: they add the `absent` keys to every filter.
    let mut g = c.benchmark_group(format!("insert/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    let keys = &absent;
    g.bench_function("bloomlanes/1t", |b| {
        b.iter(|| probe.insert(ours.as_view_mut(), Keys::U64(keys)))
    });
    g.bench_function("bloomlanes/all", |b| {
        b.iter(|| probe.par_insert(ours.as_view_mut(), Keys::U64(keys)))
    });
    g.bench_function("sbbf-rs-safe/1t", |b| {
        b.iter(|| {
            for &k in keys {
                peers.sbbf.insert_hash(xxh64_u64(k, SEED));
            }
        })
    });
    g.bench_function("parquet/1t", |b| {
        b.iter(|| keys.iter().for_each(|k| peers.parquet.insert(k)))
    });
    g.bench_function("fastbloom/1t", |b| {
        b.iter(|| {
            for k in keys {
                peers.fastbloom.insert(k);
            }
        })
    });
    g.bench_function("bloomfilter/1t", |b| {
        b.iter(|| keys.iter().for_each(|k| peers.bloomfilter.set(k)))
    });
    g.finish();
}

/// Every available bloomlanes path and layout on a 1 MiB filter (present keys, one thread), and
/// scalar vs AVX2-lane XXH64 of integer keys.
fn bench_paths<M: Measurement>(c: &mut Criterion<M>) {
    let bytes = 1 << 20;
    let keys = random(BATCH, 3);
    let mut out = vec![0u8; BATCH];
    let mut g = c.benchmark_group("paths/1M");
    g.throughput(Throughput::Elements(BATCH as u64));
    for layout in Layout::ALL {
        let mut f =
            Filter::new(Params::new(layout, (bytes / layout.block_bytes()) as u32).with_seed(SEED));
        Probe::active().insert(f.as_view_mut(), Keys::U64(&keys[..BATCH / 2]));
        for path in available_paths() {
            let probe = Probe::new(path).unwrap();
            g.bench_function(BenchmarkId::new(layout.name(), path.name()), |b| {
                b.iter(|| probe.contains(f.as_view(), Keys::U64(&keys), &mut out))
            });
        }
    }
    g.finish();

    let mut hashes = vec![0u64; 4096];
    let mut g = c.benchmark_group("hash_u64");
    g.throughput(Throughput::Elements(4096));
    g.bench_function("scalar", |b| {
        b.iter(|| {
            for (h, &k) in hashes.iter_mut().zip(black_box(&keys[..4096])) {
                *h = xxh64_u64(k, SEED);
            }
        })
    });
    if bench_support::hash_u64_avx2(&keys[..4], SEED, &mut hashes[..4]) {
        g.bench_function("avx2x4", |b| {
            b.iter(|| bench_support::hash_u64_avx2(black_box(&keys[..4096]), SEED, &mut hashes))
        });
    }
    g.finish();
}

struct Cpu;

impl Benches for Cpu {
    fn run<M: Measurement<Value = Duration>>(&self, c: &mut Criterion<M>, _: Clock) {
        bench_paths(c);
        for (label, bytes) in sizes("64K,1M,16M,256M,1G") {
            bench_size(c, &label, bytes);
        }
    }
}

fn main() {
    criterion_main(Cpu);
}
