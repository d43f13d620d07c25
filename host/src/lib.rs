//! `bloomlanes-host`: the host runtime of bloomlanes, and the library under the `bloomlanes`
//! command-line tool.
//!
//! - [`input`] reads keys (text lines, decimal integers, a CSV column, binary u64, packet
//!   5-tuples from pcap/pcapng) into a [`KeySet`] that records their [`KeyType`];
//!   [`key_text`] parses typed keys written as text (integers, floats, dates, timestamps,
//!   UUIDs).
//! - [`FilterBuilder`] sizes and fills a filter with a chosen [`BackendChoice`]; [`bulk`] is the
//!   batch loop under it, with a [`Progress`] hook that costs nothing unused.
//! - [`FilterFile`] opens filter files memory-mapped and checked; [`store`] writes them
//!   atomically, through [`outfile`] (unnamed temporary files, `-` for standard output).
//! - [`ops`] queries (answers as a [`Bitmap`]) and merges; [`FilterFile::stats`] inspects;
//!   [`parquet_io`] imports and exports the Parquet split-block form, reads the bloom filters of
//!   `.parquet` files and probes datasets, and writes filters into files; [`verify`] cross-checks
//!   backends; `hdl_io` (feature `hdl`) exports Verilog.
//! - [`kinds`] sizes and fills filters of every kind (counting, stable, sliding window,
//!   scalable, static; the core's [`AnyFilter`]), deletes from counting filters and runs the
//!   streaming duplicate test; [`load_any`] and [`save_any`] read and write their files.
//! - [`backend`] holds the engines: scalar and SIMD always, the GPU with the `gpu` feature.
//!
//! Single keys go through the core's [`Key`] trait (strings, byte strings, integers):
//! [`Filter::insert`], [`Filter::contains`], [`FilterFile::contains`].
//!
//! ```
//! use bloomlanes_host::{BackendChoice, FilterBuilder, KeySet};
//! let keys = KeySet::from_strings(["alice", "bob"]);
//! let built = FilterBuilder::new().fpp(0.001).backend(BackendChoice::Scalar).build(&keys)?;
//! assert!(built.filter.contains("alice"));
//! # Ok::<(), bloomlanes_host::Error>(())
//! ```
//!
//! Features (all on by default): `cli` (the `bloomlanes` binary), `gpu` (the CUDA backend),
//! `hdl` (Verilog export and RTL simulation), `parquet` (writing filters into `.parquet` files;
//! reading them needs no feature). With
//! `default-features = false` the library needs neither a command-line parser nor CUDA, HDL or
//! Parquet-reader crates.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod backend;
pub mod builder;
pub mod bulk;
#[cfg(target_os = "linux")]
pub mod capture;
pub mod error;
#[cfg(feature = "hdl")]
pub mod hdl_io;
pub mod input;
pub mod kinds;
pub mod ops;
pub mod outfile;
pub mod parquet_io;
pub mod sample;
pub mod store;
pub mod verify;

/// The HyperLogLog sketch that sizes filters from a first pass over their inputs (from
/// `bloomlanes-input`).
pub use bloomlanes_input::hll;
/// Typed keys written as text (from `bloomlanes-input`).
pub use bloomlanes_input::key_text;

pub use backend::{Backend, BackendChoice, Querier};
pub use builder::{Built, FilterBuilder};
pub use bulk::{Progress, Stage};
pub use error::{Error, Location, Result};
pub use input::{InputFormat, InputOptions, KeySet};
pub use kinds::KindSpec;
pub use ops::{merge, query, MergeOp, QueryResult};
pub use store::{load_any, load_filter, save_any, save_filter, FilterFile};

/// The core crate, under its own name (so that `core` keeps meaning the language's core).
pub use bloomlanes_core;
pub use bloomlanes_core::{
    AnyFilter, Bitmap, Filter, FilterRef, HashId, Header, Key, KeyMatch, KeyType, Keys, Layout,
    Params, Sizing, Stats,
};
