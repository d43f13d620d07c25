//! Folding (`bloomlanes_core::fold`): a filter of `f × z` blocks folded into `z` blocks is byte
//! for byte (image, cells, key counts) the filter of the same keys built at `z` blocks, for
//! static, counting and spatial filters, every layout, block counts that are and are not powers
//! of two, and factors that are powers of two (and 3, which the proof also covers).
#![cfg(feature = "alloc")]

use bloomlanes_core::fold::{self, CellMerge};
use bloomlanes_core::{
    CounterBits, CountingFilter, Filter, FilterKind, KeyType, Layout, MergeError, Params,
    SpatialFilter,
};

/// Block counts of the folded filters: 1, small odd ones, a power of two, a large non-power.
const TARGETS: [u32; 6] = [1, 3, 7, 64, 100, 1_021];
/// Fold factors: powers of two up to 8, and 3.
const FACTORS: [u32; 4] = [2, 4, 8, 3];

/// `n` distinct keys starting at `from`.
fn keys(from: u64, n: u64) -> impl Iterator<Item = u64> {
    (from..from + n).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// How many keys a filter of `blocks` blocks gets: about 40 per block, enough to set most bits
/// of a small filter and to saturate 4-bit counters there.
fn key_count(blocks: u32) -> u64 {
    u64::from(blocks) * 40 + 17
}

fn static_of(layout: Layout, blocks: u32, n: u64) -> Filter {
    let mut f = Filter::new(Params::new(layout, blocks).with_seed(7));
    for k in keys(0, n) {
        f.insert(&k);
    }
    f
}

#[test]
fn a_folded_static_filter_is_a_fresh_build_at_the_smaller_size() {
    for layout in Layout::ALL {
        for z in TARGETS {
            let n = key_count(z);
            let fresh = static_of(layout, z, n);
            for f in FACTORS {
                let big = static_of(layout, z * f, n);
                let folded = big.folded(z).unwrap();
                assert_eq!(
                    folded.to_file_bytes(),
                    fresh.to_file_bytes(),
                    "{layout} {z}×{f}"
                );
                assert_eq!(folded.key_count(), Some(n));
            }
            // Folding twice is folding once by the product.
            let twice = static_of(layout, z * 4, n).folded(z * 2).unwrap();
            assert_eq!(twice.folded(z).unwrap(), fresh, "{layout} {z} twice");
        }
    }
}

fn counting_of(layout: Layout, blocks: u32, bits: CounterBits, n: u64) -> CountingFilter {
    let mut f = CountingFilter::counting(Params::new(layout, blocks).with_seed(3), bits);
    // Every key twice, and the first tenth eight times more: counters reach 15 in small filters.
    for k in keys(0, n)
        .chain(keys(0, n))
        .chain((0..8).flat_map(|_| keys(0, n / 10)))
    {
        f.insert(&k);
    }
    f
}

#[test]
fn a_folded_counting_filter_is_a_fresh_build_saturated_counters_included() {
    let mut saturated = 0;
    for layout in Layout::ALL {
        for bits in [CounterBits::Four, CounterBits::Eight] {
            for z in TARGETS {
                let n = key_count(z);
                let fresh = counting_of(layout, z, bits, n);
                saturated += fresh.saturated();
                for f in FACTORS {
                    let folded = counting_of(layout, z * f, bits, n).folded(z).unwrap();
                    assert_eq!(
                        folded.image_words(),
                        fresh.image_words(),
                        "{layout} {z}×{f}"
                    );
                    assert_eq!(folded.counter_words(), fresh.counter_words());
                    assert_eq!(folded.to_file_bytes(), fresh.to_file_bytes());
                }
            }
        }
    }
    assert!(saturated > 0, "the test must reach saturated counters");
}

fn spatial_of(layout: Layout, blocks: u32, cell_bits: u32, n: u64) -> SpatialFilter {
    let names = ["low", "mid", "high"];
    let mut f = SpatialFilter::new(Params::new(layout, blocks), cell_bits, &names).unwrap();
    // Classes interleaved so that cells are shared by keys of different classes.
    for (i, k) in keys(0, n).enumerate() {
        f.insert(&k, (i % 3) as u32 + 1).unwrap();
    }
    f
}

#[test]
fn a_folded_spatial_filter_is_a_fresh_build_classes_included() {
    for layout in Layout::ALL {
        for cell_bits in [4, 8, 16] {
            for z in TARGETS {
                let n = key_count(z);
                let fresh = spatial_of(layout, z, cell_bits, n);
                for f in FACTORS {
                    let folded = spatial_of(layout, z * f, cell_bits, n).folded(z).unwrap();
                    assert_eq!(folded.cell_words(), fresh.cell_words(), "{layout} {z}×{f}");
                    assert_eq!(folded.to_file_bytes(), fresh.to_file_bytes());
                    assert_eq!(folded.keys_per_class(), fresh.keys_per_class());
                }
            }
        }
    }
}

#[test]
fn the_union_of_filters_of_different_sizes_is_a_one_shot_build() {
    for layout in Layout::ALL {
        let (z, n) = (50, 3_000);
        let mut a = Filter::new(Params::new(layout, z * 4).with_key_type(KeyType::U64));
        let mut b = Filter::new(Params::new(layout, z));
        let mut one_shot = Filter::new(Params::new(layout, z).with_key_type(KeyType::U64));
        for k in keys(0, n) {
            a.insert(&k);
            one_shot.insert(&k);
        }
        for k in keys(n, n / 2) {
            b.insert(&k);
            one_shot.insert(&k);
        }
        let ab = a.union_folding(&b).unwrap();
        let ba = b.union_folding(&a).unwrap();
        assert_eq!(ab.to_file_bytes(), one_shot.to_file_bytes(), "{layout}");
        assert_eq!(ba.to_file_bytes(), one_shot.to_file_bytes(), "{layout}");
        assert_eq!(ab.key_count(), Some(n + n / 2));
    }
}

#[test]
fn a_side_without_a_recorded_count_leaves_the_merged_count_unknown() {
    let mut a = static_of(Layout::L8x32, 8, 100);
    let b = static_of(Layout::L8x32, 8, 50);
    let mut sum = a.clone();
    sum.union_with(&b).unwrap();
    assert_eq!(sum.key_count(), Some(150));
    a.set_key_count(None);
    a.union_with(&b).unwrap();
    assert_eq!(a.key_count(), None);
    assert_eq!(fold::merged_key_count(Some(1), None), None);
    assert_eq!(
        fold::merged_key_count(Some(u64::MAX), Some(1)),
        Some(u64::MAX)
    );
}

#[test]
fn block_counts_that_do_not_divide_are_refused() {
    let a = static_of(Layout::L8x32, 12, 10);
    assert_eq!(a.folded(5), Err(MergeError::Blocks(12, 5)));
    assert_eq!(a.folded(24), Err(MergeError::Blocks(12, 24)));
    assert_eq!(a.folded(0), Err(MergeError::Blocks(12, 0)));
    let b = static_of(Layout::L8x32, 8, 10);
    assert_eq!(a.union_folding(&b), Err(MergeError::Blocks(12, 8)));
    // Other parameters still must agree.
    let c = Filter::new(Params::new(Layout::L8x64, 6));
    assert!(matches!(a.union_folding(&c), Err(MergeError::Layout(..))));
    assert_eq!(fold::merged_blocks(1_024, 2_048), Ok(1_024));
    assert_eq!(fold::fold_factor(4_096, 1_024), Some(4));
}

#[test]
fn a_stable_filter_does_not_fold() {
    let p = Params::new(Layout::L8x32, 8);
    let stable = CountingFilter::stable(p, CounterBits::Four, 2);
    assert!(matches!(
        stable.folded(4),
        Err(MergeError::Unfoldable(FilterKind::Stable { .. }))
    ));
    let q = p.with_kind(stable.params().kind);
    let mut half = q;
    half.blocks = 4;
    assert!(matches!(
        fold::check_mergeable(&q, &half),
        Err(MergeError::Unfoldable(_))
    ));
    assert_eq!(fold::check_mergeable(&q, &q), Ok(8));
}

#[test]
fn cell_merges_follow_their_definitions() {
    let add = CellMerge::SaturatingAdd;
    assert_eq!(add.apply(9, 9, 15), 15);
    assert_eq!(add.apply(3, 4, 15), 7);
    assert_eq!(CellMerge::Max.apply(3, 4, 15), 4);
    // Word-wise: every 4-bit cell of 0x..F7 + 0x..19.
    assert_eq!(
        add.word(0x0000_00f7, 0x0000_0019, bloomlanes_core::CellBits::Four),
        0x0000_00ff
    );
    assert_eq!(
        CellMerge::Max.word(0x0102_0304, 0x0401_0402, bloomlanes_core::CellBits::Eight),
        0x0402_0404
    );
}
