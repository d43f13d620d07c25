//! Rule tables as people write and grow them: spaces around a class name are the file's, not
//! the name's; a key listed in two classes is built (the higher class wins, as a table with
//! priorities would have it) with a warning that names the key and both places; `insert` adds
//! keys with their classes to a spatial filter (a whole input in one class, or a class column),
//! refuses what the filter does not hold without touching the file, and two inserts at once
//! both land.

mod common;

use std::path::PathBuf;

use common::*;

/// A spatial build or insert with the classes in CSV column `c`.
const BY_C: &str = "--kind spatial --class-column c";

#[test]
fn spaces_around_class_names_are_not_part_of_the_names() {
    let d = tmp();
    let rules = write(&d, "rules.csv", "k,c\r\na,deny \r\nb, deny\r\nc,allow\r\n");
    let f = at(&d, "f.blf");
    // The list as typed after a comma-space habit: "allow, deny" (one argument).
    let classes = std::path::Path::new("allow, deny");
    let b = json(&argv!(
        "build",
        &rules,
        "-o",
        &f,
        "--kind spatial --class-column c --classes",
        classes
    ));
    let names = per_class(&b["labels"], "name");
    assert_eq!(names, ["allow", "deny"], "one class deny, not two");
    assert_eq!(per_class(&b["labels"], "keys"), [1, 2]);
    assert_eq!(b["warnings"], serde_json::json!([]));
    let q = write(&d, "q.txt", "a\nb\n");
    assert_eq!(answers(&f, &q, "", "class"), ["deny", "deny"]);
}

#[test]
fn a_key_in_two_classes_is_built_with_a_warning_naming_both_lines() {
    let d = tmp();
    let rules = write(
        &d,
        "rules.csv",
        "k,c\nalpha,allow\nbeta,deny\nalpha,deny\ngamma,allow\ngamma,allow\ndelta,deny\ndelta,allow\n",
    );
    let f = at(&d, "f.blf");
    let out = succeeds(bl().args(argv!(
        "--json",
        "build",
        &rules,
        "-o",
        &f,
        "--kind spatial --class-column c"
    )));
    let err = String::from_utf8_lossy(&out.stderr);
    // Classes by first appearance: allow 1, deny 2. alpha and delta are listed in both,
    // gamma twice in one (not a conflict); alpha comes first.
    says(
        &err,
        &[
            "warning",
            "\"alpha\"",
            "class allow (",
            "rules.csv: line 2",
            "class deny (",
            "line 4",
        ],
    );
    says(&err, &["and 1 other key", "reports it as deny"]);
    assert!(!err.contains("gamma"), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["warnings"].as_array().unwrap().len(), 1, "{report}");
    let q = write(&d, "q.txt", "alpha\ndelta\n");
    assert_eq!(
        answers(&f, &q, "", "class"),
        ["deny", "deny"],
        "the higher class wins"
    );
}

/// Named with their lines, counted as an editor counts them (a blank line, CRLF endings).
#[test]
fn per_class_files_that_share_a_key_are_named() {
    let d = tmp();
    let deny = write(&d, "deny.txt", "k1\nk2\n");
    let mirror = write(&d, "mirror.txt", "k3\r\n\r\nk2\r\n");
    let f = at(&d, "f.blf");
    let out = succeeds(bl().args(argv!(
        "build",
        "-o",
        &f,
        "--kind spatial --class",
        PathBuf::from(format!("deny={}", deny.display())),
        "--class",
        PathBuf::from(format!("mirror={}", mirror.display()))
    )));
    let err = String::from_utf8_lossy(&out.stderr);
    says(
        &err,
        &[
            "\"k2\"",
            "class deny (",
            "deny.txt: line 2)",
            "class mirror (",
            "mirror.txt: line 3)",
        ],
    );
}

/// Emersion (a key whose cells all hold higher classes) is no conflict: a crowded filter
/// reports many keys above their class and the build warns of none.
#[test]
fn emersion_is_not_taken_for_a_key_in_two_classes() {
    let d = tmp();
    let mut csv = String::from("k,c\n");
    let classes = ["allow", "mirror", "deny"];
    for i in 0..6000 {
        csv.push_str(&format!("key{i},{}\n", classes[i % 3]));
    }
    let rules = write(&d, "rules.csv", &csv);
    let f = at(&d, "f.blf");
    let b = build(&rules, &f, "--kind spatial --class-column c --fpp 0.3");
    assert_eq!(b["warnings"], serde_json::json!([]));
    let keys = write(
        &d,
        "keys.txt",
        (0..6000).map(|i| format!("key{i}\n")).collect::<String>(),
    );
    let above = answers(&f, &keys, "", "class")
        .iter()
        .enumerate()
        .filter(|(i, a)| **a != classes[i % 3])
        .count();
    assert!(
        above > 10,
        "only {above} keys emerged: the test shows nothing"
    );
}

/// The file's bytes, to show that a refused insert left it as it was.
fn bytes(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn insert_adds_keys_with_their_classes() {
    let (d, _, f) = built(
        "rules.csv",
        "k,c\na,allow\nb,deny\n",
        "f.blf",
        "--kind spatial --class-column c --classes allow,mirror,deny --fpp 0.001",
    );
    let more = write(
        &d,
        "more.csv",
        "k,c\nc, mirror\nd,deny\ne,allow\ne,mirror\n",
    );
    let out = succeeds(bl().args(argv!(
        "--json",
        "insert",
        &f,
        &more,
        "--class-column c --csv-column k"
    )));
    says(
        &String::from_utf8_lossy(&out.stderr),
        &[
            "\"e\"",
            "class allow (",
            "more.csv: line 4",
            "class mirror (",
            "line 5",
        ],
    );
    let mirror = write(&d, "mirror.txt", "f\ng\n");
    json(&argv!("insert", &f, &mirror, "--class mirror"));
    let q = write(&d, "q.txt", "a\nb\nc\nd\ne\nf\ng\n");
    assert_eq!(
        answers(&f, &q, "", "class"),
        ["allow", "deny", "mirror", "deny", "mirror", "mirror", "mirror"]
    );
    assert_eq!(
        per_class(&json(&argv!("stats", &f))["figures"], "keys"),
        [2, 4, 2],
        "allow a, e; mirror c, e, f, g; deny b, d"
    );
}

#[test]
fn insert_refuses_what_the_filter_does_not_hold_and_leaves_it() {
    let (d, _, f) = built(
        "rules.csv",
        "k,c\na,allow\nb,deny\n",
        "f.blf",
        "--kind spatial --class-column c",
    );
    let before = bytes(&f);
    let keys = write(&d, "keys.txt", "x\ny\n");
    let err = fails(&argv!("insert", &f, &keys), 2);
    says(
        &err,
        &[
            "spatial filter",
            "--class NAME",
            "--class-column",
            "allow, deny",
        ],
    );
    let err = fails(&argv!("insert", &f, &keys, "--class mirror"), 2);
    says(&err, &["\"mirror\"", "allow, deny"]);
    let more = write(&d, "more.csv", "k,c\nx,allow\ny,mirror\n");
    let err = fails(
        &argv!("insert", &f, &more, "--class-column c --csv-column k"),
        1,
    );
    says(&err, &["more.csv", "line 3", "\"mirror\"", "allow, deny"]);
    assert_eq!(bytes(&f), before, "a refused insert changed the filter");
    let plain = at(&d, "plain.blf");
    json(&argv!("build", &keys, "-o", &plain));
    let err = fails(&argv!("insert", &plain, &keys, "--class allow"), 2);
    says(&err, &["spatial filters", "static"]);
}

#[test]
fn two_inserts_at_once_both_land() {
    let (d, _, f) = built(
        "rules.csv",
        "k,c\nseed,allow\n",
        "f.blf",
        "--kind spatial --class-column c --classes allow,deny --capacity 20000",
    );
    let a = write(&d, "a.txt", lines("allow-", 5000));
    let b = write(&d, "b.txt", lines("deny-", 5000));
    let spawn = |keys: &std::path::Path, class: &str| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("bloomlanes"))
            .args(argv!("-q", "insert", &f, keys, "--class", class))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut p, mut q) = (spawn(&a, "allow"), spawn(&b, "deny"));
    assert!(p.wait().unwrap().success() && q.wait().unwrap().success());
    assert_eq!(
        per_class(&json(&argv!("stats", &f))["figures"], "keys"),
        [5001, 5000],
        "an insert was lost"
    );
    assert!(answers(&f, &b, "", "class").iter().all(|c| c == "deny"));
    assert!(answers(&f, &a, "", "class").iter().all(|c| !c.is_null()));
}

/// `name` in `d`: a CSV of `key{k},{class}` rows under the header `k,c`; returns its path and
/// its rows without the header.
fn rules(d: &tempfile::TempDir, name: &str, rows: &[(u32, &str)]) -> (std::path::PathBuf, String) {
    let body: String = rows.iter().map(|(k, c)| format!("key{k},{c}\n")).collect();
    (write(d, name, format!("k,c\n{body}")), body)
}

#[test]
fn spatial_filters_merge_into_the_filter_of_all_their_rules() {
    let d = tmp();
    let classes = ["allow", "mirror", "deny"];
    // Two sites' rules; keys 300..400 are in both, in other classes.
    let a_rows: Vec<(u32, &str)> = (0..400).map(|k| (k, classes[k as usize % 3])).collect();
    let b_rows: Vec<(u32, &str)> = (300..700)
        .map(|k| (k, classes[(k as usize + 1) % 3]))
        .collect();
    let (a_csv, a_body) = rules(&d, "a.csv", &a_rows);
    let (b_csv, b_body) = rules(&d, "b.csv", &b_rows);
    let all_csv = write(&d, "all.csv", format!("k,c\n{a_body}{b_body}"));
    let flags =
        "--kind spatial --class-column c --classes allow,mirror,deny --capacity 700 --layout 8x32";
    let (a, b, all, m) = (
        at(&d, "a.blf"),
        at(&d, "b.blf"),
        at(&d, "all.blf"),
        at(&d, "m.blf"),
    );
    build(&a_csv, &a, flags);
    build(&b_csv, &b, flags);
    build(&all_csv, &all, flags);
    let v = json(&argv!("merge", &a, &b, "-o", &m));
    assert_eq!(v["kind"]["name"], "spatial", "{v}");
    assert_eq!(
        bytes(&m),
        bytes(&all),
        "the union is the one-shot build, byte for byte"
    );
    // A spatial filter's projection exports as the static filter of its keys.
    let (st, plain) = (at(&d, "st.blf"), at(&d, "plain.blf"));
    json(&argv!("export", &m, "--static", &st));
    let keys = write(
        &d,
        "keys.txt",
        (0..700).map(|k| format!("key{k}\n")).collect::<String>(),
    );
    json(&argv!(
        "build",
        &keys,
        "-o",
        &plain,
        "--capacity 700 --layout 8x32"
    ));
    let q = |f: &std::path::Path| json(&argv!("query", f, &keys, "--count"))["matches"].clone();
    assert_eq!(q(&st), 700);
    assert_eq!(q(&st), q(&plain));
    json(&argv!("export", &m, "--parquet", &at(&d, "m.parquet.bin")));
}

#[test]
fn spatial_merges_that_cannot_be_answered_are_refused_and_write_nothing() {
    let d = tmp();
    let (x_csv, _) = rules(&d, "x.csv", &[(1, "allow"), (2, "deny")]);
    let (y_csv, _) = rules(&d, "y.csv", &[(3, "deny"), (4, "allow")]);
    let (x, y, m) = (at(&d, "x.blf"), at(&d, "y.blf"), at(&d, "m.blf"));
    // Classes by first appearance: allow, deny in x; deny, allow in y.
    build(&x_csv, &x, "--kind spatial --class-column c --capacity 10");
    build(&y_csv, &y, "--kind spatial --class-column c --capacity 10");
    let err = fails(&argv!("merge", &x, &y, "-o", &m), 1);
    says(&err, &["x.blf", "y.blf", "classes differ", "--classes"]);
    let err = fails(&argv!("merge", &x, &x, "-o", &m, "--op intersection"), 2);
    says(&err, &["union only"]);
    let keys = write(&d, "keys.txt", "key1\n");
    let plain = at(&d, "plain.blf");
    json(&argv!("build", &keys, "-o", &plain, "--capacity 10"));
    let err = fails(&argv!("merge", &plain, &x, "-o", &m), 1);
    says(&err, &["static", "spatial", "export --static"]);
    assert!(!m.exists(), "a refused merge wrote its output");
}

#[test]
fn counting_filters_merge_by_adding_their_counts() {
    let d = tmp();
    let (p, q) = (
        write(&d, "p.txt", "a\nb\nb\n"),
        write(&d, "q.txt", "b\nc\n"),
    );
    let (cp, cq, m) = (at(&d, "p.blf"), at(&d, "q.blf"), at(&d, "m.blf"));
    json(&argv!(
        "build",
        &p,
        "-o",
        &cp,
        "--kind counting --capacity 100"
    ));
    json(&argv!(
        "build",
        &q,
        "-o",
        &cq,
        "--kind counting --capacity 100"
    ));
    json(&argv!("merge", &cp, &cq, "-o", &m));
    let keys = write(&d, "keys.txt", "a\nb\nc\n");
    assert_eq!(answers(&m, &keys, "--counts", "count"), [1, 3, 1]);
}

#[test]
fn insert_reads_a_class_column_as_the_filter_s_key_type() {
    let (d, _, f) = built(
        "rules.csv",
        "ip,c\n10.0.0.1,allow\n",
        "f.blf",
        "--kind spatial --csv-column ip --class-column c --key-type ip --classes allow,deny",
    );
    // No --key-type: the filter's (ip), so "10.0.0.2 " is the address, spaces and all.
    let more = write(&d, "more.csv", "ip,c\n10.0.0.2 ,deny\n2001:db8::1,deny\n");
    json(&argv!(
        "insert",
        &f,
        &more,
        "--csv-column ip --class-column c"
    ));
    let q = write(&d, "q.txt", "10.0.0.1\n10.0.0.2\n2001:DB8::1\n");
    assert_eq!(answers(&f, &q, "", "class"), ["allow", "deny", "deny"]);
    let bad = write(&d, "bad.csv", "ip,c\nnot-an-address,deny\n");
    let err = fails(
        &argv!("insert", &f, &bad, "--csv-column ip --class-column c"),
        1,
    );
    says(&err, &["bad.csv", "line 2", "not an ip key"]);
}

#[test]
fn per_class_files_of_one_class_are_named_by_the_file_a_key_came_from() {
    let d = tmp();
    let (a, b, c) = (
        write(&d, "deny-a.txt", "k1\n"),
        write(&d, "deny-b.txt", "k2\n"),
        write(&d, "allow.txt", "k2\n"),
    );
    let spec = |name: &str, p: &std::path::Path| PathBuf::from(format!("{name}={}", p.display()));
    let out = succeeds(bl().args(argv!(
        "build -o",
        &at(&d, "f.blf"),
        "--kind spatial --class",
        &spec("deny", &a),
        "--class",
        &spec("deny", &b),
        "--class",
        &spec("allow", &c)
    )));
    let err = String::from_utf8_lossy(&out.stderr);
    says(
        &err,
        &[
            "\"k2\"",
            "class allow (",
            "allow.txt: line 1)",
            "class deny (",
            "deny-b.txt: line 1)",
        ],
    );
    assert!(!err.contains("deny-a.txt"), "{err}");
}

#[test]
fn three_spatial_filters_of_different_sizes_merge_into_a_build_at_the_smallest() {
    let d = tmp();
    let classes = ["allow", "deny"];
    let rows = |from: u32, to: u32| -> Vec<(u32, &str)> {
        (from..to).map(|k| (k, classes[k as usize % 2])).collect()
    };
    let flags =
        "--kind spatial --class-column c --classes allow,deny --layout 8x32 --bits-per-key 10 --pow2";
    let mut all = String::from("k,c\n");
    let mut inputs = Vec::new();
    for (i, (from, to, capacity)) in [(0, 300, 1200), (300, 600, 600), (600, 900, 300)]
        .into_iter()
        .enumerate()
    {
        let (csv, body) = rules(&d, &format!("r{i}.csv"), &rows(from, to));
        all.push_str(&body);
        let f = at(&d, &format!("r{i}.blf"));
        build(&csv, &f, &format!("{flags} --capacity {capacity}"));
        inputs.push(f);
    }
    let (one, m) = (at(&d, "one.blf"), at(&d, "m.blf"));
    build(
        &write(&d, "all.csv", all),
        &one,
        &format!("{flags} --capacity 300"),
    );
    let v = json(&argv!(
        "merge", &inputs[0], &inputs[1], &inputs[2], "-o", &m
    ));
    assert_eq!(v["folded"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(
        bytes(&m),
        bytes(&one),
        "folded and merged: the build at the smallest size"
    );
    // An intersection that mixes kinds is refused for the kinds, not for the operation.
    let keys = write(&d, "keys.txt", "key1\n");
    let plain = at(&d, "plain.blf");
    json(&argv!(
        "build",
        &keys,
        "-o",
        &plain,
        "--capacity 300 --layout 8x32"
    ));
    let err = fails(
        &argv!("merge", &inputs[2], &plain, "-o", &m, "--op intersection"),
        1,
    );
    says(&err, &["r2.blf", "plain.blf", "spatial", "static"]);
}

/// A class column of numbers (libSBF's areas, rule ids, tiers) means their numeric order, not
/// the order rows happen to come in: area 3 is the highest priority even when its rows come
/// first, so a key listed in areas 3 and 1 is kept in 3 and no key of area 3 is reported in 2.
/// `--classes` still orders them as given.
#[test]
fn numeric_classes_are_ordered_by_number_unless_listed() {
    let d = tmp();
    let rules = write(&d, "areas.csv", "k,area\na,3\nb,10\nc,2\na,1\nd,3\n");
    let (f, by) = (at(&d, "f.blf"), "--kind spatial --class-column area");
    let (b, err) = report(&argv!("build", &rules, "-o", &f, by));
    assert_eq!(per_class(&b["labels"], "name"), ["1", "2", "3", "10"]);
    assert_eq!(per_class(&b["labels"], "class"), [1, 2, 3, 4]);
    let kept_in_3 = ["\"a\"", "class 1 (", "line 5", "class 3 (", "line 2"];
    says(&err, &kept_in_3);
    let q = write(&d, "q.txt", "a\nb\nc\nd\n");
    assert_eq!(answers(&f, &q, "", "class"), ["3", "10", "2", "3"]);
    // Listed: first appearance is not consulted, the list is.
    let g = at(&d, "g.blf");
    let listed = json(&argv!("build", &rules, "-o", &g, by, "--classes 10,3,2,1"));
    assert_eq!(per_class(&listed["labels"], "name"), ["10", "3", "2", "1"]);
    assert_eq!(answers(&g, &q, "", "class"), ["1", "10", "2", "3"]);
}

/// `insert` cannot move a key down (a cell never falls): a key given a lower class than it has
/// stays in its class, and the insert says so, for a whole input (`--class`) and for a class
/// column, naming the key and both classes. Fresh keys that emersion lifts into a higher class
/// are counted (`above_class`) but not warned about while emersion explains them.
#[test]
fn insert_says_when_keys_stay_in_a_higher_class() {
    let (d, _, f) = built("r.csv", "k,c\na,allow\nb,deny\n", "f.blf", BY_C);
    let moved = write(&d, "moved.txt", "b\n");
    let (r, err) = report(&argv!("insert", &f, &moved, "--class allow"));
    says(
        &err,
        &[
            "1 inserted key answers a higher class",
            "deny, not allow",
            "rebuild",
        ],
    );
    assert_eq!(r["above_class"]["keys"], 1, "{r}");
    let column = write(&d, "moved.csv", "k,c\nz,allow\nb,allow\n");
    let err = stderr_of(&argv!("insert", &f, &column, "--class-column c"));
    says(&err, &["\"b\" answers deny, not allow"]);
    let q = write(&d, "q.txt", "b\nz\n");
    assert_eq!(answers(&f, &q, "", "class"), ["deny", "allow"]);
    // A crowded filter: fresh keys emerge at the rate stats gives, and that is no warning.
    let (lo, hi) = (lines("lo", 20_000), lines("hi", 20_000));
    let (lo, hi) = (write(&d, "lo.txt", lo), write(&d, "hi.txt", hi));
    let g = at(&d, "g.blf");
    let flags = "--kind spatial --fpp 0.05 --class";
    let class = |name: &str, p: &PathBuf| PathBuf::from(format!("{name}={}", p.display()));
    json(&argv!(
        "build -o",
        &g,
        flags,
        class("allow", &lo),
        "--class",
        class("deny", &hi)
    ));
    let fresh = write(&d, "fresh.txt", lines("fresh", 20_000));
    let r = json(&argv!("insert", &g, &fresh, "--class allow"));
    assert_eq!(r["warnings"], serde_json::json!([]), "{r}");
    let (got, expected) = (
        &r["above_class"]["keys"],
        &r["above_class"]["expected_from_emersion"],
    );
    assert!(got.as_u64().unwrap() > 0, "emersion at 5 %: {r}");
    assert!(expected.as_f64().unwrap() > 1.0, "{r}");
}

/// The standard error of a run that succeeds.
fn stderr_of<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    String::from_utf8_lossy(&succeeds(bl().args(args)).stderr).into_owned()
}

/// "Deny" and "deny" are two classes (names are exact), and the build says so.
#[test]
fn class_names_that_differ_only_in_case_are_warned_about() {
    let d = tmp();
    let rules = write(&d, "r.csv", "k,c\na,Deny\nb,deny\n");
    let err = stderr_of(&argv!("build", &rules, "-o", &at(&d, "f.blf"), BY_C));
    says(&err, &["\"Deny\" and \"deny\" differ only in case"]);
}

/// The JSON report (`--json`) and the standard error of a run that succeeds.
fn report<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> (serde_json::Value, String) {
    let out = succeeds(bl().arg("--json").args(args));
    let json = serde_json::from_slice(&out.stdout).expect("a JSON report");
    (json, String::from_utf8_lossy(&out.stderr).into_owned())
}
