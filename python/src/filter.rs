//! `bloomlanes.Filter`: the Python class over [`Storage`].

use std::path::PathBuf;

use bloomlanes_core::{HashId, KeyMatch, KeyType, Params};
use bloomlanes_simd::Probe;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::convert::{
    key_type_name, numpy_bitmap, numpy_bools, params_dict, parse_key_type, parse_layout,
    repr_key_count, repr_key_type, stats_dict, with_bytes,
};
use crate::device::{device_array, Backend};
use crate::errors::Error;
use crate::files::{self, FileSpec};
use crate::input::{extract_for, extract_one, Part};
use crate::kinds::{Held, Reduced};
use crate::ops::{self, Threads};
use crate::storage::{self, try_filter, Storage};
use crate::update::{interruptible, wait_of};

/// A split-block Bloom filter (see the package docstring and `bloomlanes/_native.pyi`): its
/// storage held as the other kinds hold theirs (the lock, the version every write lock bumps,
/// which tells the GPU backend's device copy whether it is current, and whether the key type is
/// still to be learnt from the first keys inserted), so `read`, `write` and the rest are
/// [`Held`]'s, reached through `Deref`.
#[pyclass(module = "bloomlanes", name = "Filter", frozen)]
pub(crate) struct PyFilter {
    held: Held<Storage>,
    /// The filter's device copy (GPU backend).
    #[cfg(feature = "gpu")]
    pub(crate) gpu: crate::gpu::GpuSlot,
}

impl std::ops::Deref for PyFilter {
    type Target = Held<Storage>;
    fn deref(&self) -> &Held<Storage> {
        &self.held
    }
}

/// Whether keys of type `keys` may be used with a filter of type `filter`.
pub(crate) fn check_keys(params: &Params, keys: KeyType) -> Result<(), Error> {
    if params.hash != HashId::Xxh64 {
        return Err(Error::type_(
            "this filter holds caller-supplied hashes (hash id 0): it cannot hash keys",
        ));
    }
    if keys == KeyType::Any {
        return Ok(());
    }
    let filter = params.key_type;
    match filter.check_query(keys) {
        KeyMatch::Same | KeyMatch::Unchecked => Ok(()),
        KeyMatch::SameBytes => Err(Error::KeyType(format!(
            "keys of type {keys} do not match the filter's key type {filter}: the same bytes \
             but another meaning; convert the keys (e.g. numpy's .view or .astype) or build \
             the filter with key_type='{keys}'"
        ))),
        KeyMatch::Mismatch => Err(Error::KeyType(format!(
            "keys of type {keys} do not match the filter's key type {filter}: they hash other \
             bytes, so every present key would be reported absent"
        ))),
    }
}

impl PyFilter {
    pub(crate) fn wrap(storage: Storage, learn: bool) -> PyFilter {
        PyFilter {
            held: Held::new(storage, learn),
            #[cfg(feature = "gpu")]
            gpu: Default::default(),
        }
    }

    /// Checks the keys' type against the filter's; records it on a filter made without one.
    pub(crate) fn check_or_learn(&self, storage: &mut Storage, keys: KeyType) -> Result<(), Error> {
        let params = storage.params();
        if keys != KeyType::Any && params.key_type == KeyType::Any && self.take_learning() {
            storage.owned_mut()?.set_key_type(keys);
            return Ok(());
        }
        check_keys(&params, keys)
    }

    /// Answers for every key of `input` into `out` (one byte each).
    fn contains_into(
        &self,
        parts: &[Part<'_>],
        key_type: KeyType,
        threads: &Threads,
        out: &mut [u8],
    ) -> Result<(), Error> {
        let g = self.read();
        check_keys(&g.params(), key_type)?;
        let view = g.view();
        let probe = Probe::active();
        threads.install(|| {
            for (start, p) in ops::part_starts(parts) {
                let n = p.values.len();
                ops::contains(&probe, view, p, key_type, &mut out[start..start + n])?;
            }
            Ok::<(), Error>(())
        })?;
        // Answers from a mapped file are returned only if it is still whole.
        g.check()
    }
}

#[pymethods]
impl PyFilter {
    #[new]
    #[pyo3(signature = (capacity, fpr=None, *, bits_per_key=None, layout=None, seed=0, key_type=None))]
    fn new(
        py: Python<'_>,
        capacity: u64,
        fpr: Option<f64>,
        bits_per_key: Option<f64>,
        layout: Option<&str>,
        seed: u64,
        key_type: Option<&str>,
    ) -> PyResult<PyFilter> {
        let sizing = crate::convert::sizing(fpr, bits_per_key)?;
        let layout = parse_layout(layout)?;
        let kt = parse_key_type(key_type)?;
        let params = Params::for_keys_mergeable(capacity, sizing, layout)
            .map_err(Error::from)?
            .with_seed(seed)
            .with_key_type(kt.unwrap_or(KeyType::Any));
        let filter = py.detach(|| try_filter(params))?;
        Ok(PyFilter::wrap(Storage::Owned(filter), kt.is_none()))
    }

    /// An empty filter of exactly `blocks` blocks of `layout`.
    #[staticmethod]
    #[pyo3(signature = (layout, blocks, *, seed=0, key_type=None))]
    fn with_params(
        py: Python<'_>,
        layout: &str,
        blocks: u32,
        seed: u64,
        key_type: Option<&str>,
    ) -> PyResult<PyFilter> {
        let layout = parse_layout(Some(layout))?.ok_or_else(|| {
            Error::value("with_params needs a layout (8x32, 8x64, 16x32 or 16x64)")
        })?;
        if blocks == 0 {
            return Err(Error::value("blocks must be at least 1").into());
        }
        let kt = parse_key_type(key_type)?;
        let params = Params::new(layout, blocks)
            .with_seed(seed)
            .with_key_type(kt.unwrap_or(KeyType::Any));
        let filter = py.detach(|| try_filter(params))?;
        Ok(PyFilter::wrap(Storage::Owned(filter), kt.is_none()))
    }

    /// An empty filter with the same parameters.
    fn empty_like(&self, py: Python<'_>) -> PyResult<PyFilter> {
        let params = self.read().params();
        let filter = py.detach(|| try_filter(params))?;
        Ok(PyFilter::wrap(Storage::Owned(filter), self.learning()))
    }

    #[getter]
    fn layout(&self) -> String {
        self.read().params().layout.to_string()
    }
    #[getter]
    fn blocks(&self) -> u32 {
        self.read().params().blocks
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.read().params().seed
    }
    #[getter]
    fn key_type(&self) -> Option<String> {
        key_type_name(self.read().params().key_type)
    }
    #[getter]
    fn hash(&self) -> &'static str {
        self.read().params().hash.name()
    }
    #[getter]
    fn nbytes(&self) -> u64 {
        self.read().params().byte_len()
    }
    #[getter]
    fn key_count(&self) -> Option<u64> {
        self.read().key_count()
    }
    #[setter]
    fn set_key_count(&self, keys: Option<u64>) -> PyResult<()> {
        self.write().owned_mut()?.set_key_count(keys);
        Ok(())
    }
    #[getter]
    fn path(&self) -> Option<String> {
        self.read().path().map(|p| p.display().to_string())
    }
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, &self.read().params())
    }

    /// Inserts keys (see the stub for the accepted forms, backends and thread counts).
    #[pyo3(signature = (keys, *, backend=None, threads=None))]
    fn insert(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        backend: Option<&str>,
        threads: Option<i64>,
    ) -> PyResult<()> {
        let backend = Backend::parse(backend)?;
        let threads = Threads::of(threads)?;
        if let Some(dev) = device_array(keys)? {
            return Ok(self.insert_device_array(py, &dev, backend)?);
        }
        if backend != Backend::Gpu && self.insert_list(py, keys, &threads)? {
            return Ok(());
        }
        let hashed = (backend != Backend::Gpu).then_some(&threads);
        let input = extract_for(keys, &self.read().params(), hashed)?;
        let parts = input.parts()?;
        let key_type = input.key_type;
        if backend == Backend::Gpu {
            return Ok(self.insert_host_on_gpu(py, &parts, key_type)?);
        }
        py.detach(|| -> Result<(), Error> {
            let mut g = self.write();
            self.check_or_learn(&mut g, key_type)?;
            if parts.is_empty() {
                return Ok(());
            }
            let probe = Probe::active();
            let filter = g.owned_mut()?;
            let inserted = threads.install(|| -> Result<u64, Error> {
                let mut total = 0;
                for p in &parts {
                    total += ops::insert(&probe, filter.as_view_mut(), p)?;
                }
                Ok(total)
            })?;
            filter.add_key_count(inserted);
            Ok(())
        })?;
        Ok(())
    }

    /// Looks keys up: a numpy bool array, or with `bitmap=True` packed bits (uint8, LSB first).
    #[pyo3(signature = (keys, *, bitmap=false, backend=None, out=None, threads=None))]
    fn contains<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        bitmap: bool,
        backend: Option<&str>,
        out: Option<&Bound<'py, PyAny>>,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let backend = Backend::parse(backend)?;
        let threads = Threads::of(threads)?;
        if let Some(dev) = device_array(keys)? {
            return Ok(self.contains_device_array(py, &dev, bitmap, backend, out)?);
        }
        if out.is_some() {
            return Err(Error::value("out= is for device keys (a device array of answers)").into());
        }
        if let Some(answers) = self.contains_list(py, keys, bitmap, backend, &threads)? {
            return Ok(answers);
        }
        let hashed = (backend != Backend::Gpu).then_some(&threads);
        let input = extract_for(keys, &self.read().params(), hashed)?;
        let n = input.len();
        let parts = input.parts()?;
        let key_type = input.key_type;
        if !bitmap {
            return numpy_bools(py, n, |out| {
                if backend == Backend::Gpu {
                    self.contains_host_on_gpu(py, &parts, key_type, out)
                } else {
                    py.detach(|| self.contains_into(&parts, key_type, &threads, out))
                }
            });
        }
        numpy_bitmap(py, n, |out| {
            if backend == Backend::Gpu {
                let mut bytes = vec![0u8; n];
                self.contains_host_on_gpu(py, &parts, key_type, &mut bytes)?;
                ops::pack(&bytes, out);
                return Ok(());
            }
            py.detach(|| {
                if parts.len() == 1 && ops::bitmap_direct(&parts[0], key_type) {
                    let g = self.read();
                    check_keys(&g.params(), key_type)?;
                    let probe = Probe::active();
                    threads.install(|| {
                        ops::contains_bitmap_direct(&probe, g.view(), &parts[0], out)
                    })?;
                    return g.check();
                }
                let mut bytes = vec![0u8; n];
                self.contains_into(&parts, key_type, &threads, &mut bytes)?;
                threads.install(|| ops::pack(&bytes, out));
                Ok(())
            })
        })
    }

    /// Inserts the keys of a file, read as the `bloomlanes` tool reads it (see the stub);
    /// returns how many.
    #[pyo3(signature = (path, *, format="auto", key_type=None, column=None, header=true, delimiter=None))]
    #[allow(clippy::too_many_arguments)]
    fn insert_file(
        &self,
        py: Python<'_>,
        path: PathBuf,
        format: &str,
        key_type: Option<&str>,
        column: Option<&Bound<'_, PyAny>>,
        header: bool,
        delimiter: Option<&str>,
    ) -> PyResult<u64> {
        let spec = FileSpec::new(format, key_type, column, header, delimiter)?;
        let (keys, warnings) = py.detach(|| files::insert_file(self, &path, &spec))?;
        files::warn(py, &warnings)?;
        Ok(keys)
    }

    /// Looks up the keys of a file (see the stub): a numpy bool array in file order, or with
    /// `bitmap=True` packed bits.
    #[pyo3(signature = (path, *, format="auto", key_type=None, column=None, header=true, delimiter=None, bitmap=false))]
    #[allow(clippy::too_many_arguments)]
    fn contains_file<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: &str,
        key_type: Option<&str>,
        column: Option<&Bound<'py, PyAny>>,
        header: bool,
        delimiter: Option<&str>,
        bitmap: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let spec = FileSpec::new(format, key_type, column, header, delimiter)?;
        let answers = py.detach(|| files::contains_file(self, &path, &spec))?;
        if bitmap {
            numpy_bitmap(py, answers.len(), |out| {
                ops::pack(&answers, out);
                Ok(())
            })
        } else {
            numpy_bools(py, answers.len(), |out| {
                out.copy_from_slice(&answers);
                Ok(())
            })
        }
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let input = extract_one(key, self.read().params().key_type, "contains")?;
        let mut out = [0u8];
        self.contains_into(&input.parts()?, input.key_type, &Threads::Package, &mut out)?;
        Ok(out[0] == 1)
    }

    /// Removes every key.
    fn clear(&self) -> PyResult<()> {
        self.write().owned_mut()?.clear();
        Ok(())
    }

    /// Statistics, with the field names of `bloomlanes stats --json`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, mapped) = py.detach(|| -> Result<_, Error> {
            let g = self.read();
            let view = g.view();
            let mut s = bloomlanes_core::Stats::new(g.params(), g.key_count(), view.count_ones());
            s.fpr_from_bits = Some(view.fpr_from_bits());
            g.check()?;
            Ok((s, g.path().is_some()))
        })?;
        stats_dict(py, &s, mapped)
    }

    /// Writes the `.blf` file (the CLI's format), under the file's write lock.
    #[pyo3(signature = (path, *, wait=true))]
    fn save(&self, py: Python<'_>, path: PathBuf, wait: bool) -> PyResult<()> {
        interruptible(py, |waiting| {
            self.read().save(&path, wait_of(wait), waiting)
        })
    }

    /// Opens a `.blf` file, memory-mapped read-only by default, under a shared lock.
    #[staticmethod]
    #[pyo3(signature = (path, *, mmap=true, verify=true, wait=true))]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        mmap: bool,
        verify: bool,
        wait: bool,
    ) -> PyResult<PyFilter> {
        let storage = interruptible(py, |waiting| {
            Storage::load(&path, mmap, verify, wait_of(wait), waiting)
        })?;
        Ok(PyFilter::wrap(storage, false))
    }

    /// A context manager for a read-modify-write of the file at `path`: takes its write lock,
    /// loads it into memory, yields the filter and saves it back on a clean exit.
    #[staticmethod]
    #[pyo3(name = "update", signature = (path, *, wait=true))]
    fn update_file(path: PathBuf, wait: bool) -> crate::update::Update {
        crate::update::Update::of_filter(path, wait_of(wait))
    }

    /// The whole `.blf` file as bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let g = self.read();
        PyBytes::new_with(py, g.file_len(), |buf| Ok(g.file_bytes_into(buf)?))
    }

    /// A filter from the bytes of a `.blf` file (copied into memory).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PyFilter> {
        with_bytes(data, |bytes| {
            let f = py.detach(|| storage::filter_from_file_bytes(bytes))?;
            Ok(PyFilter::wrap(Storage::Owned(f), false))
        })
    }

    /// The Parquet split-block form (Thrift header + bitset); 8x32, seed 0 only.
    fn to_parquet_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let f = self.read().to_owned_filter()?;
        let bytes = f.to_parquet().map_err(Error::from)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A filter from a Parquet bloom filter (header + bitset, nothing after it).
    #[staticmethod]
    #[pyo3(signature = (data, *, key_type=None))]
    fn from_parquet_bytes(data: &Bound<'_, PyAny>, key_type: Option<&str>) -> PyResult<PyFilter> {
        let kt = parse_key_type(key_type)?;
        with_bytes(data, |bytes| {
            let (f, used) = bloomlanes_core::Filter::from_parquet(bytes).map_err(Error::from)?;
            if used != bytes.len() {
                return Err(Error::Format(format!(
                    "{} unexpected bytes after the Parquet bloom filter ({used} bytes)",
                    bytes.len() - used
                ))
                .into());
            }
            let mut f = f;
            f.set_key_type(kt.unwrap_or(KeyType::Any));
            f.set_key_count(None);
            Ok(PyFilter::wrap(Storage::Owned(f), kt.is_none()))
        })
    }

    fn copy(&self) -> PyResult<PyFilter> {
        Ok(PyFilter::wrap(
            Storage::Owned(self.read().to_owned_filter()?),
            self.learning(),
        ))
    }
    fn __copy__(&self) -> PyResult<PyFilter> {
        self.copy()
    }
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<PyFilter> {
        self.copy()
    }

    /// Pickling: the file bytes, and whether the key type is still to be learned (a filter made
    /// without a key type and not yet given keys).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let ctor = py.get_type::<PyFilter>().getattr("_unpickle")?;
        let learn = self.learning();
        Ok((ctor, (self.to_bytes(py)?, learn)))
    }

    /// The inverse of `__reduce__`.
    #[staticmethod]
    fn _unpickle(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        learn_key_type: bool,
    ) -> PyResult<PyFilter> {
        let f = PyFilter::from_bytes(py, data)?;
        f.set_learning(learn_key_type);
        Ok(f)
    }

    fn __or__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.combine_any(other, true)
    }
    fn __and__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.combine_any(other, false)
    }
    fn __ior__(slf: &Bound<'_, Self>, other: &Bound<'_, PyFilter>) -> PyResult<()> {
        let (a, b) = (slf.get(), other.get());
        slf.py().detach(|| a.update(b, true))?;
        Ok(())
    }
    fn __iand__(slf: &Bound<'_, Self>, other: &Bound<'_, PyFilter>) -> PyResult<()> {
        let (a, b) = (slf.get(), other.get());
        slf.py().detach(|| a.update(b, false))?;
        Ok(())
    }

    /// Whether both filters have the same parameters, key count and bits.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<PyFilter>() else {
            return Ok(false);
        };
        if std::ptr::eq(self, o.get()) {
            return Ok(true);
        }
        let (a, b) = (self.read(), o.get().read());
        let same = a.params() == b.params()
            && a.key_count() == b.key_count()
            && a.view().words() == b.view().words();
        a.check()?;
        b.check()?;
        Ok(same)
    }

    fn __repr__(&self) -> String {
        let g = self.read();
        let p = g.params();
        format!(
            "Filter(layout='{}', blocks={}, seed={}, key_type={}, key_count={}, nbytes={}{})",
            p.layout,
            p.blocks,
            p.seed,
            repr_key_type(p.key_type),
            repr_key_count(g.key_count()),
            p.byte_len(),
            g.path()
                .map_or(String::new(), |p| format!(", path='{}'", p.display()))
        )
    }
}
