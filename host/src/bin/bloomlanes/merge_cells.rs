//! `bloomlanes merge` of spatial or counting filters: their union, the filter of every key of
//! every input (each in its highest class; counts added), written whole like any output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bloomlanes_host::{kinds, ops, store, AnyFilter, MergeOp, Result};
use serde_json::json;

use crate::kind::kind_json;
use crate::output::{emit, say};
use crate::Ctx;

/// Merges `filters` (read from `paths`) by `op` into `output`, and reports.
pub fn run(
    ctx: &Ctx,
    paths: &[PathBuf],
    output: &Path,
    op: MergeOp,
    filters: Vec<AnyFilter>,
) -> Result<ExitCode> {
    let files: Vec<(PathBuf, AnyFilter)> = paths.iter().cloned().zip(filters).collect();
    let (merged, folds) = ops::merge_cells(&files, op)?;
    store::save_any(output, &merged)?;
    let p = *merged.params();
    let fpr = kinds::expected_fpr(&merged);
    let keys = merged.stats().recorded_keys;
    if ctx.json {
        return emit(&json!({
            "output": output.display().to_string(),
            "op": op.name(),
            "inputs": paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "kind": kind_json(p.kind),
            "layout": p.layout.name(),
            "blocks": p.blocks,
            "key_count": keys,
            "folded": folds.iter().map(|f| json!({
                "input": f.path.display().to_string(),
                "from_blocks": f.from,
                "to_blocks": f.to,
            })).collect::<Vec<_>>(),
            "expected_fpr": fpr,
            "labels": crate::stats::label_figures(&merged),
        }))
        .map(|()| ExitCode::SUCCESS);
    }
    let folded: String = folds
        .iter()
        .map(|f| {
            format!(
                " (folded {} {} → {} blocks)",
                f.path.display(),
                f.from,
                f.to
            )
        })
        .collect();
    say(&format!(
        "merged {} {} filters ({}){folded} into {}: layout {}, {} blocks, {} keys recorded, \
         expected false-positive rate {fpr:.3e}",
        files.len(),
        p.kind.name(),
        op.name(),
        output.display(),
        p.layout,
        p.blocks,
        keys.map_or("unknown".into(), |k| k.to_string()),
    ))?;
    let lines = crate::stats::label_lines(&merged);
    if !lines.is_empty() {
        say(&lines.join("\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}
