//! Quick A/B micro-measurements (not criterion): `cargo run --release -p bloomlanes-benches
//! --example ab -- <op> <size> [reps]`; prints the median and the best of `reps` runs in M keys/s.
//!
//! Ops: `contains`, `bitmap`, `positions`, `sbbf`, `sol` (the speed-of-light reference of the
//! `cpu` bench), `insert`, `par_insert`, `par_contains`, `par_bitmap`, `par_ranges`
//! (`AB_RANGES` ranges), `hash`; the counting filter's `cinsert`, `cremove`, `par_cinsert`,
//! `par_cremove` (each timed call undone by an untimed one) and `ccount`, `par_ccount`
//! (`AB_BITS=8` for 8-bit counters, `AB_LAYOUT` for a layout other than 8x32; SIZE is the
//! image's bytes); the spatial filter's `sinsert`, `par_sinsert` (`AB_CLASSES=one` for one class
//! per batch, else a class per key; `AB_FRESH` restores the filter before each call, so that
//! every key is new), `sclasses`, `par_sclasses` (`AB_BITS` cells, default 4;
//! SIZE is image and cells together, the image at 10 bits per key, 4 classes); `wcontains`
//! looks keys up in a sliding window over the last `SIZE × 8 / 10` keys at `AB_RATE` (default
//! 0.01) with `AB_GENS` generations (default 4; `auto`: the shape with the fewest bits) and
//! `AB_LAYOUT` (default 8x32), filled to its worst case.
//!
//! Environment: `AB_BATCH` keys per call (default 2^18; `AB_CALLS` calls per run, default 4),
//! `AB_CLOCK=thread-cpu` times the calling thread's CPU time instead of wall time (one-thread
//! ops only), `AB_FILL` caps the keys inserted before the run (default 16 Mi),
//! `AB_MODE=direct|partitioned|auto` sets the probe's partitioning mode (default auto),
//! `AB_SLICE` its slice bytes, `AB_FORM=hashes` gives the batch as hashes (no hashing in the
//! timed run), `AB_PRESENT` draws the batch from the filter's keys (else random keys).

use std::hint::black_box;

use bloomlanes_benches::kinds::{counting_write, SpatialSetup};
use bloomlanes_benches::{env_or, env_size, present, random, speed_of_light, static_filter, Clock};
use bloomlanes_core::{
    xxh64_u64, CounterBits, CountingFilter, FilterKind, Keys, Layout, Params, WindowFilter,
};
use bloomlanes_simd::{Classes, PartitionMode, Partitioning, Probe};

/// When an untimed part of a call runs.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// Before the timed part.
    Before,
    /// The timed part.
    Op,
    /// After it.
    After,
}

/// The layout of `AB_LAYOUT` (default 8x32).
fn layout() -> Layout {
    std::env::var("AB_LAYOUT")
        .ok()
        .and_then(|s| Layout::from_name(&s))
        .unwrap_or(Layout::L8x32)
}

/// A window over the last `n` keys, filled to its worst case.
fn window(probe: &Probe, n: usize) -> WindowFilter {
    let rate = env_or("AB_RATE", 0.01);
    let mut w = match std::env::var("AB_GENS").as_deref() {
        Ok("auto") => WindowFilter::smallest_for_keys(n as u64, rate).unwrap(),
        g => WindowFilter::for_keys(
            n as u64,
            g.ok().and_then(|s| s.parse().ok()).unwrap_or(4),
            rate,
            layout(),
        )
        .unwrap(),
    };
    let FilterKind::Window { generations, .. } = w.params().kind else {
        unreachable!("a window")
    };
    let stream = random(n + n / usize::from(generations), 3);
    probe.insert_window_filter(&mut w, Keys::U64(&stream));
    w
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let op = args.get(1).cloned().unwrap_or_else(|| "contains".into());
    let bytes = bloomlanes_benches::parse_size(args.get(2).map(String::as_str).unwrap_or("64K"))
        .expect("a size");
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(15);
    let batch = env_size("AB_BATCH", 1 << 18);
    let calls = env_or("AB_CALLS", 4usize);
    let clock = Clock::from_env("AB_CLOCK");
    let mode = match std::env::var("AB_MODE").as_deref() {
        Ok("direct") => PartitionMode::Direct,
        Ok("partitioned") => PartitionMode::Partitioned,
        _ => PartitionMode::Auto,
    };
    let probe = Probe::active().with_partitioning(Partitioning {
        mode,
        slice_bytes: env_size("AB_SLICE", 0),
        ..Partitioning::default()
    });
    let ranges = env_or("AB_RANGES", 4 * rayon::current_num_threads());
    let n_keys = (bytes * 8 / 10).min(env_size("AB_FILL", 16 << 20));
    let inserted = random(n_keys, 1);
    // `AB_PRESENT`: keys of the filter (for the spatial ops, of the spatial filter).
    let present_keys = std::env::var("AB_PRESENT").is_ok();
    let keys = if present_keys {
        present(&inserted, batch, 2)
    } else {
        random(batch, 2)
    };
    // `AB_FORM=hashes`: the keys' hashes are given instead of the keys (no hashing in the run).
    let given: Vec<u64> = if std::env::var("AB_FORM").as_deref() == Ok("hashes") {
        keys.iter().map(|&k| xxh64_u64(k, 0)).collect()
    } else {
        Vec::new()
    };
    let batch_keys = if given.is_empty() {
        Keys::U64(&keys)
    } else {
        Keys::Hashes(&given)
    };
    let bits8 = std::env::var("AB_BITS").as_deref() == Ok("8");
    let (mut out, mut bits, mut list) = (vec![0u8; batch], vec![0u64; batch.div_ceil(64)], vec![]);
    let mut refused = vec![0u64; batch.div_ceil(64)];
    let p = &probe;
    let mut step: Box<dyn FnMut(Phase) + '_> = match op.as_str() {
        "cinsert" | "cremove" | "par_cinsert" | "par_cremove" | "ccount" | "par_ccount" => {
            // Counting ops: SIZE is the image's bytes.
            let blocks = (bytes / layout().block_bytes()) as u32;
            let counter_bits = if bits8 {
                CounterBits::Eight
            } else {
                CounterBits::Four
            };
            let mut f = CountingFilter::counting(Params::new(layout(), blocks), counter_bits);
            probe.par_insert_counting(f.as_view_mut(), Keys::U64(&inserted));
            let par = op.starts_with("par_");
            let remove = op.ends_with("cremove");
            let r = &mut refused;
            let mut write = move |f: &mut CountingFilter, remove| {
                counting_write(p, f, batch_keys, r, remove, par)
            };
            let (out, count) = (&mut out, op.ends_with("ccount"));
            Box::new(move |phase| match (phase, count) {
                (Phase::Op, true) if par => p.par_min_cells(&f, batch_keys, out),
                (Phase::Op, true) => p.min_cells(&f, batch_keys, out),
                (_, true) => {}
                // A delete is prepared by an insert, an insert undone by a delete (on the
                // thread that ran it: the filter's lines stay in its core's caches).
                (Phase::Before, _) if remove => write(&mut f, false),
                (Phase::Op, _) => write(&mut f, remove),
                (Phase::After, _) if !remove => write(&mut f, true),
                _ => {}
            })
        }
        "sinsert" | "par_sinsert" | "sclasses" | "par_sclasses" => {
            // Spatial ops: SIZE is the image's and cells' bytes.
            let cell_bits = if bits8 { 8 } else { 4 };
            let mut s = SpatialSetup::new(&probe, bytes, cell_bits, 4, 11, n_keys);
            let pk = present_keys.then(|| present(&s.keys, batch, 2));
            let classes: Vec<u16> = random(batch, 4)
                .iter()
                .map(|r| 1 + (r % 4) as u16)
                .collect();
            let (par, insert) = (op.starts_with("par_"), op.ends_with("insert"));
            let one = std::env::var("AB_CLASSES").as_deref() == Ok("one");
            // `AB_FRESH`: the filled filter is restored before each call (untimed), so every
            // key of the batch is new to it.
            let fresh = std::env::var("AB_FRESH").is_ok().then(|| s.filter.clone());
            let out = &mut out;
            Box::new(move |phase| {
                if let (Phase::Before, Some(filled)) = (phase, &fresh) {
                    s.filter.clone_from(filled);
                }
                let batch_keys = pk.as_deref().map_or(batch_keys, Keys::U64);
                let cs = if one {
                    Classes::One(1)
                } else {
                    Classes::U16(&classes)
                };
                match (phase, insert, par) {
                    (Phase::Op, true, false) => {
                        p.insert_spatial(s.filter.as_view_mut(), batch_keys, cs)
                    }
                    (Phase::Op, true, true) => {
                        p.par_insert_spatial(s.filter.as_view_mut(), batch_keys, cs)
                    }
                    (Phase::Op, false, false) => p.min_cells(&s.filter, batch_keys, out),
                    (Phase::Op, false, true) => p.par_min_cells(&s.filter, batch_keys, out),
                    _ => {}
                }
            })
        }
        "wcontains" => {
            let w = window(&probe, n_keys);
            let out = &mut out;
            Box::new(move |phase| {
                if phase == Phase::Op {
                    p.contains_window(&w, batch_keys, out)
                }
            })
        }
        "sol" => {
            let sol_buf: Vec<u64> = (0..bytes / 8).map(|i| i as u64).collect();
            let keys = &keys;
            Box::new(move |phase| {
                if phase == Phase::Op {
                    black_box(speed_of_light(&sol_buf, keys));
                }
            })
        }
        "sbbf" => {
            let mut sbbf = sbbf_rs_safe::Filter::new(10, bytes * 8 / 10);
            for &k in &inserted {
                sbbf.insert_hash(xxh64_u64(k, 0));
            }
            let (keys, out) = (&keys, &mut out);
            Box::new(move |phase| {
                if phase == Phase::Op {
                    for (o, &k) in out.iter_mut().zip(keys.iter()) {
                        *o = u8::from(sbbf.contains_hash(xxh64_u64(k, 0)));
                    }
                }
            })
        }
        "hash" => {
            let mut hashes = vec![0u64; batch];
            let keys = &keys;
            Box::new(move |phase| {
                if phase == Phase::Op {
                    for (h, &k) in hashes.iter_mut().zip(black_box(keys)) {
                        *h = xxh64_u64(k, 0);
                    }
                    black_box(&mut hashes);
                }
            })
        }
        _ => {
            let mut f = static_filter(&probe, bytes, &inserted);
            let (out, bits, list, op) = (&mut out, &mut bits, &mut list, op.clone());
            Box::new(move |phase| {
                if phase != Phase::Op {
                    return;
                }
                match op.as_str() {
                    "contains" => p.contains(f.as_view(), batch_keys, out),
                    "bitmap" => p.contains_bitmap(f.as_view(), batch_keys, bits),
                    "par_bitmap" => p.par_contains_bitmap(f.as_view(), batch_keys, bits),
                    "positions" => p.contains_positions(f.as_view(), batch_keys, list),
                    "par_contains" => p.par_contains(f.as_view(), batch_keys, out),
                    "insert" => p.insert(f.as_view_mut(), batch_keys),
                    "par_insert" => p.par_insert(f.as_view_mut(), batch_keys),
                    "par_ranges" => p.par_insert_ranges(f.as_view_mut(), batch_keys, ranges),
                    _ => panic!("unknown op {op}"),
                }
                black_box(&mut *out);
                black_box(&mut *bits);
            })
        }
    };
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            (0..calls)
                .map(|_| {
                    step(Phase::Before);
                    let t = clock.seconds(|| step(Phase::Op));
                    step(Phase::After);
                    t
                })
                .sum()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let med = times[times.len() / 2];
    println!(
        "{op} {bytes} B, batch {batch}{}: median {:.1} M keys/s, best {:.1}",
        if clock == Clock::ThreadCpu {
            " (thread CPU time)"
        } else {
            ""
        },
        (calls * batch) as f64 / med / 1e6,
        (calls * batch) as f64 / times[0] / 1e6
    );
}
