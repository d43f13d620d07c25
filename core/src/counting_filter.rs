//! Owning counting and stable filters (behind `alloc`): the projection image, the counters, the
//! file format.

use alloc::vec::Vec;

use crate::cell_store::CellStore;
use crate::counting::{self, CountingMut, RemoveError};
use crate::filter::Filter;
use crate::format::{self, FormatError};
use crate::key::Key;
use crate::kind::{CounterBits, FilterKind};
use crate::kind_meta;
use crate::math;
use crate::params::{MergeError, Params};
use crate::reference::FilterRef;
use crate::stats::Stats;
use crate::write_file::{FileParts, WriteFile};

impl WriteFile for CountingFilter {
    fn file_parts(&self) -> FileParts<'_> {
        let meta = kind_meta::encode_meta(self.store.params.kind, None);
        self.store.file_parts(meta.to_vec())
    }
}

/// A counting filter (deletions) or a stable filter (a stream filter that forgets old keys),
/// which share their storage: the projection image and one counter per image bit (the cell
/// algebra's storage, [`crate::cell`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CountingFilter {
    store: CellStore,
}

impl CountingFilter {
    /// An empty counting or stable filter with these parameters, or `None` if `params.kind` is
    /// neither. A stable filter's decrements are taken into `1 ..= max_decrements` (its cells,
    /// at most 2^20: [`kind_meta::max_decrements`]), the range its file may hold.
    pub fn new(params: Params) -> Option<CountingFilter> {
        params.kind.counter_bits()?;
        let mut params = Params {
            blocks: params.blocks.max(1),
            ..params
        };
        if let FilterKind::Stable {
            counter_bits,
            decrements,
        } = params.kind
        {
            let decrements = decrements.clamp(1, kind_meta::max_decrements(&params));
            params.kind = FilterKind::Stable {
                counter_bits,
                decrements,
            };
        }
        Some(CountingFilter {
            store: CellStore::new(params)?,
        })
    }

    /// [`CountingFilter::new`], or `None` also when its arrays cannot be allocated (instead of
    /// aborting the process).
    pub fn try_new(params: Params) -> Option<CountingFilter> {
        params.kind.counter_bits()?;
        Some(CountingFilter {
            store: CellStore::try_new(params)?,
        })
    }

    /// An empty counting filter with `params`' shape and `bits`-bit counters.
    pub fn counting(params: Params, bits: CounterBits) -> CountingFilter {
        CountingFilter::new(params.with_kind(FilterKind::Counting { counter_bits: bits }))
            .expect("a counting kind")
    }

    /// An empty stable filter with `params`' shape, `bits`-bit counters and `decrements` cells
    /// decremented per insert (at least 1, at most [`kind_meta::max_decrements`]).
    pub fn stable(params: Params, bits: CounterBits, decrements: u32) -> CountingFilter {
        CountingFilter::new(params.with_kind(FilterKind::Stable {
            counter_bits: bits,
            decrements: decrements.max(1),
        }))
        .expect("a stable kind")
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        &self.store.params
    }

    /// The counter width.
    pub fn counter_bits(&self) -> CounterBits {
        self.store
            .params
            .kind
            .counter_bits()
            .expect("a counting kind")
    }

    /// Keys inserted (minus keys deleted), if known.
    pub fn key_count(&self) -> Option<u64> {
        self.store.keys
    }

    /// Records the key count (e.g. after a bulk operation by another backend), or forgets it.
    pub fn set_key_count(&mut self, keys: Option<u64>) {
        self.store.keys = keys;
    }

    /// The projection image's words (bit set iff its counter is positive).
    pub fn image_words(&self) -> &[u32] {
        self.store.image_words()
    }

    /// The counters' words (see [`counting`] for their packing).
    pub fn counter_words(&self) -> &[u32] {
        self.store.cell_words()
    }

    /// A mutable view, for the bulk backends (the key count is not updated).
    pub fn as_view_mut(&mut self) -> CountingMut<'_> {
        self.store.view_mut()
    }

    /// The projection as a static filter view (what every static lookup path takes).
    pub fn projection(&self) -> FilterRef<'_, u32> {
        self.store.projection()
    }

    /// The projection as an owned static filter: byte-identical to a static filter built from
    /// the keys currently present (exportable to the static format, Parquet and HDL banks).
    pub fn to_static(&self) -> Filter {
        self.store.to_static()
    }

    /// Inserts a key by its hash: a counting insert, or a stable insert for a stable filter.
    pub fn insert_hash(&mut self, hash: u64) {
        match self.store.params.kind {
            FilterKind::Stable { decrements, .. } => {
                self.as_view_mut().stable_insert_hash(hash, decrements)
            }
            _ => self.as_view_mut().insert_hash(hash),
        }
        self.store.keys = self.store.keys.map(|k| k.saturating_add(1));
    }

    /// Inserts a key.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(self.params().hash_key(key));
    }

    /// Deletes a key by its hash (counting filters only): refused, changing nothing, unless all
    /// its counters are positive.
    pub fn remove_hash(&mut self, hash: u64) -> Result<(), RemoveError> {
        if !matches!(self.store.params.kind, FilterKind::Counting { .. }) {
            return Err(RemoveError::Unsupported);
        }
        self.as_view_mut().remove_hash(hash)?;
        self.store.keys = self.store.keys.map(|k| k.saturating_sub(1));
        Ok(())
    }

    /// Deletes a key (counting filters only); see [`CountingFilter::remove_hash`].
    pub fn remove<K: Key + ?Sized>(&mut self, key: &K) -> Result<(), RemoveError> {
        self.remove_hash(self.params().hash_key(key))
    }

    /// Whether a key may be present (all its counters positive).
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.projection().contains(key)
    }

    /// Whether the key with `hash` may be present.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.projection().contains_hash(hash)
    }

    /// The key's count: the smallest of its counters ([`CellReduce::Min`](crate::CellReduce::Min)), an upper bound on
    /// how many times it was inserted (less its deletions) while no counter saturated; 0 means
    /// absent.
    pub fn count_hash(&self, hash: u64) -> u32 {
        self.store.smallest_cell(hash)
    }

    /// The count of a key; see [`CountingFilter::count_hash`].
    pub fn count<K: Key + ?Sized>(&self, key: &K) -> u32 {
        self.count_hash(self.params().hash_key(key))
    }

    /// Counters stuck at the maximum.
    pub fn saturated(&self) -> u64 {
        counting::saturated(self.store.cell_words(), self.counter_bits())
    }

    /// Statistics of the projection: a lookup needs every probed cell non-zero, and the
    /// projection's bit is "cell non-zero", so the rate of its bits is the rate of the filter
    /// now (for a stable filter its current rate; [`CountingFilter::stable_fpr`] is the rate it
    /// settles at).
    pub fn stats(&self) -> Stats {
        let view = self.projection();
        let mut s = Stats::new(*self.params(), self.store.keys, view.count_ones())
            .with_fpr_from_bits(view.fpr_from_bits());
        s.saturated = Some(self.saturated());
        s
    }

    /// The stable false-positive rate a stable filter settles at
    /// ([`math::stable_false_positive_rate`]); `None` for a counting filter.
    pub fn stable_fpr(&self) -> Option<f64> {
        let p = self.params();
        match p.kind {
            FilterKind::Stable {
                counter_bits,
                decrements,
            } => Some(math::stable_false_positive_rate(
                p.layout,
                p.blocks,
                counter_bits.max(),
                decrements,
            )),
            _ => None,
        }
    }

    /// This counting filter folded into `blocks` blocks, which must divide its block count:
    /// counters at the same place in the folded blocks add, stuck at the maximum, so the result
    /// is byte for byte the counting filter of the same keys built at `blocks` blocks (see
    /// [`crate::fold`]). A stable filter does not fold ([`MergeError::Unfoldable`]).
    pub fn folded(&self, blocks: u32) -> Result<CountingFilter, MergeError> {
        Ok(CountingFilter {
            store: self.store.folded(blocks)?,
        })
    }

    /// Merges `other` into this counting filter: each counter the sum of both, stuck at its
    /// maximum (the filter of both multisets of keys, as inserting every key of both gives);
    /// the same parameters are needed. A stable filter does not merge
    /// ([`MergeError::Unmergeable`]): its random decrements have no sum.
    pub fn union_with(&mut self, other: &CountingFilter) -> Result<(), MergeError> {
        self.store.union_with(&other.store)
    }

    /// [`CountingFilter::union_with`] of filters whose block counts divide one another, each
    /// folded to the smaller block count first ([`CountingFilter::folded`]).
    pub fn union_folding(&self, other: &CountingFilter) -> Result<CountingFilter, MergeError> {
        crate::fold::union_folding(self, other)
    }

    /// The whole file: header, kind metadata, image, counters.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        self.file_parts().to_bytes()
    }

    /// Reads a whole counting or stable filter file; any fault is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<CountingFilter, FormatError> {
        let (header, payload) =
            format::parse_kind(file, "counting or stable", |k| k.counter_bits().is_some())?;
        Ok(CountingFilter {
            store: CellStore::from_payload(&header, payload)?,
        })
    }
}
