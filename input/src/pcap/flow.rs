//! The flow key (5-tuple) of a captured frame ([`flow_key`]: link header, IPv4 or IPv6 with its
//! extension headers, ports), and flow keys as text ([`format_tuple`], [`parse_flow_text`]).

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

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

/// Which part of a packet is its key: the flow's 5-tuple, or one address of its IP header (what
/// a P4 exact-match table on `srcAddr` or `dstAddr`, or tcpdump's `src host`/`dst host`, reads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PacketKey {
    /// The 5-tuple (key type `flow`).
    #[default]
    Flow,
    /// The source address (key type `ip`: 4 bytes for IPv4, 16 for IPv6).
    Src,
    /// The destination address (key type `ip`).
    Dst,
    /// Either address (key type `ip`), as tcpdump's `host A`: two keys a packet, its source
    /// ([`PacketKey::of`]) and its destination ([`PacketKey::second`]).
    Host,
}

impl PacketKey {
    /// The key type of the keys this part gives.
    pub const fn key_type(self) -> bloomlanes_core::KeyType {
        match self {
            PacketKey::Flow => bloomlanes_core::KeyType::Flow,
            PacketKey::Src | PacketKey::Dst | PacketKey::Host => bloomlanes_core::KeyType::Ip,
        }
    }

    /// Its name on the command line: `flow`, `src`, `dst` or `host`.
    pub const fn name(self) -> &'static str {
        match self {
            PacketKey::Flow => "flow",
            PacketKey::Src => "src",
            PacketKey::Dst => "dst",
            PacketKey::Host => "host",
        }
    }

    /// This part of a packet whose 5-tuple is `tuple` (13 bytes for IPv4, 37 for IPv6, as
    /// [`flow_key`] writes it: source address, destination address, ports, protocol); for
    /// [`PacketKey::Host`], its first key, the source address.
    #[inline]
    pub fn of(self, tuple: &[u8]) -> &[u8] {
        let a = if tuple.len() == IPV4_TUPLE_LEN { 4 } else { 16 };
        match self {
            PacketKey::Flow => tuple,
            PacketKey::Src | PacketKey::Host => &tuple[..a],
            PacketKey::Dst => &tuple[a..2 * a],
        }
    }

    /// The second key of a packet whose 5-tuple is `tuple`: its destination address for
    /// [`PacketKey::Host`]; `None` for the parts that give one key a packet.
    #[inline]
    pub fn second(self, tuple: &[u8]) -> Option<&[u8]> {
        match self {
            PacketKey::Host => Some(PacketKey::Dst.of(tuple)),
            _ => None,
        }
    }
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
            put_tuple::<8>(out, ip, 12, proto, ihl, frag_offset == 0)
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
            put_tuple::<32>(out, ip, 8, next, at, first_fragment)
        }
        _ => None,
    }
}

/// Writes a 5-tuple into `out` (both IP versions: the `A` address bytes, source then
/// destination, from `ip[addrs..]`; the 4 port bytes at `ip[transport..]`, zeros when `proto`
/// has no ports or the packet is not the `first` fragment; then `proto`): its length, `None`
/// if the ports are cut short. `A` is a constant, so each version's copies stay fixed-size.
#[inline(always)]
fn put_tuple<const A: usize>(
    out: &mut [u8; IPV6_TUPLE_LEN],
    ip: &[u8],
    addrs: usize,
    proto: u8,
    transport: usize,
    first: bool,
) -> Option<usize> {
    let ports = if has_ports(proto) && first {
        ip.get(transport..transport + 4)?
    } else {
        &[0, 0, 0, 0][..]
    };
    out[..A].copy_from_slice(&ip[addrs..addrs + A]);
    out[A..A + 4].copy_from_slice(ports);
    out[A + 4] = proto;
    Some(A + 5)
}

/// A 5-tuple key written for people: `10.0.0.1:1234 -> 10.0.0.2:80 proto 6`, IPv6 addresses in
/// brackets (`[::1]:1 -> [fe80::2]:2 proto 6`), any other length in hex.
pub fn format_tuple(t: &[u8]) -> String {
    // Both layouts: source address, destination address, source port, destination port (big
    // endian), protocol; `ports` is where the ports start.
    let (src, dst, ports) = match t.len() {
        IPV4_TUPLE_LEN => (
            IpAddr::from(octets::<4>(t)),
            IpAddr::from(octets::<4>(&t[4..])),
            8,
        ),
        IPV6_TUPLE_LEN => (
            IpAddr::from(octets::<16>(t)),
            IpAddr::from(octets::<16>(&t[16..])),
            32,
        ),
        _ => {
            let mut s = String::with_capacity(2 * t.len());
            for b in t {
                let _ = write!(s, "{b:02x}");
            }
            return s;
        }
    };
    let port = |at: usize| u16::from_be_bytes([t[at], t[at + 1]]);
    format!(
        "{} -> {} proto {}",
        SocketAddr::new(src, port(ports)),
        SocketAddr::new(dst, port(ports + 2)),
        t[ports + 4]
    )
}

/// The first `N` bytes of `b` (which holds at least `N`).
fn octets<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
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
fn parse_end(s: &str) -> Result<(IpAddr, u16), String> {
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
    let ip: IpAddr = addr
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
        (V4(s), V4(d)) => Ok(tuple_of(out, s.octets(), d.octets(), [sp, dp], proto)),
        (V6(s), V6(d)) => Ok(tuple_of(out, s.octets(), d.octets(), [sp, dp], proto)),
        _ => Err("source and destination must both be IPv4 or both IPv6".into()),
    }
}

/// Writes the 5-tuple of addresses `src` and `dst` (`N` bytes each), `ports` (source,
/// destination) and `proto` into `out`: its length.
fn tuple_of<const N: usize>(
    out: &mut [u8; IPV6_TUPLE_LEN],
    src: [u8; N],
    dst: [u8; N],
    ports: [u16; 2],
    proto: u8,
) -> usize {
    out[..N].copy_from_slice(&src);
    out[N..2 * N].copy_from_slice(&dst);
    out[2 * N..2 * N + 2].copy_from_slice(&ports[0].to_be_bytes());
    out[2 * N + 2..2 * N + 4].copy_from_slice(&ports[1].to_be_bytes());
    out[2 * N + 4] = proto;
    2 * N + 5
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
