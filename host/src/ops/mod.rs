//! The operations on filter files that the command line exposes, one file each: [`query`]
//! (probe keys) and [`merge`] (union, intersection). Statistics are [`FilterFile::stats`]
//! (the core's [`Stats`](bloomlanes_core::Stats)); building is [`FilterBuilder`].
//!
//! A new operation (classify, dedup, delete …) is a new file here, re-exported below.
//!
//! [`FilterFile::stats`]: crate::FilterFile::stats
//! [`FilterBuilder`]: crate::FilterBuilder

mod merge;
mod query;

pub use merge::{merge, MergeOp};
pub use query::{
    apply_float_probes, check_hashable, check_key_type, key_type_note, query, query_with_progress,
    QueryResult,
};
