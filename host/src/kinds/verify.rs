//! Cross-checking every kind of filter on every backend: each kind is filled by the core's
//! reference path, checked for the properties that define it (its file reads back identical, no
//! false negative, deletions keep the keys still present), and every backend present must
//! reproduce its static images bit for bit (a counting filter's projection, each scalable stage,
//! each window generation, each from the keys that went into it) and its answers key for key.

use bloomlanes_core::{
    AnyFilter, Bitmap, Filter, FilterKind, Keys, Layout, Params, ScalableFilter,
};

use crate::backend::{self, Backend, Scalar};
use crate::builder::FilterBuilder;
use crate::bulk;
use crate::error::Result;
use crate::input::KeySet;
use crate::kinds::{ops, KindSpec};
use crate::verify::{
    first_bit_difference, first_bitmap_difference, hashes_of, key_view, Difference, Steps,
    VerifyRow,
};

/// The kinds `verify` checks besides the static filter, with the options it checks them with
/// for `keys` keys: 4-bit counters, a window of half the keys in 4 generations (so that some
/// rotate out), scalable stages of an eighth of the keys (so that there are several).
pub fn kinds_for(keys: usize) -> Vec<KindSpec> {
    use bloomlanes_core::{CounterBits, WindowUnit};
    vec![
        KindSpec::Counting {
            counter_bits: CounterBits::Four,
        },
        KindSpec::Stable {
            counter_bits: CounterBits::Four,
            decrements: None,
        },
        KindSpec::Window {
            generations: Some(4),
            unit: WindowUnit::Keys,
            window: (keys as u64 / 2).max(1),
        },
        KindSpec::Scalable {
            growth: 2,
            tightening: 0.8,
        },
    ]
}

/// `f` as a static filter over `words` with `params`' shape.
fn static_of(params: &Params, words: &[u32]) -> Filter {
    let mut f = Filter::new(params.with_kind(FilterKind::Static));
    f.words_mut().copy_from_slice(words);
    f
}

/// Which keys filled a static image: a range of the keys, or (a scalable stage) the hashes of
/// the keys that went into it.
enum Filled {
    Range(std::ops::Range<usize>),
    Hashes(Vec<u64>),
}

/// A scalable filter's stages, each with the hashes of the keys that went into it: the keys
/// inserted again, in order, into an empty chain of the same shape (an insert looks the key up
/// first, so a key some stage held already went into none, and a stage's keys are not a range).
fn scalable_images(s: &ScalableFilter, keys: Keys<'_>) -> Vec<(Filter, Filled)> {
    let FilterKind::Scalable { growth, tightening } = s.params().kind else {
        return vec![];
    };
    let t = f64::from(tightening) / 256.0;
    let Ok(mut chain) =
        ScalableFilter::new(*s.params(), s.stage_capacity(0), s.target_rate(), growth, t)
    else {
        return vec![];
    };
    let mut filled = vec![Vec::new(); s.stages().len()];
    for h in hashes_of(keys, s.params().seed) {
        match chain.insert_hash_unless_held_from(h, 0) {
            Ok(true) => match filled.get_mut(chain.stages().len() - 1) {
                Some(stage) => stage.push(h),
                None => break,
            },
            Ok(false) => {}
            Err(_) => break,
        }
    }
    s.stages()
        .iter()
        .zip(filled)
        .map(|(st, h)| (st.clone(), Filled::Hashes(h)))
        .collect()
}

/// The static images of a filter and the keys each was filled from.
fn images(f: &AnyFilter, keys: Keys<'_>) -> Vec<(Filter, Filled)> {
    let n = keys.len();
    match f {
        AnyFilter::Static(s) => vec![(s.clone(), Filled::Range(0..n))],
        AnyFilter::Retrieval(_) => vec![],
        // A stable filter's projection is not a static filter of any key range.
        AnyFilter::Counting(c) if matches!(c.params().kind, FilterKind::Stable { .. }) => vec![],
        AnyFilter::Counting(c) => {
            vec![(static_of(c.params(), c.image_words()), Filled::Range(0..n))]
        }
        AnyFilter::Spatial(c) => {
            vec![(static_of(c.params(), c.image_words()), Filled::Range(0..n))]
        }
        AnyFilter::Scalable(s) => scalable_images(s, keys),
        AnyFilter::Window(w) => {
            let FilterKind::Window { span, .. } = w.params().kind else {
                return vec![];
            };
            let p = w.params();
            let gens = bloomlanes_core::window::generations(p) as usize;
            let per = p.layout.block_u32s();
            let span = span as usize;
            // Generation q of the stream holds keys q·span .. (q+1)·span in slot q mod (g+1);
            // the last g+1 generations are stored.
            let last = n.saturating_sub(1) / span.max(1);
            (last.saturating_sub(gens - 1)..=last)
                .filter(|_| n > 0)
                .map(|q| {
                    let slot = q % gens;
                    let words: Vec<u32> = w
                        .words()
                        .chunks_exact(gens * per)
                        .flat_map(|b| b[slot * per..(slot + 1) * per].iter().copied())
                        .collect();
                    let range = q * span..n.min((q + 1) * span);
                    (static_of(p, &words), Filled::Range(range))
                })
                .collect()
        }
    }
}

/// The reference filter's answers for `keys`, key by key.
fn reference_answers(f: &AnyFilter, keys: Keys<'_>) -> Bitmap {
    let mut b = Bitmap::new(keys.len());
    for (i, h) in hashes_of(keys, f.params().seed).into_iter().enumerate() {
        b.set(i, f.contains_hash(h));
    }
    b
}

/// The keys that must be found: all of them, the last window of a window filter, the last key
/// of a stable filter (which forgets by design).
fn must_find(f: &AnyFilter, n: usize) -> std::ops::Range<usize> {
    match f.params().kind {
        FilterKind::Window {
            generations, span, ..
        } => n.saturating_sub((span * u64::from(generations)) as usize)..n,
        FilterKind::Stable { .. } => n.saturating_sub(1)..n,
        _ => 0..n,
    }
}

/// The properties of the reference filter: its file reads back identical, the keys it must hold
/// are found, and for a counting filter, deleting every other key keeps the rest and leaves the
/// projection of a static filter of the rest (when no counter saturated).
fn properties(f: &AnyFilter, keys: &KeySet) -> Option<Difference> {
    let fail = |m: String| Some(Difference::Failed(m));
    match AnyFilter::from_file_bytes(&f.to_file_bytes()) {
        Ok(back) if back == *f => {}
        Ok(_) => return fail("the filter read back from its file differs".into()),
        Err(e) => return fail(format!("its file does not read back: {e}")),
    }
    let seed = f.params().seed;
    let k = key_view(keys);
    if let Some(i) = must_find(f, keys.len()).find(|&i| !f.contains_hash(k.hash(i, seed))) {
        return fail(format!(
            "false negative: key #{i} ({}) is not found",
            keys.display(i)
        ));
    }
    let AnyFilter::Counting(c) = f else {
        return None;
    };
    if !matches!(c.params().kind, FilterKind::Counting { .. }) {
        return None;
    }
    let mut d = c.clone();
    for i in (0..keys.len()).step_by(2) {
        if let Err(e) = d.remove_hash(k.hash(i, seed)) {
            return fail(format!("deleting key #{i} ({}): {e}", keys.display(i)));
        }
    }
    if let Some(i) = (1..keys.len())
        .step_by(2)
        .find(|&i| !d.contains_hash(k.hash(i, seed)))
    {
        return fail(format!(
            "false negative after deletions: key #{i} ({}) is not found",
            keys.display(i)
        ));
    }
    if c.saturated() == 0 {
        let mut rest = Filter::new(c.params().with_kind(FilterKind::Static));
        for i in (1..keys.len()).step_by(2) {
            rest.insert_hash(k.hash(i, seed));
        }
        if rest.words() != d.image_words() {
            return fail(
                "after deletions the projection differs from the static filter of the keys left"
                    .into(),
            );
        }
    }
    None
}

/// The first byte where two filter files differ, as a difference.
fn file_difference(what: &str, expected: &AnyFilter, found: &AnyFilter) -> Option<Difference> {
    let (a, b) = (expected.to_file_bytes(), found.to_file_bytes());
    let at = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then_some(a.len().min(b.len())))?;
    Some(Difference::Failed(format!(
        "{what}: the filter's file differs from the reference's first at byte {at} (of {})",
        a.len()
    )))
}

/// One backend against the reference: its own insert of every key into `empty` (the SIMD
/// backends' bulk operations of the kind) must leave the reference's file byte for byte; then
/// its static images built from their keys, and its answers.
fn compare(
    engine: &dyn Backend,
    empty: &AnyFilter,
    f: &AnyFilter,
    keys: &KeySet,
    absent: &[u64],
    expected: (&Bitmap, &Bitmap),
) -> Result<Option<Difference>> {
    let mut own = empty.clone();
    ops::insert(engine, &mut own, key_view(keys), Some(0), &mut |_| {})?;
    if let Some(d) = file_difference("insert", f, &own) {
        return Ok(Some(d));
    }
    if let (AnyFilter::Counting(c), FilterKind::Counting { .. }) = (f, f.params().kind) {
        // Deleting every other key, by this backend and key by key in the core.
        let all = hashes_of(key_view(keys), c.params().seed);
        let hashes: Vec<u64> = all.into_iter().step_by(2).collect();
        let mut by_core = f.clone();
        if let AnyFilter::Counting(d) = &mut by_core {
            for &h in &hashes {
                let _ = d.remove_hash(h);
            }
        }
        let mut by_engine = f.clone();
        ops::remove(
            engine,
            &mut by_engine,
            std::path::Path::new("verify"),
            Keys::Hashes(&hashes),
        )?;
        if let Some(d) = file_difference("delete", &by_core, &by_engine) {
            return Ok(Some(d));
        }
    }
    compare_images(engine, f, keys, absent, expected)
}

/// One backend's static images of the reference (each from its keys) and its answers.
fn compare_images(
    engine: &dyn Backend,
    f: &AnyFilter,
    keys: &KeySet,
    absent: &[u64],
    expected: (&Bitmap, &Bitmap),
) -> Result<Option<Difference>> {
    let view = key_view(keys);
    for (image, filled) in images(f, view) {
        let mut built = Filter::new(*image.params());
        let keys = match &filled {
            Filled::Range(r) => view.slice(r.clone()),
            Filled::Hashes(h) => Keys::Hashes(h),
        };
        bulk::insert(engine, &mut built, keys, &mut |_| {})?;
        if let Some(d) = first_bit_difference(image.layout(), &image, &built) {
            return Ok(Some(d));
        }
    }
    let a = ops::contains(engine, f, view, &mut |_| {})?;
    let b = ops::contains(engine, f, Keys::U64(absent), &mut |_| {})?;
    Ok(
        first_bitmap_difference("inserted", &|i| keys.display(i), expected.0, &a).or_else(|| {
            first_bitmap_difference("absent", &|i| absent[i].to_string(), expected.1, &b)
        }),
    )
}

/// Fills a filter of each of `kinds` (not static: see [`crate::verify::run`]) per layout with
/// `keys` by the reference path, checks its properties, and compares every backend present with
/// it. `absent` keys are probed besides the inserted ones.
///
/// With `hdl_keys > 0` and a Verilog simulator installed, a counting filter (the kind the
/// generated counting pipeline implements) is also run in the RTL, on the first layout only (a
/// simulation takes seconds): see `simulate_counting` in this file. Each check is reported to
/// `steps` before it starts.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    keys: &KeySet,
    absent: &[u64],
    layouts: &[Layout],
    kinds: &[KindSpec],
    fpp: f64,
    seed: u64,
    hdl_keys: usize,
    steps: &mut Steps<'_>,
) -> Result<Vec<VerifyRow>> {
    let engines = backend::available();
    let mut rows = Vec::new();
    for &layout in layouts {
        for &kind in kinds {
            let mut builder = FilterBuilder::new()
                .fpp(fpp)
                .layout(Some(layout))
                .seed(seed)
                .kind(kind);
            if matches!(kind, KindSpec::Scalable { .. }) {
                builder = builder.capacity(Some((keys.len() as u64 / 8).max(1)));
            }
            let empty = builder.empty_any(keys.len() as u64)?;
            let mut f = empty.clone();
            let what = |backend: &str| format!("{} {} {backend}", layout.name(), kind.name());
            steps.start(what("reference"), false);
            // The reference: the core's key-by-key path (the scalar backend takes it).
            ops::insert(&Scalar, &mut f, key_view(keys), Some(0), &mut |_| {})?;
            let expected = (
                reference_answers(&f, key_view(keys)),
                reference_answers(&f, Keys::U64(absent)),
            );
            let props = properties(&f, keys);
            for engine in &engines {
                steps.start(what(&engine.name()), true);
                let difference = match compare(
                    &**engine,
                    &empty,
                    &f,
                    keys,
                    absent,
                    (&expected.0, &expected.1),
                ) {
                    Err(e) => Some(Difference::Failed(e.to_string())),
                    Ok(d) => d,
                };
                let difference = if engine.name() == "scalar" {
                    props.clone().or(difference)
                } else {
                    difference
                };
                rows.push(VerifyRow {
                    layout,
                    kind: kind.name(),
                    backend: engine.name(),
                    keys: keys.len(),
                    probes: keys.len() + absent.len(),
                    difference,
                });
            }
            #[cfg(feature = "hdl")]
            if let (AnyFilter::Counting(c), KindSpec::Counting { .. }, true) =
                (&f, kind, hdl_keys > 0 && layout == layouts[0])
            {
                if let Some((backend, probes, difference)) =
                    simulate_counting(c, keys, absent, hdl_keys)
                {
                    rows.push(VerifyRow {
                        layout,
                        kind: kind.name(),
                        backend,
                        keys: keys.len(),
                        probes,
                        difference,
                    });
                }
            }
        }
    }
    #[cfg(not(feature = "hdl"))]
    let _ = hdl_keys;
    Ok(rows)
}

/// The counting filter `f` in a simulation of the generated counting pipeline (prehashed keys),
/// its banks loaded with `f`'s counters: lookups of `n` inserted and `n` absent keys, deletes of
/// half the inserted and a quarter of the absent ones (refused), the inserted ones looked up
/// again and a quarter inserted again; the first half at full rate, the rest with input gaps
/// and output backpressure. Every answer, and the first 4096 entries of every counter bank read
/// back at the end, must equal the core replaying the same operations. `None` without a
/// simulator.
#[cfg(feature = "hdl")]
fn simulate_counting(
    f: &bloomlanes_core::CountingFilter,
    keys: &KeySet,
    absent: &[u64],
    n: usize,
) -> Option<(String, usize, Option<Difference>)> {
    use bloomlanes_hdl::counting::{op, CountingConfig};
    use bloomlanes_hdl::counting_sim::{check_counting, run_counting_ops};
    use bloomlanes_hdl::sim::{BenchParams, Key, Op};
    let sim = bloomlanes_hdl::simulator_available()?;
    let seed = f.params().seed;
    let (ni, na) = (n.min(keys.len()), n.min(absent.len()));
    let view = key_view(keys);
    let inserted: Vec<u64> = (0..ni).map(|i| view.hash(i, seed)).collect();
    let missing: Vec<u64> = (0..na).map(|i| Keys::U64(absent).hash(i, seed)).collect();
    let mut ops = Vec::new();
    let mut push = |code: u8, hashes: &[u64]| {
        for &h in hashes {
            let tag = ops.len() as u32;
            ops.push(Op {
                code,
                tag,
                key: Key::Hash(h),
            });
        }
    };
    push(op::LOOKUP, &inserted);
    push(op::LOOKUP, &missing);
    push(op::DELETE, &inserted[..ni / 2]);
    push(op::DELETE, &missing[..na / 4]);
    push(op::LOOKUP, &inserted);
    push(op::INSERT, &inserted[..ni / 4]);
    let cfg = CountingConfig::for_filter(f, bloomlanes_hdl::KeyMode::Prehashed);
    let params = BenchParams {
        fast_ops: ops.len() as u32 / 2,
        valid_pct: 70,
        ready_pct: 70,
        seed: 7,
        readback: 4096,
    };
    let difference = match run_counting_ops(&cfg, sim, Some(f), &ops, params) {
        Err(e) => Some(Difference::Failed(e.to_string())),
        Ok(log) => check_counting(&cfg, f, &ops, &log)
            .err()
            .map(|e| Difference::Failed(format!("counting RTL: {e}"))),
    };
    Some((format!("hdl-sim ({})", sim.name()), ops.len(), difference))
}

#[cfg(test)]
mod tests {
    use bloomlanes_core::CounterBits;

    use super::*;
    use crate::verify::sample_keyset;

    #[test]
    fn every_kind_agrees_with_the_reference_on_every_layout() {
        let keys = sample_keyset(2000);
        let absent: Vec<u64> = (0..2000).map(|i| i * 7919 + (1 << 50)).collect();
        let kinds = kinds_for(keys.len());
        let mut hook = |_| {};
        let mut steps = Steps::new(0, &mut hook);
        let rows = run(&keys, &absent, &Layout::ALL, &kinds, 0.01, 5, 0, &mut steps).unwrap();
        assert_eq!(
            rows.len(),
            Layout::ALL.len() * kinds.len() * backend::available().len()
        );
        assert!(rows.iter().all(|r| r.difference.is_none()), "{rows:?}");
        // The window and the scalable filter have several images to compare.
        let scalable = FilterBuilder::new()
            .capacity(Some(250))
            .kind(kinds[3])
            .empty_any(2000)
            .unwrap();
        let mut scalable = scalable;
        ops::insert(&Scalar, &mut scalable, keys.keys(), None, &mut |_| {}).unwrap();
        assert!(images(&scalable, keys.keys()).len() >= 3);
    }

    #[test]
    fn a_changed_bit_or_a_lost_key_is_found() {
        let keys = sample_keyset(500);
        let mut f = FilterBuilder::new()
            .kind(KindSpec::Counting {
                counter_bits: CounterBits::Four,
            })
            .empty_any(500)
            .unwrap();
        ops::insert(&Scalar, &mut f, keys.keys(), None, &mut |_| {}).unwrap();
        let AnyFilter::Counting(c) = &f else {
            unreachable!()
        };
        // One cell of key #0 emptied, its counter and its image bit (a file whose image is not
        // the projection of its counters is refused on reading): the static images differ,
        // and key #0 becomes a false negative.
        let mut image = c.image_words().to_vec();
        let mut counters = c.counter_words().to_vec();
        let h = keys.keys().hash(0, 0);
        let p = c.params();
        let cell = bloomlanes_core::counting::cell(p.layout, p.blocks, h, 0);
        image[(cell / 32) as usize] &= !(1 << (cell % 32));
        counters[(cell / 8) as usize] &= !(0xf << (4 * (cell % 8)));
        let mut bytes = f.to_file_bytes();
        let at = bloomlanes_core::format::HEADER_LEN + 64;
        let counters_at = at + (image.len() * 4).div_ceil(64) * 64;
        for (start, words) in [(at, &image), (counters_at, &counters)] {
            for (i, w) in words.iter().enumerate() {
                bytes[start + 4 * i..start + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
            }
        }
        // Rewrite the checksums by re-encoding through the header.
        let (header, payload) = bloomlanes_core::format::parse_with(
            &bytes,
            bloomlanes_core::format::Verify::HeaderOnly,
        )
        .unwrap();
        let mut fixed = header.encode(payload).to_vec();
        fixed.extend_from_slice(payload);
        let broken = AnyFilter::from_file_bytes(&fixed).unwrap();
        let expected = reference_answers(&f, keys.keys());
        let none = reference_answers(&f, Keys::U64(&[]));
        let empty = FilterBuilder::new()
            .kind(KindSpec::Counting {
                counter_bits: CounterBits::Four,
            })
            .empty_any(500)
            .unwrap();
        let d = compare(&Scalar, &empty, &broken, &keys, &[], (&expected, &none)).unwrap();
        assert!(
            matches!(&d, Some(Difference::Failed(m)) if m.contains("insert")),
            "{d:?}"
        );
        let d = compare_images(&Scalar, &broken, &keys, &[], (&expected, &none)).unwrap();
        assert!(matches!(d, Some(Difference::Bits { .. })), "{d:?}");
        let d = properties(&broken, &keys);
        assert!(
            matches!(&d, Some(Difference::Failed(m)) if m.contains("false negative")),
            "{d:?}"
        );
    }
}
