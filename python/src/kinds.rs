//! What the classes over whole-file kinds (`SpatialFilter`, `Retrieval`) share with each other
//! and with `Filter`: files under the CLI's locks (`storage`), bytes for pickling, the key type
//! check, keys as the SIMD backend takes them, and keys named in errors.
//!
//! These kinds live in memory (no memory-mapped form): `load` reads the whole file under a
//! shared lock and checks all of it, `save` writes a new file under the write lock and renames
//! it over the old one, as `Filter.save` does.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

use bloomlanes_core::{FormatError, KeyType, Params};
use bloomlanes_guard::WriteLock;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::PyTypeInfo;

use crate::convert::with_bytes;
use crate::errors::Error;
use crate::filter::check_keys;
use crate::input::{Part, Values};
use crate::storage::{lock_error, open_shared, read_whole, write_replacing};
use crate::update::{interruptible, wait_of};

/// A kind kept as one whole file image.
pub(crate) trait WholeFile: Sized + Send + Sync {
    /// The whole file.
    fn file_bytes(&self) -> Vec<u8>;
    /// Reads a whole file; any fault is an error.
    fn parse(file: &[u8]) -> Result<Self, FormatError>;
}

/// [`WholeFile`] for the core's types, by their `to_file_bytes` and `from_file_bytes`.
macro_rules! whole_files {
    ($($t:ty),*) => {$(
        impl WholeFile for $t {
            fn file_bytes(&self) -> Vec<u8> {
                <$t>::to_file_bytes(self)
            }
            fn parse(file: &[u8]) -> Result<Self, FormatError> {
                <$t>::from_file_bytes(file)
            }
        }
    )*};
}
whole_files!(
    bloomlanes_core::SpatialFilter,
    bloomlanes_core::CountingFilter,
    bloomlanes_core::retrieval::RetrievalTable
);

/// A value that inserts change (`Filter`'s storage, `SpatialFilter`, `CountingFilter`): the value under a lock
/// (lookups share it, a write excludes them; a panic's poison is ignored, as every operation
/// leaves the value whole), and whether its key type is still to be learnt from the first keys
/// inserted (a filter made without one), and its version: bumped by every write, so that a
/// device copy (the GPU backend) knows whether it is current.
pub(crate) struct Held<T> {
    value: RwLock<T>,
    learn_key_type: AtomicBool,
    version: AtomicU64,
}

/// What `__reduce__` returns: `_unpickle` and its arguments (file bytes, key type to learn).
pub(crate) type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, bool));

impl<T> Held<T> {
    /// `value`, learning its key type from the first keys inserted if `learn`.
    pub(crate) fn new(value: T, learn: bool) -> Held<T> {
        Held {
            value: RwLock::new(value),
            learn_key_type: AtomicBool::new(learn),
            version: AtomicU64::new(0),
        }
    }

    /// The value, to read.
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
        self.value.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The value, to read, unless a writer holds or awaits the lock (`None`): for a caller
    /// that must not wait (see `input::list_contains`).
    pub(crate) fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        match self.value.try_read() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The value, to change; any device copy is out of date from here on.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
        let g = self.write_unversioned();
        self.bump_version();
        g
    }

    /// The value, to change, for a caller that keeps the version itself (the GPU backend).
    pub(crate) fn write_unversioned(&self) -> RwLockWriteGuard<'_, T> {
        self.value.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The value's version (see the type).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Marks the value changed; returns the new version.
    pub(crate) fn bump_version(&self) -> u64 {
        self.version.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Whether the key type is still to be learnt.
    pub(crate) fn learning(&self) -> bool {
        self.learn_key_type.load(Ordering::Acquire)
    }

    /// Whether the key type was still to be learnt; from now on it is not.
    pub(crate) fn take_learning(&self) -> bool {
        self.learn_key_type.swap(false, Ordering::AcqRel)
    }

    /// Sets whether the key type is still to be learnt.
    pub(crate) fn set_learning(&self, learn: bool) {
        self.learn_key_type.store(learn, Ordering::Release);
    }
}

impl<T: WholeFile + Clone> Held<T> {
    /// An independent copy (value and learning).
    pub(crate) fn copy(&self) -> Held<T> {
        Held::new(self.read().clone(), self.learning())
    }

    /// Pickling: `C._unpickle` with the file bytes and whether the key type is to be learnt.
    pub(crate) fn reduce<'py, C: PyTypeInfo>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let ctor = py.get_type::<C>().getattr("_unpickle")?;
        Ok((ctor, (to_bytes(py, &*self.read()), self.learning())))
    }

    /// The inverse of [`Held::reduce`].
    pub(crate) fn unpickle(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        learn_key_type: bool,
    ) -> PyResult<Held<T>> {
        Ok(Held::new(from_bytes(py, data)?, learn_key_type))
    }
}

/// A Python class over a [`Held`] kind (`SpatialFilter`, `CountingFilter`): how the shared
/// methods of [`held_class!`] reach its value and make new objects.
pub(crate) trait HeldClass: Sized {
    /// The kind held.
    type Value: WholeFile + Clone + CellKind + bloomlanes_simd::CellFilter + Sync;
    /// The class's name, for errors.
    const NAME: &'static str;
    /// The held value.
    fn held(&self) -> &Held<Self::Value>;
    /// A new object over `held` (no device copy yet).
    fn from_held(held: Held<Self::Value>) -> Self;

    /// A new object over `value`, learning its key type from the first keys inserted if
    /// `learn`.
    fn wrap(value: Self::Value, learn: bool) -> Self {
        Self::from_held(Held::new(value, learn))
    }

    /// The value, to read ([`Held::read`]).
    fn read(&self) -> RwLockReadGuard<'_, Self::Value> {
        self.held().read()
    }

    /// The value, to change ([`Held::write`]).
    fn write(&self) -> RwLockWriteGuard<'_, Self::Value> {
        self.held().write()
    }
}

/// A kind with cells behind a static image (core's cell pipeline): its parameters and its
/// projection (cell > 0 sets its bit), which answers membership as a static filter.
pub(crate) trait CellKind {
    /// The parameters.
    fn params(&self) -> &Params;
    /// The projection as a static filter view.
    fn projection(&self) -> bloomlanes_core::FilterRef<'_, u32>;
    /// The union with `other` (the core's `union_folding`: the larger folded first).
    fn union_folding(&self, other: &Self) -> Result<Self, bloomlanes_core::MergeError>
    where
        Self: Sized;
}

/// [`CellKind`] for the core's types, by their own methods of those names.
macro_rules! cell_kinds {
    ($($t:ty),*) => {$(
        impl CellKind for $t {
            fn params(&self) -> &Params {
                <$t>::params(self)
            }
            fn projection(&self) -> bloomlanes_core::FilterRef<'_, u32> {
                <$t>::projection(self)
            }
            fn union_folding(&self, other: &Self) -> Result<Self, bloomlanes_core::MergeError> {
                <$t>::union_folding(self, other)
            }
        }
    )*};
}
cell_kinds!(
    bloomlanes_core::SpatialFilter,
    bloomlanes_core::CountingFilter
);

/// Each key's smallest cell into `out` (a spatial filter's class, a counting filter's count;
/// 0 for absent and null keys), on every core; `name` is the class, for errors.
pub(crate) fn min_cells_into<T: bloomlanes_simd::CellValue + Default, K>(
    f: &K,
    parts: &[Part<'_>],
    key_type: KeyType,
    name: &str,
    out: &mut [T],
) -> Result<(), Error>
where
    K: CellKind + bloomlanes_simd::CellFilter + Sync,
{
    check_kind_keys(f.params(), key_type, name)?;
    let probe = bloomlanes_simd::Probe::active();
    for (start, p) in crate::ops::part_starts(parts) {
        let out = &mut out[start..start + p.values.len()];
        let keys = crate::ops::backend_keys(p, f.params().seed)?;
        crate::ops::in_pool(|| probe.par_min_cells(f, keys.keys(), out));
        zero_nulls(p, out);
    }
    Ok(())
}

/// Whether each key of `keys` may be present in `held`'s value (its projection's answers), as
/// a numpy bool array; `name` is the class, for errors.
pub(crate) fn contains<'py, T: WholeFile + Clone + CellKind>(
    py: Python<'py>,
    held: &Held<T>,
    keys: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let input = crate::input::extract(keys, held.read().params().key_type)?;
    let parts = input.parts()?;
    crate::convert::numpy_bools(py, input.len(), |out| {
        py.detach(|| {
            let f = held.read();
            check_kind_keys(f.params(), input.key_type, name)?;
            let probe = bloomlanes_simd::Probe::active();
            for (start, p) in crate::ops::part_starts(&parts) {
                let out = &mut out[start..start + p.values.len()];
                let view = f.projection();
                crate::ops::in_pool(|| crate::ops::contains(&probe, view, p, input.key_type, out))?;
            }
            Ok(())
        })
    })
}

/// The one `#[pymethods]` block (PyO3 takes one per class) of a [`HeldClass`]: its own methods,
/// as given, and those every such class shares, written once here: files (`save`, `load`),
/// bytes (`to_bytes`, `from_bytes`), copies, pickling, equality, `params`, `key_type`,
/// `key_count` and the projection as a `Filter` (`to_filter`).
macro_rules! held_class {
    ($class:ident { $($own:tt)* }) => {
        #[pyo3::pymethods]
        impl $class {
            $($own)*

            /// Layout, blocks, seed and key type, as `Filter.params`.
            #[getter]
            fn params<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyDict>> {
                $crate::convert::params_dict(py, $crate::kinds::HeldClass::held(self).read().params())
            }
            /// The key type, None while unrecorded.
            #[getter]
            fn key_type(&self) -> Option<String> {
                $crate::convert::key_type_name($crate::kinds::HeldClass::held(self).read().params().key_type)
            }
            /// Keys inserted (less keys deleted), if known.
            #[getter]
            fn key_count(&self) -> Option<u64> {
                $crate::kinds::HeldClass::held(self).read().key_count()
            }

            /// Whether each key may be present: a numpy bool array (the projection's answers, a
            /// static filter's).
            fn contains<'py>(
                &self,
                py: pyo3::Python<'py>,
                keys: &pyo3::Bound<'py, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let name = <$class as $crate::kinds::HeldClass>::NAME;
                $crate::kinds::contains(py, $crate::kinds::HeldClass::held(self), keys, name)
            }

            fn __contains__(&self, key: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<bool> {
                let held = $crate::kinds::HeldClass::held(self);
                let f = held.read();
                let input = $crate::input::extract_one(key, f.params().key_type, "contains")?;
                let name = <$class as $crate::kinds::HeldClass>::NAME;
                let mut out = [0u16];
                $crate::kinds::min_cells_into(&*f, &input.parts()?, input.key_type, name, &mut out)?;
                Ok(out[0] != 0)
            }

            /// The projection as a `Filter`: byte-identical to the static filter of the keys
            /// present.
            fn to_filter(&self) -> $crate::filter::PyFilter {
                let f = $crate::kinds::HeldClass::held(self).read().to_static();
                $crate::filter::PyFilter::wrap($crate::storage::Storage::Owned(f), false)
            }

            /// Writes the file (the CLI's format), under the file's write lock.
            #[pyo3(signature = (path, *, wait=true))]
            fn save(
                &self,
                py: pyo3::Python<'_>,
                path: std::path::PathBuf,
                wait: bool,
            ) -> pyo3::PyResult<()> {
                $crate::kinds::save(py, &*$crate::kinds::HeldClass::held(self).read(), &path, wait)
            }

            /// A read-modify-write of a file of this kind under its write lock (see
            /// `kind_update`).
            #[staticmethod]
            #[pyo3(signature = (path, *, wait=true))]
            fn update(path: std::path::PathBuf, wait: bool) -> $crate::update::Update {
                $crate::kind_update::update_of::<$class>(path, wait)
            }

            /// Reads a file of this kind into memory, under a shared lock; checked whole.
            #[staticmethod]
            #[pyo3(signature = (path, *, wait=true))]
            fn load(py: pyo3::Python<'_>, path: std::path::PathBuf, wait: bool) -> pyo3::PyResult<$class> {
                let value = $crate::kinds::load(py, &path, wait)?;
                Ok(<$class as $crate::kinds::HeldClass>::from_held($crate::kinds::Held::new(value, false)))
            }

            /// The whole file as bytes.
            fn to_bytes<'py>(&self, py: pyo3::Python<'py>) -> pyo3::Bound<'py, pyo3::types::PyBytes> {
                $crate::kinds::to_bytes(py, &*$crate::kinds::HeldClass::held(self).read())
            }

            /// A value of this kind from the bytes of its file.
            #[staticmethod]
            fn from_bytes(
                py: pyo3::Python<'_>,
                data: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<$class> {
                Self::_unpickle(py, data, false)
            }

            /// An independent copy.
            fn copy(&self) -> $class {
                <$class as $crate::kinds::HeldClass>::from_held($crate::kinds::HeldClass::held(self).copy())
            }
            fn __copy__(&self) -> $class {
                self.copy()
            }
            fn __deepcopy__(&self, _memo: &pyo3::Bound<'_, pyo3::PyAny>) -> $class {
                self.copy()
            }

            /// Pickling: the file bytes, and whether the key type is still to be learned.
            fn __reduce__<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<$crate::kinds::Reduced<'py>> {
                $crate::kinds::HeldClass::held(self).reduce::<$class>(py)
            }

            /// The inverse of `__reduce__`.
            #[staticmethod]
            fn _unpickle(
                py: pyo3::Python<'_>,
                data: &pyo3::Bound<'_, pyo3::PyAny>,
                learn_key_type: bool,
            ) -> pyo3::PyResult<$class> {
                let held = $crate::kinds::Held::unpickle(py, data, learn_key_type)?;
                Ok(<$class as $crate::kinds::HeldClass>::from_held(held))
            }

            /// The union `self | other`: the filter of both key sets (spatial: each key in
            /// its highest class, the same classes in the same order needed; counting: counts
            /// added), the larger folded to the smaller block count first.
            fn __or__(
                &self,
                other: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                let py = other.py();
                let Ok(o) = other.cast::<$class>() else {
                    return Ok(py.NotImplemented());
                };
                let o: &$class = o.get();
                let merged = py.detach(|| $crate::kinds::union_of(self, o))?;
                let learn = merged.params().key_type == bloomlanes_core::KeyType::Any;
                let out = <$class as $crate::kinds::HeldClass>::wrap(merged, learn);
                Ok(pyo3::Py::new(py, out)?.into_any())
            }

            /// Whether both have the same parameters, key counts and cells.
            fn __eq__(&self, other: &pyo3::Bound<'_, pyo3::PyAny>) -> bool {
                match other.cast::<$class>() {
                    Ok(o) if std::ptr::eq(self, o.get()) => true,
                    Ok(o) => *$crate::kinds::HeldClass::held(self).read() == *$crate::kinds::HeldClass::held(o.get()).read(),
                    Err(_) => false,
                }
            }
        }
    };
}
pub(crate) use held_class;

/// `a` locked by `mine` and `b` by `theirs`, the two locks taken in address order, so that
/// two calls on the same pair (`a | b` and a concurrent `b |= a`) never each hold the lock the
/// other waits for.
pub(crate) fn lock_pair<'a, T, A, B>(
    a: &'a T,
    b: &'a T,
    mine: impl FnOnce(&'a T) -> A,
    theirs: impl FnOnce(&'a T) -> B,
) -> (A, B) {
    if (a as *const T) < (b as *const T) {
        let x = mine(a);
        (x, theirs(b))
    } else {
        let y = theirs(b);
        (mine(a), y)
    }
}

/// The union of two objects' values, read in address order ([`lock_pair`]); `a | a` reads
/// once.
pub(crate) fn union_of<C: HeldClass>(a: &C, b: &C) -> Result<C::Value, Error> {
    if std::ptr::eq(a, b) {
        let g = a.read();
        return Ok(g.union_folding(&g)?);
    }
    let (ga, gb) = lock_pair(a, b, HeldClass::read, HeldClass::read);
    Ok(ga.union_folding(&gb)?)
}

/// Writes `value`'s file to `path` under `path`'s write lock (see the module).
pub(crate) fn save<T: WholeFile>(
    py: Python<'_>,
    value: &T,
    path: &Path,
    wait: bool,
) -> PyResult<()> {
    interruptible(py, |waiting| {
        let _lock = WriteLock::acquire(path, wait_of(wait), waiting).map_err(lock_error)?;
        let bytes = value.file_bytes();
        write_replacing(path, &[&bytes], || Ok(()))
    })
}

/// Reads the file at `path` under a shared lock, checked whole.
pub(crate) fn load<T: WholeFile>(py: Python<'_>, path: &Path, wait: bool) -> PyResult<T> {
    interruptible(py, |waiting| {
        let (_file, len) = open_shared(path, wait_of(wait), waiting)?;
        let bytes = read_whole(path, len)?;
        T::parse(&bytes).map_err(|e| Error::format_at(path.display(), e))
    })
}

/// `value`'s whole file as Python bytes.
pub(crate) fn to_bytes<'py, T: WholeFile>(py: Python<'py>, value: &T) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &py.detach(|| value.file_bytes()))
}

/// A value from the bytes of its whole file (`bytes`, `bytearray` or a buffer).
pub(crate) fn from_bytes<T: WholeFile>(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<T> {
    with_bytes(data, |bytes| {
        Ok(py.detach(|| T::parse(bytes)).map_err(Error::from)?)
    })
}

/// An error for float keys: their lookups find `0.0` and `-0.0` alike and answer "maybe" for
/// NaN (`Filter`'s rule), which has no class or value to answer, and anything else would report
/// a stored `-0.0` absent when asked for `0.0`.
pub(crate) fn refuse_float_keys(keys: KeyType, kind: &str) -> Result<(), Error> {
    if matches!(keys, KeyType::F32 | KeyType::F64) {
        return Err(Error::KeyType(format!(
            "{kind} takes no float keys ({keys}): 0.0 and -0.0, and NaNs, hash differently; \
             use integer or byte keys (e.g. numpy's .view('u8') of the bits)"
        )));
    }
    Ok(())
}

/// [`refuse_float_keys`], then [`check_keys`].
pub(crate) fn check_kind_keys(params: &Params, keys: KeyType, kind: &str) -> Result<(), Error> {
    refuse_float_keys(keys, kind)?;
    check_keys(params, keys)
}

/// The key at `index` of the concatenated `parts`, for an error message.
pub(crate) fn describe_key(parts: &[Part<'_>], key_type: KeyType, index: usize) -> String {
    let mut i = index;
    for p in parts {
        let n = p.values.len();
        if i >= n {
            i -= n;
            continue;
        }
        let text = |b: &[u8]| match std::str::from_utf8(b) {
            Ok(s) => format!("{s:?}"),
            Err(_) => format!("b{:?}", String::from_utf8_lossy(b)),
        };
        let key = match p.values {
            Values::U64(k) if matches!(key_type, KeyType::U64 | KeyType::Any) => k[i].to_string(),
            Values::U64(k) => (k[i] as i64).to_string(),
            Values::U32(k) if key_type == KeyType::U32 => k[i].to_string(),
            Values::U32(k) => (k[i] as i32).to_string(),
            Values::Days64(k) => k[i].to_string(),
            Values::Records(d, w) => text(&d[i * w..(i + 1) * w]),
            Values::Str32(d, o) => text(&d[o[i] as usize..o[i + 1] as usize]),
            Values::Str64(d, o) => text(&d[o[i] as usize..o[i + 1] as usize]),
            Values::Hashes(..) => break,
        };
        return format!("key {key} (index {index})");
    }
    format!("key at index {index}")
}

/// Answers 0 for the null keys of `part`.
pub(crate) fn zero_nulls<T: Default>(part: &Part<'_>, out: &mut [T]) {
    if let Some(valid) = part.nulls {
        for (i, o) in out.iter_mut().enumerate() {
            if !valid.is_valid(i) {
                *o = T::default();
            }
        }
    }
}

/// An error unless no key of `parts` is null (`what`: the operation, for the message).
pub(crate) fn refuse_nulls(parts: &[Part<'_>], what: &str) -> Result<(), Error> {
    let mut start = 0;
    for p in parts {
        if let Some(valid) = p.nulls {
            if let Some(i) = (0..p.values.len()).find(|&i| !valid.is_valid(i)) {
                return Err(Error::value(format!(
                    "{what}: key {} is null (drop nulls first)",
                    start + i
                )));
            }
        }
        start += p.values.len();
    }
    Ok(())
}
