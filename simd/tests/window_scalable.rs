//! The window and scalable filters' bulk operations on every available path against the core's
//! key-by-key reference: every layout and key form, odd batch sizes, batches spanning several
//! rotations (key and time windows, times that jump, stall and go back), filters past the
//! prefetch threshold, scalable chains that grow inside a batch, and the window golden vectors.

mod common;

use bloomlanes_core::golden::{unhex, VECTORS};
use bloomlanes_core::{FilterKind, Keys, Layout, Params, ScalableFilter, WindowFilter, WindowUnit};
use common::{form, layout, pack, paths, splitmix, Batch, Form};
use proptest::prelude::*;

fn window(
    layout: Layout,
    blocks: u32,
    seed: u64,
    g: u16,
    unit: WindowUnit,
    span: u64,
) -> WindowFilter {
    WindowFilter::new(
        Params::new(layout, blocks)
            .with_seed(seed)
            .with_kind(FilterKind::Window {
                generations: g,
                unit,
                span,
            }),
    )
    .unwrap()
}

/// Lookups of `probed` on every path (bytes and bitmap) against the core's.
fn check_lookups(w: &WindowFilter, probed: Keys<'_>) -> Result<(), TestCaseError> {
    let seed = w.params().seed;
    let want: Vec<u8> = (0..probed.len())
        .map(|i| u8::from(w.contains_hash(probed.hash(i, seed))))
        .collect();
    for probe in paths() {
        let mut hits = vec![7u8; probed.len()];
        probe.contains_window(w, probed, &mut hits);
        prop_assert_eq!(&hits, &want, "window lookup on {}", probe.path());
        let mut bits = vec![u64::MAX; probed.len().div_ceil(64)];
        probe.contains_window_bitmap(w, probed, &mut bits);
        prop_assert_eq!(&bits, &pack(&want), "window bitmap on {}", probe.path());
        let mut hits = vec![7u8; probed.len()];
        probe.par_contains_window(w, probed, &mut hits);
        prop_assert_eq!(&hits, &want, "all-core window lookup on {}", probe.path());
        let mut bits = vec![u64::MAX; probed.len().div_ceil(64)];
        probe.par_contains_window_bitmap(w, probed, &mut bits);
        prop_assert_eq!(
            &bits,
            &pack(&want),
            "all-core window bitmap on {}",
            probe.path()
        );
    }
    Ok(())
}

/// Inserts `batches` (with `times` for time windows) key by key into the core's filter and in
/// bulk on every path; compares words, state and key count after every batch, then lookups.
fn check_window(
    empty: WindowFilter,
    form: Form,
    batches: &[Vec<u64>],
    times: Option<&[Vec<u64>]>,
    probed: &[u64],
) -> Result<(), TestCaseError> {
    let seed = empty.params().seed;
    let mut want = empty.clone();
    let mut gots: Vec<WindowFilter> = paths().iter().map(|_| empty.clone()).collect();
    for (b, keys) in batches.iter().enumerate() {
        let batch = Batch::new(form, keys);
        let k = batch.keys();
        for i in 0..k.len() {
            match times {
                Some(t) => want.insert_hash_at(k.hash(i, seed), t[b][i]),
                None => want.insert_hash(k.hash(i, seed)),
            }
        }
        for (probe, got) in paths().iter().zip(&mut gots) {
            match times {
                Some(t) => probe.insert_window_filter_at(got, k, &t[b]),
                None => probe.insert_window_filter(got, k),
            }
            prop_assert_eq!(got.state(), want.state(), "state on {}", probe.path());
            prop_assert!(got == &want, "words on {} after batch {}", probe.path(), b);
        }
        // A window counted in keys always finds its last g × span keys.
        if let FilterKind::Window {
            generations,
            unit: WindowUnit::Keys,
            span,
        } = want.params().kind
        {
            let so_far: Vec<u64> = batches[..=b].concat();
            let window = (u64::from(generations) * span).min(so_far.len() as u64) as usize;
            let recent = Batch::new(form, &so_far[so_far.len() - window..]);
            for (probe, got) in paths().iter().zip(&gots) {
                let mut hits = vec![0u8; window];
                probe.contains_window(got, recent.keys(), &mut hits);
                prop_assert!(
                    hits.iter().all(|&h| h == 1),
                    "a key of the window lost on {} after batch {}",
                    probe.path(),
                    b
                );
            }
        }
    }
    let inserted: Vec<u64> = batches.concat();
    check_lookups(&want, Batch::new(form, &inserted).keys())?;
    check_lookups(&want, Batch::new(form, probed).keys())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 96 }))]

    #[test]
    fn key_windows_match_core(
        layout in layout(),
        blocks in prop_oneof![Just(1u32), Just(2), 1u32..60],
        seed in any::<u64>(),
        g in prop_oneof![1u16..6, 6u16..12],
        span in prop_oneof![Just(1u64), 1u64..40, Just(1000)],
        form in form(),
        batches in prop::collection::vec(prop::collection::vec(any::<u64>(), 0..150), 1..5),
        probed in prop::collection::vec(any::<u64>(), 0..100),
    ) {
        check_window(window(layout, blocks, seed, g, WindowUnit::Keys, span), form, &batches, None, &probed)?;
    }

    #[test]
    fn time_windows_match_core(
        layout in layout(),
        blocks in prop_oneof![Just(1u32), 1u32..60],
        seed in any::<u64>(),
        g in 1u16..5,
        span in prop_oneof![Just(1u64), 1u64..100, Just(u64::MAX / 2)],
        form in form(),
        start in prop_oneof![Just(0u64), any::<u64>()],
        steps in prop::collection::vec(
            prop::collection::vec(prop_oneof![4 => 0u64..30, 1 => 0u64..1000, 1 => Just(u64::MAX / 3)], 0..150),
            1..4,
        ),
        back in any::<u64>(),
        probed in prop::collection::vec(any::<u64>(), 0..60),
    ) {
        // Timestamps that mostly advance by small steps, sometimes jump far, and every 17th
        // goes back by up to 50 (a late packet).
        let mut t = start;
        let mut n = back;
        let times: Vec<Vec<u64>> = steps
            .iter()
            .map(|s| {
                s.iter()
                    .map(|&d| {
                        t = t.saturating_add(d);
                        n = n.wrapping_add(1);
                        if n % 17 == 0 { t.saturating_sub(n % 50) } else { t }
                    })
                    .collect()
            })
            .collect();
        let mut state = back;
        let batches: Vec<Vec<u64>> = times
            .iter()
            .map(|b| b.iter().map(|_| splitmix(&mut state)).collect())
            .collect();
        check_window(
            window(layout, blocks, seed, g, WindowUnit::Nanos, span),
            form,
            &batches,
            Some(&times),
            &probed,
        )?;
    }

    #[test]
    fn scalable_matches_core(
        layout in layout(),
        seed in any::<u64>(),
        initial in prop_oneof![Just(1u64), 1u64..60, Just(500)],
        growth in prop_oneof![Just(2u8), Just(4)],
        tightening in prop_oneof![Just(0.5f64), Just(0.8), Just(0.9)],
        form in form(),
        // Keys below 64 come again and again: repeats within a batch and across batches.
        batches in prop::collection::vec(prop::collection::vec(prop_oneof![any::<u64>(), 0u64..64], 0..300), 1..4),
        probed in prop::collection::vec(any::<u64>(), 0..200),
    ) {
        let empty = ScalableFilter::new(Params::new(layout, 1).with_seed(seed), initial, 0.01, growth, tightening).unwrap();
        let mut want = empty.clone();
        let mut gots: Vec<ScalableFilter> = paths().iter().map(|_| empty.clone()).collect();
        for keys in &batches {
            let batch = Batch::new(form, keys);
            let k = batch.keys();
            for i in 0..k.len() {
                want.insert_hash(k.hash(i, seed)).unwrap();
            }
            for (probe, got) in paths().iter().zip(&mut gots) {
                probe.insert_scalable(got, k).unwrap();
                prop_assert!(got == &want, "stages on {}", probe.path());
            }
        }
        // No key inserted is ever missing, however many stages the chain grew.
        let all = batches.concat();
        let inserted = Batch::new(form, &all);
        for probe in paths() {
            let mut hits = vec![0u8; all.len()];
            probe.contains_scalable(&want, inserted.keys(), &mut hits);
            prop_assert!(hits.iter().all(|&h| h == 1), "a scalable key lost on {}", probe.path());
        }
        for keys in [batches.concat(), probed] {
            let batch = Batch::new(form, &keys);
            let k = batch.keys();
            let expect: Vec<u8> = (0..k.len()).map(|i| u8::from(want.contains_hash(k.hash(i, seed)))).collect();
            for probe in paths() {
                let mut hits = vec![7u8; k.len()];
                probe.contains_scalable(&want, k, &mut hits);
                prop_assert_eq!(&hits, &expect, "scalable lookup on {}", probe.path());
                let mut bits = vec![u64::MAX; k.len().div_ceil(64)];
                probe.contains_scalable_bitmap(&want, k, &mut bits);
                prop_assert_eq!(&bits, &pack(&expect), "scalable bitmap on {}", probe.path());
            }
        }
    }
}

/// Keys given again, in batches longer than the hash chunk while the chain grows inside them:
/// every path builds the core's filter, which is that of the keys given once (an insert looks
/// the key up in every stage first, so a repeat is neither inserted nor counted again).
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn scalable_repeats_are_looked_up_not_inserted() {
    let keys: Vec<u64> = (0..20_000u64).map(|k| k * 7 % 20_000).collect();
    let thrice: Vec<u64> = [&keys[..], &keys[..], &keys[..]].concat();
    let empty = ScalableFilter::new(Params::new(Layout::L8x32, 1), 100, 0.01, 2, 0.8).unwrap();
    let mut once = empty.clone();
    keys.iter().for_each(|k| once.insert(k).unwrap());
    assert!(once.stages().len() >= 6, "{}", once.stages().len());
    assert!(once.key_count() <= 20_000 && once.key_count() > 19_500);
    let mut want = empty.clone();
    thrice.iter().for_each(|k| want.insert(k).unwrap());
    assert!(want == once, "the core inserted a repeat");
    for probe in paths() {
        for batch in [thrice.len(), 5000, 777] {
            let mut got = empty.clone();
            for part in thrice.chunks(batch) {
                probe.insert_scalable(&mut got, Keys::U64(part)).unwrap();
            }
            assert!(got == once, "{} ({batch})", probe.path());
        }
    }
}

/// Windows past the prefetch threshold, with batches longer than the hash chunk.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn large_windows_take_the_prefetching_path_and_match() {
    let mut state = 21;
    for layout in Layout::ALL {
        let blocks = (256u32 << 10) / layout.block_bytes() as u32;
        let batches: Vec<Vec<u64>> = (0..3)
            .map(|_| (0..25_000).map(|_| splitmix(&mut state)).collect())
            .collect();
        let probed: Vec<u64> = (0..5000).map(|_| splitmix(&mut state)).collect();
        check_window(
            window(layout, blocks, 1, 4, WindowUnit::Keys, 9000),
            Form::U64,
            &batches,
            None,
            &probed,
        )
        .unwrap();
        let mut t = 0u64;
        let times: Vec<Vec<u64>> = batches
            .iter()
            .map(|b| {
                b.iter()
                    .map(|_| {
                        t += splitmix(&mut state) % 3;
                        t
                    })
                    .collect()
            })
            .collect();
        check_window(
            window(layout, blocks, 1, 3, WindowUnit::Nanos, 7000),
            Form::U64,
            &batches,
            Some(&times),
            &probed,
        )
        .unwrap();
    }
}

/// The committed `window` golden lines, rebuilt on every path (one batch, and key by key).
#[test]
fn window_golden_vectors() {
    let mut seen = 0;
    for line in VECTORS.lines().filter(|l| l.starts_with("window ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let layout = Layout::from_name(f[1]).unwrap();
        let num = |i: usize| -> u64 { f[i].parse().unwrap() };
        let (blocks, seed, g, span) = (num(2) as u32, num(3), num(4) as u16, num(5));
        let (n, current, in_current) = (num(6), num(7) as u16, num(8));
        let words: Vec<u32> = unhex(f[9])
            .unwrap()
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let keys: Vec<u64> = (0..n).collect();
        for probe in paths() {
            for batch in [n as usize, 1, 4] {
                let mut w = window(layout, blocks, seed, g, WindowUnit::Keys, span);
                for part in keys.chunks(batch) {
                    probe.insert_window_filter(&mut w, Keys::U64(part));
                }
                assert_eq!(
                    w.words(),
                    &words[..],
                    "{layout} on {} ({batch})",
                    probe.path()
                );
                assert_eq!(
                    (w.state().current, w.state().keys_in_current),
                    (current, in_current)
                );
                let mut hits = vec![0u8; keys.len()];
                probe.contains_window(&w, Keys::U64(&keys), &mut hits);
                // The last g × span keys are always found.
                let window = (u64::from(g) * span) as usize;
                assert!(hits[keys.len() - window..].iter().all(|&h| h == 1));
            }
        }
        seen += 1;
    }
    assert_eq!(seen, 4, "a window line per layout");
}

/// Scalable stages past the prefetch threshold, filled and outgrown inside batches longer than
/// the hash chunk, with keys given again: every path builds the core's key-by-key filter.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn large_scalable_stages_take_the_prefetching_path_and_match() {
    let mut state = 33;
    let fresh: Vec<u64> = (0..480_000).map(|_| splitmix(&mut state)).collect();
    // Every 8th key again, a little later.
    let keys: Vec<u64> = fresh
        .chunks(4096)
        .flat_map(|c| c.iter().chain(c.iter().step_by(8)).copied())
        .collect();
    for layout in Layout::ALL {
        let empty = ScalableFilter::new(Params::new(layout, 1), 400_000, 0.01, 2, 0.8).unwrap();
        assert!(
            empty.stages()[0].words().len() * 4 >= 512 << 10,
            "{layout}: stage 0 in L2"
        );
        let mut want = empty.clone();
        keys.iter().for_each(|k| want.insert(k).unwrap());
        assert_eq!(want.stages().len(), 2, "{layout}: the chain grows");
        for probe in paths() {
            let mut got = empty.clone();
            for part in keys.chunks(100_000) {
                probe.insert_scalable(&mut got, Keys::U64(part)).unwrap();
            }
            assert!(got == want, "{layout} on {}", probe.path());
        }
    }
}
