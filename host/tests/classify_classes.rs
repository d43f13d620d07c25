//! `classify` against a spatial filter or a retrieval table (issue #23): each packet gets its
//! class or value, counted per label in packets and bytes; the counts equal `query`'s answers
//! for the same flows, packet by packet; a filter of another key type is refused.

mod common;

use std::collections::BTreeMap;

use bloomlanes_host::input::pcap::{self, format_tuple, IPV6_TUPLE_LEN};
use common::*;

/// 400 packets: 16 IPv4 UDP flows (flow `i`: 10.0.0.{i}:{1000+i} > 10.9.9.9:53) of varied
/// sizes, ARP frames and an IPv4 header cut short (no flow key: never labelled).
fn frames() -> Vec<Vec<u8>> {
    (0..400usize)
        .map(|p| match p % 25 {
            0 => eth(0x0806, 0, &[0; 28]),
            1 => eth(
                0x0800,
                0,
                &ipv4(17, [10, 0, 0, 1], [10, 9, 9, 9], 1001, 53, 0)[..12],
            ),
            k => {
                let i = (k + p / 25) % 16;
                let src = [10, 0, 0, i as u8];
                eth(
                    0x0800,
                    0,
                    &ipv4(17, src, [10, 9, 9, 9], 1000 + i as u16, 53, p % 40),
                )
            }
        })
        .collect()
}

/// The flow of a frame, as `query` reads it (`SRC:PORT -> DST:PORT proto N`).
fn flow_text(frame: &[u8]) -> Option<String> {
    let mut k = [0u8; IPV6_TUPLE_LEN];
    match pcap::flow_key(1, frame, &mut k) {
        pcap::Flow::Key(n) => Some(format_tuple(&k[..n])),
        _ => None,
    }
}

/// A rule table of the even flows: a TSV of flow and label (`labels[i % labels.len()]`).
fn rules(labels: &[&str]) -> String {
    let mut s = String::from("flow\tlabel\n");
    for i in (0..16u16).step_by(2) {
        let flow = format!("10.0.0.{i}:{} -> 10.9.9.9:53 proto 17", 1000 + i);
        s.push_str(&format!(
            "{flow}\t{}\n",
            labels[i as usize / 2 % labels.len()]
        ));
    }
    s
}

/// Per-label (packets, bytes) that `query` predicts for `frames` against `filter`: each
/// packet's flow asked of `query --json`, a packet without a flow key counted `absent`.
fn expected(
    d: &tempfile::TempDir,
    filter: &std::path::Path,
    field: &str,
    frames: &[Vec<u8>],
) -> BTreeMap<String, (u64, u64)> {
    let flows: Vec<Option<String>> = frames.iter().map(|f| flow_text(f)).collect();
    let keys: String = flows.iter().flatten().map(|f| format!("{f}\n")).collect();
    let q = write(d, "flows.txt", keys);
    let answers = json(&argv!("query", filter, &q, "--format flows"))["answers"].clone();
    let mut answers = answers.as_array().unwrap().iter();
    let mut want = BTreeMap::<String, (u64, u64)>::new();
    for (f, fr) in flows.iter().zip(frames) {
        let label = match f {
            Some(_) => answers.next().unwrap()[field]
                .as_str()
                .map_or("absent".into(), String::from),
            None => "absent".into(),
        };
        let e = want.entry(label).or_default();
        e.0 += 1;
        e.1 += fr.len() as u64;
    }
    want
}

/// `classify --json`'s per-label table as label → (packets, bytes), without empty rows.
fn per_label(v: &serde_json::Value, field: &str) -> BTreeMap<String, (u64, u64)> {
    v["per_label"]
        .as_array()
        .expect("a per-label table")
        .iter()
        .filter(|r| r["packets"].as_u64().unwrap() > 0)
        .map(|r| {
            let name = r[field].as_str().unwrap().to_string();
            (
                name,
                (r["packets"].as_u64().unwrap(), r["bytes"].as_u64().unwrap()),
            )
        })
        .collect()
}

#[test]
fn spatial_classes_per_packet_equal_query_on_the_same_flows() {
    let d = tmp();
    let fr = frames();
    let rules = write(&d, "rules.tsv", rules(&["deny", "allow", "mirror"]));
    let f = at(&d, "s.blf");
    build(&rules, &f, "--kind spatial --csv-column flow --class-column label --key-type flow --classes deny,mirror,allow");
    let want = expected(&d, &f, "class", &fr);
    assert!(want.len() >= 4, "every class and absent appear: {want:?}");
    for (name, bytes) in [("c.pcap", pcap_file(&fr)), ("c.pcapng", pcapng_file(&fr))] {
        let cap = write(&d, name, bytes);
        let v = json(&argv!("classify", &f, &cap));
        assert_eq!(v["kind"], "spatial");
        assert_eq!(per_label(&v, "class"), want, "{name}");
        assert_eq!(v["packets"], fr.len() as u64);
        let absent = want["absent"].0;
        assert_eq!(v["matched"], fr.len() as u64 - absent, "a class is a match");
    }
    // Text: one line per class, by name.
    let cap = write(&d, "c.pcap", pcap_file(&fr));
    let out = succeeds(bl().args(argv!("classify", &f, &cap)));
    let text = String::from_utf8(out.stdout).unwrap();
    for (name, (packets, _)) in &want {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"));
        assert!(line.contains(&format!(" {packets} packets")), "{line}");
    }
}

#[test]
fn retrieval_values_per_packet_equal_query_on_the_same_flows() {
    let d = tmp();
    let fr = frames();
    let rules = write(&d, "values.tsv", rules(&["7", "200", "31", "4"]));
    let f = at(&d, "r.blf");
    build(
        &rules,
        &f,
        "--kind retrieval --csv-column flow --value-column label --value-bits 8 --key-type flow",
    );
    let want = expected(&d, &f, "value", &fr);
    assert!(
        want.contains_key("200") && want.contains_key("absent"),
        "{want:?}"
    );
    let cap = write(&d, "c.pcap", pcap_file(&fr));
    let v = json(&argv!("classify", &f, &cap, "--threads 2"));
    assert_eq!(v["kind"], "retrieval");
    assert_eq!(per_label(&v, "value"), want);
}

/// Bad input: a spatial filter or retrieval table of keys that are not flows would label no
/// packet; it is refused, naming the filter, and nothing is written.
#[test]
fn a_labelled_filter_of_another_key_type_is_refused() {
    let d = tmp();
    let rules = write(&d, "ips.csv", "id,action\n1,deny\n2,allow\n");
    let sp = at(&d, "s.blf");
    build(
        &rules,
        &sp,
        "--kind spatial --csv-column id --class-column action --key-type u64",
    );
    let vals = write(&d, "vals.csv", "k,v\n1,3\n2,4\n");
    let r = at(&d, "r.blf");
    build(
        &vals,
        &r,
        "--kind retrieval --csv-column k --value-column v --value-bits 4 --key-type u64",
    );
    let cap = write(&d, "c.pcap", pcap_file(&frames()));
    for f in [&sp, &r] {
        let out = at(&d, "out.pcap");
        let err = fails(&argv!("classify", f, &cap, "-w", &out), 2);
        assert!(err.contains(s(f)) && err.contains("flow"), "{err}");
        assert!(!out.exists(), "nothing written");
    }
}
