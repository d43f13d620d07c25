//! Writing captures: a classic pcap file ([`PcapWriter`]) or a pcapng section ([`PcapngWriter`]),
//! packet by packet, in the forms this crate reads back. `bloomlanes capture -w` writes its
//! packets through [`PcapWriter`]; tests and the fuzz seed generator write their captures here
//! too, so that every capture made by the project has one writer.
//!
//! ```
//! use bloomlanes_input::pcap::{self, write::{PcapWriter, Resolution, LINKTYPE_ETHERNET}};
//! let mut frame = vec![0u8; 12];
//! frame.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 20, 0, 0, 0, 0, 64, 1, 0, 0]); // IPv4, ICMP
//! frame.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
//! let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, Resolution::Micros)?;
//! w.packet(1_700_000_000, 0, frame.len() as u32, &frame)?;
//! let cap = pcap::parse(&w.into_inner()).unwrap();
//! assert_eq!(cap.tuples[0][..8], [10, 0, 0, 1, 10, 0, 0, 2]);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Write};

/// LINKTYPE_ETHERNET: frames with an Ethernet header.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// Block type of a pcapng section header.
const SECTION_HEADER: u32 = 0x0a0d_0d0a;
/// Block type of a pcapng interface description.
const INTERFACE_DESCRIPTION: u32 = 1;
/// Block type of a pcapng enhanced packet block.
const ENHANCED_PACKET: u32 = 6;

/// What the fraction of a classic pcap timestamp counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Microseconds (magic `a1b2c3d4`).
    Micros,
    /// Nanoseconds (magic `a1b23c4d`).
    Nanos,
}

/// A classic pcap file written to `W`: the 24-byte file header (little-endian) on creation, then
/// one 16-byte record header and the captured bytes per packet.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header: link type `linktype` (e.g. [`LINKTYPE_ETHERNET`]), snap length
    /// `snaplen` (the longest packet captured whole), timestamps of `resolution`.
    pub fn new(
        mut out: W,
        linktype: u32,
        snaplen: u32,
        resolution: Resolution,
    ) -> io::Result<PcapWriter<W>> {
        let magic: u32 = match resolution {
            Resolution::Micros => 0xa1b2_c3d4,
            Resolution::Nanos => 0xa1b2_3c4d,
        };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&magic.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&linktype.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Writes one packet: captured at `sec` seconds and `frac` micro- or nanoseconds (as the
    /// header's resolution says), `orig_len` bytes long on the wire, of which `data` was
    /// captured.
    pub fn packet(&mut self, sec: u32, frac: u32, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&sec.to_le_bytes());
        h[4..8].copy_from_slice(&frac.to_le_bytes());
        h[8..12].copy_from_slice(&captured_len(data)?.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(data)
    }

    /// The writer, after the last packet.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A pcapng section written to `W`: a section header block (little-endian, length unknown) and
/// one interface description on creation, then an enhanced packet block per packet on that
/// interface.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the section header and the description of interface 0: link type `linktype`,
    /// snap length `snaplen` (timestamps in microseconds, the format's default).
    pub fn new(out: W, linktype: u32, snaplen: u32) -> io::Result<PcapngWriter<W>> {
        PcapngWriter::with_tsresol(out, linktype, snaplen, None)
    }

    /// [`PcapngWriter::new`] with interface 0's `if_tsresol` option set to `tsresol` when
    /// given (10^-k seconds, or 2^-k with bit 7 set; e.g. 9 for nanoseconds): the unit of the
    /// timestamps given to [`PcapngWriter::packet`].
    pub fn with_tsresol(
        mut out: W,
        linktype: u32,
        snaplen: u32,
        tsresol: Option<u8>,
    ) -> io::Result<PcapngWriter<W>> {
        let mut shb = Vec::with_capacity(16);
        shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        write_block(&mut out, SECTION_HEADER, &shb)?;
        let link = u16::try_from(linktype).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("link type {linktype} does not fit a pcapng interface description"),
            )
        })?;
        let mut idb = Vec::with_capacity(8);
        idb.extend_from_slice(&link.to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&snaplen.to_le_bytes());
        if let Some(r) = tsresol {
            // if_tsresol (code 9, 1 byte, padded to 4), then the end of the options.
            idb.extend_from_slice(&[9, 0, 1, 0, r, 0, 0, 0, 0, 0, 0, 0]);
        }
        write_block(&mut out, INTERFACE_DESCRIPTION, &idb)?;
        Ok(PcapngWriter { out })
    }

    /// Writes one packet of interface 0: captured at `timestamp` (in the interface's units:
    /// microseconds unless set by [`PcapngWriter::with_tsresol`]), `orig_len` bytes long on the wire, of which `data` was captured.
    pub fn packet(&mut self, timestamp: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let mut epb = Vec::with_capacity(20 + data.len());
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((timestamp >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(timestamp as u32).to_le_bytes());
        epb.extend_from_slice(&captured_len(data)?.to_le_bytes());
        epb.extend_from_slice(&orig_len.to_le_bytes());
        epb.extend_from_slice(data);
        write_block(&mut self.out, ENHANCED_PACKET, &epb)
    }

    /// The writer, after the last packet.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The captured length of `data` as a record field (refused past 4 GiB).
fn captured_len(data: &[u8]) -> io::Result<u32> {
    u32::try_from(data.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a packet of 4 GiB or more has no capture record",
        )
    })
}

/// One pcapng block: type, total length, `body` padded to 4 bytes, the length again.
fn write_block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let padded = body.len().div_ceil(4) * 4;
    let len = u32::try_from(12 + padded)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pcapng block too long"))?;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&[0; 3][..padded - body.len()])?;
    out.write_all(&len.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::super::{parse, parse_file_header, walk_blocks, NgBlock, NgState};
    use super::*;

    fn udp_frame(last: u8) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, last, 10, 0, 0, 2, 0x04, 0xd2, 0, 53, 0, 8, 0, 0]);
        f
    }

    #[test]
    fn pcap_files_read_back_with_their_header_and_records() {
        let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 96, Resolution::Nanos).unwrap();
        w.packet(7, 999_999_999, 100, &udp_frame(1)).unwrap();
        w.packet(8, 1, 42, &udp_frame(3)[..41]).unwrap();
        let b = w.into_inner();
        let h = parse_file_header(&b).unwrap();
        assert!(h.nanos && !h.big_endian);
        assert_eq!((h.linktype, h.snaplen), (1, 96));
        assert_eq!(b[24..28], 7u32.to_le_bytes());
        assert_eq!(b[28..32], 999_999_999u32.to_le_bytes());
        assert_eq!(b[32..36], 42u32.to_le_bytes()); // captured
        assert_eq!(b[36..40], 100u32.to_le_bytes()); // on the wire
        let cap = parse(&b).unwrap();
        assert_eq!((cap.packets, cap.tuples.len()), (2, 2));
        assert_eq!(cap.tuples[1][..4], [10, 0, 0, 3]);
        let micros = PcapWriter::new(Vec::new(), 101, 65535, Resolution::Micros).unwrap();
        assert!(!parse_file_header(&micros.into_inner()).unwrap().nanos);
    }

    #[test]
    fn pcapng_sections_pad_blocks_and_keep_timestamps() {
        let mut w = PcapngWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535).unwrap();
        for (i, len) in [(0u64, 39usize), (1, 40), (2, 41), (3, 42)] {
            w.packet(i << 32 | 5, 60, &udp_frame(i as u8)[..len])
                .unwrap();
        }
        let b = w.into_inner();
        let mut st = NgState::default();
        let mut frames = Vec::new();
        let (len, fault) = walk_blocks(&b, &mut st, &mut |blk, kind| {
            assert_eq!(blk.len() % 4, 0);
            if let NgBlock::Packet(p) = kind {
                assert_eq!(blk[12..16], ((frames.len() as u32).to_le_bytes()));
                assert_eq!(blk[16..20], 5u32.to_le_bytes());
                frames.push(p.frame.len());
            }
        });
        assert_eq!((len, fault), (b.len(), None));
        assert_eq!(frames, [39, 40, 41, 42]);
        assert_eq!(st.links[0].snaplen, 65535);
        assert!(PcapngWriter::new(Vec::new(), 1 << 16, 0).is_err());
    }
}
