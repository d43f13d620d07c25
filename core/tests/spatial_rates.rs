//! The spatial filter's expected rates (`math::spatial_class_rates`, derived in
//! `docs/FORMAT.md` §9) against measurement: per class, the absent keys reported in it (over
//! 10^6 absent keys), its keys reported above it (over all its keys) and the cells it owns, each
//! within 4σ, at 8x32 and 16x64 with 2 to 8 classes of skewed sizes.
//!
//! σ counts both sources of spread: the sampling of the measured keys (binomial) and the luck of
//! this one filter's block loads, which the formulas average over (the filter-to-filter
//! variation: `z ×` the variance of the per-block value, estimated from the filter's own blocks).
//! With a few thousand blocks the second is 1.5 to 3 times the first.
#![cfg(feature = "alloc")]

mod common;

use bloomlanes_core::cell;
use bloomlanes_core::{block_index, math, Layout, Params, SpatialFilter};
use common::{absent_keys, within_4_sigma_of, Spread, ABSENT};

/// Per block, per class `c` (1 ..= n + 1): the fraction of each lane's cells holding `c` or more.
fn lane_fractions(f: &SpatialFilter, block: u32, classes: usize) -> Vec<Vec<f64>> {
    let p = f.params();
    let (lanes, w) = (p.layout.lanes(), u64::from(p.layout.word_bits()));
    let mut at_least = vec![vec![0.0; classes + 2]; lanes];
    for (lane, counts) in at_least.iter_mut().enumerate() {
        let first = (u64::from(block) * lanes as u64 + lane as u64) * w;
        for k in first..first + w {
            let v = cell::cell(f.cell_words(), f.cell_bits(), k) as usize;
            for c in counts.iter_mut().take(v + 1) {
                *c += 1.0 / w as f64;
            }
        }
    }
    at_least
}

/// Builds a filter sized for an overall rate of `rate` holding `sizes[c − 1]` keys of class `c`
/// (the u64 keys numbered from 0, class by class) and checks every class's rates.
fn measure(layout: Layout, sizes: &[u64], rate: f64) {
    let n = sizes.len();
    let names: Vec<String> = (1..=n).map(|c| format!("c{c}")).collect();
    let total: u64 = sizes.iter().sum();
    let shape = Params::new(layout, 1).with_seed(3);
    let mut f = SpatialFilter::for_keys(shape, 8, &names, total, rate).unwrap();
    let p = *f.params();
    let z = p.blocks;
    let mut first = Vec::new();
    let mut next = 0u64;
    for (i, &size) in sizes.iter().enumerate() {
        first.push(next);
        for k in next..next + size {
            f.insert(&k, i as u32 + 1).unwrap();
        }
        next += size;
    }
    let label = format!("{layout} z={z} {sizes:?}");
    let stats = f.class_stats();
    // The classes' rates are the model's for their key counts; the filter's own rate is that of
    // its bits, within a few percent of the model's.
    let overall = f.params().expected_fpr(total);
    assert!(
        overall <= rate,
        "{label}: sized for {rate}, expects {overall}"
    );
    let bits = f.stats().expected_fpr;
    assert!(
        (bits - overall).abs() < 0.05 * overall,
        "{label}: the bits' rate {bits} against the model's {overall}"
    );
    let per_class: f64 = stats.iter().map(|s| s.expected_fpr).sum();
    assert!(
        (per_class - overall).abs() < 1e-12,
        "the classes' rates add up to the overall one"
    );
    // Absent keys: how many are reported in each class.
    let mut reported = vec![0u64; n + 1];
    for k in absent_keys() {
        reported[f.class_of(&k) as usize] += 1;
    }
    // Per block: the probability that an absent key landing there is reported in class c (and
    // in any class), the cells of each class, and the keys of each class reported above it.
    let mut absent = vec![Spread::default(); n + 1];
    let mut owned = vec![Spread::default(); n + 1];
    let mut emerged = vec![vec![0u32; z as usize]; n + 1];
    for (i, &size) in sizes.iter().enumerate() {
        for k in first[i]..first[i] + size {
            if f.class_of(&k) as usize > i + 1 {
                emerged[i + 1][block_index(p.hash_key(&k), z) as usize] += 1;
            }
        }
    }
    for b in 0..z {
        let fr = lane_fractions(&f, b, n);
        let all = |c: usize| fr.iter().map(|l| l[c]).product::<f64>();
        absent[0].add(all(1));
        for c in 1..=n {
            absent[c].add(all(c) - all(c + 1));
            let w = f64::from(layout.word_bits());
            owned[c].add(fr.iter().map(|l| (l[c] - l[c + 1]) * w).sum());
        }
    }
    let zf = f64::from(z);
    let absent_check = |what: String, hits: u64, p: f64, spread: &Spread| {
        let na = ABSENT as f64;
        let var = na * p * (1.0 - p) + na * na * spread.variance() / zf;
        within_4_sigma_of(&what, hits as f64, ABSENT, na * p, var);
    };
    absent_check(
        format!("{label} any class"),
        ABSENT - reported[0],
        overall,
        &absent[0],
    );
    let cells = p.bit_len();
    for (i, s) in stats.iter().enumerate() {
        let c = i + 1;
        assert_eq!((s.class as usize, s.keys), (c, sizes[i]));
        // Every rate is measured, not vacuous: each expects some hits (the top class emerges
        // nowhere).
        assert!(
            s.expected_fpr * ABSENT as f64 >= 10.0,
            "{label}: class {c} fp too small to measure"
        );
        absent_check(
            format!("{label} fp of class {c}"),
            reported[c],
            s.expected_fpr,
            &absent[c],
        );
        let mut per_block = Spread::default();
        emerged[c].iter().for_each(|&e| per_block.add(f64::from(e)));
        let expected = s.expected_emersion * sizes[i] as f64;
        if c < n {
            assert!(
                expected >= 10.0,
                "{label}: class {c} emersion too small to measure"
            );
        } else {
            assert_eq!(
                (per_block.sum(), expected),
                (0.0, 0.0),
                "nothing is above the top class"
            );
        }
        let what = format!("{label} emersion of class {c}");
        within_4_sigma_of(
            &what,
            per_block.sum(),
            sizes[i],
            expected,
            zf * per_block.variance(),
        );
        assert_eq!(s.cells as f64, owned[c].sum().round());
        let what = format!("{label} cells of class {c}");
        within_4_sigma_of(
            &what,
            s.cells as f64,
            cells,
            s.expected_cells,
            zf * owned[c].variance(),
        );
    }
    // The classic unblocked formulas underestimate a blocked filter, by more than this
    // measurement's 4σ: the test tells the two apart.
    let above: u64 = sizes[1..].iter().sum();
    let k = layout.lanes() as u32;
    let classic = math::spatial_class_rates_unblocked(cells, k, sizes[0], above);
    assert!(
        classic.emersion < stats[0].expected_emersion,
        "{label}: {classic:?}"
    );
    let classic_any = math::spatial_class_rates_unblocked(cells, k, total, 0).false_positive;
    let na = ABSENT as f64;
    let sigma = (na * overall + na * na * absent[0].variance() / zf).sqrt();
    let off = (na * classic_any - (ABSENT - reported[0]) as f64) / sigma;
    assert!(
        off < -4.0,
        "{label}: the classic rate {classic_any} is only {off:.1}σ off"
    );
}

/// Every class's rates at 2 to 8 classes of skewed sizes, on 8x32 and 16x64. The shapes keep
/// every rate measurable: higher classes hold enough keys for the lower ones to emerge into them
/// (a small top class hides no one).
#[test]
fn rates_of_skewed_classes() {
    let doubling = |first: u64| -> Vec<u64> { (0..8).map(|i| first << i).collect() };
    let cases = [
        (Layout::L8x32, vec![50_000, 150_000], 0.02),
        (
            Layout::L8x32,
            vec![10_000, 15_000, 20_000, 30_000, 150_000],
            0.05,
        ),
        (Layout::L8x32, doubling(1_000), 0.02),
        (Layout::L16x64, vec![20_000, 30_000, 150_000], 0.02),
        (Layout::L16x64, doubling(4_000), 0.05),
    ];
    for (layout, sizes, rate) in cases {
        measure(layout, &sizes, rate);
    }
}

/// Sizing meets the overall rate in the fewest blocks, as the static filter's does.
#[test]
fn for_keys_takes_the_static_filters_blocks() {
    let names = ["a", "b", "c"];
    for layout in Layout::ALL {
        let f = SpatialFilter::for_keys(Params::new(layout, 1), 4, &names, 300_000, 0.001).unwrap();
        let z = f.params().blocks;
        assert_eq!(z, math::blocks_for_rate(layout, 300_000, 0.001).unwrap());
        assert!(math::false_positive_rate(layout, z, 300_000) <= 0.001);
        assert!(math::false_positive_rate(layout, z - 1, 300_000) > 0.001);
    }
    assert!(SpatialFilter::for_keys(Params::new(Layout::L8x32, 1), 4, &names, 10, 1.5).is_err());
}
