//! Per-label packet and byte counts of a classification against a spatial filter (one label
//! per class) or a retrieval table (one per value seen), with the packets that have no label
//! (absent, not IP, cut short) counted apart.

use std::collections::BTreeMap;

/// Labels below this are counted in a plain array (every spatial filter of up to 255 classes);
/// larger ones (wide classes, retrieval values) in an ordered map.
const DENSE: usize = 256;

/// Packets and bytes of one label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelCount {
    /// Packets.
    pub packets: u64,
    /// Bytes of their captured frames.
    pub bytes: u64,
}

impl LabelCount {
    fn add(&mut self, o: LabelCount) {
        self.packets += o.packets;
        self.bytes += o.bytes;
    }
}

/// Packet and byte counts per label, and of the packets with none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelCounts {
    dense: Vec<LabelCount>,
    sparse: BTreeMap<u32, LabelCount>,
    /// Packets with no label: absent keys, packets that are not IP or are cut short.
    pub absent: LabelCount,
}

impl LabelCounts {
    /// Counts one packet of `bytes` captured bytes with `label` (`None`: no label).
    #[inline]
    pub fn add(&mut self, label: Option<u32>, bytes: u64) {
        let one = LabelCount { packets: 1, bytes };
        match label {
            None => self.absent.add(one),
            Some(l) if (l as usize) < DENSE => {
                if self.dense.is_empty() {
                    self.dense.resize(DENSE, LabelCount::default());
                }
                self.dense[l as usize].add(one);
            }
            Some(l) => self.sparse.entry(l).or_default().add(one),
        }
    }

    /// Adds `o`'s counts.
    pub fn merge(&mut self, o: &LabelCounts) {
        self.absent.add(o.absent);
        for (l, c) in o.iter() {
            match self.dense.get_mut(l as usize) {
                Some(mine) => mine.add(c),
                None if (l as usize) < DENSE => {
                    self.dense.resize(DENSE, LabelCount::default());
                    self.dense[l as usize].add(c);
                }
                None => self.sparse.entry(l).or_default().add(c),
            }
        }
    }

    /// The labels seen, smallest first, with their counts.
    pub fn iter(&self) -> impl Iterator<Item = (u32, LabelCount)> + '_ {
        let dense = self.dense.iter().enumerate();
        dense
            .filter(|(_, c)| c.packets > 0)
            .map(|(l, c)| (l as u32, *c))
            .chain(self.sparse.iter().map(|(l, c)| (*l, *c)))
    }

    /// Packets counted with a label.
    pub fn labelled_packets(&self) -> u64 {
        self.iter().map(|(_, c)| c.packets).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_across_dense_and_sparse_labels() {
        let mut a = LabelCounts::default();
        a.add(Some(3), 10);
        a.add(Some(70_000), 5);
        a.add(None, 7);
        let mut b = LabelCounts::default();
        b.add(Some(3), 1);
        b.add(Some(300), 2);
        b.merge(&a);
        let got: Vec<_> = b.iter().map(|(l, c)| (l, c.packets, c.bytes)).collect();
        assert_eq!(got, vec![(3, 2, 11), (300, 1, 2), (70_000, 1, 5)]);
        assert_eq!(
            b.absent,
            LabelCount {
                packets: 1,
                bytes: 7
            }
        );
        assert_eq!(b.labelled_packets(), 4);
    }
}
