//! Filters that answer *which*: `build --kind spatial` (a class per key) and `build --kind
//! retrieval` (a value per key) from CSV key and label columns or one file per class, `query`
//! printing classes and values (and `--counts` of counting filters), `stats`' per-class table,
//! each bad input refused with its file, line and column, nothing written, and `verify` of both
//! kinds with generated labels.

mod common;

use common::*;

const RULES: &str = "ip,action\n10.0.0.1,deny\n10.0.0.2,allow\n10.0.0.3,mirror\n10.0.0.4,allow\n";

/// The class each key of `keys` is answered in (`query --json`).
fn classes(filter: &std::path::Path, keys: &std::path::Path) -> Vec<String> {
    let v = json(&argv!("query", filter, keys));
    v["answers"]
        .as_array()
        .expect("answers")
        .iter()
        .map(|a| {
            let label = if a["class"].is_null() {
                &a["value"]
            } else {
                &a["class"]
            };
            label
                .as_str()
                .map_or_else(|| label.to_string(), String::from)
        })
        .collect()
}

#[test]
fn spatial_from_a_class_column_answers_every_key_its_class_or_higher() {
    let d = tmp();
    let rules = write(&d, "rules.csv", RULES);
    let f = at(&d, "f.blf");
    let b = build(
        &rules,
        &f,
        "--kind spatial --csv-column ip --class-column action --classes allow,mirror,deny",
    );
    assert_eq!(b["kind"]["cell_bits"], 4, "3 classes fit 4-bit cells");
    let table = b["labels"]["classes"].as_array().unwrap();
    // Class 1 is the lowest priority: the first named.
    let names: Vec<&str> = table.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["allow", "mirror", "deny"]);
    let keys: Vec<u64> = table.iter().map(|c| c["keys"].as_u64().unwrap()).collect();
    assert_eq!(keys, [2, 1, 1]);
    let q = write(&d, "q.txt", "10.0.0.1\n10.0.0.2\n10.0.0.3\n10.0.0.4\n");
    let got = classes(&f, &q);
    assert_eq!(got[0], "deny", "the top class is never reported otherwise");
    let rank = |c: &str| names.iter().position(|n| *n == c).unwrap();
    for (g, want) in got.iter().zip(["deny", "allow", "mirror", "allow"]) {
        assert!(rank(g) >= rank(want), "{g} below {want}");
    }
    // Text output: key, tab, class; an absent key says so (a small filter: most absent keys
    // are answered absent).
    let absent = write(&d, "absent.txt", lines("nowhere-", 200));
    let out = bl().args(argv!("query", &f, &absent)).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let absent = text.lines().filter(|l| l.ends_with("\tabsent")).count();
    assert!(absent > 150);
    // grep's exit status: 0 when some key has a class, 1 when none has.
    assert_eq!(out.status.code(), Some(i32::from(absent == 200)), "{text}");
}

#[test]
fn classes_in_first_appearance_order_and_per_class_files_agree() {
    let d = tmp();
    let rules = write(&d, "rules.csv", RULES);
    let by_column = at(&d, "a.blf");
    let b = build(
        &rules,
        &by_column,
        "--kind spatial --csv-column ip --class-column action",
    );
    assert_eq!(
        per_class(&b["labels"], "name"),
        ["deny", "allow", "mirror"],
        "first seen = class 1"
    );
    let deny = write(&d, "deny.txt", "10.0.0.1\n");
    let allow = write(&d, "allow.txt", "10.0.0.2\n10.0.0.4\n");
    let mirror = write(&d, "mirror.txt", "10.0.0.3\n");
    let by_files = at(&d, "b.blf");
    json(&argv!(
        "build",
        "-o",
        &by_files,
        "--kind spatial --class",
        format!("allow={}", s(&allow)).as_str(),
        "--class",
        format!("mirror={}", s(&mirror)).as_str(),
        "--class",
        format!("deny={}", s(&deny)).as_str()
    ));
    let q = write(&d, "q.txt", "10.0.0.1\n10.0.0.2\n10.0.0.3\n10.0.0.4\n");
    assert_eq!(classes(&by_files, &q)[0], "deny");
    let st = json(&argv!("stats", &by_files));
    let table = st["figures"]["classes"].as_array();
    let table = table.unwrap_or_else(|| panic!("a per-class table in {st}"));
    assert_eq!(table.len(), 3);
    for c in table {
        let fpr = c["expected_fpr"].as_f64().unwrap();
        assert!(fpr > 0.0 && fpr < 0.1, "{c}");
        assert!(c["expected_emersion"].as_f64().is_some());
    }
    assert_eq!(table[2]["name"], "deny");
    assert_eq!(table[2]["expected_emersion"].as_f64(), Some(0.0));
}

#[test]
fn retrieval_returns_every_built_value_and_absent_for_others() {
    let d = tmp();
    let mut csv = String::from("key,value\n");
    for i in 0..5000u32 {
        csv.push_str(&format!("k{i},{}\n", i * 7 % 256));
    }
    let pairs = write(&d, "pairs.csv", &csv);
    let f = at(&d, "r.blf");
    let b = build(
        &pairs,
        &f,
        "--kind retrieval --csv-column key --value-column value --value-bits 8",
    );
    assert_eq!(b["labels"]["check_bits"], 8, "default check bits");
    assert_eq!(b["labels"]["keys"], 5000);
    let keys = write(&d, "keys.txt", lines("k", 5000));
    let got = classes(&f, &keys);
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g, &(i as u32 * 7 % 256).to_string(), "key k{i}");
    }
    let others = write(&d, "others.txt", lines("other-", 2000));
    let v = json(&argv!("query", &f, &others, "--count"));
    let absent = v["absent"].as_u64().unwrap();
    assert!(
        absent > 1900,
        "8 check bits: about 1/256 answered ({absent} absent)"
    );
    let st = json(&argv!("stats", &f));
    assert!(st.to_string().contains("bits_per_key"), "{st}");
}

#[test]
fn counts_of_a_counting_filter() {
    let d = tmp();
    let keys = write(&d, "k.txt", "a\na\na\nb\n");
    let f = at(&d, "c.blf");
    build(&keys, &f, "--kind counting");
    let q = write(&d, "q.txt", "a\nb\nzzz-not-there\n");
    let counts = answers(&f, &q, "--counts", "count");
    assert!(counts[0].as_u64().unwrap() >= 3, "a count is a JSON number");
    assert!(counts[1].as_u64().unwrap() >= 1);
    let plain = at(&d, "static.blf");
    build(&keys, &plain, "");
    let err = fails(&argv!("query", &plain, &q, "--counts"), 2);
    assert!(err.contains("--counts needs a counting"), "{err}");
}

/// Runs a build that must fail; returns stderr, and checks that nothing was written.
fn refused(d: &tempfile::TempDir, input: &std::path::Path, flags: &str) -> String {
    let f = at(d, "bad.blf");
    let out = bl()
        .args(argv!("build", input, "-o", &f, flags))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{flags}: succeeded");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!f.exists(), "a refused build wrote {}", f.display());
    err
}

#[test]
fn more_classes_than_the_cells_hold_names_file_line_and_column() {
    let d = tmp();
    let mut csv = String::from("k,c\n");
    for i in 0..16 {
        csv.push_str(&format!("key{i},class{i}\n"));
    }
    let p = write(&d, "many.csv", &csv);
    let err = refused(&d, &p, "--kind spatial --class-column c --cell-bits 4");
    says(&err, &["many.csv", "line 17", "column \"c\"", "at most 15"]);
    // Without --cell-bits, 16 classes take 8-bit cells.
    let f = at(&d, "ok.blf");
    assert_eq!(
        build(&p, &f, "--kind spatial --class-column c")["kind"]["cell_bits"],
        8
    );
}

#[test]
fn an_empty_class_name_names_file_line_and_column() {
    let d = tmp();
    let p = write(&d, "empty.csv", "k,c\na,x\nb,\n");
    let err = refused(&d, &p, "--kind spatial --class-column c");
    says(&err, &["empty.csv", "line 3", "column \"c\"", "empty"]);
    let listed = write(&d, "listed.csv", "k,c\na,x\nb,y\n");
    let err = refused(&d, &listed, "--kind spatial --class-column c --classes x");
    says(&err, &["line 3", "\"y\""]);
}

#[test]
fn a_value_wider_than_value_bits_names_file_line_and_column() {
    let d = tmp();
    let p = write(&d, "wide.csv", "k,v\na,1\nb,255\nc,256\n");
    let err = refused(&d, &p, "--kind retrieval --value-column v --value-bits 8");
    says(&err, &["wide.csv", "line 4", "column \"v\"", "256"]);
    // A value that is not a number is quoted once, as every other field is.
    let p = write(&d, "word.csv", "k,v\na,1\nb,x\n");
    let err = refused(&d, &p, "--kind retrieval --value-column v --value-bits 8");
    says(
        &err,
        &["word.csv", "line 3", "\"x\" is not an unsigned integer"],
    );
}

#[test]
fn a_key_with_two_values_is_named_with_both_lines() {
    let d = tmp();
    let p = write(&d, "twice.csv", "k,v\nalpha,1\nbeta,2\nalpha,1\nbeta,3\n");
    let err = refused(&d, &p, "--kind retrieval --value-column v --value-bits 4");
    says(&err, &["twice.csv", "line 5", "\"beta\"", "line 3"]);
}

/// `verify --kind all` (and `--kind spatial|retrieval` without inputs) checks both kinds with
/// labels generated for its sample keys, on every CPU backend path, and exits 0; the GPU, not
/// a row of these kinds, is a visible `SKIP:` line.
#[test]
fn verify_all_checks_spatial_and_retrieval_with_generated_labels() {
    let v = json(&argv!("verify --keys 1500 --layout 8x64 --hdl-keys 0"));
    assert_eq!(v["ok"], true, "{v}");
    let rows = v["rows"].as_array().unwrap();
    for kind in ["spatial", "retrieval"] {
        let of_kind: Vec<&serde_json::Value> = rows.iter().filter(|r| r["kind"] == kind).collect();
        assert!(of_kind.len() >= 2, "{kind}: scalar and a SIMD path: {v}");
        assert!(of_kind.iter().any(|r| r["backend"] == "scalar"), "{kind}");
        assert!(of_kind.iter().all(|r| r["identical"] == true), "{kind}");
    }
    for kind in ["spatial", "retrieval"] {
        let o = succeeds(bl().args(argv!(
            "verify --keys 800 --layout 8x32 --hdl-keys 0 --kind",
            kind
        )));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("all backends agree"), "{text}");
        let named: Vec<&str> = text.lines().filter(|l| l.contains(" 8x32 ")).collect();
        assert!(
            named.len() >= 2 && named.iter().all(|l| l.contains(kind)),
            "{text}"
        );
        assert!(
            text.contains("SKIP: gpu"),
            "the GPU is named as not checked: {text}"
        );
    }
}

/// Issue 26: `export --hdl` of a spatial filter writes its pipeline (insert a class, look up the
/// smallest) with the kit every export has; one port only, and no static form. With Icarus and
/// make installed, the exported bench (banks loaded from the filter) passes `make sim`.
#[test]
fn spatial_filters_export_their_pipeline_with_the_kit() {
    let d = tmp();
    let rules = write(&d, "rules.csv", RULES);
    let f = at(&d, "f.blf");
    build(
        &rules,
        &f,
        "--kind spatial --csv-column ip --class-column action",
    );
    let (v, readme) = exports_its_kit(&d, &f, "spat", "m0_min", "spatial filter");
    assert_eq!(v["form"], "hdl-spatial");
    assert_eq!(
        (v["cell_bits"].as_u64(), v["classes"].as_u64()),
        (Some(4), Some(3))
    );
    assert!(readme.contains("`s0_value`"), "{readme}");
    make_sim_passes(
        &at(&d, "rtl"),
        "spatial_filters_export_their_pipeline_with_the_kit",
    );
}

/// `d/pairs.csv` of 2000 keys `key(i)` with 8-bit values `7i mod 256`, and the retrieval table
/// `d/r.blf` built from it with `check_bits` check bits: `(csv, table)`.
fn retrieval_table(
    d: &tempfile::TempDir,
    key: impl Fn(u32) -> String,
    check_bits: u32,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut csv = String::from("key,value\n");
    for i in 0..2000u32 {
        csv.push_str(&format!("{},{}\n", key(i), i * 7 % 256));
    }
    let pairs = write(d, "pairs.csv", &csv);
    let f = at(d, "r.blf");
    let kind = "--kind retrieval --csv-column key --value-column value --value-bits 8";
    build(&pairs, &f, &format!("{kind} --check-bits {check_bits}"));
    (pairs, f)
}

/// The checks every cell kind's `export --hdl` passes: the export of `f` into `d/rtl` with top
/// `top` (keys up to 16 bytes) writes the kit, whose README names the kind and the answer port
/// `answer`; `--ports 2` (and, for a retrieval table, which has no projection, `--static`) are
/// refused naming the kind (`what`) and write nothing.
/// Returns the export's JSON and the README.
fn exports_its_kit(
    d: &tempfile::TempDir,
    f: &std::path::Path,
    top: &str,
    answer: &str,
    what: &str,
) -> (serde_json::Value, String) {
    let out = at(d, "rtl");
    let v = json(&argv!(
        "export",
        f,
        "--hdl",
        out,
        format!("--top {top} --max-key-bytes 16").as_str()
    ));
    let readme = hdl_kit(&out, top, answer);
    let kind = what.split(' ').next().expect("a kind");
    assert!(readme.contains(kind), "{readme}");
    let e = fails(&argv!("export", f, "--hdl", at(d, "x"), "--ports 2"), 2);
    assert!(e.contains("one port"), "{e}");
    let static_out = at(d, "y.blf");
    if kind == "spatial" {
        // A spatial filter's projection is a static filter of all its keys.
        json(&["export", s(f), "--static", s(&static_out)]);
        assert_eq!(json(&["stats", s(&static_out)])["kind"]["name"], "static");
        std::fs::remove_file(&static_out).unwrap();
    } else {
        let e = fails(&["export", s(f), "--static", s(&static_out)], 2);
        assert!(e.contains(&format!("cannot export a {what}")), "{e}");
    }
    assert!(!at(d, "x").exists() && !static_out.exists());
    (v, readme)
}

/// Issue 26: `export --hdl` of a retrieval table writes its pipeline with the whole kit (banks
/// from the table, the lookups-only self-test's `<top>_selftest.hex`), refuses more ports and
/// the other targets, and its `make sim` passes: the table keeps no keys, so the stimulus looks
/// up random keys, those the table finds (one in 16 with 4 check bits) as the present ones.
#[test]
fn retrieval_tables_export_their_pipeline_with_the_kit() {
    let d = tmp();
    let (_, f) = retrieval_table(&d, |i| format!("k{i}"), 4);
    let (v, readme) = exports_its_kit(&d, &f, "rt", "m0_found_value", "retrieval");
    assert_eq!(v["form"], "hdl-retrieval");
    assert_eq!(
        (v["value_bits"].as_u64(), v["check_bits"].as_u64()),
        (Some(8), Some(4))
    );
    assert!(readme.contains("rt_selftest.hex"), "{readme}");
    let out = at(&d, "rtl");
    assert!(out.join("rt_selftest.hex").is_file());
    make_sim_passes(&out, "retrieval_tables_export_their_pipeline_with_the_kit");
}

/// Runs `make sim` in the export `dir`, which must pass all 1000 answers; skipped (said so,
/// for `test`) when iverilog or make is not installed.
fn make_sim_passes(dir: &std::path::Path, test: &str) {
    let have = |t: &str| {
        std::process::Command::new(t)
            .arg("--version")
            .output()
            .is_ok()
    };
    if !have("iverilog") || !have("make") {
        bloomlanes_testkit::skip(format_args!(
            "{test} (make sim): iverilog or make is not installed"
        ));
        return;
    }
    let o = std::process::Command::new("make")
        .args(["-s", "sim"])
        .current_dir(dir)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && text.contains("PASS: 1000 answers"),
        "{text}"
    );
}

/// The lines of a retrieval export's `<top>_selftest.hex` for a design of keys of at most
/// `max` bytes and `value_bits`-bit values: each line's key (`{2'b00, answer, length, key}`,
/// key byte i in bits 8i to 8i+7) and core's answer (`1 << value_bits | value` when found).
fn selftest_lines(path: &std::path::Path, max: usize, value_bits: usize) -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(path).unwrap();
    let field = |bits: &[bool], lo: usize, n: usize| {
        (0..n).fold(0u32, |x, j| x | u32::from(bits[lo + j]) << j)
    };
    text.lines()
        .map(|line| {
            // Bit i of the word, least significant first.
            let bits: Vec<bool> = line
                .chars()
                .rev()
                .flat_map(|c| {
                    let d = c.to_digit(16).expect("hex");
                    (0..4).map(move |j| d >> j & 1 == 1)
                })
                .collect();
            let len = field(&bits, 8 * max, 7) as usize;
            let key: Vec<u8> = (0..len).map(|i| field(&bits, 8 * i, 8) as u8).collect();
            let answer = field(&bits, 8 * max + 7, value_bits + 1);
            (String::from_utf8_lossy(&key).into_owned(), answer)
        })
        .collect()
}

/// Issue 26 follow-up: with many check bits a random key is almost never found, so without its
/// keys a retrieval table's exported stimulus looked up absent keys only; `export --keys` gives
/// it the keys the table was built from (the same CSV), the summary says how many the table
/// holds, the self-test looks them up expecting their built values, and `make sim` passes.
#[test]
fn retrieval_export_looks_up_the_keys_given_with_their_values() {
    let d = tmp();
    // Keys of 10 bytes: no random key of the stimulus's finds one (k1 to k9 would be found
    // among random 2-byte keys).
    let (pairs, f) = retrieval_table(&d, |i| format!("key-{i:06}"), 24);
    let out = at(&d, "rtl");
    let v = json(&argv!(
        "export",
        f,
        "--hdl",
        out,
        "--top rt --max-key-bytes 16 --keys",
        pairs,
        "--csv-column key"
    ));
    assert_eq!(v["check_bits"].as_u64(), Some(24));
    let keys = &v["keys"];
    assert_eq!(
        (keys["keys"].as_u64(), keys["found"].as_u64()),
        (Some(2000), Some(2000)),
        "{v}"
    );
    assert_eq!(keys["complete"], true);
    assert!(v["warnings"].as_array().unwrap().is_empty(), "{v}");
    let lines = selftest_lines(&out.join("rt_selftest.hex"), 16, 8);
    assert_eq!(lines.len(), 64);
    let found: Vec<&(String, u32)> = lines.iter().filter(|(_, a)| *a != 0).collect();
    assert!(
        found.len() >= 20,
        "{} of 64 lookups found: {lines:?}",
        found.len()
    );
    let mut distinct = std::collections::BTreeSet::new();
    for (key, answer) in found {
        let i: u32 = key
            .strip_prefix("key-")
            .and_then(|n| n.parse().ok())
            .expect(key);
        assert_eq!(*answer, 1 << 8 | (i * 7 % 256), "{key}");
        distinct.insert(i);
    }
    assert!(distinct.len() >= 10, "{distinct:?}");
    // Without --keys the stimulus finds none of them (random keys, one in 2^24 found).
    let bare = at(&d, "bare");
    let v = json(&argv!(
        "export",
        f,
        "--hdl",
        bare,
        "--top rt --max-key-bytes 16"
    ));
    assert!(v["keys"].is_null(), "{v}");
    let lines = selftest_lines(&bare.join("rt_selftest.hex"), 16, 8);
    assert!(lines.iter().all(|(_, a)| *a == 0), "{lines:?}");
    // The people's summary says how many of the keys the table holds.
    let o = succeeds(bl().args(argv!(
        "export",
        f,
        "--hdl",
        at(&d, "rtl2"),
        "--max-key-bytes 16 --keys",
        pairs
    )));
    let text = String::from_utf8_lossy(&o.stdout);
    says(
        &text,
        &[
            "2000 keys read from",
            "pairs.csv",
            "of which the table holds 2000",
        ],
    );
    make_sim_passes(
        &out,
        "retrieval_export_looks_up_the_keys_given_with_their_values",
    );
}

/// `export --keys` refuses a key file of another type than the table's naming the file (and
/// writes nothing), `--keys` for a kind whose stimulus inserts its own keys, and the key file's
/// reading options without `--keys`; keys the table does not hold are looked up, with a warning
/// when it holds none of them.
#[test]
fn retrieval_export_keys_of_another_type_are_refused_naming_the_file() {
    let d = tmp();
    let (pairs, f) = write_and_build(
        &d,
        "pairs.csv",
        "key,value\nalpha,1\nbeta,2\ngamma,3\n",
        "r.blf",
        "--kind retrieval --csv-column key --value-column value --value-bits 4 --check-bits 16",
    );
    let numbers = write(&d, "numbers.txt", "1\n2\n3\n");
    let rtl = at(&d, "rtl");
    let e = fails(
        &argv!(
            "export",
            f,
            "--hdl",
            rtl,
            "--max-key-bytes 8 --keys",
            numbers,
            "--key-type u64"
        ),
        2,
    );
    says(&e, &["numbers.txt", "u64", "bytes"]);
    assert!(!rtl.exists(), "nothing written");
    let e = fails(&argv!("export", f, "--hdl", rtl, "--csv-column key"), 2);
    says(&e, &["--csv-column", "--keys"]);
    let e = fails(
        &argv!("export", f, "--static", at(&d, "s.blf"), "--keys", pairs),
        2,
    );
    says(&e, &["--keys", "--hdl"]);
    let (keys, st) = write_and_build(&d, "keys.txt", "alpha\n", "s.blf", "");
    let e = fails(&argv!("export", st, "--hdl", rtl, "--keys", keys), 2);
    says(&e, &["--keys", "static", "retrieval"]);
    let other = write(&d, "other.txt", "delta\nepsilon\n");
    let v = json(&argv!(
        "export",
        f,
        "--hdl",
        rtl,
        "--max-key-bytes 8 --keys",
        other
    ));
    assert_eq!(v["keys"]["found"].as_u64(), Some(0), "{v}");
    let w = v["warnings"].to_string();
    assert!(
        w.contains("none of the 2 keys") && w.contains("other.txt"),
        "{w}"
    );
}
