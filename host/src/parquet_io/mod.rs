//! The Parquet split-block Bloom filter form: importing the bloom filter of a column chunk
//! straight from a `.parquet` file (written by Spark, DuckDB, Arrow …), or a bare Parquet bloom
//! filter (Thrift header + bitset); and exporting a filter in that form.
//!
//! Parquet hashes a value's plain encoding with XXH64 seed 0: a `BYTE_ARRAY` value hashes like a
//! text line with the same bytes, an `INT64` value like a u64 key. An imported filter is layout
//! 8x32 with seed 0, so `bloomlanes query` answers exactly as the Parquet reader would.
//!
//! The bare form needs only the core; reading `.parquet` files needs the `parquet` feature (the
//! `parquet` crate), and without it such a file is an [`Error::Unsupported`].

use std::fs::File;
use std::path::Path;

use bloomlanes_core::Filter;

use crate::error::{Error, Location, Result};

#[cfg(feature = "parquet")]
mod file;

/// Which column chunk's bloom filter to import.
#[derive(Clone, Debug, Default)]
pub struct ColumnSelector {
    /// A column path (`a.b.c` or the leaf name) or 0-based leaf column index; `None`: the first
    /// column whose chunk has a bloom filter.
    pub column: Option<String>,
    /// The 0-based row group.
    pub row_group: usize,
}

/// An imported filter and where it came from.
#[derive(Debug)]
pub struct Imported {
    /// The filter (layout 8x32, XXH64 seed 0).
    pub filter: Filter,
    /// The column path, when read from a `.parquet` file.
    pub column: Option<String>,
    /// The column's Parquet physical type, when read from a `.parquet` file.
    pub physical_type: Option<String>,
    /// The row group, when read from a `.parquet` file.
    pub row_group: Option<usize>,
}

/// Whether `bytes` look like a Parquet file (`PAR1` at both ends).
pub fn is_parquet_file(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1")
}

/// Imports a bloom filter from `path`: a `.parquet` file (the column chunk chosen by `sel`) or a
/// bare Parquet bloom filter.
pub fn import(path: &Path, sel: &ColumnSelector) -> Result<Imported> {
    let head = {
        use std::io::Read;
        let mut f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let mut h = [0u8; 4];
        let n = f.read(&mut h).map_err(|e| Error::io(path, "read", e))?;
        h[..n].to_vec()
    };
    if head == b"PAR1" {
        return import_parquet_file(path, sel);
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, "read", e))?;
    let (filter, used) = Filter::from_parquet(&bytes).map_err(|source| Error::ParquetImport {
        path: path.to_path_buf(),
        column: None,
        source,
    })?;
    if used != bytes.len() {
        return Err(Error::input(
            path,
            Some(Location::Byte(used as u64)),
            format!(
                "{} unexpected bytes after the Parquet bloom filter",
                bytes.len() - used
            ),
        ));
    }
    Ok(Imported {
        filter,
        column: None,
        physical_type: None,
        row_group: None,
    })
}

#[cfg(feature = "parquet")]
fn import_parquet_file(path: &Path, sel: &ColumnSelector) -> Result<Imported> {
    file::import(path, sel)
}

#[cfg(not(feature = "parquet"))]
fn import_parquet_file(_: &Path, _: &ColumnSelector) -> Result<Imported> {
    Err(Error::Unsupported {
        what: "reading .parquet files",
        feature: "parquet",
    })
}

/// The Parquet form (Thrift header + bitset) of `filter`; only 8x32 filters with seed 0 have one.
pub fn export(filter: &Filter) -> Result<Vec<u8>> {
    filter.to_parquet().map_err(|source| Error::ParquetExport {
        params: *filter.params(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use bloomlanes_core::{Layout, Params, ParquetError};

    use super::*;

    #[test]
    fn bare_form_round_trips_and_refuses_other_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Filter::new(Params::new(Layout::L8x32, 8));
        for k in 0..100u64 {
            f.insert(&k);
        }
        let path = dir.path().join("f.bin");
        std::fs::write(&path, export(&f).unwrap()).unwrap();
        let back = import(&path, &ColumnSelector::default()).unwrap();
        assert_eq!(back.filter.words(), f.words());
        assert_eq!(back.column, None);

        let wide = Filter::new(Params::new(Layout::L16x64, 8));
        let e = export(&wide).unwrap_err();
        assert!(e.to_string().contains("16x64"), "{e}");
        assert_eq!(
            e.source().and_then(|s| s.downcast_ref::<ParquetError>()),
            Some(&ParquetError::NotParquetLayout)
        );

        std::fs::write(&path, b"not a filter").unwrap();
        let e = import(&path, &ColumnSelector::default()).unwrap_err();
        assert!(
            matches!(e, Error::ParquetImport { column: None, .. }),
            "{e}"
        );
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn parquet_files_need_the_feature() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        std::fs::write(&path, b"PAR1....PAR1").unwrap();
        let e = import(&path, &ColumnSelector::default()).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Unsupported {
                    feature: "parquet",
                    ..
                }
            ),
            "{e}"
        );
    }
}
