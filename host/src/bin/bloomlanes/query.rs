//! `bloomlanes query`: probe keys against a filter; list, count or write a bitmap.

use bloomlanes_host::ops::stream::BitWriter;
use bloomlanes_host::ops::{self, Listing};
use bloomlanes_host::{Error, FilterFile, Result};
use clap::Args;
use serde_json::json;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::args::{BackendArg, OpenArgs};
use crate::inputs::{inputs_json, warn_inputs, InputArgs};
use crate::output::{check_output, emit, say, stdout_err, with_output, Warnings};
use crate::progress::Bar;
use crate::Ctx;

/// Arguments of `query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The filter file.
    filter: PathBuf,
    /// Input files with the keys to probe ("-" reads standard input; gzip, zstd and xz are
    /// decompressed).
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

/// Runs `query`: the keys are streamed and their answers printed (or counted, or written as a
/// bitmap) in input order as they come.
pub fn run(ctx: &Ctx, a: QueryArgs) -> Result<ExitCode> {
    if let Some(path) = &a.bitmap {
        check_output(path)?;
    }
    let opening = Instant::now();
    let filter = FilterFile::open_with(&a.filter, a.open.verify())?;
    let open_seconds = opening.elapsed().as_secs_f64();
    ops::check_hashable(&filter)?;
    let want = !a.absent;
    let list = !a.count && a.bitmap.is_none();
    let listing = Listing {
        keys: list.then_some(want),
        json: ctx.json,
        bits: a.bitmap.is_some(),
    };
    let opts = a.input.options();
    let mut bar = Bar::new(ctx.progress);
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let list_name = if a.absent {
        "absent_keys"
    } else {
        "matching_keys"
    };
    let mut listed_any = false;
    let mut run_query = |bitmap: Option<&mut dyn Write>| -> Result<ops::stream::StreamQueried> {
        let mut bitmap = bitmap;
        let mut bits = BitWriter::default();
        if list && ctx.json {
            write!(out, "{{\n  \"{list_name}\": [").map_err(stdout_err)?;
        }
        let r = ops::query_stream(
            &filter,
            &a.inputs,
            &opts,
            a.backend.into(),
            listing,
            &mut |c| {
                if list && !c.text.is_empty() {
                    if ctx.json {
                        out.write_all(if listed_any { b",\n    " } else { b"\n    " })
                            .map_err(stdout_err)?;
                    }
                    listed_any = true;
                    out.write_all(&c.text).map_err(stdout_err)?;
                }
                if let Some(w) = bitmap.as_mut() {
                    bits.write(*w, &c.bits, c.keys as usize).map_err(|e| {
                        Error::io(a.bitmap.as_deref().unwrap_or("-".as_ref()), "write", e)
                    })?;
                }
                Ok(())
            },
            &mut |p| bar.update(p),
        )?;
        if let Some(w) = bitmap.as_mut() {
            bits.finish(*w)
                .map_err(|e| Error::io(a.bitmap.as_deref().unwrap_or("-".as_ref()), "write", e))?;
        }
        Ok(r)
    };
    let r = match &a.bitmap {
        Some(path) => with_output(path, |w| run_query(Some(w)))?,
        None => run_query(None)?,
    };
    warn_inputs(&r.inputs);
    let filter_type = filter.params().key_type;
    let mut warnings = Warnings::default();
    if let Some(note) = ops::key_type_note(filter_type, r.key_type, r.key_match) {
        warnings.warn(note);
    }
    let absent = r.keys - r.matches;
    if ctx.json {
        let mut v = json!({
            "filter": a.filter.display().to_string(),
            "inputs": inputs_json(&r.inputs),
            "keys": r.keys,
            "matches": r.matches,
            "absent": absent,
            "backend": r.engine,
            "seconds": r.seconds,
            "key_type": r.key_type.to_string(),
            "filter_key_type": filter_type.to_string(),
            "key_check": format!("{:?}", r.key_match).to_lowercase(),
            "warnings": warnings.json(),
            "open_seconds": open_seconds,
            "payload_verified": filter.payload_verified(),
        });
        if let Some(p) = &a.bitmap {
            v["bitmap"] = json!(p.display().to_string());
        }
        if list {
            // The listing is already out; close its array and add the totals.
            let mut text = serde_json::to_string_pretty(&v).map_err(|e| stdout_err(e.into()))?;
            text.remove(0); // the opening brace
            let close = if listed_any { "\n  ]," } else { "]," };
            writeln!(out, "{close}{text}").map_err(stdout_err)?;
        } else {
            drop(out);
            emit(&v)?;
            return Ok(ExitCode::SUCCESS);
        }
    } else if !list {
        let mut line = format!(
            "{} of {} keys may be present ({} definitely absent)",
            r.matches, r.keys, absent
        );
        if let Some(p) = &a.bitmap {
            line.push_str(&format!("; bitmap written to {}", p.display()));
        }
        drop(out);
        say(&line)?;
        return Ok(ExitCode::SUCCESS);
    }
    out.flush().map_err(stdout_err)?;
    Ok(ExitCode::SUCCESS)
}
