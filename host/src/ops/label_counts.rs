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
            Some(l) => self.add_to(l, one),
        }
    }

    /// Adds `c` to `label`'s counts: in the table below [`DENSE`] (made on first use), in the
    /// map past it.
    #[inline]
    fn add_to(&mut self, label: u32, c: LabelCount) {
        if (label as usize) < DENSE {
            if self.dense.is_empty() {
                self.dense.resize(DENSE, LabelCount::default());
            }
            self.dense[label as usize].add(c);
        } else {
            self.sparse.entry(label).or_default().add(c);
        }
    }

    /// Adds `o`'s counts.
    pub fn merge(&mut self, o: &LabelCounts) {
        self.absent.add(o.absent);
        for (l, c) in o.iter() {
            self.add_to(l, c);
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

/// Packet and byte sums per label of a run of packets (a chunk's), kept apart while its
/// packets go by and then folded into a [`LabelCounts`] ([`LabelTally::fold_into`]). Without a
/// branch on whether a packet has a label (half the packets of a typical capture, in no order a
/// predictor learns): each packet adds to a slot of a plain table, the ones without a label to a
/// slot of their own.
#[derive(Clone, Debug)]
pub(crate) struct LabelTally {
    /// Labels `0 .. DENSE`, then the packets without one.
    slots: Box<[LabelCount; DENSE + 1]>,
}

impl Default for LabelTally {
    fn default() -> LabelTally {
        LabelTally {
            slots: Box::new([LabelCount::default(); DENSE + 1]),
        }
    }
}

impl LabelTally {
    /// Counts one packet of `bytes` captured bytes, with the label `label` if `hit`, none
    /// otherwise; a label past the table goes straight to `counts`.
    #[inline]
    pub(crate) fn add(&mut self, counts: &mut LabelCounts, hit: bool, label: u32, bytes: u32) {
        let bytes = u64::from(bytes);
        // Labels past the table (wide classes, retrieval values): rare, so predictable.
        if hit & (label as usize >= DENSE) {
            counts.add_to(label, LabelCount { packets: 1, bytes });
            return;
        }
        let slot = &mut self.slots[if hit { label as usize } else { DENSE }];
        slot.packets += 1;
        slot.bytes += bytes;
    }

    /// Adds the sums to `counts` and empties the tally.
    pub(crate) fn fold_into(&mut self, counts: &mut LabelCounts) {
        counts.absent.add(std::mem::take(&mut self.slots[DENSE]));
        for (l, c) in self.slots[..DENSE].iter_mut().enumerate() {
            if c.packets > 0 {
                counts.add_to(l as u32, std::mem::take(c));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_counts_as_its_packets_one_by_one() {
        // 200 packets: labels dense and past the table, found or not in an irregular pattern.
        let labels: Vec<u32> = (0..200u32)
            .map(|j| [3, 0, 255, 256, 70_000, 7][j as usize % 6])
            .collect();
        let sizes: Vec<u32> = (0..200u32).map(|j| 60 + j % 13).collect();
        let found = [
            0x9e37_79b9_7f4a_7c15u64,
            0x0123_4567_89ab_cdef,
            0xffff_0000_f0f0_0f0f,
            0xaa,
        ];
        let mut batch = LabelCounts::default();
        batch.add(Some(3), 1000);
        let mut one = batch.clone();
        let mut tally = LabelTally::default();
        // Two runs folded in turn: the tally starts empty again after a fold.
        for run in [0..130, 130..200] {
            for j in run {
                let hit = (found[j / 64] >> (j % 64)) & 1 == 1;
                tally.add(&mut batch, hit, labels[j], sizes[j]);
                one.add(hit.then_some(labels[j]), u64::from(sizes[j]));
            }
            tally.fold_into(&mut batch);
            assert_eq!(batch, one);
        }
        assert!(one.absent.packets > 0 && one.sparse.len() == 2, "{one:?}");
    }

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
