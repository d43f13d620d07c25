//! A filter of any kind, as read from a file (behind `alloc`).

use alloc::vec::Vec;

use crate::counting_filter::CountingFilter;
use crate::filter::Filter;
use crate::format::{self, FormatError};
use crate::key::Key;
use crate::kind::FilterKind;
use crate::params::Params;
use crate::retrieval::RetrievalTable;
use crate::scalable_filter::ScalableFilter;
use crate::spatial_filter::SpatialFilter;
use crate::stats::Stats;
use crate::window_filter::WindowFilter;

/// A filter of any kind.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyFilter {
    /// A static split-block filter.
    Static(Filter),
    /// A counting or stable filter.
    Counting(CountingFilter),
    /// A sliding-window filter.
    Window(WindowFilter),
    /// A scalable filter.
    Scalable(ScalableFilter),
    /// A spatial filter (classes).
    Spatial(SpatialFilter),
    /// A retrieval table (its membership answer: the key passes the check bits).
    Retrieval(RetrievalTable),
}

impl AnyFilter {
    /// Reads a whole file of any kind; any fault is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<AnyFilter, FormatError> {
        let (header, _) = format::parse(file)?;
        Ok(match header.params.kind {
            FilterKind::Static => AnyFilter::Static(Filter::from_file_bytes(file)?),
            FilterKind::Counting { .. } | FilterKind::Stable { .. } => {
                AnyFilter::Counting(CountingFilter::from_file_bytes(file)?)
            }
            FilterKind::Window { .. } => AnyFilter::Window(WindowFilter::from_file_bytes(file)?),
            FilterKind::Scalable { .. } => {
                AnyFilter::Scalable(ScalableFilter::from_file_bytes(file)?)
            }
            FilterKind::Spatial { .. } => AnyFilter::Spatial(SpatialFilter::from_file_bytes(file)?),
            FilterKind::Retrieval { .. } => {
                AnyFilter::Retrieval(RetrievalTable::from_file_bytes(file)?)
            }
        })
    }

    /// The whole file.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        match self {
            AnyFilter::Static(f) => f.to_file_bytes(),
            AnyFilter::Counting(f) => f.to_file_bytes(),
            AnyFilter::Window(f) => f.to_file_bytes(),
            AnyFilter::Scalable(f) => f.to_file_bytes(),
            AnyFilter::Spatial(f) => f.to_file_bytes(),
            AnyFilter::Retrieval(f) => f.to_file_bytes(),
        }
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        match self {
            AnyFilter::Static(f) => f.params(),
            AnyFilter::Counting(f) => f.params(),
            AnyFilter::Window(f) => f.params(),
            AnyFilter::Scalable(f) => f.params(),
            AnyFilter::Spatial(f) => f.params(),
            AnyFilter::Retrieval(f) => f.params(),
        }
    }

    /// Whether the key with `hash` may be present.
    pub fn contains_hash(&self, hash: u64) -> bool {
        match self {
            AnyFilter::Static(f) => f.contains_hash(hash),
            AnyFilter::Counting(f) => f.contains_hash(hash),
            AnyFilter::Window(f) => f.contains_hash(hash),
            AnyFilter::Scalable(f) => f.contains_hash(hash),
            AnyFilter::Spatial(f) => f.contains_hash(hash),
            AnyFilter::Retrieval(f) => f.contains_hash(hash),
        }
    }

    /// Whether a key may be present.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params().hash_key(key))
    }

    /// The statistics of this kind.
    pub fn stats(&self) -> Stats {
        match self {
            AnyFilter::Static(f) => f.stats(),
            AnyFilter::Counting(f) => f.stats(),
            AnyFilter::Window(f) => f.stats(),
            AnyFilter::Scalable(f) => f.stats(),
            AnyFilter::Spatial(f) => f.stats(),
            AnyFilter::Retrieval(f) => f.stats(),
        }
    }
}
