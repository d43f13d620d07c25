//! Flow keys from packet captures: the 5-tuple of every IPv4/IPv6 packet in a classic pcap or a
//! pcapng file, for packet-classification filters.
//!
//! The key of a packet is a fixed-width byte record, addresses and ports in network byte order:
//!
//! ```text
//! IPv4, 13 bytes: src addr (4) | dst addr (4) | src port (2, BE) | dst port (2, BE) | protocol (1)
//! IPv6, 37 bytes: src addr (16) | dst addr (16) | src port (2, BE) | dst port (2, BE) | protocol (1)
//! ```
//!
//! The protocol is the IP protocol number (IPv6: the upper-layer header after any extension
//! headers). Ports are those of TCP, UDP, UDP-Lite, SCTP and DCCP; they are zero for other
//! protocols and for fragments other than the first. Link types: Ethernet (with 802.1Q/802.1ad
//! tags), raw IP, BSD loopback (NULL/LOOP) and Linux cooked capture (SLL, SLL2). Packets that are
//! not IP, or whose headers the capture cut short, are skipped and counted; a damaged capture file
//! is an error naming the byte offset of the damage.

mod flow;
mod ng;
pub(crate) mod records;
mod time;
pub mod write;

pub use flow::{flow_key, format_tuple, parse_flow_text, Flow, PacketKey};
pub use ng::{walk_blocks, Link, NgBlock, NgPacket, NgState};
pub use records::RecordWalk;
pub use time::{record_time, Timestamp, TsResolution};

/// Width of an IPv4 5-tuple key.
pub const IPV4_TUPLE_LEN: usize = 13;
/// Width of an IPv6 5-tuple key.
pub const IPV6_TUPLE_LEN: usize = 37;

/// A fault in the capture file's structure, at a byte offset of the file.
pub type PcapError = bloomlanes_core::ByteFault;

/// The 5-tuples of a capture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    /// One key per IP packet, in capture order (13 or 37 bytes each).
    pub tuples: Vec<Vec<u8>>,
    /// Packets read.
    pub packets: u64,
    /// Packets skipped: not IP.
    pub non_ip: u64,
    /// Packets skipped: headers truncated by the capture or malformed.
    pub malformed: u64,
}

/// Whether `bytes` start like a pcap or pcapng file.
pub fn is_capture(bytes: &[u8]) -> bool {
    if bytes.len() < 4 {
        return false;
    }
    let m = [bytes[0], bytes[1], bytes[2], bytes[3]];
    matches!(
        u32::from_le_bytes(m),
        0xa1b2_c3d4 | 0xa1b2_3c4d | 0xd4c3_b2a1 | 0x4d3c_b2a1 | 0x0a0d_0d0a
    )
}

/// Whether `bytes` start like a pcapng file (a section header block).
pub fn is_pcapng(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) == 0x0a0d_0d0a
}

fn err<T>(offset: usize, what: impl Into<String>) -> Result<T, PcapError> {
    Err(PcapError {
        offset: offset as u64,
        what: what.into(),
    })
}

#[derive(Clone, Copy)]
struct Endian(bool); // true = big-endian

impl Endian {
    // Inline: called per record from the callers' instances of `for_each_record` (other crates).
    #[inline]
    fn u16(self, b: &[u8], at: usize) -> u16 {
        let a = [b[at], b[at + 1]];
        if self.0 {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        }
    }
    #[inline]
    fn u32(self, b: &[u8], at: usize) -> u32 {
        let a = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.0 {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }
}

/// Largest packet record accepted (anything larger is taken as corruption).
pub const MAX_PACKET: usize = 256 << 10;

/// The 24-byte header of a classic pcap file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Fields are big-endian.
    pub big_endian: bool,
    /// Timestamps in nanoseconds (magic `a1b23c4d`) rather than microseconds.
    pub nanos: bool,
    /// The link type (LINKTYPE_*).
    pub linktype: u32,
    /// The snap length: the longest a packet was captured.
    pub snaplen: u32,
}

/// Reads a classic pcap file header.
pub fn parse_file_header(b: &[u8]) -> Result<FileHeader, PcapError> {
    if b.len() < 24 {
        return err(
            b.len(),
            format!(
                "truncated pcap file header (needs 24 bytes, has {})",
                b.len()
            ),
        );
    }
    let magic = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let (big_endian, nanos) = match magic {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        0x4d3c_b2a1 => (true, true),
        _ => return err(0, "not a classic pcap file (unknown magic number)"),
    };
    let e = Endian(big_endian);
    let linktype = e.u32(b, 20) & 0x0fff_ffff;
    check_linktype(linktype, 20)?;
    Ok(FileHeader {
        big_endian,
        nanos,
        linktype,
        snaplen: e.u32(b, 16),
    })
}

/// The shortest frame of `linktype` that can hold its link header, an IPv4 header and the ports.
pub fn min_headers(linktype: u32) -> u32 {
    let link = match linktype {
        1 => 14,
        113 => 16,
        276 => 20,
        0 | 108 => 4,
        _ => 0,
    };
    link + 24
}

/// Walks the packet records of a classic pcap body: the length of the whole records at the
/// start of `b`, and a fault if a record header is corrupt (offsets relative to `b`).
pub fn walk_records(b: &[u8], big_endian: bool) -> (usize, Option<PcapError>) {
    let e = Endian(big_endian);
    let mut at = 0;
    while b.len() - at >= 16 {
        let incl = e.u32(b, at + 8) as usize;
        if incl > MAX_PACKET {
            let fault = PcapError {
                offset: (at + 8) as u64,
                what: format!(
                    "corrupt packet record: captured length {incl} is larger than {MAX_PACKET} bytes"
                ),
            };
            return (at, Some(fault));
        }
        if b.len() - at - 16 < incl {
            break;
        }
        at += 16 + incl;
    }
    (at, None)
}

/// Calls `f(record_offset, record, frame)` for every whole record of a classic pcap body (as
/// cut by [`walk_records`]); `record` is the record with its 16-byte header.
pub fn for_each_record<'a>(
    b: &'a [u8],
    big_endian: bool,
    mut f: impl FnMut(usize, &'a [u8], &'a [u8]),
) {
    for (at, rec) in RecordWalk::new(b, big_endian) {
        f(at, rec, &rec[16..]);
    }
}

fn check_linktype(linktype: u32, offset: usize) -> Result<(), PcapError> {
    match linktype {
        0 | 1 | 12 | 14 | 101 | 108 | 113 | 228 | 229 | 276 => Ok(()),
        _ => err(
            offset,
            format!(
                "unsupported link type {linktype} (supported: Ethernet, raw IP, loopback, Linux SLL/SLL2)"
            ),
        ),
    }
}

/// Parses a whole pcap or pcapng capture held in memory (the streaming readers cut it in
/// chunks with [`walk_records`] and [`walk_blocks`]; this is their one-piece form).
pub fn parse(bytes: &[u8]) -> Result<Capture, PcapError> {
    if bytes.len() < 4 {
        return err(
            0,
            format!("too short for a capture ({} bytes)", bytes.len()),
        );
    }
    let mut cap = Capture::default();
    let mut key = [0u8; IPV6_TUPLE_LEN];
    let mut one = |linktype: u32, frame: &[u8], cap: &mut Capture| {
        cap.packets += 1;
        match flow_key(linktype, frame, &mut key) {
            Flow::Key(n) => cap.tuples.push(key[..n].to_vec()),
            Flow::NotIp => cap.non_ip += 1,
            Flow::Malformed => cap.malformed += 1,
        }
    };
    if is_pcapng(bytes) {
        let mut st = NgState::default();
        let (len, fault) = walk_blocks(bytes, &mut st, &mut |_, blk| {
            if let NgBlock::Packet(p) = blk {
                one(p.linktype, p.frame, &mut cap);
            }
        });
        if let Some(f) = fault {
            return Err(f);
        }
        if len < bytes.len() {
            return err(
                len,
                format!("truncated pcapng block ({} bytes left)", bytes.len() - len),
            );
        }
        return Ok(cap);
    }
    if !is_capture(bytes) {
        return err(0, "not a pcap or pcapng capture (unknown magic number)");
    }
    let h = parse_file_header(bytes)?;
    let body = &bytes[24..];
    let (len, fault) = walk_records(body, h.big_endian);
    if let Some(mut f) = fault {
        f.offset += 24;
        return Err(f);
    }
    for_each_record(&body[..len], h.big_endian, |_, _, frame| {
        one(h.linktype, frame, &mut cap)
    });
    if len < body.len() {
        let at = 24 + len;
        return err(
            at,
            format!("truncated packet record ({} bytes left)", bytes.len() - at),
        );
    }
    Ok(cap)
}

#[cfg(test)]
mod tests {
    use super::write::{PcapWriter, Resolution, LINKTYPE_ETHERNET};
    use super::*;

    fn eth_ipv4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0];
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        ip.extend_from_slice(&sport.to_be_bytes());
        ip.extend_from_slice(&dport.to_be_bytes());
        ip.extend_from_slice(&[0, 8, 0, 0]);
        f.extend_from_slice(&ip);
        f
    }

    fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut w =
            PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, Resolution::Micros).unwrap();
        for f in frames {
            w.packet(0, 0, f.len() as u32, f).unwrap();
        }
        w.into_inner()
    }

    #[test]
    fn ipv4_tuple_from_pcap() {
        let b = pcap(&[eth_ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 53)]);
        let cap = parse(&b).unwrap();
        assert_eq!(cap.tuples.len(), 1);
        assert_eq!(
            cap.tuples[0],
            [10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0xd2, 0, 53, 17]
        );
        assert_eq!(
            format_tuple(&cap.tuples[0]),
            "10.0.0.1:1234 -> 10.0.0.2:53 proto 17"
        );
    }

    #[test]
    fn truncated_record_names_offset() {
        let mut b = pcap(&[eth_ipv4_udp([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)]);
        b.truncate(b.len() - 3);
        let e = parse(&b).unwrap_err();
        assert_eq!(e.offset, 24);
        assert!(e.what.contains("truncated packet record"), "{}", e.what);
    }

    #[test]
    fn garbage_is_rejected() {
        assert!(parse(b"hello world").is_err());
        assert!(parse(b"").is_err());
    }
}
