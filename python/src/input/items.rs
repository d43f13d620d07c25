//! Keys from Python objects one by one (lists, tuples, other iterables, object arrays, scalars),
//! read through the C API in one pass with the GIL held into buffers of ours: numbers as words;
//! text copied as one byte buffer and 64-bit offsets (the form of an Arrow `large_binary`
//! array), or for `Filter.insert`/`contains` (which pass the filter's seed) hashed as it is read,
//! which leaves 8 bytes per key and no second pass over the strings. The bulk operations then
//! run on these buffers with the GIL released: no Python object is read without the GIL, so
//! another thread may change a list meanwhile and only the keys read change.
//!
//! The pass makes no Python-level call per key: the first key decides the kind (text, int or
//! float), and each key is then a C call or two that run no Python code (`PyList_GetItem`,
//! `PyUnicode_AsUTF8AndSize`, `PyBytes_AsStringAndSize`, `PyLong_As…`, `PyFloat_AsDouble`)
//! behind a type check that is a pointer comparison for the exact built-in types. (Hashing the
//! strings on the other cores instead, from pointers kept while the GIL is held, read each
//! string twice and cost more: 27 against 15 ns of CPU per key, 2 M keys, 2-core VM. What pays
//! is reading the objects themselves on those cores, without the C API: `direct.rs`, which
//! takes a list's or tuple's `str` and `bytes` for `Filter.insert`/`contains` and leaves the
//! other items to this file's functions.)

use std::ffi::c_char;

use bloomlanes_core::{xxh64, KeyType};
use pyo3::ffi;
use pyo3::prelude::*;

use super::direct::Hashing;
use super::{type_name, Input, Owner, RawPart, RawValues};
use crate::errors::Error;

/// A Python object, borrowed.
type Obj = *mut ffi::PyObject;

/// Where the keys come from.
pub(super) enum Source<'a, 'py> {
    /// One key.
    One(&'a Bound<'py, PyAny>),
    /// The items of a `list`.
    List(&'a Bound<'py, PyAny>),
    /// The items of a `tuple`.
    Tuple(&'a Bound<'py, PyAny>),
    /// What iterating the object yields (sets, dict views, generators, ranges …).
    Iter(&'a Bound<'py, PyAny>),
}

impl Source<'_, '_> {
    /// The number of keys if known up front (to size the buffers).
    fn size_hint(&self) -> usize {
        // SAFETY: the objects are live (borrowed for `'a`) and of the type their variant names;
        // the size functions read a field and run no Python code.
        unsafe {
            match self {
                Source::One(_) => 1,
                Source::List(l) => ffi::PyList_Size(l.as_ptr()).max(0) as usize,
                Source::Tuple(t) => ffi::PyTuple_Size(t.as_ptr()).max(0) as usize,
                Source::Iter(_) => 0,
            }
        }
    }

    /// Calls `f(index, item)` for every item, the GIL held throughout; stops at the first error.
    ///
    /// `item` is a live object for the duration of the call and `f` must not run Python code
    /// before it is done with it: list and tuple items are borrowed references, which Python
    /// code could drop (by changing the list). The readers of this file call only C functions
    /// that run no Python code until their last use of `item` (an error message may call into
    /// Python afterwards, but then stops the walk).
    fn for_each<F>(&self, mut f: F) -> Result<(), Error>
    where
        F: FnMut(usize, *mut ffi::PyObject) -> Result<(), Error>,
    {
        let py_err = |what: &str, e: PyErr| Error::type_(format!("{what}: {e}"));
        match self {
            Source::One(obj) => f(0, obj.as_ptr()),
            Source::List(list) | Source::Tuple(list) => {
                let is_list = matches!(self, Source::List(_));
                let n = self.size_hint();
                let get = |i: usize| -> Result<Obj, Error> {
                    let item = sequence_item(list, is_list, i)?;
                    prefetch(item);
                    Ok(item)
                };
                // The items AHEAD places on, fetched early so that their objects are in cache
                // when read (objects lie in the order they were made, not the list's). They
                // stay valid: only `f` runs meanwhile, and it runs no Python code.
                let mut ahead = [std::ptr::null_mut(); AHEAD];
                for (i, slot) in ahead.iter_mut().enumerate().take(n) {
                    *slot = get(i)?;
                }
                for i in 0..n {
                    let item = ahead[i % AHEAD];
                    if i + AHEAD < n {
                        ahead[i % AHEAD] = get(i + AHEAD)?;
                    }
                    f(i, item)?;
                }
                Ok(())
            }
            Source::Iter(obj) => {
                let iter = obj.try_iter().map_err(|e| {
                    Error::type_(format!("cannot read keys from a {}: {e}", type_name(obj)))
                })?;
                for (i, item) in iter.enumerate() {
                    let item = item.map_err(|e| py_err("iterating the keys failed", e))?;
                    // `item` is an owned reference, alive until after `f`.
                    f(i, item.as_ptr())?;
                }
                Ok(())
            }
        }
    }
}

/// Item `i` of `seq`, a list if `is_list`, else a tuple: a borrowed reference, valid until
/// Python code runs (which could change the list), or an error if there is no such item (a list
/// can only shrink if Python code runs while its keys are read, which the readers do not let).
pub(super) fn sequence_item(seq: &Bound<'_, PyAny>, is_list: bool, i: usize) -> Result<Obj, Error> {
    // SAFETY: `seq` is a live list (or tuple), the GIL is held (the `Bound`); the getters check
    // the index and return a borrowed reference or NULL with an exception set.
    let item = unsafe {
        if is_list {
            ffi::PyList_GetItem(seq.as_ptr(), i as ffi::Py_ssize_t)
        } else {
            ffi::PyTuple_GetItem(seq.as_ptr(), i as ffi::Py_ssize_t)
        }
    };
    if item.is_null() {
        let e = PyErr::fetch(seq.py());
        return Err(Error::type_(format!(
            "the list changed while its keys were read: {e}"
        )));
    }
    Ok(item)
}

/// How many items ahead of the one being read a list walk fetches (and prefetches); also the
/// parallel walk's distance (`direct.rs`: 32 took 5 % less CPU than 16 there).
pub(super) const AHEAD: usize = 32;

/// Asks the CPU to load the start of `obj` (the header and a short string's bytes) into cache.
#[inline(always)]
pub(super) fn prefetch(obj: *mut ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address (SSE, which every
    // x86-64 has).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(obj.cast::<i8>());
        _mm_prefetch::<_MM_HINT_T0>(obj.cast::<i8>().wrapping_add(64));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = obj;
}

/// What the first key says the keys are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Int,
    Float,
}

/// The type object of `obj`.
///
/// # Safety
/// `obj` is a live object.
#[inline(always)]
unsafe fn type_of(obj: *mut ffi::PyObject) -> *mut ffi::PyTypeObject {
    // SAFETY: the caller's contract.
    unsafe { ffi::Py_TYPE(obj) }
}

/// A new reference to the borrowed `obj`, for error messages.
///
/// # Safety
/// `obj` is a live object and the GIL is held.
unsafe fn bound<'py>(py: Python<'py>, obj: *mut ffi::PyObject) -> Bound<'py, PyAny> {
    // SAFETY: the caller's contract.
    unsafe { Bound::from_borrowed_ptr(py, obj) }
}

/// The bytes of text key `i` (`str` as UTF-8, `bytes`, `bytearray`): a pointer into `obj` (its
/// UTF-8 cache or buffer) and a length, valid while `obj` lives and no Python code runs; an
/// error for another type or a `str` that has no UTF-8 form (lone surrogates).
///
/// # Safety
/// `obj` is a live object and the GIL is held.
#[inline(always)]
unsafe fn text_bytes(
    py: Python<'_>,
    i: usize,
    obj: *mut ffi::PyObject,
) -> Result<(*const u8, usize), Error> {
    let mut len: ffi::Py_ssize_t = 0;
    // SAFETY: `obj` is live and the GIL held (the caller's contract). Each branch checks the
    // type before calling the function for it; none of them runs Python code (only the error
    // messages may, after the last use of the bytes). The pointer returned points to `len`
    // bytes owned by `obj`.
    unsafe {
        let t = type_of(obj);
        let p: *const c_char = if t == &raw mut ffi::PyUnicode_Type
            || (t != &raw mut ffi::PyBytes_Type && ffi::PyUnicode_Check(obj) != 0)
        {
            ffi::PyUnicode_AsUTF8AndSize(obj, &mut len)
        } else if t == &raw mut ffi::PyBytes_Type || ffi::PyBytes_Check(obj) != 0 {
            let mut p: *mut c_char = std::ptr::null_mut();
            if ffi::PyBytes_AsStringAndSize(obj, &mut p, &mut len) != 0 {
                std::ptr::null()
            } else {
                p
            }
        } else if ffi::PyByteArray_Check(obj) != 0 {
            len = ffi::PyByteArray_Size(obj);
            ffi::PyByteArray_AsString(obj)
        } else {
            return Err(wrong(&bound(py, obj), i, "bytes or str"));
        };
        if p.is_null() {
            let e = PyErr::fetch(py);
            return Err(Error::value(format!("str key at index {i}: {e}")));
        }
        Ok((p.cast(), len.max(0) as usize))
    }
}

/// The bytes of text key `i` as [`text_bytes`], checked to be `width` long if given.
///
/// # Safety
/// `obj` is a live object and the GIL is held; the bytes are valid while `obj` lives and no
/// Python code runs.
#[inline(always)]
pub(super) unsafe fn text_key<'a>(
    py: Python<'_>,
    i: usize,
    obj: *mut ffi::PyObject,
    width: Option<usize>,
) -> Result<&'a [u8], Error> {
    // SAFETY: the caller's contract; `text_bytes` gives `len` bytes at `p`.
    let key = unsafe {
        let (p, len) = text_bytes(py, i, obj)?;
        if len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(p, len)
        }
    };
    match width {
        Some(w) if w != key.len() => Err(not_fixed(i, key.len(), w)),
        _ => Ok(key),
    }
}

/// The kind of the first key (or why it cannot be one).
///
/// # Safety
/// `obj` is a live object and the GIL is held.
pub(super) unsafe fn kind_of(py: Python<'_>, obj: *mut ffi::PyObject) -> Result<Kind, Error> {
    // SAFETY: (the checks) the caller's contract; type checks read type flags only.
    unsafe {
        if ffi::PyUnicode_Check(obj) != 0
            || ffi::PyBytes_Check(obj) != 0
            || ffi::PyByteArray_Check(obj) != 0
        {
            Ok(Kind::Text)
        } else if ffi::PyBool_Check(obj) != 0 {
            Err(Error::type_("booleans are not keys"))
        } else if ffi::PyLong_Check(obj) != 0 {
            Ok(Kind::Int)
        } else if ffi::PyFloat_Check(obj) != 0 {
            Ok(Kind::Float)
        } else {
            Err(Error::type_(format!(
                "keys must be bytes, str, int or float (or arrays of them), not {}",
                type_name(&bound(py, obj))
            )))
        }
    }
}

/// Keys from Python objects one by one (copied): `bytes`/`bytearray`/`str` (hashed as UTF-8),
/// `int` (as the filter's integer key type `hint`) or `float`; all of the first key's kind.
/// With `hashing`, text keys are hashed with its seed as they are read instead of copied (their
/// hashes are the whole input: only a filter of that seed can take them), those of a list or
/// tuple on its threads where they can be ([`super::direct`]).
pub(super) fn from_items<'py>(
    py: Python<'py>,
    source: Source<'_, 'py>,
    hint: KeyType,
    hashing: Option<Hashing<'_>>,
) -> Result<Input<'py>, Error> {
    if let Some(h) = hashing {
        if let Some(input) = super::direct::from_sequence(py, &source, hint, h)? {
            return Ok(input);
        }
    }
    let seed = hashing.map(|h| h.seed);
    // Made at the first item, whose kind decides (an iterator can be read once).
    let mut reader: Option<Reader> = None;
    source.for_each(|i, obj| {
        let r = match &mut reader {
            Some(r) => r,
            None => {
                // SAFETY: `for_each` passes a live object, GIL held.
                let k = unsafe { kind_of(py, obj)? };
                reader.insert(Reader::new(k, hint, seed, source.size_hint())?)
            }
        };
        // SAFETY: as above; `push` runs no Python code before its last use of `obj`.
        unsafe { r.push(py, i, obj) }
    })?;
    match reader {
        None => Ok(Input::new(KeyType::Any)),
        Some(r) => r.finish(),
    }
}

/// Integer keys: how a Python int becomes a key of the filter's integer key type.
#[derive(Clone, Copy)]
enum IntForm {
    U64,
    I64,
    U32,
    I32,
}

/// The keys read so far.
struct Reader {
    kind: Kind,
    hint: KeyType,
    int_form: IntForm,
    /// Text: hash with this seed into `w64` rather than copy.
    seed: Option<u64>,
    /// Text: the width of `fixed:<n>` keys.
    width: Option<usize>,
    /// Text: the UTF-8 bytes of every key, and where each ends (after a leading 0).
    data: Vec<u8>,
    offsets: Vec<u64>,
    /// 8-byte keys (u64, i64, timestamps, f64 bits).
    w64: Vec<u64>,
    /// 4-byte keys (u32, i32, dates, f32 bits).
    w32: Vec<u32>,
}

impl Reader {
    fn new(kind: Kind, hint: KeyType, seed: Option<u64>, n: usize) -> Result<Reader, Error> {
        let int_form = match hint {
            KeyType::U64 => IntForm::U64,
            KeyType::I64
            | KeyType::TimestampMillis
            | KeyType::TimestampMicros
            | KeyType::TimestampNanos => IntForm::I64,
            KeyType::U32 => IntForm::U32,
            KeyType::I32 | KeyType::Date32 => IntForm::I32,
            _ if kind == Kind::Int => return Err(ints_need_a_width(hint)),
            _ => IntForm::U64,
        };
        let mut r = Reader {
            kind,
            hint,
            int_form,
            seed,
            width: match hint {
                KeyType::FixedBytes(w) => Some(usize::from(w)),
                _ => None,
            },
            data: Vec::new(),
            offsets: Vec::new(),
            w64: Vec::new(),
            w32: Vec::new(),
        };
        match (kind, int_form) {
            (Kind::Text, _) if seed.is_some() => r.w64.reserve(n),
            (Kind::Text, _) => {
                r.offsets.reserve(n + 1);
                r.offsets.push(0);
                r.data.reserve(n * 8);
            }
            (Kind::Int, IntForm::U32 | IntForm::I32) => r.w32.reserve(n),
            (Kind::Float, _) if hint == KeyType::F32 => r.w32.reserve(n),
            _ => r.w64.reserve(n),
        }
        Ok(r)
    }

    /// Adds key `i`.
    ///
    /// # Safety
    /// `obj` is a live object and the GIL is held.
    #[inline(always)]
    unsafe fn push(
        &mut self,
        py: Python<'_>,
        i: usize,
        obj: *mut ffi::PyObject,
    ) -> Result<(), Error> {
        // SAFETY: the caller's contract.
        unsafe {
            match self.kind {
                Kind::Text => self.push_text(py, i, obj),
                Kind::Int => self.push_int(py, i, obj),
                Kind::Float => self.push_float(py, i, obj),
            }
        }
    }

    /// # Safety
    /// As [`Reader::push`].
    #[inline(always)]
    unsafe fn push_text(&mut self, py: Python<'_>, i: usize, obj: Obj) -> Result<(), Error> {
        // SAFETY: the caller's contract: `obj` lives and no Python code runs until we return,
        // so its bytes are read (hashed or copied) while they are valid.
        let key = unsafe { text_key(py, i, obj, self.width)? };
        match self.seed {
            Some(seed) => self.w64.push(xxh64(key, seed)),
            None => {
                self.data.extend_from_slice(key);
                self.offsets.push(self.data.len() as u64);
            }
        }
        Ok(())
    }

    /// # Safety
    /// As [`Reader::push`].
    #[inline(always)]
    unsafe fn push_int(&mut self, py: Python<'_>, i: usize, obj: Obj) -> Result<(), Error> {
        // SAFETY: `obj` is live and the GIL held (the caller's contract); it is checked to be an
        // int (not a bool) first, and the conversions of an int run no Python code (`__index__`
        // is called only for non-ints). They return -1 with an exception set on overflow.
        unsafe {
            let t = type_of(obj);
            if t != &raw mut ffi::PyLong_Type
                && (ffi::PyLong_Check(obj) == 0 || ffi::PyBool_Check(obj) != 0)
            {
                return Err(wrong(&bound(py, obj), i, "int"));
            }
            let fits = match self.int_form {
                IntForm::U64 => {
                    let v = ffi::PyLong_AsUnsignedLongLong(obj);
                    self.w64.push(v);
                    v != u64::MAX || ffi::PyErr_Occurred().is_null()
                }
                IntForm::I64 => {
                    let v = ffi::PyLong_AsLongLong(obj);
                    self.w64.push(v as u64);
                    v != -1 || ffi::PyErr_Occurred().is_null()
                }
                IntForm::U32 => {
                    let v = ffi::PyLong_AsUnsignedLongLong(obj);
                    self.w32.push(v as u32);
                    // u64::MAX (an error's value too) does not fit either.
                    u32::try_from(v).is_ok()
                }
                IntForm::I32 => {
                    let v = ffi::PyLong_AsLongLong(obj);
                    self.w32.push(v as i32 as u32);
                    (v != -1 || ffi::PyErr_Occurred().is_null()) && i32::try_from(v).is_ok()
                }
            };
            if !fits {
                ffi::PyErr_Clear();
                return Err(Error::value(format!(
                    "key {} at index {i} does not fit the key type {}",
                    bound(py, obj),
                    self.hint
                )));
            }
        }
        Ok(())
    }

    /// # Safety
    /// As [`Reader::push`].
    #[inline(always)]
    unsafe fn push_float(&mut self, py: Python<'_>, i: usize, obj: Obj) -> Result<(), Error> {
        // SAFETY: `obj` is live and the GIL held (the caller's contract); checked to be a float
        // first, whose conversion runs no Python code and cannot fail.
        let f = unsafe {
            if type_of(obj) != &raw mut ffi::PyFloat_Type && ffi::PyFloat_Check(obj) == 0 {
                return Err(wrong(&bound(py, obj), i, "float"));
            }
            ffi::PyFloat_AsDouble(obj)
        };
        if self.hint == KeyType::F32 {
            self.w32.push((f as f32).to_bits());
        } else {
            self.w64.push(f.to_bits());
        }
        Ok(())
    }

    /// The keys as an [`Input`] owning the buffers.
    fn finish<'py>(self) -> Result<Input<'py>, Error> {
        Ok(match self.kind {
            Kind::Text => match self.seed {
                Some(seed) => hashed(self.hint, self.w64, seed),
                None => return text(self.data, self.offsets, self.hint),
            },
            Kind::Int => match self.int_form {
                IntForm::U64 | IntForm::I64 => owned64(self.hint, self.w64),
                IntForm::U32 | IntForm::I32 => owned32(self.hint, self.w32),
            },
            Kind::Float if self.hint == KeyType::F32 => owned32(KeyType::F32, self.w32),
            Kind::Float => owned64(KeyType::F64, self.w64),
        })
    }
}

/// Text keys: byte strings of the filter's width for a `fixed:<n>` filter, else `bytes`.
fn text<'py>(data: Vec<u8>, offsets: Vec<u64>, hint: KeyType) -> Result<Input<'py>, Error> {
    let n = offsets.len() - 1;
    let mut input;
    if let KeyType::FixedBytes(w) = hint {
        let w = usize::from(w);
        input = Input::new(hint);
        input.push(RawPart {
            values: RawValues::Records(data.as_ptr(), n, w),
            nulls: None,
        });
    } else {
        input = Input::new(KeyType::Bytes);
        input.push(RawPart {
            values: RawValues::Str64(data.as_ptr(), offsets.as_ptr(), n),
            nulls: None,
        });
        input.owners.push(Owner::Words64(offsets));
    }
    input.owners.push(Owner::Bytes(data));
    Ok(input)
}

/// The error for key `i` of `len` bytes given to a filter of `fixed:<w>` keys.
fn not_fixed(i: usize, len: usize, w: usize) -> Error {
    Error::KeyType(format!(
        "key at index {i} has {len} bytes, but the filter's keys are fixed:{w}"
    ))
}

/// The error for key `i` of another kind than those before it.
fn wrong(x: &Bound<'_, PyAny>, i: usize, want: &str) -> Error {
    Error::type_(format!(
        "key at index {i} is a {}, but the keys before it are {want}",
        type_name(x)
    ))
}

/// Python ints for a filter without an integer key type.
fn ints_need_a_width(hint: KeyType) -> Error {
    Error::type_(format!(
        "Python ints carry no width: give the filter an integer key type (e.g. \
         key_type='i64'), or pass a numpy array with a dtype{}",
        if hint == KeyType::Any {
            String::new()
        } else {
            format!(" (this filter's keys are {hint})")
        }
    ))
}

/// The key type of text keys hashed for a filter of key type `hint`.
pub(super) fn text_key_type(hint: KeyType) -> KeyType {
    match hint {
        KeyType::FixedBytes(_) => hint,
        _ => KeyType::Bytes,
    }
}

/// Hashes of text keys with `seed`, for a filter of key type `hint`.
pub(super) fn hashed<'py>(hint: KeyType, v: Vec<u64>, seed: u64) -> Input<'py> {
    let values = RawValues::Hashes(v.as_ptr(), v.len(), seed);
    owning(text_key_type(hint), values, Owner::Words64(v))
}

fn owned64<'py>(key_type: KeyType, v: Vec<u64>) -> Input<'py> {
    let values = RawValues::U64(v.as_ptr(), v.len());
    owning(key_type, values, Owner::Words64(v))
}

fn owned32<'py>(key_type: KeyType, v: Vec<u32>) -> Input<'py> {
    let values = RawValues::U32(v.as_ptr(), v.len());
    owning(key_type, values, Owner::Words32(v))
}

/// An input of one run, `values`, whose memory `owner` holds (moving a vector into it keeps
/// its buffer where `values` points).
fn owning<'py>(key_type: KeyType, values: RawValues, owner: Owner<'py>) -> Input<'py> {
    let mut input = Input::new(key_type);
    input.push(RawPart {
        values,
        nulls: None,
    });
    input.owners.push(owner);
    input
}
