//! `bloomlanes delete`: remove keys from a counting filter file (the file is replaced in one
//! step, or written to `-o`). A key whose counters are not all positive is not in the filter:
//! it is refused and changes nothing. A key that was never inserted but whose counters are all
//! positive (a false positive) cannot be told from a present one: deleting it decrements
//! counters of present keys, which may then be answered absent. `--verify-with FILE` checks
//! every key against an authoritative list of the keys present first (the safe form for flow
//! tables and other sets whose owner knows what is in them).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::kinds::ops;
use bloomlanes_host::ops::stream::{stream_hashes, stream_hashes_with_text};
use bloomlanes_host::{backend, Error, Keys, Result};
use clap::Args;
use serde_json::json;

use crate::args::BackendArg;
use crate::insert::{save, EditArgs};
use crate::progress::Bar;
use crate::Ctx;

/// Keys not present that a report names.
const SHOWN: usize = 10;

/// The long help of `delete`: what a counting filter's delete can and cannot know.
pub const DELETE_HELP: &str = "\
What a delete can know: a key with a counter at zero is certainly not in the filter; it is \
refused and changes nothing. A key that was never inserted but whose counters are all positive \
(a false positive: a fraction about the filter's expected false-positive rate of such keys, see \
`stats`) cannot be told from a present key: it is deleted, its counters are decremented, and \
present keys that share them may then be answered \"absent\". So delete only keys that were \
inserted. When the set of keys present is known elsewhere (a flow table, a database), give it \
with --verify-with FILE: every key to delete is checked against it first (by its 64-bit hash, \
with the filter's seed and key type), and keys not in it are refused like absent ones; a key \
listed once is deleted at most once. A saturated counter is never decremented, so a key whose \
counter saturated is never lost.";

/// The long help of `delete`: [`DELETE_HELP`], then how inputs are read.
pub fn long_help() -> String {
    format!("{DELETE_HELP}\n\n{}", crate::inputs::FORMATS_POINTER)
}

/// Arguments of `delete`.
#[derive(Args, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    edit: EditArgs,
    /// Fail (exit 1, nothing written) if any key is refused (a counter at zero, or not in
    /// --verify-with), instead of deleting the others and reporting those.
    #[arg(long)]
    strict: bool,
    /// An authoritative list of the keys present (read like the inputs): a key to delete that
    /// is not in it is refused, even where the filter's counters would let it through (see
    /// below).
    #[arg(long, value_name = "FILE")]
    verify_with: Vec<PathBuf>,
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
    let (_lock, mut filter, output) = e.open()?;
    let (seed, filter_type) = (filter.params().seed, filter.params().key_type);
    let engine = backend::select(a.backend.into(), 0)?;
    // Refuses a filter of a kind without deletions before any key is read.
    ops::remove(&*engine, &mut filter, &e.filter, Keys::Hashes(&[]))?;
    let mut bar = Bar::new(ctx.progress);
    let mut present = match a.verify_with.as_slice() {
        [] => None,
        paths => Some(Present::read(paths, &e.input, seed, filter_type, &mut bar)?),
    };
    let (mut keys, mut removed, mut missing) = (0u64, 0u64, 0u64);
    let mut shown: Vec<String> = Vec::new();
    let mut allowed: Vec<u64> = Vec::new();
    let mut refused: Vec<usize> = Vec::new();
    let (summaries, key_type) = stream_hashes_with_text(
        &e.inputs,
        &e.input.options(),
        seed,
        filter_type,
        &mut |hashes, text| {
            // The keys the list does not hold are refused before the filter sees them.
            let (batch, index) = match present.as_mut() {
                None => (hashes, None),
                Some(p) => {
                    let index = p.split(hashes, &mut allowed, &mut refused);
                    (allowed.as_slice(), Some(index))
                }
            };
            let r = ops::remove(&*engine, &mut filter, &e.filter, Keys::Hashes(batch))?;
            keys += hashes.len() as u64;
            removed += r.removed;
            let mut not_present: Vec<usize> = match &index {
                None => r.not_present,
                Some(index) => r.not_present.iter().map(|&j| index[j]).collect(),
            };
            if index.is_some() {
                not_present.extend_from_slice(&refused);
                not_present.sort_unstable();
            }
            missing += not_present.len() as u64;
            for &i in not_present.iter().take(SHOWN.saturating_sub(shown.len())) {
                shown.push(text(i));
            }
            Ok(())
        },
        &mut |p| bar.update(p),
    )?;
    let mut warnings = e.key_type_warnings(&filter, key_type)?;
    if missing > 0 {
        let why = if present.is_some() {
            "a counter is zero, or --verify-with does not list them"
        } else {
            "a counter is zero"
        };
        let what = format!(
            "{missing} of {keys} keys are not in the filter ({why}), first: {}",
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
    let saved = save(&a.edit, &output, &filter, &summaries)?;
    let s = filter.stats();
    saved.report(
        ctx,
        json!({
            "deleted": removed,
            "not_present": missing,
            "not_present_keys": shown,
            "verified_with": a.verify_with.iter().map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
            "recorded_keys": s.recorded_keys,
            "counters_saturated": s.saturated,
            "expected_fpr": s.expected_fpr,
            "warnings": warnings.json(),
        }),
        &format!("deleted {removed} keys"),
        &format!(
            "{missing} not present; {} keys recorded",
            s.recorded_keys.map_or("unknown".into(), |k| k.to_string())
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The keys present by an authoritative list (`--verify-with`): how many times each hash is
/// listed, consumed by the deletions it allows.
struct Present(HashMap<u64, u64>);

impl Present {
    /// Reads the lists at `paths` as the inputs are read (hashes with the filter's seed and
    /// key type).
    fn read(
        paths: &[PathBuf],
        input: &crate::inputs::InputArgs,
        seed: u64,
        filter_type: bloomlanes_host::KeyType,
        bar: &mut Bar,
    ) -> Result<Present> {
        let mut counts: HashMap<u64, u64> = HashMap::new();
        stream_hashes(
            paths,
            &input.options(),
            seed,
            filter_type,
            &mut |hashes| {
                for &h in hashes {
                    *counts.entry(h).or_default() += 1;
                }
                Ok(())
            },
            &mut |p| bar.update(p),
        )?;
        Ok(Present(counts))
    }

    /// Splits `hashes` into those the list allows (into `allowed`, consuming one listing each)
    /// and the indices of those it refuses (into `refused`); returns, for each allowed hash,
    /// its index in `hashes`.
    fn split(
        &mut self,
        hashes: &[u64],
        allowed: &mut Vec<u64>,
        refused: &mut Vec<usize>,
    ) -> Vec<usize> {
        allowed.clear();
        refused.clear();
        let mut index = Vec::new();
        for (i, h) in hashes.iter().enumerate() {
            match self.0.get_mut(h) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    allowed.push(*h);
                    index.push(i);
                }
                _ => refused.push(i),
            }
        }
        index
    }
}
