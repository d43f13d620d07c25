//! Bulk operations on filters of every kind: insert, delete, look up, and the streaming
//! test-and-insert of a duplicate filter.
//!
//! Static filters (and the static images of the other kinds: a counting or stable filter's
//! projection, a scalable filter's stages) go through the chosen [`Backend`]. The other kinds'
//! inserts, deletes and window lookups take the SIMD crate's bulk operations on a SIMD backend
//! and the core's per-key reference path on the others (the scalar backend, a GPU); both are
//! here and nowhere else, and `verify` checks that they leave the same bits. The streaming
//! test-and-insert of `dedup` ([`seen_then_insert`]) is per key by nature.

use std::path::Path;

use bloomlanes_core::{
    block_index, block_mask, AnyFilter, Bitmap, FilterKind, Keys, RemoveError, WindowFilter,
    WindowUnit,
};

use crate::backend::Backend;
use crate::bulk::{self, Progress, Stage};
use crate::error::{Error, Result};

/// Keys per progress report of the kinds' bulk loops.
const STEP: usize = 1 << 20;

/// Runs `each(range)` over the key indices in ranges of [`STEP`] keys, in order, reporting
/// progress before the first and after every range.
fn per_chunk(
    stage: Stage,
    total: usize,
    progress: &mut dyn FnMut(Progress),
    mut each: impl FnMut(std::ops::Range<usize>) -> Result<()>,
) -> Result<()> {
    let report = |done: usize| Progress {
        stage,
        done: done as u64,
        total: total as u64,
        bytes: 0,
        bytes_total: 0,
        finished: done == total,
    };
    progress(report(0));
    let mut at = 0;
    while at < total {
        let end = total.min(at + STEP);
        each(at..end)?;
        progress(report(end));
        at = end;
    }
    Ok(())
}

/// Runs `each(i)` for every key index (the core's per-key path), reporting progress as
/// [`per_chunk`] does.
fn per_key(
    stage: Stage,
    total: usize,
    progress: &mut dyn FnMut(Progress),
    mut each: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    per_chunk(stage, total, progress, |r| {
        r.into_iter().try_for_each(&mut each)
    })
}

/// Adds `n` to a recorded key count.
fn plus(count: Option<u64>, n: usize) -> Option<u64> {
    count.map(|k| k.saturating_add(n as u64))
}

/// Inserts `keys` into `filter`: a static filter with `engine`; the other kinds with the SIMD
/// engine's bulk operations when `engine` is a SIMD backend ([`Backend::simd_probe`]), else key
/// by key in the core's reference path (both leave the same bits). Keys of a time window are
/// inserted as seen at `now` (nanoseconds since the Unix epoch; the caller's clock, since this
/// library measures no time), which a time window requires.
pub fn insert(
    engine: &dyn Backend,
    filter: &mut AnyFilter,
    keys: Keys<'_>,
    now: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<()> {
    let seed = filter.params().seed;
    let simd = engine.simd_probe();
    let n = keys.len();
    match filter {
        AnyFilter::Static(f) => bulk::insert(engine, f, keys, progress),
        AnyFilter::Counting(f) => match simd {
            Some((probe, true)) => per_chunk(Stage::Insert, n, progress, |r| {
                let k = keys.slice(r);
                probe.par_insert_counting(f.as_view_mut(), k);
                f.set_key_count(plus(f.key_count(), k.len()));
                Ok(())
            }),
            Some((probe, false)) => per_chunk(Stage::Insert, n, progress, |r| {
                probe.insert_counting_filter(f, keys.slice(r));
                Ok(())
            }),
            None => per_key(Stage::Insert, n, progress, |i| {
                f.insert_hash(keys.hash(i, seed));
                Ok(())
            }),
        },
        AnyFilter::Window(f) => {
            let timed = matches!(
                f.params().kind,
                FilterKind::Window {
                    unit: WindowUnit::Nanos,
                    ..
                }
            );
            match (timed, now, simd) {
                (true, None, _) => Err(Error::usage(
                    "a time window needs the time its keys were seen",
                )),
                (true, Some(t), Some((probe, _))) => per_chunk(Stage::Insert, n, progress, |r| {
                    let times = vec![t; r.len()];
                    probe.insert_window_filter_at(f, keys.slice(r), &times);
                    Ok(())
                }),
                (true, Some(t), None) => per_key(Stage::Insert, n, progress, |i| {
                    f.insert_hash_at(keys.hash(i, seed), t);
                    Ok(())
                }),
                (false, _, Some((probe, _))) => per_chunk(Stage::Insert, n, progress, |r| {
                    probe.insert_window_filter(f, keys.slice(r));
                    Ok(())
                }),
                (false, _, None) => per_key(Stage::Insert, n, progress, |i| {
                    f.insert_hash(keys.hash(i, seed));
                    Ok(())
                }),
            }
        }
        AnyFilter::Scalable(f) => match simd {
            Some((probe, _)) => per_chunk(Stage::Insert, n, progress, |r| {
                Ok(probe.insert_scalable(f, keys.slice(r))?)
            }),
            None => per_key(Stage::Insert, n, progress, |i| {
                Ok(f.insert_hash(keys.hash(i, seed))?)
            }),
        },
        AnyFilter::Spatial(_) => Err(Error::usage(
            "a spatial filter takes each key with its class: insert with classes (`bloomlanes \
             insert --class NAME` or `--class-column C`; the SIMD crate's \
             `insert_spatial_filter`)",
        )),
        AnyFilter::Retrieval(_) => Err(Error::usage(
            "a retrieval table is built once from its keys and values; it takes no inserts",
        )),
    }
}

/// What a bulk delete did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Keys deleted.
    pub removed: u64,
    /// Indices of the keys refused because one of their counters was zero (they are not in the
    /// filter; nothing was changed for them).
    pub not_present: Vec<usize>,
}

/// Deletes `keys` from a counting filter (read from `path`, which error messages name), with the
/// SIMD engine's bulk delete when `engine` is a SIMD backend, else key by key: each key whose
/// counters are all positive is deleted; the others are refused, changing nothing, and listed.
/// Any other kind is an [`Error::KindUnsupported`].
pub fn remove(
    engine: &dyn Backend,
    filter: &mut AnyFilter,
    path: &Path,
    keys: Keys<'_>,
) -> Result<Removed> {
    let unsupported = |kind: FilterKind| Error::KindUnsupported {
        path: path.to_path_buf(),
        op: "delete from",
        kind: kind.name().to_string(),
        hint: "only counting filters support deletions (build one with --kind counting)",
    };
    let kind = filter.params().kind;
    let AnyFilter::Counting(f) = filter else {
        return Err(unsupported(kind));
    };
    if !matches!(kind, FilterKind::Counting { .. }) {
        return Err(unsupported(kind));
    }
    let seed = f.params().seed;
    let mut out = Removed::default();
    if let Some((probe, par)) = engine.simd_probe() {
        let mut refused = vec![0u64; keys.len().div_ceil(64)];
        let no = if par {
            let no = probe
                .par_remove_counting(f.as_view_mut(), keys, &mut refused)
                .map_err(|_| unsupported(kind))?;
            let done = keys.len() as u64 - no;
            f.set_key_count(f.key_count().map(|k| k.saturating_sub(done)));
            no
        } else {
            probe
                .remove_counting_filter(f, keys, &mut refused)
                .map_err(|_| unsupported(kind))?
        };
        out.removed = keys.len() as u64 - no;
        out.not_present = (0..keys.len())
            .filter(|&i| refused[i / 64] >> (i % 64) & 1 == 1)
            .collect();
        return Ok(out);
    }
    for i in 0..keys.len() {
        match f.remove_hash(keys.hash(i, seed)) {
            Ok(()) => out.removed += 1,
            Err(RemoveError::NotPresent) => out.not_present.push(i),
            Err(_) => return Err(unsupported(kind)),
        }
    }
    Ok(out)
}

/// Looks every key of `keys` up in `filter`: the static images (a static filter, a counting or
/// stable filter's projection, each stage of a scalable filter) with `engine`, a window with
/// the SIMD engine's window lookup (on every core for an all-core engine; key by key in the
/// core for other backends). Bit `i` of the answer is set if key `i` may be present.
pub fn contains(
    engine: &dyn Backend,
    filter: &AnyFilter,
    keys: Keys<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Bitmap> {
    match filter {
        AnyFilter::Static(f) => bulk::contains(engine, f.as_view(), keys, progress),
        AnyFilter::Counting(f) => bulk::contains(engine, f.projection(), keys, progress),
        AnyFilter::Spatial(f) => bulk::contains(engine, f.projection(), keys, progress),
        AnyFilter::Scalable(f) => {
            let mut answers = Bitmap::new(keys.len());
            for stage in f.stages() {
                let a = bulk::contains(engine, stage.as_view(), keys, progress)?;
                for (w, x) in answers.words_mut().iter_mut().zip(a.words()) {
                    *w |= x;
                }
            }
            Ok(answers)
        }
        AnyFilter::Window(f) => {
            let seed = f.params().seed;
            let mut answers = Bitmap::new(keys.len());
            if let Some((probe, parallel)) = engine.simd_probe() {
                let words = answers.words_mut();
                per_chunk(Stage::Query, keys.len(), progress, |r| {
                    // Ranges start at multiples of STEP, a multiple of 64: whole answer words.
                    let w = &mut words[r.start / 64..r.end.div_ceil(64)];
                    if parallel {
                        probe.par_contains_window_bitmap(f, keys.slice(r), w);
                    } else {
                        probe.contains_window_bitmap(f, keys.slice(r), w);
                    }
                    Ok(())
                })?;
                return Ok(answers);
            }
            per_key(Stage::Query, keys.len(), progress, |i| {
                answers.set(i, f.contains_hash(keys.hash(i, seed)));
                Ok(())
            })?;
            Ok(answers)
        }
        AnyFilter::Retrieval(_) => Err(Error::usage(
            "bulk membership queries of retrieval tables are not wired yet",
        )),
    }
}

/// The answers of `keys` against `filter` on this thread, into `words` (bit `i % 64` of
/// `words[i / 64]` set if key `i` may be present, the bits past the last key cleared): with
/// `probe`'s kernels (a counting or stable filter's projection, a window's generations, a
/// scalable filter's stages), or without one the core's lookups key by key. One chunk of a
/// streamed query, answered on a worker ([`crate::ops::stream::query_stream_kind`]).
///
/// # Panics
/// If `words.len() != keys.len().div_ceil(64)`.
pub fn contains_words(
    probe: Option<bloomlanes_simd::Probe>,
    filter: &AnyFilter,
    keys: Keys<'_>,
    words: &mut [u64],
) {
    assert_eq!(words.len(), keys.len().div_ceil(64), "one word per 64 keys");
    match (probe, filter) {
        (Some(p), AnyFilter::Static(f)) => p.contains_bitmap(f.as_view(), keys, words),
        (Some(p), AnyFilter::Counting(f)) => p.contains_bitmap(f.projection(), keys, words),
        (Some(p), AnyFilter::Spatial(f)) => p.contains_bitmap(f.projection(), keys, words),
        (Some(p), AnyFilter::Window(f)) => p.contains_window_bitmap(f, keys, words),
        (Some(p), AnyFilter::Scalable(f)) => p.contains_scalable_bitmap(f, keys, words),
        // Without a probe, or a kind without bulk kernels (retrieval): the core, key by key.
        (_, f) => {
            let seed = f.params().seed;
            words.fill(0);
            for i in 0..keys.len() {
                words[i / 64] |= u64::from(f.contains_hash(keys.hash(i, seed))) << (i % 64);
            }
        }
    }
}

/// Which engine does `stage` for `filter`: `engine` where it takes the work (static filters
/// and static images always, every kind on a SIMD backend), else the core's per-key path.
pub fn engine_name(engine: &dyn Backend, filter: &AnyFilter, stage: Stage) -> String {
    let engine_works = engine.simd_probe().is_some()
        || match (filter, stage) {
            (AnyFilter::Static(_), _) => true,
            (AnyFilter::Window(_), _) => false,
            (_, Stage::Query) => true,
            _ => false,
        };
    if engine_works {
        engine.name()
    } else {
        "core (per key)".into()
    }
}

/// How many of a window's generations (the oldest first) the next insert seen at `now` clears:
/// one when the current generation of a window counted in keys is full, the number of spans
/// `now` lies past the current generation's start for a time window.
fn expiring(filter: &WindowFilter, now: u64) -> u64 {
    let FilterKind::Window { unit, span, .. } = filter.params().kind else {
        return 0;
    };
    let st = filter.state();
    match unit {
        WindowUnit::Keys => u64::from(st.keys_in_current >= span),
        WindowUnit::Nanos if st.started => now.saturating_sub(st.current_start) / span,
        WindowUnit::Nanos => 0,
    }
}

/// Whether the key with `hash` is in one of the generations that an insert at `now` would keep
/// (so that a key older than the window is not found only because no insert has rotated it
/// out yet). The words are the core's window layout: `g + 1` generations interleaved by block.
pub fn window_contains_at(filter: &WindowFilter, hash: u64, now: u64) -> bool {
    let p = filter.params();
    let gens = bloomlanes_core::window::generations(p);
    let gone = expiring(filter, now);
    if gone == 0 {
        return filter.contains_hash(hash);
    }
    if gone >= gens {
        return false;
    }
    let per = p.layout.block_u32s();
    let mask = block_mask(p.layout, hash);
    let words = filter.words();
    let base = block_index(hash, p.blocks) as usize * gens as usize * per;
    let current = u64::from(filter.state().current);
    (0..gens - gone).any(|age| {
        let slot = ((current + gens - age) % gens) as usize;
        let block = &words[base + slot * per..base + (slot + 1) * per];
        block.iter().zip(&mask[..per]).all(|(w, m)| w & m == *m)
    })
}

/// The streaming duplicate test: whether the key with `hash` may have been seen in the window
/// as it stands at `now` (nanoseconds; ignored by a window counted in keys), then inserts it.
/// Every key counts toward the window, duplicates too, so that "seen among the last N keys"
/// holds for keys that keep recurring.
pub fn seen_then_insert(filter: &mut WindowFilter, hash: u64, now: u64) -> bool {
    let seen = window_contains_at(filter, hash, now);
    filter.insert_hash_at(hash, now);
    seen
}

#[cfg(test)]
mod tests {
    use bloomlanes_core::{Layout, Params};

    use super::*;
    use crate::backend::Scalar;
    use crate::sample::SplitMix64;

    fn h(k: u64) -> u64 {
        bloomlanes_core::xxh64_u64(k, 0)
    }

    fn window(unit: WindowUnit, span: u64) -> WindowFilter {
        WindowFilter::new(
            Params::new(Layout::L8x32, 64).with_kind(FilterKind::Window {
                generations: 2,
                unit,
                span,
            }),
        )
        .unwrap()
    }

    /// The lookup before an insert at `now` sees exactly the generations the insert keeps:
    /// whatever it finds is still found after the insert, and whatever is gone after the insert
    /// it does not find.
    #[test]
    fn window_lookups_skip_the_generations_an_insert_clears() {
        for unit in [WindowUnit::Keys, WindowUnit::Nanos] {
            let mut f = window(unit, 40);
            let mut rng = SplitMix64::new(7);
            let mut now = 0u64;
            let keys: Vec<u64> = (0..300).collect();
            let (mut skipped, mut gained, mut probes) = (0u64, 0u64, 0u64);
            for (i, &k) in keys.iter().enumerate() {
                now += rng.next().unwrap() % 30;
                let probe_from = i.saturating_sub(150);
                let mut after = f.clone();
                after.insert_hash_at(h(u64::MAX - k), now);
                for &p in &keys[probe_from..i] {
                    let before = window_contains_at(&f, h(p), now);
                    let kept = after.contains_hash(h(p));
                    assert!(!before || kept, "{unit:?}: key {p} found, then lost");
                    if f.contains_hash(h(p)) && !before {
                        skipped += 1;
                    }
                    // Found only after the insert: a false positive the new key's bits made.
                    gained += u64::from(!before && kept);
                    probes += 1;
                }
                seen_then_insert(&mut f, h(k), now);
            }
            // A key inserted just before is found; one from far back in time or keys is not.
            let mut g = window(unit, 40);
            assert!(!seen_then_insert(&mut g, h(1), 0));
            assert!(seen_then_insert(&mut g, h(1), 10));
            let far = if unit == WindowUnit::Nanos { 1000 } else { 0 };
            for i in 0..200 {
                g.insert_hash_at(h(1000 + i), far);
            }
            assert!(!window_contains_at(&g, h(1), far), "{unit:?}");
            // The plain lookup would have found keys about to be cleared.
            assert!(skipped > 0, "{unit:?}");
            assert!(gained * 100 < probes, "{unit:?}: {gained} of {probes}");
        }
    }

    #[test]
    fn deletions_are_refused_on_kinds_without_them() {
        let p = Params::new(Layout::L8x32, 16);
        let mut w = AnyFilter::Window(window(WindowUnit::Keys, 10));
        let e = remove(&Scalar, &mut w, Path::new("w.blf"), Keys::U64(&[1])).unwrap_err();
        assert!(
            e.to_string().contains("cannot delete from a window filter"),
            "{e}"
        );
        assert_eq!(e.exit_code(), 2);
        let mut s = AnyFilter::Static(bloomlanes_core::Filter::new(p));
        assert!(remove(&Scalar, &mut s, Path::new("s.blf"), Keys::U64(&[1])).is_err());
        let c = AnyFilter::Counting(
            bloomlanes_core::CountingFilter::new(p.with_kind(FilterKind::Counting {
                counter_bits: bloomlanes_core::CounterBits::Four,
            }))
            .unwrap(),
        );
        let engines: [&dyn Backend; 2] = [&Scalar, &crate::backend::Simd::active()];
        let empty = c.clone();
        for engine in engines {
            let mut c = empty.clone();
            insert(engine, &mut c, Keys::U64(&[1, 2, 3]), None, &mut |_| {}).unwrap();
            let r = remove(engine, &mut c, Path::new("c.blf"), Keys::U64(&[2, 2])).unwrap();
            assert_eq!(
                (r.removed, r.not_present),
                (1, vec![1]),
                "{}",
                engine.name()
            );
            let a = contains(engine, &c, Keys::U64(&[1, 2, 3]), &mut |_| {}).unwrap();
            assert!(a.get(0) && a.get(2));
            assert_eq!(c.stats().recorded_keys, Some(2));
        }
    }
}
