//! What the tool tells its user and its pipes (issue #27, points 5 and 6): `dedup --json` keeps
//! the data alone on standard output, `parquet add-filters` says how much the file grew, a
//! static filter with kind metadata is named as such, `query`'s exit status is grep's, and the
//! input formats are described once (`bloomlanes help formats`), not in every command's help.

mod common;

use bloomlanes_host::bloomlanes_core::xxh64;
use common::*;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- dedup: the lines alone on standard output ------------------------------------------------

#[test]
fn dedup_json_keeps_standard_output_for_the_lines() {
    let d = tmp();
    let keys = write(&d, "k.txt", "a\nb\na\nc\nb\n");
    // Lines to standard output: stdout is exactly the lines, the JSON report is on stderr.
    let out = succeeds(bl().args(argv!("--json dedup --window-keys 10", keys)));
    assert_eq!(text(&out.stdout), "a\nb\nc\n");
    let report: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON on stderr");
    assert_eq!(
        (report["lines"].as_u64(), report["kept"].as_u64()),
        (Some(5), Some(3))
    );

    // Lines to a file: the JSON report is standard output, and nothing else is.
    let kept = at(&d, "kept.txt");
    let out = succeeds(bl().args(argv!("--json dedup --window-keys 10", keys, "-o", kept)));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(report["dropped"].as_u64(), Some(2));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "a\nb\nc\n");
}

#[test]
fn dedup_json_error_after_some_lines_stays_off_standard_output() {
    let d = tmp();
    let good = write(&d, "k.txt", lines("k", 50));
    let binary = write(&d, "bad.bin", b"\x00\x01\x02 not text\n");
    let out = bl()
        .args(argv!("--json dedup --window-keys 100", good, binary))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains('{') && !stdout.contains("error"),
        "{stdout}"
    );
    assert!(stdout.lines().all(|l| l.starts_with('k')), "{stdout}");
    let err = text(&out.stderr);
    says(&err, &["bad.bin", "\"error\"", "\"exit_code\": 1"]);
}

// ---- parquet add-filters: sizes before and after ----------------------------------------------

/// `bloomlanes [--json] parquet add-filters PLAIN -o OUT --column n`, which must succeed.
fn add_filters(plain: &std::path::Path, out: &std::path::Path, json: bool) -> Vec<u8> {
    let mut cmd = bl();
    if json {
        cmd.arg("--json");
    }
    let args = argv!("parquet add-filters", plain, "-o", out, "--column n");
    let o = succeeds(cmd.args(args));
    // Not on a terminal: no progress drawn.
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    o.stdout
}

#[test]
fn add_filters_reports_the_size_before_and_after() {
    let d = tmp();
    let plain = at(&d, "plain.parquet");
    parquet_of(&plain, &[2000, 2000]);
    let before = std::fs::metadata(&plain).unwrap().len();
    let out = at(&d, "with.parquet");
    let v: serde_json::Value = serde_json::from_slice(&add_filters(&plain, &out, true)).unwrap();
    let after = std::fs::metadata(&out).unwrap().len();
    assert!(after > before);
    assert_eq!(v["input_bytes"].as_u64(), Some(before), "{v}");
    assert_eq!(v["output_bytes"].as_u64(), Some(after), "{v}");
    let growth = v["growth"].as_f64().unwrap();
    assert!((growth - after as f64 / before as f64).abs() < 1e-9, "{v}");

    let said = text(&add_filters(&plain, &at(&d, "again.parquet"), false));
    let sizes = format!("{after} bytes, {before} before ({growth:.2}x the input)");
    says(&said, &[&sizes]);
}

// ---- a static filter whose header gives kind metadata -----------------------------------------

#[test]
fn static_filter_with_metadata_names_the_field_and_file() {
    let (d, _, f) = built("k.txt", lines("k", 100), "f.blf", "");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[30..32].copy_from_slice(&1u16.to_le_bytes());
    let check = xxh64(&bytes[..56], 0);
    bytes[56..64].copy_from_slice(&check.to_le_bytes());
    let bad = write(&d, "meta.blf", bytes);
    let err = fails(&argv!("stats", bad), 1);
    says(
        &err,
        &[
            "meta.blf",
            "metadata length field (bytes 30..32) is 1",
            "static",
            "must be 0",
        ],
    );
    assert!(!err.contains("payload length"), "{err}");
}

// ---- query: grep's exit status ----------------------------------------------------------------

#[test]
fn query_exits_as_grep_does() {
    let (d, keys, f) = built("k.txt", lines("k", 200), "f.blf", "--fpp 0.0001");
    let absent = write(&d, "absent.txt", lines("nope-", 5));
    let code = |args: Vec<std::ffi::OsString>| bl().args(args).output().unwrap().status.code();
    // Some key may be present: 0, listed, counted or as a bitmap.
    assert_eq!(code(argv!("query", f, keys)), Some(0));
    assert_eq!(code(argv!("query", f, keys, "--count")), Some(0));
    // None is: 1, whatever the output.
    assert_eq!(code(argv!("query", f, absent)), Some(1));
    assert_eq!(code(argv!("query", f, absent, "--count")), Some(1));
    assert_eq!(code(argv!("--json query", f, absent)), Some(1));
    let bits = at(&d, "bits");
    assert_eq!(code(argv!("query", f, absent, "--bitmap", bits)), Some(1));
    // --absent lists the others: as grep -v.
    assert_eq!(code(argv!("query", f, absent, "--absent")), Some(0));
    assert_eq!(code(argv!("query", f, keys, "--absent")), Some(1));
    // Any error is 2: a missing filter, a bad flag.
    let err = fails(&argv!("query", at(&d, "missing.blf"), keys), 2);
    says(&err, &["missing.blf"]);
    fails(&argv!("query", f, keys, "--no-such-flag"), 2);
    // With --json the error's report says the same status.
    let out = bl()
        .args(argv!("--json query", at(&d, "missing.blf"), keys))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["exit_code"], 2);
}

// ---- help: the formats stated once ------------------------------------------------------------

fn help(args: &str) -> String {
    text(&succeeds(bl().args(args.split_whitespace())).stdout)
}

/// `--help` line counts before the formats topic (measured 2026-11-29): build 155, query 92;
/// after: 137 and 76 (the removed lines are the long paragraphs).
const BUILD_HELP_LINES_BEFORE: usize = 155;
const QUERY_HELP_LINES_BEFORE: usize = 92;

#[test]
fn formats_are_described_once_and_pointed_at() {
    let pointer = "bloomlanes help formats";
    for (cmd, before) in [
        ("build", BUILD_HELP_LINES_BEFORE),
        ("query", QUERY_HELP_LINES_BEFORE),
    ] {
        let h = help(&format!("{cmd} --help"));
        says(&h, &[pointer, "--format <FORMAT>"]);
        assert!(!h.contains("Packet captures (pcap or pcapng"), "{cmd}: {h}");
        let n = h.lines().count();
        assert!(
            n + 15 <= before,
            "{cmd} --help: {n} lines (before: {before})"
        );
    }
    says(&help("--help"), &[pointer, "Exit status"]);
    let topic = help("help formats");
    says(
        &topic,
        &[
            "auto",
            "lines",
            "decimal",
            "flows",
            "csv",
            "u64",
            "pcap",
            "pcapng",
            "Key types",
        ],
    );
    assert_eq!(help("formats").trim(), bl_formats_text().trim());
    // A wrong --format value still names them all.
    let err = fails(&["build", "-", "-o", "x.blf", "--format", "nope"], 2);
    says(&err, &["auto", "lines", "pcap"]);
}

/// What `bloomlanes formats` prints: the same topic as `help formats` describes.
fn bl_formats_text() -> String {
    let v = json(&["formats"]);
    v["help"].as_str().unwrap().to_string()
}
