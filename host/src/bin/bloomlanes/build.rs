//! `bloomlanes build`: a filter file from keys.

use bloomlanes_host::bloomlanes_core::FilterKind;
use bloomlanes_host::kinds::{self, KindSpec};
use bloomlanes_host::ops::{self, CapacitySource};
use bloomlanes_host::{backend, store, AnyFilter, Error, FilterBuilder, Result, Stage, Stats};
use bloomlanes_input::hll::Hll;
use bloomlanes_input::{read_inputs, InputSummary, KeySet};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::args::{check_fpp, parse_layout, BackendArg, LayoutArg};
use crate::inputs::{describe_inputs, inputs_json, warn_empty, warn_inputs, InputArgs, Spooled};
use crate::kind::{kind_json, KindArg, KindArgs};
use crate::labelled::{self, LabelArgs};
use crate::output::{check_output, emit, say, Warnings};
use crate::progress::{human_rate, Bar};
use crate::Ctx;

/// Arguments of `build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Input files ("-" reads standard input; gzip, zstd and xz are decompressed).
    #[arg(required_unless_present = "class")]
    inputs: Vec<PathBuf>,
    /// The filter file to write ("-": standard output; the report then goes to standard error).
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    input: InputArgs,
    /// Target false-positive rate [default: 0.01].
    #[arg(long, conflicts_with = "bits_per_key")]
    fpp: Option<f64>,
    /// Bits per key instead of a target rate.
    #[arg(long)]
    bits_per_key: Option<f64>,
    /// Size for this many keys [default: the distinct keys counted in a first pass over the
    /// inputs (HyperLogLog, ±0.8%); required when an input is standard input or a pipe].
    #[arg(long)]
    capacity: Option<u64>,
    /// Block layout: auto picks the one that meets --fpp in the fewest bits (8x32 for --bits-per-key).
    #[arg(long, default_value = "auto", value_parser = parse_layout)]
    layout: LayoutArg,
    /// Hash seed (seed 0 with layout 8x32 is the Parquet filter, exportable with `export --parquet`).
    #[arg(long, default_value = "0", value_parser = crate::args::parse_seed)]
    seed: u64,
    /// Which backend inserts the keys.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Round the size up to a power of two (what every Parquet reader accepts; use it for a
    /// filter that will go into a Parquet file with `export --parquet`).
    #[arg(long)]
    pow2: bool,
    #[command(flatten)]
    kind: KindArgs,
    #[command(flatten)]
    labels: LabelArgs,
}

/// The false-positive rate of a built filter's bits from which it is reported as nearly useless.
const USELESS_FPR: f64 = 0.25;

/// How many times the target rate a built filter's bits may reach before it is reported as
/// holding more keys than it was sized for.
const OVER_TARGET: f64 = 2.0;

/// Runs `build`.
pub fn run(ctx: &Ctx, mut a: BuildArgs) -> Result<ExitCode> {
    // The wall clock of the report: from before the first byte is read to the file written.
    let started = Instant::now();
    let labelled = matches!(a.kind.kind, KindArg::Spatial | KindArg::Retrieval);
    let spec = if labelled {
        KindSpec::Static
    } else {
        a.kind.spec()?
    };
    let mut builder = FilterBuilder::new()
        .capacity(a.capacity)
        .layout(a.layout.0)
        .seed(a.seed)
        .pow2(a.pow2)
        .backend(a.backend.into());
    builder = match (a.fpp, a.bits_per_key) {
        (_, Some(b)) => builder.bits_per_key(b),
        (Some(r), None) => {
            check_fpp(r)?;
            builder.fpp(r)
        }
        (None, None) => builder,
    };
    if a.capacity == Some(0) {
        return Err(Error::usage("--capacity must be at least 1"));
    }
    check_output(&a.output)?;
    // Held for the whole build, so that an insert into the same file waits for the new filter
    // instead of being replaced by it.
    let _lock = store::lock::lock_output(&a.output)?;
    if labelled {
        let spatial = a.kind.kind == KindArg::Spatial;
        let opts = a.input.options();
        return labelled::run(
            ctx, &a.labels, spatial, &a.inputs, &opts, builder, &a.output,
        );
    }
    // Sized by a first pass over the inputs: standard input and pipes, which cannot be read
    // twice, are copied to temporary files first (removed when `spooled` drops, also on error).
    let spooled = match a.capacity {
        None => Spooled::unreopenable(&a.inputs, &a.output)?,
        Some(_) => Spooled::unreopenable(&[], &a.output)?,
    };
    if !spooled.paths.is_empty() {
        a.inputs = spooled.paths.clone();
    }
    let built = if spec != KindSpec::Static {
        build_kind_any(ctx, &a, builder.kind(spec), &spooled, started)
    } else {
        build_static(ctx, &a, &builder, &spooled, started)
    };
    built.map_err(|e| spooled.rename_error(e))
}

/// The target rate of the build's sizing (`None` when sized by bits per key).
fn target_rate(a: &BuildArgs) -> Option<f64> {
    match (a.fpp, a.bits_per_key) {
        (_, Some(_)) => None,
        (r, None) => Some(r.unwrap_or(0.01)),
    }
}

/// The warning for a filter whose bits answer "may be present" for absent keys far more often
/// than asked: the rate of its actual bits ([`Stats::expected_fpr`]) at least
/// [`USELESS_FPR`], or over [`OVER_TARGET`] times the target. Its recorded insert count does
/// not enter: repeated keys set no new bits.
fn capacity_warning(a: &BuildArgs, kind: FilterKind, s: &Stats, warnings: &mut Warnings) {
    let fpr = s.expected_fpr;
    let target = target_rate(a);
    if fpr < USELESS_FPR && !target.is_some_and(|t| fpr > OVER_TARGET * t) {
        return;
    }
    let sized = a.capacity.map_or_else(
        || "the keys counted".to_string(),
        |c| format!("a capacity of {c}"),
    );
    let kind = if kind == FilterKind::Static {
        String::new()
    } else {
        format!(" ({kind})")
    };
    warnings.warn(format!(
        "{}{kind} holds {} distinct keys ({} inserts) but was sized for {sized}: the \
         false-positive rate of its bits is {fpr:.3}{}, so absent keys will often be answered \
         \"may be present\"; raise --capacity (or drop it to size for the keys read)",
        a.output.display(),
        s.estimated_keys
            .map_or("more".to_string(), |n| format!("about {n:.0}")),
        s.recorded_keys.map_or("unknown".into(), |k| k.to_string()),
        target.map_or(String::new(), |t| format!(" (target {t})"))
    ));
}

/// The figures of a build's report shared by every kind: inserts, distinct keys (from the
/// bits), rate of the bits, and the wall-clock and insert-pass rates.
fn report_json(
    a: &BuildArgs,
    s: &Stats,
    inputs: &[InputSummary],
    timing: Timing,
    warnings: &Warnings,
) -> serde_json::Value {
    let keys: u64 = inputs.iter().map(|i| i.keys).sum();
    json!({
        "output": a.output.display().to_string(),
        "inputs": inputs_json(inputs),
        "keys": keys,
        "inserts": keys,
        "distinct_keys_estimated": s.estimated_keys,
        "distinct_keys_standard_error": s.estimated_keys_error,
        "layout": s.params.layout.name(),
        "seed": s.params.seed,
        "key_type": s.params.key_type.to_string(),
        "seconds": timing.wall,
        "keys_per_second": keys as f64 / timing.wall.max(1e-9),
        "insert_seconds": timing.insert,
        "insert_keys_per_second": keys as f64 / timing.insert.max(1e-9),
        "expected_fpr": s.expected_fpr,
        "fpr_from_bits": s.fpr_from_bits,
        "warnings": warnings.json(),
    })
}

/// The report's sentence on keys: `60000 keys read (about 20000 distinct, ±95)`.
fn describe_keys(keys: u64, s: &Stats) -> String {
    match (s.estimated_keys, s.estimated_keys_error) {
        (Some(n), Some(e)) => format!("{keys} keys read (about {n:.0} distinct, ±{e:.0})"),
        _ => format!("{keys} keys read"),
    }
}

/// Seconds of a build: wall clock from before the first byte read to the file written, and of
/// the insert pass alone.
#[derive(Clone, Copy, Debug)]
struct Timing {
    wall: f64,
    insert: f64,
}

impl Timing {
    /// The rates for people: `16.7 M keys/s wall, insert pass 31.4 M keys/s`.
    fn describe(&self, keys: u64) -> String {
        format!(
            "{} wall clock, insert pass {}",
            human_rate(keys as f64 / self.wall.max(1e-9), false),
            human_rate(keys as f64 / self.insert.max(1e-9), false)
        )
    }
}

/// `build` of a static filter: streamed, sized by `--capacity` or a first pass.
fn build_static(
    ctx: &Ctx,
    a: &BuildArgs,
    builder: &FilterBuilder,
    spooled: &Spooled,
    started: Instant,
) -> Result<ExitCode> {
    let mut bar = Bar::new(ctx.progress);
    let mut built = ops::build_stream(builder, &a.inputs, &a.input.options(), &mut |p| {
        bar.update(p)
    })?;
    spooled.rename_summaries(&mut built.inputs);
    warn_inputs(&built.inputs);
    store::save_filter(&a.output, &built.filter)?;
    let timing = Timing {
        wall: started.elapsed().as_secs_f64(),
        insert: built.seconds,
    };
    let f = &built.filter;
    let keys: u64 = built.inputs.iter().map(|i| i.keys).sum();
    let st = f.stats();
    let mut warnings = Warnings::default();
    warn_empty(&built.inputs, &mut warnings);
    capacity_warning(a, FilterKind::Static, &st, &mut warnings);
    if ctx.json {
        let mut v = report_json(a, &st, &built.inputs, timing, &warnings);
        v["capacity"] = capacity_json(built.capacity);
        v["blocks"] = json!(f.blocks());
        v["bytes"] = json!(f.byte_len());
        v["backend"] = json!(built.engine);
        emit(&v)?;
    } else {
        say(&format!(
            "built {}: {} ({}) from {}; {}; layout {}, {} blocks, {} bytes, expected false-positive rate {:.3e} (backend {}; {})",
            a.output.display(),
            describe_keys(keys, &st),
            f.params().key_type,
            describe_inputs(&built.inputs),
            built.capacity.describe(),
            f.layout(),
            f.blocks(),
            f.byte_len(),
            st.expected_fpr,
            built.engine,
            timing.describe(keys),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// How the capacity was chosen, as JSON.
fn capacity_json(c: CapacitySource) -> serde_json::Value {
    match c {
        CapacitySource::Given(c) => json!({"capacity": c, "source": "given"}),
        CapacitySource::Counted { estimate, capacity } => json!({
            "capacity": capacity,
            "source": "counted",
            "estimated_distinct_keys": estimate,
            "method": "HyperLogLog (2^14 registers) over a first pass, +2%",
            "relative_standard_error": Hll::STANDARD_ERROR,
        }),
    }
}

/// `build --kind counting|stable|window|scalable`: streamed from files (standard input
/// already copied to one when no capacity is given), else read whole.
fn build_kind_any(
    ctx: &Ctx,
    a: &BuildArgs,
    builder: FilterBuilder,
    spooled: &Spooled,
    started: Instant,
) -> Result<ExitCode> {
    // Files are read twice (counted, then inserted) and never held; standard input and
    // pipes, which cannot be read twice, are read whole (only with --capacity: without it they
    // were copied to files). The first pass counts the keys (the sizing of [`build_kind`]) and
    // learns their type; the second streams them into the filter in input order, in batches.
    if !a.inputs.iter().all(|p| ops::stream::reopenable(p)) {
        let (keys, summaries) = read_inputs(&a.inputs, &a.input.options())?;
        return build_kind(ctx, a, builder, &keys, &summaries, started);
    }
    let opts = a.input.options();
    let mut bar = Bar::new(ctx.progress);
    let (estimate, counted) = ops::count_distinct(&a.inputs, &opts, &mut |p| bar.update(p))?;
    // Sized as a static build of the same inputs is ([`ops::build_stream`]: the distinct keys
    // estimated, +2%), not by the inserts read, so that both get the same block count.
    let capacity = match builder.capacity_given() {
        Some(c) => CapacitySource::Given(c),
        None => CapacitySource::Counted {
            estimate,
            capacity: ops::stream::counted_capacity(estimate),
        },
    };
    let n = capacity.capacity();
    let key_type = bloomlanes_input::one_key_type(&counted)?;
    let builder = builder.key_type(Some(key_type));
    let mut filter = builder.empty_any(n)?;
    let engine = backend::select(builder.backend_choice(), n as usize)?;
    let start = Instant::now();
    let (summaries, _) = ops::stream::insert_streamed(
        &*engine,
        &mut filter,
        &a.inputs,
        &opts,
        now_nanos(),
        &mut |p| bar.update(p),
    )?;
    let seconds = start.elapsed().as_secs_f64();
    let mut summaries = summaries;
    spooled.rename_summaries(&mut summaries);
    let backend = kinds::ops::engine_name(&*engine, &filter, Stage::Insert);
    let built = KindBuilt {
        filter: &filter,
        capacity,
        summaries: &summaries,
        backend: &backend,
        insert_seconds: seconds,
    };
    report_kind(ctx, a, &built, started)
}

/// Nanoseconds since the Unix epoch: the time keys of a time window are seen.
pub fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `build --kind counting|stable|window|scalable` from standard input or a pipe: the keys read
/// whole, then inserted in input order (a window keeps the last ones; a time window takes them
/// as seen now).
fn build_kind(
    ctx: &Ctx,
    a: &BuildArgs,
    builder: FilterBuilder,
    keys: &KeySet,
    summaries: &[InputSummary],
    started: Instant,
) -> Result<ExitCode> {
    let builder = builder.key_type(Some(keys.key_type()));
    let mut filter = builder.empty_any(keys.len() as u64)?;
    let engine = backend::select(builder.backend_choice(), keys.len())?;
    let mut bar = Bar::new(ctx.progress);
    let start = Instant::now();
    kinds::ops::insert(
        &*engine,
        &mut filter,
        keys.keys(),
        Some(now_nanos()),
        &mut |p| bar.update(p),
    )?;
    let seconds = start.elapsed().as_secs_f64();
    let backend = kinds::ops::engine_name(&*engine, &filter, Stage::Insert);
    let capacity = CapacitySource::Given(builder.capacity_given().unwrap_or(keys.len() as u64));
    let built = KindBuilt {
        filter: &filter,
        capacity,
        summaries,
        backend: &backend,
        insert_seconds: seconds,
    };
    report_kind(ctx, a, &built, started)
}

/// A built filter of a kind other than static, and how it was built.
struct KindBuilt<'b> {
    filter: &'b AnyFilter,
    capacity: CapacitySource,
    summaries: &'b [InputSummary],
    backend: &'b str,
    insert_seconds: f64,
}

/// Writes a built filter of a kind other than static and reports it.
fn report_kind(ctx: &Ctx, a: &BuildArgs, b: &KindBuilt<'_>, started: Instant) -> Result<ExitCode> {
    let filter = b.filter;
    store::save_any(&a.output, filter)?;
    let timing = Timing {
        wall: started.elapsed().as_secs_f64(),
        insert: b.insert_seconds,
    };
    warn_inputs(b.summaries);
    let p = *filter.params();
    let st = filter.stats();
    let bytes = kinds::storage_bytes(filter);
    let keys: u64 = b.summaries.iter().map(|s| s.keys).sum();
    let mut warnings = Warnings::default();
    warn_empty(b.summaries, &mut warnings);
    capacity_warning(a, p.kind, &st, &mut warnings);
    if ctx.json {
        let mut v = report_json(a, &st, b.summaries, timing, &warnings);
        v["kind"] = kind_json(p.kind);
        v["capacity"] = capacity_json(b.capacity);
        v["blocks"] = json!(p.blocks);
        v["bytes"] = json!(bytes);
        v["backend"] = json!(b.backend);
        emit(&v)?;
    } else {
        say(&format!(
            "built {} ({}): {} ({}) from {}; {}; layout {}, {} blocks, {} bytes, expected \
             false-positive rate {:.3e} (backend {}; {})",
            a.output.display(),
            p.kind,
            describe_keys(keys, &st),
            p.key_type,
            describe_inputs(b.summaries),
            b.capacity.describe(),
            p.layout,
            p.blocks,
            bytes,
            st.expected_fpr,
            b.backend,
            timing.describe(keys),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
