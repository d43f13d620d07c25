//! Owning counting and stable filters (behind `alloc`): the projection image, the counters, the
//! file format.

use alloc::vec::Vec;

use crate::counting::{self, counter_words, CountingMut, RemoveError};
use crate::filter::Filter;
use crate::format::{self, FormatError, Header, HEADER_LEN};
use crate::key::Key;
use crate::kind::{CounterBits, FilterKind};
use crate::kind_meta::{self, pad64, META_LEN};
use crate::math;
use crate::params::Params;
use crate::reference::FilterRef;
use crate::stats::Stats;
use crate::storage::Words;

/// A counting filter (deletions) or a stable filter (a stream filter that forgets old keys),
/// which share their storage: the projection image and one counter per image bit.
#[derive(Clone)]
pub struct CountingFilter {
    params: Params,
    keys: Option<u64>,
    image: Words,
    counters: Words,
}

impl core::fmt::Debug for CountingFilter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CountingFilter")
            .field("params", &self.params)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl PartialEq for CountingFilter {
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params
            && self.keys == other.keys
            && self.image_words() == other.image_words()
            && self.counter_words() == other.counter_words()
    }
}

impl CountingFilter {
    /// An empty counting or stable filter with these parameters, or `None` if `params.kind` is
    /// neither.
    pub fn new(params: Params) -> Option<CountingFilter> {
        let bits = params.kind.counter_bits()?;
        let params = Params {
            blocks: params.blocks.max(1),
            ..params
        };
        Some(CountingFilter {
            params,
            keys: Some(0),
            image: Words::zeroed(params.u32_len()),
            counters: Words::zeroed(counter_words(&params, bits)),
        })
    }

    /// An empty counting filter with `params`' shape and `bits`-bit counters.
    pub fn counting(params: Params, bits: CounterBits) -> CountingFilter {
        CountingFilter::new(params.with_kind(FilterKind::Counting { counter_bits: bits }))
            .expect("a counting kind")
    }

    /// An empty stable filter with `params`' shape, `bits`-bit counters and `decrements` cells
    /// decremented per insert (at least 1).
    pub fn stable(params: Params, bits: CounterBits, decrements: u32) -> CountingFilter {
        CountingFilter::new(params.with_kind(FilterKind::Stable {
            counter_bits: bits,
            decrements: decrements.max(1),
        }))
        .expect("a stable kind")
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The counter width.
    pub fn counter_bits(&self) -> CounterBits {
        self.params.kind.counter_bits().expect("a counting kind")
    }

    /// Keys inserted (minus keys deleted), if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }

    /// Records the key count (e.g. after a bulk operation by another backend), or forgets it.
    pub fn set_key_count(&mut self, keys: Option<u64>) {
        self.keys = keys;
    }

    /// The projection image's words (bit set iff its counter is positive).
    pub fn image_words(&self) -> &[u32] {
        self.image.as_slice()
    }

    /// The counters' words (see [`counting`] for their packing).
    pub fn counter_words(&self) -> &[u32] {
        self.counters.as_slice()
    }

    /// A mutable view, for the bulk backends (the key count is not updated).
    pub fn as_view_mut(&mut self) -> CountingMut<'_> {
        CountingMut::new(
            self.params,
            self.image.as_mut_slice(),
            self.counters.as_mut_slice(),
        )
        .expect("a CountingFilter has the shape of its parameters")
    }

    /// The projection as a static filter view (what every static lookup path takes).
    pub fn projection(&self) -> FilterRef<'_, u32> {
        FilterRef::new(self.params, self.image.as_slice()).expect("whole blocks")
    }

    /// The projection as an owned static filter: byte-identical to a static filter built from
    /// the keys currently present (exportable to the static format, Parquet and HDL banks).
    pub fn to_static(&self) -> Filter {
        let mut f = Filter::new(self.params.with_kind(FilterKind::Static));
        f.words_mut().copy_from_slice(self.image.as_slice());
        f.set_key_count(self.keys);
        f
    }

    /// Inserts a key by its hash: a counting insert, or a stable insert for a stable filter.
    pub fn insert_hash(&mut self, hash: u64) {
        match self.params.kind {
            FilterKind::Stable { decrements, .. } => {
                self.as_view_mut().stable_insert_hash(hash, decrements)
            }
            _ => self.as_view_mut().insert_hash(hash),
        }
        self.keys = self.keys.map(|k| k.saturating_add(1));
    }

    /// Inserts a key.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(self.params.hash_key(key));
    }

    /// Deletes a key by its hash (counting filters only): refused, changing nothing, unless all
    /// its counters are positive.
    pub fn remove_hash(&mut self, hash: u64) -> Result<(), RemoveError> {
        if !matches!(self.params.kind, FilterKind::Counting { .. }) {
            return Err(RemoveError::Unsupported);
        }
        self.as_view_mut().remove_hash(hash)?;
        self.keys = self.keys.map(|k| k.saturating_sub(1));
        Ok(())
    }

    /// Deletes a key (counting filters only); see [`CountingFilter::remove_hash`].
    pub fn remove<K: Key + ?Sized>(&mut self, key: &K) -> Result<(), RemoveError> {
        self.remove_hash(self.params.hash_key(key))
    }

    /// Whether a key may be present (all its counters positive).
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.projection().contains(key)
    }

    /// Whether the key with `hash` may be present.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.projection().contains_hash(hash)
    }

    /// Counters stuck at the maximum.
    pub fn saturated(&self) -> u64 {
        counting::saturated(self.counters.as_slice(), self.counter_bits())
    }

    /// Statistics of the projection, with the expected rate of this kind: for a stable filter
    /// the stable false-positive rate, for a counting filter that of a static filter with the
    /// present keys.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::new(self.params, self.keys, self.projection().count_ones());
        s.saturated = Some(self.saturated());
        if let FilterKind::Stable {
            counter_bits,
            decrements,
        } = self.params.kind
        {
            s.expected_fpr = math::stable_false_positive_rate(
                self.params.layout,
                self.params.blocks,
                counter_bits.max(),
                decrements,
            );
        }
        s
    }

    /// The whole file: header, kind metadata, image, counters.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(
            META_LEN + pad64(self.params.byte_len()) as usize + self.counters.as_slice().len() * 4,
        );
        payload.extend_from_slice(&kind_meta::encode_meta(self.params.kind, None));
        self.image.write_le(&mut payload, true);
        self.counters.write_le(&mut payload, true);
        let header = Header {
            params: self.params,
            keys: self.keys,
            meta_len: META_LEN as u64,
        };
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        out.extend_from_slice(&header.encode(&payload));
        out.extend_from_slice(&payload);
        out
    }

    /// Reads a whole counting or stable filter file; any fault is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<CountingFilter, FormatError> {
        let (header, payload) = format::parse(file)?;
        let p = header.params;
        let Some(bits) = p.kind.counter_bits() else {
            return Err(FormatError::WrongKind {
                expected: "counting or stable",
                found: p.kind.name(),
            });
        };
        let image_at = header.meta_len as usize;
        let image_len = p.byte_len() as usize;
        let counters_at = image_at + pad64(image_len as u64) as usize;
        let counters_len = counter_words(&p, bits) as usize * 4;
        Ok(CountingFilter {
            params: p,
            keys: header.keys,
            image: Words::from_le_bytes(&payload[image_at..image_at + image_len]),
            counters: Words::from_le_bytes(&payload[counters_at..counters_at + counters_len]),
        })
    }
}
