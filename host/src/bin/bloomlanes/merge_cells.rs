//! `bloomlanes merge` of spatial or counting filters: their union, the filter of every key of
//! every input (each in its highest class; counts added), written whole like any output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bloomlanes_host::{kinds, ops, store, AnyFilter, MergeOp, Result};
use serde_json::json;

use crate::kind::kind_json;
use crate::output::{emit, say, Warnings};
use crate::Ctx;

/// Merges `files` (each filter with its path) by `op` into `output`, and reports.
pub fn run(
    ctx: &Ctx,
    output: &Path,
    op: MergeOp,
    files: Vec<(PathBuf, AnyFilter)>,
) -> Result<ExitCode> {
    let paths: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
    let input_fpr: Vec<f64> = files.iter().map(|(_, f)| kinds::expected_fpr(f)).collect();
    let (merged, folds) = ops::merge_cells(files, op)?;
    store::save_any(output, &merged)?;
    let p = *merged.params();
    let fpr = kinds::expected_fpr(&merged);
    let keys = merged.stats().recorded_keys;
    let mut warnings = Warnings::default();
    let worst_input = input_fpr.iter().copied().fold(0.0, f64::max);
    if fpr > 3.0 * worst_input && fpr > 0.001 {
        warnings.warn(format!(
            "the union's false-positive rate is {fpr:.3e} (from its cells), against at most \
             {worst_input:.3e} for the inputs: the merged filter holds more keys than its size \
             suits; build the inputs with --capacity for the union's keys"
        ));
    }
    if ctx.json {
        return emit(&json!({
            "output": output.display().to_string(),
            "op": op.name(),
            "inputs": paths,
            "kind": kind_json(p.kind),
            "layout": p.layout.name(),
            "blocks": p.blocks,
            "key_count": keys,
            "folded": crate::merge::folds_json(&folds),
            "fill_ratio": merged.stats().fill_ratio,
            "fpr_from_bits": fpr,
            "input_fpr_from_bits": input_fpr,
            "labels": crate::stats::label_figures(&merged),
            "warnings": warnings.json(),
        }))
        .map(|()| ExitCode::SUCCESS);
    }
    say(&format!(
        "merged {} {} filters ({}){} into {}: layout {}, {} blocks, {} keys recorded, \
         false-positive rate {fpr:.3e} (inputs: {})",
        paths.len(),
        p.kind.name(),
        op.name(),
        crate::merge::folds_text(&folds),
        output.display(),
        p.layout,
        p.blocks,
        keys.map_or("unknown".into(), |k| k.to_string()),
        crate::merge::rates_text(&input_fpr),
    ))?;
    let lines = crate::stats::label_lines(&merged);
    if !lines.is_empty() {
        say(&lines.join("\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}
