//! `peers static`: one implementation's build and lookup rates, and its measured false-positive
//! rate, on a filter of `--bytes` holding `--keys` keys.
//!
//! Implementations: `bloomlanes` (8x32 on the best SIMD path, `Probe::active()`; `insert` and
//! `contains_bitmap`, `par_*` on T threads; `--mode auto|direct|partitioned` its partitioning), `sbbf-rs-safe` (its SIMD SBBF, keys hashed with
//! XXH64 as the `cpu` bench does), `parquet` (`parquet::bloom_filter::Sbbf`) and `fastbloom`
//! (`BloomFilter` sized by bits and `--expected-keys`, which sets its hash count; on T > 1
//! threads its `AtomicBloomFilter`, the one it can insert into from several threads). The
//! SBBF peers have no concurrent insert, so their T-thread build rows are not printed; their
//! T-thread lookups split the batch over T threads (rayon), as bloomlanes' `par_*` do.

use bloomlanes_benches::random;
use bloomlanes_core::{math, xxh64_u64, Filter, Keys, Layout, Params};
use bloomlanes_simd::{PartitionMode, Partitioning, Probe};
use rayon::prelude::*;

use crate::{clock_name, fail, lookups, on_threads, present_index, summarize, Args};

/// A built filter of one implementation.
enum Built {
    Bloomlanes(Filter),
    SbbfRsSafe(sbbf_rs_safe::Filter),
    /// The filter and its size in bytes (the crate does not say it).
    Parquet(parquet::bloom_filter::Sbbf, usize),
    Fastbloom(fastbloom::BloomFilter),
    FastbloomAtomic(fastbloom::AtomicBloomFilter),
}

/// Keys per task of a peer's T-thread lookups.
const CHUNK: usize = 16 << 10;

/// Counts `keys` for which `hit` holds, on the current pool when `threads > 1`.
fn count_by(keys: &[u64], threads: usize, hit: impl Fn(u64) -> bool + Sync) -> usize {
    let count = |ks: &[u64]| ks.iter().filter(|&&k| hit(k)).count();
    if threads <= 1 {
        count(keys)
    } else {
        keys.par_chunks(CHUNK).map(count).sum()
    }
}

impl Built {
    /// Allocates a zeroed filter of `bytes` and inserts `keys` (on the current pool when
    /// `threads > 1`; only bloomlanes and fastbloom insert from several threads).
    fn build(
        probe: &Probe,
        name: &str,
        bytes: usize,
        expected: usize,
        keys: &[u64],
        threads: usize,
    ) -> Built {
        match name {
            "bloomlanes" => {
                let blocks = u32::try_from(bytes / Layout::L8x32.block_bytes())
                    .unwrap_or_else(|_| fail("--bytes gives more than 2^32 - 1 blocks"));
                let mut f = Filter::new(Params::new(Layout::L8x32, blocks));
                if threads <= 1 {
                    probe.insert(f.as_view_mut(), Keys::U64(keys));
                } else {
                    probe.par_insert(f.as_view_mut(), Keys::U64(keys));
                }
                Built::Bloomlanes(f)
            }
            "sbbf-rs-safe" => {
                // `new(bits_per_key, keys)` allocates bits_per_key * keys / 8 bytes.
                let mut f = sbbf_rs_safe::Filter::new(8, bytes);
                keys.iter().for_each(|&k| {
                    f.insert_hash(xxh64_u64(k, 0));
                });
                Built::SbbfRsSafe(f)
            }
            "parquet" => {
                let mut f = parquet::bloom_filter::Sbbf::new(&vec![0u8; bytes]);
                keys.iter().for_each(|k| f.insert(k));
                Built::Parquet(f, bytes)
            }
            "fastbloom" if threads <= 1 => {
                let mut f =
                    fastbloom::BloomFilter::with_num_bits(bytes * 8).expected_items(expected);
                keys.iter().for_each(|k| {
                    f.insert(k);
                });
                Built::Fastbloom(f)
            }
            "fastbloom" => {
                let f =
                    fastbloom::AtomicBloomFilter::with_num_bits(bytes * 8).expected_items(expected);
                keys.par_chunks(CHUNK).for_each(|ks| {
                    ks.iter().for_each(|k| {
                        f.insert(k);
                    })
                });
                Built::FastbloomAtomic(f)
            }
            other => fail(&format!(
                "--impl is bloomlanes, sbbf-rs-safe, parquet or fastbloom, not {other}"
            )),
        }
    }

    /// How many of `keys` the filter answers present (on the current pool when `threads > 1`).
    fn count(&self, probe: &Probe, keys: &[u64], threads: usize, bits: &mut [u64]) -> usize {
        match self {
            Built::Bloomlanes(f) => {
                let bits = &mut bits[..keys.len().div_ceil(64)];
                if threads <= 1 {
                    probe.contains_bitmap(f.as_view(), Keys::U64(keys), bits);
                } else {
                    probe.par_contains_bitmap(f.as_view(), Keys::U64(keys), bits);
                }
                bits.iter().map(|w| w.count_ones() as usize).sum()
            }
            Built::SbbfRsSafe(f) => count_by(keys, threads, |k| f.contains_hash(xxh64_u64(k, 0))),
            Built::Parquet(f, _) => count_by(keys, threads, |k| f.check(&k)),
            Built::Fastbloom(f) => count_by(keys, threads, |k| f.contains(&k)),
            Built::FastbloomAtomic(f) => count_by(keys, threads, |k| f.contains(&k)),
        }
    }

    /// The filter's size in bytes.
    fn bytes(&self) -> usize {
        match self {
            Built::Bloomlanes(f) => f.params().byte_len() as usize,
            Built::SbbfRsSafe(f) => f.as_bytes().len(),
            Built::Parquet(_, bytes) => *bytes,
            Built::Fastbloom(f) => f.num_bits() / 8,
            Built::FastbloomAtomic(f) => f.num_bits() / 8,
        }
    }

    /// What the row's notes say about the configuration.
    fn notes(&self, probe: &Probe, expected: usize) -> String {
        match self {
            Built::Bloomlanes(f) => format!(
                "8x32 path={:?} mode={:?} fpr_model_full={:.3e}",
                probe.path(),
                probe.partitioning().mode,
                math::false_positive_rate(Layout::L8x32, f.blocks(), expected as u64)
            ),
            Built::SbbfRsSafe(_) => "xxh64 keys".into(),
            Built::Parquet(..) => "Sbbf".into(),
            Built::Fastbloom(f) => format!("k={}", f.num_hashes()),
            Built::FastbloomAtomic(f) => format!("k={} atomic", f.num_hashes()),
        }
    }
}

/// `peers static ...`: prints a `build` and a `lookup` row (the build row only where the
/// implementation inserts from `--threads` threads).
pub fn run(args: &Args) {
    let name = args.get("--impl").unwrap_or("bloomlanes").to_string();
    let n = args.size("--keys", 1 << 20);
    let bytes = args.size("--bytes", 1 << 20);
    let expected = args.size("--expected-keys", n);
    let threads = args.size("--threads", 1).max(1);
    let reps = args.size("--reps", 5).max(1);
    let l = match args.size("--lookups", 0) {
        0 => n,
        l => l,
    };
    let fpr_keys = args.size("--fpr-keys", 1 << 22);
    let clock = args.clock(threads);
    let mode = match args.get("--mode") {
        None | Some("auto") => PartitionMode::Auto,
        Some("direct") => PartitionMode::Direct,
        Some("partitioned") => PartitionMode::Partitioned,
        Some(m) => fail(&format!("--mode is auto, direct or partitioned, not {m}")),
    };
    let probe = Probe::active().with_partitioning(Partitioning {
        mode,
        ..Partitioning::default()
    });
    if n < 2 || bytes < 1024 || !bytes.is_multiple_of(64) {
        fail("need --keys >= 2 and --bytes a multiple of 64, at least 1K");
    }
    let serial_insert_only = threads > 1 && matches!(name.as_str(), "sbbf-rs-safe" | "parquet");
    let keys = random(n, 1);
    let (look, _) = lookups(&keys, l);
    let half = l / 2;

    let (build, filter) = on_threads(threads, || {
        let build_threads = if serial_insert_only { 1 } else { threads };
        let mut rates = Vec::with_capacity(reps);
        let mut filter = None;
        for _ in 0..reps {
            drop(filter.take());
            let mut built = None;
            let s = clock.seconds(|| {
                built = Some(Built::build(
                    &probe,
                    &name,
                    bytes,
                    expected,
                    &keys,
                    build_threads,
                ))
            });
            rates.push(n as f64 / s / 1e6);
            filter = built;
        }
        (rates, filter.expect("at least one rep"))
    });
    let mut bits = vec![0u64; l.max(1 << 20).div_ceil(64)];

    // Untimed checks: every present key found; false positives among absent keys.
    let present: Vec<u64> = (0..half).map(|j| keys[present_index(n, half, j)]).collect();
    let found = on_threads(threads, || {
        filter.count(&probe, &present, threads, &mut bits)
    });
    if found != half {
        eprintln!("peers: {name} found {found} of {half} present keys (false negatives)");
        std::process::exit(3);
    }
    let mut fp = on_threads(threads, || filter.count(&probe, &look, threads, &mut bits)) - half;
    let mut probes = l - half;
    for chunk in random(fpr_keys, 4).chunks(1 << 20) {
        fp += on_threads(threads, || filter.count(&probe, chunk, threads, &mut bits));
        probes += chunk.len();
    }
    let fpr = fp as f64 / probes as f64;

    let lookup = on_threads(threads, || {
        (0..reps)
            .map(|_| {
                let mut c = 0;
                let s = clock.seconds(|| c = filter.count(&probe, &look, threads, &mut bits));
                if c < half {
                    fail(&format!("a lookup rep found {c} < {half}"));
                }
                l as f64 / s / 1e6
            })
            .collect::<Vec<_>>()
    });
    let notes = filter.notes(&probe, expected);
    let ops: &[(&str, Vec<f64>)] = if serial_insert_only {
        &[("lookup", lookup)]
    } else {
        &[("build", build), ("lookup", lookup)]
    };
    for (op, rates) in ops {
        let (med, lo, hi) = summarize(rates.clone());
        println!(
            "{name},{op},{},{n},{threads},{med:.2},{lo:.2},{hi:.2},{fpr:.3e},{probes},\
             {notes} expected_keys={expected} reps={reps} {}",
            filter.bytes(),
            clock_name(clock)
        );
    }
}
