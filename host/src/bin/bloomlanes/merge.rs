//! `bloomlanes merge`: union or intersection of compatible filters.

use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::{ops, store, FilterFile, MergeOp, Result};
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::args::OpenArgs;
use crate::output::{check_output, emit, say};
use crate::Ctx;

/// A `--op` value.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum OpArg {
    /// OR: contains every key of every filter.
    Union,
    /// AND: contains every key common to all filters.
    Intersection,
}

/// Arguments of `merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Filter files (at least two; all with the same layout, block count, hash and seed).
    #[arg(required = true, num_args = 2..)]
    filters: Vec<PathBuf>,
    /// The merged filter file to write ("-": standard output; the report then goes to standard
    /// error).
    #[arg(short, long)]
    output: PathBuf,
    /// How to combine.
    #[arg(long, value_enum, default_value = "union")]
    op: OpArg,
    #[command(flatten)]
    open: OpenArgs,
}

/// Runs `merge`.
pub fn run(ctx: &Ctx, a: MergeArgs) -> Result<ExitCode> {
    check_output(&a.output)?;
    let files = a
        .filters
        .iter()
        .map(|p| FilterFile::open_with(p, a.open.verify()))
        .collect::<Result<Vec<_>>>()?;
    let op = match a.op {
        OpArg::Union => MergeOp::Union,
        OpArg::Intersection => MergeOp::Intersection,
    };
    let merged = ops::merge(&files, op)?;
    store::save_filter(&a.output, &merged)?;
    let est = merged.estimated_keys();
    if ctx.json {
        emit(&json!({
            "output": a.output.display().to_string(),
            "op": op.name(),
            "inputs": a.filters.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "layout": merged.layout().name(),
            "blocks": merged.blocks(),
            "fill_ratio": merged.fill_ratio(),
            "estimated_keys": est,
        }))?;
    } else {
        say(&format!(
            "merged {} filters ({}) into {}: layout {}, {} blocks, fill ratio {:.4}, about {} keys",
            files.len(),
            op.name(),
            a.output.display(),
            merged.layout(),
            merged.blocks(),
            merged.fill_ratio(),
            est.map_or("unknown".into(), |e| format!("{e:.0}"))
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
