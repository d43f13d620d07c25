//! The operations on filter files that the command line exposes, one file each: [`query`]
//! (probe keys in memory), [`stream`] (build and query from streamed inputs), [`mod@classify`]
//! (per-packet verdicts) and [`merge`] (union, intersection). Statistics are [`FilterFile::stats`]
//! (the core's [`Stats`](bloomlanes_core::Stats)); building is [`FilterBuilder`].
//!
//! A new operation (classify, dedup, delete …) is a new file here, re-exported below.
//!
//! [`FilterFile::stats`]: crate::FilterFile::stats
//! [`FilterBuilder`]: crate::FilterBuilder

mod classifier;
pub mod classify;
mod label_counts;
pub mod label_writers;
mod merge;
mod packet_verdicts;
mod query;
pub mod stream;
mod stream_ordered;
mod stream_query;

pub use classify::{classify, Select};
pub use merge::{merge, merge_cells, Fold, MergeOp, Merged};
pub use query::{
    apply_float_probes, apply_float_probes_any, check_hashable, check_key_type, key_type_note,
    query, query_with_progress, QueryResult,
};
pub use stream::{
    build_stream, count_distinct, query_stream, stream_hashes, CapacitySource, Listing,
};
