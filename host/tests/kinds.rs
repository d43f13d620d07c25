//! End-to-end tests of the filter kinds in the `bloomlanes` binary: `build --kind`, `stats`,
//! `query`, `insert`, `delete`, `export` and `verify --kind` (`dedup`: `dedup.rs`; the counting
//! RTL: `hdl_export.rs`).

mod common;

use common::*;

/// `prefix{i}` for `i` in `range`, one per line.
fn range_lines(prefix: &str, range: std::ops::Range<usize>) -> String {
    range.map(|i| format!("{prefix}{i}\n")).collect()
}

#[test]
fn counting_filters_delete_keys_and_keep_the_rest() {
    let d = tmp();
    let all = write(&d, "all.txt", lines("k", 2000));
    let first = write(&d, "first.txt", range_lines("k", 0..1000));
    let rest = write(&d, "rest.txt", range_lines("k", 1000..2000));
    let absent = write(&d, "absent.txt", lines("absent-", 20000));
    let c = at(&d, "c.blf");
    let v = build(&all, &c, "--kind counting --fpp 0.01");
    assert_eq!(v["kind"]["name"], "counting");
    assert_eq!(v["kind"]["counter_bits"], 4);
    assert_eq!(matches(&c, &all), 2000, "no false negatives");
    let st = json(&["stats", s(&c)]);
    assert_eq!(st["kind"]["name"], "counting");
    assert_eq!(st["recorded_keys"], 2000);
    assert_eq!(st["figures"]["counters_saturated"], 0);
    assert!(
        st["figures"]["counter_overflow_probability"]
            .as_f64()
            .unwrap()
            < 1e-6
    );

    let del = json(&["delete", s(&c), s(&first)]);
    assert_eq!(del["deleted"], 1000);
    assert_eq!(del["not_present"], 0);
    assert_eq!(del["recorded_keys"], 1000);
    assert_eq!(matches(&c, &rest), 1000, "deletions keep the rest");
    assert!(
        matches(&c, &first) < 100,
        "the deleted keys are gone (but for false positives)"
    );
    // The projection is exactly a static filter of the keys left, sized alike (for the
    // capacity the counting build chose).
    let st2 = at(&d, "static.blf");
    let capacity = &v["capacity"]["capacity"];
    build(&rest, &st2, &format!("--capacity {capacity} --fpp 0.01"));
    let (b1, b2) = (at(&d, "b1"), at(&d, "b2"));
    json(&["query", s(&c), s(&absent), "--bitmap", s(&b1)]);
    json(&["query", s(&st2), s(&absent), "--bitmap", s(&b2)]);
    assert_eq!(std::fs::read(&b1).unwrap(), std::fs::read(&b2).unwrap());

    // Keys never inserted are refused; with --strict nothing is written.
    let never = write(&d, "never.txt", lines("never-", 100));
    let before = std::fs::read(&c).unwrap();
    let err = fails(&["delete", s(&c), s(&never), "--strict"], 1);
    says(&err, &["not in the filter", "never-"]);
    assert_eq!(std::fs::read(&c).unwrap(), before);
    // Without it, the others go and the refused ones are reported.
    let mixed = write(
        &d,
        "mixed.txt",
        range_lines("k", 1000..1010) + &lines("never-", 5),
    );
    let out = at(&d, "out.blf");
    let v = json(&["delete", s(&c), s(&mixed), "-o", s(&out)]);
    assert_eq!(v["deleted"], 10);
    assert_eq!(v["not_present"], 5);
    assert_eq!(std::fs::read(&c).unwrap(), before, "-o leaves the input");

    // Insert puts keys back.
    let v = json(&["insert", s(&c), s(&first)]);
    assert_eq!(v["inserted"], 1000);
    assert_eq!(v["recorded_keys"], 2000);
    assert_eq!(matches(&c, &all), 2000);
}

#[test]
fn saturated_counters_stick_and_wider_counters_do_not_saturate() {
    let d = tmp();
    let same = write(&d, "same.txt", "same\n".repeat(20));
    for (bits, saturated, left) in [("4", 8, 1), ("8", 0, 0)] {
        let f = at(&d, &format!("c{bits}.blf"));
        json(&[
            "build",
            s(&same),
            "-o",
            s(&f),
            "--kind",
            "counting",
            "--counter-bits",
            bits,
            "--layout",
            "8x32",
        ]);
        let st = json(&["stats", s(&f)]);
        assert_eq!(st["figures"]["counters_saturated"], saturated, "{bits}-bit");
        let v = json(&["delete", s(&f), s(&same)]);
        assert_eq!(v["deleted"], 20);
        // A stuck counter is never decremented: the key stays after as many deletes as inserts.
        let one = write(&d, "one.txt", "same\n");
        assert_eq!(matches(&f, &one), left, "{bits}-bit");
        let st = json(&["stats", s(&f)]);
        assert_eq!(st["figures"]["counters_saturated"], saturated);
    }
}

#[test]
fn deleting_from_kinds_without_deletions_is_refused_naming_the_kind() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 300));
    for (kind, extra) in [
        ("static", vec![]),
        ("stable", vec![]),
        ("window", vec!["--window-keys", "100"]),
        ("scalable", vec![]),
    ] {
        let f = build_kind(&d, &keys, kind, &extra);
        let before = std::fs::read(&f).unwrap();
        let err = fails(&["delete", s(&f), s(&keys)], 2);
        assert!(
            err.contains(&format!("cannot delete from a {kind} filter"))
                && err.contains("only counting filters"),
            "{err}"
        );
        assert_eq!(std::fs::read(&f).unwrap(), before);
        // Every kind takes inserts, and finds what it was given last.
        let more = write(&d, "more.txt", lines("more", 50));
        json(&["insert", s(&f), s(&more)]);
        assert_eq!(matches(&f, &more), 50, "{kind}");
    }
}

#[test]
fn window_filters_keep_the_last_keys_and_forget_old_ones() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 5000));
    let last = write(&d, "last.txt", range_lines("k", 4000..5000));
    let old = write(&d, "old.txt", range_lines("k", 0..2000));
    let f = at(&d, "w.blf");
    let v = build(
        &keys,
        &f,
        "--kind window --window-keys 1000 --generations 4 --fpp 0.01",
    );
    assert_eq!(v["kind"]["window"], 1000);
    assert_eq!(v["kind"]["span"], 250);
    assert_eq!(matches(&f, &last), 1000, "the last 1000 keys are found");
    let found_old = matches(&f, &old);
    assert!(
        found_old < 60,
        "old keys forgotten: {found_old} of 2000 found"
    );
    let st = json(&["stats", s(&f)]);
    assert_eq!(st["kind"]["generations"], 4);
    assert_eq!(st["figures"]["generations_stored"], 5);
    assert_eq!(st["figures"]["keys_in_current_generation"], 250);
    assert!(st["expected_fpr"].as_f64().unwrap() <= 0.01);
}

/// `--generations auto` picks the window shape with the fewest bits for the rate: smaller than
/// the default 4 generations, still finding the whole window and meeting the rate.
#[test]
fn auto_generations_build_the_smallest_window_that_meets_the_rate() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 30000));
    let last = write(&d, "last.txt", range_lines("k", 20000..30000));
    let build = |gens: &str, out: &str| {
        let f = at(&d, out);
        let v = json(&[
            "build",
            s(&keys),
            "-o",
            s(&f),
            "--kind",
            "window",
            "--window-keys",
            "10000",
            "--generations",
            gens,
            "--fpp",
            "0.001",
        ]);
        (f, v)
    };
    let (four, v4) = build("4", "four.blf");
    let (auto, va) = build("auto", "auto.blf");
    assert_eq!(v4["kind"]["generations"], 4);
    let g = va["kind"]["generations"].as_u64().unwrap();
    assert!(g != 4, "auto picked {g} generations");
    let size = |f: &std::path::Path| std::fs::metadata(f).unwrap().len();
    assert!(
        size(&auto) < size(&four),
        "auto {} bytes, 4 generations {} bytes",
        size(&auto),
        size(&four)
    );
    assert_eq!(matches(&auto, &last), 10000, "the window is found");
    assert!(json(&["stats", s(&auto)])["expected_fpr"].as_f64().unwrap() <= 0.001);
    assert!(fails(
        &argv!(
            "build",
            keys,
            "--kind window --window-keys 10 --generations x"
        ),
        2
    )
    .contains("auto"));
}

#[test]
fn scalable_filters_grow_and_keep_the_rate_under_target() {
    let d = tmp();
    let absent = write(&d, "absent.txt", lines("absent-", 100_000));
    let (keys, f, st, stages) = scalable(&d, 20000, "s.blf", "--capacity 1000 --fpp 0.01");
    assert!(stages.len() >= 4, "{stages:?}");
    assert_eq!(stages[0]["capacity"], 1000);
    assert_eq!(stages[1]["capacity"], 2000);
    let expected = st["expected_fpr"].as_f64().unwrap();
    assert!(expected <= 0.01, "{expected}");
    assert_eq!(matches(&f, &keys), 20000);
    let rate = matches(&f, &absent) as f64 / 100_000.0;
    let sigma = (expected * (1.0 - expected) / 100_000.0).sqrt();
    assert!(
        (rate - expected).abs() < 4.0 * sigma + 1e-4,
        "measured {rate}, expected {expected}"
    );
    assert!(rate < 0.01, "measured {rate} over the target");
}

#[test]
fn stable_filters_report_their_parameters_and_find_recent_keys() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 30000));
    let recent = write(&d, "recent.txt", "k29999\n");
    let absent = write(&d, "absent.txt", lines("absent-", 50_000));
    let f = at(&d, "st.blf");
    build(
        &keys,
        &f,
        "--kind stable --capacity 2000 --fpp 0.02 --layout 8x32",
    );
    let st = json(&["stats", s(&f)]);
    let p = st["kind"]["decrements"].as_u64().unwrap();
    assert!(p >= 1);
    let expected = st["figures"]["stable_fpr"].as_f64().unwrap();
    assert!(expected <= 0.02, "{expected}");
    assert_eq!(matches(&f, &recent), 1);
    let rate = matches(&f, &absent) as f64 / 50_000.0;
    let sigma = (expected * (1.0 - expected) / 50_000.0).sqrt();
    assert!(
        (rate - expected).abs() < 4.0 * sigma + 2e-3,
        "measured {rate}, stable rate {expected} (P = {p})"
    );
    // An explicit P is kept.
    let g = at(&d, "g.blf");
    build(&keys, &g, "--kind stable --decrements 7");
    assert_eq!(json(&["stats", s(&g)])["kind"]["decrements"], 7);
}

#[test]
fn kind_options_are_checked() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 10));
    let o = at(&d, "o.blf");
    let build = |extra: &[&str]| {
        let mut a = vec!["build", s(&keys), "-o", s(&o)];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let cases: &[(&[&str], &str)] = &[
        (&["--kind", "window"], "--window-keys"),
        (
            &["--counter-bits", "4"],
            "--counter-bits applies to --kind counting or stable",
        ),
        (&["--kind", "counting", "--counter-bits", "5"], "4 or 8"),
        (
            &["--kind", "scalable", "--bits-per-key", "10"],
            "false-positive rate",
        ),
        (
            &["--kind", "scalable", "--tightening", "1.5"],
            "--tightening",
        ),
        (&["--kind", "scalable", "--growth", "1"], "--growth"),
        (&["--kind", "stable", "--decrements", "0"], "--decrements"),
        (&["--kind", "window", "--window-keys", "0"], "--window-keys"),
        (
            &["--kind", "counting", "--window-keys", "5"],
            "--window-keys applies to --kind window",
        ),
        (&["--kind", "window", "--window-seconds", "5"], "--capacity"),
    ];
    for (extra, msg) in cases {
        let a = build(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let err = fails(&a, 2);
        assert!(err.contains(msg), "{extra:?}: {err}");
    }
    assert!(!o.exists(), "nothing written on a refused build");
    let missing = at(&d, "missing.blf");
    let err = fails(&["insert", s(&missing), s(&keys)], 1);
    assert!(err.contains("missing.blf"), "{err}");
}

#[test]
fn query_answers_alike_on_every_backend_for_every_kind() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 3000));
    let probe = write(&d, "p.txt", lines("k", 3000) + &lines("absent-", 3000));
    for (kind, extra) in [
        ("counting", vec![]),
        ("stable", vec![]),
        ("window", vec!["--window-keys", "3000"]),
        ("scalable", vec!["--capacity", "500"]),
    ] {
        let f = build_kind(&d, &keys, kind, &extra);
        let mut maps = Vec::new();
        for backend in ["scalar", "simd"] {
            let b = at(&d, &format!("{kind}-{backend}.bits"));
            let v = json(&[
                "query",
                s(&f),
                s(&probe),
                "--backend",
                backend,
                "--bitmap",
                s(&b),
            ]);
            assert_eq!(v["kind"], kind);
            maps.push(std::fs::read(&b).unwrap());
        }
        assert_eq!(maps[0], maps[1], "{kind}");
        // The first 3000 keys were inserted (a stable filter keeps at least the newest).
        let bits = &maps[0];
        let found = (0..3000)
            .filter(|&i| bits[i / 8] >> (i % 8) & 1 == 1)
            .count();
        if kind == "stable" {
            assert_eq!(bits[2999 / 8] >> (2999 % 8) & 1, 1);
        } else {
            assert_eq!(found, 3000, "{kind}");
        }
    }
}

#[test]
fn verify_checks_every_kind_on_every_backend() {
    let v = json(&argv!("verify --keys 2000 --layout 8x32 --hdl-keys 0"));
    assert_eq!(v["ok"], true);
    let rows = v["rows"].as_array().unwrap();
    for kind in ["static", "counting", "stable", "window", "scalable"] {
        let n = rows.iter().filter(|r| r["kind"] == kind).count();
        assert!(n >= 2, "{kind}: scalar and a SIMD path, got {n}");
    }
    assert!(rows.iter().all(|r| r["identical"] == true));
    let v = json(&argv!("verify --keys 500 --kind window --hdl-keys 0"));
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["kind"] == "window"));
    assert!(fails(&["verify", "--kind", "bogus"], 2).contains("--kind"));
}

#[test]
fn time_windows_and_undersized_kinds_report_honest_rates() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 500));
    let f = at(&d, "t.blf");
    let v = build(
        &keys,
        &f,
        "--kind window --window-seconds 60 --capacity 1000 --generations 2 --fpp 0.01",
    );
    assert_eq!(v["kind"]["unit"], "ns");
    assert_eq!(v["kind"]["window"], 60_000_000_000u64);
    assert_eq!(matches(&f, &keys), 500);
    let st = json(&["stats", s(&f)]);
    let est: Vec<f64> = st["figures"]["generation_keys_estimated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(est.len(), 3);
    let most = est.iter().cloned().fold(0.0, f64::max);
    assert!((most - 500.0).abs() < 50.0, "{est:?}");
    // Sized for 500 keys per generation, holding 500 in one of three: about a third of the
    // target (the window's worst case).
    let fpr = st["expected_fpr"].as_f64().unwrap();
    assert!(fpr > 0.002 && fpr < 0.005, "{fpr}");
    // A counting filter sized for far fewer keys than it holds is reported.
    let many = write(&d, "many.txt", lines("m", 3000));
    let c = at(&d, "c.blf");
    let out = bl()
        .args(argv!(
            "build",
            many,
            "-o",
            c,
            "--kind counting --capacity 10"
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    says(&err, &["warning", "--capacity"]);
}

#[test]
fn counting_filters_export_their_projection() {
    let d = tmp();
    let all = write(&d, "all.txt", lines("k", 1500));
    let first = write(&d, "first.txt", range_lines("k", 0..500));
    let rest = write(&d, "rest.txt", range_lines("k", 500..1500));
    let c = at(&d, "c.blf");
    let common = ["--layout", "8x32", "--capacity", "1500", "--fpp", "0.01"];
    let mut args = vec!["build", s(&all), "-o", s(&c), "--kind", "counting"];
    args.extend(common);
    json(&args);
    json(&["delete", s(&c), s(&first)]);
    // The projection is byte for byte the static filter of the keys left, in the static file
    // format and in the Parquet form.
    let st = at(&d, "st.blf");
    let mut args = vec!["build", s(&rest), "-o", s(&st)];
    args.extend(common);
    json(&args);
    let (p1, p2, s1) = (
        at(&d, "c.parquet"),
        at(&d, "st.parquet"),
        at(&d, "c-static.blf"),
    );
    json(&["export", s(&c), "--parquet", s(&p1)]);
    json(&["export", s(&st), "--parquet", s(&p2)]);
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
    let v = json(&["export", s(&c), "--static", s(&s1)]);
    assert_eq!(v["form"], "static");
    assert_eq!(std::fs::read(&s1).unwrap(), std::fs::read(&st).unwrap());
    assert_eq!(json(&["stats", s(&s1)])["kind"]["name"], "static");
    // A window or scalable filter has no single image to export.
    let w = at(&d, "w.blf");
    build(&all, &w, "--kind window --window-keys 100");
    let err = fails(&["export", s(&w), "--static", s(&at(&d, "x.blf"))], 2);
    assert!(err.contains("cannot export a window filter"), "{err}");
    assert!(!at(&d, "x.blf").exists());
    // A counting filter merges with counting ones only: beside a static one it is refused,
    // naming both kinds and the way to a static filter.
    let err = fails(&["merge", s(&c), s(&st), "-o", s(&at(&d, "m.blf"))], 1);
    says(
        &err,
        &["cannot merge", "counting", "static", "export --static"],
    );
    assert!(!at(&d, "m.blf").exists());
    json(&["merge", s(&s1), s(&st), "-o", s(&at(&d, "m.blf"))]);
}

#[test]
fn float_keys_follow_the_probe_rule_in_every_kind() {
    let d = tmp();
    let keys = write(&d, "f.txt", "-0.0\nNaN\n1.5\n");
    let q = write(&d, "q.txt", "0.0\n-0.0\nnan\n1.5\n");
    let kinds: [&[&str]; 4] = [
        &["--kind", "counting"],
        &["--kind", "stable"],
        &["--kind", "window", "--window-keys", "100"],
        &["--kind", "scalable"],
    ];
    for kind in kinds {
        let f = at(&d, "f.blf");
        let mut args = vec!["build", s(&keys), "--key-type", "f64", "-o", s(&f)];
        args.extend_from_slice(kind);
        json(&args);
        // A filter holding -0.0 answers 0.0 too (writers hash raw bits), and NaN always.
        let v = json(&["query", s(&f), s(&q)]);
        assert_eq!(v["matches"], 4, "{kind:?}: {v}");
    }
}

/// `insert` and `delete` report alike: the text line names the keys, the inputs, the output and
/// the kind, then what each adds; the JSON report has the fields both share and then its own.
#[test]
fn insert_and_delete_report_alike() {
    let d = tmp();
    let c = at(&d, "c.blf");
    build(
        &write(&d, "keys.txt", lines("k", 100)),
        &c,
        "--kind counting --fpp 0.01",
    );
    let more = write(&d, "more.txt", lines("m", 10));
    let into = format!(" into {} (counting", s(&c));
    let texts = [
        (
            "insert",
            "inserted",
            "; 110 keys recorded, expected false-positive rate ",
        ),
        ("delete", "deleted", "; 0 not present; 100 keys recorded\n"),
    ];
    for (command, done, then) in texts {
        let out = succeeds(bl().args([command, s(&c), s(&more)]));
        let text = String::from_utf8_lossy(&out.stdout);
        let from = format!("{done} 10 keys from {} (", s(&more));
        assert!(text.starts_with(&from), "{text}");
        says(&text, &[&into, then]);
    }
    for (command, done, recorded) in [("insert", "inserted", 110), ("delete", "deleted", 100)] {
        let v = json(&[command, s(&c), s(&more)]);
        assert_eq!((&v["filter"], &v["output"]), (&s(&c).into(), &s(&c).into()));
        assert_eq!(v["inputs"][0]["path"], s(&more), "{v}");
        assert_eq!(v["kind"]["name"], "counting");
        assert_eq!(
            (&v[done], &v["recorded_keys"]),
            (&10.into(), &recorded.into())
        );
    }
}
