//! Which files and row groups of a Parquet dataset may hold given keys: every row group's bloom
//! filter of one column probed with a batch of keys by the caller's engine
//! ([`Dataset::probe_with`]: `bloomlanes-host` brings its SIMD or GPU backends and the float
//! ±0 / NaN rule), one filter in memory at a time; row groups without a filter are always
//! candidates.

use std::path::{Path, PathBuf};

use bloomlanes_core::{Bitmap, Filter, KeyMatch, KeyType};

use crate::error::{Error, Result};
use crate::file::ParquetFile;

/// The `.parquet` files of `paths`: files as given, directories searched (recursively, in name
/// order) for `*.parquet`.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) -> Result<()> {
        if depth > 64 {
            return Err(Error::input(dir, None, "directories nested too deeply"));
        }
        let mut entries = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, "list", e))?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| Error::io(dir, "list", e))?;
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out, depth + 1)?;
            } else if p
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
            {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out, 0)?;
        } else {
            out.push(p.clone());
        }
    }
    if out.is_empty() {
        return Err(Error::usage("no .parquet files in the dataset given"));
    }
    Ok(out)
}

/// One column of a set of `.parquet` files, opened (footers checked) for probing.
#[derive(Debug)]
pub struct Dataset {
    files: Vec<(ParquetFile, usize)>,
    key_type: KeyType,
    column: String,
}

/// One row group of a dataset and the keys that may be in it.
#[derive(Debug)]
pub struct GroupAnswer {
    /// Index of the file in [`Dataset::files`].
    pub file: usize,
    /// The row group.
    pub row_group: usize,
    /// Whether the chunk has a bloom filter (without one, every key is a candidate).
    pub has_filter: bool,
    /// Bit `i`: key `i` may be in this row group.
    pub answers: Bitmap,
}

/// The answers of a probe of a dataset ([`Dataset::probe_with`]), with the engine that gave
/// them.
#[derive(Debug)]
pub struct ProbeResult {
    /// One entry per row group of every file, in file then row-group order.
    pub groups: Vec<GroupAnswer>,
    /// The backend that answered.
    pub backend: String,
    /// How the keys' type relates to the column's.
    pub key_match: KeyMatch,
}

impl Dataset {
    /// Opens every file and finds `column` in each; the column must have one key type across
    /// the files.
    pub fn open(paths: &[PathBuf], column: &str) -> Result<Dataset> {
        let mut files = Vec::with_capacity(paths.len());
        let mut key_type: Option<(KeyType, PathBuf)> = None;
        for p in paths {
            let f = ParquetFile::open(p)?;
            let c = f.column(column)?;
            let leaf = f.leaf(c);
            let t = leaf.key_type.ok_or_else(|| {
                Error::input(
                    p,
                    None,
                    format!(
                        "column {:?} is {}, which Parquet bloom filters do not hold",
                        leaf.path, leaf.physical
                    ),
                )
            })?;
            match &key_type {
                Some((k, first)) if *k != t => {
                    return Err(Error::input(
                        p,
                        None,
                        format!(
                            "column {:?} is {t} here but {k} in {}: probe files of one type at a \
                             time",
                            leaf.path,
                            first.display()
                        ),
                    ))
                }
                Some(_) => {}
                None => key_type = Some((t, p.clone())),
            }
            files.push((f, c));
        }
        let (key_type, _) = key_type.ok_or_else(|| Error::usage("no .parquet files given"))?;
        Ok(Dataset {
            files,
            key_type,
            column: column.to_string(),
        })
    }

    /// The column's key type (what text keys are parsed as).
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// The column asked for.
    pub fn column(&self) -> &str {
        &self.column
    }

    /// The files, in order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(f, _)| f.path())
    }

    /// Number of row groups in all files.
    pub fn row_groups(&self) -> usize {
        self.files
            .iter()
            .map(|(f, _)| f.footer().row_groups.len())
            .sum()
    }

    /// The first file (the one a key-type mismatch is reported against).
    pub fn first_file(&self) -> &Path {
        self.files[0].0.path()
    }

    /// Probes `keys` keys against every row group's filter (one filter in memory at a time):
    /// `probe` answers them for one filter (a bit per key); a row group without a filter has
    /// every key as a candidate. The answers come in file then row-group order.
    pub fn probe_with<E: From<Error>>(
        &mut self,
        keys: usize,
        probe: &mut dyn FnMut(&Filter) -> Result<Bitmap, E>,
    ) -> Result<Vec<GroupAnswer>, E> {
        let mut groups = Vec::with_capacity(self.row_groups());
        for (i, (f, c)) in self.files.iter_mut().enumerate() {
            for g in 0..f.footer().row_groups.len() {
                let filter = f.bloom_filter(g, *c)?;
                groups.push(GroupAnswer {
                    file: i,
                    row_group: g,
                    has_filter: filter.is_some(),
                    answers: match filter {
                        Some(filter) => probe(&filter)?,
                        None => Bitmap::from_bools(&vec![1u8; keys]),
                    },
                });
            }
        }
        Ok(groups)
    }
}
