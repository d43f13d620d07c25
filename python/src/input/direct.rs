//! The `str` and `bytes` items of a `list` or `tuple` hashed on every core, for
//! `Filter.insert`/`contains`.
//!
//! The calling thread holds the GIL for the whole call and runs no Python code meanwhile, so no
//! thread can change the sequence, drop one of its items or write to a string (each needs the
//! GIL). Threads started for the call, and the caller, then read the item pointers and the strings'
//! bytes by plain loads, without the C API, and hash them with the filter's seed. The crate is
//! abi3, where `PyList_GET_ITEM` and `PyUnicode_DATA` do not exist, so where CPython keeps these
//! is measured once per process on objects made through the API ([`calibrate`]); when anything
//! there disagrees, the walk is not used and the keys are read as before (items.rs).
//!
//! The workers take only the common items: an exact `str` (a pointer comparison of its type)
//! that is compact and ASCII (two state bits), whose UTF-8 form is its data, right after the
//! header, and an exact `bytes`. Every other item (non-ASCII or non-compact `str`, subclasses,
//! `bytearray`, anything wrong) is left to a second pass on the calling thread through the C
//! API, in index order, so the hashes, their order and the first error are those of the
//! one-thread walk.

use std::sync::Mutex;

use bloomlanes_core::{xxh64, KeyType};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use super::items::{hashed, kind_of, sequence_item, text_key, Kind, Source, AHEAD};
use super::Input;
use crate::errors::Error;
use crate::ops::Threads;

/// A Python object, borrowed.
type Obj = *mut ffi::PyObject;

/// Where CPython keeps what the walk reads: byte offsets into the objects, measured by
/// [`calibrate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    /// A list's pointer to its item array.
    list_items: usize,
    /// A tuple's first item (the items are inline).
    tuple_items: usize,
    /// A `str`'s length in code points (bytes, for an ASCII one).
    str_len: usize,
    /// A `str`'s 32 state bits.
    str_state: usize,
    /// The state bits of a compact ASCII `str`.
    compact_ascii: u32,
    /// A compact ASCII `str`'s bytes (its UTF-8 form, NUL-terminated).
    str_data: usize,
    /// A `bytes` object's length.
    bytes_len: usize,
    /// A `bytes` object's bytes (NUL-terminated).
    bytes_data: usize,
}

/// Keys per piece of the walk (a list of at most this many is walked by the calling thread).
const CHUNK: usize = 16 * 1024;

/// The environment variable that turns the walk off (`gil`: every item through the C API on
/// the calling thread, as when the calibration fails), for tests and comparisons.
const SWITCH: &str = "BLOOMLANES_LIST_WALK";

/// How text keys are hashed as they are read: with a filter's seed, on a call's threads.
#[derive(Clone, Copy)]
pub(crate) struct Hashing<'a> {
    /// The filter's seed.
    pub(crate) seed: u64,
    /// Where a list's or tuple's strings are hashed.
    pub(crate) threads: &'a Threads,
}

/// The hashes of a sequence's keys: `hashes[i]` for every index except those in `others`
/// (ascending), which the workers left to the C API.
struct Walked {
    hashes: Vec<u64>,
    others: Vec<usize>,
}

/// The keys of a list or tuple whose first item is text, hashed as `hashing` says: the compact
/// ASCII `str` and the `bytes` items on its threads ([`hash_items`]), then the others through
/// the C API on this thread, in index order; `None` for another source or first item, or when
/// the walk is off.
pub(super) fn from_sequence<'py>(
    py: Python<'py>,
    source: &Source<'_, 'py>,
    hint: KeyType,
    hashing: Hashing<'_>,
) -> Result<Option<Input<'py>>, Error> {
    let (seq, is_list) = match source {
        Source::List(seq) => (seq, true),
        Source::Tuple(seq) => (seq, false),
        _ => return Ok(None),
    };
    let item = |i: usize| sequence_item(seq, is_list, i);
    // SAFETY: (`kind_of`) a live item, the GIL held.
    if !seq.len().is_ok_and(|n| n > 0) || unsafe { kind_of(py, item(0)?)? } != Kind::Text {
        return Ok(None);
    }
    let width = match hint {
        KeyType::FixedBytes(w) => Some(usize::from(w)),
        _ => None,
    };
    let Some(Walked { mut hashes, others }) =
        hash_items(seq, is_list, hashing.seed, width, hashing.threads)
    else {
        return Ok(None);
    };
    for i in others {
        let obj = item(i)?;
        // SAFETY: a live item, the GIL held; its bytes are hashed before any Python code runs.
        let key = unsafe { text_key(py, i, obj, width)? };
        hashes[i] = xxh64(key, hashing.seed);
    }
    Ok(Some(hashed(hint, hashes, hashing.seed)))
}

/// Hashes the compact ASCII `str` and exact `bytes` items of `seq` (a list if `is_list`, else a
/// tuple) with `seed` on `threads`, with `width` (a `fixed:<n>` filter) leaving keys of another
/// length to the caller; `None` if the walk is off or CPython's layout was not recognised.
fn hash_items(
    seq: &Bound<'_, PyAny>,
    is_list: bool,
    seed: u64,
    width: Option<usize>,
    threads: &Threads,
) -> Option<Walked> {
    if std::env::var_os(SWITCH).is_some_and(|v| v == "gil") {
        return None;
    }
    let layout = layout(seq.py())?;
    let p = seq.as_ptr();
    // SAFETY: `seq` is a live list (or tuple), the GIL is held; the size functions read a field
    // and run no Python code. A list's item pointer sits at the calibrated offset, inside the
    // list object; a tuple's items start at the calibrated offset, inside the tuple.
    let (n, items) = unsafe {
        if is_list {
            let n = ffi::PyList_Size(p);
            (n, word(p, layout.list_items) as *const Obj)
        } else {
            let n = ffi::PyTuple_Size(p);
            (
                n,
                p.cast::<u8>()
                    .add(layout.tuple_items)
                    .cast::<Obj>()
                    .cast_const(),
            )
        }
    };
    let n = usize::try_from(n).ok().filter(|&n| n > 0)?;
    let items = Items(items);
    let mut hashes = vec![0u64; n];
    let walk = |start: usize, out: &mut [u64]| {
        // SAFETY: `items` points to the `n` live items of `seq`, which cannot change until this
        // call returns: the calling thread holds the GIL throughout and runs no Python code, and
        // every other thread needs the GIL to change a list, drop an object or write a string.
        // `walk_run` reads only `start .. start + out.len() <= n`.
        unsafe { walk_run(&layout, items.ptr(), start, n, seed, width, out) }
    };
    let others = on_threads(threads.count(), &mut hashes, walk);
    Some(Walked { hashes, others })
}

/// Runs `walk(start, out)` over the [`CHUNK`]-key pieces of `hashes` on the calling thread and
/// `threads - 1` threads started for the call (not the rayon pool: the caller holds the GIL,
/// and must not wait for a pool that another call keeps busy), each taking the next piece
/// until none is left; returns the indices `walk` left, ascending.
fn on_threads<W>(threads: usize, hashes: &mut [u64], walk: W) -> Vec<usize>
where
    W: Fn(usize, &mut [u64]) -> Vec<usize> + Sync,
{
    let pieces = hashes.len().div_ceil(CHUNK);
    let next = Mutex::new(hashes.chunks_mut(CHUNK).enumerate());
    let work = || {
        let mut others = Vec::new();
        loop {
            let piece = next.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((t, out)) = piece else {
                return others;
            };
            others.extend(walk(t * CHUNK, out));
        }
    };
    let mut others = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(pieces))
            // A thread that cannot be started leaves its share to the others.
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mut others = work();
        for h in helpers {
            // A panic in a helper (none is expected: `walk` does not panic) is passed on.
            others.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        others
    });
    others.sort_unstable();
    others
}

/// The item array, shared with the workers for one walk.
#[derive(Clone, Copy)]
struct Items(*const Obj);

impl Items {
    /// The pointer (a method, so that closures capture the whole `Sync` struct).
    fn ptr(self) -> *const Obj {
        self.0
    }
}

// SAFETY: the workers only read through the pointer, while the thread that lent it holds the
// GIL and waits for them (see `hash_items`).
unsafe impl Send for Items {}
// SAFETY: as above.
unsafe impl Sync for Items {}

/// Hashes items `start ..` into `out` (one per item); returns the indices of the items left to
/// the C API.
///
/// # Safety
/// `items` points to `n` live objects, `start + out.len() <= n`, and none of them changes (and
/// the array does not either) until this returns; `layout` is the calibrated one.
#[inline(never)]
unsafe fn walk_run(
    layout: &Layout,
    items: *const Obj,
    start: usize,
    n: usize,
    seed: u64,
    width: Option<usize>,
    out: &mut [u64],
) -> Vec<usize> {
    let mut others = Vec::new();
    let str_type = &raw mut ffi::PyUnicode_Type;
    let bytes_type = &raw mut ffi::PyBytes_Type;
    for (j, h) in out.iter_mut().enumerate() {
        let i = start + j;
        // SAFETY: (the item reads) `i < n` and `i + AHEAD < n` where read, by the caller's
        // contract. (The object reads) each item is a live object, so its header (type, and for
        // a `str` the fields up to the state bits, which every `str` has) is readable; a compact
        // ASCII `str` holds `len` bytes and a NUL at `str_data`, an exact `bytes` `len` bytes
        // and a NUL at `bytes_data`, all inside the object. Nothing writes to them meanwhile
        // (the caller's contract), so the plain loads do not race.
        unsafe {
            if i + AHEAD < n {
                super::items::prefetch(*items.add(i + AHEAD));
            }
            let obj = *items.add(i);
            let t = (*obj).ob_type;
            let (off, len) = if t == str_type
                && state(obj, layout) & layout.compact_ascii == layout.compact_ascii
            {
                (layout.str_data, word(obj, layout.str_len))
            } else if t == bytes_type {
                (layout.bytes_data, word(obj, layout.bytes_len))
            } else {
                others.push(i);
                continue;
            };
            if width.is_none_or(|w| w == len) {
                let data = obj.cast::<u8>().add(off);
                *h = xxh64(std::slice::from_raw_parts(data, len), seed);
                continue;
            }
        }
        others.push(i);
    }
    others
}

/// The machine word at byte `off` of `obj`.
///
/// # Safety
/// `obj` is live and `off + 8` is within it.
#[inline(always)]
unsafe fn word(obj: *const ffi::PyObject, off: usize) -> usize {
    // SAFETY: the caller's contract; any alignment.
    unsafe { obj.cast::<u8>().add(off).cast::<usize>().read_unaligned() }
}

/// The state bits of the `str` `obj`.
///
/// # Safety
/// `obj` is a live `str` and `layout` the calibrated one (the state lies in every `str`'s
/// header).
#[inline(always)]
unsafe fn state(obj: *const ffi::PyObject, layout: &Layout) -> u32 {
    // SAFETY: the caller's contract.
    unsafe {
        obj.cast::<u8>()
            .add(layout.str_state)
            .cast::<u32>()
            .read_unaligned()
    }
}

/// The calibrated layout, measured at the first call of the process (or why there is none).
/// (A `PyOnceLock`: the calibration runs Python code, which may let another thread in, which
/// must not then wait for the cell while holding the GIL. Read before the walk starts.)
fn calibrated(py: Python<'_>) -> &'static Result<Layout, String> {
    static LAYOUT: PyOnceLock<Result<Layout, String>> = PyOnceLock::new();
    LAYOUT.get_or_init(py, || calibrate(py))
}

/// The calibrated layout, if there is one.
fn layout(py: Python<'_>) -> Option<Layout> {
    calibrated(py).as_ref().ok().copied()
}

/// How `Filter.insert`/`contains` read a list or tuple of `str` in this process: `"direct"` (on
/// the call's threads) or `"gil: <why>"` (through the C API on the calling thread). Not part of
/// the package's interface: for the tests and the list benchmark.
#[pyfunction]
pub(crate) fn _list_walk(py: Python<'_>) -> String {
    if std::env::var_os(SWITCH).is_some_and(|v| v == "gil") {
        return format!("gil: {SWITCH}=gil");
    }
    match calibrated(py) {
        Ok(_) => "direct".into(),
        Err(why) => format!("gil: {why}"),
    }
}

/// Measures where CPython keeps a list's items, a tuple's items and a `str`'s length, state and
/// bytes, on objects made through the API and compared with what the API says of them; an
/// error (why) if anything is ambiguous or disagrees, or if this Python has no GIL.
///
/// Assumed, and checked where it can be: object fields are words after the type pointer; a
/// `str` has its length and hash as words, then its state bits; a compact ASCII `str` keeps its
/// bytes (which are its UTF-8 form) inside the object, at the same offset in every one.
fn calibrate(py: Python<'_>) -> Result<Layout, String> {
    let err = |what: &'static str| move |e: PyErr| format!("{what}: {e}");
    let sys = py.import("sys").map_err(err("sys"))?;
    if let Ok(is_gil_enabled) = sys.getattr("_is_gil_enabled") {
        let on: bool = is_gil_enabled
            .call0()
            .and_then(|v| v.extract())
            .map_err(err("sys._is_gil_enabled"))?;
        if !on {
            return Err("this Python runs without the GIL".into());
        }
    }
    let size_of = |o: &Bound<'_, PyAny>| -> Result<usize, String> {
        o.call_method0("__sizeof__")
            .and_then(|s| s.extract())
            .map_err(err("__sizeof__"))
    };
    let ascii: Vec<Bound<'_, PyAny>> = [
        "",
        "a",
        "abc",
        "user-12",
        "calibrating-0123",
        &"z".repeat(41),
    ]
    .iter()
    .map(|t| PyString::new(py, t).into_any())
    .chain([PyString::intern(py, "bloomlanes-calibration").into_any()])
    .collect();
    let others: Vec<Bound<'_, PyAny>> = ["é", "café au lait", "日本語のキー", "😀 emoji"]
        .iter()
        .map(|t| PyString::new(py, t).into_any())
        .collect();
    let subclass = py
        .eval(c"type('S', (str,), {})('subclass-of-str')", None, None)
        .map_err(err("a str subclass"))?;
    let exact: Vec<&Bound<'_, PyAny>> = ascii.iter().chain(&others).collect();
    // The fields every `str` has (`""` is the smallest one, its NUL included).
    let header = size_of(&ascii[0])? - 1;
    let find = |what: &str, want: &dyn Fn(&Bound<'_, PyAny>) -> usize| {
        let hits: Vec<usize> = (16..header.saturating_sub(7))
            .step_by(8)
            .filter(|&off| {
                exact.iter().all(|s| {
                    // (`want` first: it may fill the field, as hashing does.)
                    let w = want(s);
                    // SAFETY: every sample is a live `str` of at least `header` bytes, and
                    // `off + 8 <= header`.
                    w == unsafe { word(s.as_ptr(), off) }
                })
            })
            .collect();
        match hits[..] {
            [off] => Ok(off),
            _ => Err(format!("the {what} of a str is at {hits:?}")),
        }
    };
    // SAFETY: live `str`s, the GIL held; the function runs no Python code.
    let str_len = find("length", &|s| unsafe {
        ffi::PyUnicode_GetLength(s.as_ptr()) as usize
    })?;
    // SAFETY: live `str`s, the GIL held; hashing a `str` runs no Python code (it caches the hash
    // in the object).
    let str_hash = find("hash", &|s| unsafe {
        ffi::PyObject_Hash(s.as_ptr()) as usize
    })?;
    let str_state = str_hash + 8;
    // SAFETY: `str_state + 4 <= header` is checked first, so the read lies in every `str`.
    let state_of = |s: &Bound<'_, PyAny>| unsafe { word(s.as_ptr(), str_state) as u32 };
    if str_state + 4 > header {
        return Err(format!(
            "no room for a str's state at {str_state} of {header}"
        ));
    }
    let all = |v: &[&Bound<'_, PyAny>]| v.iter().fold(!0u32, |m, s| m & state_of(s));
    let any = |v: &[&Bound<'_, PyAny>]| v.iter().fold(0u32, |m, s| m | state_of(s));
    let (ascii_refs, other_refs): (Vec<_>, Vec<_>) =
        (ascii.iter().collect(), others.iter().collect());
    let ascii_bit = all(&ascii_refs) & !any(&other_refs);
    let compact_bit = all(&exact) & !state_of(&subclass);
    if ascii_bit.count_ones() != 1 || compact_bit.count_ones() != 1 || ascii_bit == compact_bit {
        return Err(format!(
            "str state bits: ascii {ascii_bit:#x}, compact {compact_bit:#x} (want one each)"
        ));
    }
    let compact_ascii = ascii_bit | compact_bit;
    let mut str_data = None;
    for s in &ascii {
        let mut len: ffi::Py_ssize_t = 0;
        // SAFETY: a live `str`, the GIL held; an ASCII `str` has a UTF-8 form (no error).
        let utf8 = unsafe { ffi::PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut len) };
        let off = (utf8 as usize).wrapping_sub(s.as_ptr() as usize);
        let len = usize::try_from(len).map_err(|_| "negative str length".to_string())?;
        // The bytes fill the object to its end, NUL included, and the length word says `len`.
        // SAFETY: `str_len + 8 <= header`, within every `str`.
        let len_word = unsafe { word(s.as_ptr(), str_len) };
        if utf8.is_null()
            || off < str_state + 4
            || off.checked_add(len + 1) != Some(size_of(s)?)
            || len_word != len
            || str_data.is_some_and(|d| d != off)
            || state_of(s) & compact_ascii != compact_ascii
        {
            return Err(format!("an ASCII str's bytes are at {off}, {len} long"));
        }
        str_data = Some(off);
    }
    if others
        .iter()
        .any(|s| state_of(s) & compact_ascii == compact_ascii)
    {
        return Err("a non-ASCII str has the compact ASCII bits".into());
    }
    let str_data = str_data.ok_or("no ASCII sample")?;
    let (bytes_len, bytes_data) = bytes_fields(py, &size_of)?;
    Ok(Layout {
        list_items: list_items(py, &ascii, &size_of)?,
        tuple_items: tuple_items(py, &ascii, &size_of)?,
        str_len,
        str_state,
        compact_ascii,
        str_data,
        bytes_len,
        bytes_data,
    })
}

/// The offsets of a `bytes` object's length (the word that says it in every sample) and of its
/// bytes (where `PyBytes_AsString` points, the same in every sample, running to the object's
/// end with the NUL).
fn bytes_fields(
    py: Python<'_>,
    size_of: &dyn Fn(&Bound<'_, PyAny>) -> Result<usize, String>,
) -> Result<(usize, usize), String> {
    let samples: Vec<Bound<'_, PyAny>> = [&b""[..], b"a", b"abc", b"bytes-12", &[7u8; 40]]
        .iter()
        .map(|b| PyBytes::new(py, b).into_any())
        .collect();
    let header = size_of(&samples[0])? - 1;
    let hits: Vec<usize> = (16..header.saturating_sub(7))
        .step_by(8)
        .filter(|&off| {
            samples.iter().all(|b| {
                // SAFETY: a live `bytes`, the GIL held.
                let len = unsafe { ffi::PyBytes_Size(b.as_ptr()) } as usize;
                // SAFETY: a live `bytes` of at least `header` bytes, and `off + 8 <= header`.
                len == unsafe { word(b.as_ptr(), off) }
            })
        })
        .collect();
    let [len_off] = hits[..] else {
        return Err(format!("the length of a bytes is at {hits:?}"));
    };
    let mut data_off = None;
    for b in &samples {
        // SAFETY: a live `bytes`, the GIL held: a pointer to its bytes.
        let (p, len) = unsafe {
            (
                ffi::PyBytes_AsString(b.as_ptr()),
                ffi::PyBytes_Size(b.as_ptr()),
            )
        };
        let off = (p as usize).wrapping_sub(b.as_ptr() as usize);
        if p.is_null()
            || off < len_off + 8
            || off.checked_add(len as usize + 1) != Some(size_of(b)?)
            || data_off.is_some_and(|d| d != off)
        {
            return Err(format!("a bytes object's bytes are at {off}, {len} long"));
        }
        data_off = Some(off);
    }
    Ok((len_off, data_off.ok_or("no bytes sample")?))
}

/// The offset of a list's item pointer: the one word of the list header, past the type, that
/// holds a heap pointer in two lists of different lengths, and whose array holds their items.
fn list_items(
    py: Python<'_>,
    items: &[Bound<'_, PyAny>],
    size_of: &dyn Fn(&Bound<'_, PyAny>) -> Result<usize, String>,
) -> Result<usize, String> {
    let header = size_of(PyList::empty(py).as_any())?;
    let lists = [
        PyList::new(py, &items[..3]).map_err(|e| format!("a list: {e}"))?,
        PyList::new(py, &items[..5]).map_err(|e| format!("a list: {e}"))?,
    ];
    let pointer_like = |off: usize| {
        lists.iter().all(|l| {
            // SAFETY: `off + 8 <= header`, within the list object.
            let w = unsafe { word(l.as_ptr(), off) };
            w > 1 << 16
                && w.is_multiple_of(8)
                && w != l.len()
                && w != l.get_type().as_ptr() as usize
        })
    };
    let hits: Vec<usize> = (16..header.saturating_sub(7))
        .step_by(8)
        .filter(|&off| pointer_like(off))
        .collect();
    let [off] = hits[..] else {
        return Err(format!("a list's item pointer is at {hits:?}"));
    };
    for l in &lists {
        // SAFETY: the word at `off` is the list's only pointer-like field past its type, so
        // its item array of `len` pointers (which the list owns; compared one by one with what
        // the API returns).
        let ok = (0..l.len()).all(|i| unsafe {
            (word(l.as_ptr(), off) as *const Obj).add(i).read()
                == ffi::PyList_GetItem(l.as_ptr(), i as ffi::Py_ssize_t)
        });
        if !ok {
            return Err(format!("the list's word at {off} is not its item array"));
        }
    }
    Ok(off)
}

/// The offset of a tuple's first item: where its three items lie one after the other.
fn tuple_items(
    py: Python<'_>,
    items: &[Bound<'_, PyAny>],
    size_of: &dyn Fn(&Bound<'_, PyAny>) -> Result<usize, String>,
) -> Result<usize, String> {
    let t = PyTuple::new(py, &items[..3]).map_err(|e| format!("a tuple: {e}"))?;
    let size = size_of(t.as_any())?;
    let hits: Vec<usize> = (16..size.saturating_sub(3 * 8 - 1))
        .step_by(8)
        .filter(|&off| {
            (0..3).all(|i| {
                // SAFETY: `off + 8 * i + 8 <= size`, within the tuple object.
                unsafe { word(t.as_ptr(), off + 8 * i) == items[i].as_ptr() as usize }
            })
        })
        .collect();
    match hits[..] {
        [off] => Ok(off),
        _ => Err(format!("a tuple's items are at {hits:?}")),
    }
}
