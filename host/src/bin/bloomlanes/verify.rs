//! `bloomlanes verify`: the same keys through every backend present, compared bit for bit and
//! answer for answer with the scalar reference (and the RTL simulation when one is installed).

use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::{kinds, verify, Error, KindSpec, Layout, Result};
use bloomlanes_input::{read_inputs, KeySet};
use clap::Args;
use serde_json::json;

use crate::args::check_fpp;
use crate::inputs::InputArgs;
use crate::output::{absent_json, emit, say};
use crate::Ctx;

/// Arguments of `verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Input files with the keys (none: built-in sample keys).
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    /// Layout to check ("all" checks every layout).
    #[arg(long, default_value = "all")]
    layout: String,
    /// Number of sample keys when no input is given.
    #[arg(long, default_value_t = 100_000)]
    keys: usize,
    /// Target false-positive rate used for sizing.
    #[arg(long, default_value_t = 0.01)]
    fpp: f64,
    /// Hash seed.
    #[arg(long, default_value = "0", value_parser = crate::args::parse_seed)]
    seed: u64,
    /// Kind of filter to check: all, static, counting, stable, window or scalable.
    #[arg(long, default_value = "all")]
    kind: String,
    /// Inserted (and as many absent) keys looked up in the RTL simulation, when a Verilog
    /// simulator is installed (0 skips it).
    #[arg(long, default_value_t = 64)]
    hdl_keys: usize,
}

fn parse_layouts(s: &str) -> Result<Vec<Layout>> {
    if s == "all" {
        return Ok(Layout::ALL.to_vec());
    }
    Layout::from_name(s).map(|l| vec![l]).ok_or_else(|| {
        Error::usage(format!(
            "--layout {s:?}: expected all, 8x32, 8x64, 16x32 or 16x64"
        ))
    })
}

fn parse_kinds(s: &str, keys: usize) -> Result<Vec<KindSpec>> {
    let mut all = vec![KindSpec::Static];
    all.extend(kinds::verify::kinds_for(keys));
    if s == "all" {
        return Ok(all);
    }
    all.into_iter()
        .find(|k| k.name() == s)
        .map(|k| vec![k])
        .ok_or_else(|| {
            Error::usage(format!(
                "--kind {s:?}: expected all, static, counting, stable, window or scalable"
            ))
        })
}

/// Runs `verify`.
pub fn run(ctx: &Ctx, a: VerifyArgs) -> Result<ExitCode> {
    check_fpp(a.fpp)?;
    let layouts = parse_layouts(&a.layout)?;
    let keys: KeySet = if a.inputs.is_empty() {
        verify::sample_keyset(a.keys)
    } else {
        read_inputs(&a.inputs, &a.input.options())?.0
    };
    let kinds = parse_kinds(&a.kind, keys.len())?;
    let report = verify::run(&keys, &layouts, &kinds, a.fpp, a.seed, a.hdl_keys)?;
    if ctx.json {
        emit(&json!({
            "ok": report.ok(),
            "keys": keys.len(),
            "rows": report.rows.iter().map(|r| json!({
                "layout": r.layout.name(),
                "kind": r.kind,
                "backend": r.backend,
                "keys": r.keys,
                "probes": r.probes,
                "identical": r.difference.is_none(),
                "difference": r.difference.as_ref().map(|d| d.to_string()),
            })).collect::<Vec<_>>(),
            "absent_backends": absent_json(&report.absent),
        }))?;
    } else {
        let mut lines = vec![format!(
            "verify: {} keys inserted and {} probed per layout, compared with the scalar reference",
            keys.len(),
            keys.len() * 2
        )];
        let mut last = None;
        for r in &report.rows {
            if last != Some((r.layout, r.kind)) && last.is_some() {
                lines.push(String::new());
            }
            last = Some((r.layout, r.kind));
            lines.push(format!(
                "  {:<6} {:<9} {:<30} {}",
                r.layout.name(),
                r.kind,
                r.backend,
                match &r.difference {
                    None if r.backend.starts_with("hdl-sim") => {
                        format!("identical answers ({} operations simulated)", r.probes)
                    }
                    None if r.kind == "static" => "identical bits and answers".to_string(),
                    None if r.backend == "scalar" => {
                        "identical images and answers; no false negative, file round trip"
                            .to_string()
                    }
                    None => "identical images and answers".to_string(),
                    Some(d) => format!("DIFFERENT: {d}"),
                }
            ));
        }
        for (n, why) in &report.absent {
            lines.push(format!("  (not checked: {n}: {why})"));
        }
        lines.push(if report.ok() {
            "all backends agree".into()
        } else {
            "backends DISAGREE".into()
        });
        say(&lines.join("\n"))?;
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
