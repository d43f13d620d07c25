//! `cells_far MIB BITS REPS`: one-thread spatial-filter lookups (present and absent keys) and
//! inserts (one class) with fresh keys every call, into a filter of MIB MiB (image and cells)
//! with BITS-bit cells and 4 classes, filled with up to 4 Mi keys; REPS calls of 1 Mi keys
//! each, medians printed. The criterion bench repeats one batch of 64 Ki keys instead, whose
//! lines then sit in L3.
//!
//! `cargo run --release -p bloomlanes-benches --example cells_far -- 256 4 7`
use std::time::Instant;

use bloomlanes_benches::kinds::SpatialSetup;
use bloomlanes_benches::random;
use bloomlanes_core::Keys;
use bloomlanes_simd::{Classes, Probe};

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let (mib, bits, reps) = (a[0], a[1] as u32, a[2]);
    let probe = Probe::active();
    let mut s = SpatialSetup::new(&probe, mib << 20, bits, 4, 11, 4 << 20);
    let batch = 1 << 20;
    let mut out = vec![0u8; batch];
    let (mut look_p, mut look_a, mut ins) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..reps {
        let present: Vec<u64> = random(batch, 50 + r as u64)
            .into_iter()
            .map(|x| s.keys[(x % s.keys.len() as u64) as usize])
            .collect();
        let absent = random(batch, 1000 + r as u64);
        let t = Instant::now();
        probe.min_cells(&s.filter, Keys::U64(&present), &mut out);
        look_p.push(batch as f64 / t.elapsed().as_secs_f64() / 1e6);
        let t = Instant::now();
        probe.min_cells(&s.filter, Keys::U64(&absent), &mut out);
        look_a.push(batch as f64 / t.elapsed().as_secs_f64() / 1e6);
        let t = Instant::now();
        probe.insert_spatial(s.filter.as_view_mut(), Keys::U64(&absent), Classes::One(1));
        ins.push(batch as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{} MB spatial{bits}: lookup present {:.1} absent {:.1} insert-one {:.1} M keys/s",
        s.bytes() as f64 / 1e6,
        med(&mut look_p),
        med(&mut look_a),
        med(&mut ins)
    );
}
