//! Keys from Python objects, read in place: numpy arrays through `__array_interface__`, Arrow
//! arrays and streams through the PyCapsule protocol (`__arrow_c_array__`, `__arrow_c_stream__`),
//! and lists of `bytes`/`str`/`int`/`float` (copied: they have no buffer).
//!
//! Extraction happens with the GIL held and in two steps: [`extract`] collects raw pointers to the
//! key buffers into an [`Input`] that also keeps every object owning them alive; then
//! [`Input::parts`] lends them out as slices ([`Part`]) that can cross into `Python::detach`.
//! (The stable ABI for Python 3.9 has no buffer protocol, hence `__array_interface__`.)

use std::ffi::c_void;

use bloomlanes_core::KeyType;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

use crate::arrow::{self, ArrowArray, ArrowArrayStream, ArrowSchema, OwnedArray, OwnedSchema};
use crate::errors::Error;

/// Pointers to one run of keys (see [`Values`] for the meaning of each form).
#[derive(Clone, Copy, Debug)]
pub(crate) enum RawValues {
    U64(*const u64, usize),
    U32(*const u32, usize),
    Days64(*const i64, usize),
    /// Data, key count, width.
    Records(*const u8, usize, usize),
    /// Data, offsets (count + 1 entries), key count.
    Str32(*const u8, *const i32, usize),
    /// Data, offsets (count + 1 entries), key count.
    Str64(*const u8, *const u64, usize),
}

/// One run of keys and its validity bitmap (bit set = valid, Arrow's LSB-first order), as raw
/// pointers into buffers that an [`Input`] keeps alive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawPart {
    pub(crate) values: RawValues,
    /// The validity bitmap and the bit index of the first key in it.
    pub(crate) nulls: Option<(*const u8, usize)>,
}

impl RawPart {
    /// No keys.
    pub(crate) fn empty() -> RawPart {
        RawPart {
            values: RawValues::U64(std::ptr::null(), 0),
            nulls: None,
        }
    }

    fn len(&self) -> usize {
        match self.values {
            RawValues::U64(_, n)
            | RawValues::U32(_, n)
            | RawValues::Days64(_, n)
            | RawValues::Records(_, n, _)
            | RawValues::Str32(_, _, n)
            | RawValues::Str64(_, _, n) => n,
        }
    }
}

/// A run of keys, borrowed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Values<'a> {
    /// 8-byte keys (u64, i64, timestamps, the bits of f64), hashed as their 8 LE bytes.
    U64(&'a [u64]),
    /// 4-byte keys (u32, i32, date32, the bits of f32), hashed as their 4 LE bytes.
    U32(&'a [u32]),
    /// numpy `datetime64[D]`: days as i64, hashed as Parquet `DATE` (4 LE bytes; range checked).
    Days64(&'a [i64]),
    /// Fixed-width byte strings: data and width.
    Records(&'a [u8], usize),
    /// Strings with 32-bit offsets (Arrow string/binary); offsets not yet validated.
    Str32(&'a [u8], &'a [i32]),
    /// Strings with 64-bit offsets (Arrow large_string, lists of bytes); not yet validated.
    Str64(&'a [u8], &'a [u64]),
}

impl Values<'_> {
    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        match self {
            Values::U64(k) => k.len(),
            Values::U32(k) => k.len(),
            Values::Days64(k) => k.len(),
            Values::Records(d, w) => d.len() / w,
            Values::Str32(_, o) => o.len() - 1,
            Values::Str64(_, o) => o.len() - 1,
        }
    }
}

/// Which keys are present (Arrow validity bitmap).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Validity<'a> {
    bits: &'a [u8],
    offset: usize,
}

impl Validity<'_> {
    /// Whether key `i` is valid (not null).
    #[inline]
    pub(crate) fn is_valid(&self, i: usize) -> bool {
        let j = self.offset + i;
        self.bits[j / 8] >> (j % 8) & 1 == 1
    }
}

/// A run of keys with its nulls, borrowed for the length of a bulk call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part<'a> {
    pub(crate) values: Values<'a>,
    pub(crate) nulls: Option<Validity<'a>>,
}

/// Something that must stay alive while the raw pointers are read.
#[allow(dead_code)] // held only to be dropped later
enum Owner<'py> {
    Py(Bound<'py, PyAny>),
    Bytes(Vec<u8>),
    Words64(Vec<u64>),
    Words32(Vec<u32>),
    Array(OwnedArray),
    Schema(OwnedSchema),
}

/// Keys extracted from one Python object: their key type, the runs of keys and their owners.
pub(crate) struct Input<'py> {
    /// The key type of the keys ([`KeyType::Any`] for an empty list, which has none).
    pub(crate) key_type: KeyType,
    raws: Vec<RawPart>,
    // Dropped after `raws` is no longer read (parts borrow `self`).
    owners: Vec<Owner<'py>>,
}

/// `n` values at `p` as a slice (empty without reading `p` when `n` is 0).
///
/// # Safety
/// Unless `n` is 0, `p` is aligned and points to `n` initialized values that stay valid and
/// unmodified by Rust code for `'a`.
unsafe fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if n == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}

impl<'py> Input<'py> {
    fn new(key_type: KeyType) -> Input<'py> {
        Input {
            key_type,
            raws: Vec::new(),
            owners: Vec::new(),
        }
    }

    /// Number of keys (nulls included).
    pub(crate) fn len(&self) -> usize {
        self.raws.iter().map(RawPart::len).sum()
    }

    /// Adds a run, copying any buffer whose pointer is not aligned for its type (numpy views of
    /// packed records can be) so that the slices of [`Input::parts`] are sound.
    fn push(&mut self, mut raw: RawPart) {
        fn misaligned<T>(p: *const T) -> bool {
            !p.is_null() && !(p as usize).is_multiple_of(std::mem::align_of::<T>())
        }
        match &mut raw.values {
            RawValues::U64(p, n) if misaligned(*p) => {
                // SAFETY: `p` points to `n` u64 values (unaligned); read them as bytes.
                let bytes = unsafe { slice(p.cast::<u8>(), *n * 8) };
                let v: Vec<u64> = bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                *p = v.as_ptr();
                self.owners.push(Owner::Words64(v));
            }
            RawValues::Days64(p, n) if misaligned(*p) => {
                // SAFETY: as above.
                let bytes = unsafe { slice(p.cast::<u8>(), *n * 8) };
                let v: Vec<u64> = bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                *p = v.as_ptr().cast();
                self.owners.push(Owner::Words64(v));
            }
            RawValues::U32(p, n) if misaligned(*p) => {
                // SAFETY: `p` points to `n` u32 values (unaligned); read them as bytes.
                let bytes = unsafe { slice(p.cast::<u8>(), *n * 4) };
                let v: Vec<u32> = bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_ne_bytes(c.try_into().expect("4 bytes")))
                    .collect();
                *p = v.as_ptr();
                self.owners.push(Owner::Words32(v));
            }
            RawValues::Str32(_, o, n) if misaligned(*o) => {
                // SAFETY: `o` points to `n + 1` i32 offsets (unaligned).
                let bytes = unsafe { slice(o.cast::<u8>(), (*n + 1) * 4) };
                let v: Vec<u32> = bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_ne_bytes(c.try_into().expect("4 bytes")))
                    .collect();
                *o = v.as_ptr().cast();
                self.owners.push(Owner::Words32(v));
            }
            RawValues::Str64(_, o, n) if misaligned(*o) => {
                // SAFETY: `o` points to `n + 1` u64 offsets (unaligned).
                let bytes = unsafe { slice(o.cast::<u8>(), (*n + 1) * 8) };
                let v: Vec<u64> = bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                *o = v.as_ptr();
                self.owners.push(Owner::Words64(v));
            }
            _ => {}
        }
        self.raws.push(raw);
    }

    /// The runs of keys as slices that live as long as this borrow of `self` (which keeps their
    /// owners alive). String offsets are not validated here (the bulk operations do it); the
    /// data of a string run ends at its last offset, which must not be negative.
    pub(crate) fn parts(&self) -> Result<Vec<Part<'_>>, Error> {
        self.raws
            .iter()
            .map(|raw| {
                // SAFETY: (for every `slice` call below) each pointer was taken from a buffer
                // owned by an object in `self.owners` (a numpy array, an Arrow capsule or array,
                // or a Vec of ours), which outlives this borrow of `self`; `push` made every
                // pointer aligned for its type; the counts are those the producer stated
                // (numpy shape and itemsize, Arrow length and offset). Other Python threads
                // could write to a numpy array while we read it without the GIL, as with any
                // numpy operation that releases the GIL; the keys are plain integers and bytes,
                // so such a race can change answers but not memory safety of this code.
                let values = unsafe {
                    match raw.values {
                        RawValues::U64(p, n) => Values::U64(slice(p, n)),
                        RawValues::U32(p, n) => Values::U32(slice(p, n)),
                        RawValues::Days64(p, n) => Values::Days64(slice(p, n)),
                        RawValues::Records(p, n, w) => Values::Records(slice(p, n * w), w),
                        RawValues::Str32(d, o, n) => {
                            let offsets = slice(o, n + 1);
                            let end = usize::try_from(offsets[n]).map_err(|_| {
                                Error::value(format!(
                                    "string offset {n} ({}) is negative",
                                    offsets[n]
                                ))
                            })?;
                            Values::Str32(slice(d, end), offsets)
                        }
                        RawValues::Str64(d, o, n) => {
                            let offsets = slice(o, n + 1);
                            let end = usize::try_from(offsets[n])
                                .ok()
                                .filter(|&e| (e as u64) < (1 << 62))
                                .ok_or_else(|| {
                                    Error::value(format!(
                                        "string offset {n} ({}) is out of range",
                                        offsets[n] as i64
                                    ))
                                })?;
                            Values::Str64(slice(d, end), offsets)
                        }
                    }
                };
                let len = values.len();
                let nulls = raw.nulls.map(|(p, offset)| Validity {
                    // SAFETY: an Arrow validity bitmap covers bits `offset .. offset + length`.
                    bits: unsafe { slice(p, (offset + len).div_ceil(8)) },
                    offset,
                });
                Ok(Part { values, nulls })
            })
            .collect()
    }
}

/// Extracts the keys of `obj`. `hint` is the filter's key type, used for lists of Python ints
/// and floats (which carry no width) and of fixed-width `bytes`.
pub(crate) fn extract<'py>(obj: &Bound<'py, PyAny>, hint: KeyType) -> Result<Input<'py>, Error> {
    let py_err = |e: PyErr| Error::type_(e.to_string());
    if obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
    {
        let items = vec![obj.clone()];
        return from_items(&items, hint);
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return from_items(&list.iter().collect::<Vec<_>>(), hint);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return from_items(&tuple.iter().collect::<Vec<_>>(), hint);
    }
    if obj.hasattr("__arrow_c_array__").map_err(py_err)? {
        return from_arrow_array(obj);
    }
    if obj.hasattr("__arrow_c_stream__").map_err(py_err)? {
        return from_arrow_stream(obj);
    }
    if obj.hasattr("__array_interface__").map_err(py_err)? {
        return from_numpy(obj, hint, true);
    }
    // pandas Series, memoryviews, numpy scalars …: whatever numpy makes of it.
    let np = obj.py().import("numpy").map_err(py_err)?;
    let arr = np
        .call_method1("asarray", (obj,))
        .map_err(|e| Error::type_(format!("cannot read keys from a {}: {e}", type_name(obj))))?;
    from_numpy(&arr, hint, false)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// Keys of an object that exports `__arrow_c_array__`.
fn from_arrow_array<'py>(obj: &Bound<'py, PyAny>) -> Result<Input<'py>, Error> {
    let py_err = |e: PyErr| Error::type_(format!("__arrow_c_array__ failed: {e}"));
    let pair = obj.call_method0("__arrow_c_array__").map_err(py_err)?;
    let (schema_cap, array_cap): (Bound<'py, PyAny>, Bound<'py, PyAny>) =
        pair.extract().map_err(py_err)?;
    let schema = capsule_ptr(&schema_cap, c"arrow_schema")?.cast::<ArrowSchema>();
    let array = capsule_ptr(&array_cap, c"arrow_array")?.cast::<ArrowArray>();
    // SAFETY: the capsules hold a live schema and array of the same data (PyCapsule protocol);
    // both capsules are kept in the Input's owners for as long as the pointers are read, and
    // their destructors release the structs.
    let (key_type, raw) = unsafe { arrow::read_array(&*schema, &*array)? };
    let mut input = Input::new(key_type);
    input.owners.push(Owner::Py(schema_cap));
    input.owners.push(Owner::Py(array_cap));
    input.push(raw);
    Ok(input)
}

/// Keys of an object that exports `__arrow_c_stream__` (e.g. a pyarrow ChunkedArray).
fn from_arrow_stream<'py>(obj: &Bound<'py, PyAny>) -> Result<Input<'py>, Error> {
    let cap = obj
        .call_method0("__arrow_c_stream__")
        .map_err(|e| Error::type_(format!("__arrow_c_stream__ failed: {e}")))?;
    let stream = capsule_ptr(&cap, c"arrow_array_stream")?.cast::<ArrowArrayStream>();
    // SAFETY: the capsule holds a live stream, kept alive (`cap`) for these calls; we are its
    // only consumer.
    let schema = unsafe { arrow::stream_schema(stream)? };
    let mut input = Input::new(KeyType::Any);
    loop {
        // SAFETY: as above.
        let Some(array) = (unsafe { arrow::stream_next(stream)? }) else {
            break;
        };
        // SAFETY: the array is ours (moved out of the stream) and lives in `input.owners`
        // as long as its buffers are read; the schema describes every array of the stream.
        let (key_type, raw) = unsafe { arrow::read_array(schema.get(), array.get())? };
        input.key_type = key_type;
        input.owners.push(Owner::Array(array));
        input.push(raw);
    }
    if input.raws.is_empty() {
        // No chunks: still learn the key type from the schema (an empty array of it).
        // SAFETY: a live schema, ours.
        input.key_type = unsafe { arrow::schema_key_type(schema.get())? };
    }
    input.owners.push(Owner::Schema(schema));
    input.owners.push(Owner::Py(cap));
    Ok(input)
}

fn capsule_ptr(cap: &Bound<'_, PyAny>, name: &std::ffi::CStr) -> Result<*mut c_void, Error> {
    use pyo3::types::{PyCapsule, PyCapsuleMethods};
    let cap = cap.cast::<PyCapsule>().map_err(|_| {
        Error::type_(format!(
            "the Arrow PyCapsule protocol returned a non-capsule for {name:?}"
        ))
    })?;
    cap.pointer_checked(Some(name))
        .map(|p| p.as_ptr())
        .map_err(|e| Error::type_(format!("bad Arrow capsule ({name:?}): {e}")))
}

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
fn from_numpy<'py>(
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
        let items: Vec<Bound<'py, PyAny>> = match list.cast::<PyList>() {
            Ok(l) => l.iter().collect(),
            Err(_) => vec![list],
        };
        return from_items(&items, hint);
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

/// Keys from Python objects one by one (copied): `bytes`/`bytearray`/`str` (hashed as UTF-8),
/// `int` (as the filter's integer key type) or `float`.
fn from_items<'py>(items: &[Bound<'py, PyAny>], hint: KeyType) -> Result<Input<'py>, Error> {
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
