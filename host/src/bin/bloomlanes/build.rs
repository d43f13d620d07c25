//! `bloomlanes build`: a filter file from keys.

use bloomlanes_host::kinds::{self, KindSpec};
use bloomlanes_host::ops::{self, CapacitySource};
use bloomlanes_host::{backend, store, AnyFilter, Error, FilterBuilder, Result, Stage};
use bloomlanes_input::hll::Hll;
use bloomlanes_input::{read_inputs, InputSummary, KeySet};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::args::{check_fpp, parse_layout, BackendArg, LayoutArg};
use crate::inputs::{describe_inputs, inputs_json, warn_inputs, InputArgs};
use crate::kind::{kind_json, KindArgs};
use crate::output::{check_output, emit, say, Warnings};
use crate::progress::{human_rate, Bar};
use crate::Ctx;

/// Arguments of `build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Input files ("-" reads standard input; gzip, zstd and xz are decompressed).
    #[arg(required = true)]
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
}

/// The expected false-positive rate above which a built filter is reported as nearly useless.
const USELESS_FPR: f64 = 0.25;

/// Runs `build`.
pub fn run(ctx: &Ctx, a: BuildArgs) -> Result<ExitCode> {
    let spec = a.kind.spec()?;
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
    if spec != KindSpec::Static {
        // Files are read twice (counted, then inserted) and never held; standard input and
        // pipes, which cannot be read twice, are read whole.
        if a.inputs.iter().all(|p| ops::stream::reopenable(p)) {
            return build_kind_streamed(ctx, &a, builder.kind(spec));
        }
        let (keys, summaries) = read_inputs(&a.inputs, &a.input.options())?;
        return build_kind(ctx, &a, builder.kind(spec), &keys, &summaries);
    }
    let target = match (a.fpp, a.bits_per_key) {
        (_, Some(_)) => None,
        (r, None) => Some(r.unwrap_or(0.01)),
    };
    let mut bar = Bar::new(ctx.progress);
    let built = ops::build_stream(&builder, &a.inputs, &a.input.options(), &mut |p| {
        bar.update(p)
    })?;
    warn_inputs(&built.inputs);
    store::save_filter(&a.output, &built.filter)?;
    let f = &built.filter;
    let keys: u64 = built.inputs.iter().map(|i| i.keys).sum();
    let rate = keys as f64 / built.seconds.max(1e-9);
    let fpr = f.expected_fpr(None);
    let mut warnings = Warnings::default();
    if fpr >= USELESS_FPR || target.is_some_and(|t| fpr > 10.0 * t) {
        let sized = a.capacity.map_or_else(
            || "the sizing asked for".to_string(),
            |c| format!("a capacity of {c}"),
        );
        warnings.warn(format!(
            "{} holds {keys} keys but was sized for {sized}: its expected false-positive rate is \
             {fpr:.3}{}, so most absent keys will be answered \"may be present\"; raise \
             --capacity (or drop it to size for the keys read)",
            a.output.display(),
            target.map_or(String::new(), |t| format!(" (target {t})"))
        ));
    }
    if ctx.json {
        let capacity = match built.capacity {
            CapacitySource::Given(c) => json!({"capacity": c, "source": "given"}),
            CapacitySource::Counted { estimate, capacity } => json!({
                "capacity": capacity,
                "source": "counted",
                "estimated_distinct_keys": estimate,
                "method": "HyperLogLog (2^14 registers) over a first pass, +2%",
                "relative_standard_error": Hll::STANDARD_ERROR,
            }),
        };
        emit(&json!({
            "output": a.output.display().to_string(),
            "inputs": inputs_json(&built.inputs),
            "keys": keys,
            "capacity": capacity,
            "layout": f.layout().name(),
            "blocks": f.blocks(),
            "bytes": f.byte_len(),
            "seed": f.seed(),
            "key_type": f.params().key_type.to_string(),
            "backend": built.engine,
            "seconds": built.seconds,
            "keys_per_second": rate,
            "expected_fpr": fpr,
            "warnings": warnings.json(),
        }))?;
    } else {
        say(&format!(
            "built {}: {} keys ({}) from {}; {}; layout {}, {} blocks, {} bytes, expected false-positive rate {:.3e} (backend {}, {})",
            a.output.display(),
            keys,
            f.params().key_type,
            describe_inputs(&built.inputs),
            built.capacity.describe(),
            f.layout(),
            f.blocks(),
            f.byte_len(),
            fpr,
            built.engine,
            human_rate(rate, false),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
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
    report_kind(
        ctx,
        a,
        &filter,
        keys.len() as u64,
        summaries,
        &backend,
        seconds,
    )
}

/// `build --kind counting|stable|window|scalable` from files: a first pass counts the keys
/// (the sizing of [`build_kind`]) and learns their type; the second streams them into the
/// filter in input order, in batches (nothing is held whole).
fn build_kind_streamed(ctx: &Ctx, a: &BuildArgs, builder: FilterBuilder) -> Result<ExitCode> {
    let opts = a.input.options();
    let mut bar = Bar::new(ctx.progress);
    let (_, counted) = ops::count_distinct(&a.inputs, &opts, &mut |p| bar.update(p))?;
    let n: u64 = counted.iter().map(|s| s.keys).sum();
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
    let keys: u64 = summaries.iter().map(|s| s.keys).sum();
    let backend = kinds::ops::engine_name(&*engine, &filter, Stage::Insert);
    report_kind(ctx, a, &filter, keys, &summaries, &backend, seconds)
}

/// Writes a built filter of a kind other than static and reports it.
fn report_kind(
    ctx: &Ctx,
    a: &BuildArgs,
    filter: &AnyFilter,
    keys: u64,
    summaries: &[InputSummary],
    backend: &str,
    seconds: f64,
) -> Result<ExitCode> {
    store::save_any(&a.output, filter)?;
    let p = *filter.params();
    let (bytes, fpr) = (kinds::storage_bytes(filter), kinds::expected_fpr(filter));
    let mut warnings = Warnings::default();
    if fpr >= USELESS_FPR {
        warnings.warn(format!(
            "{} ({}) holds {} keys and its expected false-positive rate is {fpr:.3}: most absent \
             keys will be answered \"may be present\"; raise --capacity (or drop it to size for \
             the keys read)",
            a.output.display(),
            p.kind,
            keys
        ));
    }
    if ctx.json {
        emit(&json!({
            "output": a.output.display().to_string(),
            "inputs": inputs_json(summaries),
            "keys": keys,
            "kind": kind_json(p.kind),
            "layout": p.layout.name(),
            "blocks": p.blocks,
            "bytes": bytes,
            "seed": p.seed,
            "key_type": p.key_type.to_string(),
            "backend": backend,
            "seconds": seconds,
            "expected_fpr": fpr,
            "warnings": warnings.json(),
        }))?;
    } else {
        say(&format!(
            "built {} ({}): {} keys ({}) from {}; layout {}, {} blocks, {} bytes, expected \
             false-positive rate {:.3e} (backend {backend})",
            a.output.display(),
            p.kind,
            keys,
            p.key_type,
            describe_inputs(summaries),
            p.layout,
            p.blocks,
            bytes,
            fpr,
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
