//! What the classes over whole-file kinds (`SpatialFilter`, `Retrieval`) share with each other
//! and with `Filter`: files under the CLI's locks (`storage`), bytes for pickling, the key type
//! check, keys as the SIMD backend takes them, and keys named in errors.
//!
//! These kinds live in memory (no memory-mapped form): `load` reads the whole file under a
//! shared lock and checks all of it, `save` writes a new file under the write lock and renames
//! it over the old one, as `Filter.save` does.

use std::path::Path;

use bloomlanes_core::{FormatError, KeyType, Params};
use bloomlanes_guard::WriteLock;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::with_bytes;
use crate::errors::Error;
use crate::filter::check_keys;
use crate::input::{Part, Values};
use crate::storage::{lock_error, open_shared, read_whole, write_replacing};
use crate::update::{interruptible, wait_of};

/// A kind kept as one whole file image.
pub(crate) trait WholeFile: Sized + Send + Sync {
    /// The whole file.
    fn file_bytes(&self) -> Vec<u8>;
    /// Reads a whole file; any fault is an error.
    fn parse(file: &[u8]) -> Result<Self, FormatError>;
}

/// Writes `value`'s file to `path` under `path`'s write lock (see the module).
pub(crate) fn save<T: WholeFile>(
    py: Python<'_>,
    value: &T,
    path: &Path,
    wait: bool,
) -> PyResult<()> {
    interruptible(py, |waiting| {
        let _lock = WriteLock::acquire(path, wait_of(wait), waiting).map_err(lock_error)?;
        let bytes = value.file_bytes();
        write_replacing(path, &[&bytes], || Ok(()))
    })
}

/// Reads the file at `path` under a shared lock, checked whole.
pub(crate) fn load<T: WholeFile>(py: Python<'_>, path: &Path, wait: bool) -> PyResult<T> {
    interruptible(py, |waiting| {
        let (_file, len) = open_shared(path, wait_of(wait), waiting)?;
        let bytes = read_whole(path, len)?;
        T::parse(&bytes).map_err(|e| Error::format_at(path.display(), e))
    })
}

/// `value`'s whole file as Python bytes.
pub(crate) fn to_bytes<'py, T: WholeFile>(py: Python<'py>, value: &T) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &py.detach(|| value.file_bytes()))
}

/// A value from the bytes of its whole file (`bytes`, `bytearray` or a buffer).
pub(crate) fn from_bytes<T: WholeFile>(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<T> {
    with_bytes(data, |bytes| {
        Ok(py.detach(|| T::parse(bytes)).map_err(Error::from)?)
    })
}

/// An error for float keys: their lookups find `0.0` and `-0.0` alike and answer "maybe" for
/// NaN (`Filter`'s rule), which has no class or value to answer, and anything else would report
/// a stored `-0.0` absent when asked for `0.0`.
pub(crate) fn refuse_float_keys(keys: KeyType, kind: &str) -> Result<(), Error> {
    if matches!(keys, KeyType::F32 | KeyType::F64) {
        return Err(Error::KeyType(format!(
            "{kind} takes no float keys ({keys}): 0.0 and -0.0, and NaNs, hash differently; \
             use integer or byte keys (e.g. numpy's .view('u8') of the bits)"
        )));
    }
    Ok(())
}

/// [`refuse_float_keys`], then [`check_keys`].
pub(crate) fn check_kind_keys(params: &Params, keys: KeyType, kind: &str) -> Result<(), Error> {
    refuse_float_keys(keys, kind)?;
    check_keys(params, keys)
}

/// The key at `index` of the concatenated `parts`, for an error message.
pub(crate) fn describe_key(parts: &[Part<'_>], key_type: KeyType, index: usize) -> String {
    let mut i = index;
    for p in parts {
        let n = p.values.len();
        if i >= n {
            i -= n;
            continue;
        }
        let text = |b: &[u8]| match std::str::from_utf8(b) {
            Ok(s) => format!("{s:?}"),
            Err(_) => format!("b{:?}", String::from_utf8_lossy(b)),
        };
        let key = match p.values {
            Values::U64(k) if matches!(key_type, KeyType::U64 | KeyType::Any) => k[i].to_string(),
            Values::U64(k) => (k[i] as i64).to_string(),
            Values::U32(k) if key_type == KeyType::U32 => k[i].to_string(),
            Values::U32(k) => (k[i] as i32).to_string(),
            Values::Days64(k) => k[i].to_string(),
            Values::Records(d, w) => text(&d[i * w..(i + 1) * w]),
            Values::Str32(d, o) => text(&d[o[i] as usize..o[i + 1] as usize]),
            Values::Str64(d, o) => text(&d[o[i] as usize..o[i + 1] as usize]),
            Values::Hashes(..) => break,
        };
        return format!("key {key} (index {index})");
    }
    format!("key at index {index}")
}

/// An error unless no key of `parts` is null (`what`: the operation, for the message).
pub(crate) fn refuse_nulls(parts: &[Part<'_>], what: &str) -> Result<(), Error> {
    let mut start = 0;
    for p in parts {
        if let Some(valid) = p.nulls {
            if let Some(i) = (0..p.values.len()).find(|&i| !valid.is_valid(i)) {
                return Err(Error::value(format!(
                    "{what}: key {} is null (drop nulls first)",
                    start + i
                )));
            }
        }
        start += p.values.len();
    }
    Ok(())
}
