//! Retrieval-table lookups on each SIMD path of this CPU, side by side in one process: a table of
//! MKEYS million keys (values of V bits, F check bits, ARITY cells a key), 64 Ki of its keys
//! (random, present) answered 8 times a rep, REPS reps a path, the paths taking turns; prints
//! each path's median and best rate. On AVX-512 the lookups run 8 keys at a time in vector lanes
//! (tables up to 8 MiB); every other path answers key by key.
//!
//! `cargo run --release -p bloomlanes-benches --example retrieval_lookup -- MKEYS V F ARITY REPS`

use std::time::Instant;

use bloomlanes_core::retrieval::RetrievalSpec;
use bloomlanes_core::{xxh64_u64, Keys, Layout, Params};
use bloomlanes_simd::{available_paths, Probe, SimdPath};

/// Keys a call.
const BATCH: usize = 1 << 16;
/// Calls a rep.
const CALLS: usize = 8;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize| -> f64 {
        a.get(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("usage: MKEYS V F ARITY REPS (argument {i})"))
    };
    let n = (arg(1) * 1e6) as u64;
    let (v, f, arity, reps) = (arg(2) as u8, arg(3) as u8, arg(4) as u8, arg(5) as usize);
    let hashes: Vec<u64> = (0..n).map(|i| xxh64_u64(i, 3)).collect();
    let mask = ((1u64 << v) - 1) as u32;
    let values: Vec<u32> = hashes.iter().map(|&h| (h >> 7) as u32 & mask).collect();
    let spec = RetrievalSpec::new(v, f).with_arity(arity);
    let base = Params::new(Layout::L8x64, 1);
    let table = Probe::active()
        .build_retrieval(base, spec, &hashes, &values)
        .expect("builds");
    let bytes = table.shape().array_bytes();
    let probes: Vec<u64> = (0..BATCH as u64)
        .map(|i| hashes[(xxh64_u64(i, 9) % n) as usize])
        .collect();
    let want: Vec<u32> = probes
        .iter()
        .map(|h| table.get_hash(*h).expect("a built key"))
        .collect();
    let paths: Vec<SimdPath> = available_paths()
        .into_iter()
        .filter(|p| *p != SimdPath::Scalar)
        .collect();
    let mut times = vec![Vec::new(); paths.len()];
    let (mut out, mut found) = (vec![0u32; BATCH], vec![0u64; BATCH / 64]);
    for _ in 0..reps {
        for (p, t) in paths.iter().zip(&mut times) {
            let probe = Probe::new(*p).expect("available");
            let start = Instant::now();
            for _ in 0..CALLS {
                probe.get_retrieval(&table, Keys::Hashes(&probes), &mut out, &mut found);
            }
            t.push(start.elapsed().as_secs_f64());
            assert_eq!(out, want, "{p}: every built key answers its value");
        }
    }
    println!(
        "{n} keys, v = {v}, f = {f}, {arity}-wise: {:.2} MB of cells; {BATCH} present keys x \
         {CALLS} calls, {reps} reps (M keys/s)",
        bytes as f64 / 1e6
    );
    for (p, t) in paths.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let rate = |s: f64| (CALLS * BATCH) as f64 / s / 1e6;
        println!(
            "{p:>8}: median {:6.1}, best {:6.1}",
            rate(t[t.len() / 2]),
            rate(t[0])
        );
    }
}
