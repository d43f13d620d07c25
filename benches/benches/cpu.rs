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

use bloomlanes_core::{xxh64_u64, Filter, Keys, Layout, Params};
use bloomlanes_simd::{available_paths, bench_support, Probe};
use criterion::measurement::Measurement;
use criterion::{BenchmarkId, Criterion, Throughput};
use rayon::prelude::*;

/// Keys looked up (or inserted) per iteration.
const BATCH: usize = 1 << 18;
const BITS_PER_KEY: usize = 10;
const SEED: u64 = 0;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim().to_ascii_uppercase();
    let (num, mul) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (&s[..], 1),
    };
    num.parse::<usize>().ok().map(|n| n * mul)
}

fn sizes() -> Vec<(String, usize)> {
    let spec =
        std::env::var("BLOOMLANES_BENCH_SIZES").unwrap_or_else(|_| "64K,1M,16M,256M,1G".into());
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let bytes = parse_size(s).unwrap_or_else(|| panic!("bad size {s:?}"));
            assert!(
                bytes >= 64 && bytes.is_multiple_of(64),
                "size {s} must be a multiple of 64 bytes"
            );
            (s.trim().to_string(), bytes)
        })
        .collect()
}

fn fill_cap() -> usize {
    std::env::var("BLOOMLANES_BENCH_FILL_CAP")
        .ok()
        .and_then(|s| parse_size(&s))
        .unwrap_or(16 << 20)
}

/// Random one-cache-line reads, one per key, with bloomlanes' batching: a group of 32 keys has
/// its line indices computed and prefetched while the previous group's lines are read. No hash:
/// the keys are already random, so this is what memory allows.
fn speed_of_light(buf: &[u64], keys: &[u64]) -> u64 {
    const G: usize = 32;
    let lines = (buf.len() / 8) as u64;
    let index = |k: u64| (((k >> 32) * lines) >> 32) as usize * 8;
    let prefetch = |i: usize| {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch never faults; `i` is in bounds anyway; SSE is baseline on x86_64.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(buf.as_ptr().add(i).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    };
    let mut acc = 0u64;
    let mut cur = [0usize; G];
    let mut next = [0usize; G];
    let groups: Vec<&[u64]> = keys.chunks(G).collect();
    for (c, &k) in cur.iter_mut().zip(groups[0]) {
        *c = index(k);
        prefetch(*c);
    }
    for g in 0..groups.len() {
        if let Some(ng) = groups.get(g + 1) {
            for (n, &k) in next.iter_mut().zip(*ng) {
                *n = index(k);
                prefetch(*n);
            }
        }
        for &i in &cur[..groups[g].len()] {
            acc = acc.wrapping_add(buf[i]);
        }
        std::mem::swap(&mut cur, &mut next);
    }
    acc
}

struct Peers {
    sbbf: sbbf_rs_safe::Filter,
    parquet: parquet::bloom_filter::Sbbf,
    fastbloom: fastbloom::BloomFilter,
    bloomfilter: bloomfilter::Bloom<u64>,
}

fn bench_size<M: Measurement>(c: &mut Criterion<M>, label: &str, bytes: usize) {
    let probe = Probe::active();
    let n_keys = bytes * 8 / BITS_PER_KEY;
    let n_insert = n_keys.min(fill_cap());
    let mut state = 1;
    let inserted: Vec<u64> = (0..n_insert).map(|_| splitmix(&mut state)).collect();
    let mut state = 2;
    let absent: Vec<u64> = (0..BATCH).map(|_| splitmix(&mut state)).collect();
    let present: Vec<u64> = absent
        .iter()
        .map(|&r| inserted[(r % n_insert as u64) as usize])
        .collect();

    let blocks = (bytes / Layout::L8x32.block_bytes()) as u32;
    let mut ours = Filter::new(Params::new(Layout::L8x32, blocks).with_seed(SEED));
    probe.par_insert(ours.as_view_mut(), Keys::U64(&inserted));
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
    let mut state = 3;
    let keys: Vec<u64> = (0..BATCH).map(|_| splitmix(&mut state)).collect();
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

fn bench_all<M: Measurement>(c: &mut Criterion<M>) {
    bench_paths(c);
    for (label, bytes) in sizes() {
        bench_size(c, &label, bytes);
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
#[cfg(unix)]
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call, which is all
    // `clock_gettime` writes; the clock id is a constant the platform defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Criterion measurement by [`thread_cpu_time`] (`BLOOMLANES_BENCH_CLOCK=thread-cpu`); values are
/// nanoseconds like criterion's wall time, whose formatter it borrows.
#[cfg(unix)]
struct ThreadCpuTime(criterion::measurement::WallTime);

#[cfg(unix)]
impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu_time()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu_time().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn criterion::measurement::ValueFormatter {
        self.0.formatter()
    }
}

/// Runs every benchmark with `c` (and its measurement), configured from the command line.
fn run<M: Measurement>(c: Criterion<M>) {
    let mut c = c.configure_from_args();
    bench_all(&mut c);
    c.final_summary();
}

fn main() {
    match std::env::var("BLOOMLANES_BENCH_CLOCK").as_deref() {
        Err(_) | Ok("") | Ok("wall") => run(config()),
        #[cfg(unix)]
        Ok("thread-cpu") => {
            run(config().with_measurement(ThreadCpuTime(criterion::measurement::WallTime)))
        }
        Ok(other) => {
            eprintln!(
                "BLOOMLANES_BENCH_CLOCK={other:?}: expected `wall` or `thread-cpu` (Unix only)"
            );
            std::process::exit(2);
        }
    }
}
