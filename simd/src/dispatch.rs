//! The paths and their dispatch: [`SimdPath`] names an implementation, [`active_path`] picks
//! one per process, and [`Fns`] is one path's table of entry points.

use core::fmt;
use core::str::FromStr;
use core::sync::atomic::AtomicU32;
use std::sync::OnceLock;

use bloomlanes_core::{Keys, Params};

use crate::{arch, portable, scalar};

/// An implementation of the bulk operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SimdPath {
    /// The core's scalar reference, one key at a time (no batching, no prefetch).
    Scalar,
    /// Vector code on the `wide` crate for the compile-time target ISA (NEON, simd128, SSE2).
    Portable,
    /// x86_64 SSE2 (every x86_64 CPU).
    Sse2,
    /// x86_64 AVX2.
    Avx2,
    /// x86_64 AVX-512F + AVX-512DQ.
    Avx512,
}

impl SimdPath {
    /// Every path, slowest first.
    pub const ALL: [SimdPath; 5] = [
        SimdPath::Scalar,
        SimdPath::Portable,
        SimdPath::Sse2,
        SimdPath::Avx2,
        SimdPath::Avx512,
    ];

    /// Whether this CPU (and this build's target) can run the path.
    pub fn is_available(self) -> bool {
        match self {
            SimdPath::Scalar | SimdPath::Portable => true,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Sse2 => true,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => arch::x86_64::has_avx2(),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => arch::x86_64::has_avx512(),
            #[cfg(not(target_arch = "x86_64"))]
            SimdPath::Sse2 | SimdPath::Avx2 | SimdPath::Avx512 => false,
        }
    }

    /// The name used by `BLOOMLANES_SIMD` and [`FromStr`]: `"scalar"`, `"portable"`, `"sse2"`,
    /// `"avx2"` or `"avx512"`.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Scalar => "scalar",
            SimdPath::Portable => "portable",
            SimdPath::Sse2 => "sse2",
            SimdPath::Avx2 => "avx2",
            SimdPath::Avx512 => "avx512",
        }
    }

    /// The dispatch table, if the path can run here.
    pub(crate) fn fns(self) -> Option<&'static Fns> {
        if !self.is_available() {
            return None;
        }
        match self {
            SimdPath::Scalar => Some(&scalar::FNS),
            SimdPath::Portable => Some(&portable::FNS),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Sse2 => Some(&arch::x86_64::sse2::FNS),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => Some(&arch::x86_64::avx2::FNS),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => Some(&arch::x86_64::avx512::FNS),
            #[cfg(not(target_arch = "x86_64"))]
            _ => None,
        }
    }
}

impl fmt::Display for SimdPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A path name that [`SimdPath::from_str`] does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPath(pub String);

impl fmt::Display for UnknownPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown SIMD path {:?} (expected scalar, portable, sse2, avx2 or avx512)",
            self.0
        )
    }
}

impl std::error::Error for UnknownPath {}

impl FromStr for SimdPath {
    type Err = UnknownPath;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SimdPath::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPath(s.to_string()))
    }
}

/// Every path this CPU can run, slowest first.
pub fn available_paths() -> Vec<SimdPath> {
    SimdPath::ALL
        .into_iter()
        .filter(|p| p.is_available())
        .collect()
}

/// The fastest path this CPU can run.
fn best_path() -> SimdPath {
    *available_paths()
        .last()
        .expect("the scalar path is always available")
}

/// The path used by [`Probe::active`](crate::Probe::active), resolved once per process: `BLOOMLANES_SIMD` if it is set
/// to an available path, else the fastest available one. A bad or unavailable value is reported
/// on stderr once and ignored (never a panic).
pub fn active_path() -> SimdPath {
    static ACTIVE: OnceLock<SimdPath> = OnceLock::new();
    *ACTIVE.get_or_init(|| {
        let best = best_path();
        match std::env::var("BLOOMLANES_SIMD") {
            Err(_) => best,
            Ok(v) if v.trim().is_empty() => best,
            Ok(v) => match v.parse::<SimdPath>() {
                Ok(p) if p.is_available() => p,
                Ok(p) => {
                    eprintln!(
                        "bloomlanes-simd: BLOOMLANES_SIMD={p} is not available on this CPU; using {best}"
                    );
                    best
                }
                Err(e) => {
                    eprintln!("bloomlanes-simd: BLOOMLANES_SIMD: {e}; using {best}");
                    best
                }
            },
        }
    })
}

/// One path's entry points (the dispatch table).
///
/// Each is `unsafe` because the x86 ones are `#[target_feature]` functions, which may only run on
/// a CPU that has the features (a table reached through [`SimdPath::fns`] guarantees it), and
/// because the vector ones index the filter's words without bounds checks: the words passed
/// beside a [`Params`] must hold exactly `params.blocks` blocks of `params.layout` (the
/// [`FilterRef`](bloomlanes_core::FilterRef)/[`FilterMut`](bloomlanes_core::FilterMut) invariant, which every caller here passes on).
pub(crate) struct Fns {
    pub(crate) contains_bytes: unsafe fn(Params, &[u32], Keys<'_>, &mut [u8]),
    pub(crate) contains_bitmap: unsafe fn(Params, &[u32], Keys<'_>, &mut [u64]),
    pub(crate) insert: unsafe fn(Params, &mut [u32], Keys<'_>),
    pub(crate) insert_atomic: unsafe fn(Params, &[AtomicU32], Keys<'_>),
    pub(crate) hash: unsafe fn(Keys<'_>, u64, &mut [u64]),
    pub(crate) insert_hashes: unsafe fn(Params, u32, &mut [u32], &[u64]),
}

/// The dispatch table of the entry points in scope (`contains_bytes`, `contains_bitmap`,
/// `insert`, `insert_atomic`, `hash`, `insert_hashes`).
macro_rules! fns {
    () => {
        crate::dispatch::Fns {
            contains_bytes,
            contains_bitmap,
            insert,
            insert_atomic,
            hash,
            insert_hashes,
        }
    };
}
pub(crate) use fns;

/// One entry point: the generic kernel `$kernel` for `$isa`, with the attributes in `[...]`
/// (the ISA's `#[target_feature]`, or none).
macro_rules! entry {
    ([$($attr:meta)?] $isa:ty, $name:ident = $($kernel:ident)::+ ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("`", stringify!($($kernel)::+), "` for this module's ISA.")]
        ///
        /// # Safety
        /// As the kernel's, and the CPU supports this module's instruction set.
        $(#[$attr])?
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $name($($arg: $ty),*) {
            // SAFETY: the kernel's conditions and the instruction set are the caller's.
            unsafe { $($kernel)::+::<$isa>($($arg),*) }
        }
    };
}
pub(crate) use entry;

/// The entry points `$name = kernel(args)` of one ISA (see [`entry!`]).
macro_rules! entries {
    ($isa:ty, $attrs:tt; $($name:ident = $($kernel:ident)::+ ($($arg:ident: $ty:ty),*);)*) => {
        $(crate::dispatch::entry!($attrs $isa, $name = $($kernel)::+ ($($arg: $ty),*));)*
    };
}
pub(crate) use entries;
