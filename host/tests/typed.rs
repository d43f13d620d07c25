//! Typed keys end to end (issue #13): no silent false negative when the key type is not what a
//! format would guess; the key type recorded by `build` and checked by `query`; float ±0 / NaN;
//! merge and build warnings; hex seeds.

mod common;

use common::*;
use std::path::Path;

fn signed(n: i64) -> String {
    (-n / 2..n / 2).map(|i| format!("{i}\n")).collect()
}

/// Builds `filter` from `input` (numbers, no key type) with `flags`: it must record the key type
/// bytes and warn, naming the input `name` and `--key-type`.
fn builds_as_text_with_a_warning(input: &Path, filter: &Path, flags: &str, name: &str) {
    let v = build(input, filter, flags);
    assert_eq!(v["key_type"], "bytes");
    let warned = v["inputs"][0]["warnings"].to_string();
    assert!(
        warned.contains(name) && warned.contains("--key-type"),
        "{v}"
    );
}

#[test]
fn numbers_are_text_until_a_key_type_is_given_and_then_every_key_is_found() {
    let d = tmp();
    let nums = write(&d, "n.txt", signed(1000));
    let f = at(&d, "n.blf");
    // Without a key type the numbers are hashed as text (key type bytes, recorded in the file)
    // with a warning naming --key-type; the recorded type makes an i64 query an error, never a
    // column of "absent".
    builds_as_text_with_a_warning(&nums, &f, "", "n.txt");
    let e = fails(&["query", s(&f), s(&nums), "--key-type", "i64"], 2);
    says(&e, &["bytes", "i64"]);

    let v = build(&nums, &f, "--key-type i64");
    assert_eq!(v["key_type"], "i64");
    // A query reads text as the filter's recorded type: every key found, no flag needed.
    let q = json(&["query", s(&f), s(&nums), "--count"]);
    assert_eq!(q["matches"], 1000);
    assert_eq!(q["key_check"], "same");
    // Another byte form is refused, naming the filter, both types and the fix.
    let e = fails(&["query", s(&f), s(&nums), "--key-type", "i32"], 2);
    says(&e, &["i64", "i32", "--key-type i64"]);
    assert!(
        e.contains(&format!("{}: the filter holds i64", s(&f))),
        "{e}"
    );
    // The same bytes under another type: answered, with a warning on stderr and in JSON.
    let pos = write(&d, "pos.txt", "1\n2\n3\n");
    let out = bl()
        .args(argv!("--json query", f, pos, "--key-type u64 --count"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["key_check"], "samebytes");
    assert_eq!(v["matches"], 3);
    assert!(v["warnings"][0].as_str().unwrap().contains("u64"), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
    // Negative numbers as u64: a clear error with the fix.
    let e = fails(&["build", s(&nums), "-o", s(&f), "--format", "decimal"], 1);
    assert!(e.contains("-500") && e.contains("--key-type i64"), "{e}");
}

#[test]
fn typed_csv_columns_and_decimal_csv() {
    let d = tmp();
    let csv = write(&d, "t.csv", "id,name\n-7,a\n12,b\n300,c\n");
    let f = at(&d, "ids.blf");
    builds_as_text_with_a_warning(&csv, &f, "--csv-column id", "t.csv");
    build(&csv, &f, "--csv-column id --key-type i64");
    let q = write(&d, "q.txt", "-7\n12\n300\n");
    assert_eq!(json(&["query", s(&f), s(&q), "--count"])["matches"], 3);
    // --format decimal with a CSV column reads that column's integers, header and all.
    let pos = write(&d, "p.csv", "id,name\n7,a\n12,b\n");
    let g = at(&d, "p.blf");
    let v = build(&pos, &g, "--csv-column id --format decimal");
    assert_eq!(v["key_type"], "u64");
    let q = write(
        &d,
        "q.u64",
        [7u64.to_le_bytes(), 12u64.to_le_bytes()].concat(),
    );
    assert_eq!(json(&["query", s(&g), s(&q), "--count"])["matches"], 2);
}

#[test]
fn compressed_and_binary_files_are_never_read_as_text() {
    let d = tmp();
    let gz = write(
        &d,
        "words.gz",
        [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3],
    );
    let e = fails(&["build", s(&gz), "-o", s(&at(&d, "w.blf"))], 1);
    assert!(e.contains("words.gz") && e.contains("gzip"), "{e}");
    let e = fails(&argv!("build", gz, "--format lines -o", at(&d, "w.blf")), 1);
    assert!(e.contains("gzip"), "{e}");
    let dat: Vec<u8> = (0..100u64).flat_map(|i| (i * 1000).to_le_bytes()).collect();
    let dat = write(&d, "ids.dat", dat);
    let e = fails(&["build", s(&dat), "-o", s(&at(&d, "d.blf"))], 1);
    assert!(e.contains("ids.dat") && e.contains("--format u64"), "{e}");
    let v = json(&argv!("build", dat, "--format u64 -o", at(&d, "d.blf")));
    assert_eq!(v["key_type"], "u64");
}

#[test]
fn floats_zero_and_nan_follow_the_probe_rule() {
    let (d, _, f) = built(
        "f.txt",
        "-0.0\nNaN\n1.5\n-2.25e3\n",
        "f.blf",
        "--key-type f64",
    );
    let q = write(&d, "q.txt", "0.0\n-0.0\nnan\n1.5\n-2250\n");
    let v = json(&["query", s(&f), s(&q)]);
    assert_eq!(v["matches"], 5, "{v}");
    let shown: Vec<&str> = v["matching_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(shown, ["0.0", "-0.0", "NaN", "1.5", "-2250.0"]);
    // f32 keys hash 4 bytes: the f64 filter refuses them.
    let e = fails(&["query", s(&f), s(&q), "--key-type", "f32"], 2);
    assert!(e.contains("f64") && e.contains("f32"), "{e}");
}

#[test]
fn dates_timestamps_and_uuids_round_trip() {
    let d = tmp();
    for (ty, keys, same) in [
        ("date", "2024-02-29\n1969-07-20\n", "2024-02-29\n"),
        (
            "timestamp-ms",
            "2024-01-02T03:04:05.123Z\n-1\n",
            "1704164645123\n",
        ),
        (
            "timestamp-us",
            "2024-01-02T04:04:05.123456+01:00\n",
            "2024-01-02 03:04:05.123456\n",
        ),
        (
            "uuid",
            "00112233-4455-6677-8899-aabbccddeeff\n",
            "00112233445566778899AABBCCDDEEFF\n",
        ),
    ] {
        let k = write(&d, "k.txt", keys);
        let f = at(&d, &format!("{ty}.blf"));
        json(&["build", s(&k), "--key-type", ty, "-o", s(&f)]);
        let q = write(&d, "q.txt", same);
        let v = json(&["query", s(&f), s(&q), "--count"]);
        assert_eq!(v["matches"], 1, "{ty}: {v}");
    }
    let bad = write(&d, "bad.txt", "2023-02-29\n");
    let e = fails(
        &argv!("build", bad, "--key-type date -o", at(&d, "x.blf")),
        1,
    );
    assert!(e.contains("line 1") && e.contains("2023-02"), "{e}");
}

#[test]
fn warnings_for_useless_filters_and_unions_and_hex_seeds() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 20_000));
    let v = json(&argv!(
        "build",
        keys,
        "--capacity 100 -o",
        at(&d, "small.blf")
    ));
    let w = v["warnings"][0].as_str().unwrap_or_default();
    assert!(w.contains("20000") && w.contains("capacity"), "{v}");
    let v = json(&["build", s(&keys), "-o", s(&at(&d, "ok.blf"))]);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0);

    // --seed in hex is the same seed as in decimal.
    let (a, b) = (at(&d, "a.blf"), at(&d, "b.blf"));
    build(&keys, &a, "--seed 0x10");
    build(&keys, &b, "--seed 16");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());

    // Two default-sized filters of disjoint keys: the union's rate is reported and warned about.
    let other = write(&d, "o.txt", lines("other", 20_000));
    let (x, y) = (at(&d, "x.blf"), at(&d, "y.blf"));
    build(&keys, &x, "--layout 8x32 --capacity 20000");
    build(&other, &y, "--layout 8x32 --capacity 20000");
    let v = json(&["merge", s(&x), s(&y), "-o", s(&at(&d, "u.blf"))]);
    let fpr = v["fpr_from_bits"].as_f64().unwrap();
    let input = v["input_fpr_from_bits"][0].as_f64().unwrap();
    assert!(fpr > 3.0 * input, "{v}");
    assert!(v["warnings"][0].as_str().unwrap().contains("union"), "{v}");
    // An intersection states its estimate with an error; the true size (0) is within 3 errors.
    let v = json(&argv!(
        "merge --op intersection",
        x,
        y,
        "-o",
        at(&d, "i.blf")
    ));
    let est = &v["intersection_estimate"];
    let (k, sd) = (
        est["keys"].as_f64().unwrap(),
        est["standard_error"].as_f64().unwrap(),
    );
    assert!(sd > 0.0 && k <= 3.0 * sd, "{v}");
}
