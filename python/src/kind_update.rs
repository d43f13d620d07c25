//! `SpatialFilter.update(path)` and `CountingFilter.update(path)`: the read-modify-write of
//! `Filter.update` (the same context manager, `update::Update`) for the kinds held in memory,
//! so that a rule table or a counter file edited from Python loses no other writer's update
//! (the CLI's `insert` and `delete`, another process's `update` or `save`): the file's write
//! lock is held from the load to the save.
//!
//! ```python
//! with bloomlanes.SpatialFilter.update("rules.blf") as rules:   # waits for another writer
//!     rules.insert(new_ips, "deny")
//! # saved here, then the lock is released; an exception inside the block saves nothing
//! ```

use std::path::{Path, PathBuf};

use bloomlanes_guard::Wait;
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::True;
use pyo3::{IntoPyObjectExt, PyClass};

use crate::kinds::{self, HeldClass, WholeFile};
use crate::storage::write_replacing;
use crate::update::{wait_of, Update};

/// `C.update(path)` for a class `C` of [`kinds::held_class!`].
pub(crate) fn update_of<C>(path: PathBuf, wait: bool) -> Update
where
    C: HeldClass + PyClass<Frozen = True> + Sync + for<'py> IntoPyObject<'py>,
{
    Update::new(path, wait_of(wait), load_as::<C>, save_as::<C>)
}

/// Loads a `C`: read under a shared lock and checked whole, as `C.load` reads.
fn load_as<C>(py: Python<'_>, path: &Path, wait: Wait) -> PyResult<Py<PyAny>>
where
    C: HeldClass + PyClass<Frozen = True> + Sync + for<'py> IntoPyObject<'py>,
{
    let value: C::Value = kinds::load(py, path, wait == Wait::Block)?;
    C::wrap(value, false).into_py_any(py)
}

/// Saves a `C`: its whole file, written beside the old one and renamed over it.
fn save_as<C>(py: Python<'_>, obj: &Bound<'_, PyAny>, path: &Path) -> PyResult<()>
where
    C: HeldClass + PyClass<Frozen = True> + Sync + for<'py> IntoPyObject<'py>,
{
    let obj = obj.cast::<C>()?;
    let value = obj.get().read();
    Ok(py.detach(|| write_replacing(path, &[&value.file_bytes()], || Ok(())))?)
}
