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
const MAX_PACKET: usize = 256 << 20;

/// Parses a whole pcap or pcapng capture.
pub fn parse(bytes: &[u8]) -> Result<Capture, PcapError> {
    if bytes.len() < 4 {
        return err(
            0,
            format!("too short for a capture ({} bytes)", bytes.len()),
        );
    }
    let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let mut cap = Capture::default();
    match magic {
        0x0a0d_0d0a => parse_pcapng(bytes, &mut cap)?,
        0xa1b2_c3d4 | 0xa1b2_3c4d => parse_pcap(bytes, Endian(false), &mut cap)?,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => parse_pcap(bytes, Endian(true), &mut cap)?,
        _ => return err(0, "not a pcap or pcapng capture (unknown magic number)"),
    }
    Ok(cap)
}

fn parse_pcap(b: &[u8], e: Endian, cap: &mut Capture) -> Result<(), PcapError> {
    if b.len() < 24 {
        return err(
            b.len(),
            format!(
                "truncated pcap file header (needs 24 bytes, has {})",
                b.len()
            ),
        );
    }
    let linktype = e.u32(b, 20) & 0x0fff_ffff;
    check_linktype(linktype, 20)?;
    let mut at = 24;
    while at < b.len() {
        if b.len() - at < 16 {
            return err(
                at,
                format!(
                    "truncated packet record header ({} of 16 bytes)",
                    b.len() - at
                ),
            );
        }
        let incl = e.u32(b, at + 8) as usize;
        if incl > MAX_PACKET {
            return err(
                at + 8,
                format!("corrupt packet record: captured length {incl}"),
            );
        }
        let data = at + 16;
        if b.len() - data < incl {
            return err(
                data,
                format!(
                    "truncated packet data (record says {incl} bytes, {} left)",
                    b.len() - data
                ),
            );
        }
        packet(linktype, &b[data..data + incl], cap);
        at = data + incl;
    }
    Ok(())
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

fn parse_pcapng(b: &[u8], cap: &mut Capture) -> Result<(), PcapError> {
    let mut e = Endian(false);
    let mut links: Vec<u32> = Vec::new();
    let mut at = 0;
    while at < b.len() {
        if b.len() - at < 12 {
            return err(
                at,
                format!("truncated pcapng block ({} of 12 bytes)", b.len() - at),
            );
        }
        let raw_type = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if raw_type == 0x0a0d_0d0a {
            // Section header: the byte-order magic decides the endianness of the section.
            let bom = [b[at + 8], b[at + 9], b[at + 10], b[at + 11]];
            e = match u32::from_le_bytes(bom) {
                0x1a2b_3c4d => Endian(false),
                0x4d3c_2b1a => Endian(true),
                _ => return err(at + 8, "bad pcapng byte-order magic"),
            };
            links.clear();
        } else if at == 0 {
            return err(0, "pcapng file does not start with a section header block");
        }
        let btype = e.u32(b, at);
        let len = e.u32(b, at + 4) as usize;
        if len < 12 || !len.is_multiple_of(4) {
            return err(
                at + 4,
                format!("corrupt pcapng block length {len} (block type {btype:#x})"),
            );
        }
        if len > b.len() - at {
            return err(
                at,
                format!(
                    "truncated pcapng block (length {len}, {} bytes left)",
                    b.len() - at
                ),
            );
        }
        if e.u32(b, at + len - 4) as usize != len {
            return err(
                at + len - 4,
                "pcapng block trailing length does not match its leading length",
            );
        }
        let body = &b[at + 8..at + len - 4];
        match btype {
            1 => {
                if body.len() < 8 {
                    return err(at + 8, "truncated interface description block");
                }
                let lt = u32::from(e.u16(body, 0));
                check_linktype(lt, at + 8)?;
                links.push(lt);
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
                let Some(&lt) = links.get(iface) else {
                    return err(
                        at + 8,
                        format!("packet block names interface {iface}, which is not described"),
                    );
                };
                packet(lt, &body[20..20 + caplen], cap);
            }
            3 => {
                // Simple packet block: interface 0, captured length bounded by the block.
                if body.len() < 4 {
                    return err(at + 8, "truncated simple packet block");
                }
                let orig = e.u32(body, 0) as usize;
                let caplen = orig.min(body.len() - 4);
                let Some(&lt) = links.first() else {
                    return err(at, "simple packet block before any interface description");
                };
                packet(lt, &body[4..4 + caplen], cap);
            }
            _ => {}
        }
        at += len;
    }
    Ok(())
}

/// Decodes one captured frame and appends its 5-tuple (or counts it as skipped).
fn packet(linktype: u32, frame: &[u8], cap: &mut Capture) {
    cap.packets += 1;
    match ip_payload(linktype, frame) {
        Some(Ok(ip)) => match tuple(ip) {
            Some(t) => cap.tuples.push(t),
            None => cap.malformed += 1,
        },
        Some(Err(())) => cap.malformed += 1,
        None => cap.non_ip += 1,
    }
}

/// The IP packet inside a frame: `None` if not IP, `Some(Err)` if the link header is cut short.
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

/// The 5-tuple of an IP packet, `None` if its headers are malformed or cut short.
fn tuple(ip: &[u8]) -> Option<Vec<u8>> {
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
            let mut t = Vec::with_capacity(IPV4_TUPLE_LEN);
            t.extend_from_slice(&ip[12..20]);
            t.extend_from_slice(ports);
            t.push(proto);
            Some(t)
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
            let mut t = Vec::with_capacity(IPV6_TUPLE_LEN);
            t.extend_from_slice(&ip[8..40]);
            t.extend_from_slice(ports);
            t.push(next);
            Some(t)
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
        assert_eq!(e.offset, 40);
        assert!(e.what.contains("truncated packet data"), "{}", e.what);
    }

    #[test]
    fn garbage_is_rejected() {
        assert!(parse(b"hello world").is_err());
        assert!(parse(b"").is_err());
    }
}
