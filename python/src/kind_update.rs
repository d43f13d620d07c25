//! `SpatialFilter.update(path)` and `CountingFilter.update(path)`: the read-modify-write of
//! `Filter.update` for the kinds held in memory, so that a rule table or a counter file edited
//! from Python loses no other writer's update (the CLI's `insert` and `delete`, another
//! process's `update` or `save`): the file's write lock is held from the load to the save.
//!
//! ```python
//! with bloomlanes.SpatialFilter.update("rules.blf") as rules:   # waits for another writer
//!     rules.insert(new_ips, "deny")
//! # saved here, then the lock is released; an exception inside the block saves nothing
//! ```

use std::path::{Path, PathBuf};

use bloomlanes_guard::{Wait, WriteLock};
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::True;
use pyo3::{IntoPyObjectExt, PyClass};

use crate::kinds::{self, HeldClass, WholeFile};
use crate::storage::{lock_error, write_replacing};
use crate::update::{interruptible, wait_of};

/// Loads a kind's file (the caller holds its write lock) into a new Python object.
type Load = fn(Python<'_>, &Path, Wait) -> PyResult<Py<PyAny>>;
/// The whole file of a kind's Python object.
type Bytes = fn(&Bound<'_, PyAny>) -> PyResult<Vec<u8>>;

/// The context manager `SpatialFilter.update` and `CountingFilter.update` return.
#[pyclass(module = "bloomlanes", name = "KindUpdate")]
pub(crate) struct KindUpdate {
    path: PathBuf,
    wait: bool,
    load: Load,
    bytes: Bytes,
    /// Held from `__enter__` to `__exit__`.
    lock: Option<WriteLock>,
    value: Option<Py<PyAny>>,
}

impl KindUpdate {
    /// The update of `path` as a `C` (a class of [`kinds::held_class!`]).
    pub(crate) fn new<C>(path: PathBuf, wait: bool) -> KindUpdate
    where
        C: HeldClass + PyClass<Frozen = True> + Sync + for<'py> IntoPyObject<'py>,
    {
        KindUpdate {
            path,
            wait,
            load: load_as::<C>,
            bytes: bytes_of::<C>,
            lock: None,
            value: None,
        }
    }
}

/// [`Load`] for `C`: read under a shared lock and checked whole, as `C.load` reads.
fn load_as<C>(py: Python<'_>, path: &Path, wait: Wait) -> PyResult<Py<PyAny>>
where
    C: HeldClass + PyClass<Frozen = True> + Sync + for<'py> IntoPyObject<'py>,
{
    let value: C::Value = kinds::load(py, path, wait == Wait::Block)?;
    C::wrap(value, false).into_py_any(py)
}

/// [`Bytes`] for `C`.
fn bytes_of<C>(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>>
where
    C: HeldClass + PyClass<Frozen = True> + Sync + for<'py> IntoPyObject<'py>,
{
    let obj = obj.cast::<C>()?;
    let value = obj.get().read();
    Ok(obj.py().detach(|| value.file_bytes()))
}

#[pymethods]
impl KindUpdate {
    /// Takes the file's write lock and loads the file into memory.
    fn __enter__(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let (path, wait) = (self.path.clone(), wait_of(self.wait));
        let lock = interruptible(py, |waiting| {
            WriteLock::acquire(&path, wait, waiting).map_err(lock_error)
        })?;
        // A file that does not load releases the lock at once (`lock` dropped on the error).
        let value = (self.load)(py, &path, wait)?;
        self.lock = Some(lock);
        self.value = Some(value.clone_ref(py));
        Ok(value)
    }

    /// Saves the value back when the block ended without an exception, then releases the
    /// lock. Never suppresses the block's exception.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let lock = self.lock.take();
        let value = self.value.take();
        if let (None, Some(v), Some(_)) = (exc_type, &value, &lock) {
            // Written under the lock taken on entry.
            let bytes = (self.bytes)(v.bind(py))?;
            let path = self.path.clone();
            py.detach(|| write_replacing(&path, &[&bytes], || Ok(())))?;
        }
        drop(lock);
        Ok(false)
    }
}
