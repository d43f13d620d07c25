//! Parquet bloom filters: the `bloomlanes-parquet` crate under the paths this library has always
//! had (`bloomlanes_host::parquet_io::import`, `footer`, [`ParquetFile`] …), and the glue that
//! needs this library: probing a dataset's row groups on a chosen backend
//! ([`probe::ProbeDataset`]) and writing filters into `.parquet` files atomically
//! ([`add_filters`], feature `parquet`).
//!
//! An imported filter is layout 8x32 with seed 0 and records its column's key type, so
//! `bloomlanes query` answers exactly as the Parquet reader would; footers are read by the
//! crate's own bounded reader (see its documentation).

pub use bloomlanes_parquet::{
    export, footer, import, import_row_groups, is_parquet_file, sizing, thrift, with_key_type,
    ColumnSelector, Imported, ParquetFile,
};

#[cfg(feature = "parquet")]
pub mod add_filters;
pub mod probe;
