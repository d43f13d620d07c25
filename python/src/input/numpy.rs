//! Keys of numpy arrays, read in place through `__array_interface__`.

use bloomlanes_core::KeyType;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::items::{from_items, Source};
use super::{Input, Owner, RawPart, RawValues, Values};
use crate::errors::Error;

/// What a numpy dtype (`__array_interface__['typestr']`) means as keys.
enum NpForm {
    W8,
    W4,
    Days,
    Records(usize),
    Object,
}

fn numpy_form(typestr: &str) -> Result<(KeyType, NpForm, usize), Error> {
    let bad = |why: &str| {
        Error::type_(format!(
            "unsupported numpy dtype {typestr:?}: {why} (keys are uint64, int64, uint32, int32, \
             float32, float64, datetime64[D|ms|us|ns], fixed-width bytes 'S<n>' or 'V<n>', or \
             an object array of bytes/str)"
        ))
    };
    let b = typestr.as_bytes();
    if b.len() < 2 {
        return Err(bad("too short"));
    }
    let (order, kind) = (b[0], b[1]);
    if kind == b'O' {
        return Ok((KeyType::Any, NpForm::Object, 8));
    }
    let rest = &typestr[2..];
    let (size_str, unit) = match rest.find('[') {
        Some(i) => (&rest[..i], Some(rest[i + 1..].trim_end_matches(']'))),
        None => (rest, None),
    };
    let size: usize = size_str.parse().map_err(|_| bad("bad item size"))?;
    if order == b'>' && size > 1 {
        return Err(bad(
            "big-endian data; convert with .astype(arr.dtype.newbyteorder('<'))",
        ));
    }
    let r =
        match (kind, size, unit) {
            (b'u', 8, _) => (KeyType::U64, NpForm::W8),
            (b'i', 8, _) => (KeyType::I64, NpForm::W8),
            (b'u', 4, _) => (KeyType::U32, NpForm::W4),
            (b'i', 4, _) => (KeyType::I32, NpForm::W4),
            (b'f', 4, _) => (KeyType::F32, NpForm::W4),
            (b'f', 8, _) => (KeyType::F64, NpForm::W8),
            (b'M', 8, Some("D")) => (KeyType::Date32, NpForm::Days),
            (b'M', 8, Some("ms")) => (KeyType::TimestampMillis, NpForm::W8),
            (b'M', 8, Some("us")) => (KeyType::TimestampMicros, NpForm::W8),
            (b'M', 8, Some("ns")) => (KeyType::TimestampNanos, NpForm::W8),
            (b'M', _, _) => return Err(bad(
                "only datetime64[D] (Parquet DATE) and datetime64[ms|us|ns] (Parquet TIMESTAMP) \
                 have a key type; convert with .astype('datetime64[ms]')",
            )),
            (b'S' | b'V', n, _) if n >= 1 && n <= usize::from(u16::MAX) => {
                (KeyType::FixedBytes(n as u16), NpForm::Records(n))
            }
            (b'U', _, _) => {
                return Err(bad(
                    "numpy unicode strings are UTF-32; pass a list of str, an object array or a \
                 pyarrow string array (hashed as UTF-8)",
                ))
            }
            (b'b', 1, _) => return Err(bad("booleans are not keys")),
            (b'u' | b'i', _, _) => {
                return Err(bad(
                    "only 32- and 64-bit integers have a key type; convert with .astype",
                ))
            }
            _ => return Err(bad("no key type for it")),
        };
    Ok((r.0, r.1, size))
}

/// Keys of a numpy array (or anything with `__array_interface__`). Non-contiguous arrays are
/// made contiguous first (a copy) when `retry` is set.
pub(super) fn from_numpy<'py>(
    obj: &Bound<'py, PyAny>,
    hint: KeyType,
    retry: bool,
) -> Result<Input<'py>, Error> {
    let py = obj.py();
    let py_err = |e: PyErr| Error::type_(format!("bad __array_interface__: {e}"));
    let ai = obj.getattr("__array_interface__").map_err(py_err)?;
    let ai = ai
        .cast::<PyDict>()
        .map_err(|_| Error::type_("__array_interface__ is not a dict"))?;
    let get = |k: &str| -> Result<Bound<'py, PyAny>, Error> {
        ai.get_item(k)
            .map_err(py_err)?
            .ok_or_else(|| Error::type_(format!("__array_interface__ lacks {k:?}")))
    };
    let typestr: String = get("typestr")?.extract().map_err(py_err)?;
    let shape: Vec<usize> = get("shape")?.extract().map_err(py_err)?;
    let strides = ai.get_item("strides").map_err(py_err)?;
    let data = get("data")?;
    let contiguous = strides.as_ref().is_none_or(|s| s.is_none());
    let data_ptr: Option<usize> = data.extract::<(usize, bool)>().ok().map(|(p, _)| p);
    let (key_type, form, itemsize) = numpy_form(&typestr)?;
    if shape.len() > 1 {
        return Err(Error::type_(format!(
            "expected a 1-D array of keys, got shape {shape:?}"
        )));
    }
    let n = shape.first().copied().unwrap_or(1);
    if let NpForm::Object = form {
        let list = obj
            .call_method0("tolist")
            .map_err(|e| Error::type_(format!("object array: {e}")))?;
        let source = if list.is_instance_of::<PyList>() {
            Source::List(&list)
        } else {
            Source::One(&list)
        };
        return from_items(py, source, hint, None);
    }
    let (Some(ptr), true) = (data_ptr, contiguous) else {
        if !retry {
            return Err(Error::type_("array data is not contiguous in memory"));
        }
        let np = py.import("numpy").map_err(py_err)?;
        let copy = np
            .call_method1("ascontiguousarray", (obj,))
            .map_err(py_err)?;
        return from_numpy(&copy, hint, false);
    };
    let mut input = Input::new(key_type);
    let p = ptr as *const u8;
    let raw = match form {
        NpForm::W8 => RawValues::U64(p.cast(), n),
        NpForm::W4 => RawValues::U32(p.cast(), n),
        NpForm::Days => RawValues::Days64(p.cast(), n),
        NpForm::Records(w) => RawValues::Records(p, n, w),
        NpForm::Object => unreachable!("handled above"),
    };
    debug_assert!(itemsize > 0);
    input.owners.push(Owner::Py(obj.clone()));
    input.push(RawPart {
        values: raw,
        nulls: None,
    });
    check_datetimes(&input)?;
    Ok(input)
}

/// numpy datetimes: NaT is a missing value, not a key; days must fit Parquet's 32-bit `DATE`.
fn check_datetimes(input: &Input<'_>) -> Result<(), Error> {
    let timestamps = matches!(
        input.key_type,
        KeyType::TimestampMillis | KeyType::TimestampMicros | KeyType::TimestampNanos
    );
    for part in input.parts()? {
        match part.values {
            Values::U64(v) if timestamps => {
                if let Some(i) = v.iter().position(|&x| x == i64::MIN as u64) {
                    return Err(Error::value(format!(
                        "NaT at index {i}: missing values are not keys; drop them first"
                    )));
                }
            }
            Values::Days64(v) => {
                if let Some(i) = v.iter().position(|&x| i32::try_from(x).is_err()) {
                    return Err(Error::value(if v[i] == i64::MIN {
                        format!("NaT at index {i}: missing values are not keys; drop them first")
                    } else {
                        format!(
                            "date at index {i} ({} days from 1970-01-01) does not fit Parquet \
                             DATE (32-bit days)",
                            v[i]
                        )
                    }));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
