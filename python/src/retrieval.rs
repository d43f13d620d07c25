//! `bloomlanes.Retrieval`: a static map from each key of a build set to a value of 1 to 32 bits
//! (core's [`RetrievalTable`], built and read by the SIMD backend on every core).

use std::path::PathBuf;

use bloomlanes_core::retrieval::{RetrievalError, RetrievalSpec, RetrievalTable};
use bloomlanes_core::{KeyType, Layout, Params};
use bloomlanes_simd::Probe;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::convert::{
    key_type_name, numpy_bools, numpy_filled, numpy_u32s, parse_key_type, stats_dict,
};
use crate::device::{device_array, Backend};
use crate::errors::Error;
use crate::input::{extract, extract_one, Input, Part};
use crate::kinds::{self, check_kind_keys, describe_key, refuse_nulls};
use crate::ops;

/// A retrieval table (see `bloomlanes/_native.pyi`). Immutable once built.
#[pyclass(module = "bloomlanes", name = "Retrieval", frozen)]
pub(crate) struct PyRetrieval {
    pub(crate) table: RetrievalTable,
    /// The table's device copy (GPU backend).
    pub(crate) gpu: crate::gpu_kinds::RetrievalSlot,
}

/// A build error as a `ValueError` that names the keys (not only their indices).
fn build_error(e: RetrievalError, parts: &[Part<'_>], key_type: KeyType, values: &[u32]) -> Error {
    match e {
        RetrievalError::ValueTooWide {
            index,
            value,
            value_bits,
        } => Error::value(format!(
            "value {value} of {} does not fit in value_bits={value_bits}",
            describe_key(parts, key_type, index)
        )),
        RetrievalError::ConflictingValues { index, first } => Error::value(format!(
            "{} repeats index {first} with another value ({} and {}); a key maps to one value \
             (keys are told apart by their 64-bit hash)",
            describe_key(parts, key_type, index),
            values[first],
            values[index]
        )),
        e => Error::value(e.to_string()),
    }
}

impl PyRetrieval {
    /// Each key's value and whether it passed the check bits (0 and false for nulls and keys
    /// the check bits call absent).
    fn get_into(
        &self,
        parts: &[Part<'_>],
        key_type: KeyType,
        values: &mut [u32],
        found: &mut [u8],
    ) -> Result<(), Error> {
        let t = &self.table;
        check_kind_keys(t.params(), key_type, "Retrieval")?;
        let probe = Probe::active();
        for (start, p) in ops::part_starts(parts) {
            let n = p.values.len();
            let (values, found) = (&mut values[start..start + n], &mut found[start..start + n]);
            let keys = ops::backend_keys(p, t.params().seed)?;
            let mut bits = vec![0u64; n.div_ceil(64)];
            ops::in_pool(|| probe.par_get_retrieval(t, keys.keys(), values, &mut bits));
            for (i, (f, v)) in found.iter_mut().zip(values.iter_mut()).enumerate() {
                let valid = p.nulls.is_none_or(|nulls| nulls.is_valid(i));
                *f = u8::from(valid && bits[i / 64] >> (i % 64) & 1 == 1);
                if *f == 0 {
                    *v = 0;
                }
            }
        }
        Ok(())
    }

    fn extract<'py>(&self, keys: &Bound<'py, PyAny>) -> Result<Input<'py>, Error> {
        extract(keys, self.table.params().key_type)
    }

    fn wrap(table: RetrievalTable) -> PyRetrieval {
        PyRetrieval {
            table,
            gpu: Default::default(),
        }
    }
}

#[pymethods]
impl PyRetrieval {
    /// Builds the table mapping `keys[i]` to `values[i]` (see the stub).
    #[staticmethod]
    #[pyo3(signature = (keys, values, *, value_bits=None, check_bits=8, arity=None, seed=0, key_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn build(
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        value_bits: Option<u8>,
        check_bits: u8,
        arity: Option<u8>,
        seed: u64,
        key_type: Option<&str>,
    ) -> PyResult<PyRetrieval> {
        let kt = parse_key_type(key_type)?;
        let input = extract(keys, kt.unwrap_or(KeyType::Any))?;
        let values = numpy_u32s(values, "values")?;
        if values.len() != input.len() {
            return Err(
                Error::value(format!("{} keys but {} values", input.len(), values.len())).into(),
            );
        }
        let key_type = match kt {
            Some(kt) => {
                let wanted = Params::new(Layout::L8x64, 1).with_key_type(kt);
                check_kind_keys(&wanted, input.key_type, "Retrieval")?;
                kt
            }
            None => {
                kinds::refuse_float_keys(input.key_type, "Retrieval")?;
                input.key_type
            }
        };
        let parts = input.parts()?;
        refuse_nulls(&parts, "Retrieval.build")?;
        // The narrowest width that holds the largest value (at least 1 bit).
        let value_bits = value_bits.unwrap_or_else(|| {
            let top = values.iter().copied().max().unwrap_or(0);
            (32 - top.leading_zeros()).max(1) as u8
        });
        let mut spec = RetrievalSpec::new(value_bits, check_bits);
        if let Some(a) = arity {
            spec = spec.with_arity(a);
        }
        let base = Params::new(Layout::L8x64, 1)
            .with_seed(seed)
            .with_key_type(key_type);
        let table = py.detach(|| -> Result<RetrievalTable, Error> {
            let mut hashes = Vec::with_capacity(values.len());
            for p in &parts {
                hashes.extend(ops::hashes(p, seed)?);
            }
            let probe = Probe::active();
            ops::in_pool(|| probe.build_retrieval(base, spec, &hashes, &values))
                .map_err(|e| build_error(e, &parts, key_type, &values))
        })?;
        Ok(PyRetrieval::wrap(table))
    }

    /// Each key's value: `(values, found)`, a numpy uint32 array and a numpy bool array; a key
    /// not found has value 0 (device keys: CuPy arrays).
    #[pyo3(signature = (keys, *, backend=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        backend: Option<&str>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let backend = Backend::parse(backend)?;
        if let Some(dev) = device_array(keys)? {
            return Ok(self.get_device_array(py, &dev, backend)?);
        }
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        let n = input.len();
        let mut found = vec![0u8; n];
        let values = numpy_filled(py, n, "<u4", |values| {
            if backend == Backend::Gpu {
                return self.get_host_on_gpu(py, &parts, input.key_type, values, &mut found);
            }
            py.detach(|| self.get_into(&parts, input.key_type, values, &mut found))
        })?;
        let found = numpy_bools(py, n, |out| {
            out.copy_from_slice(&found);
            Ok(())
        })?;
        Ok((values, found))
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let input = extract_one(key, self.table.params().key_type, "get")?;
        let (mut v, mut f) = ([0u32], [0u8]);
        self.get_into(&input.parts()?, input.key_type, &mut v, &mut f)?;
        Ok(f[0] == 1)
    }

    fn __len__(&self) -> usize {
        self.table.key_count() as usize
    }

    #[getter]
    fn value_bits(&self) -> u8 {
        self.table.shape().value_bits
    }
    #[getter]
    fn check_bits(&self) -> u8 {
        self.table.shape().check_bits
    }
    #[getter]
    fn arity(&self) -> u8 {
        self.table.shape().arity
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.table.params().seed
    }
    #[getter]
    fn key_type(&self) -> Option<String> {
        key_type_name(self.table.params().key_type)
    }
    #[getter]
    fn key_count(&self) -> u64 {
        self.table.key_count()
    }
    #[getter]
    fn nbytes(&self) -> u64 {
        8 * self.table.words().len() as u64
    }

    /// Statistics (the fields of `Filter.stats()`; `expected_fpr` is `2^-check_bits`) with
    /// `value_bits`, `check_bits`, `arity` and `construction_seed`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = stats_dict(py, &self.table.stats(), false)?;
        let shape = self.table.shape();
        d.set_item("value_bits", shape.value_bits)?;
        d.set_item("check_bits", shape.check_bits)?;
        d.set_item("arity", shape.arity)?;
        d.set_item("construction_seed", shape.seed)?;
        Ok(d)
    }

    /// Writes the retrieval file (the CLI's format), under the file's write lock.
    #[pyo3(signature = (path, *, wait=true))]
    fn save(&self, py: Python<'_>, path: PathBuf, wait: bool) -> PyResult<()> {
        kinds::save(py, &self.table, &path, wait)
    }

    /// Reads a retrieval file into memory, under a shared lock; checked whole.
    #[staticmethod]
    #[pyo3(signature = (path, *, wait=true))]
    fn load(py: Python<'_>, path: PathBuf, wait: bool) -> PyResult<PyRetrieval> {
        Ok(PyRetrieval::wrap(kinds::load(py, &path, wait)?))
    }

    /// The whole file as bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        kinds::to_bytes(py, &self.table)
    }

    /// A retrieval table from the bytes of its file.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PyRetrieval> {
        Ok(PyRetrieval::wrap(kinds::from_bytes(py, data)?))
    }

    /// Pickling: the file bytes.
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let ctor = py.get_type::<PyRetrieval>().getattr("from_bytes")?;
        Ok((ctor, (self.to_bytes(py),)))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyRetrieval>()
            .is_ok_and(|o| self.table == o.get().table)
    }

    fn __repr__(&self) -> String {
        let s = self.table.shape();
        format!(
            "Retrieval(key_count={}, value_bits={}, check_bits={}, arity={}, seed={}, nbytes={})",
            self.table.key_count(),
            s.value_bits,
            s.check_bits,
            s.arity,
            self.table.params().seed,
            self.nbytes()
        )
    }
}
