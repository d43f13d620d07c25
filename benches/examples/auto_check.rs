//! `auto_check MIB LOG2_BATCH CALLS [OP]`: calls on fresh random batches into a filter of MIB
//! MiB (8x32, 4 Mi keys inserted), CALLS calls a mode, the modes taking turns call by call in
//! a random order each round: direct, partitioned, the automatic rule alone, and the automatic
//! mode with its measurements.
//! OP is `lookup` (one thread, the default), `par-insert` (inserts on every core: direct is
//! the block ranges, partitioned the partitioned insert, and a fifth mode, one thread, which
//! the automatic all-core insert may also choose) or `counting` (one-thread inserts into a
//! counting filter of 4-bit counters whose image is MIB MiB, 5 × MIB MiB in all). Prints each
//! mode's median and range (M keys/s) and the mean after each mode's first [`SETTLE`] calls
//! (where the measured mode has settled).
//!
//! `cargo run --release -p bloomlanes-benches --example auto_check -- 1024 16 40`
use std::time::Instant;

use bloomlanes_benches::random;
use bloomlanes_core::{CounterBits, CountingFilter, Filter, FilterKind, Keys, Layout, Params};
use bloomlanes_simd::{set_partition_measurement, PartitionMode, Partitioning, Probe};

/// Calls of each mode left out of the means: the measured mode's first calls try every mode
/// (twice round its two or three).
const SETTLE: usize = 6;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "MIB LOG2_BATCH CALLS [lookup|par-insert|counting]";
    let a: Vec<usize> = args
        .iter()
        .take(3)
        .map(|s| s.parse().expect(usage))
        .collect();
    let (mib, log2, calls) = (a[0] as u64, a[1], a[2]);
    let op = args.get(3).map_or("lookup", String::as_str);
    assert!(
        matches!(op, "lookup" | "par-insert" | "counting"),
        "{op}: {usage}"
    );
    let blocks = (mib << 20) / Layout::L8x32.block_bytes() as u64;
    let params = Params::new(Layout::L8x32, blocks as u32);
    let mut f = Filter::new(params);
    let mut counting = CountingFilter::new(params.with_kind(FilterKind::Counting {
        counter_bits: CounterBits::Four,
    }))
    .expect("a counting filter");
    Probe::active().insert(f.as_view_mut(), Keys::U64(&random(4 << 20, 1)));
    let n = 1usize << log2;
    let mut out = vec![0u8; n];
    let mut names = vec!["direct", "partitioned", "auto (rule)", "auto (measured)"];
    if op == "par-insert" {
        // All-core inserts also choose one thread.
        names.push("one thread");
    }
    let mut rates = vec![Vec::new(); names.len()];
    let mut seed = 100;
    for call in 0..calls {
        // The modes in a fresh random order each round: a mode's rate depends on where its
        // predecessor left the filter's lines (in the other core's L2 after a two-thread call;
        // 6 MiB, one thread after a one-thread call: 420–440 M keys/s, after a two-thread one
        // 350–390).
        let mut order: Vec<usize> = (0..names.len()).collect();
        let shuffle = random(order.len(), 7 + call as u64);
        for j in (1..order.len()).rev() {
            order.swap(j, (shuffle[j] % (j as u64 + 1)) as usize);
        }
        for i in order {
            let rate = &mut rates[i];
            // The fifth, one thread, inserts directly, as the automatic all-core insert's
            // one-thread mode does.
            let mode = [
                PartitionMode::Direct,
                PartitionMode::Partitioned,
                PartitionMode::Auto,
                PartitionMode::Auto,
                PartitionMode::Direct,
            ][i];
            set_partition_measurement(i == 3);
            let p = Probe::active().with_partitioning(Partitioning {
                mode,
                ..Default::default()
            });
            seed += 1;
            let batch = random(n, seed);
            let t = Instant::now();
            match op {
                "par-insert" if i == 4 => p.insert(f.as_view_mut(), Keys::U64(&batch)),
                "par-insert" => p.par_insert(f.as_view_mut(), Keys::U64(&batch)),
                "counting" => p.insert_counting(counting.as_view_mut(), Keys::U64(&batch)),
                _ => p.contains(f.as_view(), Keys::U64(&batch), &mut out),
            }
            rate.push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
    }
    let mut means = Vec::new();
    for (name, r) in names.iter().zip(&mut rates) {
        let all = r.clone();
        r.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let late: Vec<f64> = all[SETTLE.min(all.len() - 1)..].to_vec();
        let late_mean = late.iter().sum::<f64>() / late.len() as f64;
        means.push(late_mean);
        println!("{op}: {mib} MiB, 2^{log2} keys, {name:16}: median {:7.1} [{:.1}-{:.1}], mean after {SETTLE} calls {:.1} M keys/s", r[r.len() / 2], r[0], r[r.len() - 1], late_mean);
    }
    let fixed = [0, 1].into_iter().chain((names.len() > 4).then_some(4));
    let better = fixed.map(|i| means[i]).fold(0.0, f64::max);
    println!(
        "{op}: {mib} MiB, 2^{log2} keys: rule {:.2}, measured {:.2} of the best fixed mode (means after {SETTLE} calls)",
        means[2] / better,
        means[3] / better
    );
}
