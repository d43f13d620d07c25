//! `bloomlanes import`: a Parquet bloom filter (of a `.parquet` column chunk, or bare) into a
//! filter file.

use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::parquet_io::{self, ColumnSelector};
use bloomlanes_host::{store, Filter, Result};
use clap::Args;
use serde_json::json;

use crate::output::{check_output, emit, say};
use crate::Ctx;

/// Arguments of `import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A .parquet file, or a bare Parquet bloom filter (Thrift header + bitset).
    source: PathBuf,
    /// The filter file to write ("-": standard output; the report then goes to standard error).
    #[arg(short, long)]
    output: PathBuf,
    /// Column path (a.b.c), leaf name or 0-based index [default: the first column with a bloom filter].
    #[arg(long)]
    column: Option<String>,
    /// Row group (0-based).
    #[arg(long, default_value_t = 0)]
    row_group: usize,
}

/// Runs `import`.
pub fn run(ctx: &Ctx, a: ImportArgs) -> Result<ExitCode> {
    let sel = ColumnSelector {
        column: a.column.clone(),
        row_group: a.row_group,
    };
    check_output(&a.output)?;
    let imp = parquet_io::import(&a.source, &sel)?;
    store::save_filter(&a.output, &imp.filter)?;
    let f: &Filter = &imp.filter;
    if ctx.json {
        emit(&json!({
            "source": a.source.display().to_string(),
            "output": a.output.display().to_string(),
            "column": imp.column,
            "physical_type": imp.physical_type,
            "row_group": imp.row_group,
            "layout": f.layout().name(),
            "blocks": f.blocks(),
            "bytes": f.byte_len(),
            "fill_ratio": f.fill_ratio(),
            "estimated_keys": f.estimated_keys(),
        }))?;
    } else {
        let from = match (&imp.column, imp.row_group) {
            (Some(c), Some(g)) => format!(
                "column {c} ({}) of row group {g} of {}",
                imp.physical_type.as_deref().unwrap_or("?"),
                a.source.display()
            ),
            _ => a.source.display().to_string(),
        };
        say(&format!(
            "imported the bloom filter of {from} into {}: {} blocks, {} bytes, fill ratio {:.4}",
            a.output.display(),
            f.blocks(),
            f.byte_len(),
            f.fill_ratio()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
