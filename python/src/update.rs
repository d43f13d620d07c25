//! `Filter.update(path)`: a read-modify-write of a `.blf` file that no other writer (another
//! process's `update` or `save`, or the CLI's `insert`, `delete` …) can come between.
//!
//! ```python
//! with bloomlanes.Filter.update("ids.blf") as f:   # waits for another writer (wait=False: raise)
//!     f.insert(new_ids)
//! # saved here, then the lock is released; an exception inside the block saves nothing
//! ```

use std::path::PathBuf;

use bloomlanes_guard::{Wait, WriteLock};
use pyo3::prelude::*;

use crate::filter::{interruptible, PyFilter};
use crate::storage::{lock_error, Storage};

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
