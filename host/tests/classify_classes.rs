//! `classify` against a spatial filter or a retrieval table (issue #23): each packet gets its
//! class or value, counted per label in packets and bytes; the counts equal `query`'s answers
//! for the same flows, packet by packet; a filter of another key type is refused.

use bloomlanes_testkit::skip;

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

/// `s.blf` in `d`: a spatial filter of the flows in `rules.tsv` labelled with the classes
/// `labels` (in turn, see [`rules`]), built with the extra `flags`.
fn spatial_of_rules(d: &tempfile::TempDir, labels: &[&str], flags: &str) -> std::path::PathBuf {
    let (_, sp) = write_and_build(
        d,
        "rules.tsv",
        rules(labels),
        "s.blf",
        &format!("--kind spatial --csv-column flow --class-column label --key-type flow {flags}"),
    );
    sp
}

/// `r.blf` in `d`: a retrieval table of the flows in `values.tsv` with the 8-bit values
/// `values` (in turn, see [`rules`]).
fn retrieval_of_rules(d: &tempfile::TempDir, values: &[&str]) -> std::path::PathBuf {
    let (_, r) = write_and_build(
        d,
        "values.tsv",
        rules(values),
        "r.blf",
        "--kind retrieval --csv-column flow --value-column label --value-bits 8 --key-type flow",
    );
    r
}

/// The label `query --json` gives each frame's flow against `filter` (`absent`: none, or the
/// frame has no flow key).
fn labels_of(
    d: &tempfile::TempDir,
    filter: &std::path::Path,
    field: &str,
    frames: &[Vec<u8>],
) -> Vec<String> {
    let flows: Vec<Option<String>> = frames.iter().map(|f| flow_text(f)).collect();
    let keys: String = flows.iter().flatten().map(|f| format!("{f}\n")).collect();
    let q = write(d, "flows.txt", keys);
    let answers = json(&argv!("query", filter, &q, "--format flows"))["answers"].clone();
    let mut answers = answers.as_array().unwrap().iter();
    let absent = || "absent".to_string();
    (flows.iter())
        .map(|f| match f {
            // A class by name, a value as a number, null when absent.
            Some(_) => match &answers.next().unwrap()[field] {
                serde_json::Value::Null => absent(),
                serde_json::Value::String(name) => name.clone(),
                value => value.to_string(),
            },
            None => absent(),
        })
        .collect()
}

/// Per-label (packets, bytes) that `query` predicts for `frames` against `filter`.
fn expected(
    d: &tempfile::TempDir,
    filter: &std::path::Path,
    field: &str,
    frames: &[Vec<u8>],
) -> BTreeMap<String, (u64, u64)> {
    let mut want = BTreeMap::<String, (u64, u64)>::new();
    for (label, fr) in labels_of(d, filter, field, frames).into_iter().zip(frames) {
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
    let f = spatial_of_rules(
        &d,
        &["deny", "allow", "mirror"],
        "--classes allow,mirror,deny",
    );
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
    let f = retrieval_of_rules(&d, &["7", "200", "31", "4"]);
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
    let (_, sp) = write_and_build(
        &d,
        "ips.csv",
        "id,action\n1,deny\n2,allow\n",
        "s.blf",
        "--kind spatial --csv-column id --class-column action --key-type u64",
    );
    let (_, r) = write_and_build(
        &d,
        "vals.csv",
        "k,v\n1,3\n2,4\n",
        "r.blf",
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

/// The frames of a capture read back with the input crate's readers, and the length of what
/// precedes the first packet (the classic header, or the section and interface blocks).
fn read_frames(bytes: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut frames = Vec::new();
    if pcap::is_pcapng(bytes) {
        let mut st = pcap::NgState::default();
        let mut first = None;
        let (len, fault) = pcap::walk_blocks(bytes, &mut st, &mut |blk, kind| {
            if let pcap::NgBlock::Packet(p) = kind {
                let at = blk.as_ptr() as usize - bytes.as_ptr() as usize;
                first.get_or_insert(at);
                frames.push(p.frame.to_vec());
            }
        });
        assert!(fault.is_none() && len == bytes.len(), "whole blocks");
        (frames, first.unwrap_or(bytes.len()))
    } else {
        let h = pcap::parse_file_header(bytes).expect("a pcap header");
        pcap::for_each_record(&bytes[24..], h.big_endian, |_, _, f| {
            frames.push(f.to_vec())
        });
        (frames, 24)
    }
}

/// `-w DIR` against a spatial filter and a retrieval table, pcap and pcapng: one capture per
/// class or value and `absent`, each read back holding exactly the packets whose flow `query`
/// puts in that label, in capture order, after the input's own header or section and
/// interface blocks.
#[test]
fn write_dir_gives_each_label_its_own_capture() {
    let d = tmp();
    let fr = frames();
    let sp = spatial_of_rules(&d, &["deny", "allow"], "--classes allow,mirror,deny");
    let r = retrieval_of_rules(&d, &["7", "200", "31"]);
    for (f, field) in [(&sp, "class"), (&r, "value")] {
        let labels = labels_of(&d, f, field, &fr);
        let mut names: std::collections::BTreeSet<&str> =
            labels.iter().map(String::as_str).collect();
        if field == "class" {
            names.insert("mirror"); // a class with no packets still gets its (empty) capture
        }
        for (ext, input) in [("pcap", pcap_file(&fr)), ("pcapng", pcapng_file(&fr))] {
            let cap = write(&d, &format!("c.{ext}"), &input);
            let out = at(&d, &format!("out-{field}-{ext}"));
            let v = json(&argv!("classify", f, &cap, "-w", &out));
            assert_eq!(v["written"], fr.len() as u64);
            let (_, head) = read_frames(&input);
            let mut listed: Vec<String> = std::fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            listed.sort();
            let mut want_names: Vec<String> = names.iter().map(|n| format!("{n}.{ext}")).collect();
            want_names.sort();
            assert_eq!(listed, want_names, "{field} {ext}");
            for name in &names {
                let bytes = std::fs::read(out.join(format!("{name}.{ext}"))).unwrap();
                let (got, _) = read_frames(&bytes);
                let want: Vec<Vec<u8>> = (fr.iter().zip(&labels))
                    .filter(|(_, l)| l == name)
                    .map(|(x, _)| x.clone())
                    .collect();
                assert_eq!(got, want, "{field} {ext} {name}");
                assert_eq!(bytes[..head], input[..head], "{name}: the input's header");
            }
        }
    }
}

/// A failing run leaves no file behind: an input corrupt half-way, into an existing folder
/// (left empty) and into a new one (not made); a folder that cannot be written; a file where
/// the folder should be.
#[test]
fn write_dir_is_all_or_nothing() {
    let d = tmp();
    let fr = frames();
    let sp = spatial_of_rules(&d, &["deny", "allow"], "");
    let mut bad = pcap_file(&fr);
    let at200: usize = 24 + fr[..200].iter().map(|f| 16 + f.len()).sum::<usize>();
    bad[at200 + 8..at200 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = write(&d, "bad.pcap", bad);
    let existing = at(&d, "existing");
    std::fs::create_dir(&existing).unwrap();
    fails(&argv!("classify", &sp, &bad, "-w", &existing), 1);
    assert_eq!(
        std::fs::read_dir(&existing).unwrap().count(),
        0,
        "nothing left"
    );
    let new = at(&d, "new");
    fails(&argv!("classify", &sp, &bad, "-w", &new), 1);
    assert!(!new.exists(), "the folder made for the run is gone");
    let cap = write(&d, "c.pcap", pcap_file(&fr));
    let plain = write(&d, "plain", "x");
    let err = fails(&argv!("classify", &sp, &cap, "-w", &plain), 1);
    assert!(err.contains("not a directory"), "{err}");
    #[cfg(unix)]
    if is_root() {
        skip(format_args!(
            "running as root, a read-only folder is writable"
        ));
    } else {
        use std::os::unix::fs::PermissionsExt;
        let ro = at(&d, "ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let err = fails(&argv!("classify", &sp, &cap, "-w", &ro), 2);
        assert!(err.contains(s(&ro)), "{err}");
        assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
    }
}

/// Whether this process runs as root (who may write into a read-only folder).
#[cfg(unix)]
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// `classify -w DIR` of a table of many values holds four descriptors a file: under a soft
/// limit of 128 open files (where 150 files would stop part way) the tool raises its own soft
/// limit to the hard one and writes every file; where the hard limit is too low it says so,
/// naming the limit, and writes nothing.
#[cfg(unix)]
#[test]
fn many_label_files_fit_under_a_low_soft_limit_of_open_files() {
    let d = tmp();
    let flow = |i: u16| ([10, 0, (i >> 8) as u8, i as u8], 1000 + i);
    let frames: Vec<Vec<u8>> = (0..150u16)
        .map(|i| {
            let (src, port) = flow(i);
            eth(0x0800, 0, &ipv4(17, src, [10, 9, 9, 9], port, 53, 4))
        })
        .collect();
    let cap = write(&d, "c.pcap", pcap_file(&frames));
    let mut tsv = String::from("flow\tvalue\n");
    for i in 0..150u16 {
        let (s, port) = flow(i);
        let text = format!(
            "{}.{}.{}.{}:{port} -> 10.9.9.9:53 proto 17",
            s[0], s[1], s[2], s[3]
        );
        tsv.push_str(&format!("{text}\t{}\n", i + 1));
    }
    let (_, table) = write_and_build(
        &d,
        "values.tsv",
        tsv,
        "r.blf",
        "--kind retrieval --csv-column flow --value-column value --value-bits 8 --key-type flow",
    );
    let run = |limits: &str, out: &std::path::Path| {
        let script = format!("{limits} && exec \"$0\" classify \"$1\" \"$2\" -w \"$3\"",);
        std::process::Command::new("sh")
            .args(["-c", &script])
            .arg(assert_cmd::cargo::cargo_bin("bloomlanes"))
            .args([&table, &cap, &out.to_path_buf()])
            .output()
            .unwrap()
    };
    let out = at(&d, "by_value");
    let done = run("ulimit -S -n 128", &out);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        151,
        "150 values and absent"
    );
    let capped = at(&d, "capped");
    let refused = run("ulimit -n 128", &capped);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    says(&err, &["capped", "limit of open files", "128", "ulimit -n"]);
    assert!(!capped.exists(), "a refused run left {}", capped.display());
}
