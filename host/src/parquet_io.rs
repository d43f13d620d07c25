//! The Parquet split-block Bloom filter form: importing the bloom filter of a column chunk
//! straight from a `.parquet` file (written by Spark, DuckDB, Arrow …), or a bare Parquet bloom
//! filter (Thrift header + bitset); and exporting a filter in that form.
//!
//! Parquet hashes a value's plain encoding with XXH64 seed 0: a `BYTE_ARRAY` value hashes like a
//! text line with the same bytes, an `INT64` value like a u64 key. An imported filter is layout
//! 8x32 with seed 0, so `bloomlanes query` answers exactly as the Parquet reader would.

use std::fs::File;
use std::path::Path;

use bloomlanes_core::Filter;
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::{ReadOptionsBuilder, SerializedFileReader};

use crate::error::{Error, Location, Result};

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
        return import_from_file(path, sel);
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, "read", e))?;
    let (filter, used) = Filter::from_parquet(&bytes).map_err(|e| {
        Error::input(
            path,
            None,
            format!("neither a Parquet file nor a Parquet bloom filter: {e}"),
        )
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

fn import_from_file(path: &Path, sel: &ColumnSelector) -> Result<Imported> {
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let props = ReaderProperties::builder()
        .set_read_bloom_filter(true)
        .build();
    let options = ReadOptionsBuilder::new()
        .with_reader_properties(props)
        .build();
    let bad = |e: parquet::errors::ParquetError| {
        Error::input(path, None, format!("unreadable Parquet file: {e}"))
    };
    let reader = SerializedFileReader::new_with_options(file, options).map_err(bad)?;
    let groups = reader.metadata().num_row_groups();
    if sel.row_group >= groups {
        return Err(Error::usage(format!(
            "--row-group {}: {} has {groups} row group(s) (numbered from 0)",
            sel.row_group,
            path.display()
        )));
    }
    let rg = reader.get_row_group(sel.row_group).map_err(bad)?;
    let meta = rg.metadata();
    let names: Vec<String> = (0..meta.num_columns())
        .map(|i| meta.column(i).column_path().string())
        .collect();
    let index = match &sel.column {
        Some(c) => names
            .iter()
            .position(|n| n == c)
            .or_else(|| {
                let leaf: Vec<usize> = (0..names.len())
                    .filter(|&i| meta.column(i).column_descr().name() == c)
                    .collect();
                (leaf.len() == 1).then(|| leaf[0])
            })
            .or_else(|| c.parse::<usize>().ok().filter(|&i| i < names.len()))
            .ok_or_else(|| {
                Error::usage(format!(
                    "--column {c:?}: {} has no such column (columns: {})",
                    path.display(),
                    names.join(", ")
                ))
            })?,
        None => (0..names.len())
            .find(|&i| rg.get_column_bloom_filter(i).is_some())
            .ok_or_else(|| {
                Error::input(
                    path,
                    None,
                    format!(
                        "no column chunk in row group {} has a bloom filter (columns: {})",
                        sel.row_group,
                        names.join(", ")
                    ),
                )
            })?,
    };
    let sbbf = rg.get_column_bloom_filter(index).ok_or_else(|| {
        Error::input(
            path,
            None,
            format!(
                "column {:?} has no bloom filter in row group {}",
                names[index], sel.row_group
            ),
        )
    })?;
    let mut bytes = Vec::new();
    sbbf.write(&mut bytes).map_err(bad)?;
    let (filter, _) = Filter::from_parquet(&bytes).map_err(|e| {
        Error::input(
            path,
            None,
            format!(
                "the bloom filter of column {:?} is not a split-block filter this tool reads: {e}",
                names[index]
            ),
        )
    })?;
    Ok(Imported {
        filter,
        column: Some(names[index].clone()),
        physical_type: Some(meta.column(index).column_type().to_string()),
        row_group: Some(sel.row_group),
    })
}

/// The Parquet form (Thrift header + bitset) of `filter`; only 8x32 filters with seed 0 have one.
pub fn export(filter: &Filter) -> Result<Vec<u8>> {
    filter.to_parquet().map_err(|e| {
        Error::Failed(format!(
            "cannot export to Parquet: {e} (this filter is {} with seed {}; build with --layout 8x32 --seed 0)",
            filter.layout(),
            filter.seed()
        ))
    })
}
