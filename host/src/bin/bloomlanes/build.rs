//! `bloomlanes build`: a filter file from keys.

use bloomlanes_host::hll::Hll;
use bloomlanes_host::ops::{self, CapacitySource};
use bloomlanes_host::{store, Error, FilterBuilder, Result};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::args::{check_fpp, parse_layout, BackendArg, LayoutArg};
use crate::inputs::{describe_inputs, inputs_json, warn_inputs, InputArgs};
use crate::output::{emit, say};
use crate::progress::{human_rate, Bar};
use crate::Ctx;

/// Arguments of `build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Input files ("-" reads standard input; gzip, zstd and xz are decompressed).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The filter file to write.
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
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Which backend inserts the keys.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

/// Runs `build`.
pub fn run(ctx: &Ctx, a: BuildArgs) -> Result<ExitCode> {
    let mut builder = FilterBuilder::new()
        .capacity(a.capacity)
        .layout(a.layout.0)
        .seed(a.seed)
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
    let mut bar = Bar::new(ctx.progress);
    let built = ops::build_stream(&builder, &a.inputs, &a.input.options(), &mut |p| {
        bar.update(p)
    })?;
    warn_inputs(&built.inputs);
    store::save_filter(&a.output, &built.filter)?;
    let f = &built.filter;
    let keys: u64 = built.inputs.iter().map(|i| i.keys).sum();
    let rate = keys as f64 / built.seconds.max(1e-9);
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
            "backend": built.engine,
            "seconds": built.seconds,
            "keys_per_second": rate,
            "expected_fpr": f.expected_fpr(None),
        }))?;
    } else {
        say(&format!(
            "built {}: {} keys from {}; {}; layout {}, {} blocks, {} bytes, expected false-positive rate {:.3e} (backend {}, {})",
            a.output.display(),
            keys,
            describe_inputs(&built.inputs),
            built.capacity.describe(),
            f.layout(),
            f.blocks(),
            f.byte_len(),
            f.expected_fpr(None),
            built.engine,
            human_rate(rate, false),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
