//! `bloomlanes classify`: per-packet verdicts for a pcap/pcapng capture (a file, `-`, or a
//! compressed stream): the matching (or not matching) packets written as a capture, a bitmap of
//! one bit per packet, and counts per flow and in total. Against a spatial filter or a
//! retrieval table each packet also gets its class or value, counted per label.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bloomlanes_host::kinds::labels::Labeller;
use bloomlanes_host::ops::classify::{
    self, EachPacket, Outputs, Packet, PacketVerdict, Select, Target, Totals,
};
use bloomlanes_host::store::Verify;
use bloomlanes_host::{outfile, Error, Result};
use bloomlanes_input::pcap::{format_tuple, PacketKey};
use bloomlanes_input::PipelineConfig;
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::opened::Opened;
use crate::output::{check_output, emit, say, with_output};
use crate::progress::{human_rate, Bar};
use crate::{classify_dir, Ctx};

/// Which packets `--write` gets.
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum SelectArg {
    /// Packets whose flow may be in the filter.
    #[default]
    Matching,
    /// Every other packet (flows not in the filter, and packets that are not IP).
    NotMatching,
}

impl From<SelectArg> for Select {
    fn from(s: SelectArg) -> Select {
        match s {
            SelectArg::Matching => Select::Matching,
            SelectArg::NotMatching => Select::NotMatching,
        }
    }
}

/// Which part of each packet is its key (`--by`).
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum ByArg {
    /// Its flow's 5-tuple (filters of key type `flow`: built from a capture or `--format flows`).
    #[default]
    Flow,
    /// Its source address (filters of key type `ip`, e.g. `build --key-type ip hosts.txt`).
    Src,
    /// Its destination address (filters of key type `ip`).
    Dst,
    /// Either address, as tcpdump's `host A` (filters of key type `ip`): a packet matches when
    /// its source or its destination is in the filter. Its class is the higher of the two
    /// (spatial filter); its value the source's when the source is in the table, else the
    /// destination's (retrieval table).
    Host,
}

impl From<ByArg> for PacketKey {
    fn from(b: ByArg) -> PacketKey {
        match b {
            ByArg::Flow => PacketKey::Flow,
            ByArg::Src => PacketKey::Src,
            ByArg::Dst => PacketKey::Dst,
            ByArg::Host => PacketKey::Host,
        }
    }
}

/// The outputs shared by `classify` and `capture`.
#[derive(Args, Debug)]
pub struct VerdictOutputs {
    /// Write the selected packets (see --select) to this capture file, in the input's format
    /// (pcap or pcapng; a live capture writes pcap) with its timestamps, link types and snap
    /// lengths, through a temporary file renamed into place on success. Against a spatial
    /// filter or retrieval table: a directory (made if missing) that gets every packet in one
    /// capture per class or value (`deny.pcap`, `7.pcapng`) and `absent` (--select is not
    /// used), all put in place only when the run succeeds (`capture`: when it stops).
    #[arg(short, long, value_name = "FILE|DIR")]
    pub write: Option<PathBuf>,
    /// Which packets --write gets.
    #[arg(long, value_enum, default_value = "matching")]
    pub select: SelectArg,
    /// Write one bit per packet (bit j of byte i answers packet 8i+j, set when its flow may be
    /// in the filter).
    #[arg(long, value_name = "FILE")]
    pub bitmap: Option<PathBuf>,
    /// Which part of each packet is looked up: its 5-tuple, or its source, destination or
    /// either address (a filter of key type `ip`, built e.g. with `build --key-type ip
    /// hosts.txt`).
    #[arg(long, value_enum, default_value = "flow")]
    pub by: ByArg,
    /// Count packets per flow (--json lists every flow; otherwise the 10 busiest are shown).
    #[arg(long)]
    pub flows: bool,
    /// One line per packet on standard output, in capture order: its number (from 0), capture
    /// time (seconds, with as many decimals as the capture's resolution: 6 for microseconds, 9
    /// for nanoseconds; "-" for a pcapng simple packet block, which has none), flow and verdict (match or no-match; a spatial
    /// filter's class, a retrieval table's value, or absent), tab-separated; with --json one
    /// JSON object per line (JSON Lines). The summary then goes to standard error.
    #[arg(long)]
    pub per_packet: bool,
}

/// Arguments of `classify`.
#[derive(Args, Debug)]
pub struct ClassifyArgs {
    /// The filter file (flow keys, e.g. built from a capture or with --format flows; with --by
    /// src|dst, IP addresses: --key-type ip).
    filter: PathBuf,
    /// The capture: pcap or pcapng ("-" reads standard input; gzip, zstd and xz are
    /// decompressed).
    capture: PathBuf,
    #[command(flatten)]
    outputs: VerdictOutputs,
    #[command(flatten)]
    input: CaptureArgs,
}

/// How `classify` reads its capture. Its keys are always the packets' flows or addresses
/// (`--by`), so the options other commands read keys with are refused by name rather than
/// ignored.
#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// Worker threads of the streaming pipeline [default: the cores available].
    #[arg(long)]
    threads: Option<usize>,
    /// Bytes per chunk of the streaming pipeline (tests cut records at every boundary with a few).
    #[arg(long, hide = true)]
    chunk_bytes: Option<usize>,
    #[arg(long, hide = true)]
    format: Option<String>,
    #[arg(long, hide = true)]
    csv_column: Option<String>,
    #[arg(long, hide = true)]
    no_header: bool,
    #[arg(long, hide = true)]
    delimiter: Option<String>,
    #[arg(long, hide = true)]
    key_type: Option<String>,
}

impl CaptureArgs {
    /// The pipeline's sizes, once no key-reading option was given (a usage error naming the
    /// first one: a capture is read as pcap or pcapng, its keys are flows).
    fn pipeline(&self) -> Result<PipelineConfig> {
        let format = self.format.as_deref();
        let given = [
            (
                "--format",
                format.is_some_and(|f| !["auto", "pcap"].contains(&f)),
            ),
            ("--csv-column", self.csv_column.is_some()),
            ("--no-header", self.no_header),
            ("--delimiter", self.delimiter.is_some()),
            (
                "--key-type",
                self.key_type.as_deref().is_some_and(|t| t != "flow"),
            ),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            let value = match *flag {
                "--format" => format.map(|f| format!(" {f}")),
                "--key-type" => self.key_type.as_ref().map(|t| format!(" {t}")),
                _ => None,
            };
            return Err(Error::usage(format!(
                "classify does not take {flag}{}: it reads a pcap or pcapng capture and its \
                 keys are the packets' flows (5-tuples); build the filter from a CSV with \
                 `bloomlanes build --format csv --csv-column N --key-type flow`",
                value.unwrap_or_default()
            )));
        }
        let mut p = match self.threads {
            Some(t) => PipelineConfig::with_threads(t),
            None => PipelineConfig::default(),
        };
        if let Some(b) = self.chunk_bytes {
            p = p.chunk_bytes(b);
        }
        Ok(p)
    }
}

/// What `classify` and `capture` say to the owner of a filter of another kind.
const CLASSIFY_HINT: &str = "it takes static filters (each packet matches or not), spatial \
                             filters (each packet's class) and retrieval tables (each packet's \
                             value); `bloomlanes export --static OUT.blf FILE` writes a counting \
                             or stable filter's projection as a static one";

/// The classification target of the filter `opened` from `path`, for `op` (`"classify packets
/// with"`, `"capture with"`): a static filter memory-mapped, a spatial filter or retrieval
/// table read whole and checked; any other kind is refused by naming it.
pub fn target<'a>(path: &'a Path, opened: &'a Opened, op: &'static str) -> Result<Target<'a>> {
    match opened {
        Opened::Static(f) => Ok(Target::Static(f)),
        Opened::Kind(f) => match Labeller::of(f) {
            Some(labeller) => Ok(Target::Labelled { path, labeller }),
            None => Err(Error::KindUnsupported {
                path: path.to_path_buf(),
                op,
                kind: f.params().kind.name().to_string(),
                hint: CLASSIFY_HINT,
            }),
        },
    }
}

/// The field that names a label in JSON: `class` (spatial) or `value` (retrieval).
fn label_field(l: &Labeller<'_>) -> &'static str {
    match l {
        Labeller::Spatial(_) => "class",
        Labeller::Retrieval(_) | Labeller::Counts(_) => "value",
    }
}

/// The per-label packet and byte counts (labels in order, then `absent`: no label, not IP or
/// cut short), as JSON.
pub fn labels_json(t: &Totals, l: &Labeller<'_>) -> Value {
    let field = label_field(l);
    let row = |name: String, c: classify::LabelCount| json!({field: name, "packets": c.packets, "bytes": c.bytes});
    let mut rows: Vec<Value> = (t.per_label.iter())
        .map(|(label, c)| row(l.show(label), c))
        .collect();
    rows.push(row("absent".into(), t.per_label.absent));
    Value::Array(rows)
}

/// The per-label counts, for people.
pub fn print_labels(t: &Totals, l: &Labeller<'_>) -> Result<()> {
    let field = label_field(l);
    let mut lines = Vec::new();
    if let Value::Array(rows) = labels_json(t, l) {
        for r in rows {
            lines.push(format!(
                "  {:<16} {:>12} packets {:>14} bytes",
                r[field].as_str().unwrap_or(""),
                r["packets"],
                r["bytes"]
            ));
        }
    }
    say(&lines.join("\n"))
}

/// Runs `outputs`' writers around `run`: each output through the atomic writer.
pub fn with_outputs<T>(
    o: &VerdictOutputs,
    run: impl FnOnce(Outputs<'_>) -> Result<T>,
) -> Result<T> {
    let select = Select::from(o.select);
    // Checked before any packet is read: a folder, FIFO or device is refused at once, and two
    // outputs cannot share standard output.
    for p in o.write.iter().chain(o.bitmap.iter()) {
        check_output(p)?;
    }
    if let (Some(p), Some(b)) = (&o.write, &o.bitmap) {
        if outfile::is_stdout(p) && outfile::is_stdout(b) {
            return Err(Error::usage(
                "-w - and --bitmap - cannot both write to standard output",
            ));
        }
    }
    match (&o.write, &o.bitmap) {
        (None, None) => run(Outputs {
            packets: None,
            bitmap: None,
            flows: o.flows,
            by: o.by.into(),
            by_label: None,
        }),
        (Some(p), None) => with_output(p, |w| {
            run(Outputs {
                packets: Some((w, select)),
                bitmap: None,
                flows: o.flows,
                by: o.by.into(),
                by_label: None,
            })
        }),
        (None, Some(b)) => with_output(b, |w| {
            run(Outputs {
                packets: None,
                bitmap: Some(w),
                flows: o.flows,
                by: o.by.into(),
                by_label: None,
            })
        }),
        (Some(p), Some(b)) => with_output(p, |pw| {
            with_output(b, |bw| {
                run(Outputs {
                    packets: Some((pw, select)),
                    bitmap: Some(bw),
                    flows: o.flows,
                    by: o.by.into(),
                    by_label: None,
                })
            })
        }),
    }
}

/// The per-flow counts, busiest first (all of them, or the first `limit`).
pub fn flows_json(t: &Totals, limit: Option<usize>) -> Value {
    let Some(flows) = &t.flows else {
        return Value::Null;
    };
    let mut v: Vec<_> = flows.iter().collect();
    v.sort_by(|a, b| {
        b.1.packets
            .cmp(&a.1.packets)
            .then(a.0.bytes().cmp(b.0.bytes()))
    });
    Value::Array(
        v.into_iter()
            .take(limit.unwrap_or(usize::MAX))
            .map(|(k, c)| {
                json!({"flow": format_tuple(k.bytes()), "packets": c.packets, "matched": c.matched})
            })
            .collect(),
    )
}

/// The totals as JSON fields.
pub fn totals_json(t: &Totals) -> Value {
    json!({
        "packets": t.packets,
        "matched": t.matched,
        "not_matched": t.packets - t.matched,
        "non_ip": t.non_ip,
        "malformed": t.malformed,
        "written": t.written,
        "flows_counted": t.flows.as_ref().map(|f| f.len()),
        "untracked_packets": t.untracked_packets,
        "warnings": t.warnings,
    })
}

/// The busiest flows, for people.
pub fn print_flows(t: &Totals) -> Result<()> {
    if let Value::Array(rows) = flows_json(t, Some(10)) {
        let n = t.flows.as_ref().map_or(0, |f| f.len());
        let mut lines = vec![format!("{n} flows; the busiest:")];
        for r in rows {
            lines.push(format!(
                "  {:>10} packets  {}  {}",
                r["packets"],
                if r["matched"] == true {
                    "match"
                } else {
                    "     "
                },
                r["flow"].as_str().unwrap_or("")
            ));
        }
        say(&lines.join("\n"))?;
    }
    Ok(())
}

/// One packet's verdict line: number, time, flow, verdict; tab-separated, or a JSON object.
fn packet_line(p: &PacketVerdict, labeller: Option<&Labeller<'_>>, json: bool) -> String {
    let time = p.time.map(|t| t.to_string());
    let flow = match p.packet {
        Packet::Flow(k) => format_tuple(k.bytes()),
        Packet::NotIp => "not IP".to_string(),
        Packet::Malformed => "cut short or malformed".to_string(),
    };
    let label = labeller.map(|l| p.label.map(|v| l.show(v)));
    if json {
        let mut v = json!({"index": p.index, "time": time, "match": p.matched});
        match p.packet {
            Packet::Flow(_) => v["flow"] = json!(flow),
            _ => {
                v["flow"] = Value::Null;
                v["reason"] = json!(flow);
            }
        }
        if let (Some(l), Some(shown)) = (labeller, &label) {
            v[label_field(l)] = match (l, p.label) {
                (Labeller::Spatial(_), _) | (_, None) => json!(shown),
                (_, Some(n)) => json!(n),
            };
        }
        return v.to_string();
    }
    let verdict = match label {
        Some(shown) => shown.unwrap_or_else(|| "absent".into()),
        None if p.matched => "match".into(),
        None => "no-match".into(),
    };
    format!(
        "{}\t{}\t{flow}\t{verdict}",
        p.index,
        time.as_deref().unwrap_or("-")
    )
}

impl VerdictOutputs {
    /// With --per-packet, standard output is the lines': `-w -` or `--bitmap -` is a usage error.
    pub fn check_per_packet(&self) -> Result<()> {
        if !self.per_packet {
            return Ok(());
        }
        for (flag, p) in [("-w", &self.write), ("--bitmap", &self.bitmap)] {
            if p.as_deref().is_some_and(outfile::is_stdout) {
                return Err(Error::usage(format!(
                    "--per-packet writes to standard output: {flag} - cannot share it"
                )));
            }
        }
        Ok(())
    }
}

/// How long a live capture's lines wait in the buffer at most (they are flushed at the first
/// packet after this long).
const LIVE_FLUSH: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs `run`; with `per_packet` (`--per-packet`), with each packet's verdict, handed to the
/// [`EachPacket`] it gets, written to standard output as one line ([`packet_line`]), without it
/// with `None`; `classify` and `capture` share it. `live`: lines reach standard output within
/// [`LIVE_FLUSH`] of the first waiting one (by the next packet's), not only when the buffer
/// fills. An error from `run` is the result, even when it stops the writing.
pub fn per_packet_lines<T>(
    per_packet: bool,
    labeller: Option<&Labeller<'_>>,
    json: bool,
    live: bool,
    run: impl FnOnce(Option<EachPacket<'_>>) -> Result<T>,
) -> Result<T> {
    if !per_packet {
        return run(None);
    }
    let mut result = None;
    outfile::write_stdout(|out| {
        let mut flushed = Instant::now();
        let mut line = |p: &PacketVerdict| {
            let stdout_err = |e| Error::io(Path::new("<stdout>"), "write", e);
            writeln!(out, "{}", packet_line(p, labeller, json)).map_err(stdout_err)?;
            if live && flushed.elapsed() >= LIVE_FLUSH {
                out.flush().map_err(stdout_err)?;
                flushed = Instant::now();
            }
            Ok(())
        };
        let r = run(Some(&mut line));
        let failed = r.is_err();
        result = Some(r);
        if failed {
            Err(std::io::Error::other("stopped"))
        } else {
            Ok(())
        }
    })
    .or_else(|e| match &result {
        Some(Err(_)) => Ok(()),
        _ => Err(e),
    })?;
    result.expect("the run reports")
}

/// Runs `classify`.
pub fn run(ctx: &Ctx, a: ClassifyArgs) -> Result<ExitCode> {
    let filter = Opened::open(&a.filter, Verify::Full)?;
    let target = target(&a.filter, &filter, "classify packets with")?;
    let labeller = match target {
        Target::Labelled { labeller, .. } => Some(labeller),
        Target::Static(_) => None,
    };
    let mut bar = Bar::new(ctx.progress);
    let cfg = a.input.pipeline()?;
    a.outputs.check_per_packet()?;
    let start = Instant::now();
    let run_all = |each: Option<EachPacket<'_>>| {
        let mut each = each;
        let go = |out: Outputs<'_>| {
            let each = each.as_mut().map(|e| &mut **e as EachPacket<'_>);
            classify::classify_each(target, &a.capture, &cfg, out, each, &mut |p| bar.update(p))
        };
        classify_dir::with_verdict_outputs(labeller.as_ref(), &a.outputs, go)
    };
    let per_packet = a.outputs.per_packet;
    let (totals, written) =
        per_packet_lines(per_packet, labeller.as_ref(), ctx.json, false, run_all)?;
    let seconds = start.elapsed().as_secs_f64();
    for w in &totals.warnings {
        eprintln!("bloomlanes: warning: {w}");
    }
    let rate = totals.packets as f64 / seconds.max(1e-9);
    if ctx.json {
        let mut v = totals_json(&totals);
        v["filter"] = json!(a.filter.display().to_string());
        v["capture"] = json!(a.capture.display().to_string());
        v["by"] = json!(PacketKey::from(a.outputs.by).name());
        v["seconds"] = json!(seconds);
        v["packets_per_second"] = json!(rate);
        v["bytes"] = json!(totals.bytes);
        if let Some(p) = &a.outputs.write {
            v["write"] = json!(p.display().to_string());
        }
        if labeller.is_some() && !written.is_empty() {
            v["files"] = classify_dir::files_json(&written);
        }
        if let Some(p) = &a.outputs.bitmap {
            v["bitmap"] = json!(p.display().to_string());
        }
        if a.outputs.flows {
            v["flows"] = flows_json(&totals, None);
        }
        if let Some(l) = &labeller {
            v["kind"] = json!(l.params().kind.name());
            v["per_label"] = labels_json(&totals, l);
        }
        emit(&v)?;
    } else {
        let mut line = format!(
            "{} packets: {} match, {} do not ({} not IP, {} cut short or malformed); {}",
            totals.packets,
            totals.matched,
            totals.packets - totals.matched,
            totals.non_ip,
            totals.malformed,
            human_rate(rate, true)
        );
        if let Some(p) = &a.outputs.write {
            line.push_str(&format!(
                "; {} packets written to {}",
                totals.written,
                p.display()
            ));
        }
        if let Some(p) = &a.outputs.bitmap {
            line.push_str(&format!("; bitmap written to {}", p.display()));
        }
        say(&line)?;
        if let Some(l) = &labeller {
            print_labels(&totals, l)?;
        }
        if a.outputs.flows {
            print_flows(&totals)?;
        }
    }
    std::io::stdout().flush().ok();
    Ok(ExitCode::SUCCESS)
}
