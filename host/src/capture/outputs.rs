//! Where a live capture's packets go: the selected ones to one pcap file, or (a spatial filter
//! or retrieval table with `-w DIR`) every packet to the capture of its class or value through
//! the same [`LabelFiles`] as `classify -w DIR`, and one bit per packet to a bitmap.

use std::io::{self, Write};

use crate::error::{Error, Result};
use crate::ops::classify::{Select, Verdicts};
use crate::ops::label_writers::LabelFiles;
use crate::ops::stream::BitWriter;

use super::LINKTYPE_ETHERNET;

/// The snap length written in the pcap header of a live capture (packets are whole up to the
/// ring's frame room).
pub const SNAPLEN: u32 = 262_144;

/// One packet of a ring block: its time, its length on the wire and the bytes captured.
pub(super) struct Frame<'a> {
    pub(super) sec: u32,
    pub(super) nsec: u32,
    pub(super) len: u32,
    pub(super) data: &'a [u8],
}

/// Where a live capture's outputs go.
#[derive(Default)]
pub struct LiveOutputs<'w> {
    /// The selected packets, as a pcap file (nanosecond timestamps, Ethernet).
    pub packets: Option<(&'w mut dyn Write, Select)>,
    /// One bit per packet.
    pub bitmap: Option<&'w mut dyn Write>,
    /// Count packets per flow.
    pub flows: bool,
    /// Every packet written to the pcap file of its label (a labelled target; `packets`
    /// unused), as `classify -w DIR` writes them.
    pub by_label: Option<&'w mut LabelFiles>,
}

impl LiveOutputs<'_> {
    /// Starts the captures: each begins with the pcap header of a live capture.
    pub(super) fn begin(&mut self) -> Result<()> {
        let mut header = Vec::with_capacity(24);
        write_pcap_header(&mut header, SNAPLEN).map_err(write_err)?;
        if let Some(files) = self.by_label.as_mut() {
            files.begin(Some(&header))?;
        } else if let Some((w, _)) = self.packets.as_mut() {
            w.write_all(&header).map_err(write_err)?;
        }
        Ok(())
    }

    /// Writes `frames`, classified as `v`: each to its label's capture (`by_label`), or the
    /// ones `packets` selects; and their bits to the bitmap. Returns the packets written.
    pub(super) fn write(
        &mut self,
        frames: &[Frame<'_>],
        v: &Verdicts,
        bits: &mut BitWriter,
    ) -> Result<u64> {
        let mut written = 0;
        if let Some(files) = self.by_label.as_mut() {
            let mut record = Vec::new();
            for (i, f) in frames.iter().enumerate() {
                record.clear();
                write_record(&mut record, f).map_err(write_err)?;
                files.packets(v.label(i), &record)?;
            }
            written = frames.len() as u64;
        } else if let Some((w, sel)) = self.packets.as_mut() {
            for (i, f) in frames.iter().enumerate() {
                if v.matched(i) == (*sel == Select::Matching) {
                    write_record(*w, f).map_err(write_err)?;
                    written += 1;
                }
            }
        }
        if let Some(w) = self.bitmap.as_mut() {
            bits.write(*w, &v.bits, frames.len()).map_err(write_err)?;
        }
        Ok(written)
    }

    /// Writes the bitmap's last partial byte.
    pub(super) fn finish(&mut self, bits: &mut BitWriter) -> Result<()> {
        if let Some(w) = self.bitmap.as_mut() {
            bits.finish(*w).map_err(write_err)?;
        }
        Ok(())
    }
}

/// Writes a classic pcap header: nanosecond timestamps, little-endian, Ethernet.
pub fn write_pcap_header(w: &mut dyn Write, snaplen: u32) -> io::Result<()> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&snaplen.to_le_bytes());
    h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    w.write_all(&h)
}

fn write_record(w: &mut dyn Write, f: &Frame<'_>) -> io::Result<()> {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&f.sec.to_le_bytes());
    h[4..8].copy_from_slice(&f.nsec.to_le_bytes());
    h[8..12].copy_from_slice(&(f.data.len() as u32).to_le_bytes());
    h[12..16].copy_from_slice(&f.len.to_le_bytes());
    w.write_all(&h)?;
    w.write_all(f.data)
}

fn write_err(e: io::Error) -> Error {
    Error::io(std::path::Path::new("<output>"), "write", e)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::ops::classify::Totals;

    /// A frame of each of `data`, each with its own time.
    fn frames(data: &[Vec<u8>]) -> Vec<Frame<'_>> {
        (data.iter().enumerate())
            .map(|(i, d)| Frame {
                sec: 1000 + i as u32,
                nsec: 7 * i as u32,
                len: d.len() as u32 + 4,
                data: d,
            })
            .collect()
    }

    /// The verdicts of packets labelled `labels` (`None`: no label, not matched).
    fn verdicts(labels: &[Option<u32>]) -> Verdicts {
        let mut bits = vec![0u64; labels.len().div_ceil(64)];
        for (i, l) in labels.iter().enumerate() {
            bits[i / 64] |= u64::from(l.is_some()) << (i % 64);
        }
        Verdicts {
            bits,
            totals: Totals::default(),
            flows: Default::default(),
            labels: labels.iter().map(|l| l.unwrap_or(0)).collect(),
        }
    }

    /// The (seconds, nanoseconds, data) of each record of a pcap file after its header.
    fn records(bytes: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let mut out = Vec::new();
        let mut at = 24;
        while at < bytes.len() {
            let incl = u32_at(at + 8) as usize;
            out.push((
                u32_at(at),
                u32_at(at + 4),
                bytes[at + 16..at + 16 + incl].to_vec(),
            ));
            at += 16 + incl;
        }
        out
    }

    /// Every packet goes to the capture of the label it was given, in order, across blocks;
    /// classes named in advance get a file even without packets, others are named by number.
    #[test]
    fn packets_go_to_the_capture_of_their_label() {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("by_class");
        let names: BTreeMap<u32, String> = [(1, "allow"), (2, "mirror"), (3, "deny")]
            .into_iter()
            .map(|(c, n)| (c, n.to_string()))
            .collect();
        let labels: Vec<Option<u32>> = (0..150u32)
            .map(|i| match i % 5 {
                0 => None,
                1 | 4 => Some(3),
                2 => Some(1),
                _ => Some(9), // a label with no name: its file is named by its number
            })
            .collect();
        let data: Vec<Vec<u8>> = (0..150u8).map(|i| vec![i; 40 + i as usize]).collect();
        let all = frames(&data);
        let mut files = LabelFiles::new(&out_dir, names.clone()).unwrap();
        let mut bitmap = Vec::new();
        let mut out = LiveOutputs {
            bitmap: Some(&mut bitmap),
            by_label: Some(&mut files),
            ..LiveOutputs::default()
        };
        let mut bits = BitWriter::default();
        out.begin().unwrap();
        let mut written = 0;
        // Two ring blocks: 70 packets, then 80.
        for range in [0..70, 70..150] {
            let v = verdicts(&labels[range.clone()]);
            written += out.write(&all[range], &v, &mut bits).unwrap();
        }
        out.finish(&mut bits).unwrap();
        assert_eq!(written, 150);
        let paths = files.commit().unwrap();
        assert_eq!(paths.len(), 5, "{paths:?}");
        let mut header = Vec::new();
        write_pcap_header(&mut header, SNAPLEN).unwrap();
        let file_of = |l: Option<u32>| match l {
            None => "absent".to_string(),
            Some(c) => names.get(&c).cloned().unwrap_or_else(|| c.to_string()),
        };
        for label in [None, Some(1), Some(2), Some(3), Some(9)] {
            let bytes = std::fs::read(out_dir.join(format!("{}.pcap", file_of(label)))).unwrap();
            assert_eq!(bytes[..24], header[..], "{label:?}");
            let want: Vec<(u32, u32, Vec<u8>)> = (0..150)
                .filter(|&i| labels[i] == label)
                .map(|i| (all[i].sec, all[i].nsec, data[i].clone()))
                .collect();
            assert_eq!(records(&bytes), want, "{label:?}");
        }
        // One bit per packet, set where it has a label.
        assert_eq!(bitmap.len(), 150usize.div_ceil(8));
        for (i, l) in labels.iter().enumerate() {
            assert_eq!((bitmap[i / 8] >> (i % 8)) & 1 == 1, l.is_some(), "bit {i}");
        }
    }
}
