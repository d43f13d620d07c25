//! End-to-end tests of `export --hdl` in the `bloomlanes` binary: the RTL, banks and bench of
//! a static filter (ports, top names, key inputs, boards, multiply styles) and of a counting
//! filter, and `verify` running the counting RTL in a simulator.

use bloomlanes_testkit::skip;

mod common;

use common::files as dir_files;
use common::*;

// ---- HDL export -------------------------------------------------------------------------------

#[test]
fn hdl_export_writes_rtl_and_banks() {
    let (d, _, f) = built("k.txt", lines("k", 500), "f.blf", "--layout 8x32");
    let rtl = at(&d, "rtl");
    // Text lines are variable-length keys: hashed on chip with a length field.
    let v = json(&["export", s(&f), "--hdl", s(&rtl), "--max-key-bytes", "8"]);
    assert_eq!(v["form"], "hdl");
    let files: Vec<String> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    for f in &files {
        assert!(std::path::Path::new(f).is_file(), "{f} was written");
        assert!(f.starts_with(s(&rtl)), "{f} is in the requested folder");
    }
    let banks = files
        .iter()
        .filter(|f| f.contains("_bank") && f.ends_with(".hex"))
        .count();
    assert_eq!(banks, 8, "one bank file per lane: {files:?}");
    assert!(files.iter().any(|f| f.ends_with(".v")));
    assert!(!files.is_empty() && rtl.join("bloomlanes.v").is_file());
    // The flow beside the RTL (issue 26: the counting export's twin check is below).
    let readme = hdl_kit(&rtl, "bloomlanes", "m0_hit");
    assert!(
        readme.contains("`s0_len`") && readme.contains("static"),
        "{readme}"
    );
    assert_eq!(v["report"], s(&rtl.join("bloomlanes_report.md")));
    // A bad configuration fails and leaves no folder behind.
    let bad = at(&d, "bad");
    let e = fails(
        &["export", s(&f), "--hdl", s(&bad), "--key-bytes", "999"],
        1,
    );
    assert!(e.contains("key width"), "{e}");
    assert!(!bad.exists());
    // A fixed-width input does not fit keys of text lines (the filter records their type).
    let e = fails(&["export", s(&f), "--hdl", s(&bad), "--key-bytes", "2"], 1);
    assert!(e.contains("variable-length keys"), "{e}");
    assert!(!bad.exists());
    assert_eq!(dir_files(&d), ["f.blf", "k.txt", "rtl"]);
}

/// Module names declared in the `.v` files of `dir` (every folder below it included).
fn verilog_modules(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            names.extend(verilog_modules(&p));
        } else if p.extension().is_some_and(|x| x == "v") {
            let text = std::fs::read_to_string(&p).unwrap();
            for l in text.lines() {
                if let Some(rest) = l.trim_start().strip_prefix("module ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    names.push(name);
                }
            }
        }
    }
    names
}

#[test]
fn hdl_export_takes_ports_top_and_variable_length_keys() {
    let (d, _, f) = built("k.txt", lines("key", 300), "f.blf", "--layout 8x32");
    let a = at(&d, "a");
    let v = json(&argv!(
        "export",
        f,
        "--hdl",
        a,
        "--ports 3 --top edge_a --max-key-bytes 16"
    ));
    assert_eq!(v["ports"], 3);
    assert_eq!(v["top"], "edge_a");
    assert_eq!(v["key"], "keys of 0 to 16 bytes");
    let rtl = std::fs::read_to_string(a.join("edge_a.v")).expect("edge_a.v is written");
    assert!(rtl.contains("module edge_a"), "top module named by --top");
    for port in ["s0_valid", "s1_valid", "s2_valid", "s0_len"] {
        assert!(
            rtl.contains(port),
            "{port}: three ports with a length field"
        );
    }
    assert!(!rtl.contains("s3_valid"), "no fourth port");
    // A second filter under another name: no module of one export is declared by the other.
    let b = at(&d, "b");
    json(&["export", s(&f), "--hdl", s(&b), "--top", "edge_b"]);
    let (ma, mb) = (verilog_modules(&a), verilog_modules(&b));
    assert!(ma.contains(&"edge_a".to_string()) && mb.contains(&"edge_b".to_string()));
    let shared: Vec<&String> = ma.iter().filter(|m| mb.contains(m)).collect();
    assert!(shared.is_empty(), "modules of both exports: {shared:?}");
    // Bad values are errors that name the problem, and leave no folder behind.
    let bad = at(&d, "bad");
    for (args, want) in [
        (["--ports", "9"], "lookup_ports"),
        (["--ports", "0"], "lookup_ports"),
        (["--top", "9lives"], "identifier"),
        (["--max-key-bytes", "65"], "variable-length keys"),
    ] {
        let mut all = vec!["export", s(&f), "--hdl", s(&bad)];
        all.extend(args);
        let e = fails(&all, 1);
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(!bad.exists(), "{args:?} left a folder");
    }
    // Fixed and variable-length key inputs exclude each other; the options need --hdl.
    fails(
        &argv!("export", f, "--hdl", bad, "--key-bytes 8 --max-key-bytes 8"),
        2,
    );
    for opt in [["--ports", "2"], ["--top", "x"], ["--key-bytes", "8"]] {
        let mut all = vec!["export", s(&f), "--parquet", s(&bad)];
        all.extend(opt);
        let e = fails(&all, 2);
        assert!(e.contains("--hdl"), "{e}");
    }
    assert!(!bad.exists());
}

#[test]
fn hdl_export_refuses_a_key_input_the_filter_was_not_built_from() {
    use bloomlanes_core::{Filter, KeyType, Layout, Params};
    let d = tmp();
    let typed = |name: &str, t: KeyType| {
        let mut filter = Filter::new(Params::new(Layout::L8x32, 16).with_key_type(t));
        for i in 0..100u64 {
            filter.insert(&i.to_le_bytes());
        }
        write(&d, name, filter.to_file_bytes())
    };
    let u64s = typed("u64.blf", KeyType::U64);
    let text = typed("text.blf", KeyType::Bytes);
    let untyped = typed("any.blf", KeyType::Any);
    let out = at(&d, "out");
    let export = |f: &std::path::Path, key: &[&str]| {
        let mut args = vec!["export", s(f), "--hdl", s(&out)];
        args.extend(key);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run_ok = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let v = json(&refs);
        std::fs::remove_dir_all(&out).unwrap();
        v
    };
    let refused = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = fails(&refs, 1);
        assert!(!out.exists(), "a refused export left a folder");
        e
    };
    // u64 keys: 8 bytes fixed or up to 8+ variable, or prehashed; never 4 bytes.
    run_ok(export(&u64s, &["--key-bytes", "8"]));
    run_ok(export(&u64s, &["--max-key-bytes", "8"]));
    run_ok(export(&u64s, &[]));
    let e = refused(export(&u64s, &["--key-bytes", "4"]));
    says(&e, &["fixed 8-byte keys", "4-byte keys"]);
    // Text keys: a fixed-width input would hash only keys of exactly that length.
    let e = refused(export(&text, &["--key-bytes", "8"]));
    assert!(e.contains("variable-length keys"), "{e}");
    run_ok(export(&text, &["--max-key-bytes", "64"]));
    // No recorded key type: exported, with a warning that nothing was checked.
    let v = run_ok(export(&untyped, &["--key-bytes", "8"]));
    let w = v["warnings"].as_array().unwrap();
    assert!(
        w.len() == 1 && w[0].as_str().unwrap().contains("key type"),
        "{v}"
    );
    let v = run_ok(export(&untyped, &[]));
    assert!(
        v["warnings"].as_array().unwrap().is_empty(),
        "prehashed fits every filter"
    );
}

/// `f.blf` in `d`: an 8x32 filter of 200 text keys built with the options `extra`.
fn text_filter(d: &tempfile::TempDir, extra: &[&str]) -> std::path::PathBuf {
    let keys = write(d, "k.txt", lines("k", 200));
    let f = at(d, "f.blf");
    let build = ["build", s(&keys), "-o", s(&f), "--layout", "8x32"];
    bl().args(build).args(extra).assert().success();
    f
}

/// Issue #26: the FPGA engineer's export bugs, each through the CLI.
#[test]
fn hdl_export_finishes_for_a_seed_that_zeroed_the_bench_generator() {
    // 0x0123456789abcdef made the old xorshift state 0: every key 0, port 1's search endless.
    let d = tmp();
    let f = text_filter(&d, &["--seed", "81985529216486895"]);
    let out = at(&d, "rtl");
    bl().args(["export", s(&f), "--hdl", s(&out), "--ports", "2"])
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    let stim = std::fs::read_to_string(out.join("stim_p1.hex")).unwrap();
    let distinct: std::collections::BTreeSet<&str> = stim.lines().collect();
    assert!(
        distinct.len() > 900,
        "{} distinct port-1 operations",
        distinct.len()
    );
}

#[test]
fn hdl_export_refuses_keyword_top_names() {
    let d = tmp();
    let f = text_filter(&d, &[]);
    let out = at(&d, "rtl");
    for top in "module wire begin always reg logic interface".split(' ') {
        let e = fails(&["export", s(&f), "--hdl", s(&out), "--top", top], 1);
        assert!(e.contains("keyword") && e.contains(top), "{top}: {e}");
        assert!(!out.exists(), "--top {top} left a folder");
    }
    // A keyword in another case is an identifier in both languages.
    json(&["export", s(&f), "--hdl", s(&out), "--top", "Module"]);
    assert!(out.join("Module.v").is_file());
}

#[test]
fn hdl_export_checks_the_board_before_writing() {
    use bloomlanes_core::{Filter, Layout, Params};
    let d = tmp();
    let filter = |blocks| Filter::new(Params::new(Layout::L8x32, blocks)).to_file_bytes();
    let big = write(&d, "big.blf", filter(16_384));
    let small = write(&d, "small.blf", filter(64));
    let out = at(&d, "rtl");
    let e = fails(
        &["export", s(&big), "--hdl", s(&out), "--board", "ice40-hx8k"],
        1,
    );
    assert!(
        e.contains("ice40-hx8k") && e.contains("SB_RAM40_4K") && e.contains("has 192 blocks"),
        "{e}"
    );
    assert!(!out.exists(), "a refused export left a folder");
    // The same filter fits no ULX3S below the 85F... nor the 85F (256 DP16KD of 208).
    let e = fails(
        &["export", s(&big), "--hdl", s(&out), "--board", "ulx3s-85f"],
        1,
    );
    assert!(e.contains("DP16KD"), "{e}");
    json(&[
        "export",
        s(&small),
        "--hdl",
        s(&out),
        "--board",
        "ice40-hx8k",
    ]);
    assert!(out.join("bloomlanes.v").is_file());
    // Hashed keys with DSP multiplies need multipliers the HX8K lacks; the message says what to
    // use instead.
    let other = at(&d, "other");
    let e = fails(
        &[
            "export",
            s(&small),
            "--hdl",
            s(&other),
            "--board",
            "ice40-hx8k",
        ]
        .into_iter()
        .chain(["--key-bytes", "8"])
        .collect::<Vec<_>>(),
        1,
    );
    assert!(
        e.contains("multipliers") && e.contains("--mul-style lut"),
        "{e}"
    );
    let e = fails(
        &["export", s(&small), "--hdl", s(&other), "--board", "vc707"],
        2,
    );
    assert!(e.contains("ice40-hx8k") && e.contains("ulx3s-85f"), "{e}");
    let e = fails(
        &[
            "export",
            s(&small),
            "--parquet",
            s(&other),
            "--board",
            "ice40-hx8k",
        ],
        2,
    );
    assert!(e.contains("--hdl"), "{e}");
    assert!(!other.exists());
}

#[test]
fn hdl_export_takes_the_multiply_style() {
    use bloomlanes_core::{Filter, KeyType, Layout, Params};
    let d = tmp();
    let f = Filter::new(Params::new(Layout::L8x32, 16).with_key_type(KeyType::U64));
    let f = write(&d, "f.blf", f.to_file_bytes());
    for (style, dsp) in [("dsp", true), ("lut", false)] {
        let out = at(&d, style);
        json(&[
            "export",
            s(&f),
            "--hdl",
            s(&out),
            "--key-bytes",
            "8",
            "--mul-style",
            style,
        ]);
        let rtl = std::fs::read_to_string(out.join("bloomlanes.v")).unwrap();
        // DSP-style products are `x * constant` registers named dsp_* (the index multiplies use
        // table products in both styles).
        assert_eq!(rtl.contains(" dsp_"), dsp, "{style}");
    }
    fails(
        &[
            "export",
            s(&f),
            "--hdl",
            s(&at(&d, "x")),
            "--mul-style",
            "fpga",
        ],
        2,
    );
}

#[test]
fn verify_runs_the_counting_filter_in_the_counting_rtl() {
    if bloomlanes_hdl::simulator_available().is_none() {
        skip(format_args!(
            "verify_runs_the_counting_filter_in_the_counting_rtl: no Verilog simulator"
        ));
        return;
    }
    let v = json(&argv!(
        "verify --keys 2000 --layout 8x32 --kind counting --hdl-keys 40"
    ));
    assert_eq!(v["ok"], true, "{v}");
    let rows = v["rows"].as_array().unwrap();
    let hdl: Vec<_> = rows
        .iter()
        .filter(|r| r["backend"].as_str().unwrap().starts_with("hdl-sim"))
        .collect();
    assert_eq!(hdl.len(), 1, "one counting RTL row: {rows:?}");
    assert_eq!(hdl[0]["kind"], "counting");
    assert_eq!(hdl[0]["identical"], true);
    // 40 + 40 lookups, 20 + 10 deletes, 40 lookups again, 10 inserts.
    assert_eq!(hdl[0]["probes"], 160);
}

#[test]
fn export_hdl_counting_writes_a_pipeline_whose_bench_passes() {
    let (d, keys, c) = built("k.txt", lines("key-", 2000), "c.blf", "--kind counting");
    let out = at(&d, "rtl");
    let v = json(&argv!("export", c, "--hdl", out, "--counting --top cnt"));
    assert_eq!(v["form"], "hdl-counting");
    assert_eq!(v["counter_bits"], 4);
    let files = v["files"].as_array().unwrap();
    let banks = files
        .iter()
        .filter(|f| f.as_str().unwrap().contains("cnt_bank"))
        .count();
    assert_eq!(banks, 8, "one counter bank per lane: {files:?}");
    // Issue 26: the counting export has the static export's flow, for its own ports: op 2 is a
    // delete, the answer a counting lookup's or delete's, the entries 4 bits a lane.
    let readme = hdl_kit(&out, "cnt", "m0_hit");
    assert!(
        readme.contains("2 delete") && readme.contains("counting") && readme.contains("4 bit(s)"),
        "{readme}"
    );
    let axis = std::fs::read_to_string(out.join("cnt_axis.v")).unwrap();
    assert!(
        axis.contains("2 delete") && axis.contains("wire [31:0] mg_rdata"),
        "{axis}"
    );
    let config = std::fs::read_to_string(out.join("cocotb/config.json")).unwrap();
    assert!(
        config.contains("\"kind\": \"counting\"") && config.contains("\"cell_bits\": 4"),
        "{config}"
    );
    assert_eq!(v["report"], s(&out.join("cnt_report.md")));
    // The refusals: a static filter, and more than one port.
    let st = at(&d, "s.blf");
    build(&keys, &st, "");
    let e = fails(
        &["export", s(&st), "--hdl", s(&at(&d, "x")), "--counting"],
        2,
    );
    assert!(e.contains("counting") && e.contains("static"), "{e}");
    let e = fails(
        &argv!("export", c, "--hdl", at(&d, "y"), "--counting --ports 2"),
        2,
    );
    assert!(e.contains("one port"), "{e}");
    assert!(
        !at(&d, "x").exists() && !at(&d, "y").exists(),
        "nothing written on refusal"
    );
    // The exported self-checking bench, banks loaded from the filter, in Icarus when installed.
    let have = |t: &str| std::process::Command::new(t).arg("-V").output().is_ok();
    if !have("iverilog") {
        skip(format_args!(
            "export_hdl_counting_writes_a_pipeline_whose_bench_passes: no iverilog"
        ));
        return;
    }
    let run = |cmd: &mut std::process::Command| {
        let o = cmd.current_dir(&out).output().unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        (o.status.success(), text)
    };
    let (ok, text) = run(std::process::Command::new("iverilog").args(argv!(
        "-g2005 -s cnt_tb -Pcnt_tb.LOAD_BANKS=1 -o sim.vvp cnt.v cnt_tb.v"
    )));
    assert!(ok, "{text}");
    let (ok, text) = run(std::process::Command::new("vvp").args(["-n", "sim.vvp"]));
    assert!(ok && text.contains("PASS:"), "{text}");
}
