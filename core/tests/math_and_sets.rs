//! Sizing, estimates, and set operations.
#![cfg(feature = "alloc")]
use bloomlanes_core::math::{self, SizingError};
use bloomlanes_core::Params;
use bloomlanes_core::{Filter, HashId, Layout, MergeError, Sizing};

#[test]
fn sizing_meets_the_target_with_the_fewest_blocks() {
    for layout in Layout::ALL {
        for (n, rate) in [
            (1_000u64, 0.01),
            (1_000_000, 0.001),
            (5, 0.1),
            (10_000_000, 0.0001),
        ] {
            let z = math::blocks_for_rate(layout, n, rate).unwrap();
            assert!(math::false_positive_rate(layout, z, n) <= rate);
            if z > 1 {
                assert!(math::false_positive_rate(layout, z - 1, n) > rate);
            }
        }
    }
}

#[test]
fn auto_picks_the_fewest_bits() {
    for (n, rate) in [(1_000_000u64, 0.01), (1_000_000, 0.0001), (1000, 0.2)] {
        let (layout, z) = math::auto_size(n, rate).unwrap();
        let bits = u64::from(z) * layout.block_bits() as u64;
        for other in Layout::ALL {
            let oz = math::blocks_for_rate(other, n, rate).unwrap();
            assert!(
                bits <= u64::from(oz) * other.block_bits() as u64,
                "{other} beats {layout}"
            );
        }
    }
}

#[test]
fn sizing_errors_are_named() {
    assert_eq!(
        math::blocks_for_rate(Layout::L8x32, 10, 0.0),
        Err(SizingError::BadRate(0.0))
    );
    assert_eq!(
        math::blocks_for_rate(Layout::L8x32, 10, 1.5),
        Err(SizingError::BadRate(1.5))
    );
    assert!(matches!(
        math::blocks_for_rate(Layout::L8x32, u64::MAX, 1e-9),
        Err(SizingError::Unreachable { .. })
    ));
    assert!(Filter::for_keys(10, Sizing::BitsPerKey(-1.0), None, 0).is_err());
}

#[test]
fn key_estimate_is_close() {
    for layout in Layout::ALL {
        let mut f = Filter::new(Params::new(layout, 4096).with_seed(3));
        (0..50_000u64).for_each(|k| f.insert(&k));
        let est = f.estimated_keys().unwrap();
        assert!((est - 50_000.0).abs() < 1_000.0, "{layout}: {est}");
        assert!(math::bits_per_key(layout, 4096, 50_000) > 0.0);
    }
}

#[test]
fn union_and_intersection() {
    let mut a = Filter::new(Params::new(Layout::L8x64, 2048));
    let mut b = Filter::new(Params::new(Layout::L8x64, 2048));
    (0..30_000u64).for_each(|k| a.insert(&k));
    (20_000..50_000u64).for_each(|k| b.insert(&k));
    let (u, i) = a.estimate_union_intersection(&b).unwrap();
    assert!((u - 50_000.0).abs() < 2_000.0, "union {u}");
    assert!((i - 10_000.0).abs() < 2_000.0, "intersection {i}");

    let mut union = a.clone();
    union.union_with(&b).unwrap();
    assert!((0..50_000u64).all(|k| union.contains(&k)));
    let mut inter = a.clone();
    inter.intersect_with(&b).unwrap();
    assert!((20_000..30_000u64).all(|k| inter.contains(&k)));
    // The AND answers "absent" for most keys of only one side.
    let only_a = (0..20_000u64).filter(|&k| inter.contains(&k)).count();
    assert!(only_a < 20_000 / 2, "{only_a}");
}

#[test]
fn incompatible_merges_are_errors() {
    let a = Filter::new(Params::new(Layout::L8x32, 4));
    assert_eq!(
        a.clone()
            .union_with(&Filter::new(Params::new(Layout::L8x64, 4))),
        Err(MergeError::Layout(Layout::L8x32, Layout::L8x64))
    );
    assert_eq!(
        a.clone()
            .intersect_with(&Filter::new(Params::new(Layout::L8x32, 5))),
        Err(MergeError::Blocks(4, 5))
    );
    assert_eq!(
        a.clone()
            .union_with(&Filter::new(Params::new(Layout::L8x32, 4).with_seed(1))),
        Err(MergeError::Seed(0, 1))
    );
    assert_eq!(
        a.clone().union_with(&Filter::new(
            Params::new(Layout::L8x32, 4)
                .with_seed(0)
                .with_hash(HashId::Prehashed)
        )),
        Err(MergeError::Hash(HashId::Xxh64, HashId::Prehashed))
    );
}

/// The rate of a filter's actual bits is the same whatever the storage width, is the measured
/// rate (within 4σ over 10^6 absent keys), and is close to the Poisson formula for large filters.
#[test]
fn false_positive_rate_from_the_bits() {
    use bloomlanes_core::{FilterRef, Params};
    for layout in Layout::ALL {
        let blocks = 4000;
        let n = u64::from(blocks) * layout.block_bits() as u64 / 10;
        let mut f = Filter::new(Params::new(layout, blocks).with_seed(5));
        (0..n).for_each(|k| f.insert(&k));
        let from_bits = f.as_view().fpr_from_bits();
        let wide: Vec<u64> = f
            .words()
            .chunks_exact(2)
            .map(|w| u64::from(w[0]) | u64::from(w[1]) << 32)
            .collect();
        let wide_rate = FilterRef::new(*f.params(), &wide[..])
            .unwrap()
            .fpr_from_bits();
        assert!((from_bits - wide_rate).abs() < 1e-12, "{layout}");
        let mut s = 77u64;
        let trials = 1_000_000u64;
        let hits = (0..trials)
            .filter(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                f.contains(&(s | 1 << 63))
            })
            .count() as f64;
        let sigma = (trials as f64 * from_bits * (1.0 - from_bits)).sqrt();
        assert!(
            (hits - trials as f64 * from_bits).abs() < 4.0 * sigma,
            "{layout}: {hits} vs {from_bits}"
        );
        let formula = f.params().expected_fpr(n);
        assert!(
            (from_bits / formula - 1.0).abs() < 0.05,
            "{layout}: {from_bits} vs {formula}"
        );
    }
}
