//! The entry points of the kinds' kernels (the cell kernels of counting, stable and spatial
//! filters, and the window kernels) for each vector ISA, each compiled with the ISA's
//! `#[target_feature]` so that the generic kernels inline into it with that ISA's instructions,
//! and their dispatch table [`KindFns`]. The scalar path has no table: it runs the core's
//! reference key by key (see `cells.rs` and `window.rs`).

use bloomlanes_core::Params;

use crate::SimdPath;

/// One vector path's kind kernels.
///
/// Each is `unsafe` because the x86 ones are `#[target_feature]` functions, which may only run
/// on a CPU that has the features (a table reached through [`kind_fns`] guarantees it); the
/// kernels check the shapes of the words they are given.
#[allow(clippy::type_complexity)]
pub(crate) struct KindFns {
    /// `cell_kernel::update`.
    pub(crate) cells:
        unsafe fn(u8, Params, u32, &mut [u32], &mut [u32], &[u64], &[u32], &mut Vec<u32>),
    /// `cell_kernel::stable_insert`.
    pub(crate) stable: unsafe fn(Params, u32, &mut [u32], &mut [u32], &[u64]),
    /// `cell_read::min`.
    pub(crate) min: unsafe fn(Params, &[u32], &[u32], &[u64], &mut [u32]),
    /// `window_kernel::contains`.
    pub(crate) window_contains: unsafe fn(Params, usize, &[u32], &[u64], &mut [u8]),
    /// `window_kernel::set`.
    pub(crate) window_set: unsafe fn(Params, usize, usize, &mut [u32], &[u64]),
    /// `scalable::set_new`.
    pub(crate) scalable_set: unsafe fn(Params, &mut [u32], &[u64], u64, &mut (usize, u64)),
}

/// Defines the kind entry points of one ISA (with `[$attr]`) and their table `FNS`.
macro_rules! kind_entry_points {
    ($isa:ty, $attrs:tt) => {
        use bloomlanes_core::Params;
        crate::dispatch::entries!($isa, $attrs;
            cells = crate::cell_kernel::update(
                op: u8, p: Params, first: u32, image: &mut [u32], cells: &mut [u32],
                hashes: &[u64], values: &[u32], refused: &mut Vec<u32>
            );
            stable = crate::cell_kernel::stable_insert(
                p: Params, decrements: u32, image: &mut [u32], cells: &mut [u32], hashes: &[u64]
            );
            min = crate::cell_read::min(
                p: Params, image: &[u32], cells: &[u32], hashes: &[u64], out: &mut [u32]
            );
            window_contains = crate::window_kernel::contains(
                p: Params, gens: usize, words: &[u32], hashes: &[u64], out: &mut [u8]
            );
            window_set = crate::window_kernel::set(
                p: Params, gens: usize, current: usize, words: &mut [u32], hashes: &[u64]
            );
            scalable_set = crate::scalable::set_new(
                p: Params, words: &mut [u32], hashes: &[u64], room: u64, done: &mut (usize, u64)
            );
        );

        /// The kind kernels of this ISA.
        pub(crate) const FNS: crate::kind_entry::KindFns = crate::kind_entry::KindFns {
            cells,
            stable,
            min,
            window_contains,
            window_set,
            scalable_set,
        };
    };
}

mod portable {
    kind_entry_points!(crate::portable::Portable, []);
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    kind_entry_points!(
        crate::arch::x86_64::sse2::Sse2,
        [target_feature(enable = "sse2")]
    );
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    kind_entry_points!(
        crate::arch::x86_64::avx2::Avx2,
        [target_feature(enable = "avx2")]
    );
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    kind_entry_points!(
        crate::arch::x86_64::avx512::Avx512,
        [target_feature(
            enable = "avx512f,avx512dq,avx512bw,avx512vl"
        )]
    );
}

/// The kind kernels of `path`: `None` for the scalar path (the core's reference) and for paths
/// this CPU cannot run.
pub(crate) fn kind_fns(path: SimdPath) -> Option<&'static KindFns> {
    if !path.is_available() {
        return None;
    }
    match path {
        SimdPath::Scalar => None,
        SimdPath::Portable => Some(&portable::FNS),
        #[cfg(target_arch = "x86_64")]
        SimdPath::Sse2 => Some(&sse2::FNS),
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx2 => Some(&avx2::FNS),
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx512 => Some(&avx512::FNS),
        #[cfg(not(target_arch = "x86_64"))]
        _ => None,
    }
}

/// The hash chunk of the kinds' bulk operations: keys are hashed this many at a time into a
/// buffer that stays in L1, then handed to the kernels.
pub(crate) const CHUNK: usize = 2048;

/// Keys per hashing task of the parallel cell operations.
pub(crate) const PAR_CHUNK: usize = 1 << 16;

/// Hashes `keys` with `probe`'s hasher (integer keys in its vector lanes) into `out`.
pub(crate) fn hash_into(
    probe: &crate::Probe,
    keys: bloomlanes_core::Keys<'_>,
    seed: u64,
    out: &mut [u64],
) {
    // SAFETY: `probe.fns` belongs to an available path (only `Probe::new` builds a Probe);
    // hashing reads only the keys and writes `out`, which is as long as the keys (checked by
    // the hasher).
    unsafe { (probe.fns.hash)(keys, seed, out) }
}
