//! `Filter.update(path)`: a read-modify-write of a `.blf` file that no other writer (another
//! process's `update` or `save`, or the CLI's `insert`, `delete` …) can come between.
//!
//! ```python
//! with bloomlanes.Filter.update("ids.blf") as f:   # waits for another writer (wait=False: raise)
//!     f.insert(new_ids)
//! # saved here, then the lock is released; an exception inside the block saves nothing
//! ```
//!
//! Also the lock waits of `save`, `load` and `update`: without the GIL, and given up on Ctrl-C.

use std::path::PathBuf;

use bloomlanes_guard::{Wait, WriteLock};
use pyo3::prelude::*;

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

/// The context manager `Filter.update` returns.
#[pyclass(module = "bloomlanes", name = "FilterUpdate")]
pub(crate) struct Update {
    path: PathBuf,
    wait: Wait,
    /// Held from `__enter__` to `__exit__`.
    lock: Option<WriteLock>,
    filter: Option<Py<PyFilter>>,
}

impl Update {
    pub(crate) fn new(path: PathBuf, wait: Wait) -> Update {
        Update {
            path,
            wait,
            lock: None,
            filter: None,
        }
    }
}

#[pymethods]
impl Update {
    /// Takes the file's write lock and loads the filter into memory (not mapped).
    fn __enter__(&mut self, py: Python<'_>) -> PyResult<Py<PyFilter>> {
        let (path, wait) = (self.path.clone(), self.wait);
        let (lock, storage) = interruptible(py, |waiting| {
            let lock = WriteLock::acquire(&path, wait, waiting).map_err(lock_error)?;
            let storage = Storage::load(&path, false, true, wait, waiting)?;
            Ok((lock, storage))
        })?;
        self.lock = Some(lock);
        let filter = Py::new(py, PyFilter::wrap(storage, false))?;
        self.filter = Some(filter.clone_ref(py));
        Ok(filter)
    }

    /// Saves the filter back when the block ended without an exception, then releases the
    /// lock. Never suppresses the block's exception.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let lock = self.lock.take();
        let filter = self.filter.take();
        if let (None, Some(f), Some(_)) = (exc_type, &filter, &lock) {
            // Written under the lock taken on entry (whichever thread exits).
            let f = f.get();
            let path = self.path.clone();
            py.detach(|| f.read().write_file(&path))?;
        }
        drop(lock);
        Ok(false)
    }
}
