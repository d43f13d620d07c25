//! Per-packet classification: for every packet of a pcap/pcapng stream (or of a live capture,
//! see [`crate::capture`]), whether its flow key is in a filter, and against a spatial filter or
//! a retrieval table also its class or value ([`Target::Labelled`]). No deduplication: each packet
//! is hashed and probed on its own, on every core, and the verdicts come back in capture order.
//!
//! Outputs, all optional: the selected packets (matching, or not matching) written as a capture
//! of the input's own format with its timestamps, link types and snap lengths; one bit per
//! packet (LSB first, set when the packet's flow may be in the filter); counts per flow.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

pub use super::classifier::{Classifier, ClassifyScratch};
pub use super::label_counts::{LabelCount, LabelCounts};
use super::label_writers::{runs, Dest, LabelFiles, Rec, Run};
use super::packet_verdicts::{ng_records, packet_verdicts, walked_frames};
pub use super::packet_verdicts::{EachPacket, Packet, PacketVerdict, Timestamp, Verdicts};
use super::stream::BitWriter;
use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Result};
use crate::input::chunk::Chunk;
use crate::input::pcap::{self, PacketKey, RecordWalk, IPV6_TUPLE_LEN};
use crate::input::{pipeline, source, speculate, CapturePlan, PipelineConfig};
use crate::kinds::labels::Labeller;
use crate::store::FilterFile;

/// Which packets go to the packet output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Select {
    /// Packets whose flow may be in the filter.
    #[default]
    Matching,
    /// All other packets (flows not in the filter, and packets with no flow key: not IP, or cut
    /// short).
    NotMatching,
}

/// Flows counted at most (a bound on the per-flow table's memory, about 100 bytes a flow);
/// packets of further flows are counted in [`Totals::untracked_packets`].
pub const MAX_FLOWS: usize = 1 << 20;

/// A flow key as a map key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    bytes: [u8; IPV6_TUPLE_LEN],
    len: u8,
}

impl FlowKey {
    pub(super) fn new(k: &[u8]) -> FlowKey {
        let mut bytes = [0u8; IPV6_TUPLE_LEN];
        bytes[..k.len()].copy_from_slice(k);
        FlowKey {
            bytes,
            len: k.len() as u8,
        }
    }

    /// The key's bytes (13 for IPv4, 37 for IPv6).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// Packets of one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCount {
    /// Packets seen.
    pub packets: u64,
    /// Whether the flow may be in the filter.
    pub matched: bool,
}

/// What a classification counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Packets read.
    pub packets: u64,
    /// Packets whose flow may be in the filter.
    pub matched: u64,
    /// Packets that are not IP.
    pub non_ip: u64,
    /// Packets whose headers are cut short or malformed.
    pub malformed: u64,
    /// Packets written to the packet output.
    pub written: u64,
    /// Per-flow counts, when asked for.
    pub flows: Option<HashMap<FlowKey, FlowCount>>,
    /// Packets of flows beyond [`MAX_FLOWS`], not in `flows`.
    pub untracked_packets: u64,
    /// Bytes of capture read.
    pub bytes: u64,
    /// Warnings (a truncated last record).
    pub warnings: Vec<String>,
    /// Packets and bytes per class or value (a labelled target only; empty otherwise).
    pub per_label: LabelCounts,
}

impl Totals {
    /// Adds `other`'s counts (not its flows).
    pub fn add_counts(&mut self, o: &Totals) {
        self.packets += o.packets;
        self.matched += o.matched;
        self.non_ip += o.non_ip;
        self.malformed += o.malformed;
        self.per_label.merge(&o.per_label);
    }

    /// Merges a chunk's flow table.
    fn merge_flows(&mut self, flows: HashMap<FlowKey, FlowCount>) {
        let Some(all) = self.flows.as_mut() else {
            return;
        };
        for (k, c) in flows {
            if let Some(e) = all.get_mut(&k) {
                e.packets += c.packets;
            } else if all.len() < MAX_FLOWS {
                all.insert(k, c);
            } else {
                self.untracked_packets += c.packets;
            }
        }
    }
}

/// What packets are classified against.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// A static filter, memory-mapped: a yes/no verdict per packet.
    Static(&'a FilterFile),
    /// A spatial filter or retrieval table, read whole from the file `path`: each packet's class
    /// or value, and per-label counts.
    Labelled {
        /// The file it was read from (for messages).
        path: &'a Path,
        /// What answers the keys.
        labeller: Labeller<'a>,
    },
}

impl<'a> From<&'a FilterFile> for Target<'a> {
    fn from(f: &'a FilterFile) -> Target<'a> {
        Target::Static(f)
    }
}

/// Where a classification's outputs go.
#[derive(Default)]
pub struct Outputs<'w> {
    /// The selected packets, as a capture of the input's format.
    pub packets: Option<(&'w mut dyn Write, Select)>,
    /// One bit per packet.
    pub bitmap: Option<&'w mut dyn Write>,
    /// Which part of each packet is its key (default: its 5-tuple).
    pub by: PacketKey,
    /// Count packets per flow.
    pub flows: bool,
    /// Every packet written to the file of its label (a labelled target; `packets` unused).
    pub by_label: Option<&'w mut LabelFiles>,
}

struct ChunkVerdicts {
    verdicts: Verdicts,
    /// Byte ranges of the chunk to write (runs of selected or labelled records, kept blocks).
    runs: Vec<Run>,
    /// Each packet's verdict (when asked for), numbered within the chunk.
    packets: Vec<PacketVerdict>,
}

/// Classifies every packet of the capture at `path` (`-`: standard input; gzip, zstd and xz
/// are undone) against `filter`.
pub fn classify<'a>(
    target: impl Into<Target<'a>>,
    path: &Path,
    cfg: &PipelineConfig,
    out: Outputs<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Totals> {
    classify_each(target, path, cfg, out, None, progress)
}

/// [`classify`], and each packet's verdict handed to `each` in capture order (numbered over
/// the whole capture); an error from `each` ends the run with it.
pub fn classify_each<'a>(
    target: impl Into<Target<'a>>,
    path: &Path,
    cfg: &PipelineConfig,
    out: Outputs<'_>,
    mut each: Option<EachPacket<'_>>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Totals> {
    let per_packet = each.is_some();
    let classifier = Classifier::new(target, out.by, out.flows)?;
    let input = source::open(path)?;
    let shown = input.shown.clone();
    let head = input.head.clone();
    let bytes_total = if input.compression == source::Compression::None {
        input.disk_len.unwrap_or(0)
    } else {
        0
    };
    let CapturePlan {
        start,
        cutter,
        header: file_header,
    } = CapturePlan::new(&shown, &head)?;
    let mut totals = Totals {
        flows: out.flows.then(HashMap::new),
        ..Totals::default()
    };
    totals
        .warnings
        .extend(classifier.key_type_note().map(String::from));
    if let Some(h) = file_header {
        if h.snaplen != 0 && h.snaplen < pcap::min_headers(h.linktype) {
            totals.warnings.push(format!(
                "{}: byte offset 16: snap length {} is shorter than the link, IPv4 and port headers ({} bytes); packets cut short have no flow key and never match",
                shown.display(),
                h.snaplen,
                pcap::min_headers(h.linktype)
            ));
        }
    }
    let by_label = out.by_label.is_some();
    let mut labels_out = out.by_label;
    let select = out.packets.as_ref().map(|(_, s)| *s).filter(|_| !by_label);
    let (mut packets_out, mut bitmap_out) = (out.packets.map(|(w, _)| w), out.bitmap);
    if let (Some(w), Some(_)) = (packets_out.as_mut(), file_header) {
        w.write_all(&head[..24]).map_err(write_err)?;
    }
    if let Some(f) = labels_out.as_mut() {
        f.begin(file_header.map(|_| &head[..24]))?;
    }
    let mut bits = BitWriter::default();
    // A chunk's verdicts, runs to write and per-packet verdicts from its records (`recs`, put
    // back in the scratch for the next chunk).
    let verdicts_of =
        |chunk: &Chunk, recs: Vec<Rec>, verdicts: Verdicts, scratch: &mut ClassifyScratch| {
            let runs = match (select, by_label) {
                (None, false) => Vec::new(),
                (sel, _) => runs(&recs, &verdicts, sel),
            };
            let packets = match per_packet {
                true => packet_verdicts(chunk, &recs, file_header, &verdicts),
                false => Vec::new(),
            };
            scratch.recs = recs;
            Ok(ChunkVerdicts {
                verdicts,
                runs,
                packets,
            })
        };
    // Classic pcap: the records classified as the walk reads them (speculation's walk, which
    // checks each header, or the whole chunk's).
    let linktype = file_header.map_or(0, |h| h.linktype);
    let work_walk = |chunk: &Chunk, walk: &mut RecordWalk<'_>, scratch: &mut ClassifyScratch| {
        let mut recs = std::mem::take(&mut scratch.recs);
        recs.clear();
        let verdicts = classifier.classify(walked_frames(walk, linktype, &mut recs), scratch);
        verdicts_of(chunk, recs, verdicts, scratch)
    };
    let work = |chunk: &Chunk, scratch: &mut ClassifyScratch| -> Result<ChunkVerdicts> {
        if let Some(h) = file_header {
            return work_walk(
                chunk,
                &mut RecordWalk::new(chunk.bytes(), h.big_endian),
                scratch,
            );
        }
        let mut recs = std::mem::take(&mut scratch.recs);
        recs.clear();
        ng_records(chunk, &mut recs);
        let bytes = chunk.bytes();
        let verdicts = classifier.classify(
            recs.iter()
                .filter(|r| r.packet)
                .map(|r| (r.linktype, &bytes[r.frame.0 as usize..r.frame.1 as usize])),
            scratch,
        );
        verdicts_of(chunk, recs, verdicts, scratch)
    };
    let matching = select == Some(Select::Matching);
    let mut consume = |chunk: &Chunk, cv: ChunkVerdicts| -> Result<()> {
        classifier.check_unchanged()?;
        let v = cv.verdicts;
        let bytes = chunk.bytes();
        if let Some(f) = labels_out.as_mut() {
            for r in &cv.runs {
                match r.dest {
                    Dest::Label(l) => f.packets(l, &bytes[r.start..r.end])?,
                    _ => f.block(&bytes[r.start..r.end])?,
                }
            }
            totals.written += v.totals.packets;
        } else if let Some(w) = packets_out.as_mut() {
            for r in &cv.runs {
                w.write_all(&bytes[r.start..r.end]).map_err(write_err)?;
            }
            totals.written += if matching {
                v.totals.matched
            } else {
                v.totals.packets - v.totals.matched
            };
        }
        if let Some(w) = bitmap_out.as_mut() {
            bits.write(*w, &v.bits, v.totals.packets as usize)
                .map_err(write_err)?;
        }
        if let Some(each) = each.as_mut() {
            for p in &cv.packets {
                each(&PacketVerdict {
                    index: totals.packets + p.index,
                    ..*p
                })?;
            }
        }
        totals.add_counts(&v.totals);
        totals.merge_flows(v.flows);
        progress(Progress::stream(
            Doing::Classify,
            totals.packets,
            chunk.offset + chunk.bytes().len() as u64,
            bytes_total,
        ));
        Ok(())
    };
    // A mapped classic pcap file on several cores: records found and classified in parallel by
    // speculation (see `input::speculate`); the ordinary pipeline takes over where it stops.
    let mut start = start;
    if let (Some(h), source::Body::Mapped(map)) = (file_header, &input.body) {
        let map = std::sync::Arc::clone(map);
        start = speculate::pcap_ranges(
            &map,
            start as usize,
            h.big_endian,
            cfg,
            &ClassifyScratch::default,
            &work_walk,
            &mut consume,
        )? as u64;
    }
    let end = pipeline::run(
        input,
        start,
        cutter,
        cfg,
        &ClassifyScratch::default,
        &work,
        &mut consume,
    )?;
    if let Some(w) = bitmap_out.as_mut() {
        bits.finish(*w).map_err(write_err)?;
    }
    totals.bytes = end.bytes;
    totals.warnings.extend(end.warnings);
    progress(Progress::stream(Doing::Classify, totals.packets, end.bytes, bytes_total).finished());
    Ok(totals)
}

/// A failed write to an output (carried out of the atomic writer by the caller).
fn write_err(e: io::Error) -> Error {
    Error::io(Path::new("<output>"), "write", e)
}
