//! `Filter.insert_file` and `Filter.contains_file`: keys read from files through the input
//! pipeline of `bloomlanes-input`, exactly as the `bloomlanes` tool reads them (text lines,
//! decimal integers, text flow keys, a CSV column, binary u64 words, the flow keys of pcap and
//! pcapng captures; gzip, zstd and xz undone; typed key text), parsed and hashed on the
//! package's threads without the GIL and with bounded memory whatever the file's size.
//!
//! An insert goes into an empty filter of the same parameters, ORed into the filter once the
//! whole file was read: a file that fails half-way (a malformed line, a cut-short stream)
//! leaves the filter as it was. A lookup probes on the workers with the SIMD backend and
//! applies the float ±0 / NaN rule; its answers come back in file order.

use std::path::Path;

use bloomlanes_core::key::FloatRule;
use bloomlanes_core::{Filter, FilterRef, KeyType, Keys};
use bloomlanes_input::{
    self as input, BatchKeys, HashStage, InputFormat, InputOptions, Keep, PipelineConfig, Stage,
};
use bloomlanes_simd::Probe;
use pyo3::prelude::*;

use crate::convert::parse_key_type;
use crate::errors::Error;
use crate::filter::{check_keys, PyFilter};
use crate::ops;

/// How a file is read: the keyword arguments of `insert_file` and `contains_file`, as the
/// tool's `--format`, `--key-type`, `--csv-column`, `--no-header` and `--delimiter` say.
pub(crate) struct FileSpec {
    format: InputFormat,
    key_type: Option<KeyType>,
    column: Option<String>,
    header: bool,
    delimiter: Option<u8>,
}

impl FileSpec {
    /// The spec from Python's arguments: `column` a header name (str) or a 0-based index (int),
    /// `delimiter` one ASCII character.
    pub(crate) fn new(
        format: &str,
        key_type: Option<&str>,
        column: Option<&Bound<'_, PyAny>>,
        header: bool,
        delimiter: Option<&str>,
    ) -> PyResult<FileSpec> {
        let format = InputFormat::from_name(format).ok_or_else(|| {
            let names: Vec<&str> = InputFormat::ALL.iter().map(|f| f.name()).collect();
            Error::value(format!(
                "unknown format {format:?} (expected {})",
                names.join(", ")
            ))
        })?;
        let column = match column {
            None => None,
            Some(c) => match c.extract::<u64>() {
                Ok(i) => Some(i.to_string()),
                Err(_) => Some(c.extract::<String>().map_err(|_| {
                    Error::type_("column must be a header name (str) or a 0-based index (int)")
                })?),
            },
        };
        let delimiter = match delimiter.map(str::as_bytes) {
            None => None,
            Some([d]) if d.is_ascii() => Some(*d),
            Some(_) => return Err(Error::value("delimiter must be one ASCII character").into()),
        };
        Ok(FileSpec {
            format,
            key_type: parse_key_type(key_type)?,
            column,
            header,
            delimiter,
        })
    }

    /// The pipeline's options for a filter of key type `filter_type`: text is parsed as the
    /// key type given, else as the filter's, else as the format's own (as the tool's `insert`
    /// and `query` do); one worker per thread of the package's pool; short text keys hashed
    /// in SIMD lanes as the tool does.
    fn options(&self, filter_type: KeyType) -> InputOptions {
        InputOptions {
            format: self.format,
            csv_column: self.column.clone(),
            csv_header: self.header,
            csv_delimiter: self.delimiter,
            pipeline: PipelineConfig::with_threads(ops::threads()),
            key_type: self.key_type,
            filter_key_type: (filter_type != KeyType::Any).then_some(filter_type),
            // Short text keys hashed in SIMD lanes, as the tool does (the same values).
            span_hasher: Some(bloomlanes_simd::xxh64_spans),
            ..InputOptions::default()
        }
    }
}

/// Inserts the keys of `path` into `f`; returns how many were inserted and the reader's warnings
/// (e.g. text of numbers hashed as text), which the caller raises as Python warnings.
pub(crate) fn insert_file(
    f: &PyFilter,
    path: &Path,
    spec: &FileSpec,
) -> Result<(u64, Vec<String>), Error> {
    let params = f.read().params();
    check_keys(&params, spec.key_type.unwrap_or(KeyType::Any))?;
    let opts = spec.options(params.key_type);
    let probe = Probe::active();
    let mut part = Filter::new(params);
    let summaries = input::stream_keys(
        &[path.to_path_buf()],
        &opts,
        params.seed,
        &HashStage::<input::Error>::new(params.seed),
        &mut |hashes: Vec<u64>| {
            probe.insert(part.as_view_mut(), Keys::Hashes(&hashes));
            Ok(())
        },
        &mut |_| {},
    )?;
    let key_type = input::one_key_type(&summaries)?;
    let keys = summaries.iter().map(|s| s.keys).sum();
    let mut g = f.write();
    f.check_or_learn(&mut g, key_type)?;
    let filter = g.owned_mut()?;
    let count = filter.key_count();
    filter.union_with(&part)?;
    filter.set_key_count(count);
    filter.add_key_count(keys);
    Ok((
        keys,
        summaries.into_iter().flat_map(|s| s.warnings).collect(),
    ))
}

/// Raises each of `warnings` as a Python `UserWarning` (shown once per place by default, an
/// error under `-W error`).
pub(crate) fn warn(py: Python<'_>, warnings: &[String]) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for w in warnings {
        let text = std::ffi::CString::new(w.replace('\0', " ")).expect("no NUL left");
        PyErr::warn(py, category.as_any(), &text, 1)?;
    }
    Ok(())
}

/// Probes the keys of each chunk on the workers: one answer byte (0 or 1) per key.
struct ProbeStage<'f> {
    probe: Probe,
    view: FilterRef<'f, u32>,
    floats: Option<FloatRule>,
}

impl Stage for ProbeStage<'_> {
    type Out = Vec<u8>;
    type Error = input::Error;

    fn keep(&self) -> Keep {
        // The float rule needs each key's bits (typed keys are kept to be shown).
        if self.floats.is_some() {
            Keep::Text
        } else {
            Keep::Nothing
        }
    }

    fn flush(&self, keys: BatchKeys<'_>, out: &mut Vec<u8>) -> input::Result<()> {
        let n = keys.len();
        let mut words = vec![0u64; n.div_ceil(64)];
        self.probe
            .contains_bitmap(self.view, keys.keys(), &mut words);
        if let Some(rule) = self.floats {
            rule.apply(n, &mut words, |i| keys.key_bits(i));
        }
        out.extend((0..n).map(|i| (words[i / 64] >> (i % 64)) as u8 & 1));
        Ok(())
    }
}

/// The answers for the keys of `path` against `f`, in file order: 1 where a key may be
/// present.
pub(crate) fn contains_file(f: &PyFilter, path: &Path, spec: &FileSpec) -> Result<Vec<u8>, Error> {
    let g = f.read();
    let params = g.params();
    check_keys(&params, spec.key_type.unwrap_or(KeyType::Any))?;
    let view = g.view();
    let stage = ProbeStage {
        probe: Probe::active(),
        view,
        floats: FloatRule::new(params.key_type, params.seed, |h| view.contains_hash(h)),
    };
    let mut answers = Vec::new();
    input::stream_keys(
        &[path.to_path_buf()],
        &spec.options(params.key_type),
        params.seed,
        &stage,
        &mut |a: Vec<u8>| {
            answers.extend_from_slice(&a);
            Ok(())
        },
        &mut |_| {},
    )?;
    Ok(answers)
}
