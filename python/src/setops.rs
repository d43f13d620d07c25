//! `|`, `&`, `|=` and `&=` of filters: one compatibility check (core's), the words combined on
//! every core. Two filters' locks are always taken in address order.

use bloomlanes_core::{fold, Filter, FilterRef, KeyType};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::errors::Error;
use crate::filter::PyFilter;
use crate::kinds::lock_pair;
use crate::ops;
use crate::storage::{try_filter, Storage};

impl PyFilter {
    /// `self | other` (`or`) or `self & other` of Python's operators: a new `Filter`, or
    /// `NotImplemented` where `other` is not one (Python then tries `other`'s own operator).
    pub(crate) fn combine_any(&self, other: &Bound<'_, PyAny>, or: bool) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyFilter>() {
            Ok(o) => {
                let o = o.get();
                let f = py.detach(|| self.combine(o, or))?;
                Ok(Py::new(py, f)?.into_any())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    /// A new filter: `self | other` (`or`) or `self & other`.
    pub(crate) fn combine(&self, other: &PyFilter, or: bool) -> Result<PyFilter, Error> {
        let (a, b) = lock_pair(self, other, |a| a.read(), |b| b.read());
        let (pa, pb) = (a.params(), b.params());
        // Block counts may differ by a factor: the larger filter is folded to the smaller's
        // count first, which gives the bytes of a build at that size (bloomlanes_core::fold).
        let blocks = fold::check_mergeable(&pa, &pb)?;
        let fold_to = |v: FilterRef<'_, u32>| {
            (v.blocks() != blocks)
                .then(|| fold::fold_view(v, blocks))
                .transpose()
        };
        let (fa, fb) = (fold_to(a.view())?, fold_to(b.view())?);
        let mut shape = pa.with_key_type(pa.merged_key_type(&pb));
        shape.blocks = blocks;
        let mut out = try_filter(shape)?;
        let va = fa.as_ref().map_or_else(|| a.view(), Filter::as_view);
        let vb = fb.as_ref().map_or_else(|| b.view(), Filter::as_view);
        ops::in_pool(|| {
            out.words_mut()
                .par_chunks_mut(1 << 14)
                .zip(
                    va.words()
                        .par_chunks(1 << 14)
                        .zip(vb.words().par_chunks(1 << 14)),
                )
                .for_each(|(o, (x, y))| {
                    for (o, (x, y)) in o.iter_mut().zip(x.iter().zip(y)) {
                        *o = if or { x | y } else { x & y };
                    }
                })
        });
        // A union records the sum of the counts, as a one-shot build of both inputs does.
        out.set_key_count(if or {
            fold::merged_key_count(a.key_count(), b.key_count())
        } else {
            None
        });
        let learn = self.learning() && other.learning();
        Ok(PyFilter::wrap(Storage::Owned(out), learn))
    }

    /// `self |= other` or `self &= other`.
    pub(crate) fn update(&self, other: &PyFilter, or: bool) -> Result<(), Error> {
        if std::ptr::eq(self, other) {
            return Ok(()); // x | x == x & x == x
        }
        let (mut a, b) = lock_pair(self, other, |a| a.write(), |b| b.read());
        let (pa, pb) = (a.params(), b.params());
        pa.check_compatible(&pb)?;
        if pa.key_type == KeyType::Any && pb.key_type != KeyType::Any {
            self.set_learning(true);
            self.check_or_learn(&mut a, pb.key_type)?;
        }
        let filter = a.owned_mut()?;
        let vb = b.view();
        ops::in_pool(|| {
            filter
                .words_mut()
                .par_chunks_mut(1 << 14)
                .zip(vb.words().par_chunks(1 << 14))
                .for_each(|(x, y)| {
                    for (x, y) in x.iter_mut().zip(y) {
                        if or {
                            *x |= y;
                        } else {
                            *x &= y;
                        }
                    }
                })
        });
        let keys = filter.key_count();
        filter.set_key_count(if or {
            fold::merged_key_count(keys, b.key_count())
        } else {
            None
        });
        Ok(())
    }
}
