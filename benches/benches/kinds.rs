//! CPU benchmarks of the filter kinds of issue #14 against the static filter at the same key
//! count and against peer crates, one thread and all threads:
//! - `counting/SIZE`: inserts, deletes and lookups of counting filters (4- and 8-bit counters)
//!   and of the static filter with the same blocks; peer `bloomcraft`'s `CountingBloomFilter`.
//! - `window/SIZE`: lookups (present, absent) and inserts of a window over N keys (4
//!   generations, 1 %) against a static filter for N keys at 1 %; the setup prints both filters'
//!   bits per key and measured false-positive rates.
//! - `stable/SIZE`: stable inserts and lookups; peer `stable-bloom-filter`.
//! - `scalable/SIZE`: building a scalable filter from empty, and lookups; peers
//!   `growable-bloom-filter`, `probabilistic-collections` and `bloomcraft`.
//!
//! SIZE is the static filter's size at 10 bits per key (8x32); the counting filter has the same
//! image plus 4 (or 8) times as many counter bytes. The active bloomlanes path is used
//! (`BLOOMLANES_SIMD` forces one).
//!
//! Environment: `BLOOMLANES_BENCH_SIZES` (default `64K,1M,16M`), `BLOOMLANES_BENCH_CLOCK`
//! (`wall` or `thread-cpu`, as in the `cpu` bench: only the `/1t` rows mean anything under
//! `thread-cpu`), `BLOOMLANES_BENCH_COUNTING_BATCH` (keys per call of the `counting` group,
//! default 65536: larger batches let the partitioned counting paths pay for large filters).
//!
//! `cargo bench -p bloomlanes-benches --bench kinds` (filter with a criterion regex as usual).

use std::hint::black_box;
use std::time::Duration;

use bloomlanes_benches::kinds::{counting_filter, counting_write, LAYOUT};
use bloomlanes_benches::{
    criterion_main, env_or, present, random, sizes, static_filter, timed, Benches, Clock,
    BITS_PER_KEY,
};
use bloomlanes_core::math::{blocks_for_rate, false_positive_rate, stable_decrements_for_rate};
use bloomlanes_core::{
    CounterBits, CountingFilter, Filter, Keys, Params, ScalableFilter, WindowFilter,
};
use bloomlanes_simd::Probe;
use criterion::measurement::Measurement;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput};

/// Keys per iteration of the lookup, insert and delete benchmarks.
const BATCH: usize = 1 << 16;

/// A benchmark of `write(state, remove)`, each timed call undone (untimed) by
/// `write(state, !remove)`, so that every timed call starts from the same state.
fn undone<M: Measurement<Value = Duration>, S>(
    g: &mut BenchmarkGroup<'_, M>,
    name: String,
    clock: Clock,
    state: &mut S,
    remove: bool,
    write: impl Fn(&mut S, bool),
) {
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            timed(
                clock,
                iters,
                state,
                |s| write(s, remove),
                |s| write(s, !remove),
            )
        })
    });
}

fn bench_counting<M: Measurement<Value = Duration>>(
    c: &mut Criterion<M>,
    clock: Clock,
    label: &str,
    bytes: usize,
) {
    let probe = Probe::active();
    let blocks = (bytes / LAYOUT.block_bytes()) as u32;
    let n_keys = bytes * 8 / BITS_PER_KEY;
    let inserted = random(n_keys, 1);
    let batch = env_or("BLOOMLANES_BENCH_COUNTING_BATCH", BATCH);
    let absent = random(batch, 2);
    let present = present(&inserted, batch, 2);
    let mut st = static_filter(&probe, bytes, &inserted);
    let mut c4 = counting_filter(&probe, blocks, CounterBits::Four, &inserted);
    let mut c8 = counting_filter(&probe, blocks, CounterBits::Eight, &inserted);
    assert_eq!(
        c4.image_words(),
        st.words(),
        "the projection is the static image"
    );
    let mut peer = bloomcraft::CountingBloomFilter::<u64>::with_size(
        n_keys,
        0.01,
        bloomcraft::CounterSize::FourBit,
    );
    for k in &inserted {
        peer.insert(k);
    }
    eprintln!(
        "counting {label}: {n_keys} keys, {blocks} blocks of {LAYOUT}, path {}; bytes: static {}, \
         counting-4 {}, counting-8 {}; saturated counters {} / {}",
        probe.path(),
        st.byte_len(),
        (c4.image_words().len() + c4.counter_words().len()) * 4,
        (c8.image_words().len() + c8.counter_words().len()) * 4,
        c4.saturated(),
        c8.saturated(),
    );

    let mut g = c.benchmark_group(format!("counting/{label}"));
    g.throughput(Throughput::Elements(batch as u64));
    let keys = Keys::U64(&absent);
    // Inserts of keys not yet present; each timed insert is undone by a delete.
    g.bench_function("static/insert/1t", |b| {
        b.iter(|| probe.insert(st.as_view_mut(), keys))
    });
    g.bench_function("static/insert/all", |b| {
        b.iter(|| probe.par_insert(st.as_view_mut(), keys))
    });
    // A counting insert or delete (`remove`) of the batch, on every core if `par`; deletes
    // find every key (each timed insert is undone by a delete and the other way round).
    let write = |f: &mut CountingFilter, r: &mut [u64], remove, par| {
        counting_write(&probe, f, keys, r, remove, par)
    };
    for (name, f) in [("counting4", &mut c4), ("counting8", &mut c8)] {
        let mut state = (f, vec![0u64; batch.div_ceil(64)]);
        for (op, remove) in [("insert", false), ("delete", true)] {
            if remove {
                // The keys inserted once more first, so that the filter returns to its state.
                write(state.0, &mut state.1, false, true);
            }
            for (threads, par) in [("1t", false), ("all", true)] {
                // Undone on the thread that ran the op (the one-thread ops): the filter's lines
                // stay in this core's caches, as after the static insert (undone on all cores,
                // the timed insert would first pull its lines back from the other core's).
                let name = format!("{name}/{op}/{threads}");
                undone(&mut g, name, clock, &mut state, remove, |(f, r), rm| {
                    write(f, r, rm, par)
                });
            }
        }
        write(state.0, &mut state.1, true, true);
    }
    let mut out = vec![0u8; batch];
    for (kind, k) in [("present", &present), ("absent", &absent)] {
        let k = Keys::U64(k);
        g.bench_function(BenchmarkId::new("static/lookup/1t", kind), |b| {
            b.iter(|| probe.contains(st.as_view(), k, &mut out))
        });
        g.bench_function(BenchmarkId::new("counting4/lookup/1t", kind), |b| {
            b.iter(|| probe.contains(c4.projection(), k, &mut out))
        });
        g.bench_function(BenchmarkId::new("static/lookup/all", kind), |b| {
            b.iter(|| probe.par_contains(st.as_view(), k, &mut out))
        });
        g.bench_function(BenchmarkId::new("counting4/lookup/all", kind), |b| {
            b.iter(|| probe.par_contains(c4.projection(), k, &mut out))
        });
    }
    // The peer's inserts and deletes of the batch, each timed one undone by the other.
    let peer_write = |p: &mut bloomcraft::CountingBloomFilter<u64>, remove: bool| {
        for k in &absent {
            if remove {
                black_box(p.delete(k));
            } else {
                p.insert(k);
            }
        }
    };
    for (op, remove) in [("insert", false), ("delete", true)] {
        if remove {
            peer_write(&mut peer, false);
        }
        let name = format!("bloomcraft-4/{op}/1t");
        undone(&mut g, name, clock, &mut peer, remove, peer_write);
    }
    for (kind, k) in [("present", &present), ("absent", &absent)] {
        g.bench_function(BenchmarkId::new("bloomcraft-4/lookup/1t", kind), |b| {
            b.iter(|| {
                for (o, k) in out.iter_mut().zip(k) {
                    *o = u8::from(peer.contains(k));
                }
            })
        });
    }
    g.finish();
}

fn bench_window<M: Measurement>(c: &mut Criterion<M>, label: &str, bytes: usize) {
    let probe = Probe::active();
    let n = bytes * 8 / BITS_PER_KEY;
    let rate = 0.01;
    let mut w = WindowFilter::for_keys(n as u64, 4, rate, LAYOUT).unwrap();
    let mut st = Filter::new(Params::new(
        LAYOUT,
        blocks_for_rate(LAYOUT, n as u64, rate).unwrap(),
    ));
    // The window's worst case: 5 generations' worth of keys, so that the current one is full.
    let stream = random(n + n / 4, 3);
    probe.insert_window_filter(&mut w, Keys::U64(&stream));
    let recent = &stream[stream.len() - n..];
    probe.par_insert(st.as_view_mut(), Keys::U64(recent));
    let absent = random(1 << 20, 4);
    let fp = |hits: &[u8]| hits.iter().map(|&h| f64::from(h)).sum::<f64>() / hits.len() as f64;
    let mut hits = vec![0u8; absent.len()];
    probe.contains_window(&w, Keys::U64(&absent), &mut hits);
    let w_fpr = fp(&hits);
    probe.contains(st.as_view(), Keys::U64(&absent), &mut hits);
    let s_fpr = fp(&hits);
    let w_bits = w.words().len() as f64 * 32.0 / n as f64;
    let s_bits = st.byte_len() as f64 * 8.0 / n as f64;
    eprintln!(
        "window {label}: {n} keys in the window, 4 generations of {} blocks; bits/key window \
         {w_bits:.2}, static {s_bits:.2} (ratio {:.2}); measured FPR over 2^20 absent keys: window \
         {w_fpr:.5}, static {s_fpr:.5}; expected static {:.5}",
        w.params().blocks,
        w_bits / s_bits,
        false_positive_rate(LAYOUT, st.blocks(), n as u64),
    );
    let absent = &absent[..BATCH];
    let present = present(recent, BATCH, 4);
    let mut g = c.benchmark_group(format!("window/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut out = vec![0u8; BATCH];
    for (kind, slice) in [("present", &present[..]), ("absent", absent)] {
        let k = Keys::U64(slice);
        g.bench_function(BenchmarkId::new("static/lookup/1t", kind), |b| {
            b.iter(|| probe.contains(st.as_view(), k, &mut out))
        });
        g.bench_function(BenchmarkId::new("window/lookup/1t", kind), |b| {
            b.iter(|| probe.contains_window(&w, k, &mut out))
        });
        g.bench_function(BenchmarkId::new("static/lookup/all", kind), |b| {
            b.iter(|| probe.par_contains(st.as_view(), k, &mut out))
        });
        g.bench_function(BenchmarkId::new("window/lookup/all", kind), |b| {
            b.iter(|| probe.par_contains_window(&w, k, &mut out))
        });
    }
    let keys = Keys::U64(absent);
    g.bench_function("static/insert/1t", |b| {
        b.iter(|| probe.insert(st.as_view_mut(), keys))
    });
    g.bench_function("window/insert/1t", |b| {
        b.iter(|| probe.insert_window_filter(&mut w, keys))
    });
    g.finish();
}

fn bench_stable<M: Measurement>(c: &mut Criterion<M>, label: &str, bytes: usize) {
    let probe = Probe::active();
    let blocks = (bytes / LAYOUT.block_bytes()) as u32;
    let p = stable_decrements_for_rate(LAYOUT, blocks, 15, 0.01);
    let mut f = CountingFilter::stable(Params::new(LAYOUT, blocks), CounterBits::Four, p);
    let cells = bytes * 8;
    let mut peer = stable_bloom_filter::stable::StableBloomFilter::new(cells, 4, 0.01);
    let warm = random(cells / 4, 5);
    probe.insert_counting(f.as_view_mut(), Keys::U64(&warm));
    for k in &warm {
        stable_bloom_filter::Filter::add(&mut peer, &k.to_le_bytes());
    }
    eprintln!(
        "stable {label}: {cells} 4-bit cells ({blocks} blocks), P = {p}; peer: k = {}, P = {}",
        peer.k(),
        peer.p()
    );
    let keys = random(BATCH, 6);
    let mut g = c.benchmark_group(format!("stable/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("bloomlanes/insert/1t", |b| {
        b.iter(|| probe.insert_counting(f.as_view_mut(), Keys::U64(&keys)))
    });
    g.bench_function("stable-bloom-filter/insert/1t", |b| {
        b.iter(|| {
            for k in &keys {
                stable_bloom_filter::Filter::add(&mut peer, &k.to_le_bytes());
            }
        })
    });
    let mut out = vec![0u8; BATCH];
    g.bench_function("bloomlanes/lookup/1t", |b| {
        b.iter(|| probe.contains(f.projection(), Keys::U64(&keys), &mut out))
    });
    g.bench_function("stable-bloom-filter/lookup/1t", |b| {
        b.iter(|| {
            for (o, k) in out.iter_mut().zip(&keys) {
                *o = u8::from(stable_bloom_filter::Filter::test(&peer, &k.to_le_bytes()));
            }
        })
    });
    g.finish();
}

/// A peer's build benchmark: `insert` of every key into a fresh `make()`.
fn build_row<M: Measurement, F>(
    g: &mut BenchmarkGroup<'_, M>,
    name: &str,
    make: impl Fn() -> F,
    keys: &[u64],
    insert: impl Fn(&mut F, &u64),
) {
    g.bench_function(format!("{name}/build/1t"), |b| {
        b.iter_batched(
            &make,
            |mut f| {
                keys.iter().for_each(|k| insert(&mut f, k));
                f
            },
            BatchSize::LargeInput,
        )
    });
}

fn bench_scalable<M: Measurement>(c: &mut Criterion<M>, label: &str, bytes: usize) {
    let probe = Probe::active();
    let n = (bytes * 8 / BITS_PER_KEY).min(1 << 20);
    let initial = n / 16;
    let (rate, growth, tightening) = (0.01, 2u8, 0.8);
    let keys = random(n, 7);
    let empty = ScalableFilter::new(
        Params::new(LAYOUT, 1),
        initial as u64,
        rate,
        growth,
        tightening,
    )
    .unwrap();
    let mut g = c.benchmark_group(format!("scalable/{label}"));
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("bloomlanes/build/1t", |b| {
        b.iter_batched(
            || empty.clone(),
            |mut f| {
                probe.insert_scalable(&mut f, Keys::U64(&keys)).unwrap();
                f
            },
            BatchSize::LargeInput,
        )
    });
    let growable = || {
        growable_bloom_filter::GrowableBloomBuilder::new()
            .estimated_insertions(initial)
            .desired_error_ratio(rate)
            .growth_factor(usize::from(growth))
            .tightening_ratio(tightening)
            .build()
    };
    build_row(&mut g, "growable-bloom-filter", growable, &keys, |f, k| {
        f.insert(k);
    });
    let pc = || {
        probabilistic_collections::bloom::ScalableBloomFilter::<u64>::new(
            initial * BITS_PER_KEY,
            rate,
            f64::from(growth),
            tightening,
        )
    };
    build_row(&mut g, "probabilistic-collections", pc, &keys, |f, k| {
        f.insert(k)
    });
    let bc = || {
        bloomcraft::ScalableBloomFilter::<u64>::with_strategy(
            initial,
            rate,
            tightening,
            bloomcraft::GrowthStrategy::Geometric(f64::from(growth)),
        )
        .unwrap()
    };
    build_row(&mut g, "bloomcraft", bc, &keys, |f, k| f.insert(k));
    g.finish();

    let mut ours = empty.clone();
    probe.insert_scalable(&mut ours, Keys::U64(&keys)).unwrap();
    let mut gr = growable();
    let mut pcf = pc();
    let mut bcf = bc();
    for k in &keys {
        gr.insert(k);
        pcf.insert(k);
        bcf.insert(k);
    }
    eprintln!(
        "scalable {label}: {n} keys from capacity {initial}: {} stages, {:.2} bits/key, expected \
         FPR {:.4}",
        ours.stages().len(),
        ours.stats().bits_per_key.unwrap_or(0.0),
        ours.expected_fpr()
    );
    let absent = random(BATCH, 8);
    let present = present(&keys, BATCH, 8);
    let mut g = c.benchmark_group(format!("scalable/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut out = vec![0u8; BATCH];
    for (kind, k) in [("present", &present), ("absent", &absent)] {
        g.bench_function(BenchmarkId::new("bloomlanes/lookup/1t", kind), |b| {
            b.iter(|| probe.contains_scalable(&ours, Keys::U64(k), &mut out))
        });
        g.bench_function(
            BenchmarkId::new("growable-bloom-filter/lookup/1t", kind),
            |b| {
                b.iter(|| {
                    for (o, k) in out.iter_mut().zip(k.iter()) {
                        *o = u8::from(gr.contains(k));
                    }
                })
            },
        );
        g.bench_function(
            BenchmarkId::new("probabilistic-collections/lookup/1t", kind),
            |b| {
                b.iter(|| {
                    for (o, k) in out.iter_mut().zip(k.iter()) {
                        *o = u8::from(pcf.contains(k));
                    }
                })
            },
        );
        g.bench_function(BenchmarkId::new("bloomcraft/lookup/1t", kind), |b| {
            b.iter(|| {
                for (o, k) in out.iter_mut().zip(k.iter()) {
                    *o = u8::from(bcf.contains(k));
                }
            })
        });
    }
    g.finish();
}

struct Kinds;

impl Benches for Kinds {
    fn run<M: Measurement<Value = Duration>>(&self, c: &mut Criterion<M>, clock: Clock) {
        for (label, bytes) in sizes("64K,1M,16M") {
            bench_counting(c, clock, &label, bytes);
            bench_window(c, &label, bytes);
            bench_stable(c, &label, bytes);
            bench_scalable(c, &label, bytes);
        }
    }
}

fn main() {
    criterion_main(Kinds);
}
