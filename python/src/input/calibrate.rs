//! Where CPython keeps what the list walk (`direct.rs`) reads: measured once per process on
//! objects made through the C API and compared with what the API says of them ([`calibrate`]);
//! when anything there disagrees, the walk is not used and the keys are read as before
//! (`items.rs`).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

/// A Python object, borrowed.
type Obj = *mut ffi::PyObject;

/// Where CPython keeps what the walk reads: byte offsets into the objects, measured by
/// [`calibrate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// A list's pointer to its item array.
    pub(super) list_items: usize,
    /// A tuple's first item (the items are inline).
    pub(super) tuple_items: usize,
    /// A `str`'s length in code points (bytes, for an ASCII one).
    pub(super) str_len: usize,
    /// A `str`'s 32 state bits.
    pub(super) str_state: usize,
    /// The state bits of a compact ASCII `str`.
    pub(super) compact_ascii: u32,
    /// A compact ASCII `str`'s bytes (its UTF-8 form, NUL-terminated).
    pub(super) str_data: usize,
    /// A `bytes` object's length.
    pub(super) bytes_len: usize,
    /// A `bytes` object's bytes (NUL-terminated).
    pub(super) bytes_data: usize,
}

/// The environment variable that turns the walk off (`gil`: every item through the C API on
/// the calling thread, as when the calibration fails), for tests and comparisons.
const SWITCH: &str = "BLOOMLANES_LIST_WALK";

/// Whether the walk is turned off for this call ([`SWITCH`]`=gil`).
pub(super) fn walk_off() -> bool {
    std::env::var_os(SWITCH).is_some_and(|v| v == "gil")
}

/// The machine word at byte `off` of `obj`.
///
/// # Safety
/// `obj` is live and `off + 8` is within it.
#[inline(always)]
pub(super) unsafe fn word(obj: *const ffi::PyObject, off: usize) -> usize {
    // SAFETY: the caller's contract; any alignment.
    unsafe { obj.cast::<u8>().add(off).cast::<usize>().read_unaligned() }
}

/// The calibrated layout, measured at the first call of the process (or why there is none).
/// (A `PyOnceLock`: the calibration runs Python code, which may let another thread in, which
/// must not then wait for the cell while holding the GIL. Read before the walk starts.)
fn calibrated(py: Python<'_>) -> &'static Result<Layout, String> {
    static LAYOUT: PyOnceLock<Result<Layout, String>> = PyOnceLock::new();
    LAYOUT.get_or_init(py, || calibrate(py))
}

/// The calibrated layout, if there is one.
pub(super) fn layout(py: Python<'_>) -> Option<Layout> {
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
