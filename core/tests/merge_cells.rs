//! Unions of the kinds with cells: a spatial filter merged with another of the same classes is
//! byte for byte the filter of both key sets (each cell the larger class, per-class counts
//! added), a counting filter merged with another is the filter of both multisets (counters
//! added, stuck at their maximum), block counts that divide one another fold first, and what
//! cannot merge (other classes, other parameters, stable filters) is refused.
#![cfg(feature = "alloc")]

use bloomlanes_core::{
    CounterBits, CountingFilter, FilterKind, KeyType, Layout, MergeError, Params, SpatialFilter,
};

/// `n` distinct keys starting at `from`.
fn keys(from: u64, n: u64) -> impl Iterator<Item = u64> {
    (from..from + n).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

const NAMES: [&str; 3] = ["allow", "mirror", "deny"];

fn spatial(layout: Layout, blocks: u32, bits: u32, key_type: KeyType) -> SpatialFilter {
    let p = Params::new(layout, blocks)
        .with_seed(9)
        .with_key_type(key_type);
    SpatialFilter::new(p, bits, &NAMES).unwrap()
}

#[test]
fn a_spatial_union_is_the_filter_of_both_key_sets() {
    for layout in Layout::ALL {
        for bits in [4, 8, 16] {
            let z = 40;
            // Both halves share keys (in different classes) so that cells collide.
            let (mut a, mut b) = (
                spatial(layout, z * 2, bits, KeyType::U64),
                spatial(layout, z, bits, KeyType::Any),
            );
            let mut one_shot = spatial(layout, z, bits, KeyType::U64);
            for (i, k) in keys(0, 2_000).enumerate() {
                let c = (i % 3) as u32 + 1;
                a.insert(&k, c).unwrap();
                one_shot.insert(&k, c).unwrap();
            }
            for (i, k) in keys(1_500, 2_000).enumerate() {
                let c = 3 - (i % 3) as u32;
                b.insert(&k, c).unwrap();
                one_shot.insert(&k, c).unwrap();
            }
            let ab = a.union_folding(&b).unwrap();
            let ba = b.union_folding(&a).unwrap();
            assert_eq!(
                ab.to_file_bytes(),
                one_shot.to_file_bytes(),
                "{layout} {bits}"
            );
            assert_eq!(
                ba.to_file_bytes(),
                one_shot.to_file_bytes(),
                "{layout} {bits}"
            );
            assert_eq!(ab.keys_per_class(), one_shot.keys_per_class());
            assert_eq!(ab.key_count(), Some(4_000));
            assert_eq!(
                ab.params().key_type,
                KeyType::U64,
                "the recorded type is kept"
            );
            // Every key of either side: its class or higher.
            for (i, k) in keys(0, 2_000).enumerate() {
                assert!(ab.class_of(&k) > (i % 3) as u32, "{layout} {bits}: key {i}");
            }
        }
    }
}

#[test]
fn spatial_filters_of_other_classes_or_parameters_are_refused() {
    let p = Params::new(Layout::L8x32, 16);
    let a = SpatialFilter::new(p, 4, &NAMES).unwrap();
    let reordered = SpatialFilter::new(p, 4, &["allow", "deny", "mirror"]).unwrap();
    let fewer = SpatialFilter::new(p, 4, &["allow", "mirror"]).unwrap();
    let wider = SpatialFilter::new(p, 8, &NAMES).unwrap();
    let reseeded = SpatialFilter::new(p.with_seed(1), 4, &NAMES).unwrap();
    let mut m = a.clone();
    assert_eq!(m.union_with(&reordered), Err(MergeError::Classes));
    assert_eq!(m.union_with(&fewer), Err(MergeError::Classes));
    assert!(matches!(m.union_with(&wider), Err(MergeError::Kind(..))));
    assert!(matches!(m.union_with(&reseeded), Err(MergeError::Seed(..))));
    assert_eq!(a.union_folding(&reordered), Err(MergeError::Classes));
    assert_eq!(m, a, "a refused union changes nothing");
    let err = MergeError::Classes.to_string();
    assert!(err.contains("classes differ"), "{err}");
}

fn counting(blocks: u32, bits: CounterBits) -> CountingFilter {
    CountingFilter::counting(Params::new(Layout::L8x64, blocks).with_seed(4), bits)
}

#[test]
fn a_counting_union_adds_counters_saturated_ones_included() {
    for bits in [CounterBits::Four, CounterBits::Eight] {
        let z = 8;
        let (mut a, mut b, mut one_shot) =
            (counting(z * 4, bits), counting(z, bits), counting(z, bits));
        // Repeats drive small filters' counters to their maximum.
        for k in keys(0, 600).chain(keys(0, 300)) {
            a.insert(&k);
            one_shot.insert(&k);
        }
        for k in keys(200, 600).chain((0..300).flat_map(|_| keys(0, 10))) {
            b.insert(&k);
            one_shot.insert(&k);
        }
        let ab = a.union_folding(&b).unwrap();
        assert!(
            one_shot.saturated() > 0,
            "the test must reach saturated counters"
        );
        assert_eq!(ab.counter_words(), one_shot.counter_words(), "{bits:?}");
        assert_eq!(ab.to_file_bytes(), one_shot.to_file_bytes(), "{bits:?}");
        assert_eq!(ab.key_count(), one_shot.key_count());
    }
}

#[test]
fn stable_filters_do_not_merge() {
    let p = Params::new(Layout::L8x32, 8);
    let mut s = CountingFilter::stable(p, CounterBits::Four, 2);
    let t = s.clone();
    assert!(matches!(
        s.union_with(&t),
        Err(MergeError::Unmergeable(FilterKind::Stable { .. }))
    ));
    assert!(matches!(
        s.union_folding(&t),
        Err(MergeError::Unmergeable(FilterKind::Stable { .. }))
    ));
    let four = counting(8, CounterBits::Four);
    let mut eight = counting(8, CounterBits::Eight);
    assert!(matches!(eight.union_with(&four), Err(MergeError::Kind(..))));
}
