//! Rule tables as people write them: spaces around a class name are the file's, not the
//! name's, and a key listed in two classes is built (the higher class wins, as a table with
//! priorities would have it) with a warning that names the key and both places.

mod common;

use std::path::PathBuf;

use common::*;

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
    let table = b["labels"]["classes"].as_array().unwrap();
    let names: Vec<&str> = table.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["allow", "deny"], "one class deny, not two");
    let keys: Vec<u64> = table.iter().map(|c| c["keys"].as_u64().unwrap()).collect();
    assert_eq!(keys, [1, 2]);
    assert_eq!(b["warnings"], serde_json::json!([]));
    let q = write(&d, "q.txt", "a\nb\n");
    let v = json(&argv!("query", &f, &q));
    for a in v["answers"].as_array().unwrap() {
        assert_eq!(a["class"], "deny", "{a}");
    }
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
    let out = bl()
        .args(argv!(
            "--json",
            "build",
            &rules,
            "-o",
            &f,
            "--kind spatial --class-column c"
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let v = json(&argv!("query", &f, &q));
    for a in v["answers"].as_array().unwrap() {
        assert_eq!(a["class"], "deny", "the higher class wins: {a}");
    }
}

#[test]
fn per_class_files_that_share_a_key_are_named() {
    let d = tmp();
    let deny = write(&d, "deny.txt", "k1\nk2\n");
    let mirror = write(&d, "mirror.txt", "k3\nk2\n");
    let f = at(&d, "f.blf");
    let out = bl()
        .args(argv!(
            "build",
            "-o",
            &f,
            "--kind spatial --class",
            PathBuf::from(format!("deny={}", deny.display())),
            "--class",
            PathBuf::from(format!("mirror={}", mirror.display()))
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    says(
        &err,
        &[
            "\"k2\"",
            "class deny (",
            "deny.txt)",
            "class mirror (",
            "mirror.txt)",
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
    let v = json(&argv!("query", &f, &keys));
    let above = v["answers"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(i, a)| a["class"] != classes[i % 3])
        .count();
    assert!(
        above > 10,
        "only {above} keys emerged: the test shows nothing"
    );
}
