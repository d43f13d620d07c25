//! The spatial filter's bulk inserts and class lookups, and the counting filter's count query,
//! on every available path against the core's key-by-key reference (`SpatialFilter`,
//! `CellsMut`, `CountingFilter::count_hash`): every layout, 4-, 8- and 16-bit cells, every key
//! form, one class for a batch or one per key (`u8`, `u16`, `u32`), classes the view clamps or
//! ignores, one thread, block ranges, forced partitions and all cores, lookups into `u8`, `u16`
//! and `u32`, the per-class key counts, refused classes, and filters past the prefetch
//! threshold.

mod common;

use bloomlanes_core::{CellBits, CounterBits, CountingFilter, Keys, Layout, Params, SpatialFilter};
use bloomlanes_simd::{Classes, Probe, Schedule};
use common::{form, partitioned, paths, pooled_keys, shape, splitmix, Batch, Form};
use proptest::prelude::*;

/// An empty spatial filter of `shape` with `bits`-bit cells and `n` classes.
fn spatial(shape: Params, bits: u32, n: u32) -> SpatialFilter {
    let names: Vec<String> = (1..=n).map(|c| format!("c{c}")).collect();
    SpatialFilter::new(shape, bits, &names).unwrap()
}

/// [`spatial`] of `blocks` blocks of `layout`, seed 3.
fn spatial_of(layout: Layout, blocks: u32, bits: u32, n: u32) -> SpatialFilter {
    spatial(Params::new(layout, blocks).with_seed(3), bits, n)
}

/// The core's key-by-key inserts, key `i` in class `classes[i]`.
fn ref_insert(f: &mut SpatialFilter, keys: Keys<'_>, classes: &[u32]) {
    let seed = f.params().seed;
    for (i, &c) in classes.iter().enumerate() {
        f.insert_hash(keys.hash(i, seed), c).unwrap();
    }
}

fn same(a: &SpatialFilter, b: &SpatialFilter) -> bool {
    a.image_words() == b.image_words() && a.cell_words() == b.cell_words()
}

/// How a batch's classes are given.
#[derive(Clone, Copy, Debug)]
enum Given {
    One,
    U8,
    U16,
    U32,
}

/// The classes of `per_key` as `given` (`One`: the first key's class for all), if that form
/// holds them.
fn given<'a>(
    g: Given,
    per_key: &'a [u32],
    u8s: &'a mut Vec<u8>,
    u16s: &'a mut Vec<u16>,
) -> Option<Classes<'a>> {
    Some(match g {
        Given::One => Classes::One(*per_key.first()?),
        Given::U8 => {
            *u8s = per_key
                .iter()
                .map(|&c| u8::try_from(c).ok())
                .collect::<Option<_>>()?;
            Classes::U8(u8s)
        }
        Given::U16 => {
            *u16s = per_key
                .iter()
                .map(|&c| u16::try_from(c).ok())
                .collect::<Option<_>>()?;
            Classes::U16(u16s)
        }
        Given::U32 => Classes::U32(per_key),
    })
}

/// The class of each key for a batch given as `g` (one class for all keys repeats the first).
fn expand(g: Given, per_key: &[u32]) -> Vec<u32> {
    match g {
        Given::One => vec![per_key.first().copied().unwrap_or(0); per_key.len()],
        _ => per_key.to_vec(),
    }
}

/// Every lookup of `probed` on `probe` against the core's classes.
fn check_lookups(probe: Probe, f: &SpatialFilter, probed: Keys<'_>) -> Result<(), TestCaseError> {
    let seed = f.params().seed;
    let want: Vec<u32> = (0..probed.len())
        .map(|i| f.class_of_hash(probed.hash(i, seed)))
        .collect();
    let mut wide = vec![u32::MAX; probed.len()];
    probe.min_cells(f, probed, &mut wide);
    prop_assert_eq!(&wide, &want, "u32 classes on {}", probe.path());
    probe.par_min_cells(f, probed, &mut wide);
    prop_assert_eq!(&wide, &want, "par u32 classes on {}", probe.path());
    let mut mid = vec![u16::MAX; probed.len()];
    probe.min_cells(f, probed, &mut mid);
    prop_assert!(mid.iter().zip(&want).all(|(&a, &b)| u32::from(a) == b));
    if f.cell_bits() != CellBits::Sixteen {
        let mut narrow = vec![u8::MAX; probed.len()];
        probe.par_min_cells(f, probed, &mut narrow);
        prop_assert!(narrow.iter().zip(&want).all(|(&a, &b)| u32::from(a) == b));
    }
    Ok(())
}

/// One whole comparison: `before` inserted key by key, then `ins` (classes `classes`, given as
/// `g`) in bulk on every path and way, then lookups of `probed`.
#[allow(clippy::too_many_arguments)]
fn check(
    base: &SpatialFilter,
    form: Form,
    ins: &[u64],
    classes: &[u32],
    g: Given,
    probed: &[u64],
    ranges: usize,
) -> Result<(), TestCaseError> {
    let (ins, probed) = (Batch::new(form, ins), Batch::new(form, probed));
    let mut want = base.clone();
    ref_insert(&mut want, ins.keys(), &expand(g, classes));
    let (mut u8s, mut u16s) = (Vec::new(), Vec::new());
    let Some(cs) = given(g, classes, &mut u8s, &mut u16s) else {
        return Ok(());
    };
    for probe in paths() {
        let p = probe.path();
        for how in [Schedule::OneThread, Schedule::AllCores] {
            let mut got = base.clone();
            probe
                .insert_spatial_filter(&mut got, ins.keys(), cs, how)
                .unwrap();
            prop_assert!(same(&got, &want), "insert on {} ({:?})", p, how);
            prop_assert_eq!(got.keys_per_class(), want.keys_per_class());
            prop_assert_eq!(got.key_count(), want.key_count());
        }
        let mut got = base.clone();
        probe.par_insert_spatial(got.as_view_mut(), ins.keys(), cs);
        prop_assert!(same(&got, &want), "view insert on every core on {}", p);
        let mut got = base.clone();
        let how = Schedule::Ranges(ranges);
        probe.insert_spatial_with(got.as_view_mut(), ins.keys(), cs, how);
        prop_assert!(same(&got, &want), "{} ranges on {}", ranges, p);
        for (probe, parallel) in partitioned(probe, ins.keys().len()) {
            let mut got = base.clone();
            let how = Schedule::Partitioned(parallel);
            probe.insert_spatial_with(got.as_view_mut(), ins.keys(), cs, how);
            prop_assert!(
                same(&got, &want),
                "partitioned on {} ({:?}, par {})",
                p,
                probe.partitioning(),
                parallel
            );
        }
        check_lookups(probe, &want, probed.keys())?;
        check_lookups(probe, &want, ins.keys())?;
    }
    Ok(())
}

fn cell_bits() -> impl Strategy<Value = u32> {
    prop_oneof![Just(4u32), Just(8), Just(16)]
}

fn given_as() -> impl Strategy<Value = Given> {
    prop_oneof![
        Just(Given::One),
        Just(Given::U8),
        Just(Given::U16),
        Just(Given::U32)
    ]
}

/// A filter's class count for `bits`-bit cells: few, or (16-bit cells) many.
fn classes_for(bits: u32, pick: u32) -> u32 {
    match bits {
        4 => 1 + pick % 15,
        8 => 1 + pick % 255,
        _ => [1, 3, 300, 65_535][pick as usize % 4],
    }
}

/// `n` classes drawn from `1..=classes` by `seed`.
fn draw_classes(n: usize, classes: u32, seed: u64) -> Vec<u32> {
    let mut state = seed;
    (0..n)
        .map(|_| 1 + (splitmix(&mut state) % u64::from(classes)) as u32)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]

    #[test]
    fn spatial_matches_core(
        shape in shape(80),
        bits in cell_bits(),
        pick in any::<u32>(),
        form in form(),
        before in pooled_keys(64, 200),
        ins in pooled_keys(64, 300),
        probed in pooled_keys(128, 100),
        class_seed in any::<u64>(),
        g in given_as(),
        ranges in 1usize..6,
    ) {
        let n = classes_for(bits, pick);
        let mut base = spatial(shape, bits, n);
        let before_b = Batch::new(form, &before);
        ref_insert(&mut base, before_b.keys(), &draw_classes(before.len(), n, class_seed));
        let classes = draw_classes(ins.len(), n, class_seed ^ 1);
        check(&base, form, &ins, &classes, g, &probed, ranges)?;
    }

    /// A view takes any class as the core's `CellsMut` does: 0 changes nothing, a class above
    /// the cells' maximum is the maximum.
    #[test]
    fn views_clamp_and_ignore_like_the_core(
        shape in shape(20),
        bits in cell_bits(),
        ins in pooled_keys(64, 200),
        class_seed in any::<u64>(),
    ) {
        let max = (1u32 << bits) - 1;
        let mut state = class_seed;
        let classes: Vec<u32> = ins
            .iter()
            .map(|_| match splitmix(&mut state) % 4 {
                0 => 0,
                1 => max + 1 + (splitmix(&mut state) % 1000) as u32,
                _ => 1 + (splitmix(&mut state) % u64::from(max)) as u32,
            })
            .collect();
        let base = spatial(shape, bits, 1);
        let seed = shape.seed;
        let mut want = base.clone();
        let mut view = want.as_view_mut();
        for (&k, &c) in ins.iter().zip(&classes) {
            view.spatial_insert_hash(Keys::U64(&[k]).hash(0, seed), c);
        }
        for probe in paths() {
            let mut got = base.clone();
            probe.insert_spatial(got.as_view_mut(), Keys::U64(&ins), Classes::U32(&classes));
            prop_assert!(same(&got, &want), "{}", probe.path());
        }
    }
}

/// One class for a whole batch on a view, as the core's `CellsMut` takes it: 0 changes nothing
/// (the kernels return before touching a block), a class above the cells' maximum is the
/// maximum; below and past the prefetch threshold, on a filter that already holds keys.
#[test]
fn one_class_for_a_batch_clamps_and_ignores_like_the_core() {
    let mut state = 11;
    let ins: Vec<u64> = (0..3000).map(|_| splitmix(&mut state)).collect();
    for (layout, bits) in [
        (Layout::L8x32, 4),
        (Layout::L8x32, 8),
        (Layout::L16x64, 8),
        (Layout::L8x32, 16),
    ] {
        let max = (1u32 << bits) - 1;
        for blocks in [7, (1u32 << 20) / layout.block_bytes() as u32] {
            let mut base = spatial_of(layout, blocks, bits, 1);
            ref_insert(&mut base, Keys::U64(&ins[..1000]), &[1; 1000]);
            for class in [0, 1, max / 2 + 1, max, max + 1, u32::MAX] {
                let mut want = base.clone();
                let mut view = want.as_view_mut();
                for &k in &ins {
                    view.spatial_insert_hash(Keys::U64(&[k]).hash(0, 3), class);
                }
                for probe in paths() {
                    let mut got = base.clone();
                    probe.insert_spatial(got.as_view_mut(), Keys::U64(&ins), Classes::One(class));
                    let p = probe.path();
                    assert!(same(&got, &want), "{layout} {bits} {blocks} {class} on {p}");
                }
            }
        }
    }
}

/// Classes outside `1..=n` are refused by the owned filter's insert, which then changes
/// nothing.
#[test]
fn bad_classes_are_refused_and_change_nothing() {
    let keys: Vec<u64> = (0..100).collect();
    let mut f = spatial_of(Layout::L8x32, 4, 4, 3);
    for probe in paths() {
        for bad in [0u32, 4, 15, u32::MAX] {
            let before = f.clone();
            let mut classes = vec![1u32; keys.len()];
            classes[57] = bad;
            let one = Schedule::OneThread;
            let err =
                probe.insert_spatial_filter(&mut f, Keys::U64(&keys), Classes::U32(&classes), one);
            assert!(err.is_err(), "class {bad} on {}", probe.path());
            let err = probe.insert_spatial_filter(&mut f, Keys::U64(&keys), Classes::One(bad), one);
            assert!(err.is_err());
            assert_eq!(
                f,
                before,
                "class {bad} changed the filter on {}",
                probe.path()
            );
        }
    }
}

/// Filters past the prefetch threshold (image and cells over 512 KiB; reads: over L2, where
/// the 8-key reads of 8x32 with 4- and 8-bit cells and 8x64 with 4-bit cells test the image
/// first), batches long enough
/// for several hash chunks, the all-core paths' own thresholds and the default partitions.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn large_filters_take_the_prefetching_path_and_match() {
    let mut state = 9;
    for (layout, bits, n) in [
        (Layout::L8x32, 4, 15),
        (Layout::L8x32, 8, 200),
        (Layout::L8x64, 4, 15),
        (Layout::L16x64, 8, 200),
        (Layout::L8x64, 16, 5000),
        (Layout::L16x32, 16, 3),
    ] {
        let blocks = (1u32 << 19) / layout.block_bytes() as u32;
        let base = spatial_of(layout, blocks, bits, n);
        let pool: Vec<u64> = (0..40_000).map(|_| splitmix(&mut state)).collect();
        let ins: Vec<u64> = (0..70_000)
            .map(|_| pool[splitmix(&mut state) as usize % pool.len()])
            .collect();
        let classes = draw_classes(ins.len(), n, state);
        for g in [Given::One, Given::U32] {
            check(&base, Form::U64, &ins, &classes, g, &pool[..2000], 3).unwrap();
        }
    }
}

/// The counting filter's count query on every path, one thread and all cores, against the
/// core's `count_hash`, with counters shared and saturated.
#[test]
fn counting_counts_match_the_core() {
    let mut state = 21;
    for layout in Layout::ALL {
        for bits in [CounterBits::Four, CounterBits::Eight] {
            for blocks in [1u32, 7, 300] {
                let mut f =
                    CountingFilter::counting(Params::new(layout, blocks).with_seed(5), bits);
                let pool: Vec<u64> = (0..200).map(|_| splitmix(&mut state)).collect();
                for i in 0..3000 {
                    f.insert(&pool[(splitmix(&mut state) % (1 + i % 200)) as usize]);
                }
                let probed: Vec<u64> = pool.iter().copied().chain(0..500).collect();
                let want: Vec<u32> = probed.iter().map(|k| f.count(k)).collect();
                assert!(want.iter().any(|&c| c > 1));
                assert!(blocks < 300 || want.contains(&0));
                for probe in paths() {
                    let mut got = vec![u32::MAX; probed.len()];
                    probe.min_cells(&f, Keys::U64(&probed), &mut got);
                    assert_eq!(got, want, "{layout} {bits:?} {blocks} on {}", probe.path());
                    let mut got = vec![u8::MAX; probed.len()];
                    probe.par_min_cells(&f, Keys::U64(&probed), &mut got);
                    assert!(got.iter().zip(&want).all(|(&a, &b)| u32::from(a) == b));
                }
            }
        }
    }
}

/// A lookup into values narrower than the cells is refused with a panic naming both widths.
#[test]
#[should_panic(expected = "16-bit cells do not fit the output's 8-bit values")]
fn narrow_outputs_are_refused() {
    let f = spatial_of(Layout::L8x32, 1, 16, 2);
    let mut out = [0u8; 1];
    Probe::active().min_cells(&f, Keys::U64(&[1]), &mut out);
}
