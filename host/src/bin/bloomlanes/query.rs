//! `bloomlanes query`: probe keys against a filter; list, count or write a bitmap.

use bloomlanes_host::ops::stream::BitWriter;
use bloomlanes_host::ops::{self, Listing};
use bloomlanes_host::{backend, kinds, store, AnyFilter, Error, Result, Stage};
use bloomlanes_input::read_inputs;
use clap::Args;
use serde_json::json;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::args::{BackendArg, OpenArgs};
use crate::inputs::{inputs_json, warn_inputs, InputArgs};
use crate::opened::Opened;
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
    let filter = Opened::open(&a.filter, a.open.verify())?;
    let open_seconds = opening.elapsed().as_secs_f64();
    filter.check_hashable(&a.filter)?;
    if let (Opened::Kind(f), BackendArg::Gpu) = (&filter, a.backend) {
        return run_kind(ctx, &a, f, open_seconds);
    }
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
        let mut on_chunk = |c: &ops::stream::QueryChunk| -> Result<()> {
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
        };
        let progress = &mut |p| bar.update(p);
        let r = match &filter {
            Opened::Static(f) => ops::query_stream(
                f,
                &a.inputs,
                &opts,
                a.backend.into(),
                listing,
                &mut on_chunk,
                progress,
            )?,
            Opened::Kind(f) => ops::stream::query_stream_kind(
                f,
                &a.filter,
                &a.inputs,
                &opts,
                a.backend.into(),
                listing,
                &mut on_chunk,
                progress,
            )?,
        };
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
            "payload_verified": match &filter {
                Opened::Static(f) => f.payload_verified(),
                // Filters of the other kinds are read whole, their checksum always checked.
                Opened::Kind(_) => true,
            },
            "kind": filter.params().kind.name(),
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

/// `query --backend gpu` of a counting, stable, window or scalable filter: the keys are read
/// whole, then looked up by [`kinds::ops::contains`] (the GPU takes the static images; other
/// backends stream, as for a static filter).
fn run_kind(ctx: &Ctx, a: &QueryArgs, filter: &AnyFilter, open_seconds: f64) -> Result<ExitCode> {
    Opened::Kind(filter.clone()).check_hashable(&a.filter)?;
    let filter_type = filter.params().key_type;
    let mut opts = a.input.options();
    opts.filter_key_type = Some(filter_type);
    let (keys, summaries) = read_inputs(&a.inputs, &opts)?;
    let key_match = ops::check_key_type(&a.filter, filter_type, keys.key_type())?;
    let mut warnings = Warnings::default();
    if let Some(note) = ops::key_type_note(filter_type, keys.key_type(), key_match) {
        warnings.warn(note);
    }
    let engine = backend::select(a.backend.into(), keys.len())?;
    let mut bar = Bar::new(ctx.progress);
    let start = Instant::now();
    let mut answers = kinds::ops::contains(&*engine, filter, keys.keys(), &mut |p| bar.update(p))?;
    ops::apply_float_probes_any(filter, keys.key_type(), keys.keys(), &mut answers);
    let seconds = start.elapsed().as_secs_f64();
    let backend = kinds::ops::engine_name(&*engine, filter, Stage::Query);
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
            "backend": backend,
            "kind": filter.params().kind.name(),
            "seconds": seconds,
            "key_type": keys.key_type().to_string(),
            "filter_key_type": filter_type.to_string(),
            "key_check": format!("{key_match:?}").to_lowercase(),
            "warnings": warnings.json(),
            "open_seconds": open_seconds,
            "payload_verified": true,
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
