//! Measured false-positive rate against the blocked (Poisson mixture) formula, 10^6 absent keys,
//! every layout at 8, 10 and 16 bits per key, within 4 standard deviations.
#![cfg(feature = "alloc")]
use bloomlanes_core::{math, Filter, Layout, Params};

const INSERTED: u64 = 200_000;
const ABSENT: u64 = 1_000_000;

#[test]
fn measured_rate_matches_the_formula() {
    let mut report = Vec::new();
    for layout in Layout::ALL {
        for bits_per_key in [8.0, 10.0, 16.0] {
            let blocks = math::blocks_for_bits_per_key(layout, INSERTED, bits_per_key).unwrap();
            let mut f = Filter::new(Params::new(layout, blocks).with_seed(0x5eed));
            (0..INSERTED).for_each(|k| f.insert(&k));
            // Absent keys: a disjoint range.
            let hits = (INSERTED..INSERTED + ABSENT)
                .filter(|&k| f.contains(&k))
                .count();
            let measured = hits as f64 / ABSENT as f64;
            let expected = math::false_positive_rate(layout, blocks, INSERTED);
            let sigma = (expected * (1.0 - expected) / ABSENT as f64).sqrt();
            let z = (measured - expected) / sigma;
            report.push(format!(
                "{layout} {bits_per_key} b/key: measured {measured:.6} expected {expected:.6} ({z:+.2} σ)"
            ));
            assert!(
                z.abs() <= 4.0,
                "{layout} at {bits_per_key} bits/key: measured {measured} vs expected {expected} ({z:.2} σ)\n{}",
                report.join("\n")
            );
        }
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn classic_formula_is_worse_than_the_blocked_one() {
    // At 10 bits per key the classic formula understates the blocked filter's rate.
    let layout = Layout::L8x32;
    let blocks = math::blocks_for_bits_per_key(layout, INSERTED, 10.0).unwrap();
    let blocked = math::false_positive_rate(layout, blocks, INSERTED);
    let m = f64::from(blocks) * 256.0;
    let classic = (1.0 - (-8.0 * INSERTED as f64 / m).exp()).powi(8);
    assert!(
        blocked > classic * 1.2,
        "blocked {blocked} classic {classic}"
    );
}
