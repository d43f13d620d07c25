//! The counting and stable filters' bulk operations on every available path against the core's
//! key-by-key reference: every layout, 4- and 8-bit counters, every key form, odd batch sizes,
//! duplicate keys in one batch, saturated counters, deletes of absent keys (refused, changing
//! nothing), the parallel forms with several block ranges, filters large enough to take the
//! prefetching path, and the golden vectors.

mod common;

use bloomlanes_core::golden::{unhex, VECTORS};
use bloomlanes_core::{CounterBits, CountingFilter, CountingMut, FilterKind, Keys, Layout, Params};
use bloomlanes_simd::{CacheSizes, PartitionMode, Partitioning, Probe, Schedule};
use common::{form, pack, partitioned, paths, pooled_keys as keys, shape, splitmix, Batch, Form};
use proptest::prelude::*;

fn counting_params(layout: Layout, blocks: u32, seed: u64, bits: CounterBits) -> Params {
    Params::new(layout, blocks)
        .with_seed(seed)
        .with_kind(FilterKind::Counting { counter_bits: bits })
}

/// The core's key-by-key inserts.
fn ref_insert(f: &mut CountingFilter, keys: Keys<'_>) {
    let seed = f.params().seed;
    for i in 0..keys.len() {
        f.insert_hash(keys.hash(i, seed));
    }
}

/// The core's key-by-key deletes: the refused keys as bytes.
fn ref_remove(f: &mut CountingFilter, keys: Keys<'_>) -> Vec<u8> {
    let seed = f.params().seed;
    (0..keys.len())
        .map(|i| u8::from(f.remove_hash(keys.hash(i, seed)).is_err()))
        .collect()
}

fn same(a: &CountingFilter, b: &CountingFilter) -> bool {
    a.image_words() == b.image_words() && a.counter_words() == b.counter_words()
}

fn bits() -> impl Strategy<Value = CounterBits> {
    prop_oneof![Just(CounterBits::Four), Just(CounterBits::Eight)]
}

/// One whole comparison: `before` inserted key by key, then `ins` in bulk, then `del` in bulk,
/// on every path, sequential and with `ranges` block ranges.
#[allow(clippy::too_many_arguments)]
fn check(
    params: Params,
    form: Form,
    before: &[u64],
    ins: &[u64],
    del: &[u64],
    probe_keys: &[u64],
    ranges: usize,
) -> Result<(), TestCaseError> {
    let (before, ins, del, probed) = (
        Batch::new(form, before),
        Batch::new(form, ins),
        Batch::new(form, del),
        Batch::new(form, probe_keys),
    );
    let mut base = CountingFilter::new(params).unwrap();
    ref_insert(&mut base, before.keys());
    let mut want = base.clone();
    ref_insert(&mut want, ins.keys());
    let after_insert = want.clone();
    let want_refused = pack(&ref_remove(&mut want, del.keys()));
    let want_hits: Vec<u8> = (0..probed.keys().len())
        .map(|i| u8::from(want.contains_hash(probed.keys().hash(i, params.seed))))
        .collect();
    let ones: u64 = want_refused.iter().map(|w| u64::from(w.count_ones())).sum();
    // A delete's result, its refusals and the lookups after it, against the reference.
    let deleted = |got: &CountingFilter, n: u64, refused: &[u64], what: &str| {
        prop_assert!(same(got, &want), "delete on {}", what);
        prop_assert_eq!(refused, &want_refused[..], "refused on {}", what);
        prop_assert_eq!(n, ones, "refusals on {}", what);
        let mut hits = vec![7u8; probe_keys.len()];
        Probe::active().contains(got.projection(), probed.keys(), &mut hits);
        prop_assert_eq!(&hits, &want_hits, "lookup on {}", what);
        Ok(())
    };
    let n = ins.keys().len().max(del.keys().len());
    for probe in paths() {
        // The owned filter's one-thread insert and delete, with the key counts.
        let mut got = base.clone();
        probe.insert_counting_filter(&mut got, ins.keys());
        prop_assert!(same(&got, &after_insert), "insert on {}", probe.path());
        prop_assert_eq!(got.key_count(), after_insert.key_count());
        let mut refused = vec![u64::MAX; del.keys().len().div_ceil(64)];
        let gone = probe.remove_counting_filter(&mut got, del.keys(), &mut refused);
        prop_assert_eq!(got.key_count(), want.key_count());
        deleted(&got, gone.unwrap(), &refused, probe.path().name())?;
        // Every other schedule; partitions of one block or a few, several rounds and producers.
        let mut ways = vec![
            (probe, Schedule::AllCores),
            (probe, Schedule::Ranges(ranges)),
        ];
        ways.extend(
            partitioned(probe, n)
                .into_iter()
                .map(|(q, par)| (q, Schedule::Partitioned(par))),
        );
        for (probe, how) in ways {
            let what = format!(
                "{} ({how:?}, {:?})",
                probe.path(),
                probe.partitioning().mode
            );
            let mut got = base.clone();
            let r = probe.counting_with(got.as_view_mut(), ins.keys(), false, &mut [], how);
            prop_assert_eq!(r, Ok(0));
            prop_assert!(same(&got, &after_insert), "insert on {}", what);
            let mut refused = vec![u64::MAX; del.keys().len().div_ceil(64)];
            let gone = probe.counting_with(got.as_view_mut(), del.keys(), true, &mut refused, how);
            deleted(&got, gone.unwrap(), &refused, &what)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 96 }))]

    #[test]
    fn counting_matches_core(
        shape in shape(80),
        bits in bits(),
        form in form(),
        before in keys(64, 200),
        ins in keys(64, 300),
        del in keys(64, 300),
        probed in keys(128, 100),
        ranges in 1usize..6,
    ) {
        let params = shape.with_kind(FilterKind::Counting { counter_bits: bits });
        check(params, form, &before, &ins, &del, &probed, ranges)?;
    }

    #[test]
    fn stable_matches_core(
        shape in shape(80),
        bits in bits(),
        decrements in prop_oneof![Just(1u32), 1u32..12, Just(40)],
        form in form(),
        before in keys(64, 200),
        ins in keys(64, 300),
    ) {
        let params = shape.with_kind(FilterKind::Stable {
            counter_bits: bits,
            decrements,
        });
        let (before, ins) = (Batch::new(form, &before), Batch::new(form, &ins));
        let mut base = CountingFilter::new(params).unwrap();
        ref_insert(&mut base, before.keys());
        let mut want = base.clone();
        ref_insert(&mut want, ins.keys());
        for probe in paths() {
            for parallel in [false, true] {
                let mut got = base.clone();
                if parallel {
                    // Stable inserts are sequential by nature: the parallel form falls back.
                    probe.par_insert_counting(got.as_view_mut(), ins.keys());
                } else {
                    probe.insert_counting_filter(&mut got, ins.keys());
                    prop_assert_eq!(got.key_count(), want.key_count());
                }
                prop_assert!(same(&got, &want), "stable insert on {}", probe.path());
                // The key inserted last has all its counters at the maximum: always found.
                if let Some(last) = ins.keys().len().checked_sub(1) {
                    let mut hit = [0u8];
                    probe.contains(got.projection(), ins.keys().slice(last..last + 1), &mut hit);
                    prop_assert_eq!(hit[0], 1, "last stable key lost on {}", probe.path());
                }
            }
            let mut refused = vec![0u64; ins.keys().len().div_ceil(64)];
            let mut got = want.clone();
            prop_assert_eq!(
                probe.remove_counting(got.as_view_mut(), ins.keys(), &mut refused),
                Err(bloomlanes_core::RemoveError::Unsupported)
            );
            prop_assert!(same(&got, &want));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]

    /// Deleting keys that are present (occurrences of the inserted multiset, in any order)
    /// is never refused and never makes a key that is still present disappear, on every path,
    /// sequential and with several block ranges, even in tiny filters where keys share and
    /// saturate counters.
    #[test]
    fn deletes_of_present_keys_never_cause_false_negatives(
        shape in shape(40),
        bits in bits(),
        form in form(),
        ins in keys(48, 400),
        pick in prop::collection::vec(any::<bool>(), 400),
        rotate in 0usize..400,
        ranges in 1usize..5,
    ) {
        let params = shape.with_kind(FilterKind::Counting { counter_bits: bits });
        // Delete the picked occurrences, in an order rotated away from the insert order.
        let mut del: Vec<u64> = ins.iter().zip(&pick).filter(|(_, &p)| p).map(|(&k, _)| k).collect();
        if !del.is_empty() {
            let r = rotate % del.len();
            del.rotate_left(r);
        }
        let mut kept = ins.clone();
        for k in &del {
            let at = kept.iter().position(|x| x == k).expect("an inserted occurrence");
            kept.swap_remove(at);
        }
        let (ins_b, del_b, kept_b) = (Batch::new(form, &ins), Batch::new(form, &del), Batch::new(form, &kept));
        for probe in paths() {
            for parallel in [false, true] {
                let mut f = CountingFilter::new(params).unwrap();
                let mut refused = vec![u64::MAX; del.len().div_ceil(64)];
                let n = if parallel {
                    let how = Schedule::Ranges(ranges);
                    probe.counting_with(f.as_view_mut(), ins_b.keys(), false, &mut [], how).unwrap();
                    probe.counting_with(f.as_view_mut(), del_b.keys(), true, &mut refused, how).unwrap()
                } else {
                    probe.insert_counting(f.as_view_mut(), ins_b.keys());
                    probe.remove_counting(f.as_view_mut(), del_b.keys(), &mut refused).unwrap()
                };
                prop_assert_eq!(n, 0, "a present key refused on {} (par {})", probe.path(), parallel);
                prop_assert!(refused.iter().all(|&w| w == 0));
                let mut hits = vec![0u8; kept.len()];
                probe.contains(f.projection(), kept_b.keys(), &mut hits);
                prop_assert!(
                    hits.iter().all(|&h| h == 1),
                    "a present key lost on {} (par {})",
                    probe.path(),
                    parallel
                );
            }
        }
    }
}

/// Filters past the prefetch threshold (image and counters over 512 KiB), with batches long
/// enough for several hash chunks and the parallel forms' own thresholds.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn large_filters_take_the_prefetching_path_and_match() {
    let mut state = 5;
    for (layout, bits) in [
        (Layout::L8x32, CounterBits::Four),
        (Layout::L16x64, CounterBits::Eight),
        (Layout::L8x64, CounterBits::Eight),
        (Layout::L16x32, CounterBits::Four),
    ] {
        let blocks = (1u32 << 20) / layout.block_bytes() as u32;
        let params = counting_params(layout, blocks, 9, bits);
        let pool: Vec<u64> = (0..40_000).map(|_| splitmix(&mut state)).collect();
        let ins: Vec<u64> = (0..70_000)
            .map(|i| pool[splitmix(&mut state) as usize % pool.len()] ^ (i % 2))
            .collect();
        let del: Vec<u64> = (0..70_000)
            .map(|_| pool[splitmix(&mut state) as usize % pool.len()])
            .collect();
        check(params, Form::U64, &[], &ins, &del, &pool[..1000], 3).unwrap();
        // Stable, prefetching its cells.
        let sp = Params::new(layout, blocks)
            .with_seed(3)
            .with_kind(FilterKind::Stable {
                counter_bits: bits,
                decrements: 7,
            });
        let mut want = CountingFilter::new(sp).unwrap();
        ref_insert(&mut want, Keys::U64(&ins));
        for probe in paths() {
            let mut got = CountingFilter::new(sp).unwrap();
            probe.insert_counting(got.as_view_mut(), Keys::U64(&ins));
            assert!(same(&got, &want), "stable {layout} on {}", probe.path());
        }
    }
}

/// The automatic mode with its own timings, caches made tiny so that every write lies past the
/// rule's floor: call after call, partitioned or key after key as timed (the rule's mode, the
/// other one, then the faster), on one thread and on two, every insert and delete leaves the
/// core's counters and refusals.
#[test]
fn measured_auto_writes_as_the_core_on_every_call() {
    let auto = Partitioning {
        mode: PartitionMode::Auto,
        caches: CacheSizes {
            l2: 4 << 10,
            llc: 64 << 10,
        },
        ..Partitioning::default()
    };
    let probe = Probe::active().with_partitioning(auto);
    let params = counting_params(Layout::L8x32, (1 << 20) / 32, 11, CounterBits::Four);
    let mut want = CountingFilter::new(params).unwrap();
    let mut got = want.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut state = 7;
    let batch = |state: &mut u64| -> Vec<u64> {
        (0..1 << 16).map(|_| splitmix(state) % (1 << 18)).collect()
    };
    for call in 0..10 {
        let how = [Schedule::OneThread, Schedule::AllCores][call % 2];
        let ins = batch(&mut state);
        ref_insert(&mut want, Keys::U64(&ins));
        let r = pool.install(|| {
            probe.counting_with(got.as_view_mut(), Keys::U64(&ins), false, &mut [], how)
        });
        assert_eq!(r, Ok(0));
        assert!(same(&got, &want), "insert, call {call} ({how:?})");
        let del = batch(&mut state);
        let want_refused = pack(&ref_remove(&mut want, Keys::U64(&del)));
        let mut refused = vec![u64::MAX; del.len().div_ceil(64)];
        let gone = pool.install(|| {
            probe.counting_with(got.as_view_mut(), Keys::U64(&del), true, &mut refused, how)
        });
        assert!(same(&got, &want), "delete, call {call} ({how:?})");
        assert_eq!(refused, want_refused, "refused, call {call} ({how:?})");
        let ones = want_refused.iter().map(|w| u64::from(w.count_ones())).sum();
        assert_eq!(gone, Ok(ones));
    }
}

/// Counters that saturate (the same keys inserted more often than the maximum) stick, and
/// deletes leave them alone, on every path.
#[test]
fn saturated_counters_stick() {
    for layout in Layout::ALL {
        for bits in [CounterBits::Four, CounterBits::Eight] {
            let params = counting_params(layout, 1, 0, bits);
            let keys: Vec<u64> = (0..3).cycle().take(3 * 300).collect();
            let mut want = CountingFilter::new(params).unwrap();
            ref_insert(&mut want, Keys::U64(&keys));
            assert!(want.saturated() > 0);
            let mut want_del = want.clone();
            let refused = pack(&ref_remove(&mut want_del, Keys::U64(&keys)));
            for probe in paths() {
                let mut got = CountingFilter::new(params).unwrap();
                probe.insert_counting(got.as_view_mut(), Keys::U64(&keys));
                assert!(same(&got, &want), "{layout} {bits:?} on {}", probe.path());
                let mut r = vec![0u64; keys.len().div_ceil(64)];
                probe
                    .remove_counting(got.as_view_mut(), Keys::U64(&keys), &mut r)
                    .unwrap();
                assert!(
                    same(&got, &want_del),
                    "{layout} {bits:?} on {}",
                    probe.path()
                );
                assert_eq!(r, refused);
            }
        }
    }
}

/// Small 8x32 filters (the layout with AVX-512 kernels of its own), 4- and 8-bit counters:
/// keys inserted from 0 to 300 times in one shuffled batch (counters shared, some saturating),
/// then one batch deleting every key more often than it was inserted, with absent keys mixed
/// in, so that counters reach 0 mid-batch and the same key's later deletes are refused; every
/// path against the core, image, counters and refusals.
#[test]
fn small_8x32_filters_saturate_empty_and_refuse_like_the_core() {
    for bits in [CounterBits::Four, CounterBits::Eight] {
        for blocks in [1u32, 3] {
            let params = counting_params(Layout::L8x32, blocks, 5, bits);
            let mut state = u64::from(blocks) * 1000 + 17;
            let pool: Vec<u64> = (0..24).map(|_| splitmix(&mut state)).collect();
            let times = |k: usize| (k * k * 7) % 301;
            let mut ins: Vec<u64> = (0..pool.len())
                .flat_map(|k| std::iter::repeat_n(pool[k], times(k)))
                .collect();
            let mut del: Vec<u64> = (0..pool.len())
                .flat_map(|k| std::iter::repeat_n(pool[k], times(k) + 2))
                .chain((0..50).map(|_| splitmix(&mut state)))
                .collect();
            for v in [&mut ins, &mut del] {
                for i in (1..v.len()).rev() {
                    v.swap(i, (splitmix(&mut state) % (i as u64 + 1)) as usize);
                }
            }
            let mut want = CountingFilter::new(params).unwrap();
            ref_insert(&mut want, Keys::U64(&ins));
            assert!(want.saturated() > 0);
            let inserted = want.clone();
            let refused = pack(&ref_remove(&mut want, Keys::U64(&del)));
            assert!(refused.iter().any(|&w| w != 0));
            for probe in paths() {
                let what = format!("{bits:?}, {blocks} blocks, on {}", probe.path());
                let mut got = CountingFilter::new(params).unwrap();
                probe.insert_counting(got.as_view_mut(), Keys::U64(&ins));
                assert!(same(&got, &inserted), "insert: {what}");
                let mut r = vec![0u64; del.len().div_ceil(64)];
                probe
                    .remove_counting(got.as_view_mut(), Keys::U64(&del), &mut r)
                    .unwrap();
                assert!(same(&got, &want), "delete: {what}");
                assert_eq!(r, refused, "refused: {what}");
            }
        }
    }
}

/// Deletes of keys that were never inserted are refused and change nothing.
#[test]
fn deletes_of_absent_keys_are_refused_and_change_nothing() {
    let mut state = 11;
    for layout in Layout::ALL {
        let params = counting_params(layout, 512, 3, CounterBits::Four);
        let present: Vec<u64> = (0..1500).map(|_| splitmix(&mut state)).collect();
        let mut f = CountingFilter::new(params).unwrap();
        ref_insert(&mut f, Keys::U64(&present));
        let absent: Vec<u64> = (0..20_000)
            .map(|_| splitmix(&mut state))
            .filter(|k| !f.contains(k))
            .collect();
        for probe in paths() {
            let mut g = f.clone();
            let mut r = vec![0u64; absent.len().div_ceil(64)];
            let n = probe
                .remove_counting(g.as_view_mut(), Keys::U64(&absent), &mut r)
                .unwrap();
            assert_eq!(n, absent.len() as u64, "{layout} on {}", probe.path());
            assert!(same(&g, &f), "{layout} on {}", probe.path());
            let n = probe
                .counting_with(
                    g.as_view_mut(),
                    Keys::U64(&absent),
                    true,
                    &mut r,
                    Schedule::Ranges(2),
                )
                .unwrap();
            assert_eq!(n, absent.len() as u64);
            assert!(same(&g, &f));
        }
    }
}

/// The committed `counting` and `stable` golden lines, rebuilt on every path.
#[test]
fn golden_vectors() {
    let words = |hex: &str| -> Vec<u32> {
        unhex(hex)
            .unwrap()
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (mut counting, mut stable) = (0, 0);
    for line in VECTORS.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let is_counting = f[0] == "counting";
        if !is_counting && f[0] != "stable" {
            continue;
        }
        let layout = Layout::from_name(f[1]).unwrap();
        let blocks: u32 = f[2].parse().unwrap();
        let seed: u64 = f[3].parse().unwrap();
        let bits = CounterBits::from_bits(f[4].parse().unwrap()).unwrap();
        let (image, counters) = (words(f[7]), words(f[8]));
        for probe in paths() {
            let params = Params::new(layout, blocks).with_seed(seed);
            let mut g = if is_counting {
                let (n, d): (u64, u64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
                let mut g = CountingFilter::counting(params, bits);
                // Keys 0..n, multiples of 3 twice, in the order of the core's generator.
                let keys: Vec<u64> = (0..n)
                    .flat_map(|k| if k % 3 == 0 { vec![k, k] } else { vec![k] })
                    .collect();
                probe.insert_counting(g.as_view_mut(), Keys::U64(&keys));
                let gone: Vec<u64> = (0..d).collect();
                let mut r = vec![0u64; gone.len().div_ceil(64)];
                assert_eq!(
                    probe.remove_counting(g.as_view_mut(), Keys::U64(&gone), &mut r),
                    Ok(0)
                );
                g
            } else {
                let (p, n): (u32, u64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
                let mut g = CountingFilter::stable(params, bits, p);
                let keys: Vec<u64> = (0..n).collect();
                probe.insert_counting(g.as_view_mut(), Keys::U64(&keys));
                g
            };
            assert_eq!(
                g.image_words(),
                &image[..],
                "{line:.40} on {}",
                probe.path()
            );
            assert_eq!(
                g.counter_words(),
                &counters[..],
                "{line:.40} on {}",
                probe.path()
            );
            let all: Vec<u64> = (0..blocks as u64 * 12).collect();
            let mut hits = vec![0u8; all.len()];
            probe.contains(g.projection(), Keys::U64(&all), &mut hits);
            let view: CountingMut<'_> = g.as_view_mut();
            let want: Vec<u8> = all
                .iter()
                .map(|k| u8::from(view.projection().contains(k)))
                .collect();
            assert_eq!(hits, want);
        }
        if is_counting {
            counting += 1;
        } else {
            stable += 1;
        }
    }
    assert_eq!((counting, stable), (8, 8), "a line per layout and width");
}
