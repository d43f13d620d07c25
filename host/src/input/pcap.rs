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

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Width of an IPv4 5-tuple key.
pub const IPV4_TUPLE_LEN: usize = 13;
/// Width of an IPv6 5-tuple key.
pub const IPV6_TUPLE_LEN: usize = 37;

/// A fault in the capture file's structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcapError {
    /// Byte offset of the fault.
    pub offset: u64,
    /// What was wrong.
    pub what: String,
}

impl std::fmt::Display for PcapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "byte offset {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for PcapError {}

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

fn err<T>(offset: usize, what: impl Into<String>) -> Result<T, PcapError> {
    Err(PcapError {
        offset: offset as u64,
        what: what.into(),
    })
}

#[derive(Clone, Copy)]
struct Endian(bool); // true = big-endian

impl Endian {
    fn u16(self, b: &[u8], at: usize) -> u16 {
        let a = [b[at], b[at + 1]];
        if self.0 {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        }
    }
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
    let e = Endian(big_endian);
    let mut at = 0;
    while b.len() - at >= 16 {
        let incl = e.u32(b, at + 8) as usize;
        if incl > MAX_PACKET || b.len() - at - 16 < incl {
            break;
        }
        let rec = &b[at..at + 16 + incl];
        f(at, rec, &rec[16..]);
        at += 16 + incl;
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

/// An interface of a pcapng section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Link {
    /// Its link type.
    pub linktype: u32,
    /// Its snap length (0: unlimited).
    pub snaplen: u32,
}

/// What a pcapng reader must know at a block boundary: the section's byte order and its
/// interfaces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NgState {
    /// A section header has been read.
    pub in_section: bool,
    /// The section is big-endian.
    pub big_endian: bool,
    /// The section's interfaces, in order.
    pub links: Vec<Link>,
}

/// Interfaces accepted per pcapng section (a bound on the table's memory).
const MAX_INTERFACES: usize = 1 << 16;

/// One packet of a pcapng file, as [`walk_blocks`] reports it.
#[derive(Clone, Copy, Debug)]
pub struct NgPacket<'a> {
    /// The packet's link type.
    pub linktype: u32,
    /// The captured bytes.
    pub frame: &'a [u8],
}

/// A pcapng block as [`walk_blocks`] sees it: a packet, or a block that sets the section and
/// interfaces (section header, interface description), or anything else.
#[derive(Clone, Copy, Debug)]
pub enum NgBlock<'a> {
    /// A packet (enhanced, simple or obsolete packet block).
    Packet(NgPacket<'a>),
    /// A section header or interface description block.
    Structure,
    /// Any other block (statistics, name resolution, custom …).
    Other,
}

/// Walks the whole blocks at the start of `b` (a pcapng body from a block boundary), updating
/// `st` and calling `f(block, kind)` for each block (`block` is the whole block). Returns the
/// length of the whole blocks and a fault if one is corrupt (offsets relative to `b`); a block
/// cut short by the end of `b` ends the walk without a fault.
pub fn walk_blocks<'a>(
    b: &'a [u8],
    st: &mut NgState,
    f: &mut dyn FnMut(&'a [u8], NgBlock<'a>),
) -> (usize, Option<PcapError>) {
    let mut at = 0;
    while b.len() - at >= 12 {
        match block(b, at, st) {
            Ok(Some((len, kind))) => {
                f(&b[at..at + len], kind);
                at += len;
            }
            Ok(None) => break,
            Err(e) => return (at, Some(e)),
        }
    }
    (at, None)
}

/// One block at `at`: its length and kind, `None` if it is cut short by the end of `b`.
fn block<'a>(
    b: &'a [u8],
    at: usize,
    st: &mut NgState,
) -> Result<Option<(usize, NgBlock<'a>)>, PcapError> {
    let raw_type = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let mut e = Endian(st.big_endian);
    if raw_type == 0x0a0d_0d0a {
        let bom = [b[at + 8], b[at + 9], b[at + 10], b[at + 11]];
        e = match u32::from_le_bytes(bom) {
            0x1a2b_3c4d => Endian(false),
            0x4d3c_2b1a => Endian(true),
            _ => return err(at + 8, "bad pcapng byte-order magic"),
        };
    } else if !st.in_section {
        return err(at, "pcapng file does not start with a section header block");
    }
    let btype = e.u32(b, at);
    let len = e.u32(b, at + 4) as usize;
    if len < 12 || !len.is_multiple_of(4) || len > MAX_PACKET + 64 * 1024 {
        return err(
            at + 4,
            format!("corrupt pcapng block length {len} (block type {btype:#x})"),
        );
    }
    if len > b.len() - at {
        return Ok(None);
    }
    if e.u32(b, at + len - 4) as usize != len {
        return err(
            at + len - 4,
            "pcapng block trailing length does not match its leading length",
        );
    }
    let body = &b[at + 8..at + len - 4];
    let kind = match btype {
        0x0a0d_0d0a => {
            st.in_section = true;
            st.big_endian = e.0;
            st.links.clear();
            NgBlock::Structure
        }
        1 => {
            if body.len() < 8 {
                return err(at + 8, "truncated interface description block");
            }
            let linktype = u32::from(e.u16(body, 0));
            check_linktype(linktype, at + 8)?;
            if st.links.len() >= MAX_INTERFACES {
                return err(at, "more than 65536 interfaces in one pcapng section");
            }
            st.links.push(Link {
                linktype,
                snaplen: e.u32(body, 4),
            });
            NgBlock::Structure
        }
        6 | 2 => {
            // Enhanced (6) or obsolete (2) packet block.
            if body.len() < 20 {
                return err(at + 8, "truncated packet block");
            }
            let iface = if btype == 6 {
                e.u32(body, 0) as usize
            } else {
                usize::from(e.u16(body, 0))
            };
            let caplen = e.u32(body, 12) as usize;
            if caplen > body.len() - 20 {
                return err(
                    at + 20,
                    format!(
                        "packet block captured length {caplen} exceeds the block ({} bytes)",
                        body.len() - 20
                    ),
                );
            }
            let Some(link) = st.links.get(iface) else {
                return err(
                    at + 8,
                    format!("packet block names interface {iface}, which is not described"),
                );
            };
            NgBlock::Packet(NgPacket {
                linktype: link.linktype,
                frame: &body[20..20 + caplen],
            })
        }
        3 => {
            // Simple packet block: interface 0, captured length bounded by the block.
            if body.len() < 4 {
                return err(at + 8, "truncated simple packet block");
            }
            let orig = e.u32(body, 0) as usize;
            let caplen = orig.min(body.len() - 4);
            let Some(link) = st.links.first() else {
                return err(at, "simple packet block before any interface description");
            };
            NgBlock::Packet(NgPacket {
                linktype: link.linktype,
                frame: &body[4..4 + caplen],
            })
        }
        _ => NgBlock::Other,
    };
    Ok(Some((len, kind)))
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
    let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
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
    if magic == 0x0a0d_0d0a {
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

/// What a frame holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// An IP packet whose 5-tuple is the first `n` bytes of the key buffer (13 or 37).
    Key(usize),
    /// Not an IP packet.
    NotIp,
    /// An IP packet (or link header) cut short or malformed.
    Malformed,
}

/// The flow key of a captured frame of `linktype`, written into `out`.
#[inline]
pub fn flow_key(linktype: u32, frame: &[u8], out: &mut [u8; IPV6_TUPLE_LEN]) -> Flow {
    match ip_payload(linktype, frame) {
        Some(Ok(ip)) => match tuple(ip, out) {
            Some(n) => Flow::Key(n),
            None => Flow::Malformed,
        },
        Some(Err(())) => Flow::Malformed,
        None => Flow::NotIp,
    }
}

/// The IP packet inside a frame: `None` if not IP, `Some(Err)` if the link header is cut short.
#[inline]
fn ip_payload(linktype: u32, f: &[u8]) -> Option<Result<&[u8], ()>> {
    fn ethertype_ip(t: u16, rest: &[u8]) -> Option<Result<&[u8], ()>> {
        match t {
            0x0800 | 0x86dd => Some(Ok(rest)),
            _ => None,
        }
    }
    match linktype {
        // Raw IP: the version nibble tells.
        12 | 14 | 101 | 228 | 229 => Some(Ok(f)),
        // BSD loopback: a 4-byte address family in the capturing host's byte order.
        0 | 108 => {
            if f.len() < 4 {
                return Some(Err(()));
            }
            let le = u32::from_le_bytes([f[0], f[1], f[2], f[3]]);
            let be = u32::from_be_bytes([f[0], f[1], f[2], f[3]]);
            let fam = if le < 256 { le } else { be };
            match fam {
                2 | 24 | 28 | 30 => Some(Ok(&f[4..])),
                _ => None,
            }
        }
        1 => {
            if f.len() < 14 {
                return Some(Err(()));
            }
            let mut t = u16::from_be_bytes([f[12], f[13]]);
            let mut at = 14;
            while matches!(t, 0x8100 | 0x88a8 | 0x9100) {
                if f.len() < at + 4 {
                    return Some(Err(()));
                }
                t = u16::from_be_bytes([f[at + 2], f[at + 3]]);
                at += 4;
            }
            ethertype_ip(t, &f[at..])
        }
        113 => {
            if f.len() < 16 {
                return Some(Err(()));
            }
            ethertype_ip(u16::from_be_bytes([f[14], f[15]]), &f[16..])
        }
        276 => {
            if f.len() < 20 {
                return Some(Err(()));
            }
            ethertype_ip(u16::from_be_bytes([f[0], f[1]]), &f[20..])
        }
        _ => None,
    }
}

fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 33 | 132 | 136)
}

/// The 5-tuple of an IP packet written into `out`: its length, `None` if the headers are
/// malformed or cut short.
#[inline]
fn tuple(ip: &[u8], out: &mut [u8; IPV6_TUPLE_LEN]) -> Option<usize> {
    match ip.first()? >> 4 {
        4 => {
            if ip.len() < 20 {
                return None;
            }
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            if ihl < 20 || ip.len() < ihl {
                return None;
            }
            let proto = ip[9];
            let frag_offset = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
            let ports = if has_ports(proto) && frag_offset == 0 {
                ip.get(ihl..ihl + 4)?
            } else {
                &[0, 0, 0, 0][..]
            };
            out[..8].copy_from_slice(&ip[12..20]);
            out[8..12].copy_from_slice(ports);
            out[12] = proto;
            Some(IPV4_TUPLE_LEN)
        }
        6 => {
            if ip.len() < 40 {
                return None;
            }
            let mut next = ip[6];
            let mut at = 40;
            let mut first_fragment = true;
            loop {
                match next {
                    0 | 43 | 60 | 135 | 139 | 140 => {
                        let h = ip.get(at..at + 2)?;
                        next = h[0];
                        at += (usize::from(h[1]) + 1) * 8;
                    }
                    51 => {
                        let h = ip.get(at..at + 2)?;
                        next = h[0];
                        at += (usize::from(h[1]) + 2) * 4;
                    }
                    44 => {
                        let h = ip.get(at..at + 8)?;
                        next = h[0];
                        first_fragment = u16::from_be_bytes([h[2], h[3]]) >> 3 == 0;
                        at += 8;
                    }
                    _ => break,
                }
            }
            let ports = if has_ports(next) && first_fragment {
                ip.get(at..at + 4)?
            } else {
                &[0, 0, 0, 0][..]
            };
            out[..32].copy_from_slice(&ip[8..40]);
            out[32..36].copy_from_slice(ports);
            out[36] = next;
            Some(IPV6_TUPLE_LEN)
        }
        _ => None,
    }
}

/// A 5-tuple key written for people: `10.0.0.1:1234 -> 10.0.0.2:80 proto 6`.
pub fn format_tuple(t: &[u8]) -> String {
    let mut s = String::new();
    let port = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    match t.len() {
        IPV4_TUPLE_LEN => {
            let src = Ipv4Addr::new(t[0], t[1], t[2], t[3]);
            let dst = Ipv4Addr::new(t[4], t[5], t[6], t[7]);
            let _ = write!(
                s,
                "{src}:{} -> {dst}:{} proto {}",
                port(&t[8..]),
                port(&t[10..]),
                t[12]
            );
        }
        IPV6_TUPLE_LEN => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&t[..16]);
            let src = Ipv6Addr::from(a);
            a.copy_from_slice(&t[16..32]);
            let dst = Ipv6Addr::from(a);
            let _ = write!(
                s,
                "[{src}]:{} -> [{dst}]:{} proto {}",
                port(&t[32..]),
                port(&t[34..]),
                t[36]
            );
        }
        _ => {
            for b in t {
                let _ = write!(s, "{b:02x}");
            }
        }
    }
    s
}

/// IP protocol names accepted in text flow keys.
const PROTOCOLS: [(&str, u8); 8] = [
    ("icmp", 1),
    ("tcp", 6),
    ("udp", 17),
    ("dccp", 33),
    ("icmpv6", 58),
    ("sctp", 132),
    ("udplite", 136),
    ("udp-lite", 136),
];

/// One end of a text flow: `10.0.0.1:80`, `[2001:db8::1]:443`, or an address alone (port 0).
fn parse_end(s: &str) -> Result<(std::net::IpAddr, u16), String> {
    let s = s.trim();
    let (addr, port) = if let Some(rest) = s.strip_prefix('[') {
        let close = rest
            .find(']')
            .ok_or_else(|| format!("{s:?}: an IPv6 address in brackets needs its ']'"))?;
        let port = rest[close + 1..].strip_prefix(':');
        (&rest[..close], port)
    } else if s.matches(':').count() == 1 {
        let (a, p) = s.split_once(':').expect("one colon");
        (a, Some(p))
    } else {
        (s, None)
    };
    let ip: std::net::IpAddr = addr
        .parse()
        .map_err(|_| format!("{addr:?} is not an IP address"))?;
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| format!("{p:?} is not a port number (0 to 65535)"))?,
        None => 0,
    };
    Ok((ip, port))
}

/// Parses a flow key written as text into its 13- or 37-byte form (see the module docs):
/// `10.0.0.1:1234>10.0.0.2:80/tcp`, `[2001:db8::1]:5353>[2001:db8::2]:53/udp`, the protocol as
/// a name (tcp, udp, icmp, icmpv6, sctp, dccp, udplite) or a number, and also the form
/// [`format_tuple`] prints (`10.0.0.1:1234 -> 10.0.0.2:80 proto 6`). Returns the key's length.
pub fn parse_flow_text(text: &[u8], out: &mut [u8; IPV6_TUPLE_LEN]) -> Result<usize, String> {
    let t = std::str::from_utf8(text).map_err(|_| "a flow key must be UTF-8 text".to_string())?;
    let t = t.trim();
    let (ends, proto) = if let Some((e, p)) = t.rsplit_once(" proto ") {
        (e, p)
    } else if let Some((e, p)) = t.rsplit_once('/') {
        (e, p)
    } else {
        return Err("a flow key needs a protocol: SRC:PORT>DST:PORT/PROTO".into());
    };
    let p = proto.trim().to_ascii_lowercase();
    let proto = match PROTOCOLS.iter().find(|(n, _)| *n == p) {
        Some(&(_, n)) => n,
        None => p.parse::<u8>().map_err(|_| {
            format!("{p:?} is not an IP protocol (a name such as tcp, or 0 to 255)")
        })?,
    };
    let (src, dst) = ends
        .split_once("->")
        .or_else(|| ends.split_once('>'))
        .ok_or_else(|| "a flow key needs '>' between its source and destination".to_string())?;
    let (sa, sp) = parse_end(src)?;
    let (da, dp) = parse_end(dst)?;
    use std::net::IpAddr::{V4, V6};
    match (sa, da) {
        (V4(s), V4(d)) => {
            out[..4].copy_from_slice(&s.octets());
            out[4..8].copy_from_slice(&d.octets());
            out[8..10].copy_from_slice(&sp.to_be_bytes());
            out[10..12].copy_from_slice(&dp.to_be_bytes());
            out[12] = proto;
            Ok(IPV4_TUPLE_LEN)
        }
        (V6(s), V6(d)) => {
            out[..16].copy_from_slice(&s.octets());
            out[16..32].copy_from_slice(&d.octets());
            out[32..34].copy_from_slice(&sp.to_be_bytes());
            out[34..36].copy_from_slice(&dp.to_be_bytes());
            out[36] = proto;
            Ok(IPV6_TUPLE_LEN)
        }
        _ => Err("source and destination must both be IPv4 or both IPv6".into()),
    }
}

#[cfg(test)]
mod tests {
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
        let mut b = Vec::new();
        b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        b.extend_from_slice(&[2, 0, 4, 0]);
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&65535u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        for f in frames {
            b.extend_from_slice(&[0; 8]);
            b.extend_from_slice(&(f.len() as u32).to_le_bytes());
            b.extend_from_slice(&(f.len() as u32).to_le_bytes());
            b.extend_from_slice(f);
        }
        b
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
    fn text_flow_keys() {
        let mut k = [0u8; IPV6_TUPLE_LEN];
        let n = parse_flow_text(b"10.0.0.1:1234>10.0.0.2:53/udp", &mut k).unwrap();
        assert_eq!(k[..n], [10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0xd2, 0, 53, 17]);
        let printed = format_tuple(&k[..n]);
        let mut again = [0u8; IPV6_TUPLE_LEN];
        assert_eq!(parse_flow_text(printed.as_bytes(), &mut again), Ok(13));
        assert_eq!(again[..13], k[..13]);
        let n = parse_flow_text(b"[2001:db8::1]:5353 > [2001:db8::2]:53/17", &mut k).unwrap();
        assert_eq!(n, 37);
        assert_eq!(
            format_tuple(&k[..n]),
            "[2001:db8::1]:5353 -> [2001:db8::2]:53 proto 17"
        );
        assert_eq!(parse_flow_text(b"10.0.0.1>10.0.0.2/icmp", &mut k), Ok(13));
        assert_eq!(k[8..13], [0, 0, 0, 0, 1]);
        for bad in [
            "10.0.0.1:1>::1:2/tcp",
            "1.2.3.4:1>1.2.3.5:2",
            "1.2.3.4:99999>1.2.3.5:2/tcp",
            "x>y/tcp",
        ] {
            assert!(parse_flow_text(bad.as_bytes(), &mut k).is_err(), "{bad}");
        }
    }

    #[test]
    fn garbage_is_rejected() {
        assert!(parse(b"hello world").is_err());
        assert!(parse(b"").is_err());
    }
}
