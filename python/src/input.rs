//! Keys from Python objects, read in place: numpy arrays through `__array_interface__`, Arrow
//! arrays and streams through the PyCapsule protocol (`__arrow_c_array__`, `__arrow_c_stream__`),
//! and lists, tuples and other iterables of `bytes`/`str`/`int`/`float` (copied in one pass
//! through the C API: they have no buffer).
//!
//! Extraction happens with the GIL held and in two steps: [`extract`] collects raw pointers to the
//! key buffers into an [`Input`] that also keeps every object owning them alive; then
//! [`Input::parts`] lends them out as slices ([`Part`]) that can cross into `Python::detach`.
//! (The stable ABI for Python 3.9 has no buffer protocol, hence `__array_interface__`.)

use std::ffi::c_void;

use bloomlanes_core::{KeyType, Params};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple};

use crate::arrow::{self, ArrowArray, ArrowArrayStream, ArrowSchema, OwnedArray, OwnedSchema};
use crate::errors::Error;

mod calibrate;
mod direct;
mod items;
mod list_contains;
mod list_insert;

pub(crate) use calibrate::_list_walk;
pub(crate) use list_insert::_list_inserts_in_one_pass;
mod numpy;
mod text_keys;

use crate::ops::Threads;
use direct::Hashing;
use items::{from_items, Source};
use numpy::from_numpy;

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
    /// The keys' hashes, their count, the seed they were hashed with.
    Hashes(*const u64, usize, u64),
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
            | RawValues::Str64(_, _, n)
            | RawValues::Hashes(_, n, _) => n,
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
    /// The keys' hashes with a seed (text keys of a list hashed as they were read).
    Hashes(&'a [u64], u64),
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
            Values::Hashes(h, _) => h.len(),
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

/// The `n` native-endian words (`u32` or `u64`) at `p`, which may be unaligned, copied into an
/// aligned vector.
///
/// # Safety
/// `p` must point to `n * size_of::<T>()` readable bytes (any alignment).
unsafe fn aligned_words<T: bytemuck::Pod>(p: *const u8, n: usize) -> Vec<T> {
    // SAFETY: the caller's contract; bytes need no alignment.
    let bytes = unsafe { slice(p, n * std::mem::size_of::<T>()) };
    bytemuck::pod_collect_to_vec(bytes)
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
                // SAFETY: `p` points to `n` u64 values (unaligned), kept alive by this run's owner.
                let v = unsafe { aligned_words::<u64>(p.cast(), *n) };
                *p = v.as_ptr();
                self.owners.push(Owner::Words64(v));
            }
            RawValues::Days64(p, n) if misaligned(*p) => {
                // SAFETY: `p` points to `n` 64-bit day counts (unaligned), kept alive by this
                // run's owner.
                let v = unsafe { aligned_words::<u64>(p.cast(), *n) };
                *p = v.as_ptr().cast();
                self.owners.push(Owner::Words64(v));
            }
            RawValues::U32(p, n) if misaligned(*p) => {
                // SAFETY: `p` points to `n` u32 values (unaligned), kept alive by this run's owner.
                let v = unsafe { aligned_words::<u32>(p.cast(), *n) };
                *p = v.as_ptr();
                self.owners.push(Owner::Words32(v));
            }
            RawValues::Str32(_, o, n) if misaligned(*o) => {
                // SAFETY: `o` points to `n + 1` i32 offsets (unaligned), kept alive by this
                // run's owner.
                let v = unsafe { aligned_words::<u32>(o.cast(), *n + 1) };
                *o = v.as_ptr().cast();
                self.owners.push(Owner::Words32(v));
            }
            RawValues::Str64(_, o, n) if misaligned(*o) => {
                // SAFETY: `o` points to `n + 1` u64 offsets (unaligned), kept alive by this
                // run's owner.
                let v = unsafe { aligned_words::<u64>(o.cast(), *n + 1) };
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
                        RawValues::Hashes(h, n, seed) => Values::Hashes(slice(h, n), seed),
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

/// One key (for `in`): [`extract`], and an error naming `many` (the method for many keys)
/// when `obj` holds another number of keys.
pub(crate) fn extract_one<'py>(
    obj: &Bound<'py, PyAny>,
    hint: KeyType,
    many: &str,
) -> Result<Input<'py>, Error> {
    let input = extract(obj, hint)?;
    if input.len() != 1 {
        return Err(Error::type_(format!(
            "`in` takes one key, got {} (use {many}() for many)",
            input.len()
        )));
    }
    Ok(input)
}

/// Extracts the keys of `obj`. `hint` is the filter's key type, used for lists of Python ints
/// and floats (which carry no width) and of fixed-width `bytes`.
pub(crate) fn extract<'py>(obj: &Bound<'py, PyAny>, hint: KeyType) -> Result<Input<'py>, Error> {
    extract_with(obj, hint, None)
}

/// The keys of `obj` for a filter of `params`; with `hashed` (the call's threads), text keys of
/// a list, tuple or other iterable are hashed with the filter's seed as they are read (their
/// bytes are never copied; a list's or tuple's on those threads), and only a filter of that seed
/// can take the hashes (not the GPU backend, which hashes there).
pub(crate) fn extract_for<'py>(
    obj: &Bound<'py, PyAny>,
    params: &Params,
    hashed: Option<&Threads>,
) -> Result<Input<'py>, Error> {
    let hashing = hashed.map(|threads| Hashing {
        seed: params.seed,
        threads,
    });
    extract_with(obj, params.key_type, hashing)
}

/// [`extract`], hashing text items as `hashing` says when given; text keys for a filter of keys
/// given as text (`ip`, `flow`) are parsed as its type instead ([`text_keys`]).
fn extract_with<'py>(
    obj: &Bound<'py, PyAny>,
    hint: KeyType,
    hashing: Option<Hashing<'_>>,
) -> Result<Input<'py>, Error> {
    if text_keys::parsed_from_text(hint) {
        return extract_raw(obj, hint, None)?.parse_text_as(hint);
    }
    extract_raw(obj, hint, hashing)
}

/// A dictionary-encoded column as its values (a copy): a pandas `category` Series through
/// pyarrow (its nulls kept, its integers exact; without pyarrow through numpy, refused when it
/// has nulls, which numpy would make NaN), a pyarrow dictionary array or chunked array cast to
/// its value type. `None` for anything else. A column of IP addresses or names is often
/// categorical, and its keys are the values, not the codes.
fn decoded<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = obj.py();
    let dictionary = |t: &Bound<'py, PyAny>| -> PyResult<bool> {
        Ok(t.hasattr("value_type")? && t.hasattr("index_type")?)
    };
    if let Ok(dtype) = obj.getattr("dtype") {
        if dtype
            .getattr("name")
            .is_ok_and(|n| n.eq("category").unwrap_or(false))
        {
            let Ok(pa) = py.import("pyarrow") else {
                if obj.call_method0("isna")?.call_method0("any")?.is_truthy()? {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "a categorical Series with nulls is read through pyarrow (pip install \
                         pyarrow), or drop its nulls first",
                    ));
                }
                return Ok(Some(py.import("numpy")?.call_method1("asarray", (obj,))?));
            };
            let arr = pa.call_method1("array", (obj,))?;
            let t = arr.getattr("type")?;
            if dictionary(&t)? {
                return Ok(Some(arr.call_method1("cast", (t.getattr("value_type")?,))?));
            }
            return Ok(Some(arr));
        }
    }
    if let Ok(t) = obj.getattr("type") {
        if dictionary(&t)? && obj.hasattr("cast")? {
            return Ok(Some(obj.call_method1("cast", (t.getattr("value_type")?,))?));
        }
    }
    Ok(None)
}

/// The keys of `obj` as they come (see [`extract_with`]).
fn extract_raw<'py>(
    obj: &Bound<'py, PyAny>,
    hint: KeyType,
    hashing: Option<Hashing<'_>>,
) -> Result<Input<'py>, Error> {
    let py = obj.py();
    let py_err = |e: PyErr| Error::type_(e.to_string());
    if obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
    {
        return from_items(py, Source::One(obj), hint, hashing);
    }
    if obj.is_instance_of::<PyList>() {
        return from_items(py, Source::List(obj), hint, hashing);
    }
    if obj.is_instance_of::<PyTuple>() {
        return from_items(py, Source::Tuple(obj), hint, hashing);
    }
    if let Some(values) = decoded(obj).map_err(py_err)? {
        return extract_raw(&values, hint, hashing);
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
    // Sets, dict views, generators, ranges …: their items one by one. (Not what numpy reads
    // better: array-likes with `__array__` such as pandas Series, and buffers.)
    if !obj.hasattr("__array__").map_err(py_err)?
        && !obj.is_instance_of::<PyMemoryView>()
        && obj.hasattr("__iter__").map_err(py_err)?
    {
        return from_items(py, Source::Iter(obj), hint, hashing);
    }
    // pandas Series, memoryviews, numpy scalars …: whatever numpy makes of it.
    let np = py.import("numpy").map_err(py_err)?;
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
        // SAFETY: the stream is the live one held by `cap` for the whole loop, and this loop is
        // its only consumer, so `get_next` is never called concurrently or after release.
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

/// The pointer in a PyCapsule named `name` (Arrow's C data interface, DLPack).
pub(crate) fn capsule_ptr(
    cap: &Bound<'_, PyAny>,
    name: &std::ffi::CStr,
) -> Result<*mut c_void, Error> {
    use pyo3::types::{PyCapsule, PyCapsuleMethods};
    let cap = cap.cast::<PyCapsule>().map_err(|_| {
        Error::type_(format!(
            "the PyCapsule protocol returned a non-capsule for {name:?}"
        ))
    })?;
    cap.pointer_checked(Some(name))
        .map(|p| p.as_ptr())
        .map_err(|e| Error::type_(format!("bad capsule ({name:?}): {e}")))
}
