//! `bloomlanes dedup`: a streaming duplicate filter. Each line (a key: its bytes without the
//! `\n` or `\r\n`) is written out the first time it is seen among the last N lines (or within
//! the last T seconds of arrival), with a sliding-window filter in memory; a repeat within the
//! window is dropped. A packet capture (pcap or pcapng, recognised by its magic number) is read
//! packet by packet instead: each IP packet's 5-tuple is the key, and the flows seen first among
//! the last N packets are written as text (`src:port -> dst:port proto N`). A false positive drops a line that was not a repeat, at the rate the
//! window was sized for (--fpp); a repeat is never let through while it is inside the window.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bloomlanes_host::bloomlanes_core::{math, AnyFilter, KeyType, WindowFilter, WindowUnit};
use bloomlanes_host::input::source::{self, Body, Compression};
use bloomlanes_host::input::{self, pcap};
use bloomlanes_host::kinds::{ops, KindSpec};
use bloomlanes_host::{outfile, Error, FilterBuilder, Location, Result};
use bloomlanes_host::{InputFormat, InputOptions};
use clap::Args;
use serde_json::json;

use crate::args::{check_fpp, parse_layout, LayoutArg};
use crate::build::now_nanos;
use crate::kind::{kind_json, nanos};
use crate::output::{check_output, emit, say, stdout_err, with_output, with_stdout};
use crate::Ctx;

/// Arguments of `dedup`.
#[derive(Args, Debug)]
pub struct DedupArgs {
    /// Input files, read in order as one stream (none, or "-": standard input): text lines, or
    /// packet captures (pcap/pcapng: one key per IP packet, its 5-tuple).
    inputs: Vec<PathBuf>,
    /// Where to write the lines kept [default: standard output]; a file appears only once
    /// complete. Standard output holds only the lines: the report (with --json one JSON
    /// object, also for an error) goes to standard error then, and to standard output when
    /// the lines go to a file.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// A line is a repeat if it was seen among the last N lines.
    #[arg(long, value_name = "N", required_unless_present = "window_seconds")]
    window_keys: Option<u64>,
    /// A line is a repeat if it was seen in the last T seconds (arrival time; needs --capacity).
    #[arg(long, value_name = "T", conflicts_with = "window_keys")]
    window_seconds: Option<f64>,
    /// Lines expected per window, to size a time window.
    #[arg(long, value_name = "N")]
    capacity: Option<u64>,
    /// Generations that make up the window (one more holds the newest lines).
    #[arg(long, default_value_t = 4)]
    generations: u16,
    /// Rate at which a line seen for the first time is taken for a repeat and dropped.
    #[arg(long, default_value_t = 1e-4)]
    fpp: f64,
    /// Block layout (auto: the one that meets --fpp in the fewest bits).
    #[arg(long, default_value = "auto", value_parser = parse_layout)]
    layout: LayoutArg,
    /// Hash seed.
    #[arg(long, default_value = "0", value_parser = crate::args::parse_seed)]
    seed: u64,
    /// Write the repeats instead of the lines seen first.
    #[arg(long)]
    duplicates: bool,
}

/// What a run saw.
#[derive(Default)]
struct Counts {
    lines: u64,
    kept: u64,
    packets_skipped: u64,
}

/// Opens one input of the stream through the input pipeline's source (`-`, files, gzip, zstd
/// and xz undone), as `build` and `query` read theirs: a packet capture is read as packets,
/// text as lines, and what `--format auto` refuses (binary data of no known format, Parquet) is
/// refused here too, never deduplicated as text. Standard input and pipes are looked at with
/// what has arrived (a live stream is deduplicated as it comes, not after 64 KiB of it).
fn open_input(path: &Path) -> Result<(PathBuf, bool, Box<dyn BufRead>)> {
    let regular = path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let opened = if regular {
        source::open(path)?
    } else {
        let shown = source::shown_name(path);
        let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
            Box::new(io::stdin())
        } else {
            Box::new(std::fs::File::open(path).map_err(|e| Error::io(path, "open", e))?)
        };
        let mut r = BufReader::with_capacity(1 << 16, raw);
        let peek = r.fill_buf().map_err(|e| Error::io(&shown, "read", e))?;
        if Compression::detect(peek) != Compression::None {
            source::open_reader(&shown, Box::new(r))?
        } else {
            let head = peek.to_vec();
            let capture = input_kind(path, &head)?;
            return Ok((shown, capture, Box::new(r)));
        }
    };
    let capture = input_kind(&opened.path, &opened.head)?;
    let reader: Box<dyn BufRead> = match opened.body {
        Body::Mapped(map) => Box::new(io::Cursor::new(MappedBytes(map))),
        Body::Stream(r) => Box::new(BufReader::with_capacity(1 << 20, r)),
    };
    Ok((opened.shown, capture, reader))
}

/// Whether the input `path` whose first (decompressed) bytes are `head` is a packet capture
/// (else text lines), as `--format auto` tells; binary data of no known format is refused.
fn input_kind(path: &Path, head: &[u8]) -> Result<bool> {
    match input::detect(path, head, &InputOptions::default()) {
        // `detect`'s own advice names --format, which dedup does not take.
        Err(input::Error::Input { path, at, .. }) => Err(Error::input(
            &path,
            at,
            "holds binary data (a NUL byte) and is no capture or compressed stream known \
             here: dedup reads text lines or packet captures (pcap, pcapng), plain or gzip, \
             zstd or xz compressed",
        )),
        Err(e) => Err(e.into()),
        Ok(InputFormat::Pcap) => Ok(true),
        Ok(InputFormat::U64) => Err(Error::input(
            path,
            None,
            "named like binary u64 keys: dedup reads text lines or packet captures",
        )),
        Ok(_) => Ok(false),
    }
}

/// A mapped input's bytes, as a reader's buffer.
struct MappedBytes(std::sync::Arc<memmap2::Mmap>);

impl AsRef<[u8]> for MappedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Streams the inputs through the window, writing the lines wanted to `out`. An input error is
/// returned as itself; a write error as `out_err(e)`.
fn stream(
    a: &DedupArgs,
    inputs: &[PathBuf],
    window: &mut WindowFilter,
    timed: bool,
    out: &mut dyn Write,
    out_err: &dyn Fn(io::Error) -> Error,
) -> Result<Counts> {
    let mut counts = Counts::default();
    let mut line = Vec::with_capacity(256);
    let params = *window.params();
    for path in inputs {
        let (name, capture, mut r) = open_input(path)?;
        let name = name.as_path();
        if capture {
            if timed {
                return Err(Error::input(
                    name,
                    None,
                    "a packet capture is deduplicated over --window-keys packets (packet \
                     timestamps are not read for --window-seconds)",
                ));
            }
            let mut bytes = Vec::new();
            r.read_to_end(&mut bytes)
                .map_err(|e| Error::io(name, "read", e))?;
            let cap = pcap::parse(&bytes).map_err(|e| {
                Error::input_with(
                    name,
                    Some(Location::Byte(e.offset)),
                    format!("unreadable capture: {}", e.what),
                    e,
                )
            })?;
            counts.packets_skipped += cap.non_ip + cap.malformed;
            for t in &cap.tuples {
                let seen = ops::seen_then_insert(window, params.hash_key(t.as_slice()), 0);
                counts.lines += 1;
                if seen == a.duplicates {
                    counts.kept += 1;
                    writeln!(out, "{}", pcap::format_tuple(t)).map_err(out_err)?;
                }
            }
            continue;
        }
        loop {
            line.clear();
            let n = r
                .read_until(b'\n', &mut line)
                .map_err(|e| Error::io(name, "read", e))?;
            if n == 0 {
                break;
            }
            let mut key = line.as_slice();
            key = key.strip_suffix(b"\n").unwrap_or(key);
            key = key.strip_suffix(b"\r").unwrap_or(key);
            let now = if timed { now_nanos() } else { 0 };
            let seen = ops::seen_then_insert(window, params.hash_key(key), now);
            counts.lines += 1;
            if seen == a.duplicates {
                counts.kept += 1;
                out.write_all(&line).map_err(out_err)?;
            }
        }
    }
    Ok(counts)
}

/// Runs `dedup`.
pub fn run(ctx: &Ctx, a: DedupArgs) -> Result<ExitCode> {
    check_fpp(a.fpp)?;
    if let Some(o) = &a.output {
        check_output(o)?;
    }
    let (unit_window, timed) = match (a.window_keys, a.window_seconds) {
        (Some(0), _) => return Err(Error::usage("--window-keys must be at least 1")),
        (Some(n), _) => (n, false),
        (None, Some(t)) => (nanos(t, "--window-seconds")?, true),
        (None, None) => {
            return Err(Error::usage(
                "dedup needs --window-keys N or --window-seconds T",
            ))
        }
    };
    if a.generations == 0 {
        return Err(Error::usage("--generations must be at least 1"));
    }
    let spec = KindSpec::Window {
        generations: Some(a.generations),
        unit: if timed {
            WindowUnit::Nanos
        } else {
            WindowUnit::Keys
        },
        window: unit_window,
    };
    let builder = FilterBuilder::new()
        .fpp(a.fpp)
        .layout(a.layout.0)
        .seed(a.seed)
        .capacity(a.capacity)
        .key_type(Some(KeyType::Bytes))
        .kind(spec);
    let AnyFilter::Window(mut window) = builder.empty_any(unit_window)? else {
        unreachable!("a window spec makes a window filter");
    };
    let inputs = if a.inputs.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        a.inputs.clone()
    };
    let start = Instant::now();
    // Lines written to standard output mark it as carrying data: the report (and an error's
    // JSON) then goes to standard error, as for every command that writes data there.
    let counts = match &a.output {
        Some(path) if !outfile::is_stdout(path) => with_output(path, |w| {
            stream(&a, &inputs, &mut window, timed, w, &|e| {
                Error::io(path, "write", e)
            })
        })?,
        _ => with_stdout(|w| stream(&a, &inputs, &mut window, timed, w, &stdout_err))?,
    };
    let seconds = start.elapsed().as_secs_f64();
    let s = window.stats();
    let p = *window.params();
    // A time window's rate is that of the keys it was sized for per generation.
    let expected_fpr = match (timed, a.capacity) {
        (true, Some(c)) => math::window_false_positive_rate(
            p.layout,
            p.blocks,
            c.div_ceil(u64::from(a.generations)),
            a.generations,
        ),
        _ => s.expected_fpr,
    };
    // The report goes to standard output when the lines went to a file, else to standard
    // error (`emit` and `say` tell which).
    if ctx.json {
        emit(&json!({
            "lines": counts.lines,
            "packets_skipped": counts.packets_skipped,
            "kept": counts.kept,
            "dropped": counts.lines - counts.kept,
            "written": if a.duplicates { "duplicates" } else { "first seen" },
            "kind": kind_json(p.kind),
            "layout": p.layout.name(),
            "blocks": p.blocks,
            "bytes": s.bytes,
            "expected_fpr": expected_fpr,
            "seconds": seconds,
        }))?;
    } else {
        let what = if a.duplicates {
            "repeats written"
        } else {
            "first seen written"
        };
        let window = match (a.window_keys, a.window_seconds) {
            (Some(n), _) => format!("the last {n} lines"),
            (_, Some(t)) => format!("the last {t} s"),
            _ => String::new(),
        };
        say(&format!(
            "dedup: {} lines{}, {} {what}, {} dropped (repeats within {window}; {}, {} bytes, \
             false-positive rate at most {:.1e})",
            counts.lines,
            if counts.packets_skipped > 0 {
                format!(
                    " ({} packets not IP or cut short skipped)",
                    counts.packets_skipped
                )
            } else {
                String::new()
            },
            counts.kept,
            counts.lines - counts.kept,
            p.kind,
            s.bytes,
            expected_fpr
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
