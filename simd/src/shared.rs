//! [`SharedFilter`]: inserts from many threads at once, by atomic OR.

use core::fmt;
use core::sync::atomic::AtomicU32;

use bloomlanes_core::{FilterMut, Keys, Params};

use crate::Probe;

/// Views exclusively borrowed words as atomics, for concurrent OR from many threads.
pub(crate) fn as_atomic(words: &mut [u32]) -> &[AtomicU32] {
    // `AtomicU32` is documented to have "the same size and bit validity as the underlying
    // integer type, `u32`", but its alignment "is always equal to its size, even on targets where
    // `u32` has a lesser alignment" (std::sync::atomic::AtomicU32). So equal alignment is not a
    // guarantee of the language (std's own `AtomicU32::from_mut_slice` exists only on targets
    // where it holds): it is checked here, at compile time, for the target at hand.
    const {
        assert!(core::mem::size_of::<AtomicU32>() == core::mem::size_of::<u32>());
        assert!(core::mem::align_of::<AtomicU32>() == core::mem::align_of::<u32>());
    };
    let len = words.len();
    let ptr = words.as_mut_ptr().cast::<AtomicU32>();
    // SAFETY: `ptr` comes from a live `&mut [u32]` of `len` elements, so it is non-null and
    // points to `len` initialised `u32`s; `AtomicU32` has the size and bit validity of `u32`
    // (std docs) and, asserted above, its alignment too, so the same memory is `len` valid,
    // aligned `AtomicU32`s. The returned borrow inherits the exclusive borrow of `words` (same
    // lifetime), so no one reads or writes the words non-atomically while it lives; all access
    // through it is atomic.
    unsafe { core::slice::from_raw_parts(ptr, len) }
}

/// A filter that many threads insert into at once (it is `Sync`): every word is updated with an
/// atomic OR, skipped when the bits are already set, so no bit is lost to a concurrent writer.
///
/// For one batch, [`Probe::par_insert`] (which partitions the blocks instead) is much faster;
/// this is for inserts that arrive from independent threads.
///
/// ```
/// use bloomlanes_core::{Filter, Keys, Layout, Params};
/// use bloomlanes_simd::{Probe, SharedFilter};
///
/// let mut filter = Filter::new(Params::new(Layout::L8x32, 64));
/// let mut view = filter.as_view_mut();
/// let shared = SharedFilter::new(Probe::active(), &mut view);
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         let shared = &shared;
///         s.spawn(move || {
///             let keys: Vec<u64> = (t * 100..t * 100 + 100).collect();
///             shared.insert(Keys::U64(&keys));
///         });
///     }
/// });
/// assert!((0..400u64).all(|k| filter.contains(&k)));
/// ```
pub struct SharedFilter<'a> {
    probe: Probe,
    params: Params,
    words: &'a [AtomicU32],
}

impl fmt::Debug for SharedFilter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFilter")
            .field("path", &self.probe.path)
            .field("params", &self.params)
            .finish()
    }
}

impl<'a> SharedFilter<'a> {
    /// Shares the words of `filter` (exclusively borrowed for `'a`) for concurrent inserts with
    /// `probe`'s kernels.
    pub fn new(probe: Probe, filter: &'a mut FilterMut<'_, u32>) -> SharedFilter<'a> {
        let params = *filter.params();
        SharedFilter {
            probe,
            params,
            words: as_atomic(filter.words_mut()),
        }
    }

    /// The filter's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Inserts every key, concurrently with any other thread's `insert` on the same filter.
    pub fn insert(&self, keys: Keys<'_>) {
        // SAFETY: `self.probe.fns` belongs to an available path (only `Probe::new` builds a
        // Probe); `words` is the whole filter (`params.blocks` whole blocks, taken from a
        // FilterMut), accessed only atomically while shared.
        unsafe { (self.probe.fns.insert_atomic)(self.params, self.words, keys) }
    }
}
