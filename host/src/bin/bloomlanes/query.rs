//! `bloomlanes query`: probe keys against a filter; list, count or write a bitmap.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use bloomlanes_host::input::read_inputs;
use bloomlanes_host::{backend, bulk, ops, store, FilterFile, Result};
use clap::Args;
use serde_json::json;

use crate::args::{BackendArg, OpenArgs};
use crate::inputs::{inputs_json, InputArgs};
use crate::output::{check_output, emit, say, stdout_err, Warnings};
use crate::progress::Bar;
use crate::Ctx;

/// Arguments of `query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The filter file.
    filter: PathBuf,
    /// Input files with the keys to probe ("-" reads standard input).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    /// Print only how many keys may be present.
    #[arg(long, conflicts_with = "bitmap")]
    count: bool,
    /// Write the answers as a bitmap: bit j (LSB first) of byte i answers key 8i+j, in input order
    /// ("-": standard output; the report then goes to standard error).
    #[arg(long, value_name = "FILE")]
    bitmap: Option<PathBuf>,
    /// Print the keys that are definitely absent instead of those that may be present.
    #[arg(long)]
    absent: bool,
    /// Which backend probes the keys.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    #[command(flatten)]
    open: OpenArgs,
}

/// Runs `query`.
pub fn run(ctx: &Ctx, a: QueryArgs) -> Result<ExitCode> {
    if let Some(path) = &a.bitmap {
        check_output(path)?;
    }
    let opening = Instant::now();
    let filter = FilterFile::open_with(&a.filter, a.open.verify())?;
    let open_seconds = opening.elapsed().as_secs_f64();
    ops::check_hashable(&filter)?;
    let filter_type = filter.params().key_type;
    let mut opts = a.input.options();
    opts.filter_key_type = Some(filter_type);
    let (keys, summaries) = read_inputs(&a.inputs, &opts)?;
    let key_match = ops::check_key_type(&a.filter, filter_type, keys.key_type())?;
    let mut warnings = Warnings::default();
    if let Some(note) = ops::key_type_note(filter_type, keys.key_type(), key_match) {
        warnings.warn(note);
    }
    filter.advise_lookups(keys.len());
    // ops::query, taken apart so that the lookups alone are timed.
    let engine = backend::select(a.backend.into(), keys.len())?;
    let mut bar = Bar::new(ctx.progress);
    let start = Instant::now();
    let mut answers = bulk::contains(&*engine, filter.view(), keys.keys(), &mut |p| bar.update(p))?;
    ops::apply_float_probes(filter.view(), keys.key_type(), keys.keys(), &mut answers);
    let seconds = start.elapsed().as_secs_f64();
    let matches = answers.count_ones();
    if let Some(path) = &a.bitmap {
        store::write_atomic(path, &answers.to_bytes())?;
    }
    let want = !a.absent;
    let list = !a.count && a.bitmap.is_none();
    if ctx.json {
        let mut v = json!({
            "filter": a.filter.display().to_string(),
            "inputs": inputs_json(&summaries),
            "keys": keys.len(),
            "matches": matches,
            "absent": keys.len() as u64 - matches,
            "backend": engine.name(),
            "seconds": seconds,
            "key_type": keys.key_type().to_string(),
            "filter_key_type": filter_type.to_string(),
            "key_check": format!("{key_match:?}").to_lowercase(),
            "warnings": warnings.json(),
            "open_seconds": open_seconds,
            "payload_verified": filter.payload_verified(),
        });
        if let Some(p) = &a.bitmap {
            v["bitmap"] = json!(p.display().to_string());
        }
        if list {
            let shown: Vec<String> = answers.indices(want).map(|i| keys.display(i)).collect();
            v[if a.absent {
                "absent_keys"
            } else {
                "matching_keys"
            }] = json!(shown);
        }
        emit(&v)?;
    } else if list {
        let mut out = io::BufWriter::new(io::stdout().lock());
        for i in answers.indices(want) {
            writeln!(out, "{}", keys.display(i)).map_err(stdout_err)?;
        }
        out.flush().map_err(stdout_err)?;
    } else {
        let mut line = format!(
            "{} of {} keys may be present ({} definitely absent)",
            matches,
            keys.len(),
            keys.len() as u64 - matches
        );
        if let Some(p) = &a.bitmap {
            line.push_str(&format!("; bitmap written to {}", p.display()));
        }
        say(&line)?;
    }
    Ok(ExitCode::SUCCESS)
}
