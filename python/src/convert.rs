//! Arguments from Python: layout and key type names, byte strings, fresh numpy arrays.

use std::str::FromStr;

use bloomlanes_core::{KeyType, Layout};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::errors::Error;

pub(crate) fn parse_layout(layout: Option<&str>) -> Result<Option<Layout>, Error> {
    match layout {
        None => Ok(None),
        Some(s) if s.eq_ignore_ascii_case("auto") => Ok(None),
        Some(s) => Layout::from_str(s).map(Some).map_err(|_| {
            Error::value(format!(
                "unknown layout {s:?} (expected auto, 8x32, 8x64, 16x32 or 16x64)"
            ))
        }),
    }
}

pub(crate) fn parse_key_type(key_type: Option<&str>) -> Result<Option<KeyType>, Error> {
    key_type
        .map(|s| KeyType::from_str(s).map_err(|e| Error::value(format!("key_type {s:?}: {e}"))))
        .transpose()
}

/// A fresh numpy array of `n` items of `dtype` and a pointer to its (contiguous) data.
pub(crate) fn numpy_empty<'py>(
    py: Python<'py>,
    n: usize,
    dtype: &str,
) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let np = py.import("numpy")?;
    let arr = np.call_method1("empty", (n, dtype))?;
    let (ptr, _): (usize, bool) = arr
        .getattr("__array_interface__")?
        .get_item("data")?
        .extract()?;
    Ok((arr, ptr))
}

/// Calls `f` with the bytes of `bytes` or `bytearray` (or anything `bytes()` accepts).
pub(crate) fn with_bytes<R>(
    data: &Bound<'_, PyAny>,
    f: impl FnOnce(&[u8]) -> PyResult<R>,
) -> PyResult<R> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    if let Ok(b) = data.cast::<PyByteArray>() {
        return f(&b.to_vec());
    }
    let b = data
        .py()
        .import("builtins")?
        .getattr("bytes")?
        .call1((data,))?;
    let b = b.cast::<PyBytes>()?;
    f(b.as_bytes())
}
