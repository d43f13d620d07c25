//! One column of a CSV (or TSV) file.

use std::path::Path;

use bloomlanes_core::KeyType;

use super::keyset::{KeyKind, KeySetBuilder};
use super::{extension, sniff, InputOptions};
use crate::error::{Error, Location, Result};
use crate::key_text;

/// Reads one column; `key_type` `None` takes the fields as bytes but refuses a column whose
/// every field looks like a number (`--format auto` does not guess).
pub(super) fn read_csv(
    shown: &Path,
    path: &Path,
    bytes: &[u8],
    opts: &InputOptions,
    key_type: Option<KeyType>,
    out: &mut KeySetBuilder,
) -> Result<()> {
    let delimiter = opts.csv_delimiter.unwrap_or(if extension(path) == "tsv" {
        b'\t'
    } else {
        b','
    });
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(opts.csv_header)
        .delimiter(delimiter)
        .flexible(false)
        .from_reader(bytes);
    let csv_err = |e: ::csv::Error| -> Error {
        let at = e.position().map(|p| Location::LineByte(p.line(), p.byte()));
        let what = match e.kind() {
            ::csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => format!(
                "malformed CSV: record has {len} fields, but the first record has {expected_len}"
            ),
            ::csv::ErrorKind::Utf8 { err, .. } => format!("malformed CSV: {err}"),
            _ => format!("malformed CSV: {e}"),
        };
        Error::input_with(shown, at, what, e)
    };
    let mut column = None;
    if opts.csv_header {
        let headers = rdr.byte_headers().map_err(csv_err)?.clone();
        if let Some(name) = &opts.csv_column {
            column = headers.iter().position(|h| h == name.as_bytes());
            if column.is_none() {
                column = name.parse::<usize>().ok();
            }
            if column.is_none() {
                let names: Vec<String> = headers
                    .iter()
                    .map(|h| String::from_utf8_lossy(h).into_owned())
                    .collect();
                return Err(Error::input(
                    shown,
                    Some(Location::Line(1)),
                    format!(
                        "no CSV column named {name:?} (the header has: {})",
                        names.join(", ")
                    ),
                ));
            }
        }
    } else if let Some(name) = &opts.csv_column {
        column = Some(name.parse::<usize>().map_err(|_| {
            Error::usage(format!(
                "--csv-column {name:?} must be a 0-based index when the CSV file has no header row"
            ))
        })?);
    }
    let column = column.unwrap_or(0);
    let mut rec = ::csv::ByteRecord::new();
    let mut scratch = Vec::new();
    let (mut numeric_seen, mut all_numeric) = (0usize, key_type.is_none());
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_err(e)),
        }
        match rec.get(column) {
            Some(field) => match key_type {
                None | Some(KeyType::Bytes) => {
                    if all_numeric && numeric_seen < sniff::NUMERIC_SAMPLE && !field.is_empty() {
                        all_numeric = key_text::looks_numeric(field);
                        numeric_seen += 1;
                    }
                    out.push_bytes(field, KeyKind::Text)
                }
                Some(t) => {
                    scratch.clear();
                    key_text::parse_into(t, field, &mut scratch).map_err(|e| {
                        let at = rec
                            .position()
                            .map(|p| Location::LineByte(p.line(), p.byte()));
                        let name = opts.csv_column.as_deref().unwrap_or("0");
                        Error::input_with(shown, at, format!("CSV column {name}: {e}"), e)
                    })?;
                    out.push_typed(&scratch, t);
                }
            },
            None => {
                let at = rec
                    .position()
                    .map(|p| Location::LineByte(p.line(), p.byte()));
                return Err(Error::input(
                    shown,
                    at,
                    format!(
                        "CSV column index {column} is out of range: records have {} fields",
                        rec.len()
                    ),
                ));
            }
        }
    }
    if all_numeric && numeric_seen > 0 {
        return Err(sniff::numeric_guess(
            shown,
            numeric_seen,
            "field of the CSV column",
        ));
    }
    Ok(())
}
