//! The bloom filter of a column chunk of a `.parquet` file, read with the `parquet` crate.

use std::fs::File;
use std::path::Path;

use bloomlanes_core::Filter;
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::{ReadOptionsBuilder, SerializedFileReader};

use super::{ColumnSelector, Imported};
use crate::error::{Error, Result};

/// Imports the bloom filter of the column chunk chosen by `sel` from the `.parquet` file `path`.
pub(super) fn import(path: &Path, sel: &ColumnSelector) -> Result<Imported> {
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let props = ReaderProperties::builder()
        .set_read_bloom_filter(true)
        .build();
    let options = ReadOptionsBuilder::new()
        .with_reader_properties(props)
        .build();
    let bad = |source: parquet::errors::ParquetError| Error::ParquetFile {
        path: path.to_path_buf(),
        source,
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
    let (filter, _) = Filter::from_parquet(&bytes).map_err(|source| Error::ParquetImport {
        path: path.to_path_buf(),
        column: Some(names[index].clone()),
        source,
    })?;
    Ok(Imported {
        filter,
        column: Some(names[index].clone()),
        physical_type: Some(meta.column(index).column_type().to_string()),
        row_group: Some(sel.row_group),
    })
}
