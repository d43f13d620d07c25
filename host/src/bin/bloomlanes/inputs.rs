//! The input arguments shared by `build`, `query` and `verify` (`--format` and the CSV options),
//! and how the inputs read are reported.

use bloomlanes_host::input::{InputSummary, PipelineConfig};
use bloomlanes_host::{InputFormat, InputOptions};
use clap::Args;
use serde_json::{json, Value};

/// The long help of the commands that read keys.
pub const TUPLE_HELP: &str = "\
Inputs are streamed (memory stays bounded whatever their size): files, \"-\" for standard input, \
gzip, zstd and xz compressed files or streams (told by their magic bytes). An input whose format \
cannot be told (binary data that is no capture or compressed stream) is an error: give --format.

Packet captures (pcap or pcapng; Ethernet with VLAN tags, raw IP, loopback, Linux SLL/SLL2) give \
one key per IP packet (use `classify` for per-packet verdicts and per-flow counts), its flow's \
5-tuple as bytes in network byte order:
  IPv4, 13 bytes: src addr (4) | dst addr (4) | src port (2) | dst port (2) | protocol (1)
  IPv6, 37 bytes: src addr (16) | dst addr (16) | src port (2) | dst port (2) | protocol (1)
Ports are those of TCP, UDP, UDP-Lite, SCTP and DCCP (zero for other protocols and for non-first \
fragments); the IPv6 protocol is the upper layer after extension headers. Packets that are not IP \
or are cut short are skipped and counted; a truncated last record is a warning. --format flows \
reads flows as text, one per line: 10.0.0.1:1234>10.0.0.2:80/tcp, [2001:db8::1]:53>[2001:db8::2]:53/udp.

Keys hash alike across formats: a text line, a CSV field and a Parquet BYTE_ARRAY value with the \
same bytes are one key; a binary u64, a decimal line and a Parquet INT64 value with the same number \
are one key.";

fn parse_delimiter(s: &str) -> std::result::Result<u8, String> {
    match s {
        "\\t" | "tab" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => Err(format!(
            "delimiter {s:?} must be one ASCII character (or \\t)"
        )),
    }
}

/// How to read the input files.
#[derive(Args, Debug)]
pub struct InputArgs {
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
    /// Worker threads of the streaming pipeline [default: the cores available].
    #[arg(long)]
    threads: Option<usize>,
    /// Bytes per chunk of the streaming pipeline (tests cut records at every boundary with a few).
    #[arg(long, hide = true)]
    chunk_bytes: Option<usize>,
}

impl InputArgs {
    /// The library's reading options.
    pub fn options(&self) -> InputOptions {
        InputOptions {
            format: self.format,
            csv_column: self.csv_column.clone(),
            csv_header: !self.no_header,
            csv_delimiter: self.delimiter,
            field_parser: None,
            pipeline: self.pipeline(),
        }
    }

    /// The pipeline's sizes.
    pub fn pipeline(&self) -> PipelineConfig {
        let mut p = match self.threads {
            Some(t) => PipelineConfig::with_threads(t),
            None => PipelineConfig::default(),
        };
        if let Some(b) = self.chunk_bytes {
            p = p.chunk_bytes(b);
        }
        p
    }
}

/// Prints the inputs' warnings on standard error.
pub fn warn_inputs(s: &[InputSummary]) {
    for i in s {
        for w in &i.warnings {
            eprintln!("bloomlanes: warning: {w}");
        }
    }
}

/// The inputs read, as JSON.
pub fn inputs_json(s: &[InputSummary]) -> Value {
    Value::Array(
        s.iter()
            .map(|i| {
                json!({"path": i.path.display().to_string(), "format": i.format,
                       "compression": i.compression, "keys": i.keys, "skipped": i.skipped,
                       "bytes": i.bytes, "warnings": i.warnings})
            })
            .collect(),
    )
}

/// The inputs read, for people: `keys.txt (lines: 5000 keys), cap.pcap (pcap: 12 keys, 3 skipped)`.
pub fn describe_inputs(s: &[InputSummary]) -> String {
    s.iter()
        .map(|i| {
            let skipped = if i.skipped > 0 {
                format!(", {} skipped", i.skipped)
            } else {
                String::new()
            };
            let format = if i.compression == "none" {
                i.format.to_string()
            } else {
                format!("{}, {}", i.format, i.compression)
            };
            format!("{} ({format}: {} keys{skipped})", i.path.display(), i.keys)
        })
        .collect::<Vec<_>>()
        .join(", ")
}
