//! `Filter.contains` of a list or tuple of text keys in one pass per piece, the lookup's side of
//! `list_insert.rs`: the numpy array of answers is made first, then each thread of the call
//! walks a piece of the sequence (`direct.rs`), hashes it into a buffer that stays in L1 and
//! looks those hashes up at once, writing the piece's answers; the items the walk leaves are
//! read through the C API afterwards and looked up one by one. No hash buffer of the whole list
//! is made (at 10^6 keys its 8 MB cost more in page faults than the lookups themselves when no
//! freed buffer of that size was at hand). The filter is read-locked for the walk, with the
//! GIL held, only if no writer holds or awaits the lock (else the general path, which waits
//! without the GIL); the answers are those of the general path.

use bloomlanes_core::{Keys, Params};
use bloomlanes_simd::Probe;
use pyo3::prelude::*;

use super::direct::{on_threads, TextSeq};
use super::items::text_key_type;
use super::list_insert::{KEYS_PER_THREAD, PIECE};
use crate::convert::numpy_bools;
use crate::device::Backend;
use crate::errors::Error;
use crate::filter::{check_keys, PyFilter};
use crate::ops::Threads;

impl PyFilter {
    /// Looks `keys` up as described in the module documentation if they are a list or tuple of
    /// text that the walk reads, for bool answers on the CPU (not `bitmap`, not the GPU);
    /// `None` (nothing done, the caller takes the general path) otherwise.
    pub(crate) fn contains_list<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        bitmap: bool,
        backend: Backend,
        threads: &Threads,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if bitmap || backend == Backend::Gpu {
            return Ok(None);
        }
        let hint = self.read().params().key_type;
        let Some(n) = TextSeq::of_object(py, keys, hint)?.map(|s| s.walk.n) else {
            return Ok(None);
        };
        // Made before the walk: making it may run Python code, which must not run during it.
        let mut busy = false;
        let answers = numpy_bools(py, n, |out| {
            let seq = TextSeq::of_object(py, keys, hint)?
                .filter(|s| s.walk.n == n)
                .ok_or_else(|| Error::type_("the list changed while its keys were read"))?;
            // Never wait for the lock: this thread holds the GIL, which a writer holding or
            // awaiting it may be waiting for (`save` takes the GIL to check for Ctrl-C while it
            // holds the read lock and waits for a file lock).
            let Some(g) = self.try_read() else {
                busy = true;
                return Ok(());
            };
            let (params, walk, probe) = (g.params(), seq.walk, Probe::active());
            let used = threads.count().clamp(1, n.div_ceil(KEYS_PER_THREAD));
            let pieces = out.chunks_mut(PIECE).enumerate();
            let init = || (vec![0u64; PIECE], Vec::new());
            let view = g.view();
            let workers = on_threads(used, pieces, init, |(hashes, left), (t, out)| {
                let hashes = &mut hashes[..out.len()];
                // SAFETY: this thread holds the GIL and runs no Python code until `on_threads`
                // returns (the walk's contract); `t * PIECE + out.len() <= n`.
                left.extend(unsafe { walk.hash_run(t * PIECE, params.seed, hashes) });
                // (The answers of the items left are written below.)
                probe.contains(view, Keys::Hashes(hashes), out);
            });
            drop(g);
            // The C API's errors may run Python code: not under the lock.
            let left = workers.into_iter().flat_map(|(_, left)| left).collect();
            let mut others = Vec::new();
            seq.hash_others(py, left, params.seed, |i, h| others.push((i, h)))?;
            let Some(g) = self.try_read().filter(|g| same_shape(&g.params(), &params)) else {
                busy = true;
                return Ok(());
            };
            for (i, h) in others {
                out[i] = u8::from(g.view().contains_hash(h));
            }
            check_keys(&g.params(), text_key_type(hint))?;
            // Answers from a mapped file are returned only if it is still whole.
            g.check()
        })?;
        if busy {
            return Ok(None);
        }
        Ok(Some(answers))
    }
}

/// Whether filters of `a` and `b` answer a hash alike (same layout, blocks and seed).
pub(super) fn same_shape(a: &Params, b: &Params) -> bool {
    (a.layout, a.blocks, a.seed) == (b.layout, b.blocks, b.seed)
}
