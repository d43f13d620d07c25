//! Truthful reports (issue #27 items 1, 2 and the build/stats parts of 5 and 6): rates, warnings
//! and `stats` lines rest on the filter's bits, not on the recorded inserts; the same flags give
//! the same block count for every cell kind; standard input is spooled for the first pass; an
//! empty input is a warning; `stats` shows the key type and a scalable filter's stages.

mod common;

use common::*;

/// A word list of `n` distinct lines repeated `times` times.
fn repeated(n: usize, times: usize) -> String {
    lines("word", n).repeat(times)
}

/// Runs `bloomlanes ARGS` with `input` on standard input; it must succeed: its JSON report and
/// standard error.
fn with_stdin(
    args: Vec<std::ffi::OsString>,
    input: impl Into<Vec<u8>>,
) -> (serde_json::Value, String) {
    let out = succeeds(bl().args(args).write_stdin(input.into()));
    let v = serde_json::from_slice(&out.stdout).expect("JSON output");
    (v, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn repeated_keys_report_the_rate_of_the_bits_not_of_the_inserts() {
    let d = tmp();
    let w3 = write(&d, "w3.txt", repeated(20_000, 3));
    let f = at(&d, "w3.blf");
    let out = succeeds(bl().args(argv!("--json", "build", w3, "-o", f, "--key-type bytes")));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("warning"), "no over-capacity warning: {err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["keys"], 60_000, "the inserts read");
    let distinct = v["distinct_keys_estimated"].as_f64().unwrap();
    let error = v["distinct_keys_standard_error"].as_f64().unwrap();
    assert!(error > 0.0 && error < 400.0, "{error}");
    assert!(
        (distinct - 20_000.0).abs() < 4.0 * error,
        "{distinct} ± {error}"
    );
    let fpr = v["expected_fpr"].as_f64().unwrap();
    assert!(fpr < 0.01, "built: {fpr}");
    assert!(
        v["keys_per_second"].as_f64().unwrap() <= v["insert_keys_per_second"].as_f64().unwrap()
    );

    let st = json(&["stats", s(&f)]);
    assert_eq!(st["recorded_keys"], 60_000);
    assert_eq!(st["inserts_recorded"], 60_000);
    assert_eq!(st["key_type"], "bytes");
    let fpr = st["expected_fpr"].as_f64().unwrap();
    assert!(fpr < 0.01, "stats: {fpr}");
    assert_eq!(st["fpr_from_bits"], st["expected_fpr"]);
    let bpk = st["bits_per_key"].as_f64().unwrap();
    assert!(bpk > 9.0, "per distinct key: {bpk}");
    // The rate shown is the one measured on absent keys.
    let absent = write(&d, "absent.txt", lines("absent", 50_000));
    let measured = matches(&f, &absent) as f64 / 50_000.0;
    let sigma = (fpr * (1.0 - fpr) / 50_000.0).sqrt();
    assert!(
        (measured - fpr).abs() < 5.0 * sigma + 1e-4,
        "{measured} vs {fpr}"
    );

    let text = succeeds(bl().args(["stats", s(&f)]));
    let text = String::from_utf8_lossy(&text.stdout);
    says(
        &text,
        &[
            "key type:           bytes",
            "inserts recorded:   60000",
            "distinct keys:      about",
        ],
    );
}

#[test]
fn an_undersized_filter_is_reported_by_the_rate_of_its_bits() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 5000));
    let f = at(&d, "small.blf");
    let out = succeeds(bl().args(argv!("build", keys, "-o", f, "--capacity 500")));
    let err = String::from_utf8_lossy(&out.stderr);
    says(&err, &["warning", "about", "distinct keys", "--capacity"]);
}

#[test]
fn every_cell_kind_reports_the_rate_of_its_non_zero_cells() {
    let d = tmp();
    let w3 = write(&d, "w3.txt", repeated(5000, 3));
    for kind in [
        "counting",
        "stable",
        "window --window-keys 100000",
        "scalable",
    ] {
        let f = at(&d, "k.blf");
        let v = build(&w3, &f, &format!("--kind {kind} --key-type bytes"));
        let st = json(&["stats", s(&f)]);
        let fpr = st["expected_fpr"].as_f64().unwrap();
        assert!(fpr < 0.01, "{kind}: {fpr} (built {})", v["expected_fpr"]);
        let recorded = st["inserts_recorded"].as_u64().unwrap();
        if kind == "scalable" {
            // An insert looks the key up first: repeats (and the rare key a stage already
            // answers) are not inserted again.
            assert!(recorded <= 5000 && recorded > 4900, "{kind}: {recorded}");
        } else {
            assert_eq!(recorded, 15_000, "{kind}");
        }
        let distinct = st["distinct_keys_estimated"].as_f64().unwrap();
        match kind {
            // A stable filter forgets as it goes.
            "stable" => assert!(distinct > 3000.0 && distinct < 5200.0, "{kind}: {distinct}"),
            _ => assert!((distinct - 5000.0).abs() < 200.0, "{kind}: {distinct}"),
        }
        assert_eq!(st["key_type"], "bytes", "{kind}");
    }
}

#[test]
fn counting_stable_and_spatial_builds_get_the_static_block_count() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 20_000));
    let blocks = |flags: &str| build(&keys, &at(&d, "f.blf"), flags)["blocks"].clone();
    let static_blocks = blocks("--key-type bytes");
    assert_eq!(blocks("--kind counting --key-type bytes"), static_blocks);
    assert_eq!(blocks("--kind stable --key-type bytes"), static_blocks);
    // A spatial filter of the same keys (one class) sizes alike.
    let f = at(&d, "sp.blf");
    json(&argv!(
        "build",
        "-o",
        f,
        "--kind spatial --key-type bytes --class",
        format!("all={}", keys.display()).as_str()
    ));
    assert_eq!(json(&["stats", s(&f)])["blocks"], static_blocks);
    // The same keys from standard input (spooled, then counted) size alike too.
    let (v, _) = with_stdin(
        argv!(
            "--json",
            "build",
            "-",
            "-o",
            at(&d, "in.blf"),
            "--kind counting --key-type bytes"
        ),
        std::fs::read(&keys).unwrap(),
    );
    assert_eq!(v["blocks"], static_blocks);
}

#[test]
fn default_block_counts_fold_and_similar_inputs_merge() {
    let d = tmp();
    let a = write(&d, "a.txt", lines("a", 10_000));
    let b = write(&d, "b.txt", lines("b", 10_100));
    let (fa, fb) = (at(&d, "a.blf"), at(&d, "b.blf"));
    let za = build(&a, &fa, "--layout 8x32")["blocks"].as_u64().unwrap();
    let zb = build(&b, &fb, "--layout 8x32")["blocks"].as_u64().unwrap();
    for z in [za, zb] {
        let e = 63 - z.leading_zeros() - 2;
        assert!(z.is_multiple_of(1 << e), "{z} is m × 2^e with m in 4..=7");
    }
    assert_eq!(za, zb, "similar inputs get equal block counts");
    let m = at(&d, "m.blf");
    json(&["merge", s(&fa), s(&fb), "-o", s(&m)]);
    // The rate target is still met.
    let st = json(&["stats", s(&fa)]);
    assert!(st["expected_fpr"].as_f64().unwrap() <= 0.01);
}

#[test]
fn standard_input_is_spooled_for_the_first_pass_and_removed() {
    let d = tmp();
    let text = lines("k", 3000);
    let f = at(&d, "s.blf");
    let (v, err) = with_stdin(argv!("--json", "build", "-", "-o", f), text.clone());
    says(&err, &["<stdin>", "temporary file"]);
    assert_eq!(v["capacity"]["source"], "counted");
    assert_eq!(v["inputs"][0]["path"], "<stdin>");
    // Byte for byte the filter of the same keys from a file; no temporary file is left.
    let keys = write(&d, "k.txt", &text);
    let g = at(&d, "g.blf");
    build(&keys, &g, "");
    assert_eq!(std::fs::read(&f).unwrap(), std::fs::read(&g).unwrap());
    let mut left = files(&d);
    left.sort();
    assert_eq!(left, ["g.blf", "k.txt", "s.blf"]);
    // A bad line is named as standard input's, and the copy is removed on the error too.
    let bad = format!("{text}\u{0}\u{1}\u{2}not text\n");
    let out = bl()
        .args(argv!(
            "build",
            "-",
            "-o",
            at(&d, "bad.blf"),
            "--key-type u64"
        ))
        .write_stdin(bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("<stdin>") && !err.contains(".bloomlanes-input"),
        "{err}"
    );
    let mut left = files(&d);
    left.sort();
    assert_eq!(left, ["g.blf", "k.txt", "s.blf"]);
}

#[test]
fn an_empty_input_builds_with_a_warning() {
    let d = tmp();
    let empty = write(&d, "empty.txt", "");
    let f = at(&d, "e.blf");
    let out = succeeds(bl().args(argv!("--json", "build", empty, "-o", f)));
    let err = String::from_utf8_lossy(&out.stderr);
    says(&err, &["warning", "no keys read from", "empty.txt"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["warnings"][0].as_str().unwrap().contains("no keys read"));
}

#[test]
fn a_scalable_filter_shows_its_total_blocks_and_each_stage() {
    let d = tmp();
    let (_, f, st, stages) = scalable(&d, 5000, "sc.blf", "--capacity 500");
    assert!(stages.len() >= 3, "{stages:?}");
    let total: u64 = stages.iter().map(|t| t["blocks"].as_u64().unwrap()).sum();
    let bytes: u64 = stages.iter().map(|t| t["bytes"].as_u64().unwrap()).sum();
    assert_eq!(st["blocks"], total);
    assert_eq!(st["bytes"], bytes);
    assert!(stages
        .iter()
        .all(|t| t["expected_fpr"].as_f64().is_some() && t["inserts_recorded"].as_u64().is_some()));
    let text = succeeds(bl().args(["stats", s(&f)]));
    let text = String::from_utf8_lossy(&text.stdout);
    says(
        &text,
        &[
            &format!("blocks:             {total} in {} stages", stages.len()),
            "stage 0:",
            "keys of",
            "fpr",
        ],
    );
}

#[test]
fn numbers_on_standard_input_are_hashed_as_text_with_a_warning() {
    // `seq 1 1000 | bloomlanes build -` was refused until --key-type was given; the filter
    // records the key type, so hashing the text as written is safe: a later query of the same
    // text finds it, and a query of u64 keys is refused instead of answered "absent".
    let d = tmp();
    let digits: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let f = at(&d, "n.blf");
    let (v, err) = with_stdin(argv!("--json", "build", "-", "-o", f), digits);
    says(
        &err,
        &["<stdin>: every line looks like a number", "--key-type"],
    );
    assert!(!err.contains(".bloomlanes-input"), "{err}");
    assert_eq!(v["inputs"][0]["key_type"], "bytes", "{v}");
    let q = write(&d, "q.txt", "5\n999\n");
    let out = bl().args(argv!("query", f, q)).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "5\n999\n");
    let typed = bl()
        .args(argv!("query", f, q, "--key-type u64"))
        .output()
        .unwrap();
    assert_eq!(typed.status.code(), Some(2), "{typed:?}");
    says(&String::from_utf8_lossy(&typed.stderr), &["u64", "bytes"]);
}
