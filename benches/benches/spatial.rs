//! CPU benchmarks of the spatial filter beside the static filter at the same total bytes, one
//! thread and all threads: `spatial/SIZE` times lookups (present and absent keys) and inserts
//! (one class for the batch, and a class per key; `insert-fresh`: a class per key into a copy of
//! the filled filter, so that every key is new, where the other insert rows re-insert the same
//! keys after their first iteration) of a static 8x32 filter of SIZE bytes and of
//! spatial filters of SIZE bytes in all (image and 4- or 8-bit cells), every filter's image at
//! 10 bits per key (so the spatial filters hold 1/5 and 1/9 of the static filter's keys, each in
//! one of 4 classes drawn at random). A lookup answers a byte per key: membership for the
//! static filter, the class for the spatial ones.
//!
//! Environment: `BLOOMLANES_BENCH_SIZES` (default `64K,1M,16M`), `BLOOMLANES_BENCH_FILL_CAP`
//! (at most this many keys per filter, default 16M), `BLOOMLANES_BENCH_CLOCK` (`wall` or
//! `thread-cpu`, as in the `cpu` bench), `BLOOMLANES_SIMD`.
//!
//! `cargo bench -p bloomlanes-benches --bench spatial` (filter with a criterion regex as usual).

use std::time::Duration;

use bloomlanes_benches::kinds::SpatialSetup;
use bloomlanes_benches::{
    criterion_main, env_size, present, random, sizes, static_filter, Benches, Clock, BITS_PER_KEY,
};
use bloomlanes_core::{Keys, SpatialFilter};
use bloomlanes_simd::{Classes, Probe};
use criterion::measurement::Measurement;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};

/// Keys per iteration.
const BATCH: usize = 1 << 16;

/// Classes of the spatial filters.
const CLASSES: u16 = 4;

fn bench_spatial<M: Measurement>(c: &mut Criterion<M>, label: &str, bytes: usize) {
    let probe = Probe::active();
    let cap = env_size("BLOOMLANES_BENCH_FILL_CAP", 16 << 20);
    let inserted = random((bytes * 8 / BITS_PER_KEY).min(cap), 1);
    let mut st = static_filter(&probe, bytes, &inserted);
    let mut spatial: Vec<(String, SpatialSetup)> = [4, 8]
        .into_iter()
        .map(|bits| {
            let s = SpatialSetup::new(&probe, bytes, bits, CLASSES, 10 + u64::from(bits), cap);
            (format!("spatial{bits}"), s)
        })
        .collect();
    eprintln!(
        "spatial {label}: path {}; static {} B, {} keys; {}",
        probe.path(),
        st.byte_len(),
        inserted.len(),
        spatial
            .iter()
            .map(|(name, s)| format!("{name} {} B, {} keys", s.bytes(), s.keys.len()))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let absent = random(BATCH, 2);
    let mut g = c.benchmark_group(format!("spatial/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut out = vec![0u8; BATCH];
    for (kind, seed) in [("present", Some(3)), ("absent", None)] {
        let keys = |of: &[u64]| seed.map_or_else(|| absent.clone(), |s| present(of, BATCH, s));
        let k = keys(&inserted);
        g.bench_function(BenchmarkId::new("static/lookup/1t", kind), |b| {
            b.iter(|| probe.contains(st.as_view(), Keys::U64(&k), &mut out))
        });
        g.bench_function(BenchmarkId::new("static/lookup/all", kind), |b| {
            b.iter(|| probe.par_contains(st.as_view(), Keys::U64(&k), &mut out))
        });
        for (name, s) in &spatial {
            let k = keys(&s.keys);
            g.bench_function(BenchmarkId::new(format!("{name}/lookup/1t"), kind), |b| {
                b.iter(|| probe.min_cells(&s.filter, Keys::U64(&k), &mut out))
            });
            g.bench_function(BenchmarkId::new(format!("{name}/lookup/all"), kind), |b| {
                b.iter(|| probe.par_min_cells(&s.filter, Keys::U64(&k), &mut out))
            });
        }
    }
    // Inserts of keys not yet present (the first iteration; then present).
    let keys = Keys::U64(&absent);
    let filled = st.clone();
    g.bench_function("static/insert-fresh/1t", |b| {
        let fresh = || filled.clone();
        b.iter_batched_ref(
            fresh,
            |f| probe.insert(f.as_view_mut(), keys),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("static/insert/1t", |b| {
        b.iter(|| probe.insert(st.as_view_mut(), keys))
    });
    g.bench_function("static/insert/all", |b| {
        b.iter(|| probe.par_insert(st.as_view_mut(), keys))
    });
    let classes: Vec<u16> = random(BATCH, 4)
        .into_iter()
        .map(|r| 1 + (r % u64::from(CLASSES)) as u16)
        .collect();
    for (name, s) in &mut spatial {
        let filled = s.filter.clone();
        g.bench_function(format!("{name}/insert-fresh/1t"), |b| {
            let (fresh, cs) = (|| filled.clone(), Classes::U16(&classes));
            let insert = |f: &mut SpatialFilter| probe.insert_spatial(f.as_view_mut(), keys, cs);
            b.iter_batched_ref(fresh, insert, BatchSize::LargeInput)
        });
        for (form, cs) in [
            ("one", Classes::One(1)),
            ("per-key", Classes::U16(&classes)),
        ] {
            let f = &mut s.filter;
            g.bench_function(format!("{name}/insert-{form}/1t"), |b| {
                b.iter(|| probe.insert_spatial(f.as_view_mut(), keys, cs))
            });
            g.bench_function(format!("{name}/insert-{form}/all"), |b| {
                b.iter(|| probe.par_insert_spatial(f.as_view_mut(), keys, cs))
            });
        }
    }
    g.finish();
}

struct Spatial;

impl Benches for Spatial {
    fn run<M: Measurement<Value = Duration>>(&self, c: &mut Criterion<M>, _: Clock) {
        for (label, bytes) in sizes("64K,1M,16M") {
            bench_spatial(c, &label, bytes);
        }
    }
}

fn main() {
    criterion_main(Spatial);
}
