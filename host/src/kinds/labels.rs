//! The kinds that answer *which*, not only *whether*: a spatial filter answers a key's class
//! (1 to `n`, 0 when absent), a retrieval table its value (or absent). This file builds both
//! from keys and labels and answers a batch of keys with their labels, on the SIMD crate's bulk
//! paths on every core; `query`, `classify` and `capture` take their verdicts from
//! [`Labeller`].

use bloomlanes_core::retrieval::{RetrievalError, RetrievalSpec, RetrievalTable};
use bloomlanes_core::{
    AnyFilter, CountingFilter, KeyType, Keys, Params, SpatialError, SpatialFilter,
};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bloomlanes_simd::{Classes, Probe, Schedule};

use crate::error::{Error, Result};

/// The cell width that holds `classes` classes: 4 bits up to 15, 8 up to 255, 16 up to 65535
/// (`None` past that).
pub fn cell_bits_for(classes: usize) -> Option<u32> {
    [4u32, 8, 16]
        .into_iter()
        .find(|&b| (classes as u64) < (1u64 << b))
}

/// A spatial filter of `shape`'s layout, blocks, seed and key type, cells of `cell_bits`
/// bits, one class per name (`names[0]` is class 1, the lowest priority), holding key `i` in
/// class `classes[i]`, inserted by the SIMD crate on every core.
///
/// # Errors
/// The core's [`SpatialError`]: a cell width other than 4, 8 or 16, more classes than the cells
/// hold, a bad or repeated name, a class outside `1..=n`.
pub fn build_spatial(
    shape: Params,
    cell_bits: u32,
    names: &[String],
    keys: Keys<'_>,
    classes: &[u16],
) -> std::result::Result<SpatialFilter, SpatialError> {
    let mut f = SpatialFilter::new(shape, cell_bits, names)?;
    Probe::active().insert_spatial_filter(
        &mut f,
        keys,
        Classes::U16(classes),
        Schedule::AllCores,
    )?;
    Ok(f)
}

/// Keys of a spatial build listed in more than one class ([`class_conflicts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassConflicts {
    /// Distinct keys listed with two or more classes.
    pub keys: u64,
    /// One of them: the index of its first listing in its lowest class, and of a listing in
    /// its highest class (the class the filter reports).
    pub example: Option<(usize, usize)>,
    /// Listings answered above their class whose key no other listing puts higher: emersion
    /// (every cell shared with keys of higher classes) or, when `f` held keys before, the key
    /// already in a higher class, which a spatial filter never lowers.
    pub above: u64,
    /// The first of those: its index and the class it is answered.
    pub above_example: Option<(usize, u32)>,
}

/// The keys of `keys` that `classes` lists in more than one class, once `f` holds them all. A
/// spatial filter keeps the highest class of such a key (as a rule table with priorities
/// would), so its other listings are never reported: a rule table with two actions for one
/// key is usually a mistake worth a warning.
///
/// Cheap when there are none: one batch of lookups finds the keys reported above their class
/// (listed higher elsewhere, or emersion); only when some are does a second pass hash every key
/// to find the other listings of those, and compares the keys themselves, not only hashes.
///
/// # Panics
/// If `classes.len() != keys.len()`.
pub fn class_conflicts(f: &SpatialFilter, keys: Keys<'_>, classes: &[u16]) -> ClassConflicts {
    assert_eq!(classes.len(), keys.len(), "one class per key");
    let probe = Probe::active();
    let mut got = vec![0u32; keys.len()];
    probe.par_min_cells(f, keys, &mut got);
    let seed = f.params().seed;
    // Listings seen of each key reported above its class: (class, first index) pairs.
    let mut seen: HashMap<u64, Vec<(u16, usize)>, BuildHasherDefault<HashIsKey>> = got
        .iter()
        .zip(classes)
        .enumerate()
        .filter(|(_, (&g, &c))| g != u32::from(c))
        .map(|(i, _)| (keys.hash(i, seed), Vec::new()))
        .collect();
    if seen.is_empty() {
        return ClassConflicts::default();
    }
    let above: Vec<usize> = (0..keys.len())
        .filter(|&i| got[i] != u32::from(classes[i]))
        .collect();
    // Every listing of those keys: the keys hashed again, a range per core, in input order.
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let per = keys.len().div_ceil(threads).max(HASH_CHUNK);
    let matches: Vec<Vec<(usize, u64)>> = std::thread::scope(|scope| {
        let seen = &seen;
        let tasks: Vec<_> = (0..keys.len())
            .step_by(per)
            .map(|from| {
                let to = (from + per).min(keys.len());
                scope.spawn(move || listings_in(probe, keys, seed, from..to, seen))
            })
            .collect();
        tasks
            .into_iter()
            .map(|t| t.join().expect("a hashing task panicked"))
            .collect()
    });
    for (i, h) in matches.into_iter().flatten() {
        let listed = seen.get_mut(&h).expect("a listing of a key seen");
        // A hash shared by two different keys is told apart by the keys' own bytes.
        let c = classes[i];
        if !listed.iter().any(|&(d, j)| d == c && same_key(keys, i, j)) {
            listed.push((c, i));
        }
    }
    let mut out = ClassConflicts::default();
    // The example is the conflicting key listed earliest.
    let mut example_at = usize::MAX;
    let mut conflicting = std::collections::HashSet::new();
    for (&h, listed) in &seen {
        let mut done = vec![false; listed.len()];
        for a in 0..listed.len() {
            if done[a] {
                continue;
            }
            // Every class the key of `listed[a]` is listed in, each with its first listing.
            let same: Vec<(u16, usize)> = (a..listed.len())
                .filter(|&b| same_key(keys, listed[a].1, listed[b].1))
                .map(|b| {
                    done[b] = true;
                    listed[b]
                })
                .collect();
            let low = *same.iter().min().expect("holds listed[a]");
            let high = *same.iter().max().expect("holds listed[a]");
            if low.0 != high.0 {
                conflicting.insert(h);
                out.keys += 1;
                let earliest = same.iter().map(|&(_, i)| i).min().expect("non-empty");
                if earliest < example_at {
                    example_at = earliest;
                    out.example = Some((low.1, high.1));
                }
            }
        }
    }
    // Listings of a key listed higher elsewhere are the conflict's (two keys that share a
    // 64-bit hash are counted as one here: a one-in-2^64 chance a pair).
    for i in above {
        if !conflicting.contains(&keys.hash(i, seed)) {
            out.above += 1;
            out.above_example.get_or_insert((i, got[i]));
        }
    }
    out
}

/// The keys in `range` whose hash is one of `seen`'s, in order: each index with its hash.
fn listings_in<V>(
    probe: Probe,
    keys: Keys<'_>,
    seed: u64,
    range: std::ops::Range<usize>,
    seen: &HashMap<u64, V, BuildHasherDefault<HashIsKey>>,
) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut hashes = vec![0u64; HASH_CHUNK.min(range.len())];
    for start in range.clone().step_by(HASH_CHUNK) {
        let end = (start + HASH_CHUNK).min(range.end);
        let hashes = &mut hashes[..end - start];
        probe.hash_keys(keys.slice(start..end), seed, hashes);
        out.extend(
            (start..end)
                .zip(hashes.iter())
                .filter(|(_, h)| seen.contains_key(h))
                .map(|(i, &h)| (i, h)),
        );
    }
    out
}

/// Keys hashed at a time by [`class_conflicts`]'s second pass (a buffer that stays in L1).
const HASH_CHUNK: usize = 4096;

/// The hasher of a map keyed by key hashes: XXH64 is already uniform, so the map takes the
/// hash as it is (a general-purpose hasher would cost more than the rest of the pass).
#[derive(Default)]
struct HashIsKey(u64);

impl Hasher for HashIsKey {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the map's keys are `u64`); any other input still hashes.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Whether keys `i` and `j` of `keys` are the same key.
fn same_key(keys: Keys<'_>, i: usize, j: usize) -> bool {
    match keys {
        Keys::U64(v) | Keys::Hashes(v) => v[i] == v[j],
        Keys::Records(r) => r.get(i) == r.get(j),
        Keys::Strings(s) => s.get(i) == s.get(j),
    }
}

/// A retrieval table mapping key `i` to `values[i]`, built by the SIMD crate's passes on every
/// core; the keys are hashed with `base`'s seed and its key type is recorded.
///
/// # Errors
/// The core's [`RetrievalError`] (a value wider than the spec, a key repeated with two values,
/// widths out of range).
pub fn build_retrieval(
    base: Params,
    key_type: KeyType,
    spec: RetrievalSpec,
    keys: Keys<'_>,
    values: &[u32],
) -> std::result::Result<RetrievalTable, RetrievalError> {
    let hashes: Vec<u64> = (0..keys.len()).map(|i| keys.hash(i, base.seed)).collect();
    Probe::active().build_retrieval(base.with_key_type(key_type), spec, &hashes, values)
}

/// Labels of a batch of keys: `values[i]` is key `i`'s class or value, and bit `i % 64` of
/// `found[i / 64]` says whether it has one (a spatial class above 0, a retrieval value its
/// check bits accept).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels {
    /// Each key's class (spatial; 0: absent), value (retrieval; 0 when absent) or count.
    pub values: Vec<u32>,
    /// One bit per key: it has a label.
    pub found: Vec<u64>,
}

impl Labels {
    /// Key `i`'s label, `None` when absent.
    pub fn get(&self, i: usize) -> Option<u32> {
        ((self.found[i / 64] >> (i % 64)) & 1 == 1).then(|| self.values[i])
    }

    /// The number of keys answered.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no key was answered.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// What labels a filter's keys: a spatial filter or a retrieval table.
#[derive(Clone, Copy, Debug)]
pub enum Labeller<'a> {
    /// Classes of a spatial filter.
    Spatial(&'a SpatialFilter),
    /// Values of a retrieval table.
    Retrieval(&'a RetrievalTable),
    /// Counts of a counting or stable filter (the smallest of a key's counters: an upper bound
    /// on how often it was inserted).
    Counts(&'a CountingFilter),
}

impl<'a> Labeller<'a> {
    /// The labeller of `filter`, `None` for a kind that answers only membership (the counts of
    /// a counting filter are asked for by name, [`Labeller::Counts`]).
    pub fn of(filter: &'a AnyFilter) -> Option<Labeller<'a>> {
        match filter {
            AnyFilter::Spatial(f) => Some(Labeller::Spatial(f)),
            AnyFilter::Retrieval(t) => Some(Labeller::Retrieval(t)),
            _ => None,
        }
    }

    /// [`Labeller::of`], or a usage error naming what `what` needs.
    pub fn require(filter: &'a AnyFilter, what: &str) -> Result<Labeller<'a>> {
        Labeller::of(filter).ok_or_else(|| {
            Error::usage(format!(
                "{what} needs a spatial filter or a retrieval table, not a {} filter",
                filter.params().kind.name()
            ))
        })
    }

    /// The parameters (seed, key type).
    pub fn params(&self) -> &Params {
        match self {
            Labeller::Spatial(f) => f.params(),
            Labeller::Retrieval(t) => t.params(),
            Labeller::Counts(c) => c.params(),
        }
    }

    /// How label `label` is shown: the class's name, or the value in decimal.
    pub fn show(&self, label: u32) -> String {
        match self {
            Labeller::Spatial(f) => f.class_name(label).unwrap_or("?").to_string(),
            Labeller::Retrieval(_) | Labeller::Counts(_) => label.to_string(),
        }
    }

    /// Labels `keys` into `out` (resized), on every core when `parallel`.
    pub fn label(&self, keys: Keys<'_>, parallel: bool, out: &mut Labels) {
        // Sized only: every path below writes every value and found word.
        let n = keys.len();
        out.values.resize(n, 0);
        out.found.resize(n.div_ceil(64), 0);
        let probe = Probe::active();
        match (self, parallel) {
            (Labeller::Spatial(f), true) => probe.par_min_cells(*f, keys, &mut out.values),
            (Labeller::Spatial(f), false) => probe.min_cells(*f, keys, &mut out.values),
            (Labeller::Counts(c), true) => probe.par_min_cells(*c, keys, &mut out.values),
            (Labeller::Counts(c), false) => probe.min_cells(*c, keys, &mut out.values),
            (Labeller::Retrieval(t), true) => {
                probe.par_get_retrieval(t, keys, &mut out.values, &mut out.found)
            }
            (Labeller::Retrieval(t), false) => {
                probe.get_retrieval(t, keys, &mut out.values, &mut out.found)
            }
        }
        if !matches!(self, Labeller::Retrieval(_)) {
            probe.nonzero_bits(&out.values, &mut out.found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::Layout;

    fn filter_of(keys: &[u64], classes: &[u16]) -> SpatialFilter {
        let shape = Params::new(Layout::L8x32, 64);
        let names = ["allow", "mirror", "deny"].map(String::from);
        build_spatial(shape, 4, &names, Keys::U64(keys), classes).unwrap()
    }

    #[test]
    fn a_key_in_two_classes_is_counted_once_with_its_lowest_and_highest_listing() {
        // Key 1 in classes 1 and 3, key 2 twice in class 1, key 4 twice in class 2, key 5
        // first high then low.
        let keys = [1u64, 2, 3, 1, 2, 4, 4, 5, 5, 1];
        let classes = [1u16, 1, 2, 3, 1, 2, 2, 3, 1, 2];
        let f = filter_of(&keys, &classes);
        let c = class_conflicts(&f, Keys::U64(&keys), &classes);
        assert_eq!(c.keys, 2, "keys 1 and 5");
        assert_eq!(c.example, Some((0, 3)), "key 1: class 1 at 0, class 3 at 3");
        // Their lower listings are the conflict's, not emersion's (64 blocks: none emerges).
        assert_eq!((c.above, c.above_example), (0, None));
        // The example is the key listed first: key 8 (middle class first) before key 7.
        let (keys, classes) = ([8u64, 7, 7, 8, 8], [2u16, 1, 3, 1, 3]);
        let f = filter_of(&keys, &classes);
        let c = class_conflicts(&f, Keys::U64(&keys), &classes);
        assert_eq!((c.keys, c.example), (2, Some((3, 4))));
        let (keys, classes) = ([5u64, 5, 6], [3u16, 1, 1]);
        let f = filter_of(&keys, &classes);
        let c = class_conflicts(&f, Keys::U64(&keys), &classes);
        assert_eq!((c.keys, c.example), (1, Some((1, 0))));
    }

    #[test]
    fn distinct_keys_are_never_a_conflict() {
        let keys: Vec<u64> = (0..5000).collect();
        let classes: Vec<u16> = (0..5000).map(|k| (k % 3 + 1) as u16).collect();
        let f = filter_of(&keys, &classes);
        let mut got = vec![0u32; keys.len()];
        Probe::active().min_cells(&f, Keys::U64(&keys), &mut got);
        let emerged = got
            .iter()
            .zip(&classes)
            .filter(|(g, c)| **g != u32::from(**c))
            .count() as u64;
        assert!(emerged > 100, "a crowded filter: emersion to tell apart");
        let c = class_conflicts(&f, Keys::U64(&keys), &classes);
        assert_eq!((c.keys, c.example), (0, None), "no conflict");
        // Every emerged key is counted above its class, none explained by another listing.
        assert_eq!(c.above, emerged);
        let (i, answered) = c.above_example.expect("an example");
        assert!(answered > u32::from(classes[i]) && answered == got[i]);
    }
}
