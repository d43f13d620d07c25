//! One column of a CSV (or TSV) file.

use std::path::Path;

use super::keyset::{KeyKind, KeySetBuilder};
use super::{extension, InputOptions};
use crate::error::{Error, Location, Result};

pub(super) fn read_csv(
    shown: &Path,
    path: &Path,
    bytes: &[u8],
    opts: &InputOptions,
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
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_err(e)),
        }
        match rec.get(column) {
            Some(field) => out.push_bytes(field, KeyKind::Text),
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
    Ok(())
}
