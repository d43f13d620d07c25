//! A `.parquet` file opened for its bloom filters: the footer read and checked by
//! [`Footer::parse`] (every offset and length inside the file), the filters read at the checked
//! locations and parsed by the core. No third-party parser sees the file on this path, so a
//! corrupt footer (a negative `bloom_filter_length`, offsets past the end, lying list counts) is
//! an error naming the file and the field, never a panic or an allocation larger than the file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use bloomlanes_core::{Filter, KeyType, ParquetError};

use crate::error::{Error, Result};
use crate::footer::{footer_range, Footer, LeafColumn};

/// The longest bloom-filter header read when the writer did not record the filter's length.
const MAX_BLOOM_HEADER: u64 = 256;

/// A `.parquet` file with its checked footer.
#[derive(Debug)]
pub struct ParquetFile {
    path: PathBuf,
    file: File,
    footer: Footer,
}

fn read_at(file: &mut File, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| Error::input(path, None, "too large for memory"))?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(len)
        .map_err(|_| Error::input(path, Some(offset), format!("cannot allocate {len} bytes")))?;
    buf.resize(len, 0);
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut buf))
        .map_err(|e| Error::io(path, "read", e))?;
    Ok(buf)
}

impl ParquetFile {
    /// Opens `path` and reads and checks its footer.
    pub fn open(path: &Path) -> Result<ParquetFile> {
        if path.is_dir() {
            return Err(Error::input(
                path,
                None,
                "is a directory, not a Parquet file",
            ));
        }
        let mut file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let file_len = file
            .metadata()
            .map_err(|e| Error::io(path, "read", e))?
            .len();
        let bad = |e: crate::footer::FooterError| {
            Error::input_with(
                path,
                Some(e.offset),
                format!("not a readable Parquet file: {}", e.what),
                e,
            )
        };
        let tail: [u8; 8] = if file_len >= 8 {
            read_at(&mut file, path, file_len - 8, 8)?
                .try_into()
                .expect("8 bytes")
        } else {
            [0; 8]
        };
        let range = footer_range(file_len, &tail).map_err(bad)?;
        let head = read_at(&mut file, path, 0, 4)?;
        if head != b"PAR1" {
            return Err(Error::input(
                path,
                Some(0),
                "not a Parquet file: no PAR1 magic at the start",
            ));
        }
        let bytes = read_at(&mut file, path, range.start, range.end - range.start)?;
        let footer = Footer::parse(bytes, range.start, file_len).map_err(bad)?;
        Ok(ParquetFile {
            path: path.to_path_buf(),
            file,
            footer,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The checked footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The leaf column `name` (a path, a unique leaf name or an index), or a usage error listing
    /// the columns.
    pub fn column(&self, name: &str) -> Result<usize> {
        self.footer.find_column(name).ok_or_else(|| {
            Error::usage(format!(
                "--column {name:?}: {} has no such column (columns: {})",
                self.path.display(),
                self.footer.column_names()
            ))
        })
    }

    /// Leaf column `i`.
    pub fn leaf(&self, i: usize) -> &LeafColumn {
        &self.footer.columns[i]
    }

    /// The bloom filter of column `column` in row group `group` (`None` when the chunk has
    /// none), as a filter whose key type is the column's.
    pub fn bloom_filter(&mut self, group: usize, column: usize) -> Result<Option<Filter>> {
        let chunk = &self.footer.row_groups[group].chunks[column];
        let Some(loc) = chunk.bloom else {
            return Ok(None);
        };
        let data_end = self.footer.start;
        let name = self.footer.columns[column].path.clone();
        let bad = |source: ParquetError| Error::Import {
            path: self.path.clone(),
            column: Some(format!(
                "{name}, row group {group}, byte offset {}",
                loc.offset
            )),
            source,
        };
        let len = match loc.length {
            Some(l) => l,
            None => {
                let head_len = MAX_BLOOM_HEADER.min(data_end - loc.offset);
                let head = read_at(&mut self.file, &self.path, loc.offset, head_len)?;
                match bloomlanes_core::parquet::parse(&head) {
                    Ok((_, used)) => used as u64,
                    Err(ParquetError::ShortBitset { expected, found }) => {
                        let header = head_len - found;
                        if expected > data_end - loc.offset - header {
                            return Err(bad(ParquetError::ShortBitset {
                                expected,
                                found: data_end - loc.offset - header,
                            }));
                        }
                        header + expected
                    }
                    Err(e) => return Err(bad(e)),
                }
            }
        };
        let bytes = read_at(&mut self.file, &self.path, loc.offset, len)?;
        let (filter, _) = Filter::from_parquet(&bytes).map_err(bad)?;
        let key_type = self.footer.columns[column].key_type.unwrap_or(KeyType::Any);
        Ok(Some(with_key_type(filter, key_type)))
    }
}

/// `filter` with its key type recorded.
pub fn with_key_type(filter: Filter, key_type: KeyType) -> Filter {
    let header = filter.header();
    let mut h = header;
    h.params = header.params.with_key_type(key_type);
    Filter::from_image(&filter.to_image(), h).expect("same shape")
}
