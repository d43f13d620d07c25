//! `bloomlanes-core`: the single definition of the bloomlanes filter.
//!
//! A filter is `z` blocks; a block is `L` lanes of `W`-bit words (see [`Layout`]); a key with
//! 64-bit hash `h` selects block `((h >> 32) × z) >> 32` and sets bit
//! `((lo32(h) × SALTS[i]) mod 2^32) >> (32 − log2 W)` in every lane `i`. Layout `8x32` is the
//! Parquet split-block Bloom filter, bit for bit. The SIMD, CUDA and Verilog backends all follow
//! this crate; `docs/FORMAT.md` is the written specification and `golden/vectors.txt` the fixtures.
//!
//! A filter's identity (layout, block count, seed, hash) is one [`Params`] value that travels with
//! every view ([`FilterRef`], [`FilterMut`]), with the owning [`Filter`] and with the file header;
//! keys are anything that implements [`Key`] (strings, byte strings, integers).
//!
//! ```
//! # #[cfg(feature = "alloc")] {
//! use bloomlanes_core::{Filter, Layout, Params};
//! let mut f = Filter::new(Params::new(Layout::L8x32, 64));
//! f.insert("alice");
//! f.insert(&42u64);
//! assert!(f.contains("alice") && f.contains(&42u64));
//! # }
//! ```
//!
//! Features: `alloc` adds the owning [`Filter`] and [`Bitmap`]; `std` (default) implies `alloc`.
//! Without them the crate needs no allocator: the [`mod@reference`] path works over borrowed
//! words.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod batch;
pub mod cell;
pub mod counting;
pub mod format;
pub mod key;
pub mod key_type;
pub mod kind;
pub mod kind_meta;
pub mod layout;
pub mod math;
pub mod params;
pub mod parquet;
pub mod reference;
pub mod retrieval;
pub mod spatial;
pub mod stats;
pub mod window;
pub mod xxh64;

#[cfg(feature = "alloc")]
mod any_filter;
#[cfg(feature = "alloc")]
mod bitmap;
#[cfg(feature = "alloc")]
mod cell_store;
#[cfg(feature = "alloc")]
mod counting_filter;
#[cfg(feature = "alloc")]
mod filter;
#[cfg(feature = "alloc")]
pub mod golden;
#[cfg(feature = "alloc")]
mod scalable_filter;
#[cfg(feature = "alloc")]
mod spatial_filter;
#[cfg(feature = "alloc")]
mod storage;
#[cfg(feature = "alloc")]
mod window_filter;

#[cfg(feature = "alloc")]
pub use any_filter::AnyFilter;
pub use batch::{BatchError, Keys, Records, Strings};
#[cfg(feature = "alloc")]
pub use bitmap::Bitmap;
pub use cell::{CellBits, CellReduce, CellUpdate, CellsMut};
pub use counting::{CountingMut, RemoveError};
#[cfg(feature = "alloc")]
pub use counting_filter::CountingFilter;
#[cfg(feature = "alloc")]
pub use filter::Filter;
pub use format::{FormatError, HashId, Header};
pub use key::Key;
pub use key_type::{KeyMatch, KeyType, Physical};
pub use kind::{CounterBits, FilterKind, WindowUnit};
pub use layout::{
    block_index, block_mask, lane_bit, lane_bits, Layout, UnknownLayout, MAX_BLOCKS, SALTS,
};
pub use math::SizingError;
pub use params::{MergeError, Params, Sizing};
pub use parquet::ParquetError;
pub use reference::{FilterMut, FilterRef, ShapeError, Word};
#[cfg(feature = "alloc")]
pub use scalable_filter::ScalableFilter;
#[cfg(feature = "alloc")]
pub use spatial_filter::SpatialFilter;
pub use stats::Stats;
pub use window::{WindowMut, WindowState};
#[cfg(feature = "alloc")]
pub use window_filter::WindowFilter;
pub use xxh64::{xxh64, xxh64_u64};
