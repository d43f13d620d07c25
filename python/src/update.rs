//! `Filter.update(path)`: a read-modify-write of a `.blf` file that no other writer (another
//! process's `update` or `save`, or the CLI's `insert`, `delete` …) can come between.
//!
//! ```python
//! with bloomlanes.Filter.update("ids.blf") as f:   # waits for another writer (wait=False: raise)
//!     f.insert(new_ids)
//! # saved here, then the lock is released; an exception inside the block saves nothing
//! ```
//!
//! `SpatialFilter.update` and `CountingFilter.update` are the same context manager with their
//! kind's load and save (`kind_update`). Also the lock waits of `save`, `load` and `update`:
//! without the GIL, and given up on Ctrl-C.

use std::path::{Path, PathBuf};

use bloomlanes_guard::{Wait, WriteLock};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::errors::Error;
use crate::filter::PyFilter;
use crate::storage::{lock_error, Storage};

/// The lock-wait choice of a `wait=` argument.
pub(crate) fn wait_of(wait: bool) -> Wait {
    if wait {
        Wait::Block
    } else {
        Wait::Fail
    }
}

/// Runs `f` without the GIL, handing it a lock-wait callback that gives up on a pending
/// interrupt (Ctrl-C while waiting for another process's lock raises `KeyboardInterrupt`).
pub(crate) fn interruptible<T>(
    py: Python<'_>,
    f: impl FnOnce(crate::storage::Waiting<'_>) -> Result<T, Error> + Send,
) -> PyResult<T>
where
    T: Send,
{
    let mut pending: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut waiting = |_: &bloomlanes_guard::Busy| -> std::io::Result<()> {
            match Python::attach(|py| py.check_signals()) {
                Ok(()) => Ok(()),
                Err(e) => {
                    pending = Some(e);
                    Err(std::io::ErrorKind::Interrupted.into())
                }
            }
        };
        f(&mut waiting)
    });
    match (result, pending) {
        (Err(_), Some(e)) => Err(e),
        (r, _) => Ok(r?),
    }
}

/// Loads the file at a path (its write lock held) into a new Python object.
pub(crate) type Load = fn(Python<'_>, &Path, Wait) -> PyResult<Py<PyAny>>;
/// Writes a Python object's file to a path (its write lock held).
pub(crate) type Save = fn(Python<'_>, &Bound<'_, PyAny>, &Path) -> PyResult<()>;

/// The context manager `Filter.update`, `SpatialFilter.update` and `CountingFilter.update`
/// return: one for every kind, which it loads and saves with `load` and `save`.
#[pyclass(module = "bloomlanes", name = "FilterUpdate")]
pub(crate) struct Update {
    path: PathBuf,
    wait: Wait,
    load: Load,
    save: Save,
    /// Held from `__enter__` to `__exit__`.
    lock: Option<WriteLock>,
    value: Option<Py<PyAny>>,
}

impl Update {
    /// The update of `path`, loaded by `load` and saved by `save`.
    pub(crate) fn new(path: PathBuf, wait: Wait, load: Load, save: Save) -> Update {
        Update {
            path,
            wait,
            load,
            save,
            lock: None,
            value: None,
        }
    }
}

/// [`Load`] for `Filter`: into memory, not mapped.
fn load_filter(py: Python<'_>, path: &Path, wait: Wait) -> PyResult<Py<PyAny>> {
    let storage = interruptible(py, |waiting| {
        Storage::load(path, false, true, wait, waiting)
    })?;
    PyFilter::wrap(storage, false).into_py_any(py)
}

/// [`Save`] for `Filter`.
fn save_filter(py: Python<'_>, obj: &Bound<'_, PyAny>, path: &Path) -> PyResult<()> {
    let f = obj.cast::<PyFilter>()?.get();
    Ok(py.detach(|| f.read().write_file(path))?)
}

impl Update {
    /// `Filter.update(path)`.
    pub(crate) fn of_filter(path: PathBuf, wait: Wait) -> Update {
        Update::new(path, wait, load_filter, save_filter)
    }
}

#[pymethods]
impl Update {
    /// Takes the file's write lock and loads the file into memory; a file that does not load
    /// releases the lock at once.
    fn __enter__(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let (path, wait) = (self.path.clone(), self.wait);
        let lock = interruptible(py, |waiting| {
            WriteLock::acquire(&path, wait, waiting).map_err(lock_error)
        })?;
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
            // Written under the lock taken on entry (whichever thread exits).
            (self.save)(py, v.bind(py), &self.path)?;
        }
        drop(lock);
        Ok(false)
    }
}
