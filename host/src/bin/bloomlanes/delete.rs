//! `bloomlanes delete`: remove keys from a counting filter file (the file is replaced in one
//! step, or written to `-o`). A key whose counters are not all positive is not in the filter:
//! it is refused and changes nothing.

use std::process::ExitCode;

use bloomlanes_host::kinds::ops;
use bloomlanes_host::{backend, Error, Result};
use clap::Args;
use serde_json::json;

use crate::args::BackendArg;
use crate::inputs::{describe_inputs, inputs_json};
use crate::insert::{save, Edit, EditArgs};
use crate::kind::kind_json;
use crate::output::{emit, say};
use crate::Ctx;

/// Keys not present that a report names.
const SHOWN: usize = 10;

/// Arguments of `delete`.
#[derive(Args, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    edit: EditArgs,
    /// Fail (exit 1, nothing written) if any key is not in the filter, instead of deleting the
    /// others and reporting those.
    #[arg(long)]
    strict: bool,
    /// Which backend deletes the keys (SIMD bulk deletes; the others take the core's per-key
    /// path).
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

/// Runs `delete`.
pub fn run(ctx: &Ctx, a: DeleteArgs) -> Result<ExitCode> {
    let Edit {
        mut filter,
        keys,
        summaries,
        output,
        mut warnings,
    } = a.edit.load()?;
    let engine = backend::select(a.backend.into(), keys.len())?;
    let removed = ops::remove(&*engine, &mut filter, &a.edit.filter, keys.keys())?;
    let missing = removed.not_present.len();
    let shown: Vec<String> = removed
        .not_present
        .iter()
        .take(SHOWN)
        .map(|&i| keys.display(i))
        .collect();
    if missing > 0 {
        let what = format!(
            "{missing} of {} keys are not in the filter (a counter is zero), first: {}",
            keys.len(),
            shown.join(", ")
        );
        if a.strict {
            return Err(Error::input(
                &a.edit.filter,
                None,
                format!("{what}; nothing was written (--strict)"),
            ));
        }
        warnings.warn(format!("{what}; they were left as they are"));
    }
    save(&output, &filter)?;
    let s = filter.stats();
    let kind = filter.params().kind;
    if ctx.json {
        emit(&json!({
            "filter": a.edit.filter.display().to_string(),
            "output": output.display().to_string(),
            "inputs": inputs_json(&summaries),
            "kind": kind_json(kind),
            "deleted": removed.removed,
            "not_present": missing,
            "not_present_keys": shown,
            "recorded_keys": s.recorded_keys,
            "counters_saturated": s.saturated,
            "expected_fpr": s.expected_fpr,
            "warnings": warnings.json(),
        }))?;
    } else {
        say(&format!(
            "deleted {} keys from {} into {} ({kind}); {missing} not present; {} keys recorded",
            removed.removed,
            describe_inputs(&summaries),
            output.display(),
            s.recorded_keys.map_or("unknown".into(), |k| k.to_string()),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
