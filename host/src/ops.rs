//! The operations the CLI exposes, as a library: building, querying, inspecting and merging.

use std::io::IsTerminal;
use std::time::Instant;

use bloomlanes_core::math::SizingError;
pub use bloomlanes_core::Stats;
use bloomlanes_core::{Filter, FilterRef, HashId, Keys, Layout, Params, Sizing};
use indicatif::{ProgressBar, ProgressStyle};

use crate::backend::{self, Backend, BackendChoice};
use crate::error::{Error, Result};
use crate::input::KeySet;
use crate::store::FilterFile;

/// A progress bar on standard error when it is a terminal and `enabled`; hidden otherwise.
pub fn progress(enabled: bool, len: u64, what: &str) -> ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(
        "{msg:>10} [{bar:40}] {human_pos}/{human_len} keys ({per_sec}, eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

fn sizing_error(e: SizingError) -> Error {
    Error::usage(e.to_string())
}

/// Builds filters: sizing, layout, seed and backend, then the keys.
#[derive(Clone, Debug)]
pub struct FilterBuilder {
    sizing: Sizing,
    capacity: Option<u64>,
    layout: Option<Layout>,
    seed: u64,
    backend: BackendChoice,
    progress: bool,
}

impl Default for FilterBuilder {
    fn default() -> Self {
        FilterBuilder {
            sizing: Sizing::FalsePositiveRate(0.01),
            capacity: None,
            layout: None,
            seed: 0,
            backend: BackendChoice::Auto,
            progress: false,
        }
    }
}

/// A built filter and how it was made.
#[derive(Debug)]
pub struct Built {
    /// The filter.
    pub filter: Filter,
    /// The backend that inserted the keys.
    pub backend: String,
    /// Seconds spent inserting.
    pub seconds: f64,
}

impl FilterBuilder {
    /// A builder with the defaults: 1% false positives, layout chosen for the rate, seed 0,
    /// automatic backend, capacity counted from the keys.
    pub fn new() -> FilterBuilder {
        FilterBuilder::default()
    }
    /// Size for an expected false-positive rate.
    pub fn fpp(mut self, rate: f64) -> Self {
        self.sizing = Sizing::FalsePositiveRate(rate);
        self
    }
    /// Size for a number of bits per key.
    pub fn bits_per_key(mut self, bits: f64) -> Self {
        self.sizing = Sizing::BitsPerKey(bits);
        self
    }
    /// Size for this many keys instead of the number given to [`FilterBuilder::build`].
    pub fn capacity(mut self, keys: Option<u64>) -> Self {
        self.capacity = keys;
        self
    }
    /// The block layout (`None`: the one that meets the rate in the fewest bits).
    pub fn layout(mut self, layout: Option<Layout>) -> Self {
        self.layout = layout;
        self
    }
    /// The hash seed (0, with layout 8x32, gives Parquet-compatible filters).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// The backend that inserts the keys.
    pub fn backend(mut self, backend: BackendChoice) -> Self {
        self.backend = backend;
        self
    }
    /// Whether to show a progress bar (only ever on a terminal).
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// An empty filter sized for `keys` keys (or the capacity).
    pub fn empty(&self, keys: u64) -> Result<Filter> {
        let n = self.capacity.unwrap_or(keys).max(1);
        let params = Params::for_keys(n, self.sizing, self.layout)
            .map_err(sizing_error)?
            .with_seed(self.seed);
        let (layout, blocks) = (params.layout, params.blocks);
        // Refuse a filter that cannot be allocated with an error rather than an abort.
        let bytes = params.byte_len();
        let mut probe: Vec<u8> = Vec::new();
        let fits = usize::try_from(bytes).is_ok_and(|b| probe.try_reserve_exact(b).is_ok());
        drop(probe);
        if !fits {
            return Err(Error::Failed(format!(
                "a filter for {n} keys needs {bytes} bytes ({blocks} blocks of layout {layout}), \
                 more memory than this machine can allocate; lower --capacity or raise --fpp"
            )));
        }
        Ok(Filter::new(params))
    }

    /// Builds a filter holding `keys`.
    pub fn build(&self, keys: &KeySet) -> Result<Built> {
        let mut filter = self.empty(keys.len() as u64)?;
        let engine = backend::select(self.backend, keys.len())?;
        let seconds = insert_with(&*engine, &mut filter, keys.keys(), self.progress)?;
        Ok(Built {
            filter,
            backend: engine.name(),
            seconds,
        })
    }
}

/// Inserts `keys` with `engine` in batches (showing progress); returns the seconds spent.
pub fn insert_with(
    engine: &dyn Backend,
    filter: &mut Filter,
    keys: Keys<'_>,
    show_progress: bool,
) -> Result<f64> {
    let bar = progress(show_progress, keys.len() as u64, "inserting");
    let step = engine.batch_size().max(1);
    let start = Instant::now();
    let mut at = 0;
    while at < keys.len() {
        let end = (at + step).min(keys.len());
        engine.insert(filter, keys.slice(at..end))?;
        bar.set_position(end as u64);
        at = end;
    }
    let secs = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok(secs)
}

/// Probes every key of `keys` against `filter` with `engine`; returns one 0/1 answer per key and
/// the seconds spent.
pub fn contains_with(
    engine: &dyn Backend,
    view: FilterRef<'_, u32>,
    keys: Keys<'_>,
    show_progress: bool,
) -> Result<(Vec<u8>, f64)> {
    let bar = progress(show_progress, keys.len() as u64, "querying");
    let mut out = vec![0u8; keys.len()];
    let start = Instant::now();
    let mut q = engine.querier(view)?;
    let step = engine.batch_size().max(1);
    let mut at = 0;
    while at < keys.len() {
        let end = (at + step).min(keys.len());
        q.contains(keys.slice(at..end), &mut out[at..end])?;
        bar.set_position(end as u64);
        at = end;
    }
    let secs = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok((out, secs))
}

/// The answers of a query.
#[derive(Debug)]
pub struct QueryResult {
    /// One 0/1 answer per key (1: may be present).
    pub answers: Vec<u8>,
    /// Number of keys that may be present.
    pub matches: u64,
    /// The backend that answered.
    pub backend: String,
    /// Seconds spent probing.
    pub seconds: f64,
}

/// Checks that the keys of this host can be probed against a filter with `header`.
pub fn check_hashable(filter: &FilterFile) -> Result<()> {
    if filter.header().params.hash == HashId::Prehashed {
        return Err(Error::input(
            filter.path(),
            None,
            "this filter stores caller-supplied hashes (hash id 0); its keys cannot be hashed here",
        ));
    }
    Ok(())
}

/// Probes `keys` against `filter` with the chosen backend.
pub fn query(
    filter: &FilterFile,
    keys: &KeySet,
    choice: BackendChoice,
    show_progress: bool,
) -> Result<QueryResult> {
    check_hashable(filter)?;
    let engine = backend::select(choice, keys.len())?;
    let (answers, seconds) = contains_with(&*engine, filter.view(), keys.keys(), show_progress)?;
    let matches = answers.iter().map(|&a| u64::from(a)).sum();
    Ok(QueryResult {
        answers,
        matches,
        backend: engine.name(),
        seconds,
    })
}

/// Packs 0/1 answers into a bitmap: bit `j` (least significant first) of byte `i` is the answer
/// for key `8 i + j`.
pub fn pack_bitmap(answers: &[u8]) -> Vec<u8> {
    answers
        .chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |acc, (j, &a)| acc | (u8::from(a != 0) << j))
        })
        .collect()
}

/// Computes the statistics of a filter (the core's formulas, see [`Stats`]).
pub fn stats(filter: &FilterFile) -> Stats {
    let header = filter.header();
    Stats::new(header.params, header.keys, filter.count_ones())
}

/// How `merge` combines filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MergeOp {
    /// OR: the filter of the union of the key sets.
    #[default]
    Union,
    /// AND: answers "maybe" only where every filter does.
    Intersection,
}

/// Merges filters (all must share layout, block count, hash and seed).
pub fn merge(filters: &[FilterFile], op: MergeOp) -> Result<Filter> {
    let (first, rest) = filters
        .split_first()
        .ok_or_else(|| Error::usage("merge needs at least two filters"))?;
    if rest.is_empty() {
        return Err(Error::usage("merge needs at least two filters"));
    }
    let mut acc = first.to_filter();
    for f in rest {
        let other = f.to_filter();
        let r = match op {
            MergeOp::Union => acc.union_with(&other),
            MergeOp::Intersection => acc.intersect_with(&other),
        };
        r.map_err(|e| {
            Error::Failed(format!(
                "cannot merge {} with {}: {e} (filters merge only when layout, block count, hash and seed all match; \
                 build them with the same --layout, --capacity/--fpp or --bits-per-key and --seed)",
                first.path().display(),
                f.path().display()
            ))
        })?;
    }
    Ok(acc)
}
