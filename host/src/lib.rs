//! `bloomlanes-host`: the host runtime of bloomlanes and the library under the `bloomlanes`
//! command-line tool.
//!
//! - [`input`] reads keys (text lines, decimal integers, a CSV column, binary u64, packet
//!   5-tuples from pcap/pcapng via [`pcap`]) into a [`KeySet`].
//! - [`FilterBuilder`] sizes and fills a filter with a chosen [`BackendChoice`].
//! - [`FilterFile`] opens filter files memory-mapped and checked; [`store`] writes them atomically.
//! - [`ops`] queries, inspects ([`ops::stats`]) and merges; [`parquet_io`] imports and exports
//!   the Parquet split-block form; [`verify`] cross-checks backends; [`mod@bench`] is the demo.
//!
//! ```
//! use bloomlanes_host::{BackendChoice, FilterBuilder, KeySet};
//! let keys = KeySet::from_strings(["alice", "bob"]);
//! let built = FilterBuilder::new().fpp(0.001).backend(BackendChoice::Scalar).build(&keys).unwrap();
//! assert!(built.filter.contains(b"alice"));
//! ```
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod backend;
pub mod bench;
pub mod error;
pub mod input;
pub mod ops;
pub mod parquet_io;
pub mod pcap;
pub mod store;
pub mod verify;

pub use backend::{Backend, BackendChoice, Querier};
pub use error::{Error, Location, Result};
pub use input::{InputFormat, InputOptions, KeySet};
pub use ops::{FilterBuilder, MergeOp};
pub use store::FilterFile;

pub use bloomlanes_core as core;
