//! Owning scalable filters (behind `alloc`): a chain of split-block filters that grows with the
//! keys while the false-positive rate stays under its target (Almeida, Baquero, Preguiça and
//! Hutchison, 2007).
//!
//! Stage `i` holds up to `n0 × s^i` keys and is sized for the rate `P × (1 − r) × r^i`, so that
//! the compound rate `1 − Π (1 − P_i)` stays below `P` however many stages there are. An insert
//! looks the key up first: a key some stage may hold already is neither inserted again nor
//! counted, so every key is in one stage, a stage's count is of distinct keys, and repeats
//! neither fill stages nor add any. Other keys go into the last stage; a full last stage gets a
//! successor. A key is found if any stage has it.

use alloc::vec;
use alloc::vec::Vec;

use crate::filter::Filter;
use crate::format::{self, FormatError, Header};
use crate::key::Key;
use crate::kind::FilterKind;
use crate::kind_meta::{self, pad64, ScalableMeta, META_LEN, STAGE_LEN};
use crate::layout::{block_index, block_mask, Layout};
use crate::math::{self, SizingError};
use crate::params::Params;
use crate::stats::Stats;
use crate::write_file::{FileParts, WriteFile};

/// Sets the bits of the key with `hash` in `stage` and counts it if any of them was clear;
/// whether one was (the key was not held; if none was, nothing changed).
fn set_new(stage: &mut Filter, hash: u64) -> bool {
    let layout = stage.layout();
    let per = layout.block_u32s();
    let block = block_index(hash, stage.blocks()) as usize;
    let mask = block_mask(layout, hash);
    let words = &mut stage.words_mut()[block * per..(block + 1) * per];
    let mut clear = 0;
    for (w, &m) in words.iter_mut().zip(&mask[..per]) {
        clear |= m & !*w;
        *w |= m;
    }
    if clear != 0 {
        stage.add_key_count(1);
    }
    clear != 0
}

impl WriteFile for ScalableFilter {
    fn file_parts(&self) -> FileParts<'_> {
        let table: Vec<(u32, u64)> = self
            .stages
            .iter()
            .map(|s| (s.blocks(), s.key_count().unwrap_or(0)))
            .collect();
        let mut meta = vec![0; pad64((META_LEN + STAGE_LEN * table.len()) as u64) as usize];
        kind_meta::scalable_meta(&self.meta, &table, &mut meta);
        let arrays = self.stages.iter().map(Filter::words).collect();
        FileParts::new(self.params, Some(self.key_count()), meta, arrays)
    }
}

/// A scalable filter.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalableFilter {
    params: Params,
    meta: ScalableMeta,
    stages: Vec<Filter>,
}

impl ScalableFilter {
    /// An empty scalable filter: stage 0 holds `initial` keys, each stage `growth` times more
    /// (at least 2), with tightening ratio `tightening` (0 < r < 1; stored in 1/256 steps), for
    /// an overall false-positive rate of at most `rate`. The base parameters give the layout,
    /// seed, hash and key type (their block count is ignored).
    pub fn new(
        base: Params,
        initial: u64,
        rate: f64,
        growth: u8,
        tightening: f64,
    ) -> Result<ScalableFilter, SizingError> {
        math::check_rate(rate)?;
        let t = libm::round(tightening.clamp(0.0, 1.0) * 256.0).clamp(1.0, 255.0) as u8;
        let meta = ScalableMeta {
            growth: growth.max(2),
            tightening: t,
            rate,
            initial_capacity: initial.max(1),
        };
        let kind = FilterKind::Scalable {
            growth: meta.growth,
            tightening: t,
        };
        let mut f = ScalableFilter {
            params: base.with_kind(kind),
            meta,
            stages: Vec::new(),
        };
        f.grow()?;
        Ok(f)
    }

    fn tightening(&self) -> f64 {
        f64::from(self.meta.tightening) / 256.0
    }

    /// Capacity of stage `i`.
    pub fn stage_capacity(&self, i: usize) -> u64 {
        math::scalable_stage_capacity(self.meta.initial_capacity, self.meta.growth, i as u32)
    }

    /// Appends an empty stage sized for its capacity and rate.
    fn grow(&mut self) -> Result<(), SizingError> {
        let i = self.stages.len();
        let rate = math::scalable_stage_rate(self.meta.rate, self.tightening(), i as u32);
        let cap = self.stage_capacity(i);
        let blocks = math::blocks_for_rate(self.params.layout, cap, rate)?;
        let p = Params {
            blocks,
            kind: FilterKind::Static,
            ..self.params
        };
        if i == 0 {
            self.params.blocks = blocks;
        }
        self.stages.push(Filter::new(p));
        Ok(())
    }

    /// The parameters (kind included; the block count is stage 0's).
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The stages, oldest first.
    pub fn stages(&self) -> &[Filter] {
        &self.stages
    }

    /// The overall false-positive rate target.
    pub fn target_rate(&self) -> f64 {
        self.meta.rate
    }

    /// Keys inserted in all stages (each once: an insert of a key some stage may hold already
    /// is not counted).
    pub fn key_count(&self) -> u64 {
        self.stages.iter().filter_map(Filter::key_count).sum()
    }

    /// Inserts a key by its hash unless some stage may hold it already (a lookup before the
    /// insert, as Almeida et al.'s filter does), adding a stage first when the last is full.
    /// Fails only when the next stage would exceed the largest filter.
    pub fn insert_hash(&mut self, hash: u64) -> Result<(), SizingError> {
        self.insert_hash_unless_held_from(hash, 0).map(|_| ())
    }

    /// [`ScalableFilter::insert_hash`] for bulk callers that have looked the key up in stages
    /// `0..first` already (and found it in none): only stage `first` and the later ones are
    /// asked before the insert. The stages before the last are full and never change, so a
    /// bulk caller looks a batch up in all of them at once and passes the index of the stage
    /// that was last before the batch. Returns whether the key was inserted (`false`: a stage
    /// from `first` on may hold it). Fails only when the next stage would exceed the largest
    /// filter.
    pub fn insert_hash_unless_held_from(
        &mut self,
        hash: u64,
        first: usize,
    ) -> Result<bool, SizingError> {
        let last = self.stages.len() - 1;
        if self.stages[first.min(last)..last]
            .iter()
            .any(|s| s.contains_hash(hash))
        {
            return Ok(false);
        }
        // The last stage: one test-and-set where it has room.
        if self.stages[last].key_count().unwrap_or(0) < self.stage_capacity(last) {
            return Ok(set_new(&mut self.stages[last], hash));
        }
        if self.stages[last].contains_hash(hash) {
            return Ok(false);
        }
        self.grow()?;
        Ok(set_new(self.stages.last_mut().expect("a stage was added"), hash))
    }

    /// The last stage and how many keys it takes before the next insert would add a stage,
    /// after adding that stage first if the last one is full (what
    /// [`ScalableFilter::insert_hash`] does before its insert; a reader that rebuilds the chain
    /// stage by stage uses it). Fails only when the next stage would exceed the largest filter.
    pub fn open_stage(&mut self) -> Result<(&mut Filter, u64), SizingError> {
        let last = self.stages.len() - 1;
        if self.stages[last].key_count().unwrap_or(0) >= self.stage_capacity(last) {
            self.grow()?;
        }
        let last = self.stages.len() - 1;
        let room = self
            .stage_capacity(last)
            .saturating_sub(self.stages[last].key_count().unwrap_or(0));
        Ok((&mut self.stages[last], room))
    }

    /// Inserts a key; see [`ScalableFilter::insert_hash`].
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<(), SizingError> {
        self.insert_hash(self.params.hash_key(key))
    }

    /// Whether the key with `hash` may be present (in any stage).
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.stages.iter().any(|s| s.contains_hash(hash))
    }

    /// Whether a key may be present.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.hash_key(key))
    }

    /// Expected false-positive rate: `1 − Π (1 − FPR_i)` over the stages, each stage's the rate
    /// of its bits ([`Stats::any_of`] of the stages' [`Filter::stats`]).
    pub fn expected_fpr(&self) -> f64 {
        Stats::any_of(self.stages.iter().map(|s| s.stats().expected_fpr))
    }

    /// Statistics summed over the stages: total bytes and set bits, the distinct keys the
    /// stages' bits show (summed: no key is in two stages, since an insert looks it up first),
    /// and the compound rate of their bits.
    pub fn stats(&self) -> Stats {
        let stages: Vec<Stats> = self.stages.iter().map(Filter::stats).collect();
        let mut s = Stats::new(self.params, Some(self.key_count()), 0);
        s.bytes = stages.iter().map(|t| t.bytes).sum();
        s.ones = stages.iter().map(|t| t.ones).sum();
        s.fill_ratio = s.ones as f64 / (s.bytes as f64 * 8.0);
        let (estimate, error) = Stats::sum_distinct(
            stages
                .iter()
                .map(|t| (t.estimated_keys, t.estimated_keys_error)),
        );
        s.set_distinct(estimate, error);
        s.with_fpr_from_bits(Stats::any_of(stages.iter().map(|t| t.expected_fpr)))
    }

    /// The whole file: header, metadata with the stage table, one image per stage.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        self.file_parts().to_bytes()
    }

    /// Reads a whole scalable filter file; any fault is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<ScalableFilter, FormatError> {
        let (header, payload) = format::parse_kind(file, "scalable", |k| {
            matches!(k, FilterKind::Scalable { .. })
        })?;
        let p = header.params;
        let meta_bytes = &payload[..header.meta_len as usize];
        let (meta, table) = kind_meta::decode_scalable(meta_bytes);
        let mut at = header.meta_len as usize;
        let mut stages = Vec::new();
        for (blocks, keys) in table {
            let sp = Params {
                blocks,
                kind: FilterKind::Static,
                ..p
            };
            let len = sp.byte_len() as usize;
            let mut f = Filter::from_image(&payload[at..at + len], Header::new(sp, Some(keys)))?;
            f.set_key_count(Some(keys));
            stages.push(f);
            at += pad64(len as u64) as usize;
        }
        Ok(ScalableFilter {
            params: p,
            meta,
            stages,
        })
    }

    /// The layout of every stage.
    pub fn layout(&self) -> Layout {
        self.params.layout
    }
}
