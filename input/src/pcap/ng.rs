//! pcapng blocks: the section header and interface descriptions that set a section's byte order
//! and link types, and the packet blocks (enhanced, simple, obsolete) whose frames carry the
//! flow keys. [`walk_blocks`] walks whole blocks from a block boundary, so that a chunk of a
//! pcapng file can be read knowing only the [`NgState`] in force at its start.

use super::time::{Timestamp, TsResolution};
use super::{check_linktype, err, Endian, PcapError, MAX_PACKET};

/// An interface of a pcapng section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Link {
    /// Its link type.
    pub linktype: u32,
    /// Its snap length (0: unlimited).
    pub snaplen: u32,
    /// The unit of its packets' timestamps (`if_tsresol`).
    pub resolution: TsResolution,
    /// Seconds added to its packets' timestamps (`if_tsoffset`).
    pub offset_seconds: i64,
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
    /// Its timestamp in its interface's units (`None`: a simple packet block, which has none).
    pub ticks: Option<u64>,
    /// Its interface (for the unit and offset of `ticks`).
    pub link: Link,
}

impl NgPacket<'_> {
    /// When the packet was captured (`None`: a simple packet block carries no time).
    pub fn time(&self) -> Option<Timestamp> {
        let ticks = self.ticks?;
        Some(self.link.resolution.time(ticks, self.link.offset_seconds))
    }
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
            let mut link = Link {
                linktype,
                snaplen: e.u32(body, 4),
                ..Link::default()
            };
            interface_options(&body[8..], at + 16, e, &mut link)?;
            st.links.push(link);
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
            let ticks = u64::from(e.u32(body, 4)) << 32 | u64::from(e.u32(body, 8));
            NgBlock::Packet(NgPacket {
                linktype: link.linktype,
                frame: &body[20..20 + caplen],
                ticks: Some(ticks),
                link: *link,
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
                ticks: None,
                link: *link,
            })
        }
        _ => NgBlock::Other,
    };
    Ok(Some((len, kind)))
}

/// Option codes of an interface description block that set its timestamps.
const IF_TSRESOL: u16 = 9;
const IF_TSOFFSET: u16 = 14;

/// Reads the options of an interface description block (`opts`, found at byte `offset`) into
/// `link`: `if_tsresol` and `if_tsoffset`; others are skipped. An option that runs past the
/// block, or one of these two with the wrong length or an unusable unit, is a fault.
fn interface_options(
    opts: &[u8],
    offset: usize,
    e: Endian,
    link: &mut Link,
) -> Result<(), PcapError> {
    let mut at = 0;
    while opts.len() - at >= 4 {
        let (code, len) = (e.u16(opts, at), usize::from(e.u16(opts, at + 2)));
        if code == 0 {
            break;
        }
        let value = at + 4;
        if len.div_ceil(4) * 4 > opts.len() - value {
            return err(
                offset + at,
                format!("interface description option {code} ({len} bytes) runs past its block"),
            );
        }
        let wrong_len = |want: usize| {
            err(
                offset + at,
                format!("interface description option {code} has {len} bytes, not {want}"),
            )
        };
        match code {
            IF_TSRESOL if len != 1 => return wrong_len(1),
            IF_TSRESOL => link.resolution = TsResolution::from_option(opts[value], offset + value)?,
            IF_TSOFFSET if len != 8 => return wrong_len(8),
            IF_TSOFFSET => {
                let b: [u8; 8] = opts[value..value + 8].try_into().expect("8 bytes");
                // One 64-bit integer in the section's byte order.
                let v = if e.0 {
                    i64::from_be_bytes(b)
                } else {
                    i64::from_le_bytes(b)
                };
                link.offset_seconds = v;
            }
            _ => {}
        }
        at = value + len.div_ceil(4) * 4;
    }
    Ok(())
}
