//! Arguments from Python and results for it: layout and key type names, byte strings, fresh
//! numpy arrays of answers (bools or packed bits), statistics as a dict.

use std::str::FromStr;

use bloomlanes_core::{KeyType, Layout, Params, Sizing, Stats};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PySlice};

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

/// A fresh numpy array of `n` items of `dtype` (whose items are `T`s), written by `fill`.
pub(crate) fn numpy_filled<'py, T: bytemuck::Pod>(
    py: Python<'py>,
    n: usize,
    dtype: &str,
    fill: impl FnOnce(&mut [T]) -> Result<(), Error>,
) -> PyResult<Bound<'py, PyAny>> {
    let (arr, ptr) = numpy_empty(py, n, dtype)?;
    let out: &mut [T] = if n == 0 {
        &mut []
    } else {
        // SAFETY: `arr` is a fresh, C-contiguous numpy array of `n` items of `dtype`, which the
        // callers pair with a `T` of the same size and alignment (numpy aligns fresh arrays to
        // at least 16 bytes); nothing else references it yet, and it outlives this slice (held
        // in `arr`). Any bit pattern is a valid `T` (Pod).
        unsafe { std::slice::from_raw_parts_mut(ptr as *mut T, n) }
    };
    fill(out)?;
    Ok(arr)
}

/// A fresh numpy bool array of `n` answers written by `fill` (one byte, 0 or 1, per key).
pub(crate) fn numpy_bools<'py>(
    py: Python<'py>,
    n: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), Error>,
) -> PyResult<Bound<'py, PyAny>> {
    numpy_filled(py, n, "bool", fill)
}

/// Non-negative integers that fit 32 bits (classes, values) from a numpy array, a list or one
/// integer, copied; `what` names them in errors (e.g. `values`).
pub(crate) fn numpy_u32s(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u32>> {
    let np = obj.py().import("numpy")?;
    let arr = np.call_method1("asarray", (obj,))?;
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "u" | "i" | "b") {
        let dtype = arr.getattr("dtype")?.str()?.to_string();
        return Err(Error::type_(format!(
            "{what} must be unsigned integers, not an array of {dtype}"
        ))
        .into());
    }
    let arr = arr.call_method0("ravel")?;
    let n: usize = arr.len()?;
    if n > 0 && kind != "b" {
        for (arg, bad) in [("argmin", "negative"), ("argmax", "over 2^32 - 1")] {
            let i: usize = arr.call_method0(arg)?.extract()?;
            let v: i128 = arr.get_item(i)?.extract()?;
            if (bad == "negative" && v < 0) || v > i128::from(u32::MAX) {
                return Err(Error::value(format!("{what}[{i}] = {v} is {bad}")).into());
            }
        }
    }
    let bytes = arr
        .call_method1("astype", ("<u4",))?
        .call_method0("tobytes")?;
    let bytes = bytes.cast::<PyBytes>()?.as_bytes();
    Ok(bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Packed answers of `n` keys (uint8, LSB first: bit `i % 8` of byte `i / 8`), written by
/// `fill` as 64-bit words (bit `i % 64` of word `i / 64`).
pub(crate) fn numpy_bitmap<'py>(
    py: Python<'py>,
    n: usize,
    fill: impl FnOnce(&mut [u64]) -> Result<(), Error>,
) -> PyResult<Bound<'py, PyAny>> {
    let words = n.div_ceil(64);
    let (arr, ptr) = numpy_empty(py, words, "<u8")?;
    let out: &mut [u64] = if words == 0 {
        &mut []
    } else {
        // SAFETY: a fresh, C-contiguous, 8-byte aligned numpy array of `words` u64s that
        // nothing else references yet; it outlives this slice (held in `arr`).
        unsafe { std::slice::from_raw_parts_mut(ptr as *mut u64, words) }
    };
    fill(out)?;
    let bytes = arr.call_method1("view", ("u1",))?;
    bytes.get_item(PySlice::new(py, 0, n.div_ceil(8) as isize, 1))
}

/// A key type's name, `None` for an unrecorded one.
pub(crate) fn key_type_name(kt: KeyType) -> Option<String> {
    (kt != KeyType::Any).then(|| kt.to_string())
}

/// A key type as a `__repr__` shows it: quoted, or `None` for an unrecorded one.
pub(crate) fn repr_key_type(kt: KeyType) -> String {
    key_type_name(kt).map_or("None".into(), |k| format!("'{k}'"))
}

/// A key count as a `__repr__` shows it: the number, or `None` when not recorded.
pub(crate) fn repr_key_count(keys: Option<u64>) -> String {
    keys.map_or("None".into(), |k| k.to_string())
}

/// A cell kind's `__repr__`: `Class(lead, layout=…, blocks=…, width=bits, seed=…, key_type=…,
/// key_count=…)`, where `lead` names what the kind adds first (its kind, its classes) and `width`
/// its cell width's name.
pub(crate) fn cell_repr(
    class: &str,
    lead: &str,
    p: &Params,
    (width, bits): (&str, u32),
    key_count: Option<u64>,
) -> String {
    format!(
        "{class}({lead}, layout='{}', blocks={}, {width}={bits}, seed={}, key_type={}, key_count={})",
        p.layout,
        p.blocks,
        p.seed,
        repr_key_type(p.key_type),
        repr_key_count(key_count),
    )
}

/// The parameters that `Filter.with_params` takes back, as a dict (layout, blocks, seed,
/// key type).
pub(crate) fn params_dict<'py>(py: Python<'py>, p: &Params) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("layout", p.layout.to_string())?;
    d.set_item("blocks", p.blocks)?;
    d.set_item("seed", p.seed)?;
    d.set_item("key_type", key_type_name(p.key_type))?;
    Ok(d)
}

/// Statistics as a dict, with the field names of `bloomlanes stats --json`.
pub(crate) fn stats_dict<'py>(
    py: Python<'py>,
    s: &Stats,
    memory_mapped: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let p = s.params;
    d.set_item("layout", p.layout.to_string())?;
    d.set_item("lanes", p.layout.lanes())?;
    d.set_item("word_bits", p.layout.word_bits())?;
    d.set_item("blocks", p.blocks)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("seed", p.seed)?;
    d.set_item("hash", p.hash.name())?;
    d.set_item("key_type", p.key_type.to_string())?;
    d.set_item("recorded_keys", s.recorded_keys)?;
    d.set_item("set_bits", s.ones)?;
    d.set_item("fill_ratio", s.fill_ratio)?;
    d.set_item("estimated_keys", s.estimated_keys)?;
    d.set_item("keys", s.keys)?;
    d.set_item("expected_fpr", s.expected_fpr)?;
    d.set_item("fpr_from_bits", s.fpr_from_bits)?;
    d.set_item("bits_per_key", s.bits_per_key)?;
    d.set_item("parquet_compatible", s.parquet_compatible)?;
    d.set_item("memory_mapped", memory_mapped)?;
    Ok(d)
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

/// The sizing asked for by `fpr=` or `bits_per_key=` (at most one; a 1 % rate when neither), as
/// every filter class's constructor takes it.
pub(crate) fn sizing(fpr: Option<f64>, bits_per_key: Option<f64>) -> Result<Sizing, Error> {
    match (fpr, bits_per_key) {
        (Some(_), Some(_)) => Err(Error::value("give fpr or bits_per_key, not both")),
        (Some(r), None) => Ok(Sizing::FalsePositiveRate(r)),
        (None, Some(b)) => Ok(Sizing::BitsPerKey(b)),
        (None, None) => Ok(Sizing::FalsePositiveRate(0.01)),
    }
}

/// The shape a constructor asks for: `capacity` keys at the rate of `fpr` or `bits_per_key`
/// ([`sizing`]; `layout` or the best one for them), or exactly `blocks` blocks of `layout`
/// (which then must be given, and no rate). `capacity` is named `what` in errors (e.g. "keys
/// in all classes").
pub(crate) fn shape(
    capacity: Option<u64>,
    fpr: Option<f64>,
    bits_per_key: Option<f64>,
    blocks: Option<u32>,
    layout: Option<Layout>,
    what: &str,
) -> Result<Params, Error> {
    match (capacity, blocks) {
        (Some(_), Some(_)) => Err(Error::value("give capacity or blocks, not both")),
        (None, None) => Err(Error::value(format!("give capacity ({what}) or blocks"))),
        (Some(keys), None) => {
            Ok(
                Params::for_keys_mergeable(keys, sizing(fpr, bits_per_key)?, layout)
                    .map_err(Error::from)?,
            )
        }
        (None, Some(b)) => {
            if fpr.is_some() || bits_per_key.is_some() {
                return Err(Error::value(
                    "blocks sets the size: give no fpr or bits_per_key",
                ));
            }
            let layout = layout.ok_or_else(|| {
                Error::value("blocks needs a layout (8x32, 8x64, 16x32 or 16x64)")
            })?;
            if b == 0 {
                return Err(Error::value("blocks must be at least 1"));
            }
            Ok(Params::new(layout, b))
        }
    }
}
