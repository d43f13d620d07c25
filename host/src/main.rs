//! `bloomlanes`: build, query, inspect, merge, verify, import/export and benchmark split-block
//! Bloom filters. A thin layer over the `bloomlanes_host` library.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_hdl::{HdlConfig, KeyMode};
use bloomlanes_host::bench::{self, BenchConfig};
use bloomlanes_host::core::{Filter, Layout};
use bloomlanes_host::input::{read_inputs, InputSummary};
use bloomlanes_host::ops::{self, Stats};
use bloomlanes_host::parquet_io::{self, ColumnSelector};
use bloomlanes_host::store::{self, FilterFile};
use bloomlanes_host::verify;
use bloomlanes_host::{
    BackendChoice, Error, FilterBuilder, InputFormat, InputOptions, MergeOp, Result,
};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{json, Value};

const TUPLE_HELP: &str = "\
Packet captures (pcap or pcapng; Ethernet with VLAN tags, raw IP, loopback, Linux SLL/SLL2) give \
one key per distinct flow, its 5-tuple as bytes in network byte order:
  IPv4, 13 bytes: src addr (4) | dst addr (4) | src port (2) | dst port (2) | protocol (1)
  IPv6, 37 bytes: src addr (16) | dst addr (16) | src port (2) | dst port (2) | protocol (1)
Ports are those of TCP, UDP, UDP-Lite, SCTP and DCCP (zero for other protocols and for non-first \
fragments); the IPv6 protocol is the upper layer after extension headers. Packets that are not IP \
or are cut short are skipped and counted.

Keys hash alike across formats: a text line, a CSV field and a Parquet BYTE_ARRAY value with the \
same bytes are one key; a binary u64, a decimal line and a Parquet INT64 value with the same number \
are one key.";

/// Split-block Bloom filters on CPUs (scalar, SIMD), GPUs and FPGAs: build, query, inspect,
/// merge, verify, import/export and benchmark them. Start with `bloomlanes bench`.
#[derive(Parser, Debug)]
#[command(name = "bloomlanes", version)]
struct Cli {
    /// Machine-readable JSON output on standard output.
    #[arg(long, global = true)]
    json: bool,
    /// No progress bars (they only ever appear on a terminal).
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build a filter file from keys (text lines, a CSV column, binary u64, pcap/pcapng 5-tuples).
    #[command(after_long_help = TUPLE_HELP)]
    Build(BuildArgs),
    /// Probe keys against a filter: print the keys that may be present, count them, or write a bitmap.
    #[command(after_long_help = TUPLE_HELP)]
    Query(QueryArgs),
    /// Show a filter's layout, size, fill ratio, estimated keys and expected false-positive rate.
    Stats(StatsArgs),
    /// Combine compatible filters: union (OR) or intersection (AND).
    Merge(MergeArgs),
    /// Import a Parquet bloom filter: from a column chunk of a .parquet file, or a bare Parquet filter.
    Import(ImportArgs),
    /// Export a filter: the Parquet split-block form, or HDL bank files plus the generated RTL.
    Export(ExportArgs),
    /// Run the same keys through every backend present and compare bits and answers.
    #[command(after_long_help = TUPLE_HELP)]
    Verify(VerifyArgs),
    /// Benchmark every backend present on built-in sample data (no arguments needed).
    Bench(BenchArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendArg {
    /// GPU for large batches when present, else SIMD, else scalar.
    Auto,
    /// Portable scalar reference path.
    Scalar,
    /// Best SIMD path of this CPU.
    Simd,
    /// CUDA GPU (an error when none is present).
    Gpu,
}

impl From<BackendArg> for BackendChoice {
    fn from(b: BackendArg) -> Self {
        match b {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Scalar => BackendChoice::Scalar,
            BackendArg::Simd => BackendChoice::Simd,
            BackendArg::Gpu => BackendChoice::Gpu,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OpArg {
    /// OR: contains every key of every filter.
    Union,
    /// AND: contains every key common to all filters.
    Intersection,
}

/// A `--layout` value: `auto` (None) or a layout.
#[derive(Clone, Copy, Debug)]
struct LayoutArg(Option<Layout>);

fn parse_layout(s: &str) -> std::result::Result<LayoutArg, String> {
    if s == "auto" {
        return Ok(LayoutArg(None));
    }
    Layout::from_name(s)
        .map(|l| LayoutArg(Some(l)))
        .ok_or_else(|| format!("unknown layout {s:?} (expected auto, 8x32, 8x64, 16x32 or 16x64)"))
}

fn parse_delimiter(s: &str) -> std::result::Result<u8, String> {
    match s {
        "\\t" | "tab" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => Err(format!(
            "delimiter {s:?} must be one ASCII character (or \\t)"
        )),
    }
}

#[derive(Args, Debug)]
struct InputArgs {
    /// How to read the inputs.
    #[arg(long, value_enum, default_value = "auto")]
    format: InputFormat,
    /// CSV column to take keys from: a header name or a 0-based index [default: 0].
    #[arg(long, value_name = "NAME|INDEX")]
    csv_column: Option<String>,
    /// The CSV file has no header row.
    #[arg(long)]
    no_header: bool,
    /// CSV field delimiter [default: "," ("\t" for .tsv)].
    #[arg(long, value_parser = parse_delimiter)]
    delimiter: Option<u8>,
}

impl InputArgs {
    fn options(&self) -> InputOptions {
        InputOptions {
            format: self.format,
            csv_column: self.csv_column.clone(),
            csv_header: !self.no_header,
            csv_delimiter: self.delimiter,
        }
    }
}

#[derive(Args, Debug)]
struct BuildArgs {
    /// Input files ("-" reads standard input).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The filter file to write.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    input: InputArgs,
    /// Target false-positive rate [default: 0.01].
    #[arg(long, conflicts_with = "bits_per_key")]
    fpp: Option<f64>,
    /// Bits per key instead of a target rate.
    #[arg(long)]
    bits_per_key: Option<f64>,
    /// Size for this many keys [default: the number of keys read].
    #[arg(long)]
    capacity: Option<u64>,
    /// Block layout: auto picks the one that meets --fpp in the fewest bits (8x32 for --bits-per-key).
    #[arg(long, default_value = "auto", value_parser = parse_layout)]
    layout: LayoutArg,
    /// Hash seed (seed 0 with layout 8x32 is the Parquet filter, exportable with `export --parquet`).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Which backend inserts the keys.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

#[derive(Args, Debug)]
struct QueryArgs {
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
    /// Write the answers as a bitmap: bit j (LSB first) of byte i answers key 8i+j, in input order.
    #[arg(long, value_name = "FILE")]
    bitmap: Option<PathBuf>,
    /// Print the keys that are definitely absent instead of those that may be present.
    #[arg(long)]
    absent: bool,
    /// Which backend probes the keys.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

#[derive(Args, Debug)]
struct StatsArgs {
    /// The filter file.
    filter: PathBuf,
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// Filter files (at least two; all with the same layout, block count, hash and seed).
    #[arg(required = true, num_args = 2..)]
    filters: Vec<PathBuf>,
    /// The merged filter file to write.
    #[arg(short, long)]
    output: PathBuf,
    /// How to combine.
    #[arg(long, value_enum, default_value = "union")]
    op: OpArg,
}

#[derive(Args, Debug)]
struct ImportArgs {
    /// A .parquet file, or a bare Parquet bloom filter (Thrift header + bitset).
    source: PathBuf,
    /// The filter file to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Column path (a.b.c), leaf name or 0-based index [default: the first column with a bloom filter].
    #[arg(long)]
    column: Option<String>,
    /// Row group (0-based).
    #[arg(long, default_value_t = 0)]
    row_group: usize,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["parquet", "hdl"])))]
struct ExportArgs {
    /// The filter file.
    filter: PathBuf,
    /// Write the Parquet split-block form (layout 8x32, seed 0 only).
    #[arg(long, value_name = "FILE")]
    parquet: Option<PathBuf>,
    /// Write HDL bank files and the generated RTL into this directory.
    #[arg(long, value_name = "DIR")]
    hdl: Option<PathBuf>,
    /// With --hdl: also run synthesis (Yosys) when it is installed, and add its figures to the report.
    #[arg(long, requires = "hdl")]
    synth: bool,
    /// With --hdl: the RTL hashes fixed-width keys of this many bytes on chip (e.g. 8 for u64
    /// keys, 13 for IPv4 5-tuples, 37 for IPv6); without it, the ports take 64-bit hashes
    /// computed by the host.
    #[arg(long, requires = "hdl", value_name = "N")]
    key_bytes: Option<usize>,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// Input files with the keys (none: built-in sample keys).
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    /// Layout to check ("all" checks every layout).
    #[arg(long, default_value = "all")]
    layout: String,
    /// Number of sample keys when no input is given.
    #[arg(long, default_value_t = 100_000)]
    keys: usize,
    /// Target false-positive rate used for sizing.
    #[arg(long, default_value_t = 0.01)]
    fpp: f64,
    /// Hash seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Inserted (and as many absent) keys looked up in the RTL simulation, when a Verilog
    /// simulator is installed (0 skips it).
    #[arg(long, default_value_t = 64)]
    hdl_keys: usize,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Keys to insert.
    #[arg(long, default_value_t = 4 << 20)]
    keys: usize,
    /// Keys to screen (half of them present) [default: as many as --keys].
    #[arg(long)]
    queries: Option<usize>,
    /// Block layout.
    #[arg(long, default_value = "auto", value_parser = parse_layout)]
    layout: LayoutArg,
    /// Target false-positive rate.
    #[arg(long, default_value_t = 0.01)]
    fpp: f64,
    /// Backend to measure (auto: every backend present).
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

struct Ctx {
    json: bool,
    progress: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ctx = Ctx {
        json: cli.json,
        progress: !cli.quiet && !cli.json,
    };
    let result = match cli.command {
        Command::Build(a) => build(&ctx, a),
        Command::Query(a) => query(&ctx, a),
        Command::Stats(a) => stats(&ctx, a),
        Command::Merge(a) => merge(&ctx, a),
        Command::Import(a) => import(&ctx, a),
        Command::Export(a) => export(&ctx, a),
        Command::Verify(a) => verify_cmd(&ctx, a),
        Command::Bench(a) => bench_cmd(&ctx, a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("bloomlanes: error: {e}");
            if ctx.json {
                let _ = emit(&json!({"error": e.to_string(), "exit_code": e.exit_code()}));
            }
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

fn stdout_err(e: io::Error) -> Error {
    Error::io(std::path::Path::new("<stdout>"), "write", e)
}

fn emit(v: &Value) -> Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v).map_err(|e| stdout_err(e.into()))?;
    writeln!(out).map_err(stdout_err)
}

fn say(line: &str) -> Result<()> {
    writeln!(io::stdout().lock(), "{line}").map_err(stdout_err)
}

fn inputs_json(s: &[InputSummary]) -> Value {
    Value::Array(
        s.iter()
            .map(|i| {
                json!({"path": i.path.display().to_string(), "format": i.format,
                       "keys": i.keys, "skipped": i.skipped})
            })
            .collect(),
    )
}

fn describe_inputs(s: &[InputSummary]) -> String {
    s.iter()
        .map(|i| {
            let skipped = if i.skipped > 0 {
                format!(", {} skipped", i.skipped)
            } else {
                String::new()
            };
            format!(
                "{} ({}: {} keys{skipped})",
                i.path.display(),
                i.format,
                i.keys
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_fpp(fpp: f64) -> Result<()> {
    if !(fpp > 0.0 && fpp < 1.0) {
        return Err(Error::usage(format!(
            "--fpp {fpp} must be between 0 and 1 (exclusive)"
        )));
    }
    Ok(())
}

fn build(ctx: &Ctx, a: BuildArgs) -> Result<ExitCode> {
    let mut builder = FilterBuilder::new()
        .capacity(a.capacity)
        .layout(a.layout.0)
        .seed(a.seed)
        .backend(a.backend.into())
        .progress(ctx.progress);
    builder = match (a.fpp, a.bits_per_key) {
        (_, Some(b)) => builder.bits_per_key(b),
        (Some(r), None) => {
            check_fpp(r)?;
            builder.fpp(r)
        }
        (None, None) => builder,
    };
    if a.capacity == Some(0) {
        return Err(Error::usage("--capacity must be at least 1"));
    }
    let (keys, summaries) = read_inputs(&a.inputs, &a.input.options())?;
    let built = builder.build(&keys)?;
    store::save_filter(&a.output, &built.filter)?;
    let f = &built.filter;
    if ctx.json {
        emit(&json!({
            "output": a.output.display().to_string(),
            "inputs": inputs_json(&summaries),
            "keys": keys.len(),
            "layout": f.layout().name(),
            "blocks": f.blocks(),
            "bytes": f.byte_len(),
            "seed": f.seed(),
            "backend": built.backend,
            "seconds": built.seconds,
            "expected_fpr": f.expected_fpr(None),
        }))?;
    } else {
        say(&format!(
            "built {}: {} keys from {}; layout {}, {} blocks, {} bytes, expected false-positive rate {:.3e} (backend {})",
            a.output.display(),
            keys.len(),
            describe_inputs(&summaries),
            f.layout(),
            f.blocks(),
            f.byte_len(),
            f.expected_fpr(None),
            built.backend
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn query(ctx: &Ctx, a: QueryArgs) -> Result<ExitCode> {
    let filter = FilterFile::open(&a.filter)?;
    ops::check_hashable(&filter)?;
    let (keys, summaries) = read_inputs(&a.inputs, &a.input.options())?;
    let r = ops::query(&filter, &keys, a.backend.into(), ctx.progress)?;
    if let Some(path) = &a.bitmap {
        store::write_atomic(path, &ops::pack_bitmap(&r.answers))?;
    }
    let want = u8::from(!a.absent);
    let list = !a.count && a.bitmap.is_none();
    if ctx.json {
        let mut v = json!({
            "filter": a.filter.display().to_string(),
            "inputs": inputs_json(&summaries),
            "keys": keys.len(),
            "matches": r.matches,
            "absent": keys.len() as u64 - r.matches,
            "backend": r.backend,
            "seconds": r.seconds,
        });
        if let Some(p) = &a.bitmap {
            v["bitmap"] = json!(p.display().to_string());
        }
        if list {
            let shown: Vec<String> = (0..keys.len())
                .filter(|&i| r.answers[i] == want)
                .map(|i| keys.display(i))
                .collect();
            v[if a.absent {
                "absent_keys"
            } else {
                "matching_keys"
            }] = json!(shown);
        }
        emit(&v)?;
    } else if list {
        let mut out = io::BufWriter::new(io::stdout().lock());
        for i in 0..keys.len() {
            if r.answers[i] == want {
                writeln!(out, "{}", keys.display(i)).map_err(stdout_err)?;
            }
        }
        out.flush().map_err(stdout_err)?;
    } else {
        let mut line = format!(
            "{} of {} keys may be present ({} definitely absent)",
            r.matches,
            keys.len(),
            keys.len() as u64 - r.matches
        );
        if let Some(p) = &a.bitmap {
            line.push_str(&format!("; bitmap written to {}", p.display()));
        }
        say(&line)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn stats_json(path: &std::path::Path, s: &Stats, mapped: bool) -> Value {
    json!({
        "file": path.display().to_string(),
        "layout": s.params.layout.name(),
        "lanes": s.params.layout.lanes(),
        "word_bits": s.params.layout.word_bits(),
        "blocks": s.params.blocks,
        "bytes": s.bytes,
        "seed": s.params.seed,
        "hash": s.params.hash.name(),
        "recorded_keys": s.recorded_keys,
        "set_bits": s.ones,
        "fill_ratio": s.fill_ratio,
        "estimated_keys": s.estimated_keys,
        "expected_fpr": s.expected_fpr,
        "bits_per_key": s.bits_per_key,
        "parquet_compatible": s.parquet_compatible,
        "memory_mapped": mapped,
    })
}

fn stats(ctx: &Ctx, a: StatsArgs) -> Result<ExitCode> {
    let f = FilterFile::open(&a.filter)?;
    let s = ops::stats(&f);
    if ctx.json {
        emit(&stats_json(&a.filter, &s, f.is_mapped()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let opt = |v: Option<f64>, digits: usize| {
        v.map_or("unknown (saturated)".to_string(), |x| {
            format!("{x:.digits$}")
        })
    };
    let lines = [
        format!("file:               {}", a.filter.display()),
        format!(
            "layout:             {} ({} lanes x {}-bit words, {}-byte blocks)",
            s.params.layout,
            s.params.layout.lanes(),
            s.params.layout.word_bits(),
            s.params.layout.block_bytes()
        ),
        format!("blocks:             {}", s.params.blocks),
        format!("size:               {} bytes", s.bytes),
        format!(
            "hash:               {}, seed {}",
            s.params.hash, s.params.seed
        ),
        format!(
            "recorded keys:      {}",
            s.recorded_keys.map_or("unknown".into(), |k| k.to_string())
        ),
        format!("set bits:           {}", s.ones),
        format!("fill ratio:         {:.4}", s.fill_ratio),
        format!("estimated keys:     {}", opt(s.estimated_keys, 0)),
        format!("expected fpr:       {:.3e}", s.expected_fpr),
        format!(
            "bits per key:       {}",
            s.bits_per_key
                .map_or("n/a (no keys)".to_string(), |b| format!("{b:.2}"))
        ),
        format!(
            "parquet compatible: {}",
            if s.parquet_compatible { "yes" } else { "no" }
        ),
    ];
    say(&lines.join("\n"))?;
    Ok(ExitCode::SUCCESS)
}

fn merge(ctx: &Ctx, a: MergeArgs) -> Result<ExitCode> {
    let files = a
        .filters
        .iter()
        .map(|p| FilterFile::open(p))
        .collect::<Result<Vec<_>>>()?;
    let op = match a.op {
        OpArg::Union => MergeOp::Union,
        OpArg::Intersection => MergeOp::Intersection,
    };
    let merged = ops::merge(&files, op)?;
    store::save_filter(&a.output, &merged)?;
    let est = merged.estimated_keys();
    if ctx.json {
        emit(&json!({
            "output": a.output.display().to_string(),
            "op": match op { MergeOp::Union => "union", MergeOp::Intersection => "intersection" },
            "inputs": a.filters.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "layout": merged.layout().name(),
            "blocks": merged.blocks(),
            "fill_ratio": merged.fill_ratio(),
            "estimated_keys": est,
        }))?;
    } else {
        say(&format!(
            "merged {} filters ({}) into {}: layout {}, {} blocks, fill ratio {:.4}, about {} keys",
            files.len(),
            match op {
                MergeOp::Union => "union",
                MergeOp::Intersection => "intersection",
            },
            a.output.display(),
            merged.layout(),
            merged.blocks(),
            merged.fill_ratio(),
            est.map_or("unknown".into(), |e| format!("{e:.0}"))
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn import(ctx: &Ctx, a: ImportArgs) -> Result<ExitCode> {
    let sel = ColumnSelector {
        column: a.column.clone(),
        row_group: a.row_group,
    };
    let imp = parquet_io::import(&a.source, &sel)?;
    store::save_filter(&a.output, &imp.filter)?;
    let f: &Filter = &imp.filter;
    if ctx.json {
        emit(&json!({
            "source": a.source.display().to_string(),
            "output": a.output.display().to_string(),
            "column": imp.column,
            "physical_type": imp.physical_type,
            "row_group": imp.row_group,
            "layout": f.layout().name(),
            "blocks": f.blocks(),
            "bytes": f.byte_len(),
            "fill_ratio": f.fill_ratio(),
            "estimated_keys": f.estimated_keys(),
        }))?;
    } else {
        let from = match (&imp.column, imp.row_group) {
            (Some(c), Some(g)) => format!(
                "column {c} ({}) of row group {g} of {}",
                imp.physical_type.as_deref().unwrap_or("?"),
                a.source.display()
            ),
            _ => a.source.display().to_string(),
        };
        say(&format!(
            "imported the bloom filter of {from} into {}: {} blocks, {} bytes, fill ratio {:.4}",
            a.output.display(),
            f.blocks(),
            f.byte_len(),
            f.fill_ratio()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn export(ctx: &Ctx, a: ExportArgs) -> Result<ExitCode> {
    let file = FilterFile::open(&a.filter)?;
    let filter = file.to_filter();
    if let Some(out) = &a.parquet {
        let bytes = parquet_io::export(&filter)?;
        store::write_atomic(out, &bytes)?;
        if ctx.json {
            emit(
                &json!({"output": out.display().to_string(), "form": "parquet", "bytes": bytes.len()}),
            )?;
        } else {
            say(&format!(
                "wrote the Parquet bloom filter of {} to {} ({} bytes)",
                a.filter.display(),
                out.display(),
                bytes.len()
            ))?;
        }
    }
    if let Some(dir) = &a.hdl {
        let key = match a.key_bytes {
            Some(n) => KeyMode::Bytes(n),
            None => KeyMode::Prehashed,
        };
        let cfg = HdlConfig::for_filter(&filter, key);
        let summary = export_hdl(&cfg, &filter, dir, a.synth)?;
        let files: Vec<String> = summary
            .files
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        if ctx.json {
            emit(&json!({
                "output": dir.display().to_string(),
                "form": "hdl",
                "key": key.to_string(),
                "files": files,
                "report": summary.report.display().to_string(),
                "synth": summary.synth.as_ref().map(|f| json!({
                    "lut": f.lut, "ff": f.ff, "ramb36": f.ramb36, "ramb18": f.ramb18,
                    "lutram": f.lutram, "dsp": f.dsp,
                })),
                "synth_skipped": summary.synth_skipped,
            }))?;
        } else {
            let mut lines = vec![format!(
                "wrote the RTL and {} bank files of {} ({}, {}) to {}:",
                filter.layout().lanes(),
                a.filter.display(),
                filter.layout(),
                key,
                dir.display()
            )];
            lines.extend(files.iter().map(|f| format!("  {f}")));
            if let Some(f) = &summary.synth {
                lines.push(format!(
                    "synthesis: {} LUTs, {} FFs, {} RAMB36 + {} RAMB18, {} LUT RAM, {} DSP",
                    f.lut, f.ff, f.ramb36, f.ramb18, f.lutram, f.dsp
                ));
            }
            if let (true, Some(why)) = (a.synth, &summary.synth_skipped) {
                lines.push(format!("synthesis skipped: {why}"));
            }
            say(&lines.join("\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Exports the HDL files; a folder that does not exist yet is filled beside it and renamed into
/// place, so a failure leaves nothing behind.
fn export_hdl(
    cfg: &HdlConfig,
    filter: &Filter,
    dir: &std::path::Path,
    synth: bool,
) -> Result<bloomlanes_hdl::ExportSummary> {
    let hdl_err = |e: bloomlanes_hdl::HdlError| Error::Failed(format!("export --hdl: {e}"));
    if dir.exists() {
        if !dir.is_dir() {
            return Err(Error::input(dir, None, "exists and is not a directory"));
        }
        return bloomlanes_hdl::export(cfg, Some(filter), dir, synth).map_err(hdl_err);
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".bloomlanes-hdl-")
        .tempdir_in(parent)
        .map_err(|e| Error::io(dir, "create a temporary folder beside", e))?;
    let mut summary =
        bloomlanes_hdl::export(cfg, Some(filter), tmp.path(), synth).map_err(hdl_err)?;
    let staged = tmp.keep();
    std::fs::rename(&staged, dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        Error::io(dir, "rename the finished folder to", e)
    })?;
    let relocate = |p: &std::path::Path| match p.strip_prefix(&staged) {
        Ok(rest) => dir.join(rest),
        Err(_) => p.to_path_buf(),
    };
    summary.files = summary.files.iter().map(|p| relocate(p)).collect();
    summary.report = relocate(&summary.report);
    Ok(summary)
}

fn parse_layouts(s: &str) -> Result<Vec<Layout>> {
    if s == "all" {
        return Ok(Layout::ALL.to_vec());
    }
    Layout::from_name(s).map(|l| vec![l]).ok_or_else(|| {
        Error::usage(format!(
            "--layout {s:?}: expected all, 8x32, 8x64, 16x32 or 16x64"
        ))
    })
}

fn verify_cmd(ctx: &Ctx, a: VerifyArgs) -> Result<ExitCode> {
    check_fpp(a.fpp)?;
    let layouts = parse_layouts(&a.layout)?;
    let keys = if a.inputs.is_empty() {
        verify::sample_keyset(a.keys)
    } else {
        read_inputs(&a.inputs, &a.input.options())?.0
    };
    let report = verify::run(&keys, &layouts, a.fpp, a.seed, a.hdl_keys)?;
    if ctx.json {
        emit(&json!({
            "ok": report.ok(),
            "keys": keys.len(),
            "rows": report.rows.iter().map(|r| json!({
                "layout": r.layout.name(),
                "backend": r.backend,
                "keys": r.keys,
                "probes": r.probes,
                "identical": r.difference.is_none(),
                "difference": r.difference.as_ref().map(|d| d.to_string()),
            })).collect::<Vec<_>>(),
            "absent_backends": report.absent.iter().map(|(n, w)| json!({"backend": n, "why": w})).collect::<Vec<_>>(),
        }))?;
    } else {
        let mut lines = vec![format!(
            "verify: {} keys inserted and {} probed per layout, compared with the scalar reference",
            keys.len(),
            keys.len() * 2
        )];
        let mut last = None;
        for r in &report.rows {
            if last != Some(r.layout) && last.is_some() {
                lines.push(String::new());
            }
            last = Some(r.layout);
            lines.push(format!(
                "  {:<6} {:<30} {}",
                r.layout.name(),
                r.backend,
                match &r.difference {
                    None if r.backend.starts_with("hdl-sim") => {
                        format!("identical answers ({} lookups simulated)", r.probes)
                    }
                    None => "identical bits and answers".to_string(),
                    Some(d) => format!("DIFFERENT: {d}"),
                }
            ));
        }
        for (n, why) in &report.absent {
            lines.push(format!("  (not checked: {n}: {why})"));
        }
        lines.push(if report.ok() {
            "all backends agree".into()
        } else {
            "backends DISAGREE".into()
        });
        say(&lines.join("\n"))?;
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn rate(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.1} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0} ")
    }
}

fn bench_cmd(ctx: &Ctx, a: BenchArgs) -> Result<ExitCode> {
    check_fpp(a.fpp)?;
    if a.keys == 0 {
        return Err(Error::usage("--keys must be at least 1"));
    }
    let cfg = BenchConfig {
        keys: a.keys,
        queries: a.queries.unwrap_or(a.keys),
        layout: a.layout.0,
        fpp: a.fpp,
        backend: a.backend.into(),
    };
    let r = bench::run(&cfg, ctx.progress)?;
    if ctx.json {
        emit(&json!({
            "keys": r.keys,
            "queries": r.queries,
            "layout": r.layout.name(),
            "blocks": r.blocks,
            "bytes": r.bytes,
            "expected_fpr": r.expected_fpr,
            "rows": r.rows.iter().map(|b| json!({
                "backend": b.backend,
                "insert_keys_per_s": b.insert_keys_per_s,
                "query_keys_per_s": b.query_keys_per_s,
                "identical_bits": b.identical_bits,
                "identical_answers": b.identical_answers,
                "false_negatives": b.false_negatives,
                "false_positive_rate": b.false_positive_rate,
            })).collect::<Vec<_>>(),
            "absent_backends": r.absent.iter().map(|(n, w)| json!({"backend": n, "why": w})).collect::<Vec<_>>(),
        }))?;
    } else {
        let mut lines = vec![
            format!(
                "bloomlanes bench: {} sample keys inserted, {} screened (half present)",
                r.keys, r.queries
            ),
            format!(
                "filter: layout {}, {} blocks, {:.1} MiB, expected false-positive rate {:.3e}",
                r.layout,
                r.blocks,
                r.bytes as f64 / (1 << 20) as f64,
                r.expected_fpr
            ),
            String::new(),
            format!(
                "  {:<28} {:>16} {:>16} {:>10} {:>9}",
                "backend", "insert keys/s", "query keys/s", "fp rate", "same"
            ),
        ];
        for b in &r.rows {
            lines.push(format!(
                "  {:<28} {:>16} {:>16} {:>10.2e} {:>9}",
                b.backend,
                rate(b.insert_keys_per_s),
                rate(b.query_keys_per_s),
                b.false_positive_rate,
                if b.identical_bits && b.identical_answers && b.false_negatives == 0 {
                    "yes"
                } else {
                    "NO"
                }
            ));
        }
        for (n, why) in &r.absent {
            lines.push(format!("  {n:<28} not measured: {why}"));
        }
        say(&lines.join("\n"))?;
    }
    let bad = r
        .rows
        .iter()
        .any(|b| !b.identical_bits || !b.identical_answers || b.false_negatives > 0);
    Ok(if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
