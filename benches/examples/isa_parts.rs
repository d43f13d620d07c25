//! `isa_parts MIB LOG2_KEYS REPS`: one-thread insert and lookup rates (M keys/s, best of REPS)
//! of the AVX2 and AVX-512 paths into a filter of MIB MiB, with `u64` keys and with prehashed
//! keys (to tell the hash from the block work).
//!
//! Environment: `LAYOUT=8x32|16x32|8x64|16x64` (default 8x32); `PART=auto|direct|partitioned`
//! (the partitioning mode, default auto); `FRESH=1` inserts the `u64` keys into a copy of the
//! empty filter each repetition (as `bloomlanes bench` does) instead of into the same filter
//! again. Inserts are made in calls of 1 Mi keys, like the CLI's batches.
//!
//! `cargo run --release -p bloomlanes-benches --example isa_parts -- 6 22 5`
use std::time::Instant;

use bloomlanes_benches::random;
use bloomlanes_core::{xxh64_u64, Filter, Keys, Layout, Params};
use bloomlanes_simd::{PartitionMode, Partitioning, Probe, SimdPath};

/// Keys per insert call.
const CALL: usize = 1 << 20;

/// The shortest of `reps` timings of `f`, in seconds.
fn best(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..reps).map(|_| f()).fold(f64::INFINITY, f64::min)
}

/// Seconds `f` takes.
fn timed(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn main() {
    let usage = "MIB LOG2_KEYS REPS";
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect(usage))
        .collect();
    let &[mib, log2, reps] = a.as_slice() else {
        panic!("{usage}")
    };
    let layout = match std::env::var("LAYOUT").as_deref() {
        Ok("16x32") => Layout::L16x32,
        Ok("8x64") => Layout::L8x64,
        Ok("16x64") => Layout::L16x64,
        _ => Layout::L8x32,
    };
    let mode = match std::env::var("PART").as_deref() {
        Ok("direct") => PartitionMode::Direct,
        Ok("partitioned") => PartitionMode::Partitioned,
        _ => PartitionMode::Auto,
    };
    let fresh = std::env::var("FRESH").is_ok();
    let blocks = ((mib as u64) << 20) / layout.block_bytes() as u64;
    let params = Params::new(layout, blocks as u32);
    let n = 1usize << log2;
    let keys = random(n, 7);
    let hashes: Vec<u64> = keys.iter().map(|&k| xxh64_u64(k, params.seed)).collect();
    let mut bits = vec![0u64; n.div_ceil(64)];
    let mut bytes = vec![0u8; n];
    let rate = |t: f64| n as f64 / t / 1e6;
    for path in [SimdPath::Avx2, SimdPath::Avx512] {
        let Some(p) = Probe::new(path) else { continue };
        let p = p.with_partitioning(Partitioning {
            mode,
            ..Default::default()
        });
        let empty = Filter::new(params);
        let mut f = empty.clone();
        let insert_u64 = best(reps, || {
            let mut g = if fresh { empty.clone() } else { f.clone() };
            let t = timed(|| {
                for c in keys.chunks(CALL) {
                    p.insert(g.as_view_mut(), Keys::U64(c));
                }
            });
            f = g;
            t
        });
        let insert_hashes = best(reps, || {
            timed(|| {
                for c in hashes.chunks(CALL) {
                    p.insert(f.as_view_mut(), Keys::Hashes(c));
                }
            })
        });
        let view = f.as_view();
        let bitmap_u64 = best(reps, || {
            timed(|| p.contains_bitmap(view, Keys::U64(&keys), &mut bits))
        });
        let bitmap_hashes = best(reps, || {
            timed(|| p.contains_bitmap(view, Keys::Hashes(&hashes), &mut bits))
        });
        let bytes_u64 = best(reps, || {
            timed(|| p.contains(view, Keys::U64(&keys), &mut bytes))
        });
        println!(
            "{path:?}: insert u64 {:.1} hashes {:.1} | bitmap u64 {:.1} hashes {:.1} | bytes u64 {:.1}",
            rate(insert_u64),
            rate(insert_hashes),
            rate(bitmap_u64),
            rate(bitmap_hashes),
            rate(bytes_u64)
        );
    }
}
