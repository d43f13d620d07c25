//! Backends: the engines that insert keys into a filter and probe it. The scalar path of
//! `bloomlanes-core` is always present; the SIMD and GPU backends join when they are built and
//! their hardware is there. Every backend produces bit-identical filters and answers.

use std::fmt;
use std::str::FromStr;

use std::sync::OnceLock;

use bloomlanes_core::{Filter, FilterRef, Keys};
use bloomlanes_gpu::{GpuError, GpuFilter};
use bloomlanes_simd::{Probe, SimdPath};

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

    /// A probe session over the filter `view` (its keys are hashed with the view's seed).
    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>>;

    /// Keys per call that suits this backend (the caller splits larger batches to show progress).
    fn batch_size(&self) -> usize {
        1 << 20
    }
}

/// The scalar reference path of `bloomlanes-core`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar;

struct ScalarQuerier<'a> {
    view: FilterRef<'a, u32>,
}

impl Querier for ScalarQuerier<'_> {
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u8]) -> Result<()> {
        check_out(&keys, out)?;
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from(
                self.view
                    .contains_hash(keys.hash(i, self.view.params().seed)),
            );
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
        filter.add_key_count(keys.len() as u64);
        Ok(())
    }

    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>> {
        Ok(Box::new(ScalarQuerier { view }))
    }
}

/// A SIMD path of `bloomlanes-simd`, on one core or on every core. The all-core insert splits the
/// filter into disjoint block ranges (no atomics) and falls back to one core for small filters
/// and batches, where splitting does not pay.
#[derive(Clone, Copy, Debug)]
pub struct Simd {
    probe: Probe,
    parallel: bool,
}

impl Simd {
    /// The best path of this CPU (or `BLOOMLANES_SIMD`), on every core.
    pub fn active() -> Simd {
        Simd {
            probe: Probe::active(),
            parallel: true,
        }
    }

    /// A given path, if this CPU has it; `parallel` spreads inserts and probes over every core.
    pub fn new(path: SimdPath, parallel: bool) -> Option<Simd> {
        Probe::new(path).map(|probe| Simd { probe, parallel })
    }
}

struct SimdQuerier<'a> {
    simd: Simd,
    view: FilterRef<'a, u32>,
}

impl Querier for SimdQuerier<'_> {
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u8]) -> Result<()> {
        check_out(&keys, out)?;
        if self.simd.parallel {
            self.simd.probe.par_contains(self.view, keys, out);
        } else {
            self.simd.probe.contains(self.view, keys, out);
        }
        Ok(())
    }
}

impl Backend for Simd {
    fn name(&self) -> String {
        let path = self.probe.path().name();
        if self.parallel {
            format!("simd-{path} (all cores)")
        } else {
            format!("simd-{path}")
        }
    }

    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()> {
        if self.parallel {
            self.probe.par_insert(filter.as_view_mut(), keys);
        } else {
            self.probe.insert(filter.as_view_mut(), keys);
        }
        filter.add_key_count(keys.len() as u64);
        Ok(())
    }

    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>> {
        Ok(Box::new(SimdQuerier { simd: *self, view }))
    }
}

/// The CUDA backend of `bloomlanes-gpu` (device 0).
#[derive(Clone, Debug)]
pub struct Gpu {
    device: String,
}

fn gpu_err(e: GpuError) -> Error {
    Error::Backend(format!("GPU: {e}"))
}

struct GpuQuerier {
    filter: GpuFilter,
}

impl Querier for GpuQuerier {
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u8]) -> Result<()> {
        check_out(&keys, out)?;
        self.filter.contains(keys, out).map_err(gpu_err)
    }
}

impl Gpu {
    /// The GPU, if one is usable here (else why not).
    pub fn open() -> std::result::Result<Gpu, String> {
        static PROBE: OnceLock<std::result::Result<String, String>> = OnceLock::new();
        PROBE
            .get_or_init(|| match bloomlanes_gpu::probe() {
                Ok(info) => Ok(info.name),
                Err(e) => Err(e.to_string()),
            })
            .clone()
            .map(|device| Gpu { device })
    }
}

impl Backend for Gpu {
    fn name(&self) -> String {
        format!("gpu ({})", self.device)
    }

    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()> {
        let mut g = GpuFilter::upload(filter).map_err(gpu_err)?;
        g.insert(keys).map_err(gpu_err)?;
        *filter = g.download().map_err(gpu_err)?;
        Ok(())
    }

    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>> {
        let filter = GpuFilter::upload_view(view).map_err(gpu_err)?;
        Ok(Box::new(GpuQuerier { filter }))
    }

    fn batch_size(&self) -> usize {
        usize::MAX
    }
}

/// Why no GPU can be used here, or `None` when one can.
pub fn gpu_unavailable() -> Option<String> {
    Gpu::open().err()
}

/// Smallest batch for which `auto` moves work to a GPU (below it, set-up costs dominate).
pub const GPU_AUTO_MIN_KEYS: usize = 1 << 20;

/// The backend for `choice`, for a job of about `keys` keys.
pub fn select(choice: BackendChoice, keys: usize) -> Result<Box<dyn Backend>> {
    match choice {
        BackendChoice::Scalar => Ok(Box::new(Scalar)),
        BackendChoice::Simd => Ok(Box::new(Simd::active())),
        BackendChoice::Gpu => match Gpu::open() {
            Ok(g) => Ok(Box::new(g)),
            Err(why) => Err(Error::Backend(format!(
                "--backend gpu: no usable GPU on this machine ({why}); use --backend auto, simd or scalar"
            ))),
        },
        BackendChoice::Auto => {
            if keys >= GPU_AUTO_MIN_KEYS {
                if let Ok(g) = Gpu::open() {
                    return Ok(Box::new(g));
                }
            }
            Ok(Box::new(Simd::active()))
        }
    }
}

/// Every backend present on this machine, scalar first: each SIMD path the CPU supports (one
/// core), the best SIMD path on every core, then the GPU when there is one. Used by `verify`
/// and `bench`.
pub fn available() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(Scalar)];
    for path in bloomlanes_simd::available_paths() {
        if path == SimdPath::Scalar {
            continue;
        }
        if let Some(s) = Simd::new(path, false) {
            v.push(Box::new(s));
        }
    }
    v.push(Box::new(Simd::active()));
    if let Ok(g) = Gpu::open() {
        v.push(Box::new(g));
    }
    v
}

/// Backends that are absent here, with the reason (for reports).
pub fn absent() -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(why) = gpu_unavailable() {
        out.push(("gpu".into(), why));
    }
    out
}
