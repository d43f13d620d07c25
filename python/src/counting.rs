//! `bloomlanes.CountingFilter`: a filter whose keys can be deleted and counted (core's
//! [`CountingFilter`], counting or stable; the SIMD backend's counter inserts, deletes and
//! minimum reads on every core).
//!
//! Deletes follow `bloomlanes delete`: a key with a counter at zero is not in the filter; it is
//! refused and changes nothing, and the others are deleted (a `UserWarning` names the refused
//! ones), or with `strict=True` nothing is deleted and a `ValueError` names them (the CLI's
//! `--strict`, which writes nothing). A key never inserted whose counters are all positive (a
//! false positive) cannot be told from a present one: deleting it decrements counters of present
//! keys. Files are the CLI's counting and stable filter files, byte for byte.

use bloomlanes_core::{math, CounterBits, CountingFilter, FilterKind, KeyType, Keys, Params};
use bloomlanes_simd::Probe;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{cell_repr, numpy_filled, parse_key_type, parse_layout, stats_dict};
use crate::errors::Error;
use crate::input::{extract, Input, Part};
use crate::kinds::{
    self, check_kind_keys, describe_key, refuse_float_keys, refuse_nulls, Held, HeldClass,
};
use crate::ops::{self, BackendKeys};

/// Refused keys a message names (as the CLI's `delete`).
const SHOWN: usize = 10;

/// A counting or stable filter (see `bloomlanes/_native.pyi`).
#[pyclass(module = "bloomlanes", name = "CountingFilter", frozen)]
pub(crate) struct PyCountingFilter {
    held: Held<CountingFilter>,
}

/// `counter_bits=` as the core's width.
fn counter_bits_of(bits: u32) -> Result<CounterBits, Error> {
    match bits {
        4 => Ok(CounterBits::Four),
        8 => Ok(CounterBits::Eight),
        b => Err(Error::value(format!("counter_bits={b}: expected 4 or 8"))),
    }
}

/// The kind asked for (`kind=`, `counter_bits=`, `decrements=`), as `build --kind` makes it: a
/// stable filter's decrements default to the fewest that keep its stable rate under `rate`.
fn kind_of(
    kind: &str,
    bits: CounterBits,
    decrements: Option<u32>,
    shape: &Params,
    rate: f64,
) -> Result<FilterKind, Error> {
    match (kind, decrements) {
        ("counting", None) => Ok(FilterKind::Counting { counter_bits: bits }),
        ("counting", Some(_)) => Err(Error::value("decrements applies to kind='stable' only")),
        ("stable", Some(0)) => Err(Error::value(
            "decrements must be at least 1 (a stable filter forgets by them)",
        )),
        ("stable", d) => Ok(FilterKind::Stable {
            counter_bits: bits,
            decrements: d.unwrap_or_else(|| {
                math::stable_decrements_for_rate(shape.layout, shape.blocks, bits.max(), rate)
            }),
        }),
        (k, _) => Err(Error::value(format!(
            "kind={k:?}: expected 'counting' or 'stable'"
        ))),
    }
}

/// Keys a delete refused: how many, and the first [`SHOWN`] named.
struct Refused {
    count: u64,
    shown: Vec<String>,
}

impl PyCountingFilter {
    fn extract<'py>(&self, keys: &Bound<'py, PyAny>) -> Result<Input<'py>, Error> {
        extract(keys, self.read().params().key_type)
    }

    /// Checks the keys' type; a filter made without one takes theirs on its first insert.
    fn check_or_learn(&self, f: &mut CountingFilter, keys: KeyType) -> Result<(), Error> {
        refuse_float_keys(keys, "CountingFilter")?;
        let p = *f.params();
        if keys != KeyType::Any && p.key_type == KeyType::Any && self.held.take_learning() {
            *f = CountingFilter::try_new(p.with_key_type(keys))
                .ok_or_else(|| Error::Memory("the counting filter's arrays".into()))?;
        }
        check_kind_keys(f.params(), keys, "CountingFilter")
    }

    /// Each key's count into `out` (the smallest of its counters; nulls 0).
    fn count_into(
        &self,
        parts: &[Part<'_>],
        key_type: KeyType,
        out: &mut [u8],
    ) -> Result<(), Error> {
        kinds::min_cells_into(&*self.read(), parts, key_type, "CountingFilter", out)
    }

    /// Deletes the keys of `parts` in order; with `strict`, a refused key undoes every delete
    /// of the call (the filter ends as it began).
    fn delete_parts(
        f: &mut CountingFilter,
        parts: &[Part<'_>],
        key_type: KeyType,
        strict: bool,
    ) -> Result<(u64, Refused), Error> {
        let probe = Probe::active();
        let (seed, before) = (f.params().seed, f.key_count());
        let mut done: Vec<(BackendKeys<'_>, Vec<u64>)> = Vec::new();
        let mut refused = Refused {
            count: 0,
            shown: Vec::new(),
        };
        for (start, p) in ops::part_starts(parts) {
            let n = p.values.len();
            let keys = ops::backend_keys(p, seed)?;
            let mut bits = vec![0u64; n.div_ceil(64)];
            let no =
                ops::in_pool(|| probe.par_remove_counting(f.as_view_mut(), keys.keys(), &mut bits))
                    .map_err(|e| Error::value(e.to_string()))?;
            f.set_key_count(f.key_count().map(|k| k.saturating_sub(n as u64 - no)));
            refused.count += no;
            let room = SHOWN.saturating_sub(refused.shown.len());
            refused.shown.extend(
                (0..n)
                    .filter(|&i| bits[i / 64] >> (i % 64) & 1 == 1)
                    .take(room)
                    .map(|i| describe_key(parts, key_type, start + i)),
            );
            done.push((keys, bits));
        }
        let deleted = parts.iter().map(|p| p.values.len() as u64).sum::<u64>() - refused.count;
        if strict && refused.count > 0 {
            // A delete decrements each of the key's counters below the maximum (none is at
            // zero), an insert increments each below the maximum: inserting again the keys
            // deleted restores every counter (one at the maximum was never touched), so the
            // image (counter > 0) too, whatever the order.
            for (keys, bits) in &done {
                let keys = keys.keys();
                let again: Vec<u64> = (0..keys.len())
                    .filter(|&i| bits[i / 64] >> (i % 64) & 1 == 0)
                    .map(|i| keys.hash(i, seed))
                    .collect();
                ops::in_pool(|| probe.par_insert_counting(f.as_view_mut(), Keys::Hashes(&again)));
            }
            f.set_key_count(before);
            return Ok((0, refused));
        }
        Ok((deleted, refused))
    }
}

kinds::held_class! {
PyCountingFilter {
    #[new]
    #[pyo3(signature = (capacity=None, fpr=None, *, bits_per_key=None, blocks=None, kind="counting", counter_bits=4, decrements=None, layout=None, seed=0, key_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        capacity: Option<u64>,
        fpr: Option<f64>,
        bits_per_key: Option<f64>,
        blocks: Option<u32>,
        kind: &str,
        counter_bits: u32,
        decrements: Option<u32>,
        layout: Option<&str>,
        seed: u64,
        key_type: Option<&str>,
    ) -> PyResult<PyCountingFilter> {
        let layout = parse_layout(layout)?;
        let kt = parse_key_type(key_type)?;
        let bits = counter_bits_of(counter_bits)?;
        let shape = crate::convert::shape(capacity, fpr, bits_per_key, blocks, layout, "keys")?;
        // The rate a stable filter's decrements are chosen for, as `build --kind stable`:
        // the one asked for, or the expected rate of the bits per key asked for.
        let rate = match (capacity, fpr, bits_per_key) {
            (Some(n), None, Some(_)) => shape.expected_fpr(n.max(1)),
            (Some(_), r, _) => r.unwrap_or(0.01),
            (None, ..) if kind == "stable" && decrements.is_none() => {
                return Err(Error::value(
                    "a stable filter of given blocks needs decrements= (no rate to choose them by)",
                )
                .into())
            }
            (None, ..) => 0.01,
        };
        let params = shape
            .with_kind(kind_of(kind, bits, decrements, &shape, rate)?)
            .with_seed(seed)
            .with_key_type(kt.unwrap_or(KeyType::Any));
        let f = py
            .detach(|| CountingFilter::try_new(params))
            .ok_or_else(|| {
                Error::Memory(format!(
                    "a counting filter of {} bytes cannot be allocated",
                    params.byte_len() * (1 + u64::from(bits.bits()))
                ))
            })?;
        Ok(PyCountingFilter::wrap(f, kt.is_none()))
    }

    /// `"counting"` or `"stable"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.read().params().kind.name()
    }
    #[getter]
    fn counter_bits(&self) -> u32 {
        self.read().counter_bits().bits()
    }
    /// Cells decremented per insert of a stable filter; None for a counting filter.
    #[getter]
    fn decrements(&self) -> Option<u32> {
        match self.read().params().kind {
            FilterKind::Stable { decrements, .. } => Some(decrements),
            _ => None,
        }
    }
    #[getter]
    fn nbytes(&self) -> u64 {
        let f = self.read();
        4 * (f.image_words().len() + f.counter_words().len()) as u64
    }
    /// Counters stuck at their maximum (never decremented again).
    #[getter]
    fn saturated(&self) -> u64 {
        self.read().saturated()
    }

    /// Keys inserted less keys deleted (0 if unknown).
    fn __len__(&self) -> usize {
        self.read().key_count().unwrap_or(0) as usize
    }

    /// Inserts keys (a key inserted twice counts twice).
    fn insert(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        refuse_nulls(&parts, "CountingFilter.insert")?;
        py.detach(|| -> Result<(), Error> {
            let mut guard = self.write();
            let f: &mut CountingFilter = &mut guard;
            self.check_or_learn(f, input.key_type)?;
            let probe = Probe::active();
            for p in &parts {
                let keys = ops::backend_keys(p, f.params().seed)?;
                ops::in_pool(|| probe.par_insert_counting(f.as_view_mut(), keys.keys()));
                f.set_key_count(
                    f.key_count()
                        .map(|k| k.saturating_add(keys.keys().len() as u64)),
                );
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Deletes keys (counting filters); returns how many were deleted (see the module).
    #[pyo3(signature = (keys, *, strict=false))]
    fn delete(&self, py: Python<'_>, keys: &Bound<'_, PyAny>, strict: bool) -> PyResult<u64> {
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        refuse_nulls(&parts, "CountingFilter.delete")?;
        let n = input.len();
        let (deleted, refused) = py.detach(|| {
            let mut f = self.write();
            check_kind_keys(f.params(), input.key_type, "CountingFilter")?;
            if !matches!(f.params().kind, FilterKind::Counting { .. }) {
                return Err(Error::value(format!(
                    "a {} filter has no deletions: only kind='counting' does",
                    f.params().kind.name()
                )));
            }
            Self::delete_parts(&mut f, &parts, input.key_type, strict)
        })?;
        if refused.count > 0 {
            let what = format!(
                "{} of {n} keys are not in the filter (a counter is zero), first: {}",
                refused.count,
                refused.shown.join(", ")
            );
            if strict {
                return Err(
                    Error::value(format!("{what}; nothing was deleted (strict=True)")).into(),
                );
            }
            crate::files::warn(py, &[format!("{what}; they were left as they are")])?;
        }
        Ok(deleted)
    }

    /// Each key's count: the smallest of its counters, a numpy uint8 array (0: absent). An
    /// upper bound on its inserts less its deletes while no counter saturated.
    fn count<'py>(&self, py: Python<'py>, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let input = self.extract(keys)?;
        let parts = input.parts()?;
        numpy_filled(py, input.len(), "u1", |out| {
            py.detach(|| self.count_into(&parts, input.key_type, out))
        })
    }

    /// Statistics of the projection (the fields of `Filter.stats()`), with `kind`,
    /// `counter_bits`, `saturated` and, for a stable filter, `decrements` and `stable_fpr`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, stable_fpr) = py.detach(|| {
            let f = self.read();
            (f.stats(), f.stable_fpr())
        });
        let d = stats_dict(py, &s, false)?;
        d.set_item("kind", self.kind())?;
        d.set_item("counter_bits", self.counter_bits())?;
        d.set_item("saturated", s.saturated)?;
        if let Some(r) = stable_fpr {
            d.set_item("decrements", self.decrements())?;
            d.set_item("stable_fpr", r)?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let f = self.read();
        let p = f.params();
        cell_repr(
            "CountingFilter",
            &format!("kind='{}'", p.kind.name()),
            p,
            ("counter_bits", f.counter_bits().bits()),
            f.key_count(),
        )
    }
}
}

impl kinds::HeldClass for PyCountingFilter {
    type Value = CountingFilter;
    const NAME: &'static str = "CountingFilter";
    fn held(&self) -> &Held<CountingFilter> {
        &self.held
    }
    fn from_held(held: Held<CountingFilter>) -> PyCountingFilter {
        PyCountingFilter { held }
    }
}
