//! The flow key (5-tuple) of a captured frame ([`flow_key`]: link header, IPv4 or IPv6 with its
//! extension headers, ports), and flow keys as text ([`format_tuple`], [`parse_flow_text`]).

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::{IPV4_TUPLE_LEN, IPV6_TUPLE_LEN};

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
}
