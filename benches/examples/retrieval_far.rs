//! `retrieval_far MKEYS REPS`: one-thread retrieval lookups with fresh keys every call, the way a
//! table larger than the caches is used (the criterion bench repeats one batch of 64 Ki keys,
//! whose cells then sit in L3). Builds a 4-wise table of MKEYS million keys (v = f = 16, on
//! every core, timed), then answers REPS calls of 1 Mi present keys each drawn afresh; prints
//! the build time and the median and range of the calls' rates.
//!
//! `cargo run --release -p bloomlanes-benches --example retrieval_far -- 100 9`
use std::time::Instant;

use bloomlanes_core::retrieval::RetrievalSpec;
use bloomlanes_core::{xxh64_u64, Keys, Layout, Params};
use bloomlanes_simd::Probe;

fn main() {
    let a: Vec<f64> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let n = (a[0] * 1e6) as u64;
    let reps = a[1] as usize;
    let hashes: Vec<u64> = (0..n).map(|i| xxh64_u64(i, 3)).collect();
    let values: Vec<u32> = hashes.iter().map(|&h| (h >> 7) as u32 & 0xffff).collect();
    let spec = RetrievalSpec::new(16, 16).with_arity(4);
    let probe = Probe::active();
    let t = Instant::now();
    let table = probe
        .build_retrieval(Params::new(Layout::L8x64, 1), spec, &hashes, &values)
        .expect("builds");
    let build_s = t.elapsed().as_secs_f64();
    let batch = 1 << 20;
    let (mut out, mut found) = (vec![0u32; batch], vec![0u64; batch / 64]);
    let mut rates = Vec::new();
    for r in 0..reps {
        let probes: Vec<u64> = (0..batch as u64)
            .map(|i| hashes[(xxh64_u64(i, 100 + r as u64) % n) as usize])
            .collect();
        let t = Instant::now();
        probe.get_retrieval(&table, Keys::Hashes(&probes), &mut out, &mut found);
        rates.push(batch as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "{:.0} MB: build {build_s:.2} s; lookups median {:.1} [{:.1}-{:.1}] M keys/s",
        table.shape().array_bytes() as f64 / 1e6,
        rates[reps / 2],
        rates[0],
        rates[reps - 1]
    );
}
