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
use std::time::{Duration, Instant};

use bloomlanes_core::math::{blocks_for_rate, false_positive_rate, stable_decrements_for_rate};
use bloomlanes_core::{
    CounterBits, CountingFilter, Filter, Keys, Layout, Params, ScalableFilter, WindowFilter,
};
use bloomlanes_simd::Probe;
use criterion::measurement::{Measurement, WallTime};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};

/// Keys per iteration of the lookup, insert and delete benchmarks.
const BATCH: usize = 1 << 16;
const BITS_PER_KEY: usize = 10;
const LAYOUT: Layout = Layout::L8x32;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn random(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n).map(|_| splitmix(&mut s)).collect()
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
    let spec = std::env::var("BLOOMLANES_BENCH_SIZES").unwrap_or_else(|_| "64K,1M,16M".into());
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let bytes = parse_size(s).unwrap_or_else(|| panic!("bad size {s:?}"));
            assert!(bytes >= 1024, "size {s} must be at least 1K");
            (s.trim().to_string(), bytes)
        })
        .collect()
}

/// The clock of `iter_custom` loops: the one criterion measures with.
#[derive(Clone, Copy)]
enum Clock {
    Wall,
    #[cfg(unix)]
    ThreadCpu,
}

impl Clock {
    fn now(self) -> Duration {
        match self {
            Clock::Wall => {
                static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                START.get_or_init(Instant::now).elapsed()
            }
            #[cfg(unix)]
            Clock::ThreadCpu => thread_cpu_time(),
        }
    }
}

/// Times `op` only, `iters` times, running `undo` (untimed) after each, so that every timed
/// run starts from the same filter state.
fn timed<S: ?Sized>(
    clock: Clock,
    iters: u64,
    state: &mut S,
    mut op: impl FnMut(&mut S),
    mut undo: impl FnMut(&mut S),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let t = clock.now();
        op(state);
        total += clock.now().saturating_sub(t);
        undo(state);
    }
    total
}

/// Keys per call of the `counting` group (`BLOOMLANES_BENCH_COUNTING_BATCH`, default [`BATCH`]).
fn counting_batch() -> usize {
    std::env::var("BLOOMLANES_BENCH_COUNTING_BATCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(BATCH)
}

fn counting_filter(blocks: u32, bits: CounterBits) -> CountingFilter {
    CountingFilter::counting(Params::new(LAYOUT, blocks), bits)
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
    let batch = counting_batch();
    let absent = random(batch, 2);
    let present: Vec<u64> = absent
        .iter()
        .map(|&r| inserted[(r % n_keys as u64) as usize])
        .collect();
    let mut st = Filter::new(Params::new(LAYOUT, blocks));
    probe.par_insert(st.as_view_mut(), Keys::U64(&inserted));
    let mut c4 = counting_filter(blocks, CounterBits::Four);
    let mut c8 = counting_filter(blocks, CounterBits::Eight);
    probe.par_insert_counting(c4.as_view_mut(), Keys::U64(&inserted));
    probe.par_insert_counting(c8.as_view_mut(), Keys::U64(&inserted));
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
    let mut refused = vec![0u64; batch.div_ceil(64)];
    // Inserts of keys not yet present; each timed insert is undone by a delete.
    g.bench_function("static/insert/1t", |b| {
        b.iter(|| probe.insert(st.as_view_mut(), keys))
    });
    g.bench_function("static/insert/all", |b| {
        b.iter(|| probe.par_insert(st.as_view_mut(), keys))
    });
    for (name, f) in [("counting4", &mut c4), ("counting8", &mut c8)] {
        let r = &mut refused;
        g.bench_function(format!("{name}/insert/1t"), |b| {
            b.iter_custom(|iters| {
                timed(
                    clock,
                    iters,
                    &mut *f,
                    |f| probe.insert_counting(f.as_view_mut(), keys),
                    // Undone on this thread: the filter's lines stay in this core's caches,
                    // as after the static insert (undone on all cores, the timed insert
                    // would first pull its lines back from the other core's caches).
                    |f| {
                        probe.remove_counting(f.as_view_mut(), keys, r).unwrap();
                    },
                )
            })
        });
        g.bench_function(format!("{name}/insert/all"), |b| {
            b.iter_custom(|iters| {
                timed(
                    clock,
                    iters,
                    &mut *f,
                    |f| probe.par_insert_counting(f.as_view_mut(), keys),
                    |f| {
                        probe.par_remove_counting(f.as_view_mut(), keys, r).unwrap();
                    },
                )
            })
        });
        // Deletes of present keys (inserted once more first, so that the filter returns to its
        // state); each timed delete is undone by an insert.
        probe.par_insert_counting(f.as_view_mut(), keys);
        g.bench_function(format!("{name}/delete/1t"), |b| {
            b.iter_custom(|iters| {
                timed(
                    clock,
                    iters,
                    &mut *f,
                    |f| {
                        let n = probe.remove_counting(f.as_view_mut(), keys, r).unwrap();
                        assert_eq!(n, 0);
                    },
                    |f| probe.insert_counting(f.as_view_mut(), keys),
                )
            })
        });
        g.bench_function(format!("{name}/delete/all"), |b| {
            b.iter_custom(|iters| {
                timed(
                    clock,
                    iters,
                    &mut *f,
                    |f| {
                        let n = probe.par_remove_counting(f.as_view_mut(), keys, r).unwrap();
                        assert_eq!(n, 0);
                    },
                    |f| probe.par_insert_counting(f.as_view_mut(), keys),
                )
            })
        });
        probe.par_remove_counting(f.as_view_mut(), keys, r).unwrap();
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
    g.bench_function("bloomcraft-4/insert/1t", |b| {
        b.iter_custom(|iters| {
            timed(
                clock,
                iters,
                &mut peer,
                |p| absent.iter().for_each(|k| p.insert(k)),
                |p| {
                    absent.iter().for_each(|k| {
                        p.delete(k);
                    })
                },
            )
        })
    });
    absent.iter().for_each(|k| peer.insert(k));
    g.bench_function("bloomcraft-4/delete/1t", |b| {
        b.iter_custom(|iters| {
            timed(
                clock,
                iters,
                &mut peer,
                |p| {
                    absent.iter().for_each(|k| {
                        black_box(p.delete(k));
                    })
                },
                |p| absent.iter().for_each(|k| p.insert(k)),
            )
        })
    });
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
    let present: Vec<u64> = absent
        .iter()
        .map(|&r| recent[(r % n as u64) as usize])
        .collect();
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
    g.bench_function("growable-bloom-filter/build/1t", |b| {
        b.iter_batched(
            growable,
            |mut f| {
                keys.iter().for_each(|k| {
                    f.insert(k);
                });
                f
            },
            BatchSize::LargeInput,
        )
    });
    let pc = || {
        probabilistic_collections::bloom::ScalableBloomFilter::<u64>::new(
            initial * BITS_PER_KEY,
            rate,
            f64::from(growth),
            tightening,
        )
    };
    g.bench_function("probabilistic-collections/build/1t", |b| {
        b.iter_batched(
            pc,
            |mut f| {
                keys.iter().for_each(|k| f.insert(k));
                f
            },
            BatchSize::LargeInput,
        )
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
    g.bench_function("bloomcraft/build/1t", |b| {
        b.iter_batched(
            bc,
            |mut f| {
                keys.iter().for_each(|k| f.insert(k));
                f
            },
            BatchSize::LargeInput,
        )
    });
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
    let present: Vec<u64> = absent
        .iter()
        .map(|&r| keys[(r % n as u64) as usize])
        .collect();
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

fn bench_all<M: Measurement<Value = Duration>>(c: &mut Criterion<M>, clock: Clock) {
    for (label, bytes) in sizes() {
        bench_counting(c, clock, &label, bytes);
        bench_window(c, &label, bytes);
        bench_stable(c, &label, bytes);
        bench_scalable(c, &label, bytes);
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

/// Criterion measurement by [`thread_cpu_time`] (`BLOOMLANES_BENCH_CLOCK=thread-cpu`).
#[cfg(unix)]
struct ThreadCpuTime(WallTime);

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

fn main() {
    match std::env::var("BLOOMLANES_BENCH_CLOCK").as_deref() {
        Err(_) | Ok("") | Ok("wall") => {
            let mut c = config().configure_from_args();
            bench_all(&mut c, Clock::Wall);
            c.final_summary();
        }
        #[cfg(unix)]
        Ok("thread-cpu") => {
            let mut c = config()
                .with_measurement(ThreadCpuTime(WallTime))
                .configure_from_args();
            bench_all(&mut c, Clock::ThreadCpu);
            c.final_summary();
        }
        Ok(other) => {
            eprintln!(
                "BLOOMLANES_BENCH_CLOCK={other:?}: expected `wall` or `thread-cpu` (Unix only)"
            );
            std::process::exit(2);
        }
    }
}
