//! Quick A/B micro-measurements (not criterion): `cargo run --release -p bloomlanes-benches
//! --example ab -- <op> <size> [reps]`, op one of `contains`, `bitmap`, `positions`, `sbbf`,
//! `sol` (the speed-of-light reference of the `cpu` bench), `insert`, `par_insert`,
//! `par_contains`, `par_bitmap`, `par_ranges` (`AB_RANGES` ranges), `hash`, and the counting
//! filter's `cinsert`, `cremove`, `par_cinsert`, `par_cremove` (`AB_BITS=8` for 8-bit counters,
//! `AB_LAYOUT` for a layout other than 8x32; SIZE is the image's bytes; each timed call is undone
//! by an untimed one); prints the median
//! and the best of `reps` runs in M keys/s.
//!
//! Environment: `AB_BATCH` keys per call (default 2^18; `AB_CALLS` calls per run, default 4),
//! `AB_CLOCK=thread-cpu` times the calling thread's CPU time instead of wall time (one-thread
//! ops only), `AB_FILL`
//! caps the keys inserted before the run (default 16 Mi), `AB_MODE=direct|partitioned|auto`
//! sets the probe's partitioning mode (default auto), `AB_SLICE` its slice bytes,
//! `AB_FORM=hashes` gives the batch as hashes (no hashing in the timed run). `wcontains` looks
//! keys up in a sliding window over the last `SIZE × 8 / 10` keys at `AB_RATE` (default 0.01)
//! with `AB_GENS` generations (default 4; `auto`: the shape with the fewest bits) and
//! `AB_LAYOUT` (default 8x32), filled to its worst case.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloomlanes_core::{
    xxh64_u64, CounterBits, CountingFilter, Filter, Keys, Layout, Params, WindowFilter,
};
use bloomlanes_simd::{PartitionMode, Partitioning, Probe};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn parse_size(s: &str) -> usize {
    let s = s.trim().to_ascii_uppercase();
    let (num, mul) = match s.chars().last().unwrap() {
        'K' => (&s[..s.len() - 1], 1 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (&s[..], 1),
    };
    num.parse::<usize>().unwrap() * mul
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
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

#[cfg(not(unix))]
fn thread_cpu_time() -> Duration {
    panic!("AB_CLOCK=thread-cpu needs a Unix clock")
}

/// Random one-cache-line reads, one per key, 32-key groups prefetched one group ahead (the
/// `cpu` bench's speed-of-light reference).
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let op = args.get(1).map(String::as_str).unwrap_or("contains");
    let bytes = parse_size(args.get(2).map(String::as_str).unwrap_or("64K"));
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(15);
    let batch = std::env::var("AB_BATCH")
        .ok()
        .map(|s| parse_size(&s))
        .unwrap_or(1 << 18);
    let cpu_clock = std::env::var("AB_CLOCK").as_deref() == Ok("thread-cpu");
    let fill = std::env::var("AB_FILL")
        .ok()
        .map(|s| parse_size(&s))
        .unwrap_or(16 << 20);
    let mode = match std::env::var("AB_MODE").as_deref() {
        Ok("direct") => PartitionMode::Direct,
        Ok("partitioned") => PartitionMode::Partitioned,
        _ => PartitionMode::Auto,
    };
    let slice_bytes = std::env::var("AB_SLICE")
        .ok()
        .map(|s| parse_size(&s))
        .unwrap_or(0);
    let probe = Probe::active().with_partitioning(Partitioning {
        mode,
        slice_bytes,
        ..Partitioning::default()
    });
    let ranges: usize = std::env::var("AB_RANGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4 * rayon::current_num_threads());
    let n_keys = (bytes * 8 / 10).min(fill);
    let mut state = 1;
    let inserted: Vec<u64> = (0..n_keys).map(|_| splitmix(&mut state)).collect();
    let mut state = 2;
    let keys: Vec<u64> = (0..batch).map(|_| splitmix(&mut state)).collect();
    let blocks = (bytes / Layout::L8x32.block_bytes()) as u32;
    let mut f = Filter::new(Params::new(Layout::L8x32, blocks));
    let counting = op.contains("cinsert") || op.contains("cremove");
    if op != "sol" && !counting {
        probe.par_insert(f.as_view_mut(), Keys::U64(&inserted));
    }
    let bits8 = std::env::var("AB_BITS").as_deref() == Ok("8");
    // The counting filter's layout: `AB_LAYOUT` as for the window, its image `bytes` long.
    let c_layout = std::env::var("AB_LAYOUT")
        .ok()
        .and_then(|s| Layout::from_name(&s))
        .unwrap_or(Layout::L8x32);
    let c_blocks = (bytes / c_layout.block_bytes()) as u32;
    let mut cf = CountingFilter::counting(
        Params::new(c_layout, if counting { c_blocks } else { 1 }),
        if bits8 {
            CounterBits::Eight
        } else {
            CounterBits::Four
        },
    );
    if counting {
        probe.par_insert_counting(cf.as_view_mut(), Keys::U64(&inserted));
    }
    let w_rate: f64 = std::env::var("AB_RATE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.01);
    let w_layout = std::env::var("AB_LAYOUT")
        .ok()
        .and_then(|s| Layout::from_name(&s))
        .unwrap_or(Layout::L8x32);
    let window_keys = if op == "wcontains" { n_keys as u64 } else { 1 };
    let mut window = match std::env::var("AB_GENS").as_deref() {
        Ok("auto") => WindowFilter::smallest_for_keys(window_keys, w_rate).unwrap(),
        g => WindowFilter::for_keys(
            window_keys,
            g.ok().and_then(|s| s.parse().ok()).unwrap_or(4),
            w_rate,
            w_layout,
        )
        .unwrap(),
    };
    let gens = match window.params().kind {
        bloomlanes_core::FilterKind::Window { generations, .. } => generations,
        _ => unreachable!("a window"),
    };
    if op == "wcontains" {
        let mut state = 3;
        let stream: Vec<u64> = (0..n_keys + n_keys / usize::from(gens))
            .map(|_| splitmix(&mut state))
            .collect();
        probe.insert_window_filter(&mut window, Keys::U64(&stream));
    }
    let mut refused = vec![0u64; batch.div_ceil(64)];
    let sol_buf: Vec<u64> = if op == "sol" {
        (0..bytes / 8).map(|i| i as u64).collect()
    } else {
        Vec::new()
    };
    let mut sbbf = sbbf_rs_safe::Filter::new(10, bytes * 8 / 10);
    for &k in inserted.iter().filter(|_| op == "sbbf") {
        sbbf.insert_hash(xxh64_u64(k, 0));
    }
    let mut out = vec![0u8; batch];
    let mut list = Vec::new();
    let mut bits = vec![0u64; batch.div_ceil(64)];
    let mut hashes = vec![0u64; if op == "hash" { batch } else { 0 }];
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
    let mut times = Vec::new();
    let calls: usize = std::env::var("AB_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    for _ in 0..reps {
        if counting {
            // Each timed counting call is undone by an untimed one.
            let mut total = 0.0;
            for _ in 0..calls {
                let (t, c) = (Instant::now(), thread_cpu_time_if(cpu_clock));
                match op {
                    "cinsert" => probe.insert_counting(cf.as_view_mut(), batch_keys),
                    "par_cinsert" => probe.par_insert_counting(cf.as_view_mut(), batch_keys),
                    "cremove" => {
                        probe.insert_counting(cf.as_view_mut(), batch_keys);
                        let (t, c) = (Instant::now(), thread_cpu_time_if(cpu_clock));
                        let n = probe
                            .remove_counting(cf.as_view_mut(), batch_keys, &mut refused)
                            .unwrap();
                        assert_eq!(n, 0);
                        total += elapsed(cpu_clock, t, c);
                        continue;
                    }
                    "par_cremove" => {
                        probe.par_insert_counting(cf.as_view_mut(), batch_keys);
                        let (t, c) = (Instant::now(), thread_cpu_time_if(cpu_clock));
                        let n = probe
                            .par_remove_counting(cf.as_view_mut(), batch_keys, &mut refused)
                            .unwrap();
                        assert_eq!(n, 0);
                        total += elapsed(cpu_clock, t, c);
                        continue;
                    }
                    _ => panic!("unknown op {op}"),
                }
                total += elapsed(cpu_clock, t, c);
                // Undone on the thread that ran the op (the one-thread ops): the filter's lines
                // stay in that core's caches, as after a static insert.
                if op.starts_with("par_") {
                    probe.par_remove_counting(cf.as_view_mut(), batch_keys, &mut refused)
                } else {
                    probe.remove_counting(cf.as_view_mut(), batch_keys, &mut refused)
                }
                .unwrap();
            }
            times.push(total);
            continue;
        }
        let (t, c) = (Instant::now(), thread_cpu_time_if(cpu_clock));
        for _ in 0..calls {
            match op {
                "contains" => probe.contains(f.as_view(), batch_keys, &mut out),
                "wcontains" => probe.contains_window(&window, batch_keys, &mut out),
                "bitmap" => probe.contains_bitmap(f.as_view(), batch_keys, &mut bits),
                "par_bitmap" => probe.par_contains_bitmap(f.as_view(), batch_keys, &mut bits),
                "positions" => probe.contains_positions(f.as_view(), batch_keys, &mut list),
                "par_contains" => probe.par_contains(f.as_view(), batch_keys, &mut out),
                "sbbf" => {
                    for (o, &k) in out.iter_mut().zip(keys.iter()) {
                        *o = u8::from(sbbf.contains_hash(xxh64_u64(k, 0)));
                    }
                }
                "sol" => {
                    black_box(speed_of_light(&sol_buf, &keys));
                }
                "insert" => probe.insert(f.as_view_mut(), batch_keys),
                "par_insert" => probe.par_insert(f.as_view_mut(), batch_keys),
                "par_ranges" => probe.par_insert_ranges(f.as_view_mut(), batch_keys, ranges),
                "hash" => {
                    for (h, &k) in hashes.iter_mut().zip(black_box(&keys)) {
                        *h = xxh64_u64(k, 0);
                    }
                }
                _ => panic!("unknown op {op}"),
            }
            black_box(&mut out);
            black_box(&mut bits);
            black_box(&mut hashes);
        }
        times.push(if cpu_clock {
            (thread_cpu_time() - c).as_secs_f64()
        } else {
            t.elapsed().as_secs_f64()
        });
    }
    times.sort_by(f64::total_cmp);
    let med = times[times.len() / 2];
    println!(
        "{op} {bytes} B, batch {batch}{}: median {:.1} M keys/s, best {:.1}",
        if cpu_clock { " (thread CPU time)" } else { "" },
        (calls * batch) as f64 / med / 1e6,
        (calls * batch) as f64 / times[0] / 1e6
    );
}

/// Seconds since `t` (wall) or `c` (thread CPU time, if `cpu`).
fn elapsed(cpu: bool, t: Instant, c: Duration) -> f64 {
    if cpu {
        (thread_cpu_time() - c).as_secs_f64()
    } else {
        t.elapsed().as_secs_f64()
    }
}

fn thread_cpu_time_if(on: bool) -> Duration {
    if on {
        thread_cpu_time()
    } else {
        Duration::ZERO
    }
}
