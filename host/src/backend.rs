//! Backends: the engines that insert keys into a filter and probe it. The scalar path of
//! `bloomlanes-core` is always present; the SIMD and GPU backends join when they are built and
//! their hardware is there. Every backend produces bit-identical filters and answers.

use std::fmt;
use std::str::FromStr;

use bloomlanes_core::{Filter, FilterRef, Keys};

use crate::error::{Error, Result};

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
    /// The CUDA GPU.
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
    /// Writes 1 to `out[i]` if key `i` may be present, else 0. `out.len() == keys.len()`.
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u8]) -> Result<()>;
}

/// An engine that inserts and probes keys.
pub trait Backend {
    /// A short name for reports, e.g. `scalar`, `simd-avx2`, `gpu (NVIDIA H100)`.
    fn name(&self) -> String;

    /// Inserts `keys` into `filter` (hashed with the filter's seed) and adds their number to the
    /// filter's key count.
    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()>;

    /// A probe session over the filter `view` whose keys are hashed with `seed`.
    fn querier<'a>(&'a self, view: FilterRef<'a, u32>, seed: u64) -> Result<Box<dyn Querier + 'a>>;

    /// Keys per call that suits this backend (the caller splits larger batches to show progress).
    fn batch_size(&self) -> usize {
        1 << 20
    }
}

fn add_count(filter: &mut Filter, n: usize) {
    let count = filter.key_count().map(|k| k.saturating_add(n as u64));
    filter.set_key_count(count);
}

/// The scalar reference path of `bloomlanes-core`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar;

struct ScalarQuerier<'a> {
    view: FilterRef<'a, u32>,
    seed: u64,
}

impl Querier for ScalarQuerier<'_> {
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u8]) -> Result<()> {
        check_out(&keys, out)?;
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from(self.view.contains_hash(keys.hash(i, self.seed)));
        }
        Ok(())
    }
}

fn check_out(keys: &Keys<'_>, out: &[u8]) -> Result<()> {
    if keys.len() != out.len() {
        return Err(Error::Failed(format!(
            "internal: {} answers for {} keys",
            out.len(),
            keys.len()
        )));
    }
    Ok(())
}

impl Backend for Scalar {
    fn name(&self) -> String {
        "scalar".into()
    }

    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()> {
        let seed = filter.seed();
        let mut view = filter.as_view_mut();
        for i in 0..keys.len() {
            view.insert_hash(keys.hash(i, seed));
        }
        add_count(filter, keys.len());
        Ok(())
    }

    fn querier<'a>(&'a self, view: FilterRef<'a, u32>, seed: u64) -> Result<Box<dyn Querier + 'a>> {
        Ok(Box::new(ScalarQuerier { view, seed }))
    }
}

/// Whether the SIMD backend is compiled into this build.
pub fn simd_built() -> bool {
    false
}

/// Whether the GPU backend is compiled into this build.
pub fn gpu_built() -> bool {
    false
}

/// Why no GPU can be used here, or `None` when one can.
pub fn gpu_unavailable() -> Option<String> {
    Some("the GPU backend (bloomlanes-gpu) is not built yet in this version".into())
}

/// Smallest batch for which `auto` moves work to a GPU (below it, launch costs dominate).
pub const GPU_AUTO_MIN_KEYS: usize = 1 << 20;

/// The backend for `choice`, for a job of about `keys` keys.
pub fn select(choice: BackendChoice, keys: usize) -> Result<Box<dyn Backend>> {
    match choice {
        BackendChoice::Scalar => Ok(Box::new(Scalar)),
        BackendChoice::Simd => {
            if !simd_built() {
                return Err(Error::Backend(
                    "--backend simd: the SIMD backend (bloomlanes-simd) is not built yet in this version; \
                     use --backend scalar"
                        .into(),
                ));
            }
            Ok(Box::new(Scalar))
        }
        BackendChoice::Gpu => match gpu_unavailable() {
            Some(why) => Err(Error::Backend(format!(
                "--backend gpu: no usable GPU: {why}; use --backend auto, simd or scalar"
            ))),
            None => Ok(Box::new(Scalar)),
        },
        BackendChoice::Auto => {
            if keys >= GPU_AUTO_MIN_KEYS && gpu_unavailable().is_none() {
                return select(BackendChoice::Gpu, keys);
            }
            if simd_built() {
                return select(BackendChoice::Simd, keys);
            }
            Ok(Box::new(Scalar))
        }
    }
}

/// Every backend present on this machine, scalar first: each SIMD path the CPU supports, then
/// the GPU when there is one. Used by `verify` and `bench`.
pub fn available() -> Vec<Box<dyn Backend>> {
    vec![Box::new(Scalar)]
}

/// Backends that were asked about but are absent, with the reason (for reports).
pub fn absent() -> Vec<(String, String)> {
    let mut out = Vec::new();
    if !simd_built() {
        out.push((
            "simd".into(),
            "bloomlanes-simd is not built yet in this version".into(),
        ));
    }
    if let Some(why) = gpu_unavailable() {
        out.push(("gpu".into(), why));
    }
    out
}
