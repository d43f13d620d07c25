//! `bloomlanes query`: probe keys against a filter; list, count or write a bitmap.

use bloomlanes_host::bloomlanes_core::{KeyMatch, KeyType};
use bloomlanes_host::kinds::labels::{Labeller, Labels};
use bloomlanes_host::ops::stream::BitWriter;
use bloomlanes_host::ops::{self, Listing};
use bloomlanes_host::{backend, kinds, store, AnyFilter, Error, Result, Stage};
use bloomlanes_input::{read_inputs, InputSummary, KeySet};
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
    /// Counting and stable filters: print each key's count (the smallest of its counters: an
    /// upper bound on how often it was inserted; 0 = absent) instead of yes/no. Spatial filters
    /// and retrieval tables always print each key's class or value.
    #[arg(long, conflicts_with_all = ["bitmap", "absent"])]
    counts: bool,
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
    if let Some(l) = labeller(&filter, a.counts)? {
        return run_labels(ctx, &a, l);
    }
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
        let inputs = ops::stream::QueryInputs {
            paths: &a.inputs,
            opts: &opts,
            choice: a.backend.into(),
            listing,
        };
        let r = match &filter {
            Opened::Static(f) => ops::query_stream(f, inputs, &mut on_chunk, progress)?,
            Opened::Kind(f) => {
                ops::stream::query_stream_kind(f, &a.filter, inputs, &mut on_chunk, progress)?
            }
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
    let status = grep_status(if a.absent { absent } else { r.matches });
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
            return Ok(status);
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
        return Ok(status);
    }
    out.flush().map_err(stdout_err)?;
    Ok(status)
}

/// grep's exit status for `selected` keys listed (or counted): 0 when there is one, 1 when
/// there is none. Errors are 2 (`main`).
fn grep_status(selected: u64) -> ExitCode {
    if selected > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `query --backend gpu` of a counting, stable, window or scalable filter: the keys are read
/// whole, then looked up by [`kinds::ops::contains`] (the GPU takes the static images; other
/// backends stream, as for a static filter).
fn run_kind(ctx: &Ctx, a: &QueryArgs, filter: &AnyFilter, open_seconds: f64) -> Result<ExitCode> {
    Opened::Kind(filter.clone()).check_hashable(&a.filter)?;
    let filter_type = filter.params().key_type;
    let (keys, summaries, key_match, warnings) = read_keys(a, filter_type)?;
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
    let absent = keys.len() as u64 - matches;
    Ok(grep_status(if a.absent { absent } else { matches }))
}

/// What answers `query` with a label per key: a spatial filter (class), a retrieval table
/// (value), or with `--counts` a counting or stable filter (count).
fn labeller(filter: &Opened, counts: bool) -> Result<Option<Labeller<'_>>> {
    let kind = filter.params().kind.name();
    match (filter, counts) {
        (Opened::Kind(AnyFilter::Counting(c)), true) => Ok(Some(Labeller::Counts(c))),
        (Opened::Kind(f), _) if Labeller::of(f).is_some() => Ok(Labeller::of(f)),
        (_, true) => Err(Error::usage(format!(
            "--counts needs a counting or stable filter; this is a {kind} filter"
        ))),
        _ => Ok(None),
    }
}

/// `query` of a spatial filter, retrieval table or (`--counts`) counting filter: each key with
/// its class, value or count (`absent` when it has none); `--count`: the keys per label.
fn run_labels(ctx: &Ctx, a: &QueryArgs, l: Labeller<'_>) -> Result<ExitCode> {
    if a.bitmap.is_some() || a.absent {
        return Err(Error::usage(
            "a spatial filter or retrieval table answers each key's class or value: --bitmap \
             and --absent do not apply",
        ));
    }
    let filter_type = l.params().key_type;
    let (keys, summaries, _, warnings) = read_keys(a, filter_type)?;
    let start = Instant::now();
    let mut labels = Labels::default();
    l.label(keys.keys(), true, &mut labels);
    let seconds = start.elapsed().as_secs_f64();
    let field = match l {
        Labeller::Spatial(_) => "class",
        Labeller::Retrieval(_) => "value",
        Labeller::Counts(_) => "count",
    };
    let shown = |i: usize| labels.get(i).map(|v| l.show(v));
    let mut per_label = std::collections::BTreeMap::<Option<u32>, u64>::new();
    for i in 0..keys.len() {
        *per_label.entry(labels.get(i)).or_default() += 1;
    }
    let totals: Vec<(String, u64)> = per_label
        .iter()
        .map(|(k, n)| (k.map_or("absent".into(), |v| l.show(v)), *n))
        .collect();
    let found = keys.len() as u64 - per_label.get(&None).copied().unwrap_or(0);
    if ctx.json {
        let mut v = json!({
            "filter": a.filter.display().to_string(),
            "kind": l.params().kind.name(),
            "inputs": inputs_json(&summaries),
            "keys": keys.len(),
            "found": found,
            "absent": keys.len() as u64 - found,
            "per_label": totals.iter().map(|(k, n)| json!({field: k, "keys": n})).collect::<Vec<_>>(),
            "seconds": seconds,
            "key_type": keys.key_type().to_string(),
            "filter_key_type": filter_type.to_string(),
            "warnings": warnings.json(),
        });
        if !a.count {
            // A class by its name; a value or count as a number, as `classify --per-packet`
            // gives it (so that `jq 'select(.value == 7)'` reads both).
            let answer = |i: usize| match (labels.get(i), &l) {
                (None, _) => serde_json::Value::Null,
                (Some(v), Labeller::Spatial(_)) => l.show(v).into(),
                (Some(v), _) => v.into(),
            };
            v["answers"] = (0..keys.len())
                .map(|i| json!({"key": keys.display(i), field: answer(i)}))
                .collect();
        }
        emit(&v)?;
    } else if a.count {
        let parts: Vec<String> = totals.iter().map(|(k, n)| format!("{k} {n}")).collect();
        say(&format!("{} keys: {}", keys.len(), parts.join(", ")))?;
    } else {
        let mut out = io::BufWriter::new(io::stdout().lock());
        for i in 0..keys.len() {
            let label = shown(i).unwrap_or_else(|| "absent".into());
            writeln!(out, "{}\t{label}", keys.display(i)).map_err(stdout_err)?;
        }
        out.flush().map_err(stdout_err)?;
    }
    Ok(grep_status(found))
}

/// The query keys read whole (text read as the filter's key type `filter_type`), checked
/// against it: a key type of another byte form is an error, one of the same bytes a warning.
fn read_keys(
    a: &QueryArgs,
    filter_type: KeyType,
) -> Result<(KeySet, Vec<InputSummary>, KeyMatch, Warnings)> {
    let mut opts = a.input.options();
    opts.filter_key_type = Some(filter_type);
    let (keys, summaries) = read_inputs(&a.inputs, &opts)?;
    let key_match = ops::check_key_type(&a.filter, filter_type, keys.key_type())?;
    let mut warnings = Warnings::default();
    if let Some(note) = ops::key_type_note(filter_type, keys.key_type(), key_match) {
        warnings.warn(note);
    }
    Ok((keys, summaries, key_match, warnings))
}
