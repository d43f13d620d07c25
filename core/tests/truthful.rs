//! Statistics that rest on the bits (issue #27 item 1) and block counts that fold (item 2): a
//! filter holding repeated keys reports the distinct keys and the rate of its bits, for every
//! kind; the block-count grid rounds up onto `m × 2^e`, `m` in 4..=7.
#![cfg(feature = "alloc")]

use bloomlanes_core::math::{self, fold_friendly_blocks};
use bloomlanes_core::{
    CounterBits, CountingFilter, Filter, FilterKind, Layout, Params, ScalableFilter, Stats,
    WindowFilter,
};

const N: u64 = 20_000;

/// Absent keys answered "may be present" by `contains`, out of `trials`.
fn measured(contains: impl Fn(u64) -> bool, trials: u64) -> f64 {
    (0..trials).filter(|&i| contains(1 << 40 | i)).count() as f64 / trials as f64
}

/// The statistics' rate agrees with the rate `contains` gives 200,000 absent keys.
fn rate_agrees(what: &str, s: &Stats, contains: impl Fn(u64) -> bool) {
    agrees(what, s.expected_fpr, measured(contains, 200_000), 200_000);
}

/// `expected` is within 5 σ (plus a little for the bits' model) of the rate measured over
/// `trials` absent keys.
fn agrees(what: &str, expected: f64, measured: f64, trials: u64) {
    let sigma = (expected * (1.0 - expected) / trials as f64).sqrt();
    assert!(
        (expected - measured).abs() < 5.0 * sigma + 2e-4,
        "{what}: expected {expected}, measured {measured}"
    );
}

/// Every key of `0..N` inserted three times: the bits (and the rate) of `N` keys, `3 N` inserts.
#[test]
fn repeated_inserts_change_neither_the_distinct_keys_nor_the_rate() {
    let p = Params::new(
        Layout::L8x32,
        math::blocks_for_rate(Layout::L8x32, N, 0.01).unwrap(),
    );
    let mut f = Filter::new(p);
    for _ in 0..3 {
        for k in 0..N {
            f.insert(&k);
        }
    }
    let s = f.stats();
    assert_eq!(s.recorded_keys, Some(3 * N));
    let (n, e) = (s.estimated_keys.unwrap(), s.estimated_keys_error.unwrap());
    assert!(e > 0.0 && (n - N as f64).abs() < 4.0 * e, "{n} ± {e}");
    assert_eq!(s.keys, Some(n.round() as u64));
    assert!(s.expected_fpr <= 0.0125, "{}", s.expected_fpr);
    assert_eq!(s.fpr_from_bits, Some(s.expected_fpr));
    let bpk = s.bits_per_key.unwrap();
    assert!((bpk - p.bit_len() as f64 / N as f64).abs() < 0.2, "{bpk}");
    rate_agrees("static", &s, |k| f.contains(&k));
}

#[test]
fn the_standard_error_bounds_the_estimates_spread() {
    // Over 40 filters of different keys the estimates spread by no more than the stated error.
    let p = Params::new(Layout::L8x32, 800);
    let mut errs = Vec::new();
    let mut stated = 0.0;
    for round in 0..40u64 {
        let mut f = Filter::new(p);
        for k in 0..N {
            f.insert(&(round << 32 | k));
        }
        let s = f.stats();
        errs.push(s.estimated_keys.unwrap() - N as f64);
        stated = s.estimated_keys_error.unwrap();
    }
    let rms = (errs.iter().map(|e| e * e).sum::<f64>() / errs.len() as f64).sqrt();
    assert!(rms <= 1.5 * stated, "spread {rms} over the stated {stated}");
}

#[test]
fn counting_and_stable_filters_report_the_rate_of_their_non_zero_cells() {
    let blocks = math::blocks_for_rate(Layout::L8x32, N, 0.01).unwrap();
    let p = Params::new(Layout::L8x32, blocks);
    let mut c = CountingFilter::counting(p, CounterBits::Four);
    let mut st = CountingFilter::stable(p, CounterBits::Four, 2);
    for _ in 0..3 {
        for k in 0..N {
            c.insert(&k);
            st.insert(&k);
        }
    }
    let s = c.stats();
    assert_eq!(s.recorded_keys, Some(3 * N));
    assert!(s.expected_fpr <= 0.0125, "{}", s.expected_fpr);
    rate_agrees("counting", &s, |k| c.contains(&k));
    let s = st.stats();
    rate_agrees("stable", &s, |k| st.contains(&k));
    assert!(st.stable_fpr().is_some() && c.stable_fpr().is_none());
    assert!(matches!(st.params().kind, FilterKind::Stable { .. }));
}

#[test]
fn windows_and_scalable_filters_combine_their_parts_bits() {
    let mut w = WindowFilter::for_keys(N, 4, 0.01, Layout::L8x32).unwrap();
    let mut sc = ScalableFilter::new(Params::new(Layout::L8x64, 1), 1000, 0.01, 2, 0.8).unwrap();
    for _ in 0..3 {
        for k in 0..N {
            w.insert(&k);
            sc.insert(&k).unwrap();
        }
    }
    let s = w.stats();
    // 60000 inserts into a window of 4 generations of 5000 keys (and one filling): the
    // generations hold 20000 to 25000 keys, not 60000.
    let n = s.estimated_keys.unwrap();
    assert!(n > 19_000.0 && n < 26_000.0, "{n}");
    rate_agrees("window", &s, |k| w.contains(&k));
    let s = sc.stats();
    // An insert looks the key up first: the repeats are not inserted, nor are the few first
    // inserts that a stage already answered (false positives).
    let recorded = s.recorded_keys.unwrap();
    assert!(recorded <= N && recorded > N - N / 50, "{recorded}");
    let (n, e) = (s.estimated_keys.unwrap(), s.estimated_keys_error.unwrap());
    assert!((n - N as f64).abs() < 4.0 * e, "{n} ± {e}");
    assert_eq!(
        s.bytes,
        sc.stages().iter().map(|f| f.byte_len() as u64).sum::<u64>()
    );
    let parts: Vec<f64> = sc.stages().iter().map(|f| f.stats().expected_fpr).collect();
    assert!((s.expected_fpr - Stats::any_of(parts)).abs() < 1e-15);
    rate_agrees("scalable", &s, |k| sc.contains(&k));
}

#[test]
fn block_counts_round_up_onto_a_grid_that_folds() {
    let grid: Vec<u32> = (1..=40).filter(|&z| fold_friendly_blocks(z) == z).collect();
    assert_eq!(
        grid,
        [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40]
    );
    let (mut total, mut weight) = (0.0, 0.0);
    for z in 1..=1u32 << 16 {
        let r = fold_friendly_blocks(z);
        assert!(r >= z && f64::from(r) <= 1.25 * f64::from(z), "{z} → {r}");
        // m × 2^e with m in 4..=7 (or a count up to 8).
        let e = (31 - r.leading_zeros()).saturating_sub(2);
        assert!(
            r <= 8 || (r.is_multiple_of(1 << e) && (4..=7).contains(&(r >> e))),
            "{z} → {r}"
        );
        // The next grid point up is the smallest at or above z.
        assert!(fold_friendly_blocks(r) == r && (r == z || fold_friendly_blocks(r - 1) == r));
        if z >= 64 {
            total += f64::from(r) / f64::from(z) / f64::from(z);
            weight += 1.0 / f64::from(z);
        }
    }
    // Memory over the unrounded size from 64 blocks up, weighting block counts evenly on a log
    // scale: +9.5 % (docs/FORMAT.md §7).
    let mean = total / weight;
    assert!(mean > 1.09 && mean < 1.10, "{mean}");
    assert_eq!(fold_friendly_blocks(u32::MAX), u32::MAX);
    assert_eq!(fold_friendly_blocks(0), 1);
}

/// Sized by a rate, every builder's parameters sit on the grid that folds and are never smaller
/// than the plain sizing; sized by bits per key, they are exactly the plain sizing.
#[test]
fn mergeable_sizing_rounds_rates_onto_the_grid_only() {
    use bloomlanes_core::Sizing;
    for keys in [1u64, 999, 10_000, 123_457, 5_000_000] {
        for rate in [0.05, 0.01, 0.001] {
            let plain = Params::for_keys(keys, Sizing::FalsePositiveRate(rate), None).unwrap();
            let grid =
                Params::for_keys_mergeable(keys, Sizing::FalsePositiveRate(rate), None).unwrap();
            assert_eq!(grid.layout, plain.layout);
            assert_eq!(
                grid.blocks,
                fold_friendly_blocks(plain.blocks),
                "{keys} keys at {rate}"
            );
            assert!(grid.blocks >= plain.blocks);
        }
        let bits = Sizing::BitsPerKey(10.0);
        assert_eq!(
            Params::for_keys_mergeable(keys, bits, None).unwrap(),
            Params::for_keys(keys, bits, None).unwrap()
        );
    }
}

/// A word list given three times (as a whole and each word three times running) builds the
/// scalable filter of the list given once: an insert looks the key up in every stage first, so
/// a repeat neither fills a stage nor lands in a new one, and the distinct keys the stages' bits
/// show are the list's.
#[test]
fn a_scalable_filter_of_a_list_repeated_is_that_of_the_list() {
    let words: Vec<String> = (0..N).map(|k| format!("word-{k:x}")).collect();
    let empty = ScalableFilter::new(Params::new(Layout::L8x32, 1), 1000, 0.01, 2, 0.8).unwrap();
    let (mut once, mut whole, mut running) = (empty.clone(), empty.clone(), empty);
    for w in &words {
        once.insert(w.as_str()).unwrap();
    }
    for _ in 0..3 {
        for w in &words {
            whole.insert(w.as_str()).unwrap();
        }
    }
    for w in &words {
        for _ in 0..3 {
            running.insert(w.as_str()).unwrap();
        }
    }
    assert!(once.stages().len() >= 4, "{}", once.stages().len());
    assert!(whole == once && running == once);
    let s = whole.stats();
    assert_eq!(s, once.stats());
    assert!(s.recorded_keys.unwrap() <= N);
    let (n, e) = (s.estimated_keys.unwrap(), s.estimated_keys_error.unwrap());
    assert!((n - N as f64).abs() < 4.0 * e, "{n} ± {e}");
    assert!(s.expected_fpr < 0.01, "{}", s.expected_fpr);
    rate_agrees("scalable, repeated", &s, |k| whole.contains(&k));
}
