//! `bloomlanes`: build, query, inspect, merge, verify, import/export and benchmark split-block
//! Bloom filters. A thin layer over the `bloomlanes_host` library: one file per command (its
//! arguments and its handler), shared argument groups in [`args`] and [`inputs`], output helpers
//! in [`output`], progress bars in [`progress`].

use std::process::ExitCode;

use bloomlanes_host::store::lock::{self, Wait};
use clap::{Parser, Subcommand};
use serde_json::json;

mod args;
mod bench;
mod build;
#[cfg(target_os = "linux")]
mod capture;
mod class_names;
mod classify;
mod classify_dir;
mod dedup;
mod delete;
mod export;
#[cfg(feature = "hdl")]
mod export_keys;
mod import;
mod inputs;
mod insert;
mod insert_classes;
mod kind;
mod labelled;
mod merge;
mod merge_cells;
mod opened;
mod output;
mod parquet;
mod progress;
mod query;
mod stats;
mod verify;

/// What the top-level help says after the commands: where the input formats are described, and
/// the exit status.
const TOOL_HELP: &str = "\
Input formats, compression, captures and key types: `bloomlanes help formats`.

Exit status: 0 success, 1 an input, file or runtime error, 2 a usage error; `query` follows \
grep: 0 when a key was listed (may be present; with --absent, definitely absent), 1 when none \
was, 2 on any error.";

/// Split-block Bloom filters on CPUs (scalar, SIMD), GPUs and FPGAs: build, query, inspect,
/// merge, verify, import/export and benchmark them. Start with `bloomlanes bench`.
#[derive(Parser, Debug)]
#[command(name = "bloomlanes", version, after_help = TOOL_HELP)]
struct Cli {
    /// Machine-readable JSON output on standard output.
    #[arg(long, global = true)]
    json: bool,
    /// No progress bars (they only ever appear on a terminal).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// When another process is writing the same filter file (or output), wait for it to finish
    /// (the default): every writer holds the file's lock, `FILE.lock`, for its whole
    /// read-modify-write, so concurrent inserts and deletes never lose each other's keys.
    #[arg(long, global = true, overrides_with = "no_wait")]
    wait: bool,
    /// Fail at once (exit 1, nothing written) instead of waiting for another writer.
    #[arg(long, global = true, overrides_with = "wait")]
    no_wait: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build a filter file from keys (text lines, a CSV column, binary u64, pcap/pcapng 5-tuples).
    #[command(after_long_help = inputs::FORMATS_POINTER)]
    Build(build::BuildArgs),
    /// Add keys to an existing filter file of any kind (replaced in one step, or written to -o).
    #[command(after_long_help = inputs::FORMATS_POINTER)]
    Insert(insert::InsertArgs),
    /// Delete keys from a counting filter file (--kind counting); keys certainly not in it (a
    /// counter at zero) are refused; a false positive cannot be told from a present key (see
    /// --help; --verify-with checks an authoritative list first).
    #[command(after_long_help = delete::long_help())]
    Delete(delete::DeleteArgs),
    /// Drop repeated lines of a stream: print each line not seen among the last N lines (or T
    /// seconds), with a sliding-window filter.
    Dedup(dedup::DedupArgs),
    /// Probe keys against a filter: print the keys that may be present, count them, or write a bitmap.
    ///
    /// Exit status, as grep's: 0 when a key may be present (with --absent: when one is
    /// definitely absent; --count and --bitmap count the same keys), 1 when none is, 2 on any
    /// error (usage, input or file).
    #[command(after_long_help = inputs::FORMATS_POINTER)]
    Query(query::QueryArgs),
    /// Classify every packet of a pcap/pcapng capture by its flow (5-tuple) or, with --by, its
    /// source or destination address: in the filter or not, or (spatial filter, retrieval
    /// table) its class or value. Writes the matching packets, a per-packet bitmap, counts.
    Classify(classify::ClassifyArgs),
    /// Classify the packets of a network interface live (Linux; needs root or CAP_NET_RAW,
    /// then drops privileges with --user) until --count, --duration or Ctrl-C.
    #[cfg(target_os = "linux")]
    Capture(capture::CaptureArgs),
    /// Show a filter's layout, size, fill ratio, estimated keys and expected false-positive rate.
    Stats(stats::StatsArgs),
    /// Combine compatible filters: union (OR) or intersection (AND).
    Merge(merge::MergeArgs),
    /// Import a Parquet bloom filter: from a column chunk of a .parquet file, or a bare Parquet filter.
    Import(import::ImportArgs),
    /// Export a filter: the Parquet split-block form, or HDL bank files plus the generated RTL.
    #[command(after_long_help = inputs::FORMATS_POINTER)]
    Export(export::ExportArgs),
    /// Bloom filters inside .parquet files: add them to a file, or ask which row groups of a
    /// dataset may hold given keys.
    Parquet(parquet::ParquetArgs),
    /// Run the same keys through every backend present and compare bits and answers.
    #[command(after_long_help = inputs::FORMATS_POINTER)]
    Verify(verify::VerifyArgs),
    /// Benchmark every backend present on built-in sample data (no arguments needed).
    Bench(bench::BenchArgs),
    /// How inputs are read: the --format values, compression, captures and key types (also
    /// `bloomlanes help formats`).
    #[command(long_about = inputs::formats_help())]
    Formats,
}

/// What every command needs from the global flags.
pub struct Ctx {
    /// `--json`: machine-readable output.
    pub json: bool,
    /// Progress bars wanted (not `--quiet`, not `--json`; drawn only on a terminal).
    pub progress: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    lock::set_wait(if cli.no_wait { Wait::Fail } else { Wait::Block });
    lock::set_waiting_notice(|busy| {
        eprintln!("bloomlanes: waiting: {busy} (--no-wait fails instead)");
    });
    let ctx = Ctx {
        json: cli.json,
        progress: !cli.quiet && !cli.json,
    };
    // `query` answers a question, so its exit status is grep's (see TOOL_HELP).
    let grep_like = matches!(cli.command, Command::Query(_));
    let result = match cli.command {
        Command::Build(a) => build::run(&ctx, a),
        Command::Insert(a) => insert::run(&ctx, a),
        Command::Delete(a) => delete::run(&ctx, a),
        Command::Dedup(a) => dedup::run(&ctx, a),
        Command::Query(a) => query::run(&ctx, a),
        Command::Classify(a) => classify::run(&ctx, a),
        #[cfg(target_os = "linux")]
        Command::Capture(a) => capture::run(&ctx, a),
        Command::Stats(a) => stats::run(&ctx, a),
        Command::Merge(a) => merge::run(&ctx, a),
        Command::Import(a) => import::run(&ctx, a),
        Command::Export(a) => export::run(&ctx, a),
        Command::Parquet(a) => parquet::run(&ctx, a),
        Command::Verify(a) => verify::run(&ctx, a),
        Command::Bench(a) => bench::run(&ctx, a),
        Command::Formats => inputs::run_formats(&ctx),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if output::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("bloomlanes: error: {e}");
            let code = if grep_like { 2 } else { e.exit_code() };
            if ctx.json {
                let _ = output::emit(&json!({"error": e.to_string(), "exit_code": code}));
            }
            ExitCode::from(code as u8)
        }
    }
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
