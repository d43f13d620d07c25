//! The records of a capture chunk as classification walks them, and each packet's verdict as
//! one item ([`PacketVerdict`]) for `classify --per-packet`: its number in the capture, its
//! timestamp, its flow and its verdict (match, class or value), handed on in capture order;
//! [`Verdicts`], those of a chunk's packets.

use std::collections::HashMap;

use super::classify::{FlowCount, FlowKey, Totals};
use super::label_writers::Rec;
use crate::input::chunk::Chunk;
pub use crate::input::pcap::Timestamp;
use crate::input::pcap::{self, FileHeader, Flow, NgBlock, RecordWalk, IPV6_TUPLE_LEN};

/// What a packet is, for its verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// An IP packet with this flow key (5-tuple).
    Flow(FlowKey),
    /// Not an IP packet.
    NotIp,
    /// Headers cut short or malformed.
    Malformed,
}

/// One packet's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketVerdict {
    /// The packet's number in the capture, from 0 (as bit `index` of `--bitmap`).
    pub index: u64,
    /// Its capture time, with its capture's resolution (`None`: a pcapng simple packet block,
    /// which carries none).
    pub time: Option<Timestamp>,
    /// Its flow key, or why it has none.
    pub packet: Packet,
    /// Whether its flow may be in the filter (a labelled target: whether it has a label).
    pub matched: bool,
    /// Its class or value (a labelled target, when it has one).
    pub label: Option<u32>,
}

/// The verdicts of a run of packets.
#[derive(Debug, Default)]
pub struct Verdicts {
    /// One bit per packet, set when its flow may be in the filter.
    pub bits: Vec<u64>,
    /// Counts.
    pub totals: Totals,
    /// Per-flow counts of this run (when asked for).
    pub flows: HashMap<FlowKey, FlowCount>,
    /// Each packet's class or value (a labelled target only; 0 where it has none).
    pub labels: Vec<u32>,
}

impl Verdicts {
    /// Whether packet `i` matched (has a label, against a labelled target).
    pub fn matched(&self, i: usize) -> bool {
        (self.bits[i / 64] >> (i % 64)) & 1 == 1
    }

    /// Packet `i`'s class or value: `None` when it has none, or the target gives no labels.
    pub fn label(&self, i: usize) -> Option<u32> {
        self.labels.get(i).copied().filter(|_| self.matched(i))
    }
}

/// What takes each packet's verdict, in capture order (an error ends the run with it).
pub type EachPacket<'a> = &'a mut dyn FnMut(&PacketVerdict) -> crate::error::Result<()>;

/// The frames of the classic pcap records `walk` yields, as (link type, frame) for
/// classification, each record put in `recs` as it goes by (frame ranges relative to the walk's
/// bytes): one read of each record header serves both.
pub(super) fn walked_frames<'r, 'a: 'r>(
    walk: &'r mut RecordWalk<'a>,
    linktype: u32,
    recs: &'r mut Vec<Rec>,
) -> impl Iterator<Item = (u32, &'a [u8])> + 'r {
    walk.map(move |(at, rec)| {
        let (start, end) = (at as u32, (at + rec.len()) as u32);
        recs.push(Rec {
            start,
            end,
            frame: (start + 16, end),
            linktype,
            packet: true,
        });
        (linktype, &rec[16..])
    })
}

/// Collects the blocks of a pcapng `chunk` into `recs`, frame ranges relative to the chunk.
pub(super) fn ng_records(chunk: &Chunk, recs: &mut Vec<Rec>) {
    let bytes = chunk.bytes();
    let base = bytes.as_ptr() as usize;
    let off = |s: &[u8]| (s.as_ptr() as usize - base) as u32;
    let mut st = chunk.ng_state();
    let _ = pcap::walk_blocks(bytes, &mut st, &mut |blk, kind| {
        let (frame, linktype, packet) = match kind {
            NgBlock::Packet(p) => (
                (off(p.frame), off(p.frame) + p.frame.len() as u32),
                p.linktype,
                true,
            ),
            _ => ((0, 0), 0, false),
        };
        recs.push(Rec {
            start: off(blk),
            end: off(blk) + blk.len() as u32,
            frame,
            linktype,
            packet,
        });
    });
}

/// The verdict of every packet of a chunk's records, numbered from 0 within the chunk.
pub(super) fn packet_verdicts(
    chunk: &Chunk,
    recs: &[Rec],
    header: Option<FileHeader>,
    verdicts: &Verdicts,
) -> Vec<PacketVerdict> {
    let bytes = chunk.bytes();
    // pcapng: each packet's time in its interface's units, read by walking the blocks again
    // (only for --per-packet, so that the records of every other run stay small).
    let mut ng_times = Vec::new();
    if header.is_none() {
        let mut st = chunk.ng_state();
        let _ = pcap::walk_blocks(bytes, &mut st, &mut |_, kind| {
            if let NgBlock::Packet(p) = kind {
                ng_times.push(p.time());
            }
        });
    }
    recs.iter()
        .filter(|r| r.packet)
        .enumerate()
        .map(|(j, r)| {
            let time = match header {
                Some(h) => Some(pcap::record_time(
                    &bytes[r.start as usize..],
                    h.big_endian,
                    h.nanos,
                )),
                None => ng_times.get(j).copied().flatten(),
            };
            let frame = &bytes[r.frame.0 as usize..r.frame.1 as usize];
            verdicts.packet(j, r.linktype, frame, time)
        })
        .collect()
}

impl Verdicts {
    /// The verdict of packet `j` of these verdicts, whose frame is `frame` of `linktype`,
    /// captured at `time`; numbered `j` (the caller adds the packets before it).
    pub fn packet(
        &self,
        j: usize,
        linktype: u32,
        frame: &[u8],
        time: Option<Timestamp>,
    ) -> PacketVerdict {
        let mut key = [0u8; IPV6_TUPLE_LEN];
        let packet = match pcap::flow_key(linktype, frame, &mut key) {
            Flow::Key(n) => Packet::Flow(FlowKey::new(&key[..n])),
            Flow::NotIp => Packet::NotIp,
            Flow::Malformed => Packet::Malformed,
        };
        PacketVerdict {
            index: j as u64,
            time,
            packet,
            matched: self.matched(j),
            label: self.label(j),
        }
    }
}
