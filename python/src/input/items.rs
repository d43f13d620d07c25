//! Keys from Python objects one by one (lists, tuples, object arrays, scalars): copied.

use bloomlanes_core::KeyType;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyString};

use super::{type_name, Input, Owner, RawPart, RawValues};
use crate::errors::Error;

/// Keys from Python objects one by one (copied): `bytes`/`bytearray`/`str` (hashed as UTF-8),
/// `int` (as the filter's integer key type) or `float`.
pub(super) fn from_items<'py>(
    items: &[Bound<'py, PyAny>],
    hint: KeyType,
) -> Result<Input<'py>, Error> {
    let Some(first) = items.first() else {
        return Ok(Input::new(KeyType::Any));
    };
    let is_text = |x: &Bound<'_, PyAny>| {
        x.is_instance_of::<PyBytes>()
            || x.is_instance_of::<PyString>()
            || x.is_instance_of::<PyByteArray>()
    };
    let wrong = |i: usize, x: &Bound<'_, PyAny>, want: &str| {
        Error::type_(format!(
            "key at index {i} is a {}, but the keys before it are {want}",
            type_name(x)
        ))
    };
    let mut input;
    if is_text(first) {
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(items.len() + 1);
        offsets.push(0u64);
        for (i, x) in items.iter().enumerate() {
            if let Ok(b) = x.cast::<PyBytes>() {
                data.extend_from_slice(b.as_bytes());
            } else if let Ok(s) = x.cast::<PyString>() {
                let s = s
                    .to_cow()
                    .map_err(|e| Error::value(format!("str key at index {i}: {e}")))?;
                data.extend_from_slice(s.as_bytes());
            } else if let Ok(b) = x.cast::<PyByteArray>() {
                data.extend_from_slice(&b.to_vec());
            } else {
                return Err(wrong(i, x, "bytes or str"));
            }
            offsets.push(data.len() as u64);
        }
        if let KeyType::FixedBytes(w) = hint {
            let w = usize::from(w);
            if let Some(i) = offsets.windows(2).position(|o| (o[1] - o[0]) as usize != w) {
                return Err(Error::KeyType(format!(
                    "key at index {i} has {} bytes, but the filter's keys are fixed:{w}",
                    offsets[i + 1] - offsets[i]
                )));
            }
            input = Input::new(hint);
            input.push(RawPart {
                values: RawValues::Records(data.as_ptr(), items.len(), w),
                nulls: None,
            });
        } else {
            input = Input::new(KeyType::Bytes);
            input.push(RawPart {
                values: RawValues::Str64(data.as_ptr(), offsets.as_ptr(), items.len()),
                nulls: None,
            });
            input.owners.push(Owner::Words64(offsets));
        }
        input.owners.push(Owner::Bytes(data));
        return Ok(input);
    }
    if first.is_instance_of::<PyBool>() {
        return Err(Error::type_("booleans are not keys"));
    }
    if first.is_instance_of::<PyInt>() {
        return ints(items, hint);
    }
    if first.is_instance_of::<PyFloat>() {
        let f32_keys = hint == KeyType::F32;
        let mut v64 = Vec::new();
        let mut v32 = Vec::new();
        for (i, x) in items.iter().enumerate() {
            if !x.is_instance_of::<PyFloat>() {
                return Err(wrong(i, x, "float"));
            }
            let f: f64 = x
                .extract()
                .map_err(|e: PyErr| Error::type_(e.to_string()))?;
            if f32_keys {
                v32.push((f as f32).to_bits());
            } else {
                v64.push(f.to_bits());
            }
        }
        return Ok(if f32_keys {
            owned32(KeyType::F32, v32)
        } else {
            owned64(KeyType::F64, v64)
        });
    }
    Err(Error::type_(format!(
        "keys must be bytes, str, int or float (or arrays of them), not {}",
        type_name(first)
    )))
}

fn owned64<'py>(key_type: KeyType, v: Vec<u64>) -> Input<'py> {
    let mut input = Input::new(key_type);
    input.push(RawPart {
        values: RawValues::U64(v.as_ptr(), v.len()),
        nulls: None,
    });
    input.owners.push(Owner::Words64(v));
    input
}

fn owned32<'py>(key_type: KeyType, v: Vec<u32>) -> Input<'py> {
    let mut input = Input::new(key_type);
    input.push(RawPart {
        values: RawValues::U32(v.as_ptr(), v.len()),
        nulls: None,
    });
    input.owners.push(Owner::Words32(v));
    input
}

/// Python ints as keys of the filter's integer key type.
fn ints<'py>(items: &[Bound<'py, PyAny>], hint: KeyType) -> Result<Input<'py>, Error> {
    let wide = matches!(
        hint,
        KeyType::U64
            | KeyType::I64
            | KeyType::TimestampMillis
            | KeyType::TimestampMicros
            | KeyType::TimestampNanos
    );
    let narrow = matches!(hint, KeyType::U32 | KeyType::I32 | KeyType::Date32);
    if !wide && !narrow {
        return Err(Error::type_(format!(
            "Python ints carry no width: give the filter an integer key type (e.g. \
             key_type='i64'), or pass a numpy array with a dtype{}",
            if hint == KeyType::Any {
                String::new()
            } else {
                format!(" (this filter's keys are {hint})")
            }
        )));
    }
    let mut v64 = Vec::new();
    let mut v32 = Vec::new();
    for (i, x) in items.iter().enumerate() {
        if !x.is_instance_of::<PyInt>() || x.is_instance_of::<PyBool>() {
            return Err(Error::type_(format!(
                "key at index {i} is a {}, but the keys before it are int",
                type_name(x)
            )));
        }
        let range = || {
            Error::value(format!(
                "key {x} at index {i} does not fit the key type {hint}"
            ))
        };
        match hint {
            KeyType::U64 => v64.push(x.extract::<u64>().map_err(|_| range())?),
            KeyType::U32 => v32.push(x.extract::<u32>().map_err(|_| range())?),
            KeyType::I32 | KeyType::Date32 => {
                v32.push(x.extract::<i32>().map_err(|_| range())? as u32)
            }
            _ => v64.push(x.extract::<i64>().map_err(|_| range())? as u64),
        }
    }
    Ok(if wide {
        owned64(hint, v64)
    } else {
        owned32(hint, v32)
    })
}
