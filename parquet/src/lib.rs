//! `bloomlanes-parquet`: the Parquet split-block Bloom filter form for bloomlanes. Importing
//! the bloom filter of a column chunk straight from a `.parquet` file (written by Spark, DuckDB,
//! Arrow …) or a bare Parquet bloom filter (Thrift header + bitset); exporting a filter in that
//! form; probing which files and row groups of a dataset may hold given keys; sizing filters
//! that every reader accepts; and, with the feature `decode`, adding filters to `.parquet`
//! files.
//!
//! Parquet hashes a value's plain encoding with XXH64 seed 0: a `BYTE_ARRAY` value hashes like a
//! text line with the same bytes, an `INT64` value like a u64 key. An imported filter is layout
//! 8x32 with seed 0, so a query answers exactly as the Parquet reader would.
//!
//! Reading the bloom filters of `.parquet` files needs only the core and this crate's own
//! bounded footer reader ([`footer`] over [`thrift`], [`ParquetFile`]): every offset and length
//! is checked against the file before anything is read, so a corrupt file is an [`Error`]
//! naming the row group, column and field, never a panic or an allocation larger than the file.
//! An imported filter records the column's key type (INT32 → `i32`, DATE → `date`, TIMESTAMP →
//! its unit, FLOAT → `f32`, BYTE_ARRAY → `bytes`, FIXED_LEN_BYTE_ARRAY(n) → `fixed:n` …).
//! [`probe`] opens a dataset's column for probing with any engine the caller brings;
//! [`sizing`] sizes filters within what Arrow C++, Velox, ClickHouse and parquet-mr read;
//! `add_filters` (feature `decode`) decodes column values with the `parquet` crate and lays out
//! the rewritten file, which the caller writes where and how it likes.
//!
//! It depends on `bloomlanes-core` alone (and on the `parquet` crate with `decode`).
//!
//! ```
//! use bloomlanes_core::{Filter, Layout, Params};
//! let mut f = Filter::new(Params::new(Layout::L8x32, 4));
//! f.insert(&42u64);
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("f.bin");
//! std::fs::write(&path, bloomlanes_parquet::export(&f)?)?;
//! let back = bloomlanes_parquet::import(&path, &Default::default())?;
//! assert!(back.filter.contains(&42u64));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::fs::File;
use std::path::Path;

use bloomlanes_core::{Filter, KeyType};

#[cfg(feature = "decode")]
pub mod add_filters;
pub mod error;
mod file;
pub mod footer;
pub mod probe;
pub mod sizing;
pub mod thrift;

pub use error::{Error, Result};
pub use file::{with_key_type, ParquetFile};

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
    /// The filter (layout 8x32, XXH64 seed 0; the column's key type when read from a
    /// `.parquet` file).
    pub filter: Filter,
    /// The column's key type ([`KeyType::Any`] for a bare filter).
    pub key_type: KeyType,
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
    let (filter, used) = Filter::from_parquet(&bytes).map_err(|source| Error::Import {
        path: path.to_path_buf(),
        column: None,
        source,
    })?;
    if used != bytes.len() {
        return Err(Error::input(
            path,
            Some(used as u64),
            format!(
                "{} unexpected bytes after the Parquet bloom filter",
                bytes.len() - used
            ),
        ));
    }
    Ok(Imported {
        filter,
        key_type: KeyType::Any,
        column: None,
        physical_type: None,
        row_group: None,
    })
}

fn import_parquet_file(path: &Path, sel: &ColumnSelector) -> Result<Imported> {
    let mut pf = ParquetFile::open(path)?;
    let groups = pf.footer().row_groups.len();
    if sel.row_group >= groups {
        return Err(Error::usage(format!(
            "--row-group {}: {} has {groups} row group(s) (numbered from 0)",
            sel.row_group,
            path.display()
        )));
    }
    let column = match &sel.column {
        Some(c) => pf.column(c)?,
        None => (0..pf.footer().columns.len())
            .find(|&i| {
                pf.footer().row_groups[sel.row_group].chunks[i]
                    .bloom
                    .is_some()
            })
            .ok_or_else(|| {
                Error::input(
                    path,
                    None,
                    format!(
                        "no column chunk in row group {} has a bloom filter (columns: {})",
                        sel.row_group,
                        pf.footer().column_names()
                    ),
                )
            })?,
    };
    let leaf = pf.leaf(column).clone();
    let filter = pf.bloom_filter(sel.row_group, column)?.ok_or_else(|| {
        Error::input(
            path,
            None,
            format!(
                "column {:?} has no bloom filter in row group {}",
                leaf.path, sel.row_group
            ),
        )
    })?;
    Ok(Imported {
        key_type: filter.params().key_type,
        filter,
        column: Some(leaf.path),
        physical_type: Some(leaf.physical.to_string()),
        row_group: Some(sel.row_group),
    })
}

/// The bloom filters of every row group of column `column` of the `.parquet` file `path`: one
/// entry per row group, `None` where the chunk has no filter.
pub fn import_row_groups(
    path: &Path,
    column: &str,
) -> Result<(footer::LeafColumn, Vec<Option<Filter>>)> {
    let mut pf = ParquetFile::open(path)?;
    let c = pf.column(column)?;
    let leaf = pf.leaf(c).clone();
    let filters = (0..pf.footer().row_groups.len())
        .map(|g| pf.bloom_filter(g, c))
        .collect::<Result<Vec<_>>>()?;
    Ok((leaf, filters))
}

/// The Parquet form (Thrift header + bitset) of `filter`; only 8x32 filters with seed 0 have one.
pub fn export(filter: &Filter) -> Result<Vec<u8>> {
    filter.to_parquet().map_err(|source| Error::Export {
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
        assert!(matches!(e, Error::Import { column: None, .. }), "{e}");
    }

    #[test]
    fn a_parquet_file_with_a_bad_footer_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        std::fs::write(&path, b"PAR1....PAR1").unwrap();
        let e = import(&path, &ColumnSelector::default()).unwrap_err();
        assert!(e.to_string().contains("t.parquet"), "{e}");
        assert!(matches!(e, Error::Input { .. }), "{e}");
    }
}
