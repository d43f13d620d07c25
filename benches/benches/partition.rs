//! The batch-size sweep of partitioned against direct bulk operations (issue #25: an `auto` that
//! is never the slower choice): for each filter size, batch size, operation (lookup into bytes,
//! insert) and thread count, the direct, partitioned and automatic modes run alternately, and
//! one CSV line per run says what each did. The `PartitionAuto` rule is derived from this.
//!
//! Not criterion: a sweep of hundreds of points, each a few calls, on a machine shared with
//! other jobs. One-thread runs are timed on the thread's CPU clock (`Clock::ThreadCpu`), the
//! two-thread runs on the wall clock (in a rayon pool of that many threads). Every call takes the
//! next batch from a pool of 2^24 random keys, so that a small batch does not find the lines of
//! the previous call in the caches.
//!
//! Environment: `SWEEP_SIZES` (default `16M,64M,256M,1G`), `SWEEP_BATCHES` (log2 of the batch,
//! `14..24`), `SWEEP_OPS` (`contains,insert`), `SWEEP_THREADS` (`1,2`), `SWEEP_MODES`
//! (`direct,partitioned,auto`), `SWEEP_REPS` (3), `SWEEP_KEYS` (keys per run, at least one
//! batch; default 2^22), `SWEEP_FILL` (keys inserted before, at most 0.8 per filter byte;
//! default 16M).
//!
//! `cargo bench -p bloomlanes-benches --bench partition > sweep.csv`; columns `size, batch, op,
//! threads, mode, rep, mkeys_per_s, partitioned, load1` (`partitioned`: whether `auto` or the
//! forced mode partitioned that batch, by the probe's own rule).

use std::hint::black_box;

use bloomlanes_benches::{env_size, random, static_filter, Clock};
use bloomlanes_core::{Filter, Keys, Layout, Params};
use bloomlanes_simd::{PartitionMode, Partitioning, Probe};

/// Keys in the pool the batches are taken from.
const POOL: usize = 1 << 24;

/// A comma-separated list from `var`, else `default`.
fn list(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The 1-minute load average (0 where unreadable).
fn load1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The probe of `mode` (its own detected caches and defaults otherwise).
fn probe(mode: &str) -> Probe {
    let mode = match mode {
        "direct" => PartitionMode::Direct,
        "partitioned" => PartitionMode::Partitioned,
        "auto" => PartitionMode::Auto,
        m => panic!("SWEEP_MODES: unknown mode {m:?}"),
    };
    Probe::active().with_partitioning(Partitioning {
        mode,
        ..Partitioning::default()
    })
}

/// One timed run: `total` keys in calls of `batch` keys from `pool` (from `*at` on, wrapping),
/// `par` on the current rayon pool; M keys per second.
#[allow(clippy::too_many_arguments)]
fn run(
    p: &Probe,
    f: &mut Filter,
    op: &str,
    par: bool,
    pool: &[u64],
    at: &mut usize,
    batch: usize,
    total: usize,
    out: &mut [u8],
) -> f64 {
    let clock = if par { Clock::Wall } else { Clock::ThreadCpu };
    let calls = total.div_ceil(batch);
    let mut seconds = 0.0;
    for _ in 0..calls {
        if *at + batch > pool.len() {
            *at = 0;
        }
        let keys = Keys::U64(&pool[*at..*at + batch]);
        *at += batch;
        seconds += clock.seconds(|| match (op, par) {
            ("contains", false) => p.contains(f.as_view(), keys, &mut out[..batch]),
            ("contains", true) => p.par_contains(f.as_view(), keys, &mut out[..batch]),
            ("insert", false) => p.insert(f.as_view_mut(), keys),
            ("insert", true) => p.par_insert(f.as_view_mut(), keys),
            _ => panic!("SWEEP_OPS: unknown op {op:?}"),
        });
        black_box(&mut *out);
    }
    (calls * batch) as f64 / seconds / 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken from the command line.
    let sizes = list("SWEEP_SIZES", "16M,64M,256M,1G");
    let batches: Vec<u32> = {
        let s = std::env::var("SWEEP_BATCHES").unwrap_or_else(|_| "14..24".into());
        let (lo, hi) = s.split_once("..").unwrap_or((&s, &s));
        (lo.parse().expect("SWEEP_BATCHES lo")..=hi.parse().expect("SWEEP_BATCHES hi")).collect()
    };
    let ops = list("SWEEP_OPS", "contains,insert");
    let threads: Vec<usize> = list("SWEEP_THREADS", "1,2")
        .iter()
        .map(|t| t.parse().expect("SWEEP_THREADS"))
        .collect();
    let modes = list("SWEEP_MODES", "direct,partitioned,auto");
    let reps = env_size("SWEEP_REPS", 3);
    let keys_per_run = env_size("SWEEP_KEYS", 1 << 22);
    let fill = env_size("SWEEP_FILL", 16 << 20);
    let pool = random(POOL.max(1 << batches.iter().max().copied().unwrap_or(0)), 2);
    let mut out = vec![0u8; pool.len()];
    let probes: Vec<(String, Probe)> = modes.iter().map(|m| (m.clone(), probe(m))).collect();
    println!("size,batch,op,threads,mode,rep,mkeys_per_s,partitioned,load1");
    for size in &sizes {
        let bytes = bloomlanes_benches::parse_size(size).expect("SWEEP_SIZES: a size");
        let inserted = random((bytes * 8 / 10).min(fill), 1);
        let mut f = static_filter(&probes[0].1, bytes, &inserted);
        drop(inserted);
        let params = Params::new(Layout::L8x32, (bytes / Layout::L8x32.block_bytes()) as u32);
        let mut at = 0;
        for &t in &threads {
            let pool_t = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .expect("a rayon pool");
            for &b in &batches {
                let batch = 1usize << b;
                let total = keys_per_run.max(batch);
                for op in &ops {
                    for rep in 0..reps {
                        // Rotate the modes' order each rep (A/B/C, B/C/A, ...).
                        for i in 0..probes.len() {
                            let (mode, p) = &probes[(i + rep) % probes.len()];
                            let part = p.partitioning().partitions(&params, batch);
                            let load = load1();
                            let rate = pool_t.install(|| {
                                run(p, &mut f, op, t > 1, &pool, &mut at, batch, total, &mut out)
                            });
                            println!(
                                "{size},{b},{op},{t},{mode},{rep},{rate:.2},{},{load:.2}",
                                u8::from(part)
                            );
                        }
                    }
                }
            }
        }
    }
}
