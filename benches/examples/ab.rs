//! Quick A/B micro-measurements (not criterion): `cargo run --release -p bloomlanes-benches
//! --example ab -- <op> <size> [reps]`, op one of `contains`, `sbbf`, `insert`, `par_insert`,
//! `par_contains`, `par_ranges` (`AB_RANGES` ranges), `hash`; prints the median of `reps` runs in M keys/s.

use std::hint::black_box;
use std::time::Instant;

use bloomlanes_core::{xxh64_u64, Filter, Keys, Layout, Params};
use bloomlanes_simd::Probe;

const BATCH: usize = 1 << 18;

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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let op = args.get(1).map(String::as_str).unwrap_or("contains");
    let bytes = parse_size(args.get(2).map(String::as_str).unwrap_or("64K"));
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(15);
    let probe = Probe::active();
    let ranges: usize = std::env::var("AB_RANGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4 * rayon::current_num_threads());
    let n_keys = (bytes * 8 / 10).min(16 << 20);
    let mut state = 1;
    let inserted: Vec<u64> = (0..n_keys).map(|_| splitmix(&mut state)).collect();
    let mut state = 2;
    let keys: Vec<u64> = (0..BATCH).map(|_| splitmix(&mut state)).collect();
    let blocks = (bytes / Layout::L8x32.block_bytes()) as u32;
    let mut f = Filter::new(Params::new(Layout::L8x32, blocks));
    probe.insert(f.as_view_mut(), Keys::U64(&inserted));
    let mut sbbf = sbbf_rs_safe::Filter::new(10, bytes * 8 / 10);
    for &k in inserted.iter().filter(|_| op == "sbbf") {
        sbbf.insert_hash(xxh64_u64(k, 0));
    }
    let mut out = vec![0u8; BATCH];
    let mut hashes = vec![0u64; BATCH];
    let mut times = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..4 {
            match op {
                "contains" => probe.contains(f.as_view(), Keys::U64(&keys), &mut out),
                "par_contains" => probe.par_contains(f.as_view(), Keys::U64(&keys), &mut out),
                "sbbf" => {
                    for (o, &k) in out.iter_mut().zip(keys.iter()) {
                        *o = u8::from(sbbf.contains_hash(xxh64_u64(k, 0)));
                    }
                }
                "insert" => probe.insert(f.as_view_mut(), Keys::U64(&keys)),
                "par_insert" => probe.par_insert(f.as_view_mut(), Keys::U64(&keys)),
                "par_ranges" => probe.par_insert_ranges(f.as_view_mut(), Keys::U64(&keys), ranges),
                "hash" => {
                    for (h, &k) in hashes.iter_mut().zip(black_box(&keys)) {
                        *h = xxh64_u64(k, 0);
                    }
                }
                _ => panic!("unknown op {op}"),
            }
            black_box(&mut out);
            black_box(&mut hashes);
        }
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let med = times[times.len() / 2];
    println!(
        "{op} {bytes} B: median {:.1} M keys/s (min-time {:.1})",
        4.0 * BATCH as f64 / med / 1e6,
        4.0 * BATCH as f64 / times[0] / 1e6
    );
}
