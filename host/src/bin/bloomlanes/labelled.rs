//! `build --kind spatial` and `build --kind retrieval`: filters built from keys with labels (a
//! class name per key, or an unsigned value), read from a CSV/TSV key column beside a label
//! column, or (spatial) from one input per class.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bloomlanes_host::bloomlanes_core::retrieval::{RetrievalError, RetrievalSpec};
use bloomlanes_host::bloomlanes_core::AnyFilter;
use bloomlanes_host::kinds::labels;
use bloomlanes_host::Location;
use bloomlanes_host::{kinds, ops, store, Error, FilterBuilder, Result};
use bloomlanes_input::pairs::{self, LabelColumn, Pairs};
use bloomlanes_input::{read_input, InputOptions, InputSummary, KeySet, KeySetBuilder};
use clap::Args;
use serde_json::json;

use crate::class_names::{case_twins, ClassNames};
use crate::inputs::{describe_inputs, inputs_json};
use crate::kind::kind_json;
use crate::output::{emit, say, Warnings};
use crate::Ctx;

/// The options of the labelled kinds (spatial filters and retrieval tables).
#[derive(Args, Debug)]
pub struct LabelArgs {
    /// Spatial filters: the CSV column holding each key's class name (a header name or a
    /// 0-based index; the key is --csv-column). Spaces around a name are ignored; a key
    /// listed in two classes is kept in the higher one, with a warning naming both lines.
    #[arg(long, value_name = "NAME|INDEX", conflicts_with = "class")]
    pub class_column: Option<String>,
    /// Spatial filters: the classes numbered from 1 in the order given, lowest priority
    /// first, as Python's `SpatialFilter([...])` numbers its list: `--classes
    /// allow,mirror,deny` makes allow class 1, mirror 2 and deny 3, and the higher number wins
    /// where keys of two classes share a cell, so a key may be reported in a higher class than
    /// its own (emersion), never a lower one. A class not listed is an error; spaces around
    /// names are ignored [default: classes that are all numbers (libSBF's areas, rule ids,
    /// tiers) in numeric order, the smallest = class 1; other names in the order in which they
    /// first appear, first = class 1].
    #[arg(long, value_name = "A,B,..", value_delimiter = ',')]
    pub classes: Option<Vec<String>>,
    /// Spatial filters: one input per class, `NAME=FILE` (repeated; numbered from 1 in the
    /// order given, lowest priority first, like --classes; each file read like any input:
    /// lines, CSV column, pcap flows …).
    #[arg(long, value_name = "NAME=FILE")]
    pub class: Vec<String>,
    /// Spatial filters: cell width, 4, 8 or 16 bits (15, 255 or 65535 classes) [default: the
    /// smallest that holds the classes].
    #[arg(long, value_name = "BITS")]
    pub cell_bits: Option<u32>,
    /// Retrieval tables: the CSV column holding each key's value (an unsigned integer, decimal
    /// or 0x hex).
    #[arg(long, value_name = "NAME|INDEX")]
    pub value_column: Option<String>,
    /// Retrieval tables: bits per value, 1 to 32 (a larger value is an error).
    #[arg(long, value_name = "V")]
    pub value_bits: Option<u8>,
    /// Retrieval tables: check bits per key, 0 to 32: a key not in the table is answered
    /// "absent" with probability 1 - 2^-F [default: 8].
    #[arg(long, value_name = "F")]
    pub check_bits: Option<u8>,
}

/// Where records `i` and `j` of a CSV read with `column` as its label column are, found in
/// one read: " (FILE: line N)" each, or empty where it cannot be told (standard input).
pub fn record_places(
    inputs: &[PathBuf],
    opts: &InputOptions,
    column: &str,
    (i, j): (usize, usize),
) -> (String, String) {
    let column = LabelColumn {
        name: column,
        flag: "--class-column",
    };
    let mut places = pairs::locate_all(inputs, opts, column, &[i, j])
        .into_iter()
        .map(|p| {
            p.map(|(path, line)| format!(" ({}: line {line})", path.display()))
                .unwrap_or_default()
        });
    let first = places.next().unwrap_or_default();
    (first, places.next().unwrap_or_default())
}

/// Parses a value of at most `bits` bits.
fn parse_value(field: &[u8], bits: u8) -> std::result::Result<u32, String> {
    let t = std::str::from_utf8(field).unwrap_or("").trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    }
    .map_err(|_| {
        format!(
            "{} is not an unsigned integer value",
            bloomlanes_input::shorten(field)
        )
    })?;
    let most = (1u64 << bits) - 1;
    if v > most {
        return Err(format!(
            "value {v} is wider than --value-bits {bits} (at most {most})"
        ));
    }
    Ok(v as u32)
}

/// Runs `build --kind spatial|retrieval`.
pub fn run(
    ctx: &Ctx,
    la: &LabelArgs,
    spatial: bool,
    inputs: &[PathBuf],
    opts: &InputOptions,
    builder: FilterBuilder,
    output: &Path,
) -> Result<ExitCode> {
    let start = Instant::now();
    let mut warnings = Warnings::default();
    let (filter, summaries) = if spatial {
        build_spatial(la, inputs, opts, &builder, &mut warnings)?
    } else {
        build_retrieval(la, inputs, opts, &builder)?
    };
    let seconds = start.elapsed().as_secs_f64();
    store::save_any(output, &filter)?;
    report(ctx, output, &filter, &summaries, seconds, &warnings)
}

fn only(v: bool, flag: &str, kind: &str) -> Result<()> {
    if v {
        return Err(Error::usage(format!(
            "{flag} does not apply to --kind {kind}"
        )));
    }
    Ok(())
}

/// Keys with their classes, read as `build --kind spatial` reads them.
pub struct SpatialInput {
    /// The keys (with the key type they were read as).
    pub keys: KeySet,
    /// Key `i`'s class number (1 = the first class named).
    pub classes: Vec<u16>,
    /// The class names by number (`names[0]` is class 1).
    pub names: Vec<String>,
    /// The cell width: given, or the narrowest that holds the classes.
    pub cell_bits: u32,
    /// What each input gave.
    pub summaries: Vec<InputSummary>,
}

/// Reads the keys and classes of `build --kind spatial` (a class column, or one input per
/// class), every class numbered from 1 in the order named (or first met).
pub fn read_spatial(
    la: &LabelArgs,
    inputs: &[PathBuf],
    opts: &InputOptions,
) -> Result<SpatialInput> {
    only(la.value_column.is_some(), "--value-column", "spatial")?;
    only(la.value_bits.is_some(), "--value-bits", "spatial")?;
    only(la.check_bits.is_some(), "--check-bits", "spatial")?;
    if let Some(b) = la.cell_bits.filter(|b| ![4, 8, 16].contains(b)) {
        return Err(Error::usage(format!(
            "--cell-bits {b}: spatial cells are 4, 8 or 16 bits"
        )));
    }
    let most = la.cell_bits.map_or(65535, |b| (1usize << b) - 1);
    let mut names = ClassNames::new(most, la.cell_bits);
    let from_files = !la.class.is_empty();
    if let Some(given) = &la.classes {
        if from_files {
            return Err(Error::usage(
                "--classes orders the classes of --class-column; with --class NAME=FILE the \
                 order is that of the --class options",
            ));
        }
        for n in given {
            names
                .number(n.as_bytes())
                .map_err(|e| Error::usage(format!("--classes: {e}")))?;
        }
        names.fix();
    }
    let (keys, classes, summaries) = if from_files {
        if !inputs.is_empty() {
            return Err(Error::usage(
                "with --class NAME=FILE the inputs are the --class files; give no other inputs",
            ));
        }
        let mut keys = KeySetBuilder::default();
        let (mut classes, mut summaries) = (Vec::new(), Vec::new());
        for spec in &la.class {
            let (name, file) = spec
                .split_once('=')
                .ok_or_else(|| Error::usage(format!("--class {spec:?}: give NAME=FILE")))?;
            let class = names
                .number(name.as_bytes())
                .map_err(|e| Error::usage(format!("--class {spec:?}: {e}")))?;
            let s = read_input(Path::new(file), opts, &mut keys)?;
            classes.resize(classes.len() + s.keys as usize, class);
            summaries.push(s);
        }
        let key_type = bloomlanes_input::one_key_type(&summaries)?;
        (keys.finish().with_key_type(key_type), classes, summaries)
    } else {
        let column = la.class_column.as_deref().ok_or_else(|| {
            Error::usage(
                "--kind spatial needs --class-column NAME (a CSV key column beside a class \
                 column) or --class NAME=FILE per class",
            )
        })?;
        let flag = "--class-column";
        let Pairs {
            keys,
            labels,
            summaries,
        } = pairs::read_pairs(inputs, opts, LabelColumn { name: column, flag }, &mut |f| {
            names.number(f).map(u32::from)
        })?;
        let mut classes: Vec<u16> = labels.into_iter().map(|c| c as u16).collect();
        names.renumber_numeric(&mut classes);
        (keys, classes, summaries)
    };
    let n = names.order().len();
    let cell_bits = match la.cell_bits {
        Some(b) => b,
        None => labels::cell_bits_for(n).expect("at most 65535 classes were taken"),
    };
    if n > most {
        return Err(Error::usage(format!(
            "{n} classes do not fit {cell_bits}-bit cells (at most {most}): give --cell-bits 8 \
             or 16"
        )));
    }
    Ok(SpatialInput {
        keys,
        classes,
        names: names.into_order(),
        cell_bits,
        summaries,
    })
}

fn build_spatial(
    la: &LabelArgs,
    inputs: &[PathBuf],
    opts: &InputOptions,
    builder: &FilterBuilder,
    warnings: &mut Warnings,
) -> Result<(AnyFilter, Vec<InputSummary>)> {
    let read = read_spatial(la, inputs, opts)?;
    // Sized for the distinct keys as a static build of the same keys is (issue #27: the same
    // flags give the same block count), not for the pairs read.
    let distinct = ops::stream::counted_capacity(ops::stream::keyset_distinct(&read.keys));
    let shape = builder
        .clone()
        .key_type(Some(read.keys.key_type()))
        .params(distinct)?;
    let f = labels::build_spatial(
        shape,
        read.cell_bits,
        &read.names,
        read.keys.keys(),
        &read.classes,
    )
    .map_err(|e| Error::usage(e.to_string()))?;
    if let Some(w) = case_twins(&read.names) {
        warnings.warn(w);
    }
    let conflicts = labels::class_conflicts(&f, read.keys.keys(), &read.classes);
    if let Some((low, high)) = conflicts.example {
        warnings.warn(conflict_warning(
            la,
            inputs,
            opts,
            &read,
            conflicts.keys,
            low,
            high,
        ));
    }
    Ok((AnyFilter::Spatial(f), read.summaries))
}

/// The warning for `keys` keys listed in two or more classes, naming one: listed at `low` in
/// its lowest class and at `high` in its highest (the one reported).
fn conflict_warning(
    la: &LabelArgs,
    inputs: &[PathBuf],
    opts: &InputOptions,
    read: &SpatialInput,
    keys: u64,
    low: usize,
    high: usize,
) -> String {
    let name = |i: usize| &read.names[usize::from(read.classes[i]) - 1];
    // One input per class: the input a record came from (the --class options in order), and
    // for text lines the line, found by reading it again.
    let file_of = |i: usize| {
        let mut before = 0u64;
        let found = read.summaries.iter().zip(&la.class).find(|(s, _)| {
            before += s.keys;
            (i as u64) < before
        });
        let Some((summary, (_, file))) =
            found.and_then(|(s, spec)| Some((s, spec.split_once('=')?)))
        else {
            return String::new();
        };
        let index = i as u64 - (before - summary.keys);
        match pairs::locate_line(Path::new(file), opts, index) {
            Some(l) => format!(" ({file}: line {l})"),
            None => format!(" ({file})"),
        }
    };
    let (low_at, high_at) = match &la.class_column {
        Some(column) => record_places(inputs, opts, column, (low, high)),
        None => (file_of(low), file_of(high)),
    };
    two_classes_warning(
        &read.keys.display(low),
        keys,
        (name(low), low_at),
        (name(high), high_at),
    )
}

/// The warning for `keys` keys listed in two or more classes, naming one, `key`, with its
/// lowest and highest class and where each listing is (" (FILE: line N)", or empty).
pub fn two_classes_warning(
    key: &str,
    keys: u64,
    low: (&str, String),
    high: (&str, String),
) -> String {
    let others = match keys {
        0 | 1 => String::new(),
        2 => " (and 1 other key)".to_string(),
        n => format!(" (and {} other keys)", n - 1),
    };
    format!(
        "key {key:?} is listed in class {}{} and in class {}{}{others}: the filter reports it as \
         {}, the higher-numbered class, never as {}",
        low.0, low.1, high.0, high.1, high.0, low.0,
    )
}

/// Reads the keys and values of `build --kind retrieval`, with the table's widths.
pub fn read_retrieval(
    la: &LabelArgs,
    inputs: &[PathBuf],
    opts: &InputOptions,
) -> Result<(Pairs, RetrievalSpec)> {
    only(la.class_column.is_some(), "--class-column", "retrieval")?;
    only(la.classes.is_some(), "--classes", "retrieval")?;
    only(!la.class.is_empty(), "--class", "retrieval")?;
    only(la.cell_bits.is_some(), "--cell-bits", "retrieval")?;
    let (Some(name), Some(bits)) = (la.value_column.as_deref(), la.value_bits) else {
        return Err(Error::usage(
            "--kind retrieval needs --value-column NAME|INDEX and --value-bits V, the bits of \
             each value, 1 to 32 (8 holds values up to 255, 16 up to 65535; the table's size \
             and its HDL banks follow from it, so it is not guessed from the data)",
        ));
    };
    let spec = RetrievalSpec::new(bits, la.check_bits.unwrap_or(8));
    if !(1..=32).contains(&bits) || spec.check_bits > 32 {
        return Err(Error::usage(format!(
            "--value-bits {bits} --check-bits {}: values are 1 to 32 bits, checks 0 to 32",
            spec.check_bits
        )));
    }
    let column = value_column(name);
    let read = pairs::read_pairs(inputs, opts, column, &mut |f| parse_value(f, bits))?;
    Ok((read, spec))
}

/// The value column as `read_pairs` takes it.
fn value_column(name: &str) -> LabelColumn<'_> {
    LabelColumn {
        name,
        flag: "--value-column",
    }
}

/// The retrieval table of `read` (a key repeated with two values refused, both places
/// named).
pub fn build_retrieval_of(
    la: &LabelArgs,
    inputs: &[PathBuf],
    opts: &InputOptions,
    builder: &FilterBuilder,
    read: &Pairs,
    spec: RetrievalSpec,
) -> Result<bloomlanes_host::bloomlanes_core::retrieval::RetrievalTable> {
    let column = value_column(la.value_column.as_deref().unwrap_or(""));
    let key_type = read.keys.key_type();
    let base = builder.params(1)?;
    labels::build_retrieval(base, key_type, spec, read.keys.keys(), &read.labels).map_err(|e| {
        match e {
            RetrievalError::ConflictingValues { index, first } => {
                conflict(inputs, opts, column, read, index, first)
            }
            e => Error::usage(e.to_string()),
        }
    })
}

fn build_retrieval(
    la: &LabelArgs,
    inputs: &[PathBuf],
    opts: &InputOptions,
    builder: &FilterBuilder,
) -> Result<(AnyFilter, Vec<InputSummary>)> {
    let (read, spec) = read_retrieval(la, inputs, opts)?;
    let t = build_retrieval_of(la, inputs, opts, builder, &read, spec)?;
    Ok((AnyFilter::Retrieval(t), read.summaries))
}

/// The error for key `index` repeating key `first` with another value: both places named.
fn conflict(
    inputs: &[PathBuf],
    opts: &InputOptions,
    column: LabelColumn<'_>,
    read: &Pairs,
    index: usize,
    first: usize,
) -> Error {
    let key = read.keys.display(index);
    let (v, w) = (read.labels[index], read.labels[first]);
    let mut places = pairs::locate_all(inputs, opts, column, &[index, first]).into_iter();
    let (here, there) = (places.next().flatten(), places.next().flatten());
    let what = |earlier: String| {
        format!(
            "{}: key {key:?} has value {v} here but value {w} {earlier}: a retrieval table maps \
             each key to one value",
            column.flag
        )
    };
    match (here, there) {
        (Some((path, line)), Some((p0, l0))) => Error::input(
            &path,
            Some(Location::Line(line)),
            what(format!("at {}: line {l0}", p0.display())),
        ),
        _ => Error::usage(what(format!(
            "in record {} (record {})",
            first + 1,
            index + 1
        ))),
    }
}

/// Writes the build report.
fn report(
    ctx: &Ctx,
    output: &Path,
    filter: &AnyFilter,
    summaries: &[InputSummary],
    seconds: f64,
    warnings: &Warnings,
) -> Result<ExitCode> {
    let p = *filter.params();
    let keys: u64 = summaries.iter().map(|s| s.keys).sum();
    let bytes = kinds::storage_bytes(filter);
    if ctx.json {
        return emit(&json!({
            "output": output.display().to_string(),
            "inputs": inputs_json(summaries),
            "keys": keys,
            "kind": kind_json(p.kind),
            "bytes": bytes,
            "seed": p.seed,
            "key_type": p.key_type.to_string(),
            "seconds": seconds,
            "labels": crate::stats::label_figures(filter),
            "warnings": warnings.json(),
        }))
        .map(|()| ExitCode::SUCCESS);
    }
    say(&format!(
        "built {} ({}): {keys} records ({}) from {}; {bytes} bytes, {seconds:.3} s",
        output.display(),
        p.kind,
        p.key_type,
        describe_inputs(summaries),
    ))?;
    say(&crate::stats::label_lines(filter).join("\n"))?;
    Ok(ExitCode::SUCCESS)
}
