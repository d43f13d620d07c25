//! `bloomlanes.SpatialFilter`: which class a key belongs to (core's [`SpatialFilter`]; the SIMD
//! backend's max-inserts and min-reads of cells on every core).

use bloomlanes_core::{KeyType, SpatialFilter};
use bloomlanes_simd::{Classes, Probe, Schedule};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::convert::{
    cell_repr, numpy_filled, numpy_u32s, parse_key_type, parse_layout, stats_dict,
};
use crate::device::{device_array, Backend};
use crate::errors::Error;
use crate::input::{extract, Input, Part};
use crate::kinds::{self, check_kind_keys, refuse_float_keys, refuse_nulls, Held, HeldClass};
use crate::ops;

/// A spatial Bloom filter (see `bloomlanes/_native.pyi`).
#[pyclass(module = "bloomlanes", name = "SpatialFilter", frozen)]
pub(crate) struct PySpatialFilter {
    pub(crate) held: Held<SpatialFilter>,
    /// The filter's device copy (GPU backend).
    pub(crate) gpu: crate::gpu_kinds::SpatialSlot,
}

/// The narrowest cell width (4, 8 or 16 bits) that holds `classes` classes.
fn cell_bits_for(classes: usize) -> u32 {
    [4, 8, 16]
        .into_iter()
        .find(|&b| classes < (1 << b))
        .unwrap_or(16)
}

impl PySpatialFilter {
    /// Checks the keys' type; a filter made without one and still empty takes theirs.
    pub(crate) fn check_or_learn(&self, f: &mut SpatialFilter, keys: KeyType) -> Result<(), Error> {
        refuse_float_keys(keys, "SpatialFilter")?;
        let p = *f.params();
        if keys != KeyType::Any
            && p.key_type == KeyType::Any
            && f.keys_per_class().iter().all(|&k| k == 0)
            && self.held.take_learning()
        {
            let names = f.class_names().to_vec();
            *f = SpatialFilter::with_stored_names(
                p.with_key_type(keys),
                f.cell_bits().bits(),
                &names,
            )
            .map_err(|e| Error::value(e.to_string()))?;
        }
        check_kind_keys(f.params(), keys, "SpatialFilter")
    }

    /// The class numbers of `classes` for `n` keys: one name or number for all, or one number
    /// per key; every number checked against the filter's classes.
    pub(crate) fn classes_of(
        f: &SpatialFilter,
        classes: &Bound<'_, PyAny>,
        n: usize,
    ) -> PyResult<ClassArg> {
        let top = u32::from(f.classes());
        let range = &|| {
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
        let list = match class_names_of(f, classes, range)? {
            Some(list) => list,
            None => numpy_u32s(classes, "classes")?,
        };
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
        kinds::min_cells_into(&*self.read(), parts, key_type, "SpatialFilter", out)
    }

    /// [`PySpatialFilter::classify`]'s class numbers.
    fn class_numbers<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        backend: Backend,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(dev) = device_array(keys)? {
            return Ok(self.classify_device_array(py, &dev, backend, out)?);
        }
        if out.is_some() {
            return Err(Error::value("out= is for device keys (a device array of classes)").into());
        }
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        numpy_filled(py, input.len(), "<u2", |out| {
            if backend == Backend::Gpu {
                return self.classify_host_on_gpu(py, &parts, input.key_type, out);
            }
            py.detach(|| self.classify_into(&parts, input.key_type, out))
        })
    }

    fn extract<'py>(&self, keys: &Bound<'py, PyAny>) -> Result<Input<'py>, Error> {
        extract(keys, self.read().params().key_type)
    }
}

/// The class numbers of one class name per key (a list of str, a numpy str, bytes or object
/// array, a pyarrow string array, a pandas column): a rule table's class column as it is read,
/// without the caller numbering it. `None` when `classes` holds no text (numbers: the caller's
/// path); a null, an item that is neither text nor a number, or an unknown name is an error
/// naming its index.
fn class_names_of(
    f: &SpatialFilter,
    classes: &Bound<'_, PyAny>,
    range: &dyn Fn() -> String,
) -> PyResult<Option<Vec<u32>>> {
    let text = |item: &Bound<'_, PyAny>| {
        item.is_instance_of::<PyString>() || item.is_instance_of::<PyBytes>()
    };
    let items = match classes.cast::<PyList>() {
        // A list as it is (numpy would copy it into an array of fixed-width text first).
        Ok(list) if list.len() > 0 && text(&list.get_item(0)?) => list.clone(),
        Ok(_) => return Ok(None),
        Err(_) => {
            let np = classes.py().import("numpy")?;
            let arr = np.call_method1("asarray", (classes,))?;
            let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
            if !matches!(kind.as_str(), "U" | "S" | "O") {
                return Ok(None);
            }
            let items = arr.call_method0("ravel")?.call_method0("tolist")?;
            items.cast_into::<PyList>()?
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let bytes_name: String;
        // Text first: a failed number extraction builds an exception, ten times the lookup.
        let name: &str = if let Ok(s) = item.cast::<PyString>() {
            &s.to_cow()?
        } else if let Ok(b) = item.cast::<PyBytes>() {
            bytes_name = String::from_utf8_lossy(b.as_bytes()).into_owned();
            &bytes_name
        } else if let Ok(c) = item.extract::<u32>() {
            // A number in an object array (pandas' nullable integers): checked by the caller.
            out.push(c);
            continue;
        } else {
            // None, or pandas' NaN for a missing value (a float that is not equal to itself).
            let missing = item.is_none() || item.ne(&item).unwrap_or(false);
            let what = if missing {
                "null (every key needs a class)".to_string()
            } else {
                format!(
                    "{} ({}), not a class name",
                    item.repr()?,
                    item.get_type().name()?
                )
            };
            return Err(Error::value(format!("classes[{i}] is {what}")).into());
        };
        match f.class_number(name) {
            Some(c) => out.push(u32::from(c)),
            None => {
                return Err(Error::value(format!(
                    "classes[{i}] = {name:?}: no class is called that: {}",
                    range()
                ))
                .into())
            }
        }
    }
    Ok(Some(out))
}

/// The classes of an insert.
pub(crate) enum ClassArg {
    One(u32),
    Each(Vec<u32>),
}

kinds::held_class! {
PySpatialFilter {
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
        let shape = crate::convert::shape(
            capacity,
            fpr,
            bits_per_key,
            blocks,
            layout,
            "keys in all classes",
        )?;
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
    #[getter]
    fn keys_per_class(&self) -> Vec<u64> {
        self.read().keys_per_class().to_vec()
    }
    #[getter]
    fn nbytes(&self) -> u64 {
        let f = self.read();
        4 * (f.image_words().len() + f.cell_words().len()) as u64
    }

    /// Inserts keys in `classes`: one class name or number for all, or one number per key
    /// (device keys and `backend`: see the stub).
    #[pyo3(signature = (keys, classes, *, backend=None))]
    fn insert(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        classes: &Bound<'_, PyAny>,
        backend: Option<&str>,
    ) -> PyResult<()> {
        let backend = Backend::parse(backend)?;
        if let Some(dev) = device_array(keys)? {
            return self.insert_device_array(py, &dev, classes, backend);
        }
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        let classes = Self::classes_of(&self.read(), classes, input.len())?;
        refuse_nulls(&parts, "SpatialFilter.insert")?;
        if backend == Backend::Gpu {
            return Ok(self.insert_host_on_gpu(py, &parts, input.key_type, &classes)?);
        }
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

    /// Each key's class number: a numpy uint16 array, 0 for an absent key (device keys: a
    /// device array, `out` or a new CuPy one); with `names=True` each key's class name, `None`
    /// for an absent key (a numpy object array).
    #[pyo3(signature = (keys, *, backend=None, out=None, names=false))]
    fn classify<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        backend: Option<&str>,
        out: Option<&Bound<'py, PyAny>>,
        names: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let backend = Backend::parse(backend)?;
        if names {
            if out.is_some() || device_array(keys)?.is_some() {
                return Err(Error::value(
                    "names=True answers host keys in a numpy array: no out=, no device keys \
                     (map a device array's class numbers with class_names)",
                )
                .into());
            }
            let numbers = self.class_numbers(py, keys, backend, None)?;
            let np = py.import("numpy")?;
            let mut table: Vec<Option<String>> = vec![None];
            table.extend(self.read().class_names().iter().cloned().map(Some));
            let table = np.call_method1("array", (table, "object"))?;
            return table.get_item(numbers);
        }
        self.class_numbers(py, keys, backend, out)
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

    fn __repr__(&self) -> String {
        let f = self.read();
        cell_repr(
            "SpatialFilter",
            &format!("classes={:?}", f.class_names()),
            f.params(),
            ("cell_bits", f.cell_bits().bits()),
            f.key_count(),
        )
    }
}
}

impl kinds::HeldClass for PySpatialFilter {
    type Value = SpatialFilter;
    const NAME: &'static str = "SpatialFilter";
    fn held(&self) -> &Held<SpatialFilter> {
        &self.held
    }
    fn from_held(held: Held<SpatialFilter>) -> PySpatialFilter {
        PySpatialFilter {
            held,
            gpu: Default::default(),
        }
    }
}
