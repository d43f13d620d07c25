//! `bloomlanes parquet`: bloom filters inside `.parquet` files. `add-filters` writes them (data
//! pages copied byte for byte, only the footer rewritten); `probe` tells which files and row
//! groups of a dataset may hold given keys.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use bloomlanes_host::parquet_io::probe::ProbeDataset;
use bloomlanes_host::{ops, Error, KeyType, Result};
use bloomlanes_input::key_text;
use bloomlanes_input::{read_inputs, KeySetBuilder};
use bloomlanes_parquet::probe::{expand, Dataset};
use clap::{Args, Subcommand};
use serde_json::json;

#[cfg(feature = "parquet")]
use crate::args::check_fpp;
use crate::args::BackendArg;
use crate::inputs::InputArgs;
use crate::output::{emit, say, Warnings};
use crate::Ctx;

/// Arguments of `parquet`.
#[derive(Args, Debug)]
pub struct ParquetArgs {
    #[command(subcommand)]
    command: ParquetCommand,
}

#[derive(Subcommand, Debug)]
enum ParquetCommand {
    /// Add (or replace) split-block bloom filters for columns of a .parquet file: the data is
    /// copied byte for byte, the filters are placed after the row groups and only the footer is
    /// rewritten. Values are hashed as the file's physical type, as every Parquet reader does.
    AddFilters(AddArgs),
    /// Which files and row groups of a dataset may contain each key, from their bloom filters.
    Probe(ProbeArgs),
}

/// Arguments of `parquet add-filters`.
#[derive(Args, Debug)]
pub struct AddArgs {
    /// The .parquet file to read.
    input: PathBuf,
    /// The .parquet file to write (written completely, then renamed into place).
    #[arg(short, long)]
    output: PathBuf,
    /// A column to filter (path a.b.c, unique leaf name or 0-based index); repeat for more.
    #[arg(long, required = true)]
    column: Vec<String>,
    /// Target false-positive rate: RATE for every column, or COLUMN=RATE for one [default: 0.01].
    #[arg(long, value_name = "[COLUMN=]RATE")]
    fpp: Vec<String>,
    /// Distinct values to size for: N for every column, or COLUMN=N [default: each chunk's exact
    /// count of distinct values].
    #[arg(long, value_name = "[COLUMN=]N")]
    ndv: Vec<String>,
    /// Size each filter exactly for its rate instead of rounding up to a power of two (smaller,
    /// but Arrow C++ / pyarrow, Velox and ClickHouse refuse such filters).
    #[arg(long)]
    no_pow2: bool,
}

/// Arguments of `parquet probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// .parquet files, or directories searched for them.
    #[arg(required = true)]
    dataset: Vec<PathBuf>,
    /// The column whose bloom filters are probed.
    #[arg(long)]
    column: String,
    /// A key, written as text in the column's type (e.g. -5, 2024-01-31, a UUID); repeatable.
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    key: Vec<String>,
    /// Files of keys, one per line (or as --format/--csv-column say), parsed as the column's type.
    #[arg(long, value_name = "FILE")]
    keys: Vec<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    /// Print only the counts.
    #[arg(long)]
    count: bool,
    /// Which backend probes the keys (SIMD, or the GPU for large batches when present).
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

/// Runs `parquet`.
pub fn run(ctx: &Ctx, a: ParquetArgs) -> Result<ExitCode> {
    match a.command {
        ParquetCommand::AddFilters(a) => add(ctx, a),
        ParquetCommand::Probe(a) => probe(ctx, a),
    }
}

/// The value of a per-column option for `column`: `COLUMN=V` beats a bare `V`.
#[cfg(feature = "parquet")]
fn per_column<T: std::str::FromStr>(
    opts: &[String],
    column: &str,
    flag: &str,
) -> Result<Option<T>> {
    let mut general = None;
    let mut specific = None;
    for o in opts {
        let (col, v) = match o.rsplit_once('=') {
            Some((c, v)) => (Some(c), v),
            None => (None, o.as_str()),
        };
        let parsed = v
            .trim()
            .parse::<T>()
            .map_err(|_| Error::usage(format!("--{flag} {o:?}: {v:?} is not a valid value")))?;
        match col {
            Some(c) if c == column => specific = Some(parsed),
            Some(_) => {}
            None => general = Some(parsed),
        }
    }
    Ok(specific.or(general))
}

#[cfg(feature = "parquet")]
fn add(ctx: &Ctx, a: AddArgs) -> Result<ExitCode> {
    use crate::progress::Steps;
    use bloomlanes_host::store;
    use bloomlanes_parquet::add_filters::{add_filters_with_progress, ColumnSpec};
    for o in a.fpp.iter().chain(&a.ndv) {
        if let Some((c, _)) = o.rsplit_once('=') {
            if !a.column.iter().any(|x| x == c) {
                return Err(Error::usage(format!(
                    "{o:?} names column {c:?}, which is not a --column"
                )));
            }
        }
    }
    let mut specs = Vec::new();
    for c in &a.column {
        let fpp = per_column::<f64>(&a.fpp, c, "fpp")?.unwrap_or(0.01);
        check_fpp(fpp)?;
        let ndv = per_column::<u64>(&a.ndv, c, "ndv")?;
        if ndv == Some(0) {
            return Err(Error::usage("--ndv must be at least 1"));
        }
        specs.push(ColumnSpec {
            column: c.clone(),
            fpp,
            ndv,
        });
    }
    let start = Instant::now();
    let mut steps = Steps::new(ctx.progress, "column chunks");
    let mut rewrite =
        add_filters_with_progress(&a.input, &specs, !a.no_pow2, &mut |done, total| {
            steps.update(done, total)
        })?;
    let (before, after) = (rewrite.input_len(), rewrite.output_len());
    store::write_atomic_with(&a.output, |w| rewrite.write_to(w))?;
    let added = rewrite.added;
    let seconds = start.elapsed().as_secs_f64();
    let growth = after as f64 / before.max(1) as f64;
    let mut warnings = Warnings::default();
    for f in &added {
        for w in &f.warnings {
            warnings.warn(format!(
                "column {}, row group {}: {w}",
                f.column, f.row_group
            ));
        }
    }
    if ctx.json {
        let filters: Vec<_> = added
            .iter()
            .map(|f| {
                json!({"column": f.column, "row_group": f.row_group, "values": f.values,
                       "distinct": f.distinct, "bytes": f.bytes, "expected_fpr": f.expected_fpr,
                       "replaced": f.replaced})
            })
            .collect();
        emit(&json!({
            "input": a.input.display().to_string(),
            "output": a.output.display().to_string(),
            "filters": filters,
            "input_bytes": before,
            "output_bytes": after,
            "growth": growth,
            "seconds": seconds,
            "warnings": warnings.json(),
        }))?;
    } else {
        let filter_bytes: u64 = added.iter().map(|f| f.bytes).sum();
        let mut lines = vec![format!(
            "wrote {} with {} bloom filter(s) of {filter_bytes} bytes: {} bytes, {before} before \
             ({growth:.2}x the input)",
            a.output.display(),
            added.len(),
            after,
        )];
        for f in &added {
            lines.push(format!(
                "  {} row group {}: {} values, {} distinct, {} bytes, expected false-positive rate {:.3e}{}",
                f.column,
                f.row_group,
                f.values,
                f.distinct,
                f.bytes,
                f.expected_fpr,
                if f.replaced { " (replaced the old filter)" } else { "" }
            ));
        }
        say(&lines.join("\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "parquet"))]
fn add(_: &Ctx, _: AddArgs) -> Result<ExitCode> {
    Err(Error::Unsupported {
        what: "parquet add-filters",
        feature: "parquet",
    })
}

fn probe(ctx: &Ctx, a: ProbeArgs) -> Result<ExitCode> {
    if a.key.is_empty() && a.keys.is_empty() {
        return Err(Error::usage(
            "give keys to probe: --key VALUE or --keys FILE",
        ));
    }
    let files = expand(&a.dataset)?;
    let mut ds = Dataset::open(&files, &a.column)?;
    let column_type = ds.key_type();
    let key_type: KeyType = a.input.key_type.unwrap_or(column_type);
    let mut opts = a.input.options();
    opts.filter_key_type = Some(column_type);
    let (mut keys, _) = if a.keys.is_empty() {
        (
            KeySetBuilder::default().finish().with_key_type(key_type),
            Vec::new(),
        )
    } else {
        read_inputs(&a.keys, &opts)?
    };
    if !a.key.is_empty() {
        let mut b = KeySetBuilder::default();
        for i in 0..keys.len() {
            b.push_typed(&keys.key_bytes(i), keys.key_type());
        }
        for k in &a.key {
            let bytes = key_text::parse(key_type, k.as_bytes())
                .map_err(|e| Error::usage(format!("--key: {e}")))?;
            b.push_typed(&bytes, key_type);
        }
        if !keys.is_empty() && keys.key_type() != key_type {
            return Err(Error::usage(format!(
                "the --keys files hold {} keys and the --key values {key_type}: give --key-type",
                keys.key_type()
            )));
        }
        keys = b.finish().with_key_type(key_type);
    }
    let mut warnings = Warnings::default();
    let start = Instant::now();
    let result = ds.probe(&keys, a.backend.into())?;
    let seconds = start.elapsed().as_secs_f64();
    if let Some(note) = ops::key_type_note(column_type, keys.key_type(), result.key_match) {
        warnings.warn(note);
    }
    let names: Vec<String> = ds.files().map(|p| p.display().to_string()).collect();
    let no_filter: Vec<_> = result.groups.iter().filter(|g| !g.has_filter).collect();
    if !no_filter.is_empty() {
        warnings.warn(format!(
            "{} of {} row groups have no bloom filter for column {}: they may contain every key",
            no_filter.len(),
            result.groups.len(),
            ds.column()
        ));
    }
    let candidates = |i: usize| result.groups.iter().filter(move |g| g.answers.get(i));
    let pairs: usize = (0..keys.len()).map(|i| candidates(i).count()).sum();
    let absent = (0..keys.len())
        .filter(|&i| candidates(i).next().is_none())
        .count();
    if ctx.json {
        let mut v = json!({
            "column": ds.column(),
            "key_type": keys.key_type().to_string(),
            "column_key_type": column_type.to_string(),
            "files": names,
            "row_groups": result.groups.len(),
            "row_groups_without_filter": no_filter.iter().map(|g| json!({"file": names[g.file], "row_group": g.row_group})).collect::<Vec<_>>(),
            "keys_probed": keys.len(),
            "keys_in_no_row_group": absent,
            "candidate_pairs": pairs,
            "backend": result.backend,
            "seconds": seconds,
            "warnings": warnings.json(),
        });
        if !a.count {
            v["keys"] = (0..keys.len())
                .map(|i| {
                    json!({"key": keys.display(i), "row_groups": candidates(i).map(|g| json!({
                        "file": names[g.file], "row_group": g.row_group, "has_filter": g.has_filter
                    })).collect::<Vec<_>>()})
                })
                .collect();
        }
        emit(&v)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut lines = Vec::new();
    if !a.count {
        for i in 0..keys.len() {
            let c: Vec<String> = candidates(i)
                .map(|g| {
                    format!(
                        "{}#{}{}",
                        names[g.file],
                        g.row_group,
                        if g.has_filter { "" } else { " (no filter)" }
                    )
                })
                .collect();
            let shown = if c.is_empty() {
                "none".to_string()
            } else {
                c.join(" ")
            };
            lines.push(format!("{}\t{shown}", keys.display(i)));
        }
    }
    lines.push(format!(
        "{} keys probed against {} row groups of {} file(s) (column {}, {}): {} keys in no row group, {} (key, row group) candidates",
        keys.len(),
        result.groups.len(),
        names.len(),
        ds.column(),
        column_type,
        absent,
        pairs
    ));
    say(&lines.join("\n"))?;
    Ok(ExitCode::SUCCESS)
}
