//! Keys with labels: CSV/TSV records of a key column and a label column (a spatial filter's
//! class, a retrieval table's value), read front to back on one thread so that every key keeps
//! its label and every fault names its file, line and column.
//!
//! The key column is [`InputOptions::csv_column`] and is parsed as [`InputOptions::key_type`]
//! (bytes when none is given); the label column's fields go through the caller's function,
//! whose error message is reported at the record's line. A blank key is an error here (the
//! pipeline skips blank typed keys; a labelled key cannot be skipped without losing its label).
//!
//! ```
//! use bloomlanes_input::{pairs, InputOptions, KeyType};
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("rules.csv");
//! std::fs::write(&path, "ip,action\n1,deny\n2,allow\n")?;
//! let opts = InputOptions { csv_column: Some("ip".into()), key_type: Some(KeyType::U64),
//!                           ..InputOptions::default() };
//! let column = pairs::LabelColumn { name: "action", flag: "--class-column" };
//! let read = pairs::read_pairs(&[path], &opts, column, &mut |f: &[u8]| Ok(f.len() as u32))?;
//! assert_eq!((read.keys.len(), read.labels), (2, vec![4, 5]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

use bloomlanes_core::KeyType;

use crate::csv_place::recorded;
use crate::keys::ChunkParser;
use crate::plan::{csv_column, csv_delimiter};
use crate::source::{self, Body};
use crate::{
    one_key_type, Error, FieldParser, InputOptions, InputSummary, KeySet, KeySetBuilder, Location,
    Parsed, Result,
};

/// The label column: a header name or a 0-based index, and the option that gave it (named in
/// messages).
#[derive(Clone, Copy, Debug)]
pub struct LabelColumn<'a> {
    /// The column.
    pub name: &'a str,
    /// The option that named it (`--class-column`).
    pub flag: &'a str,
}

/// The keys and labels of a labelled read, in input order.
#[derive(Debug)]
pub struct Pairs {
    /// The keys.
    pub keys: KeySet,
    /// Key `i`'s label.
    pub labels: Vec<u32>,
    /// What each input gave.
    pub summaries: Vec<InputSummary>,
}

/// One record as [`walk`] hands it on.
struct Record<'r> {
    path: &'r Path,
    at: Location,
    key: &'r [u8],
    label: &'r [u8],
    /// The columns, for messages: `column "ip" (field 1)`.
    key_name: &'r str,
    label_name: &'r str,
}

impl Record<'_> {
    fn fault(&self, column: &str, what: impl std::fmt::Display) -> Error {
        Error::input(self.path, Some(self.at), format!("{column}: {what}"))
    }
}

/// Reads every record of `paths`, key column and label column, handing each to `each` (which
/// answers `false` to stop).
fn walk(
    paths: &[PathBuf],
    opts: &InputOptions,
    column: LabelColumn<'_>,
    summaries: &mut Vec<InputSummary>,
    each: &mut dyn FnMut(&Record<'_>) -> Result<bool>,
) -> Result<()> {
    for path in paths {
        let input = source::open(path)?;
        let shown = input.shown.clone();
        // A Parquet file or another container is refused before its bytes become a "header".
        crate::sniff::refuse_container(&shown, &input.head, "CSV")?;
        let delimiter = csv_delimiter(&input, opts);
        let (compression, map);
        compression = input.compression;
        let reader: Box<dyn Read + '_> = match input.body {
            Body::Mapped(m) => {
                map = m;
                Box::new(&map[..])
            }
            Body::Stream(r) => r,
        };
        // Records placed from the bytes (`csv_place`: the crate's own line is wrong after
        // CRLF endings and blank lines).
        let (reader, places) = recorded(reader);
        let mut rdr = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(delimiter)
            .from_reader(reader);
        let mut rec = ::csv::ByteRecord::new();
        let malformed = |e: ::csv::Error| {
            let at = e.position().map(|p| {
                let (line, byte) = places.place(p.byte());
                Location::LineByte(line, byte)
            });
            Error::input(&shown, at, format!("malformed CSV: {e}"))
        };
        let first = rdr.read_byte_record(&mut rec).map_err(malformed)?;
        let header = rec.clone();
        let key_col = csv_column(
            &shown,
            &header,
            opts.csv_column.as_deref(),
            opts.csv_header,
            "--csv-column",
        )?;
        let label_col = csv_column(
            &shown,
            &header,
            Some(column.name),
            opts.csv_header,
            column.flag,
        )?;
        let name = |i: usize| match (opts.csv_header, header.get(i)) {
            (true, Some(h)) => format!("column {:?} (field {})", String::from_utf8_lossy(h), i + 1),
            _ => format!("field {}", i + 1),
        };
        let (key_name, label_name) = (name(key_col), name(label_col));
        let fields = header.len();
        if first && key_col.max(label_col) >= fields {
            return Err(Error::input(
                &shown,
                Some(Location::Line(1)),
                format!(
                    "CSV column index {} is out of range: records have {fields} fields",
                    key_col.max(label_col)
                ),
            ));
        }
        let mut summary = InputSummary {
            path: shown.clone(),
            format: "csv",
            compression: compression.name(),
            key_type: opts.key_type.unwrap_or(KeyType::Bytes),
            ..InputSummary::default()
        };
        let mut pending = first && !opts.csv_header;
        loop {
            if !std::mem::take(&mut pending)
                && !rdr.read_byte_record(&mut rec).map_err(malformed)?
            {
                break;
            }
            let p = rec.position().expect("a record read has a position");
            let (line, byte) = places.place(p.byte());
            let r = Record {
                path: &shown,
                at: Location::LineByte(line, byte),
                key: &rec[key_col],
                label: &rec[label_col],
                key_name: &key_name,
                label_name: &label_name,
            };
            summary.keys += 1;
            summary.bytes = p.byte() + rec.as_slice().len() as u64;
            if !each(&r)? {
                summaries.push(summary);
                return Ok(());
            }
        }
        summaries.push(summary);
    }
    Ok(())
}

/// Reads the keys and labels of `paths`: keys from [`InputOptions::csv_column`] parsed as
/// [`InputOptions::key_type`] (bytes by default), labels from `column` through `label`, whose
/// error is reported with the file, line and column.
///
/// # Errors
/// A malformed record, a blank or unparsable key, a label `label` refuses, a column that is
/// not there.
pub fn read_pairs(
    paths: &[PathBuf],
    opts: &InputOptions,
    column: LabelColumn<'_>,
    label: &mut dyn FnMut(&[u8]) -> std::result::Result<u32, String>,
) -> Result<Pairs> {
    let key_type = opts.key_type.unwrap_or(KeyType::Bytes);
    let parser = (key_type != KeyType::Bytes).then(|| FieldParser::typed(key_type));
    let mut keys = KeySetBuilder::default();
    let mut labels = Vec::new();
    let mut buf = Vec::new();
    let mut summaries = Vec::new();
    walk(paths, opts, column, &mut summaries, &mut |r| {
        buf.clear();
        let parsed = match &parser {
            Some(p) => p
                .parse(r.key, &mut buf)
                .map_err(|e| r.fault(r.key_name, e))?,
            None if r.key.is_empty() => Parsed::Skip,
            None => Parsed::Field,
        };
        match parsed {
            Parsed::Skip => return Err(r.fault(r.key_name, "the key is blank")),
            Parsed::Field => keys.push_typed(r.key, key_type),
            Parsed::Written => keys.push_typed(&buf, key_type),
            Parsed::U64(v) => keys.push_typed(&v.to_le_bytes(), key_type),
        }
        labels.push(label(r.label).map_err(|e| r.fault(r.label_name, e))?);
        Ok(true)
    })?;
    let key_type = one_key_type(&summaries)?;
    Ok(Pairs {
        keys: keys.finish().with_key_type(key_type),
        labels,
        summaries,
    })
}

/// Where record `index` (0-based, over all of `paths`) of a labelled read is: its file and
/// line, found by reading again (`None` past the end, or for an input that cannot be read
/// twice, such as standard input).
pub fn locate(
    paths: &[PathBuf],
    opts: &InputOptions,
    column: LabelColumn<'_>,
    index: usize,
) -> Option<(PathBuf, u64)> {
    locate_all(paths, opts, column, &[index]).pop().flatten()
}

/// [`locate`] of every record of `indices`, in one read that stops after the last of them:
/// the places in the order of `indices`.
pub fn locate_all(
    paths: &[PathBuf],
    opts: &InputOptions,
    column: LabelColumn<'_>,
    indices: &[usize],
) -> Vec<Option<(PathBuf, u64)>> {
    let mut found = vec![None; indices.len()];
    let Some(&last) = indices.iter().max() else {
        return found;
    };
    if paths.iter().any(|p| p.as_os_str() == "-") {
        return found;
    }
    let mut seen = 0usize;
    let _ = walk(paths, opts, column, &mut Vec::new(), &mut |r| {
        for (slot, _) in found.iter_mut().zip(indices).filter(|(_, &i)| i == seen) {
            let line = match r.at {
                Location::LineByte(l, _) | Location::Line(l) => l,
                Location::Byte(_) => 0,
            };
            *slot = Some((r.path.to_path_buf(), line));
        }
        seen += 1;
        Ok(seen <= last)
    });
    found
}

/// The line (1-based) of key `index` (0-based) of a text-lines input read with `opts`, found
/// by reading it again with the key reader's own plan (its start past a byte order mark) and
/// line parser, so that a line counts as a key exactly when the reader made one of it: `None`
/// past the end, for an input of another format, or for one that cannot be read twice.
pub fn locate_line(path: &Path, opts: &InputOptions, index: u64) -> Option<u64> {
    if path.as_os_str() == "-" {
        return None;
    }
    let input = source::open(path).ok()?;
    let plan = crate::plan::plan(&input, opts).ok()?;
    let ChunkParser::Lines { field, .. } = &plan.parser else {
        return None;
    };
    let map;
    let body: Box<dyn Read + '_> = match input.body {
        Body::Mapped(m) => {
            map = m;
            Box::new(&map[..])
        }
        Body::Stream(r) => r,
    };
    let mut rdr = io::BufReader::new(body);
    io::copy(&mut rdr.by_ref().take(plan.start), &mut io::sink()).ok()?;
    let (mut line, mut keys) = (plan.start_lines, 0u64);
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    let longest = crate::chunk::MAX_RECORD_BYTES as u64 + 1;
    loop {
        buf.clear();
        // No longer than the key reader takes a line (the file may have changed since).
        let n = rdr
            .by_ref()
            .take(longest)
            .read_until(b'\n', &mut buf)
            .ok()?;
        if n == 0 || (n as u64 == longest && buf.last() != Some(&b'\n')) {
            return None;
        }
        line += 1;
        let mut text = buf.strip_suffix(b"\n").unwrap_or(&buf);
        text = text.strip_suffix(b"\r").unwrap_or(text);
        // As the key reader: an empty line, or one its parser finds no key in, is no key.
        let key = match field {
            None => !text.is_empty(),
            Some(p) => {
                scratch.clear();
                !matches!(p.parse(text, &mut scratch), Ok(Parsed::Skip))
            }
        };
        if !key {
            continue;
        }
        if keys == index {
            return Some(line);
        }
        keys += 1;
    }
}
