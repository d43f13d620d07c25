//! The per-packet decision of [`classify`](super::classify): a packet's key (its flow's
//! 5-tuple or one address, [`PacketKey`]) hashed, a batch of them probed against a static filter
//! or labelled by a spatial filter or retrieval table, and the verdicts, labels and counts
//! written into a chunk's [`Verdicts`].

use bloomlanes_core::{xxh64, FilterRef, HashId, KeyType, Keys};
use bloomlanes_simd::Probe;

use super::classify::{FlowKey, Target};
use super::label_counts::LabelTally;
use super::label_writers::Rec;
use super::packet_verdicts::Verdicts;
use crate::error::{Error, Result};
use crate::input::pcap::{self, Flow, PacketKey, IPV6_TUPLE_LEN};
use crate::kinds::labels::{Labeller, Labels};
use crate::store::FilterFile;

/// How a [`Classifier`] answers a batch of hashed keys.
enum Answers<'a> {
    /// One bit per key from a static filter.
    Bits(&'a FilterFile, FilterRef<'a, u32>),
    /// A label per key (its found bits are the verdicts).
    Labels(Labeller<'a>),
}

/// Decides packets against one filter: flow key, hash, probe, a batch at a time.
pub struct Classifier<'a> {
    probe: Probe,
    answers: Answers<'a>,
    seed: u64,
    /// Which part of each packet is its key.
    by: PacketKey,
    flows: bool,
    note: Option<String>,
}

/// Per-batch buffers of a [`Classifier`] (kept from chunk to chunk, so that no large buffer is
/// allocated per chunk).
#[derive(Default)]
pub struct ClassifyScratch {
    hashes: Vec<u64>,
    index: Vec<u32>,
    keys: Vec<FlowKey>,
    words: Vec<u64>,
    /// Captured bytes of each keyed packet of the batch (a labelled target only).
    sizes: Vec<u32>,
    labels: Labels,
    /// The chunk's per-label counts so far (a labelled target only).
    tally: LabelTally,
    /// The chunk's records: (start, end, frame start, frame end, link type, is a packet).
    pub(super) recs: Vec<Rec>,
    /// A batch's found bits a packet, when a packet gives two keys (`--by host`).
    pair_words: Vec<u64>,
}

const CLASSIFY_BATCH: usize = 1024;

impl<'a> Classifier<'a> {
    /// A classifier over `filter` that keys each packet `by` its 5-tuple or one of its
    /// addresses; `flows`: count packets per flow. Packets give `flow` or `ip` keys: a filter of
    /// keys of another byte form is refused, as `query` refuses it ([`Error::KeyType`]: no packet
    /// could ever match), and so is a filter of the other packet key type (a filter of flows
    /// classified by address, or of addresses by flow); one that records no key type, or another
    /// type of the same bytes, is taken with a note ([`Classifier::key_type_note`]).
    pub fn new(
        target: impl Into<Target<'a>>,
        by: PacketKey,
        flows: bool,
    ) -> Result<Classifier<'a>> {
        let (path, params, answers) = match target.into() {
            Target::Static(f) => (f.path(), *f.params(), Answers::Bits(f, f.view())),
            Target::Labelled { path, labeller } => {
                (path, *labeller.params(), Answers::Labels(labeller))
            }
        };
        if params.hash == HashId::Prehashed {
            return Err(Error::input(
                path,
                None,
                "this filter stores caller-supplied hashes (hash id 0); its keys cannot be \
                 hashed here",
            ));
        }
        let want = by.key_type();
        if matches!(params.key_type, KeyType::Flow | KeyType::Ip) && params.key_type != want {
            let hint = match params.key_type {
                KeyType::Ip => "--by src, --by dst or --by host",
                _ => "--by flow (the default)",
            };
            return Err(Error::input(
                path,
                None,
                format!(
                    "the filter's keys are of type {}, but packets keyed by {} give {want} keys: \
                     no packet could match; classify with {hint}",
                    params.key_type,
                    by.name(),
                ),
            ));
        }
        let key_match = super::check_key_type(path, params.key_type, want)?;
        let note = super::key_type_note(params.key_type, want, key_match);
        Ok(Classifier {
            probe: Probe::active(),
            seed: params.seed,
            by,
            answers,
            flows,
            note,
        })
    }

    /// What answers each packet's key: a spatial filter's classes or a retrieval table's
    /// values (`None`: a static filter's yes/no).
    pub fn labeller(&self) -> Option<Labeller<'a>> {
        match self.answers {
            Answers::Bits(..) => None,
            Answers::Labels(l) => Some(l),
        }
    }

    /// What to tell the user about the filter's key type (it records none, or another type of
    /// the same bytes), if anything.
    pub fn key_type_note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// `Ok` while the filter file is as it was opened ([`FilterFile::check_unchanged`]): checked
    /// before each batch's verdicts are used.
    pub fn check_unchanged(&self) -> Result<()> {
        match self.answers {
            Answers::Bits(file, _) => file.check_unchanged(),
            // Read whole and checked when opened: later changes to the file cannot reach it.
            Answers::Labels(_) => Ok(()),
        }
    }

    /// The SIMD path that probes.
    pub fn path_name(&self) -> &'static str {
        self.probe.path().name()
    }

    /// Classifies `frames` (link type, captured bytes) in order.
    pub fn classify<'f>(
        &self,
        frames: impl Iterator<Item = (u32, &'f [u8])>,
        scratch: &mut ClassifyScratch,
    ) -> Verdicts {
        let mut v = Verdicts::default();
        let labelled = matches!(self.answers, Answers::Labels(_));
        let mut key = [0u8; IPV6_TUPLE_LEN];
        for (i, (linktype, frame)) in frames.enumerate() {
            if i % 64 == 0 {
                v.bits.push(0);
            }
            v.totals.packets += 1;
            let keyless = match pcap::flow_key(linktype, frame, &mut key) {
                Flow::Key(n) => {
                    let tuple = &key[..n];
                    scratch.hashes.push(xxh64(self.by.of(tuple), self.seed));
                    if let Some(second) = self.by.second(tuple) {
                        scratch.hashes.push(xxh64(second, self.seed));
                    }
                    scratch.index.push(i as u32);
                    if labelled {
                        scratch.sizes.push(frame.len() as u32);
                    }
                    if self.flows {
                        scratch.keys.push(FlowKey::new(&key[..n]));
                    }
                    if scratch.hashes.len() >= CLASSIFY_BATCH {
                        self.flush(scratch, &mut v);
                    }
                    continue;
                }
                Flow::NotIp => &mut v.totals.non_ip,
                Flow::Malformed => &mut v.totals.malformed,
            };
            *keyless += 1;
            if labelled {
                v.totals.per_label.add(None, frame.len() as u64);
            }
        }
        self.flush(scratch, &mut v);
        if labelled {
            // Packets after the last keyed one have no label.
            v.labels.resize(v.totals.packets as usize, 0);
            scratch.tally.fold_into(&mut v.totals.per_label);
        }
        v
    }

    fn flush(&self, s: &mut ClassifyScratch, v: &mut Verdicts) {
        let (n_keys, n) = (s.hashes.len(), s.index.len());
        if n_keys == 0 {
            return;
        }
        let keys = Keys::Hashes(&s.hashes);
        let (mut words, labelled) = match &self.answers {
            Answers::Bits(_, view) => {
                s.words.clear();
                s.words.resize(n_keys.div_ceil(64), 0);
                self.probe.contains_bitmap(*view, keys, &mut s.words);
                (&s.words, false)
            }
            Answers::Labels(l) => {
                l.label(keys, false, &mut s.labels);
                // Every packet so far has a place; those without a key keep their 0.
                v.labels.resize(v.totals.packets as usize, 0);
                (&s.labels.found, true)
            }
        };
        if n_keys != n {
            // Two keys a packet (source, destination): one answer a packet.
            let source_first = matches!(self.labeller(), Some(Labeller::Retrieval(_)));
            let labels = labelled.then_some(&mut s.labels.values);
            pair_answers(words, labels, source_first, &mut s.pair_words);
            words = &s.pair_words;
        }
        // One pass over the found bits: the verdict, and (labelled) the label, 0 when absent,
        // and its counts, with no branch on the found bit (it follows the traffic, which no
        // predictor learns). Each loop runs over plain slices, so that no store through one can
        // be taken to change another and every base stays in a register.
        let found = |j: usize| (words[j / 64] >> (j % 64)) & 1;
        let (index, bits) = (&s.index[..n], &mut v.bits[..]);
        let mut matched = 0;
        for (j, &i) in index.iter().enumerate() {
            let (hit, i) = (found(j), i as usize);
            bits[i / 64] |= hit << (i % 64);
            matched += hit;
        }
        if self.flows {
            for (j, key) in s.keys[..n].iter().enumerate() {
                let e = v.flows.entry(*key).or_default();
                e.packets += 1;
                e.matched = found(j) == 1;
            }
        }
        if labelled {
            let (labels, sizes) = (&s.labels.values[..n], &s.sizes[..n]);
            let (out, per_label) = (&mut v.labels[..], &mut v.totals.per_label);
            for (j, &i) in index.iter().enumerate() {
                let (hit, label) = (found(j), labels[j]);
                out[i as usize] = label & 0u32.wrapping_sub(hit as u32);
                s.tally.add(per_label, hit == 1, label, sizes[j]);
            }
        }
        v.totals.matched += matched;
        s.hashes.clear();
        s.index.clear();
        s.keys.clear();
        s.sizes.clear();
    }
}

/// Folds the answers of a batch of packets that give two keys each (`--by host`: keys `2p` and
/// `2p + 1` are packet `p`'s source and destination) into one a packet: its found bit is set
/// when either key's is, in `out`; its label (`labels`, folded in place; absent keys have 0) is
/// the higher of the two, or with `source_first` (a retrieval table's values, which have no
/// order) the source's when the source was found, else the destination's.
fn pair_answers(
    found: &[u64],
    labels: Option<&mut Vec<u32>>,
    source_first: bool,
    out: &mut Vec<u64>,
) {
    let bit = |j: usize| (found[j / 64] >> (j % 64)) & 1;
    let packets = found.len() * 32;
    out.clear();
    out.resize(packets.div_ceil(64), 0);
    for p in 0..packets {
        out[p / 64] |= (bit(2 * p) | bit(2 * p + 1)) << (p % 64);
    }
    if let Some(labels) = labels {
        let packets = labels.len() / 2;
        for p in 0..packets {
            // Reads 2p and 2p + 1 before writing p ≤ 2p: the fold runs in place.
            let (src, dst) = (labels[2 * p], labels[2 * p + 1]);
            labels[p] = match source_first {
                true if bit(2 * p) == 1 => src,
                true => dst,
                false => src.max(dst),
            };
        }
        labels.truncate(packets);
    }
}

#[cfg(test)]
mod tests {
    use bloomlanes_core::{Filter, KeyType, Layout, Params};

    use super::*;

    /// The check `classify` and `capture` share: packets give flow keys.
    #[test]
    fn a_classifier_refuses_a_filter_of_another_byte_form() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.blf");
        let save = |key_type| {
            let p = Params::new(Layout::L8x32, 4).with_key_type(key_type);
            crate::store::save_filter(&path, &Filter::new(p)).unwrap();
            FilterFile::open(&path).unwrap()
        };
        let ints = save(KeyType::U64);
        assert!(matches!(
            Classifier::new(&ints, PacketKey::Flow, false),
            Err(Error::KeyType {
                query: KeyType::Flow,
                ..
            })
        ));
        let flows = save(KeyType::Flow);
        assert!(Classifier::new(&flows, PacketKey::Flow, false)
            .unwrap()
            .key_type_note()
            .is_none());
        let unknown = save(KeyType::Any);
        assert!(Classifier::new(&unknown, PacketKey::Flow, false)
            .unwrap()
            .key_type_note()
            .is_some());
        // Flows and addresses are both bytes, but no packet keyed one way matches the other.
        for by in [PacketKey::Src, PacketKey::Dst] {
            let e = Classifier::new(&flows, by, false)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("--by flow"), "{e}");
        }
        let hosts = save(KeyType::Ip);
        let e = Classifier::new(&hosts, PacketKey::Flow, false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--by src, --by dst or --by host"), "{e}");
        assert!(Classifier::new(&hosts, PacketKey::Dst, false)
            .unwrap()
            .key_type_note()
            .is_none());
    }
}
