//! A/B timings of the scalable filter's bulk insert and lookup (not criterion):
//! `cargo run --release -p bloomlanes-simd --example scalable_insert -- [reps]`. Prints, for
//! each operation, the median and range over `reps` runs (default 7) in M keys/s. The filter is
//! the `scalable` bench's: 838 860 keys from capacity 52 428, growth 2, tightening 0.8, 1 %.
//!
//! Operations: `build` (every key inserted into an empty filter: fresh keys, five stages),
//! `present` (the same keys inserted again into the built filter: every one held), `new`
//! (10^6 other keys inserted into the built filter: it grows), `lookup present`,
//! `lookup absent`.

use std::time::Instant;

use bloomlanes_core::{Keys, Layout, Params, ScalableFilter};
use bloomlanes_simd::Probe;

/// `n` pseudo-random keys (SplitMix64 from `seed`).
fn random(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
        .collect()
}

/// Median, smallest and largest of `rates`.
fn summary(mut rates: Vec<f64>) -> (f64, f64, f64) {
    rates.sort_by(f64::total_cmp);
    (rates[rates.len() / 2], rates[0], rates[rates.len() - 1])
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let probe = Probe::active();
    let n = (1usize << 20) * 8 / 10;
    let keys = random(n, 7);
    let fresh = random(1_000_000, 8);
    let empty = ScalableFilter::new(Params::new(Layout::L8x32, 1), n as u64 / 16, 0.01, 2, 0.8)
        .expect("sizing");
    let mut built = empty.clone();
    probe
        .insert_scalable(&mut built, Keys::U64(&keys))
        .expect("insert");
    let mut out = vec![0u8; fresh.len()];
    let mut rates: [Vec<f64>; 5] = Default::default();
    for _ in 0..reps {
        let rate = |keys: usize, t: Instant| keys as f64 / t.elapsed().as_secs_f64() / 1e6;
        let mut f = empty.clone();
        let t = Instant::now();
        probe
            .insert_scalable(&mut f, Keys::U64(&keys))
            .expect("insert");
        rates[0].push(rate(n, t));
        assert_eq!(f, built, "the build is deterministic");
        let t = Instant::now();
        probe
            .insert_scalable(&mut f, Keys::U64(&keys))
            .expect("insert");
        rates[1].push(rate(n, t));
        let t = Instant::now();
        probe
            .insert_scalable(&mut f, Keys::U64(&fresh))
            .expect("insert");
        rates[2].push(rate(fresh.len(), t));
        let t = Instant::now();
        probe.contains_scalable(&built, Keys::U64(&keys), &mut out[..n]);
        rates[3].push(rate(n, t));
        let t = Instant::now();
        probe.contains_scalable(&built, Keys::U64(&fresh), &mut out);
        rates[4].push(rate(fresh.len(), t));
    }
    let names = ["build", "present", "new", "lookup present", "lookup absent"];
    for (name, r) in names.iter().zip(rates) {
        let (med, lo, hi) = summary(r);
        println!("{name:15} {med:7.1} M keys/s ({lo:.1}-{hi:.1})");
    }
}
