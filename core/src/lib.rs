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

/// `Display` (one fixed message per variant) and `Error` for an error enum without fields:
/// `messages!(ShapeError { Empty => "…", TooLong => "…" });`.
macro_rules! messages {
    ($ty:ident { $($variant:ident => $message:expr),* $(,)? }) => {
        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(match self {
                    $($ty::$variant => $message,)*
                })
            }
        }

        impl core::error::Error for $ty {}
    };
}

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

/// Declares items that need an allocator (the `alloc` feature): the owning filters, their files
/// and the golden vectors.
macro_rules! with_alloc {
    ($($item:item)*) => {$(
        #[cfg(feature = "alloc")]
        $item
    )*};
}

with_alloc! {
    mod any_filter;
    mod bitmap;
    mod byte_fault;
    mod cell_store;
    mod counting_filter;
    mod filter;
    pub mod fold;
    pub mod golden;
    mod scalable_filter;
    mod spatial_filter;
    mod storage;
    mod window_filter;
    pub mod write_file;
    pub use any_filter::AnyFilter;
    pub use bitmap::Bitmap;
    pub use byte_fault::ByteFault;
    pub use counting_filter::CountingFilter;
    pub use filter::Filter;
    pub use scalable_filter::ScalableFilter;
    pub use spatial_filter::{SpatialError, SpatialFilter, SpatialStats};
    pub use window_filter::WindowFilter;
    pub use write_file::{FileParts, WriteFile};
}

pub use batch::{BatchError, Keys, Records, Strings};
pub use cell::{CellBits, CellReduce, CellUpdate, CellsMut};
pub use counting::{CountingMut, RemoveError};
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
pub use stats::Stats;
pub use window::{WindowKind, WindowMut, WindowState};
pub use xxh64::{xxh64, xxh64_u64, Xxh64};
