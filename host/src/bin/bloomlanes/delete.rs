//! `bloomlanes delete`: remove keys from a counting filter file (the file is replaced in one
//! step, or written to `-o`). A key whose counters are not all positive is not in the filter:
//! it is refused and changes nothing.

use std::process::ExitCode;

use bloomlanes_host::kinds::ops;
use bloomlanes_host::ops::stream::stream_hashes_with_text;
use bloomlanes_host::{backend, Error, Keys, Result};
use clap::Args;
use serde_json::json;

use crate::args::BackendArg;
use crate::inputs::describe_inputs;
use crate::insert::{report, save, EditArgs};
use crate::output::{emit, say};
use crate::progress::Bar;
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

/// Runs `delete`: the keys are streamed (parsed and hashed on every core) and deleted chunk
/// after chunk in input order; the filter is written once, at the end (not at all with
/// `--strict` and a key that is not in it).
pub fn run(ctx: &Ctx, a: DeleteArgs) -> Result<ExitCode> {
    let e = &a.edit;
    let (mut filter, output) = e.open()?;
    let (seed, filter_type) = (filter.params().seed, filter.params().key_type);
    let engine = backend::select(a.backend.into(), 0)?;
    // Refuses a filter of a kind without deletions before any key is read.
    ops::remove(&*engine, &mut filter, &e.filter, Keys::Hashes(&[]))?;
    let mut bar = Bar::new(ctx.progress);
    let (mut keys, mut removed, mut missing) = (0u64, 0u64, 0u64);
    let mut shown: Vec<String> = Vec::new();
    let (summaries, key_type) = stream_hashes_with_text(
        &e.inputs,
        &e.input.options(),
        seed,
        filter_type,
        &mut |hashes, text| {
            let r = ops::remove(&*engine, &mut filter, &e.filter, Keys::Hashes(hashes))?;
            keys += hashes.len() as u64;
            removed += r.removed;
            missing += r.not_present.len() as u64;
            for &i in r.not_present.iter().take(SHOWN.saturating_sub(shown.len())) {
                shown.push(text(i));
            }
            Ok(())
        },
        &mut |p| bar.update(p),
    )?;
    let mut warnings = e.key_type_warnings(&filter, key_type)?;
    if missing > 0 {
        let what = format!(
            "{missing} of {keys} keys are not in the filter (a counter is zero), first: {}",
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
    let shared = save(&a.edit, &output, &filter, &summaries)?;
    let s = filter.stats();
    let kind = filter.params().kind;
    if ctx.json {
        emit(&report(
            shared,
            json!({
                "deleted": removed,
                "not_present": missing,
                "not_present_keys": shown,
                "recorded_keys": s.recorded_keys,
                "counters_saturated": s.saturated,
                "expected_fpr": s.expected_fpr,
                "warnings": warnings.json(),
            }),
        ))?;
    } else {
        say(&format!(
            "deleted {} keys from {} into {} ({kind}); {missing} not present; {} keys recorded",
            removed,
            describe_inputs(&summaries),
            output.display(),
            s.recorded_keys.map_or("unknown".into(), |k| k.to_string()),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
