//! Backends: the engines that insert keys into a filter and probe it. The scalar path of
//! `bloomlanes-core` and the SIMD paths of `bloomlanes-simd` are always present; the CUDA backend
//! joins with the `gpu` feature when a GPU is there. Every backend produces bit-identical filters
//! and answers.
//!
//! A new backend is one file here implementing [`Backend`] (and its [`Querier`]), listed in
//! [`select`] and [`available`] (behind its feature when it has heavy dependencies).

use std::fmt;
use std::str::FromStr;

use bloomlanes_core::{Filter, FilterRef, Keys};

use crate::error::{Error, Result};

#[cfg(feature = "gpu")]
mod gpu;
mod scalar;
mod simd;

#[cfg(feature = "gpu")]
pub use gpu::Gpu;
pub use scalar::Scalar;
pub use simd::Simd;

/// Which backend the user asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The fastest present: the GPU for large batches when one exists, else SIMD, else scalar.
    #[default]
    Auto,
    /// The portable scalar reference path.
    Scalar,
    /// The best SIMD path of this CPU.
    Simd,
    /// The CUDA GPU (feature `gpu`).
    Gpu,
}

impl BackendChoice {
    /// Every choice, in `--backend` order.
    pub const ALL: [BackendChoice; 4] = [
        BackendChoice::Auto,
        BackendChoice::Scalar,
        BackendChoice::Simd,
        BackendChoice::Gpu,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Scalar => "scalar",
            BackendChoice::Simd => "simd",
            BackendChoice::Gpu => "gpu",
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        BackendChoice::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                Error::usage(format!(
                    "unknown backend {s:?} (expected auto, scalar, simd or gpu)"
                ))
            })
    }
}

/// A probe session over one filter (a GPU keeps the filter uploaded between batches).
pub trait Querier {
    /// Looks every key up: sets bit `i % 64` of `out[i / 64]` if key `i` may be present and
    /// clears it otherwise; bits past the last key are cleared. `out` holds exactly
    /// `keys.len().div_ceil(64)` words (else [`Error::OutputLength`]): the words of a
    /// [`Bitmap`](bloomlanes_core::Bitmap).
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u64]) -> Result<()>;
}

/// An engine that inserts and probes keys.
pub trait Backend {
    /// A short name for reports, e.g. `scalar`, `simd-avx2`, `gpu (NVIDIA H100)`.
    fn name(&self) -> String;

    /// Inserts `keys` into `filter` (hashed with the filter's seed) and adds their number to the
    /// filter's key count.
    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()>;

    /// A probe session over the filter `view` (its keys are hashed with the view's seed).
    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>>;

    /// Keys per call that suits this backend (the caller splits larger batches to report
    /// progress).
    fn batch_size(&self) -> usize {
        1 << 20
    }

    /// The SIMD engine behind this backend and whether it runs on every core, for the bulk
    /// operations of the other filter kinds ([`crate::kinds::ops`]); `None` (the default): the
    /// kinds take the core's per-key path with this backend.
    fn simd_probe(&self) -> Option<(bloomlanes_simd::Probe, bool)> {
        None
    }

    /// Whether this is the GPU backend, which `verify` also checks on the spatial and retrieval
    /// kinds through the GPU crate's own types.
    fn is_gpu(&self) -> bool {
        false
    }
}

/// Checks the answer buffer of [`Querier::contains`].
pub(crate) fn check_out(keys: &Keys<'_>, out: &[u64]) -> Result<()> {
    let needed = keys.len().div_ceil(64);
    if out.len() != needed {
        return Err(Error::OutputLength {
            needed,
            found: out.len(),
        });
    }
    Ok(())
}

/// Smallest batch for which `auto` moves work to a GPU (below it, set-up costs dominate).
pub const GPU_AUTO_MIN_KEYS: usize = 1 << 20;

/// Why no GPU can be used here, or `None` when one can.
#[cfg(feature = "gpu")]
pub fn gpu_unavailable() -> Option<String> {
    Gpu::open().err().map(|e| e.to_string())
}

/// Why no GPU can be used here: this build has no GPU backend.
#[cfg(not(feature = "gpu"))]
pub fn gpu_unavailable() -> Option<String> {
    Some("this build has no GPU backend (bloomlanes-host without its `gpu` feature)".into())
}

/// The GPU for `--backend gpu`, or why not.
#[cfg(feature = "gpu")]
fn gpu_backend() -> Result<Box<dyn Backend>> {
    match Gpu::open() {
        Ok(g) => Ok(Box::new(g)),
        Err(source) => Err(Error::NoGpu { source }),
    }
}

#[cfg(not(feature = "gpu"))]
fn gpu_backend() -> Result<Box<dyn Backend>> {
    Err(Error::Unsupported {
        what: "--backend gpu",
        feature: "gpu",
    })
}

/// The backend for `choice`, for a job of about `keys` keys.
pub fn select(choice: BackendChoice, keys: usize) -> Result<Box<dyn Backend>> {
    match choice {
        BackendChoice::Scalar => Ok(Box::new(Scalar)),
        BackendChoice::Simd => Ok(Box::new(Simd::active())),
        BackendChoice::Gpu => gpu_backend(),
        BackendChoice::Auto => {
            #[cfg(feature = "gpu")]
            if keys >= GPU_AUTO_MIN_KEYS {
                if let Ok(g) = Gpu::open() {
                    return Ok(Box::new(g));
                }
            }
            let _ = keys;
            Ok(Box::new(Simd::active()))
        }
    }
}

/// Every backend present on this machine, scalar first: each SIMD path the CPU supports (one
/// core), the best SIMD path on every core, then the GPU when there is one. Used by `verify`
/// and `bench`.
pub fn available() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(Scalar)];
    v.extend(
        Simd::single_core_paths()
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn Backend>),
    );
    v.push(Box::new(Simd::active()));
    #[cfg(feature = "gpu")]
    if let Ok(g) = Gpu::open() {
        v.push(Box::new(g));
    }
    v
}

/// Backends that are absent here, with the reason (for reports).
pub fn absent() -> Vec<(String, String)> {
    gpu_unavailable()
        .map(|why| ("gpu".to_string(), why))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use bloomlanes_core::{Bitmap, Layout, Params};

    use super::*;

    #[test]
    fn every_backend_gives_the_scalar_bits_and_answers() {
        let keys: Vec<u64> = (0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        let probes: Vec<u64> = (0..3001u64).collect();
        let empty = Filter::new(Params::new(Layout::L16x32, 40).with_seed(7));
        let mut reference = empty.clone();
        for k in &keys {
            reference.insert(k);
        }
        let expected: Vec<bool> = probes.iter().map(|k| reference.contains(k)).collect();
        for engine in available() {
            let mut f = empty.clone();
            engine.insert(&mut f, Keys::U64(&keys)).unwrap();
            assert_eq!(f, reference, "{}: bits and key count", engine.name());
            let mut answers = Bitmap::new(probes.len());
            let mut q = engine.querier(f.as_view()).unwrap();
            q.contains(Keys::U64(&probes), answers.words_mut()).unwrap();
            let got: Vec<bool> = (0..probes.len()).map(|i| answers.get(i)).collect();
            assert_eq!(got, expected, "{}: answers", engine.name());
            let mut short = vec![0u64; 3];
            assert!(matches!(
                q.contains(Keys::U64(&probes), &mut short),
                Err(Error::OutputLength {
                    needed: 47,
                    found: 3
                })
            ));
        }
    }

    #[test]
    fn backend_names_parse() {
        for c in BackendChoice::ALL {
            assert_eq!(c.name().parse::<BackendChoice>().unwrap(), c);
        }
        assert_eq!("fpga".parse::<BackendChoice>().unwrap_err().exit_code(), 2);
    }
}
