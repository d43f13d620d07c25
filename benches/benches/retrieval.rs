//! Retrieval tables (`bloomlanes_core::retrieval`) against the `xorf` crate's binary fuse
//! filters and against the static filter, in one run:
//! - space: the setup prints bits per key of our tables (`v + f` = 8, 16) and of xorf's
//!   `BinaryFuse8` / `BinaryFuse16` (8- and 16-bit fingerprints: a membership test only);
//! - `retrieval/build/N`: building from N keys: ours with the core's single-thread passes
//!   (`core/1t`) and with the SIMD crate's parallel, prefetching passes (`simd/all`), 4-wise
//!   (and 3-wise single-thread for the construction choice), xorf's `BinaryFuse8/16` (3-wise);
//! - `retrieval/lookup/N`: 64 Ki random present keys (u64, hashed by each library): ours on one
//!   thread and on every core, xorf's `contains` on one thread, and the static filter (8x32) of
//!   `BLOOMLANES_BENCH_STATIC_MIB` MiB (default 1024) on one thread and every core.
//!
//! Environment: `BLOOMLANES_BENCH_MKEYS`, millions of keys (default `1,10`; `100` needs about
//! 6 GB and a minute per build), `BLOOMLANES_BENCH_STATIC_MIB` (default `1024`),
//! `BLOOMLANES_BENCH_BUILD=0` skips the `build` group (the setup still prints one timed build
//! of each table).
//!
//! `cargo bench -p bloomlanes-benches --bench retrieval`

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{xxh64_u64, Filter, Keys, Layout, Params};
use bloomlanes_simd::Probe;
use criterion::{BenchmarkId, Criterion, Throughput};
use xorf::{BinaryFuse16, BinaryFuse8, Filter as _};

/// Keys per lookup iteration.
const BATCH: usize = 1 << 16;

/// `n` random u64 keys (XXH64 of `seed, seed + 1, …`).
fn random(n: usize, seed: u64) -> Vec<u64> {
    (0..n as u64).map(|i| xxh64_u64(seed + i, 1)).collect()
}

/// The comma-separated numbers of environment variable `name` (`default` when unset).
fn env_list(name: &str, default: &str) -> Vec<usize> {
    let spec = std::env::var(name).unwrap_or_else(|_| default.into());
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("bad number {s:?} in {name}"))
        })
        .collect()
}

fn base() -> Params {
    Params::new(Layout::L8x64, 1)
}

/// Values of `v` bits for `keys`.
fn values(keys: &[u64], v: u8) -> Vec<u32> {
    let mask = ((1u64 << v) - 1) as u32;
    keys.iter().map(|&k| (k >> 21) as u32 & mask).collect()
}

fn build(keys: &[u64], spec: RetrievalSpec, parallel: bool) -> RetrievalTable {
    let values = values(keys, spec.value_bits);
    if parallel {
        Probe::active()
            .build_retrieval(base(), spec, &hash(keys), &values)
            .unwrap()
    } else {
        RetrievalTable::build_keys(base(), spec, keys, &values).unwrap()
    }
}

fn hash(keys: &[u64]) -> Vec<u64> {
    keys.iter().map(|k| base().hash_key(k)).collect()
}

fn bench_build(c: &mut Criterion, label: &str, keys: &[u64]) {
    let n = keys.len();
    let mut g = c.benchmark_group(format!("retrieval/build/{label}"));
    g.throughput(Throughput::Elements(n as u64));
    let hashes = hash(keys);
    for v in [8u8, 16] {
        let vals = values(keys, v);
        let spec = RetrievalSpec::new(v, 0);
        g.bench_function(BenchmarkId::new("core/1t/4wise", v), |b| {
            b.iter(|| RetrievalTable::build(base(), spec, &hashes, &vals).unwrap())
        });
        g.bench_function(BenchmarkId::new("core/1t/3wise", v), |b| {
            let spec = spec.with_arity(3);
            b.iter(|| RetrievalTable::build(base(), spec, &hashes, &vals).unwrap())
        });
        g.bench_function(BenchmarkId::new("simd/all/4wise", v), |b| {
            b.iter(|| {
                Probe::active()
                    .build_retrieval(base(), spec, &hashes, &vals)
                    .unwrap()
            })
        });
    }
    g.bench_function("xorf/BinaryFuse8", |b| {
        b.iter(|| BinaryFuse8::try_from(keys).unwrap())
    });
    g.bench_function("xorf/BinaryFuse16", |b| {
        b.iter(|| BinaryFuse16::try_from(keys).unwrap())
    });
    g.finish();
}

fn bench_lookup(c: &mut Criterion, label: &str, keys: &[u64], static_filter: &Filter) {
    let probe = Probe::active();
    let n = keys.len();
    let picks = random(BATCH, 7);
    let batch: Vec<u64> = picks
        .iter()
        .map(|&r| keys[(r % n as u64) as usize])
        .collect();
    let mut tables = Vec::new();
    for (v, f, arity) in [
        (8u8, 0u8, 4u8),
        (16, 0, 4),
        (8, 8, 4),
        (8, 0, 3),
        (16, 0, 3),
    ] {
        let t0 = Instant::now();
        let t = build(keys, RetrievalSpec::new(v, f).with_arity(arity), arity == 4);
        eprintln!(
            "retrieval {label}: v={v} f={f} {arity}-wise: {:.3} bits/key = x{:.4} of v+f, \
             {} MB, built in {:.2} s ({})",
            t.bits_per_key().unwrap(),
            t.bits_per_key().unwrap() / f64::from(v + f),
            t.shape().array_bytes() / 1_000_000,
            t0.elapsed().as_secs_f64(),
            if arity == 4 { "simd/all" } else { "core/1t" },
        );
        tables.push((format!("ours/v{v}f{f}/{arity}wise"), t));
    }
    let t0 = Instant::now();
    let fuse8 = BinaryFuse8::try_from(keys).unwrap();
    let built8 = t0.elapsed();
    let t0 = Instant::now();
    let fuse16 = BinaryFuse16::try_from(keys).unwrap();
    let built16 = t0.elapsed();
    eprintln!(
        "retrieval {label}: xorf BinaryFuse8 {:.3} bits/key (built in {:.2} s), BinaryFuse16 \
         {:.3} bits/key (built in {:.2} s); static filter {} MB, path {}",
        fuse8.fingerprints.len() as f64 * 8.0 / n as f64,
        built8.as_secs_f64(),
        fuse16.fingerprints.len() as f64 * 16.0 / n as f64,
        built16.as_secs_f64(),
        static_filter.byte_len() >> 20,
        probe.path(),
    );

    let mut g = c.benchmark_group(format!("retrieval/lookup/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    let k = Keys::U64(&batch);
    let mut vals = vec![0u32; BATCH];
    let mut found = vec![0u64; BATCH / 64];
    for (name, t) in &tables {
        g.bench_function(format!("{name}/1t"), |b| {
            b.iter(|| probe.get_retrieval(t, k, &mut vals, &mut found))
        });
        g.bench_function(format!("{name}/all"), |b| {
            b.iter(|| probe.par_get_retrieval(t, k, &mut vals, &mut found))
        });
        probe.get_retrieval(t, k, &mut vals, &mut found);
        assert!(
            found.iter().all(|&w| w == u64::MAX),
            "{name}: a present key"
        );
    }
    g.bench_function("xorf/BinaryFuse8/1t", |b| {
        b.iter(|| batch.iter().filter(|k| fuse8.contains(k)).count())
    });
    g.bench_function("xorf/BinaryFuse16/1t", |b| {
        b.iter(|| batch.iter().filter(|k| fuse16.contains(k)).count())
    });
    let mut out = vec![0u8; BATCH];
    let label_static = format!("static/{}M", static_filter.byte_len() >> 20);
    g.bench_function(format!("{label_static}/1t"), |b| {
        b.iter(|| probe.contains(static_filter.as_view(), k, black_box(&mut out)))
    });
    g.bench_function(format!("{label_static}/all"), |b| {
        b.iter(|| probe.par_contains(static_filter.as_view(), k, black_box(&mut out)))
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let static_bytes = env_list("BLOOMLANES_BENCH_STATIC_MIB", "1024")[0] << 20;
    let blocks = (static_bytes / Layout::L8x32.block_bytes()) as u32;
    let mut static_filter = Filter::new(Params::new(Layout::L8x32, blocks));
    let probe = Probe::active();
    for m in env_list("BLOOMLANES_BENCH_MKEYS", "1,10") {
        let (label, n) = (format!("{m}M"), m * 1_000_000);
        let keys = random(n, n as u64);
        // The static filter holds the same keys (its bits per key differ with the sizes).
        static_filter.clear();
        probe.par_insert(static_filter.as_view_mut(), Keys::U64(&keys));
        bench_lookup(&mut c, &label, &keys, &static_filter);
        if std::env::var("BLOOMLANES_BENCH_BUILD").as_deref() != Ok("0") {
            bench_build(&mut c, &label, &keys);
        }
    }
    c.final_summary();
}
