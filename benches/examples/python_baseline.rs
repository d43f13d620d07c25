//! The Rust bulk rates that the Python package is compared with (`python/bench/bench.py`):
//! `cargo run --release -p bloomlanes-benches --example python_baseline -- [N] [reps]`.
//!
//! The same work as the Python benchmark, on every core: a filter sized for N keys at a 1%
//! false-positive rate (layout chosen by the sizing, as `bloomlanes.Filter(N, 0.01)`), N u64
//! keys `0..N` inserted with `Probe::par_insert` and `N..2N`-shifted queries looked up with
//! `Probe::par_contains` (half present); then the same with the N strings `key-{i}` (Arrow-like
//! data + u64 offsets). Prints one line per operation with the median rate in M keys/s.

use std::time::Instant;

use bloomlanes_core::{Filter, Keys, Params, Sizing, Strings};
use bloomlanes_simd::Probe;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The strings `key-{i}` for `i` in `range`: their bytes end to end and their offsets.
fn strings(range: std::ops::Range<u64>) -> (Vec<u8>, Vec<u64>) {
    let texts: Vec<String> = range.map(|i| format!("key-{i}")).collect();
    let ends = texts.iter().scan(0u64, |at, t| {
        *at += t.len() as u64;
        Some(*at)
    });
    (
        texts.concat().into_bytes(),
        std::iter::once(0).chain(ends).collect(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let probe = Probe::active();
    let params = Params::for_keys(n, Sizing::FalsePositiveRate(0.01), None).expect("sizing");
    let keys: Vec<u64> = (0..n).collect();
    let queries: Vec<u64> = (n / 2..n / 2 + n).collect();
    let (sdata, soffs) = strings(0..n);
    let (qdata, qoffs) = strings(n / 2..n / 2 + n);
    let skeys = Keys::Strings(Strings::new(&sdata, &soffs).expect("offsets"));
    let squeries = Keys::Strings(Strings::new(&qdata, &qoffs).expect("offsets"));
    let mut out = vec![0u8; n as usize];
    println!(
        "rust baseline: N={n}, {params}, simd {}, {} threads",
        probe.path(),
        rayon::current_num_threads()
    );
    for (name, ins, look) in [
        ("u64", Keys::U64(&keys), Keys::U64(&queries)),
        ("strings", skeys, squeries),
    ] {
        let (mut ti, mut tc) = (Vec::new(), Vec::new());
        let mut hits = 0;
        for _ in 0..reps {
            let mut f = Filter::new(params);
            let t = Instant::now();
            probe.par_insert(f.as_view_mut(), ins);
            ti.push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
            let t = Instant::now();
            probe.par_contains(f.as_view(), look, &mut out);
            tc.push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
            hits = out.iter().filter(|&&b| b == 1).count();
        }
        println!("{name} insert {:.1} M keys/s", median(ti));
        println!("{name} contains {:.1} M keys/s (hits {hits})", median(tc));
    }
}
