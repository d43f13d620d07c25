//! `bloomlanes export`: the Parquet split-block form, or the generated RTL and its bank files.

use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::{parquet_io, store, Filter, FilterFile, Result};
use clap::Args;
use serde_json::json;

use crate::args::OpenArgs;
use crate::output::{check_output, emit, say, Warnings};
use crate::Ctx;

/// Arguments of `export`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["parquet", "hdl"])))]
pub struct ExportArgs {
    /// The filter file.
    filter: PathBuf,
    /// Write the Parquet split-block form (layout 8x32, seed 0 only); "-": standard output (the
    /// report then goes to standard error).
    #[arg(long, value_name = "FILE")]
    parquet: Option<PathBuf>,
    /// Write HDL bank files and the generated RTL into this directory.
    #[arg(long, value_name = "DIR")]
    hdl: Option<PathBuf>,
    /// With --hdl: also run synthesis (Yosys) when it is installed, and add its figures to the report.
    #[arg(long, requires = "hdl")]
    synth: bool,
    /// With --hdl: the RTL hashes fixed-width keys of this many bytes on chip (e.g. 8 for u64
    /// keys, 13 for IPv4 5-tuples, 37 for IPv6); without it, the ports take 64-bit hashes
    /// computed by the host.
    #[arg(long, requires = "hdl", value_name = "N")]
    key_bytes: Option<usize>,
    #[command(flatten)]
    open: OpenArgs,
}

/// Runs `export`.
pub fn run(ctx: &Ctx, a: ExportArgs) -> Result<ExitCode> {
    if let Some(out) = &a.parquet {
        check_output(out)?;
    }
    let file = FilterFile::open_with(&a.filter, a.open.verify())?;
    let filter = file.to_filter();
    if let Some(out) = &a.parquet {
        let bytes = parquet_io::export(&filter)?;
        let mut warnings = Warnings::default();
        for w in parquet_io::sizing::reader_warnings(filter.byte_len() as u64) {
            warnings.warn(format!("{}: {w}", a.filter.display()));
        }
        store::write_atomic(out, &bytes)?;
        if ctx.json {
            emit(
                &json!({"output": out.display().to_string(), "form": "parquet",
                         "bytes": bytes.len(), "bitset_bytes": filter.byte_len(),
                         "warnings": warnings.json()}),
            )?;
        } else {
            say(&format!(
                "wrote the Parquet bloom filter of {} to {} ({} bytes)",
                a.filter.display(),
                out.display(),
                bytes.len()
            ))?;
        }
    }
    if let Some(dir) = &a.hdl {
        export_hdl(ctx, &a, &filter, dir)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "hdl")]
fn export_hdl(ctx: &Ctx, a: &ExportArgs, filter: &Filter, dir: &std::path::Path) -> Result<()> {
    use bloomlanes_hdl::{HdlConfig, KeyMode};
    let key = match a.key_bytes {
        Some(n) => KeyMode::Bytes(n),
        None => KeyMode::Prehashed,
    };
    let cfg = HdlConfig::for_filter(filter, key);
    let summary = bloomlanes_host::hdl_io::export(&cfg, filter, dir, a.synth)?;
    let files: Vec<String> = summary
        .files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if ctx.json {
        emit(&json!({
            "output": dir.display().to_string(),
            "form": "hdl",
            "key": key.to_string(),
            "files": files,
            "report": summary.report.display().to_string(),
            "synth": summary.synth.as_ref().map(|f| json!({
                "lut": f.lut, "ff": f.ff, "ramb36": f.ramb36, "ramb18": f.ramb18,
                "lutram": f.lutram, "dsp": f.dsp,
            })),
            "synth_skipped": summary.synth_skipped,
        }))?;
    } else {
        let mut lines = vec![format!(
            "wrote the RTL and {} bank files of {} ({}, {}) to {}:",
            filter.layout().lanes(),
            a.filter.display(),
            filter.layout(),
            key,
            dir.display()
        )];
        lines.extend(files.iter().map(|f| format!("  {f}")));
        if let Some(f) = &summary.synth {
            lines.push(format!(
                "synthesis: {} LUTs, {} FFs, {} RAMB36 + {} RAMB18, {} LUT RAM, {} DSP",
                f.lut, f.ff, f.ramb36, f.ramb18, f.lutram, f.dsp
            ));
        }
        if let (true, Some(why)) = (a.synth, &summary.synth_skipped) {
            lines.push(format!("synthesis skipped: {why}"));
        }
        say(&lines.join("\n"))?;
    }
    Ok(())
}

#[cfg(not(feature = "hdl"))]
fn export_hdl(_: &Ctx, _: &ExportArgs, _: &Filter, _: &std::path::Path) -> Result<()> {
    Err(bloomlanes_host::Error::Unsupported {
        what: "export --hdl",
        feature: "hdl",
    })
}
