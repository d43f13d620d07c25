//! Every available path against the core's scalar reference: all layouts, all key forms,
//! random and adversarial keys, odd block counts, batch lengths that are not multiples of the
//! vector width or group size, empty batches, unaligned keys and unaligned filter words.

mod common;

use bloomlanes_core::{FilterMut, FilterRef, Layout, Params};
use common::{
    form, layout, lookups_match, paths, ref_contains, ref_insert, sparse_words, splitmix, Batch,
    Form,
};
use proptest::prelude::*;

fn blocks() -> impl Strategy<Value = u32> {
    prop_oneof![Just(1u32), Just(2), Just(3), Just(7), Just(16), 1u32..300]
}

fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => any::<u64>(),
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => 0u64..4,
        1 => Just(1u64 << 63),
        1 => Just(0xffff_ffffu64),
    ]
}

/// The parameters of `blocks` blocks of `layout` with `seed`.
fn at(layout: Layout, blocks: u32, seed: u64) -> Params {
    Params::new(layout, blocks).with_seed(seed)
}

fn any_form() -> impl Strategy<Value = Form> {
    prop_oneof![form(), Just(Form::Records(13))]
}

/// Runs the whole comparison for one case.
#[allow(clippy::too_many_arguments)]
fn check(
    params: Params,
    form: Form,
    inserted: &[u64],
    probed: &[u64],
    word_offset: usize,
    fill_seed: u64,
) -> Result<(), TestCaseError> {
    let len = params.u32_len() as usize;
    // Some bits set at random so that lookups see hits and misses; the view starts
    // `word_offset` words into its storage so the words are not vector-aligned.
    let mut base = vec![0u32; word_offset];
    base.extend(sparse_words(len, fill_seed));
    let ins = Batch::new(form, inserted);
    let prb = Batch::new(form, probed);

    let mut want = base.clone();
    ref_insert(params, &mut want[word_offset..], ins.keys());
    let want_hits = ref_contains(params, &want[word_offset..], prb.keys());
    let want_ins_hits = ref_contains(params, &want[word_offset..], ins.keys());
    prop_assert!(want_ins_hits.iter().all(|&b| b == 1));

    for probe in paths() {
        let p = probe.path();
        // sequential insert
        let mut got = base.clone();
        probe.insert(
            FilterMut::new(params, &mut got[word_offset..]).unwrap(),
            ins.keys(),
        );
        prop_assert_eq!(&got, &want, "insert words differ on {}", p);
        // parallel (atomic) insert
        let mut got = base.clone();
        probe.par_insert(
            FilterMut::new(params, &mut got[word_offset..]).unwrap(),
            ins.keys(),
        );
        prop_assert_eq!(&got, &want, "par_insert words differ on {}", p);

        let view = FilterRef::new(params, &want[word_offset..]).unwrap();
        lookups_match(&probe, view, prb.keys(), &want_hits)?;
        let mut hits = vec![7u8; probed.len()];
        probe.par_contains(view, prb.keys(), &mut hits);
        prop_assert_eq!(&hits, &want_hits, "par_contains differs on {}", p);
        let mut hits = vec![7u8; inserted.len()];
        probe.contains(view, ins.keys(), &mut hits);
        prop_assert!(
            hits.iter().all(|&b| b == 1),
            "inserted key missing on {}",
            p
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 192 }))]

    #[test]
    fn every_path_matches_the_reference(
        layout in layout(),
        blocks in blocks(),
        seed in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
        form in any_form(),
        inserted in prop::collection::vec(key(), 0..200),
        extra in prop::collection::vec(key(), 0..200),
        word_offset in 0usize..3,
        fill_seed in any::<u64>(),
    ) {
        let mut probed = extra;
        // mix some inserted keys (present) among the others
        probed.extend(inserted.iter().step_by(3).copied());
        check(at(layout, blocks, seed), form, &inserted, &probed, word_offset, fill_seed)?;
    }

    #[test]
    fn repeated_keys(
        layout in layout(),
        blocks in blocks(),
        k in key(),
        n in 0usize..100,
        form in any_form(),
    ) {
        let keys = vec![k; n];
        check(at(layout, blocks, 42), form, &keys, &keys, 1, 9)?;
    }
}

/// Every batch length from 0 to 200 on every layout (the group and vector-width tails).
#[test]
fn every_length_0_to_200() {
    let mut state = 1;
    let keys: Vec<u64> = (0..200).map(|_| splitmix(&mut state)).collect();
    for layout in Layout::ALL {
        // Under Miri (which interprets every instruction) a sample of the lengths.
        for n in (0..=200).step_by(if cfg!(miri) { 67 } else { 1 }) {
            let blocks = 1 + (n as u32 % 13);
            check(
                at(layout, blocks, n as u64),
                Form::U64,
                &keys[..n],
                &keys[n / 2..],
                0,
                n as u64,
            )
            .unwrap();
        }
    }
}

/// Batches longer than one parallel chunk (16 Ki keys), with a ragged last chunk.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn large_batches_cross_parallel_chunks() {
    let mut state = 7;
    let keys: Vec<u64> = (0..40_003).map(|_| splitmix(&mut state)).collect();
    for layout in Layout::ALL {
        check(at(layout, 1001, 5), Form::U64, &keys[..20_011], &keys, 0, 3).unwrap();
    }
    check(
        at(Layout::L8x32, 4099, 5),
        Form::Records(13),
        &keys[..17_000],
        &keys,
        1,
        3,
    )
    .unwrap();
}

/// Every layout with every key form, unaligned words, on every path (the property tests above
/// sample these combinations; this runs each one for sure).
#[test]
fn every_layout_and_key_form() {
    let mut state = 5;
    let keys: Vec<u64> = (0..300).map(|_| splitmix(&mut state)).collect();
    let forms = [
        Form::U64,
        Form::Hashes,
        Form::Records(1),
        Form::Records(13),
        Form::Records(40),
        Form::Strings,
    ];
    for layout in Layout::ALL {
        for form in forms {
            check(at(layout, 37, 9), form, &keys[..150], &keys[75..], 1, 4).unwrap();
        }
    }
}
