//! Streaming memory bandwidth of this machine, the yardstick of the partitioned paths' traffic
//! bounds (BENCHMARKS.md): `cargo run --release -p bloomlanes-benches --example bandwidth --
//! [MiB] [reps]` times a sequential read (sum of u64), a sequential write (fill) and a copy
//! (`copy_from_slice`, i.e. memcpy) of a buffer of `MiB` mebibytes (default 1024), on one thread
//! and on every thread of rayon's pool, and prints the best of `reps` runs (default 7) in GB/s
//! (10^9 bytes per second; a copy counts the bytes read plus the bytes written).
//! `BANDWIDTH_CLOCK=thread-cpu` times the one-thread runs by the thread's CPU time (on a machine
//! shared with other jobs; the all-thread runs stay on the wall clock).

use std::hint::black_box;

use bloomlanes_benches::Clock;
use rayon::prelude::*;

/// Best of `reps` runs in seconds on `clock`.
fn best_on(clock: Clock, reps: usize, mut run: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| clock.seconds(&mut run))
        .fold(f64::INFINITY, f64::min)
}

fn sum(words: &[u64]) -> u64 {
    // Eight independent sums, so the loop is bound by the loads, not by one add chain.
    let mut acc = [0u64; 8];
    for c in words.chunks_exact(8) {
        for (a, &w) in acc.iter_mut().zip(c) {
            *a = a.wrapping_add(w);
        }
    }
    acc.iter().fold(0, |a, &b| a.wrapping_add(b))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(7);
    let n = mib << 17; // u64 words
    let bytes = (n * 8) as f64;
    let src: Vec<u64> = (0..n as u64).collect();
    let mut dst = vec![1u64; n];
    let chunk = (n / (4 * rayon::current_num_threads())).max(8) / 8 * 8;
    let gb = |b: f64, t: f64| b / t / 1e9;
    let one = Clock::from_env("BANDWIDTH_CLOCK");
    let best = |reps: usize, run: &mut dyn FnMut()| best_on(Clock::Wall, reps, run);
    let best1 = |reps: usize, run: &mut dyn FnMut()| best_on(one, reps, run);

    let t = best1(reps, &mut || {
        black_box(sum(black_box(&src)));
    });
    println!("read  1 thread : {:6.1} GB/s", gb(bytes, t));
    let t = best(reps, &mut || {
        black_box(
            src.par_chunks(chunk)
                .map(sum)
                .reduce(|| 0, u64::wrapping_add),
        );
    });
    println!(
        "read  all ({}) : {:6.1} GB/s",
        rayon::current_num_threads(),
        gb(bytes, t)
    );
    let t = best1(reps, &mut || {
        black_box(&mut dst).fill(black_box(7));
    });
    println!("write 1 thread : {:6.1} GB/s", gb(bytes, t));
    let t = best(reps, &mut || {
        dst.par_chunks_mut(chunk).for_each(|c| c.fill(black_box(7)));
    });
    println!("write all      : {:6.1} GB/s", gb(bytes, t));
    let t = best1(reps, &mut || {
        black_box(&mut dst).copy_from_slice(black_box(&src));
    });
    println!(
        "copy  1 thread : {:6.1} GB/s (read + written)",
        gb(2.0 * bytes, t)
    );
    let t = best(reps, &mut || {
        dst.par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(d, s)| d.copy_from_slice(s));
    });
    println!(
        "copy  all      : {:6.1} GB/s (read + written)",
        gb(2.0 * bytes, t)
    );
}
