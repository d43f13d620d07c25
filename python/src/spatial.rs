//! `bloomlanes.SpatialFilter`: which class a key belongs to (core's [`SpatialFilter`]; the SIMD
//! backend's max-inserts and min-reads of cells on every core).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use bloomlanes_core::{FormatError, KeyType, Params, SpatialFilter};
use bloomlanes_simd::{Classes, Probe, Schedule};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::convert::{
    key_type_name, numpy_bools, numpy_filled, numpy_u32s, params_dict, parse_key_type,
    parse_layout, stats_dict,
};
use crate::errors::Error;
use crate::filter::PyFilter;
use crate::input::{extract, extract_one, Input, Part};
use crate::kinds::{self, check_kind_keys, refuse_float_keys, refuse_nulls, WholeFile};
use crate::ops;
use crate::storage::Storage;

/// What `__reduce__` returns: the constructor and its arguments (file bytes, pending key type).
type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, bool));

impl WholeFile for SpatialFilter {
    fn file_bytes(&self) -> Vec<u8> {
        self.to_file_bytes()
    }
    fn parse(file: &[u8]) -> Result<Self, FormatError> {
        SpatialFilter::from_file_bytes(file)
    }
}

/// A spatial Bloom filter (see `bloomlanes/_native.pyi`).
#[pyclass(module = "bloomlanes", name = "SpatialFilter", frozen)]
pub(crate) struct PySpatialFilter {
    inner: RwLock<SpatialFilter>,
    /// Made without a key type: the first keys inserted record theirs.
    learn_key_type: AtomicBool,
}

/// The narrowest cell width (4, 8 or 16 bits) that holds `classes` classes.
fn cell_bits_for(classes: usize) -> u32 {
    [4, 8, 16]
        .into_iter()
        .find(|&b| classes < (1 << b))
        .unwrap_or(16)
}

impl PySpatialFilter {
    fn wrap(f: SpatialFilter, learn: bool) -> PySpatialFilter {
        PySpatialFilter {
            inner: RwLock::new(f),
            learn_key_type: AtomicBool::new(learn),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, SpatialFilter> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, SpatialFilter> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks the keys' type; a filter made without one and still empty takes theirs.
    fn check_or_learn(&self, f: &mut SpatialFilter, keys: KeyType) -> Result<(), Error> {
        refuse_float_keys(keys, "SpatialFilter")?;
        let p = *f.params();
        if keys != KeyType::Any
            && p.key_type == KeyType::Any
            && f.keys_per_class().iter().all(|&k| k == 0)
            && self.learn_key_type.swap(false, Ordering::AcqRel)
        {
            let names = f.class_names().to_vec();
            *f = SpatialFilter::new(p.with_key_type(keys), f.cell_bits().bits(), &names)
                .map_err(|e| Error::value(e.to_string()))?;
        }
        check_kind_keys(f.params(), keys, "SpatialFilter")
    }

    /// The class numbers of `classes` for `n` keys: one name or number for all, or one number
    /// per key; every number checked against the filter's classes.
    fn classes_of(f: &SpatialFilter, classes: &Bound<'_, PyAny>, n: usize) -> PyResult<ClassArg> {
        let top = u32::from(f.classes());
        let range = || {
            let names: Vec<String> = f
                .class_names()
                .iter()
                .enumerate()
                .map(|(i, s)| format!("{} = {s}", i + 1))
                .collect();
            format!("the filter has classes 1 to {top} ({})", names.join(", "))
        };
        if let Ok(name) = classes.extract::<String>() {
            let c = f
                .class_number(&name)
                .ok_or_else(|| Error::value(format!("no class is called {name:?}: {}", range())))?;
            return Ok(ClassArg::One(u32::from(c)));
        }
        if let Ok(c) = classes.extract::<i64>() {
            if c < 1 || c > i64::from(top) {
                return Err(Error::value(format!("class {c} does not exist: {}", range())).into());
            }
            return Ok(ClassArg::One(c as u32));
        }
        let list = numpy_u32s(classes, "classes")?;
        if list.len() != n {
            return Err(Error::value(format!(
                "{} classes for {n} keys: give one class per key, or one class for all",
                list.len()
            ))
            .into());
        }
        if let Some(i) = list.iter().position(|&c| c == 0 || c > top) {
            return Err(Error::value(format!(
                "classes[{i}] = {} does not exist: {}",
                list[i],
                range()
            ))
            .into());
        }
        Ok(ClassArg::Each(list))
    }

    /// Each key's class into `out` (0: absent; nulls 0).
    fn classify_into(
        &self,
        parts: &[Part<'_>],
        key_type: KeyType,
        out: &mut [u16],
    ) -> Result<(), Error> {
        let f = self.read();
        check_kind_keys(f.params(), key_type, "SpatialFilter")?;
        let probe = Probe::active();
        let seed = f.params().seed;
        for (start, p) in ops::part_starts(parts) {
            let n = p.values.len();
            let out = &mut out[start..start + n];
            let keys = ops::backend_keys(p, seed)?;
            ops::in_pool(|| probe.par_min_cells(&*f, keys.keys(), out));
            if let Some(valid) = p.nulls {
                for (i, o) in out.iter_mut().enumerate() {
                    if !valid.is_valid(i) {
                        *o = 0;
                    }
                }
            }
        }
        Ok(())
    }

    fn extract<'py>(&self, keys: &Bound<'py, PyAny>) -> Result<Input<'py>, Error> {
        extract(keys, self.read().params().key_type)
    }
}

/// The classes of an insert.
enum ClassArg {
    One(u32),
    Each(Vec<u32>),
}

#[pymethods]
impl PySpatialFilter {
    #[new]
    #[pyo3(signature = (classes, capacity=None, fpr=None, *, bits_per_key=None, blocks=None, cell_bits=None, layout=None, seed=0, key_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        classes: Vec<String>,
        capacity: Option<u64>,
        fpr: Option<f64>,
        bits_per_key: Option<f64>,
        blocks: Option<u32>,
        cell_bits: Option<u32>,
        layout: Option<&str>,
        seed: u64,
        key_type: Option<&str>,
    ) -> PyResult<PySpatialFilter> {
        let layout = parse_layout(layout)?;
        let kt = parse_key_type(key_type)?;
        let shape = match (capacity, blocks) {
            (Some(_), Some(_)) => {
                return Err(Error::value("give capacity or blocks, not both").into())
            }
            (None, None) => {
                return Err(Error::value("give capacity (keys in all classes) or blocks").into())
            }
            (Some(keys), None) => {
                let sizing = crate::convert::sizing(fpr, bits_per_key)?;
                Params::for_keys(keys, sizing, layout).map_err(Error::from)?
            }
            (None, Some(b)) => {
                if fpr.is_some() || bits_per_key.is_some() {
                    return Err(
                        Error::value("blocks sets the size: give no fpr or bits_per_key").into(),
                    );
                }
                let layout = layout.ok_or_else(|| {
                    Error::value("blocks needs a layout (8x32, 8x64, 16x32 or 16x64)")
                })?;
                if b == 0 {
                    return Err(Error::value("blocks must be at least 1").into());
                }
                Params::new(layout, b)
            }
        };
        let params = shape
            .with_seed(seed)
            .with_key_type(kt.unwrap_or(KeyType::Any));
        let bits = cell_bits.unwrap_or_else(|| cell_bits_for(classes.len()));
        let f = py
            .detach(|| SpatialFilter::new(params, bits, &classes))
            .map_err(|e| Error::value(e.to_string()))?;
        Ok(PySpatialFilter::wrap(f, kt.is_none()))
    }

    #[getter]
    fn class_names(&self) -> Vec<String> {
        self.read().class_names().to_vec()
    }
    #[getter]
    fn cell_bits(&self) -> u32 {
        self.read().cell_bits().bits()
    }
    /// Layout, blocks, seed and key type, as `Filter.params`.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, self.read().params())
    }
    #[getter]
    fn key_type(&self) -> Option<String> {
        key_type_name(self.read().params().key_type)
    }
    #[getter]
    fn key_count(&self) -> Option<u64> {
        self.read().key_count()
    }
    #[getter]
    fn keys_per_class(&self) -> Vec<u64> {
        self.read().keys_per_class().to_vec()
    }
    #[getter]
    fn nbytes(&self) -> u64 {
        let f = self.read();
        4 * (f.image_words().len() + f.cell_words().len()) as u64
    }

    /// Inserts keys in `classes`: one class name or number for all, or one number per key.
    fn insert(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        classes: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        let classes = Self::classes_of(&self.read(), classes, input.len())?;
        refuse_nulls(&parts, "SpatialFilter.insert")?;
        py.detach(|| -> Result<(), Error> {
            let mut guard = self.write();
            let f: &mut SpatialFilter = &mut guard;
            self.check_or_learn(f, input.key_type)?;
            let probe = Probe::active();
            let seed = f.params().seed;
            for (start, p) in ops::part_starts(&parts) {
                let n = p.values.len();
                let keys = ops::backend_keys(p, seed)?;
                let cls = match &classes {
                    ClassArg::One(c) => Classes::One(*c),
                    ClassArg::Each(list) => Classes::U32(&list[start..start + n]),
                };
                ops::in_pool(|| {
                    probe.insert_spatial_filter(f, keys.keys(), cls, Schedule::AllCores)
                })
                .map_err(|e| Error::value(e.to_string()))?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Each key's class number: a numpy uint16 array, 0 for an absent key.
    fn classify<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        numpy_filled(py, input.len(), "<u2", |out| {
            py.detach(|| self.classify_into(&parts, input.key_type, out))
        })
    }

    /// Whether each key may be in some class: a numpy bool array (the projection, a static
    /// filter's answers).
    fn contains<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        numpy_bools(py, input.len(), |out| {
            py.detach(|| {
                let f = self.read();
                check_kind_keys(f.params(), input.key_type, "SpatialFilter")?;
                let probe = Probe::active();
                for (start, p) in ops::part_starts(&parts) {
                    let n = p.values.len();
                    let view = f.projection();
                    ops::in_pool(|| {
                        ops::contains(&probe, view, p, input.key_type, &mut out[start..start + n])
                    })?;
                }
                Ok(())
            })
        })
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let input = extract_one(key, self.read().params().key_type, "classify")?;
        let mut out = [0u16];
        self.classify_into(&input.parts()?, input.key_type, &mut out)?;
        Ok(out[0] != 0)
    }

    /// The projection as a `Filter`: byte-identical to the static filter of every key inserted.
    fn to_filter(&self) -> PyFilter {
        PyFilter::wrap(Storage::Owned(self.read().to_static()), false)
    }

    /// Statistics of the projection (the fields of `Filter.stats()`), `cell_bits` and
    /// `classes`: one dict per class (class, name, keys, cells, expected_cells, expected_fpr,
    /// expected_emersion).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, per_class, bits) = py.detach(|| {
            let f = self.read();
            (f.stats(), f.class_stats(), f.cell_bits().bits())
        });
        let d = stats_dict(py, &s, false)?;
        d.set_item("cell_bits", bits)?;
        let list = PyList::empty(py);
        for c in per_class {
            let e = PyDict::new(py);
            e.set_item("class", c.class)?;
            e.set_item("name", c.name)?;
            e.set_item("keys", c.keys)?;
            e.set_item("cells", c.cells)?;
            e.set_item("expected_cells", c.expected_cells)?;
            e.set_item("expected_fpr", c.expected_fpr)?;
            e.set_item("expected_emersion", c.expected_emersion)?;
            list.append(e)?;
        }
        d.set_item("classes", list)?;
        Ok(d)
    }

    /// Writes the spatial filter file (the CLI's format), under the file's write lock.
    #[pyo3(signature = (path, *, wait=true))]
    fn save(&self, py: Python<'_>, path: PathBuf, wait: bool) -> PyResult<()> {
        kinds::save(py, &*self.read(), &path, wait)
    }

    /// Reads a spatial filter file into memory, under a shared lock; checked whole.
    #[staticmethod]
    #[pyo3(signature = (path, *, wait=true))]
    fn load(py: Python<'_>, path: PathBuf, wait: bool) -> PyResult<PySpatialFilter> {
        Ok(PySpatialFilter::wrap(kinds::load(py, &path, wait)?, false))
    }

    /// The whole file as bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        kinds::to_bytes(py, &*self.read())
    }

    /// A spatial filter from the bytes of its file.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PySpatialFilter> {
        Ok(PySpatialFilter::wrap(kinds::from_bytes(py, data)?, false))
    }

    fn copy(&self) -> PySpatialFilter {
        PySpatialFilter::wrap(
            self.read().clone(),
            self.learn_key_type.load(Ordering::Acquire),
        )
    }
    fn __copy__(&self) -> PySpatialFilter {
        self.copy()
    }
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PySpatialFilter {
        self.copy()
    }

    /// Pickling: the file bytes, and whether the key type is still to be learned.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let ctor = py.get_type::<PySpatialFilter>().getattr("_unpickle")?;
        let learn = self.learn_key_type.load(Ordering::Acquire);
        Ok((ctor, (self.to_bytes(py), learn)))
    }

    /// The inverse of `__reduce__`.
    #[staticmethod]
    fn _unpickle(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        learn_key_type: bool,
    ) -> PyResult<PySpatialFilter> {
        Ok(PySpatialFilter::wrap(
            kinds::from_bytes(py, data)?,
            learn_key_type,
        ))
    }

    /// Whether both have the same parameters, classes, key counts and cells.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PySpatialFilter>() {
            Ok(o) if std::ptr::eq(self, o.get()) => true,
            Ok(o) => *self.read() == *o.get().read(),
            Err(_) => false,
        }
    }

    fn __repr__(&self) -> String {
        let f = self.read();
        let p = f.params();
        format!(
            "SpatialFilter(classes={:?}, layout='{}', blocks={}, cell_bits={}, seed={}, key_type={}, key_count={})",
            f.class_names(),
            p.layout,
            p.blocks,
            f.cell_bits().bits(),
            p.seed,
            if p.key_type == KeyType::Any { "None".to_string() } else { format!("'{}'", p.key_type) },
            f.key_count().map_or("None".into(), |k| k.to_string()),
        )
    }
}
