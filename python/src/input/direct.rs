//! The `str` and `bytes` items of a `list` or `tuple` hashed on every core, for
//! `Filter.insert`/`contains`.
//!
//! The calling thread holds the GIL for the whole call and runs no Python code meanwhile, so no
//! thread can change the sequence, drop one of its items or write to a string (each needs the
//! GIL). Threads started for the call, and the caller, then read the item pointers and the strings'
//! bytes by plain loads, without the C API, and hash them with the filter's seed. The crate is
//! abi3, where `PyList_GET_ITEM` and `PyUnicode_DATA` do not exist, so where CPython keeps these
//! is measured once per process on objects made through the API (`calibrate.rs`); when
//! anything there disagrees, the walk is not used and the keys are read as before (items.rs).
//! `Filter.insert` walks, hashes and inserts in one pass (`list_insert.rs`).
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
use pyo3::types::{PyList, PyTuple};

use super::calibrate::{layout, walk_off, word, Layout};
use super::items::{hashed, kind_of, sequence_item, text_key, Kind, Source, AHEAD};
use super::Input;
use crate::errors::Error;
use crate::ops::Threads;

/// A Python object, borrowed.
type Obj = *mut ffi::PyObject;

/// Keys per piece of the walk into one hash buffer (a list of at most this many is walked by
/// the calling thread).
const CHUNK: usize = 16 * 1024;

/// How text keys are hashed as they are read: with a filter's seed, on a call's threads.
#[derive(Clone, Copy)]
pub(crate) struct Hashing<'a> {
    /// The filter's seed.
    pub(crate) seed: u64,
    /// Where a list's or tuple's strings are hashed.
    pub(crate) threads: &'a Threads,
}

/// The keys of a list or tuple whose first item is text, hashed as `hashing` says: the compact
/// ASCII `str` and the `bytes` items on its threads ([`Walk::hash_run`]), then the others
/// through the C API on this thread, in index order; `None` for another source or first item,
/// or when the walk is off.
pub(super) fn from_sequence<'py>(
    py: Python<'py>,
    source: &Source<'_, 'py>,
    hint: KeyType,
    hashing: Hashing<'_>,
) -> Result<Option<Input<'py>>, Error> {
    let Some(seq) = TextSeq::of(py, source, hint)? else {
        return Ok(None);
    };
    let (walk, seed) = (seq.walk, hashing.seed);
    let mut hashes = vec![0u64; walk.n];
    let pieces = hashes.chunks_mut(CHUNK).enumerate();
    let left = on_threads(
        hashing.threads.count(),
        pieces,
        Vec::new,
        |left, (t, out)| {
            // SAFETY: this thread holds the GIL and runs no Python code until `on_threads` returns
            // (the walk's contract).
            left.extend(unsafe { walk.hash_run(t * CHUNK, seed, out) });
        },
    );
    seq.hash_others(py, left.concat(), seed, |i, h| hashes[i] = h)?;
    Ok(Some(hashed(hint, hashes, seed)))
}

/// A list or tuple whose first item is text, to be walked while the thread that made it holds
/// the GIL.
pub(super) struct TextSeq<'a, 'py> {
    seq: &'a Bound<'py, PyAny>,
    is_list: bool,
    /// What the walk's threads read.
    pub(super) walk: Walk,
}

impl<'a, 'py> TextSeq<'a, 'py> {
    /// [`TextSeq::of`] the keys `keys` if they are a list or tuple.
    pub(super) fn of_object(
        py: Python<'py>,
        keys: &'a Bound<'py, PyAny>,
        hint: KeyType,
    ) -> Result<Option<TextSeq<'a, 'py>>, Error> {
        let source = if keys.is_instance_of::<PyList>() {
            Source::List(keys)
        } else if keys.is_instance_of::<PyTuple>() {
            Source::Tuple(keys)
        } else {
            return Ok(None);
        };
        TextSeq::of(py, &source, hint)
    }

    /// The sequence of `source` for a filter of key type `hint`; `None` for another source, an
    /// empty sequence or a first item that is not text, or when the walk is off or CPython's
    /// layout was not recognised.
    pub(super) fn of(
        py: Python<'py>,
        source: &Source<'a, 'py>,
        hint: KeyType,
    ) -> Result<Option<TextSeq<'a, 'py>>, Error> {
        let (seq, is_list) = match *source {
            Source::List(seq) => (seq, true),
            Source::Tuple(seq) => (seq, false),
            _ => return Ok(None),
        };
        // Text that is parsed into keys (`ip`, `flow`) is not hashed as it is.
        if super::text_keys::parsed_from_text(hint) {
            return Ok(None);
        }
        let first = |i| sequence_item(seq, is_list, i);
        // SAFETY: (`kind_of`) a live item, the GIL held.
        if !seq.len().is_ok_and(|n| n > 0) || unsafe { kind_of(py, first(0)?)? } != Kind::Text {
            return Ok(None);
        }
        let Some(layout) = layout(py).filter(|_| !walk_off()) else {
            return Ok(None);
        };
        let p = seq.as_ptr();
        // SAFETY: `seq` is a live list (or tuple), the GIL is held; the size functions read a
        // field and run no Python code. A list's item pointer sits at the calibrated offset,
        // inside the list object; a tuple's items start at the calibrated offset, inside it.
        let (n, items) = unsafe {
            if is_list {
                let n = ffi::PyList_Size(p);
                (n, word(p, layout.list_items) as *const Obj)
            } else {
                let n = ffi::PyTuple_Size(p);
                let items = p.cast::<u8>().add(layout.tuple_items).cast::<Obj>();
                (n, items.cast_const())
            }
        };
        let Some(n) = usize::try_from(n).ok().filter(|&n| n > 0) else {
            return Ok(None);
        };
        let width = match hint {
            KeyType::FixedBytes(w) => Some(usize::from(w)),
            _ => None,
        };
        let walk = Walk {
            layout,
            items: Items(items),
            n,
            width,
        };
        Ok(Some(TextSeq { seq, is_list, walk }))
    }

    /// Hashes the items at the indices `left` (those the walk left) through the C API on this
    /// thread, in ascending index order, and hands each hash to `put(index, hash)`; the first
    /// bad key's error.
    pub(super) fn hash_others(
        &self,
        py: Python<'_>,
        mut left: Vec<usize>,
        seed: u64,
        mut put: impl FnMut(usize, u64),
    ) -> Result<(), Error> {
        left.sort_unstable();
        for i in left {
            let obj = sequence_item(self.seq, self.is_list, i)?;
            // SAFETY: a live item, the GIL held; its bytes are hashed before any Python code
            // runs.
            let key = unsafe { text_key(py, i, obj, self.walk.width)? };
            put(i, xxh64(key, seed));
        }
        Ok(())
    }
}

/// What the threads of a walk read: the items of a list or tuple, where CPython keeps their
/// fields, and the key width of a `fixed:<n>` filter (keys of another length are left to the
/// C API).
#[derive(Clone, Copy)]
pub(super) struct Walk {
    layout: Layout,
    items: Items,
    /// The number of items (at least 1).
    pub(super) n: usize,
    width: Option<usize>,
}

impl Walk {
    /// Hashes items `start .. start + out.len()` with `seed` into `out` (one per item); returns
    /// the indices of the items left to the C API ([`TextSeq::hash_others`]), ascending.
    ///
    /// # Safety
    /// The thread that made the walk ([`TextSeq::of`]) holds the GIL and has run no Python code
    /// since, and runs none until this returns; `start + out.len() <= self.n`.
    pub(super) unsafe fn hash_run(&self, start: usize, seed: u64, out: &mut [u64]) -> Vec<usize> {
        let (layout, items, n) = (&self.layout, self.items.ptr(), self.n);
        // SAFETY: `items` points to the `n` live items of the sequence, which cannot change
        // meanwhile: the thread that made the walk holds the GIL and runs no Python code, and
        // every other thread needs the GIL to change a list, drop an object or write a string
        // (the caller's contract). `walk_run` reads only `start .. start + out.len() <= n`.
        unsafe { walk_run(layout, items, start, n, seed, self.width, out) }
    }
}

/// Runs `work(state, piece)` for each of `pieces` on the calling thread and on up to
/// `threads - 1` threads started for the call (not the rayon pool: the caller holds the GIL,
/// and must not wait for a pool that another call keeps busy), each taking the next piece until
/// none is left, with its own state made by `init`; returns the states of the threads that ran
/// (the caller's first).
pub(super) fn on_threads<P, S, I, W>(threads: usize, pieces: I, init: fn() -> S, work: W) -> Vec<S>
where
    I: ExactSizeIterator<Item = P> + Send,
    S: Send,
    W: Fn(&mut S, P) + Sync,
{
    let count = pieces.len();
    let next = Mutex::new(pieces);
    let run = || {
        let mut state = init();
        loop {
            let piece = next.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some(piece) = piece else {
                return state;
            };
            work(&mut state, piece);
        }
    };
    let states = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(count))
            // A thread that cannot be started leaves its share to the others.
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, run).ok())
            .collect();
        let mut states = vec![run()];
        for h in helpers {
            // A panic in a helper (none is expected: `work` does not panic) is passed on.
            states.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        states
    });
    states
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
// GIL and waits for them (see `Walk::hash_run`).
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
