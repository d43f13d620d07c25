//! `classify --per-packet` (issues #23, #27): one verdict per packet on standard output, in
//! capture order (number, time, flow, match or class), as tab-separated text or, with --json,
//! JSON Lines for pipelines, the summary on standard error; and the key-reading options of
//! other commands (`--format csv`, `--csv-column`) refused with a usage error naming them.

mod common;

use common::*;
use serde_json::Value;

/// 40 frames: IPv4 UDP flows 10.0.0.{p % 5}:{1000 + p % 5} > 10.9.9.9:53, every tenth an ARP
/// frame (no flow key).
fn frames() -> Vec<Vec<u8>> {
    (0..40usize)
        .map(|p| match p % 10 {
            9 => eth(0x0806, 0, &[0; 28]),
            _ => {
                let i = (p % 5) as u8;
                let udp = ipv4(17, [10, 0, 0, i], [10, 9, 9, 9], 1000 + u16::from(i), 53, p);
                eth(0x0800, 0, &udp)
            }
        })
        .collect()
}

/// A folder with the capture of [`frames`] in it: (folder, frames, capture).
fn capture() -> (tempfile::TempDir, Vec<Vec<u8>>, std::path::PathBuf) {
    let d = tmp();
    let frames = frames();
    let cap = write(&d, "cap.pcap", pcap_file(&frames));
    (d, frames, cap)
}

/// The JSON lines `classify --json --per-packet` writes, and its summary (standard error).
fn per_packet(filter: &std::path::Path, cap: &std::path::Path) -> (Vec<Value>, Value) {
    let out = succeeds(bl().args(argv!("--json", "classify", filter, cap, "--per-packet")));
    let lines = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let summary = serde_json::from_slice(&out.stderr).expect("the summary on stderr");
    (rows, summary)
}

#[test]
fn per_packet_json_lines_agree_with_the_bitmap_and_the_capture() {
    let (d, frames, cap) = capture();
    // A filter of flows 0, 1 and 2 only.
    let listed = write(&d, "listed.pcap", pcap_file(&frames[..3]));
    let f = at(&d, "f.blf");
    json(&argv!("build", &listed, "-o", &f));
    let (rows, summary) = per_packet(&f, &cap);
    assert_eq!(rows.len(), frames.len());
    assert_eq!(summary["packets"], 40);
    let bits = at(&d, "bits");
    succeeds(bl().args(argv!("classify", &f, &cap, "--bitmap", &bits)));
    let bits = std::fs::read(&bits).unwrap();
    let mut matched = 0;
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["index"], i as u64, "{r}");
        let bit = bits[i / 8] >> (i % 8) & 1 == 1;
        assert_eq!(r["match"], bit, "{r}");
        matched += u64::from(bit);
        // pcap_file stamps packet i at 1 700 000 000 + i s and 7 i µs: six decimals.
        let time = format!("{}.{:06}", 1_700_000_000 + i, 7 * i);
        assert_eq!(r["time"], time.as_str(), "{r}");
        if i % 10 == 9 {
            assert_eq!(r["flow"], Value::Null, "{r}");
            assert_eq!(r["reason"], "not IP", "{r}");
        } else {
            let n = i % 5;
            let flow = format!("10.0.0.{n}:{} -> 10.9.9.9:53 proto 17", 1000 + n);
            assert_eq!(r["flow"], flow.as_str(), "{r}");
            if n < 3 {
                assert_eq!(r["match"], true, "a listed flow always matches: {r}");
            }
        }
    }
    assert_eq!(summary["matched"], matched);
    // Text: number, time, flow, verdict, tab-separated.
    let out = succeeds(bl().args(argv!("classify", &f, &cap, "--per-packet")));
    let text = String::from_utf8(out.stdout).unwrap();
    let first: Vec<&str> = text.lines().next().unwrap().split('\t').collect();
    assert_eq!(first.len(), 4, "{first:?}");
    assert_eq!((first[0], first[3]), ("0", "match"), "{first:?}");
    assert_eq!(text.lines().count(), 40);
}

#[test]
fn per_packet_classes_of_a_spatial_filter_are_never_below_their_own() {
    let (d, frames, cap) = capture();
    // Flow 0 allowed, flow 1 denied (class 2, the higher), the others absent.
    let allow = write(&d, "allow.pcap", pcap_file(&frames[..1]));
    let deny = write(&d, "deny.pcap", pcap_file(&frames[1..2]));
    let f = at(&d, "sp.blf");
    json(&argv!(
        "build",
        "-o",
        &f,
        "--kind spatial --class",
        format!("allow={}", s(&allow)).as_str(),
        "--class",
        format!("deny={}", s(&deny)).as_str()
    ));
    let (rows, summary) = per_packet(&f, &cap);
    assert_eq!(rows.len(), 40);
    for (i, r) in rows.iter().enumerate() {
        // No class: null (JSON's "none"), as in `query --json`.
        let class = r["class"].as_str().unwrap_or("absent");
        assert!(r["class"].is_string() || r["class"].is_null(), "{r}");
        let own = match (i % 10, i % 5) {
            (9, _) => "absent",
            (_, 0) => "allow",
            (_, 1) => "deny",
            _ => continue,
        };
        let rank = |c: &str| ["absent", "allow", "deny"].iter().position(|n| *n == c);
        assert!(
            rank(class) >= rank(own),
            "packet {i}: {class} below {own}: {r}"
        );
        assert_eq!(r["match"], class != "absent", "{r}");
    }
    let denied = rows.iter().filter(|r| r["class"] == "deny").count() as u64;
    let table = summary["per_label"].as_array().unwrap();
    let row = table.iter().find(|r| r["class"] == "deny").unwrap();
    assert_eq!(row["packets"], denied);
}

#[test]
fn classify_refuses_the_options_of_key_files_by_name() {
    let (d, _, cap) = capture();
    let f = at(&d, "f.blf");
    json(&argv!("build", &cap, "-o", &f));
    for (flags, named) in [
        ("--format csv", "--format csv"),
        ("--csv-column 3", "--csv-column"),
        ("--format csv --csv-column 3", "--format csv"),
        ("--delimiter ;", "--delimiter"),
        ("--key-type u64", "--key-type u64"),
    ] {
        let err = fails(&argv!("classify", &f, &cap, flags), 2);
        assert!(
            err.contains(named) && err.contains("pcap"),
            "{flags}: {err}"
        );
    }
    // What a capture is read as may still be said.
    succeeds(bl().args(argv!("classify", &f, &cap, "--format pcap --key-type flow")));
    // --per-packet owns standard output.
    let err = fails(&argv!("classify", &f, &cap, "--per-packet --bitmap -"), 2);
    assert!(err.contains("--bitmap -"), "{err}");
}
