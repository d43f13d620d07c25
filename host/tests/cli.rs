//! End-to-end tests of `bloomlanes build`, `query`, `stats`, `merge`, `verify` and `bench`,
//! including the bad-input cases: clear messages, exit codes, and no partial output files.

mod common;

use common::*;

#[test]
fn build_query_stats_from_text_lines() {
    let d = tmp();
    let keys = write(&d, "keys.txt", lines("user", 5000));
    let filter = at(&d, "users.blf");
    let out = succeeds(bl().args(["build", s(&keys), "-o", s(&filter), "--fpp", "0.001"]));
    let msg = String::from_utf8_lossy(&out.stdout);
    assert!(msg.contains("5000 keys"), "{msg}");

    // Every inserted key is reported; the absent ones are (almost all) not.
    let probe = write(
        &d,
        "probe.txt",
        lines("user", 5000) + &lines("nobody", 5000),
    );
    let out = bl()
        .args(["query", s(&filter), s(&probe)])
        .output()
        .unwrap();
    assert!(out.status.success());
    let found: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    for (i, key) in found.iter().take(5000).enumerate() {
        assert_eq!(
            *key,
            format!("user{i}"),
            "matching keys print in input order"
        );
    }
    assert!(
        found.len() < 5000 + 50,
        "{} false positives",
        found.len() - 5000
    );

    // --count and --json.
    bl().args(["query", s(&filter), s(&probe), "--count"])
        .assert()
        .success()
        .stdout(predicates::str::contains("of 10000 keys may be present"));
    let v = json(&["query", s(&filter), s(&probe), "--count"]);
    assert_eq!(v["keys"], 10000);
    assert!(v["matches"].as_u64().unwrap() >= 5000);

    // --absent lists the definitely-absent keys, none of them inserted.
    let out = bl()
        .args(["query", s(&filter), s(&probe), "--absent"])
        .output()
        .unwrap();
    let absent = String::from_utf8_lossy(&out.stdout);
    assert!(absent.lines().all(|l| l.starts_with("nobody")));
    assert!(absent.lines().count() > 4900);

    // stats, human and JSON.
    bl().args(["stats", s(&filter)])
        .assert()
        .success()
        .stdout(predicates::str::contains("fill ratio"))
        .stdout(predicates::str::contains("expected fpr"));
    let st = json(&["stats", s(&filter)]);
    assert_eq!(st["recorded_keys"], 5000);
    let est = st["estimated_keys"].as_f64().unwrap();
    assert!((est - 5000.0).abs() < 250.0, "estimated {est}");
    assert!(st["expected_fpr"].as_f64().unwrap() <= 0.0011);
    assert!(st["fill_ratio"].as_f64().unwrap() > 0.1);
    assert_eq!(st["memory_mapped"], true);
    assert_eq!(files(&d), ["keys.txt", "probe.txt", "users.blf"]);
}

#[test]
fn bitmap_output_and_every_backend_agree() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 3000));
    let probe = write(&d, "p.txt", lines("k", 10) + &lines("zz", 6));
    let mut bitmaps = Vec::new();
    for backend in ["scalar", "simd", "auto"] {
        let f = at(&d, &format!("{backend}.blf"));
        bl().args([
            "build",
            s(&keys),
            "-o",
            s(&f),
            "--layout",
            "16x32",
            "--backend",
            backend,
        ])
        .assert()
        .success();
        let bm = at(&d, &format!("{backend}.bits"));
        bl().args([
            "query",
            s(&f),
            s(&probe),
            "--bitmap",
            s(&bm),
            "--backend",
            backend,
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains("bitmap written"));
        let bytes = std::fs::read(&bm).unwrap();
        assert_eq!(bytes.len(), 2, "16 keys, one bit each");
        assert_eq!(bytes[0], 0xff, "keys 0..8 present");
        assert_eq!(bytes[1] & 0b11, 0b11, "keys 8, 9 present");
        bitmaps.push(bytes);
    }
    assert!(bitmaps.windows(2).all(|w| w[0] == w[1]));
    let a = std::fs::read(at(&d, "scalar.blf")).unwrap();
    let b = std::fs::read(at(&d, "simd.blf")).unwrap();
    assert_eq!(a, b, "scalar and SIMD build identical files");
}

#[test]
fn csv_columns_by_name_and_index() {
    let d = tmp();
    let csv = write(
        &d,
        "people.csv",
        "id,name,city\n1,alice,Paris\n2,\"bob, jr\",Oslo\n3,carol,Rome\n",
    );
    let f = at(&d, "names.blf");
    bl().args(["build", s(&csv), "-o", s(&f), "--csv-column", "name"])
        .assert()
        .success()
        .stdout(predicates::str::contains("3 keys"));
    let q = write(&d, "q.txt", "alice\nbob, jr\ncarol\nParis\n");
    let out = bl().args(["query", s(&f), s(&q)]).output().unwrap();
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(found.contains("alice") && found.contains("bob, jr") && found.contains("carol"));

    // By index, with no header row, tab separated.
    let tsv = write(&d, "t.tsv", "x\tParis\ny\tOslo\n");
    let f2 = at(&d, "cities.blf");
    bl().args(argv!("build", tsv, "--csv-column 1 --no-header -o", f2))
        .assert()
        .success()
        .stdout(predicates::str::contains("2 keys"));
    let v = json(&["query", s(&f2), s(&q), "--count"]);
    assert!(v["matches"].as_u64().unwrap() >= 1);
}

#[test]
fn malformed_csv_names_file_and_line() {
    let d = tmp();
    let csv = write(&d, "bad.csv", "a,b\n1,2\n3,4,5\n6,7\n");
    let out = at(&d, "out.blf");
    let err = fails(&["build", s(&csv), "--csv-column", "b", "-o", s(&out)], 1);
    assert!(err.contains("bad.csv"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("malformed CSV"), "{err}");
    let err = fails(
        &["build", s(&csv), "--csv-column", "nope", "-o", s(&out)],
        1,
    );
    assert!(err.contains("no CSV column named \"nope\""), "{err}");
    assert_eq!(files(&d), ["bad.csv"], "no output file after a failure");
}

#[test]
fn binary_u64_and_decimal_keys_agree() {
    let d = tmp();
    let keys: Vec<u64> = (0..4000u64).map(|i| i * 7919 + 13).collect();
    let bin: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
    let (_, f) = write_and_build(&d, "keys.u64", &bin, "ints.blf", "--bits-per-key 12");
    let dec: String = keys.iter().map(|k| format!("{k}\n")).collect();
    let q = write(&d, "q.txt", dec);
    let v = json(&["query", s(&f), s(&q), "--format", "decimal", "--count"]);
    assert_eq!(v["matches"], 4000, "every inserted integer is found");

    // A file that is not whole u64 words names the byte offset.
    let bad = write(&d, "bad.u64", &bin[..21]);
    let err = fails(&["build", s(&bad), "-o", s(&at(&d, "x.blf"))], 1);
    says(&err, &["bad.u64", "byte offset 16"]);
    // A malformed decimal line names the line.
    let badd = write(&d, "bad.txt", "1\n2\nthree\n");
    let err = fails(
        &argv!("build", badd, "--format decimal -o", at(&d, "x.blf")),
        1,
    );
    assert!(err.contains("bad.txt") && err.contains("line 3"), "{err}");
    assert!(!at(&d, "x.blf").exists());
}

#[test]
fn stdin_input() {
    let d = tmp();
    let f = at(&d, "s.blf");
    // Standard input cannot be read twice: without --capacity it is copied to a temporary file
    // for the counting pass (issue #27), said clearly.
    let out = bl()
        .args(["build", "-", "-o", s(&f)])
        .write_stdin("a\nb\nc\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    says(&err, &["<stdin>", "temporary file", "--capacity"]);
    assert!(f.exists());
    bl().args(["build", "-", "-o", s(&f), "--capacity", "3"])
        .write_stdin("a\nb\nc\n")
        .assert()
        .success();
    bl().args(["query", s(&f), "-", "--count"])
        .write_stdin("a\nb\n")
        .assert()
        .success()
        .stdout(predicates::str::starts_with("2 of 2"));
}

#[test]
fn usage_errors_exit_2() {
    let d = tmp();
    let keys = write(&d, "k.txt", "a\n");
    let out = at(&d, "o.blf");
    fails(
        &argv!("build", keys, "-o", out, "--fpp 0.1 --bits-per-key 8"),
        2,
    );
    fails(&["build", s(&keys), "-o", s(&out), "--layout", "7x7"], 2);
    fails(&["build", s(&keys), "-o", s(&out), "--backend", "fpga"], 2);
    let e = fails(&["build", s(&keys), "-o", s(&out), "--fpp", "1.5"], 2);
    assert!(e.contains("--fpp"), "{e}");
    let e = fails(
        &["build", s(&keys), "-o", s(&out), "--bits-per-key", "0"],
        2,
    );
    assert!(e.contains("bits per key"), "{e}");
    fails(&["build", s(&keys)], 2);
    fails(&["frobnicate"], 2);
    fails(&["export", s(&keys)], 2);
    assert_eq!(files(&d), ["k.txt"]);
}

#[test]
fn missing_files_fail_clearly() {
    let d = tmp();
    let missing = at(&d, "missing.txt");
    let out = at(&d, "o.blf");
    let e = fails(&["build", s(&missing), "-o", s(&out)], 1);
    says(&e, &["missing.txt", "no such file"]);
    let e = fails(&["stats", s(&at(&d, "nope.blf"))], 1);
    assert!(e.contains("nope.blf") && e.contains("no such file"), "{e}");
    let e = fails(&["query", s(&at(&d, "nope.blf")), s(&missing)], 2);
    assert!(e.contains("nope.blf"), "{e}");
    assert!(files(&d).is_empty());
}

#[test]
fn truncated_and_corrupt_filters_are_rejected() {
    let (d, keys, f) = built("k.txt", lines("k", 1000), "good.blf", "");
    let bytes = std::fs::read(&f).unwrap();

    let trunc = write(&d, "trunc.blf", &bytes[..bytes.len() - 100]);
    let e = fails(&["stats", s(&trunc)], 1);
    assert!(e.contains("trunc.blf") && e.contains("truncated"), "{e}");
    let short = write(&d, "short.blf", &bytes[..30]);
    let e = fails(&["query", s(&short), s(&keys)], 2);
    assert!(e.contains("short.blf") && e.contains("truncated"), "{e}");
    let empty = write(&d, "empty.blf", b"");
    let e = fails(&["stats", s(&empty)], 1);
    assert!(e.contains("empty.blf"), "{e}");

    let mut bad = bytes.clone();
    bad[200] ^= 0x10;
    let corrupt = write(&d, "corrupt.blf", &bad);
    let e = fails(&["query", s(&corrupt), s(&keys), "--count"], 2);
    assert!(e.contains("corrupt.blf") && e.contains("checksum"), "{e}");
    let mut bad = bytes.clone();
    bad[13] ^= 1;
    let corrupt = write(&d, "header.blf", &bad);
    let e = fails(&["stats", s(&corrupt)], 1);
    assert!(e.contains("header checksum"), "{e}");
    let e = fails(&["stats", s(&keys)], 1);
    assert!(e.contains("not a bloomlanes filter"), "{e}");
}

#[test]
fn failed_build_keeps_the_old_file() {
    let (d, keys, f) = built("k.txt", "a\nb\n", "f.blf", "");
    let before = std::fs::read(&f).unwrap();
    let bad = write(&d, "bad.u64", [1u8, 2, 3]);
    fails(&["build", s(&bad), "-o", s(&f)], 1);
    assert_eq!(
        std::fs::read(&f).unwrap(),
        before,
        "the old filter is untouched"
    );
    assert_eq!(
        files(&d),
        ["bad.u64", "f.blf", "k.txt"],
        "no temporary file left"
    );
    // A filter too large to allocate is an error, not an abort.
    let e = fails(
        &argv!("build", keys, "-o", f, "--capacity 100000000000 --fpp 1e-7"),
        1,
    );
    assert!(e.contains("bytes") && e.contains("--capacity"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), before);
    // With --json the error is also a JSON object on standard output.
    let o = bl().args(["--json", "stats", s(&bad)]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["exit_code"], 1);
    assert!(v["error"].as_str().unwrap().contains("bad.u64"));
    // Writing into a directory that does not exist fails without a panic.
    let e = fails(
        &["build", s(&keys), "-o", s(&at(&d, "no/such/dir/f.blf"))],
        1,
    );
    assert!(e.contains("f.blf"), "{e}");
}

#[test]
fn gpu_request_without_gpu() {
    let d = tmp();
    let keys = write(&d, "k.txt", "a\nb\n");
    let out = at(&d, "g.blf");
    let o = bl()
        .args(["build", s(&keys), "-o", s(&out), "--backend", "gpu"])
        .output()
        .unwrap();
    if o.status.success() {
        // This machine has a GPU: the result must equal the scalar build.
        let sc = at(&d, "s.blf");
        build(&keys, &sc, "--backend scalar");
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&sc).unwrap());
    } else {
        assert_eq!(o.status.code(), Some(1));
        let e = String::from_utf8_lossy(&o.stderr);
        says(&e, &["--backend gpu", "no usable GPU"]);
        assert!(!out.exists());
    }
}

#[test]
fn merge_union_intersection_and_incompatible() {
    let d = tmp();
    let a = write(&d, "a.txt", lines("a", 2000));
    let b = write(&d, "b.txt", lines("b", 2000) + &lines("a", 100));
    let (fa, fb) = (at(&d, "a.blf"), at(&d, "b.blf"));
    for (k, f) in [(&a, &fa), (&b, &fb)] {
        bl().args(argv!("build", k, "-o", f, "--capacity 5000 --layout 8x32"))
            .assert()
            .success();
    }
    let u = at(&d, "u.blf");
    bl().args(["merge", s(&fa), s(&fb), "-o", s(&u)])
        .assert()
        .success()
        .stdout(predicates::str::contains("union"));
    let all = write(&d, "all.txt", lines("a", 2000) + &lines("b", 2000));
    assert_eq!(json(&["query", s(&u), s(&all), "--count"])["matches"], 4000);
    let st = json(&["stats", s(&u)]);
    let est = st["estimated_keys"].as_f64().unwrap();
    assert!((est - 4000.0).abs() < 300.0, "union estimate {est}");

    let i = at(&d, "i.blf");
    let v = json(&["merge", s(&fa), s(&fb), "-o", s(&i), "--op", "intersection"]);
    assert_eq!(v["op"], "intersection");
    let common = write(&d, "common.txt", lines("a", 100));
    assert_eq!(
        json(&["query", s(&i), s(&common), "--count"])["matches"],
        100
    );

    // Different layouts (and sizes) cannot be merged.
    let c = at(&d, "c.blf");
    build(&a, &c, "--layout 16x64");
    let out = at(&d, "bad.blf");
    let e = fails(&["merge", s(&fa), s(&c), "-o", s(&out)], 1);
    says(&e, &["incompatible", "8x32", "16x64"]);
    assert!(!out.exists());
    // Different seeds.
    let sd = at(&d, "seed.blf");
    bl().args(argv!(
        "build",
        a,
        "-o",
        sd,
        "--capacity 5000 --layout 8x32 --seed 9"
    ))
    .assert()
    .success();
    let e = fails(&["merge", s(&fa), s(&sd), "-o", s(&out)], 1);
    assert!(e.contains("seed"), "{e}");
    fails(&["merge", s(&fa), "-o", s(&out)], 2);
    assert!(!out.exists());
}

#[test]
fn verify_agrees_on_sample_and_file_keys() {
    bl().args(["verify", "--keys", "3000"])
        .assert()
        .success()
        .stdout(predicates::str::contains("all backends agree"));
    let d = tmp();
    let keys = write(&d, "k.txt", lines("key-", 1500));
    let v = json(&["verify", s(&keys), "--layout", "8x64"]);
    assert_eq!(v["ok"], true);
    let rows = v["rows"].as_array().unwrap();
    assert!(
        rows.len() >= 2,
        "scalar plus at least one SIMD path: {rows:?}"
    );
    assert!(rows.iter().all(|r| r["identical"] == true));
    let simulated = rows.iter().any(|r| {
        r["backend"]
            .as_str()
            .is_some_and(|b| b.starts_with("hdl-sim"))
    });
    let no_sim = v["absent_backends"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["backend"] == "hdl-sim");
    assert!(
        simulated != no_sim,
        "the RTL simulation ran, or its absence is reported"
    );
    fails(&["verify", "--layout", "3x3"], 2);
}

#[test]
fn bench_runs_every_backend() {
    let v = json(&["bench", "--keys", "20000"]);
    assert_eq!(v["keys"], 20000);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows[0]["backend"], "scalar");
    assert!(rows.len() >= 2);
    for r in rows {
        assert_eq!(r["identical_bits"], true, "{r}");
        assert_eq!(r["identical_answers"], true, "{r}");
        assert_eq!(r["false_negatives"], 0, "{r}");
        assert!(r["query_keys_per_s"].as_f64().unwrap() > 0.0);
    }
    // The last row is what `--backend auto` picks, timed on its own, and the verdict names the
    // fastest of the other rows and the choice, which is one of them.
    let last = rows.last().unwrap()["backend"]
        .as_str()
        .unwrap()
        .to_string();
    let auto = &v["auto"];
    let choice = auto["insert_choice"].as_str().unwrap();
    assert_eq!(last, format!("auto: {choice}"), "{v}");
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    for field in ["insert_choice", "query_choice", "best_insert", "best_query"] {
        let name = auto[field].as_str().unwrap();
        assert!(
            names[..names.len() - 1].contains(&name),
            "{field} {name} in {names:?}"
        );
    }
    assert!(auto["insert_to_best"].as_f64().unwrap() > 0.0, "{auto}");
    assert!(auto["query_to_best"].as_f64().unwrap() > 0.0, "{auto}");
    let scalar = json(&["bench", "--keys", "2000", "--backend", "scalar"]);
    assert!(scalar["auto"].is_null(), "{scalar}");
    bl().args(["bench", "--keys", "5000", "--backend", "scalar"])
        .assert()
        .success()
        .stdout(predicates::str::contains("keys/s"));
}

// ---- issue #11 regressions in the input and listing code -------------------------------------

/// #1: listing every key (text, JSON, absent) is linear; here its output is checked in full.
#[test]
fn listing_prints_every_key_in_input_order() {
    let d = tmp();
    let text: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    let q = write(&d, "q", &text);
    let f = at(&d, "q.blf");
    // Lines that are all numbers are hashed as text only when told (--key-type bytes).
    build(&q, &f, "--key-type bytes");
    let out = bl()
        .args(["query", s(&f), s(&q), "--chunk-bytes", "4093"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
    let v = json(&["query", s(&f), s(&q)]);
    let keys = v["matching_keys"].as_array().unwrap();
    assert_eq!(keys.len(), 200_000);
    assert_eq!(
        (keys[0].as_str(), keys[199_999].as_str()),
        (Some("1"), Some("200000"))
    );
    assert_eq!(v["matches"], 200_000);
    let v = json(&["query", s(&f), s(&q), "--absent"]);
    assert_eq!(v["absent_keys"].as_array().unwrap().len(), 0);
    // The bitmap of the same answers: every bit set, 25 000 bytes.
    let bits = at(&d, "bits");
    bl().args(["query", s(&f), s(&q), "--bitmap", s(&bits)])
        .assert()
        .success();
    assert_eq!(std::fs::read(&bits).unwrap(), vec![0xff; 25_000]);
}

/// #7: a filter path or an input that never ends (`/dev/zero`) is read only within a bound.
#[test]
fn endless_inputs_are_read_within_a_bound() {
    let d = tmp();
    let e = fails(&["stats", "/dev/zero"], 1);
    says(&e, &["/dev/zero", "character device"]);
    let out = at(&d, "o.blf");
    let e = fails(&["build", "/dev/zero", "-o", s(&out), "--capacity", "9"], 1);
    assert!(e.contains("/dev/zero") && e.contains("cannot tell"), "{e}");
    let e = fails(
        &argv!("build /dev/zero --format lines -o", out, "--capacity 9"),
        1,
    );
    says(&e, &["/dev/zero", "longer than 64 MiB"]);
    assert!(!out.exists());
}

/// #8: a bad decimal line is echoed cut short, however long it is.
#[test]
fn decimal_errors_echo_a_bounded_part_of_the_line() {
    let d = tmp();
    let mut line = vec![b'9'; 1_000_000];
    line.extend_from_slice(b"x\n");
    let p = write(&d, "long.txt", &line);
    let out = at(&d, "o.blf");
    let e = fails(&["build", s(&p), "--format", "decimal", "-o", s(&out)], 1);
    assert!(e.len() < 400, "{} bytes of stderr", e.len());
    says(&e, &["long.txt", "line 1", "(1000001 bytes)"]);
    // The reproducer: one 100 MB line.
    let big = write(&d, "big.txt", vec![b'1'; 100_000_000]);
    let e = fails(
        &argv!("build", big, "--format decimal -o", out, "--capacity 1"),
        1,
    );
    assert!(e.len() < 400, "{} bytes of stderr", e.len());
    assert!(e.contains("big.txt"), "{e}");
}

/// Blank lines before a CSV header are skipped as a CSV reader skips them, whatever the chunk
/// size (found by fuzzing: with 1-byte chunks the blank line was taken for the header), and
/// lines keep their numbers in messages.
#[test]
fn blank_lines_before_a_csv_header() {
    let d = tmp();
    let p = write(&d, "b.csv", "\n\r\nid,name\n1,a\n2,b\n");
    let out = at(&d, "o.blf");
    for chunk in ["1", "3", "1048576"] {
        let v = json(&[
            "build",
            s(&p),
            "--csv-column",
            "name",
            "-o",
            s(&out),
            "--chunk-bytes",
            chunk,
        ]);
        assert_eq!(v["keys"], 2, "chunk {chunk}: {v}");
    }
    let bad = write(&d, "bad.csv", "\n\nid,name\n1,a\n2,b,c\n");
    let e = fails(
        &["build", s(&bad), "--csv-column", "name", "-o", s(&out)],
        1,
    );
    assert!(e.contains("bad.csv") && e.contains("line 5"), "{e}");
}

/// #9: an unterminated CSV quote is an error naming where it opened.
#[test]
fn unterminated_csv_quote_is_an_error() {
    let d = tmp();
    let p = write(&d, "u.csv", "id,name\n1,\"unterminated\n2,b\n");
    let out = at(&d, "o.blf");
    let e = fails(&["build", s(&p), "--csv-column", "name", "-o", s(&out)], 1);
    assert!(
        e.contains("u.csv")
            && e.contains("line 2 (byte offset 10)")
            && e.contains("unterminated quote"),
        "{e}"
    );
    assert!(!out.exists());
}
