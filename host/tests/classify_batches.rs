//! Classification against a spatial filter and a retrieval table (issue #23) over many batches:
//! the classifier answers its keyed packets a batch at a time (1024 keys), with packets that
//! have no flow key between them and after the last one, and a chunk's scratch is reused for the
//! next chunk. Every packet's verdict and label must be the core's answer for its flow, and the
//! per-label counts the sums of its packets.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use bloomlanes_host::bloomlanes_core::retrieval::RetrievalSpec;
use bloomlanes_host::bloomlanes_core::{xxh64, KeyType, Keys, Layout, Params};
use bloomlanes_host::input::pcap::{self, PacketKey, IPV6_TUPLE_LEN};
use bloomlanes_host::kinds::labels::{build_retrieval, build_spatial, Labeller};
use bloomlanes_host::ops::classify::{Classifier, ClassifyScratch, Target};
use common::*;

const SEED: u64 = 11;

/// Flow `f`'s packet of `payload` bytes: 10.0.{f / 256}.{f % 256}:{2000 + f} > 10.9.9.9:53.
fn flow_frame(f: usize, payload: usize) -> Vec<u8> {
    let src = [10, 0, (f / 256) as u8, f as u8];
    eth(
        0x0800,
        0,
        &ipv4(17, src, [10, 9, 9, 9], 2000 + f as u16, 53, payload),
    )
}

/// 5000 frames: flows drawn from 600, an ARP frame every 37th, an IPv4 header cut short every
/// 53rd, and ten ARP frames at the end (after the last keyed packet).
fn frames() -> Vec<Vec<u8>> {
    (0..5000usize)
        .map(|p| match p {
            4990.. => eth(0x0806, 0, &[0; 28]),
            _ if p % 37 == 5 => eth(0x0806, 0, &[0; 28]),
            _ if p % 53 == 7 => flow_frame(p % 600, 0)[..30].to_vec(),
            _ => flow_frame((p * 7919) % 600, p % 50),
        })
        .collect()
}

/// The hash classification gives a frame's flow key (`None`: no flow key).
fn flow_hash(frame: &[u8]) -> Option<u64> {
    let mut key = [0u8; IPV6_TUPLE_LEN];
    match pcap::flow_key(1, frame, &mut key) {
        pcap::Flow::Key(n) => Some(xxh64(&key[..n], SEED)),
        _ => None,
    }
}

/// Classifies `frames` against `labeller` in two chunks on one scratch, checking each packet's
/// verdict and label against `want` (the core's answer for a hash) and the per-label counts
/// against their sums.
fn check(labeller: Labeller<'_>, frames: &[Vec<u8>], want: impl Fn(u64) -> Option<u32>) {
    let target = Target::Labelled {
        path: Path::new("rules.blf"),
        labeller,
    };
    let classifier = Classifier::new(target, PacketKey::Flow, false).expect("a flow filter");
    let mut scratch = ClassifyScratch::default();
    let mut labelled = 0;
    for chunk in [&frames[..3100], &frames[3100..]] {
        let v = classifier.classify(chunk.iter().map(|f| (1u32, &f[..])), &mut scratch);
        assert_eq!(v.totals.packets, chunk.len() as u64);
        assert_eq!(v.labels.len(), chunk.len(), "a label place per packet");
        let mut sums = BTreeMap::<Option<u32>, (u64, u64)>::new();
        for (i, f) in chunk.iter().enumerate() {
            let label = flow_hash(f).and_then(&want);
            assert_eq!(v.label(i), label, "packet {i}");
            assert_eq!(v.matched(i), label.is_some(), "packet {i}");
            let e = sums.entry(label).or_default();
            e.0 += 1;
            e.1 += f.len() as u64;
            labelled += u64::from(label.is_some());
        }
        let absent = sums.remove(&None).unwrap_or_default();
        let counts = &v.totals.per_label;
        assert_eq!((counts.absent.packets, counts.absent.bytes), absent);
        let got: BTreeMap<Option<u32>, (u64, u64)> = (counts.iter())
            .map(|(l, c)| (Some(l), (c.packets, c.bytes)))
            .collect();
        assert_eq!(got, sums);
        assert_eq!(v.totals.matched, counts.labelled_packets());
    }
    assert!(labelled > 1000, "most packets labelled: {labelled}");
}

#[test]
fn every_packet_of_many_batches_gets_the_cores_label() {
    let frames = frames();
    // Rules for the even flows: class 1 + f mod 3, value f mod 200 + 1.
    let rules: Vec<usize> = (0..600).step_by(2).collect();
    let hashes: Vec<u64> = rules
        .iter()
        .map(|&f| flow_hash(&flow_frame(f, 0)).unwrap())
        .collect();
    let shape = Params::new(Layout::L8x32, 64)
        .with_seed(SEED)
        .with_key_type(KeyType::Flow);
    let classes: Vec<u16> = rules.iter().map(|&f| 1 + (f % 3) as u16).collect();
    let names = ["allow", "mirror", "deny"].map(String::from);
    let spatial = build_spatial(shape, 4, &names, Keys::Hashes(&hashes), &classes).unwrap();
    check(Labeller::Spatial(&spatial), &frames, |h| {
        Some(spatial.class_of_hash(h)).filter(|&c| c > 0)
    });
    let values: Vec<u32> = rules.iter().map(|&f| (f % 200) as u32 + 1).collect();
    let spec = RetrievalSpec::new(8, 8);
    let table =
        build_retrieval(shape, KeyType::Flow, spec, Keys::Hashes(&hashes), &values).unwrap();
    check(Labeller::Retrieval(&table), &frames, |h| table.get_hash(h));
}
