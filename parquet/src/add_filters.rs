//! Writing split-block bloom filters into a `.parquet` file (feature `parquet`): the values of
//! the chosen columns are decoded with the `parquet` crate and hashed as the file's physical type
//! (INT32/FLOAT 4 bytes, INT64/DOUBLE 8, INT96 12, BYTE_ARRAY its bytes, FIXED_LEN_BYTE_ARRAY its
//! n bytes: as Arrow, parquet-mr and DuckDB hash them); every byte before the old footer is
//! copied unchanged, the filters are appended after it, and a new footer that differs from the
//! old one only in the chunks' `bloom_filter_offset` / `bloom_filter_length` ends the file.
//!
//! The footer is checked by this crate's own reader ([`ParquetFile::open`]) before the `parquet`
//! crate sees the file, so every offset and length it follows lies inside the file. The pages
//! themselves are decoded by the crate; as a last resort a panic inside it (a bug of the crate on
//! hostile page data) is caught with `catch_unwind` and reported as an error naming the file,
//! row group and column, so that one bad file cannot abort a batch.
//!
//! [`add_filters`] computes the filters and the new footer; [`Rewrite::write_to`] writes the
//! new file to any writer, so the caller decides how the output appears (`bloomlanes-host`
//! writes it atomically: a temporary file renamed into place).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use bloomlanes_core::{xxh64, Filter};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;

use crate::error::{Error, Result};
use crate::footer::{Footer, PhysicalType};
use crate::sizing;
use crate::ParquetFile;

/// What to write for one column.
#[derive(Clone, Debug)]
pub struct ColumnSpec {
    /// The column: a path, a unique leaf name or an index.
    pub column: String,
    /// Target false-positive rate.
    pub fpp: f64,
    /// Number of distinct values to size for (`None`: the exact count of each chunk).
    pub ndv: Option<u64>,
}

/// One filter written.
#[derive(Clone, Debug)]
pub struct Added {
    /// The column path.
    pub column: String,
    /// The row group.
    pub row_group: usize,
    /// Non-null values hashed.
    pub values: u64,
    /// Distinct values (distinct hashes) among them.
    pub distinct: u64,
    /// The bitset's size in bytes.
    pub bytes: u64,
    /// Expected false-positive rate for the distinct values.
    pub expected_fpr: f64,
    /// Whether the chunk had a filter before (now replaced).
    pub replaced: bool,
    /// Reader-compatibility and sizing warnings.
    pub warnings: Vec<String>,
}

const BATCH: usize = 64 * 1024;

fn hashes_of<T: DataType>(
    mut r: ColumnReaderImpl<T>,
    hash: impl Fn(&T::T) -> u64,
    out: &mut Vec<u64>,
) -> parquet::errors::Result<u64>
where
    T::T: Default + Clone,
{
    let mut values: Vec<T::T> = Vec::new();
    let mut def = Vec::new();
    let mut rep = Vec::new();
    let mut n = 0u64;
    loop {
        values.clear();
        def.clear();
        rep.clear();
        let (records, got, _) =
            r.read_records(BATCH, Some(&mut def), Some(&mut rep), &mut values)?;
        if records == 0 && got == 0 {
            return Ok(n);
        }
        out.extend(values[..got.min(values.len())].iter().map(&hash));
        n += got as u64;
    }
}

/// The hashes of the non-null values of one column chunk, as the file's physical type hashes.
fn chunk_hashes(reader: ColumnReader, out: &mut Vec<u64>) -> parquet::errors::Result<u64> {
    use parquet::data_type::*;
    match reader {
        ColumnReader::BoolColumnReader(_) => Err(parquet::errors::ParquetError::General(
            "BOOLEAN columns have no bloom filters".into(),
        )),
        ColumnReader::Int32ColumnReader(r) => {
            hashes_of::<Int32Type>(r, |v| xxh64(&v.to_le_bytes(), 0), out)
        }
        ColumnReader::Int64ColumnReader(r) => {
            hashes_of::<Int64Type>(r, |v| xxh64(&v.to_le_bytes(), 0), out)
        }
        ColumnReader::Int96ColumnReader(r) => hashes_of::<Int96Type>(
            r,
            |v| {
                let d = v.data();
                let mut b = [0u8; 12];
                for (i, w) in d.iter().enumerate().take(3) {
                    b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
                }
                xxh64(&b, 0)
            },
            out,
        ),
        ColumnReader::FloatColumnReader(r) => {
            hashes_of::<FloatType>(r, |v| xxh64(&v.to_bits().to_le_bytes(), 0), out)
        }
        ColumnReader::DoubleColumnReader(r) => {
            hashes_of::<DoubleType>(r, |v| xxh64(&v.to_bits().to_le_bytes(), 0), out)
        }
        ColumnReader::ByteArrayColumnReader(r) => {
            hashes_of::<ByteArrayType>(r, |v| xxh64(v.data(), 0), out)
        }
        ColumnReader::FixedLenByteArrayColumnReader(r) => {
            hashes_of::<FixedLenByteArrayType>(r, |v| xxh64(v.data(), 0), out)
        }
    }
}

/// The new file of [`add_filters`]: the input's data, the filters after it, the new footer.
#[derive(Debug)]
pub struct Rewrite {
    /// What was written for each column chunk.
    pub added: Vec<Added>,
    /// The input, open.
    src: File,
    /// The input's length in bytes.
    input_len: u64,
    /// Where the data (and the old footer) ends in the input.
    data_end: u64,
    /// The filters in their Parquet form, in the order they are placed.
    forms: Vec<Vec<u8>>,
    /// The new footer (`FileMetaData`).
    meta: Vec<u8>,
}

/// Adds (or replaces) bloom filters for `columns` in every row group of `input`: the filters
/// and the new footer, to be written with [`Rewrite::write_to`]. `pow2` sizes every filter to
/// a power of two in [32 B, 128 MiB] (what every reader accepts).
pub fn add_filters(input: &Path, columns: &[ColumnSpec], pow2: bool) -> Result<Rewrite> {
    add_filters_with_progress(input, columns, pow2, &mut |_, _| {})
}

/// [`add_filters`], calling `progress(done, total)` with the column chunks decoded so far
/// (`done` from 0, before the first, to `total`, after the last): the decoding is what takes
/// long in a large file.
pub fn add_filters_with_progress(
    input: &Path,
    columns: &[ColumnSpec],
    pow2: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Rewrite> {
    if columns.is_empty() {
        return Err(Error::usage("give at least one --column"));
    }
    let pf = ParquetFile::open(input)?;
    let footer = pf.footer().clone();
    let mut chosen = Vec::new();
    for spec in columns {
        let c = pf.column(&spec.column)?;
        let leaf = pf.leaf(c);
        if leaf.physical == PhysicalType::Boolean {
            return Err(Error::usage(format!(
                "--column {}: BOOLEAN columns have no bloom filters in Parquet",
                spec.column
            )));
        }
        if chosen.iter().any(|(i, _)| *i == c) {
            return Err(Error::usage(format!("--column {}: given twice", leaf.path)));
        }
        chosen.push((c, spec.clone()));
    }
    let file = File::open(input).map_err(|e| Error::io(input, "open", e))?;
    let crate_err = |what: String| Error::input(input, None, what);
    let reader = catch_unwind(AssertUnwindSafe(|| SerializedFileReader::new(file)))
        .map_err(|p| {
            crate_err(format!(
                "the parquet crate failed reading the footer: {}",
                panic_text(&p)
            ))
        })?
        .map_err(|source| Error::Decode {
            path: input.to_path_buf(),
            source,
        })?;
    if reader.metadata().num_row_groups() != footer.row_groups.len() {
        return Err(crate_err(
            "the parquet crate reads another number of row groups than the footer lists".into(),
        ));
    }
    let mut filters: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    let mut added = Vec::new();
    let mut hashes = Vec::new();
    let total = footer.row_groups.len() * chosen.len();
    progress(0, total);
    for (g, group) in footer.row_groups.iter().enumerate() {
        for (c, spec) in &chosen {
            let leaf = &footer.columns[*c];
            hashes.clear();
            let where_ = || format!("row group {g}, column {:?}", leaf.path);
            let values = catch_unwind(AssertUnwindSafe(|| {
                let rg = reader.get_row_group(g)?;
                chunk_hashes(rg.get_column_reader(*c)?, &mut hashes)
            }))
            .map_err(|p| {
                crate_err(format!(
                    "{}: the parquet crate failed decoding the pages: {}",
                    where_(),
                    panic_text(&p)
                ))
            })?
            .map_err(|e| crate_err(format!("{}: cannot decode the values: {e}", where_())))?;
            hashes.sort_unstable();
            hashes.dedup();
            let distinct = hashes.len() as u64;
            let ndv = spec.ndv.unwrap_or(distinct);
            let (blocks, cap) = sizing::blocks_for(ndv, spec.fpp, pow2)?;
            let mut f: Filter = sizing::empty(blocks);
            for &h in &hashes {
                f.insert_hash(h);
            }
            let bytes = f.byte_len() as u64;
            let mut warnings: Vec<String> = cap.into_iter().collect();
            warnings.extend(sizing::reader_warnings(bytes));
            added.push(Added {
                column: leaf.path.clone(),
                row_group: g,
                values,
                distinct,
                bytes,
                expected_fpr: f.params().expected_fpr(distinct),
                replaced: group.chunks[*c].bloom.is_some(),
                warnings,
            });
            let form = f.to_parquet().map_err(|source| Error::Export {
                params: *f.params(),
                source,
            })?;
            filters.push((g, *c, form));
            progress(filters.len(), total);
        }
    }
    let meta = placed_footer(&footer, &filters);
    if u32::try_from(meta.len()).is_err() {
        return Err(Error::input(
            input,
            None,
            "the new footer would exceed 4 GiB",
        ));
    }
    let src = File::open(input).map_err(|e| Error::io(input, "open", e))?;
    let input_len = src
        .metadata()
        .map_err(|e| Error::io(input, "read the size of", e))?
        .len();
    Ok(Rewrite {
        added,
        src,
        input_len,
        data_end: footer.start,
        forms: filters.into_iter().map(|(_, _, form)| form).collect(),
        meta,
    })
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// The footer with the filters placed one after the other where the old footer started.
fn placed_footer(footer: &Footer, filters: &[(usize, usize, Vec<u8>)]) -> Vec<u8> {
    let mut placed = Vec::with_capacity(filters.len());
    let mut at = footer.start;
    for (g, c, form) in filters {
        placed.push((*g, *c, at, form.len() as u32));
        at += form.len() as u64;
    }
    footer.with_blooms(&placed)
}

impl Rewrite {
    /// The input file's length in bytes.
    pub fn input_len(&self) -> u64 {
        self.input_len
    }

    /// The length in bytes of the file [`Rewrite::write_to`] writes: the data, the filters, the
    /// footer, its length and `PAR1`.
    pub fn output_len(&self) -> u64 {
        let filters: u64 = self.forms.iter().map(|f| f.len() as u64).sum();
        self.data_end + filters + self.meta.len() as u64 + 8
    }

    /// Writes the new file to `w`: the input's bytes before its old footer unchanged, the
    /// filters, the new footer, its length and `PAR1`. The input is read again here; one that
    /// shrank since [`add_filters`] read it is an error.
    pub fn write_to(&mut self, w: &mut dyn Write) -> io::Result<()> {
        self.src.seek(SeekFrom::Start(0))?;
        let copied = io::copy(&mut (&mut self.src).take(self.data_end), w)?;
        if copied != self.data_end {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input shrank while being copied",
            ));
        }
        for form in &self.forms {
            w.write_all(form)?;
        }
        w.write_all(&self.meta)?;
        w.write_all(&(self.meta.len() as u32).to_le_bytes())?;
        w.write_all(b"PAR1")
    }
}
