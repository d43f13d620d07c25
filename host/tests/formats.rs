//! End-to-end tests of the capture and Parquet paths: 5-tuples from pcap/pcapng files the test
//! writes byte by byte, and bloom filters of Parquet files the test writes with the `parquet`
//! crate, checked value by value and bit for bit; plus `export`.

mod common;

use std::fs::File;
use std::sync::Arc;

use common::files as dir_files;
use common::*;
use parquet::bloom_filter::Sbbf;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::FileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

// ---- captures ---------------------------------------------------------------------------------

fn flows() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for i in 0..200u16 {
        let src = [10, 0, (i >> 8) as u8, i as u8];
        let ip = ipv4(6, src, [192, 168, 1, 1], 10000 + i, 443, 0);
        frames.push(eth(0x0800, 0, &ip));
    }
    for i in 0..50u8 {
        frames.push(eth(0x86dd, 0, &ipv6(17, i, 0xfe, 5353, 53)));
    }
    // A repeated flow, and an ARP frame that is not IP.
    frames.push(frames[0].clone());
    frames.push(eth(0x0806, 0, &[0; 28]));
    frames
}

#[test]
fn pcap_five_tuples_build_and_query() {
    let d = tmp();
    let cap = write(&d, "flows.pcap", pcap_file(&flows()));
    let f = at(&d, "flows.blf");
    let v = build(&cap, &f, "--fpp 0.0001");
    // One key per IP packet (the repeated flow twice); the filter is sized for the 250 distinct
    // flows (200 IPv4 + 50 IPv6) that a first pass counted.
    assert_eq!(v["keys"], 251, "{v}");
    assert_eq!(v["capacity"]["source"], "counted", "{v}");
    let est = v["capacity"]["estimated_distinct_keys"].as_f64().unwrap();
    assert!((est - 250.0).abs() < 5.0, "{v}");
    assert_eq!(v["inputs"][0]["format"], "pcap");
    assert_eq!(v["inputs"][0]["skipped"], 1, "the ARP frame");

    // The same capture as pcapng finds every flow; the printed keys are the 5-tuples.
    let ng = write(&d, "flows.pcapng", pcapng_file(&flows()));
    let out = succeeds(bl().args(["query", s(&f), s(&ng)]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().count(),
        251,
        "one line per IP packet, in capture order"
    );
    assert_eq!(
        text.lines().next(),
        text.lines().nth(250),
        "the repeated flow is listed again"
    );
    assert!(
        text.contains("10.0.0.0:10000 -> 192.168.1.1:443 proto 6"),
        "{text}"
    );
    assert!(
        text.contains("[2001::1]:5353 -> [2001::fe]:53 proto 17"),
        "{text}"
    );

    // Other flows (other ports) are not in the filter.
    let other: Vec<Vec<u8>> = (0..200u16)
        .map(|i| {
            let ip = ipv4(6, [10, 0, 0, i as u8], [192, 168, 1, 1], 20000 + i, 80, 0);
            eth(0x0800, 0, &ip)
        })
        .collect();
    let oc = write(&d, "other.pcap", pcap_file(&other));
    let v = json(&["query", s(&f), s(&oc), "--count"]);
    assert!(v["matches"].as_u64().unwrap() <= 2, "{v}");

    // The 13-byte IPv4 key layout: a filter built from the raw record bytes matches.
    let mut rec = vec![10, 0, 0, 0, 192, 168, 1, 1];
    rec.extend_from_slice(&10000u16.to_be_bytes());
    rec.extend_from_slice(&443u16.to_be_bytes());
    rec.push(6);
    let lib_f = bloomlanes_host::store::FilterFile::open(&f).unwrap();
    assert!(lib_f.view().contains(&rec));
}

#[test]
fn unreadable_captures_fail_with_offsets() {
    let d = tmp();
    let mut bytes = pcap_file(&flows());
    bytes.truncate(bytes.len() - 5);
    let cap = write(&d, "cut.pcap", &bytes);
    let out = at(&d, "o.blf");
    // A truncated last record is a warning naming the file and offset, as tcpdump does.
    let r = bl()
        .args(["build", s(&cap), "-o", s(&out)])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{e}");
    assert!(
        e.contains("warning")
            && e.contains("cut.pcap")
            && e.contains("byte offset")
            && e.contains("cut short"),
        "{e}"
    );
    assert!(String::from_utf8_lossy(&r.stdout).contains("251 keys"));
    std::fs::remove_file(&out).unwrap();
    // A record length no capture can have is an error with its offset.
    let mut bytes = pcap_file(&flows());
    bytes[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = write(&d, "badlen.pcap", &bytes);
    let e = fails(&["build", s(&bad), "-o", s(&out)], 1);
    says(&e, &["badlen.pcap", "byte offset 32", "captured length"]);

    let mut ng = pcapng_file(&flows());
    ng[32] = 0xff; // the interface block's length field
    let ngp = write(&d, "bad.pcapng", &ng);
    let e = fails(&["build", s(&ngp), "-o", s(&out)], 1);
    assert!(e.contains("bad.pcapng") && e.contains("byte offset"), "{e}");

    let junk = write(&d, "junk.pcap", b"this is not a capture at all");
    let e = fails(&["build", s(&junk), "--format", "pcap", "-o", s(&out)], 1);
    assert!(e.contains("junk.pcap") && e.contains("not a pcap"), "{e}");
    assert!(!out.exists());
}

// ---- Parquet ----------------------------------------------------------------------------------

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("customer-{i:05}")).collect()
}

fn ids(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| i * 1_000_003 - 77).collect()
}

/// Writes a Parquet file with two columns (`name` BYTE_ARRAY, `id` INT64), bloom filters on.
fn write_parquet(path: &std::path::Path, n: usize) {
    let schema = Arc::new(
        parse_message_type("message customers { required binary name (UTF8); required int64 id; }")
            .unwrap(),
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_bloom_filter_enabled(true)
            .set_bloom_filter_fpp(0.01)
            .set_bloom_filter_max_ndv(n as u64)
            .build(),
    );
    let mut w = SerializedFileWriter::new(File::create(path).unwrap(), schema, props).unwrap();
    let mut rg = w.next_row_group().unwrap();
    let name_values: Vec<ByteArray> = names(n).into_iter().map(|s| s.as_str().into()).collect();
    let mut col = rg.next_column().unwrap().unwrap();
    col.typed::<ByteArrayType>()
        .write_batch(&name_values, None, None)
        .unwrap();
    col.close().unwrap();
    let mut col = rg.next_column().unwrap().unwrap();
    col.typed::<Int64Type>()
        .write_batch(&ids(n), None, None)
        .unwrap();
    col.close().unwrap();
    rg.close().unwrap();
    w.close().unwrap();
}

/// The parquet crate's own bloom filter of column `i`, serialized (Thrift header + bitset).
fn parquet_crate_filter(path: &std::path::Path, i: usize) -> (Vec<u8>, Sbbf) {
    let r = parquet_reader(path);
    let rg = r.get_row_group(0).unwrap();
    let sbbf = rg
        .get_column_bloom_filter(i)
        .expect("bloom filter written")
        .clone();
    let mut bytes = Vec::new();
    sbbf.write(&mut bytes).unwrap();
    (bytes, sbbf)
}

#[test]
fn parquet_column_bloom_filters_import_value_by_value() {
    let d = tmp();
    let n = 3000;
    let pq = at(&d, "customers.parquet");
    write_parquet(&pq, n);

    // The string column: every written value is found, by the CLI and by the library.
    let fname = at(&d, "names.blf");
    let v = json(&["import", s(&pq), "--column", "name", "-o", s(&fname)]);
    assert_eq!(v["column"], "name");
    assert_eq!(v["physical_type"], "BYTE_ARRAY");
    assert_eq!(v["layout"], "8x32");
    let (crate_bytes, sbbf) = parquet_crate_filter(&pq, 0);
    let lib = bloomlanes_host::store::FilterFile::open(&fname).unwrap();
    for name in names(n) {
        assert!(sbbf.check(&name.as_str()), "the parquet crate finds {name}");
        assert!(
            lib.view().contains(name.as_bytes()),
            "bloomlanes finds {name}"
        );
    }
    let q = write(&d, "names.txt", names(n).join("\n"));
    assert_eq!(json(&["query", s(&fname), s(&q), "--count"])["matches"], n);

    // The imported bitset equals the parquet crate's, byte for byte (export gives it back).
    let back = at(&d, "names.sbbf");
    bl().args(["export", s(&fname), "--parquet", s(&back)])
        .assert()
        .success();
    assert_eq!(std::fs::read(&back).unwrap(), crate_bytes);
    // And answers agree key by key on values that were never written.
    for i in 0..2000 {
        let k = format!("stranger-{i}");
        assert_eq!(
            sbbf.check(&k.as_str()),
            lib.view().contains(k.as_bytes()),
            "{k}"
        );
    }

    // The INT64 column (by index), queried with decimal integers.
    let fid = at(&d, "ids.blf");
    let v = json(&["import", s(&pq), "--column", "1", "-o", s(&fid)]);
    assert_eq!(v["column"], "id");
    let (crate_ids, sbbf_ids) = parquet_crate_filter(&pq, 1);
    let lib = bloomlanes_host::store::FilterFile::open(&fid).unwrap();
    for id in ids(n) {
        assert!(sbbf_ids.check(&id));
        assert!(lib.view().contains(&(id as u64)), "bloomlanes finds {id}");
    }
    // Signed decimals (the INT64 column records key type i64, so text is parsed as i64).
    assert_eq!(v["key_type"], "i64");
    let dec: String = ids(n).iter().map(|i| format!("{i}\n")).collect();
    let q = write(&d, "ids.txt", dec);
    assert_eq!(
        json(&["query", s(&fid), s(&q), "--format", "decimal", "--count"])["matches"],
        n
    );
    let back = at(&d, "ids.sbbf");
    bl().args(["export", s(&fid), "--parquet", s(&back)])
        .assert()
        .success();
    assert_eq!(std::fs::read(&back).unwrap(), crate_ids);

    // A bare Parquet bloom filter imports too, and round-trips.
    let again = at(&d, "again.blf");
    bl().args(["import", s(&back), "-o", s(&again)])
        .assert()
        .success();
    let a = bloomlanes_host::store::FilterFile::open(&again).unwrap();
    assert_eq!(a.words(), lib.words());
}

#[test]
fn parquet_bad_inputs() {
    let d = tmp();
    let pq = at(&d, "c.parquet");
    write_parquet(&pq, 100);
    let out = at(&d, "o.blf");
    let e = fails(&["import", s(&pq), "--column", "nope", "-o", s(&out)], 2);
    assert!(e.contains("nope") && e.contains("name, id"), "{e}");
    let e = fails(&["import", s(&pq), "--row-group", "5", "-o", s(&out)], 2);
    assert!(e.contains("row group"), "{e}");
    // A truncated Parquet file.
    let bytes = std::fs::read(&pq).unwrap();
    let cut = write(&d, "cut.parquet", &bytes[..bytes.len() / 2]);
    let e = fails(&["import", s(&cut), "-o", s(&out)], 1);
    assert!(e.contains("cut.parquet"), "{e}");
    let junk = write(&d, "junk.bin", b"\x15\x00garbage");
    let e = fails(&["import", s(&junk), "-o", s(&out)], 1);
    assert!(e.contains("junk.bin") && e.contains("Parquet"), "{e}");
    assert!(!out.exists());

    // Only 8x32 seed-0 filters have a Parquet form.
    let (_, f) = write_and_build(&d, "k.txt", "a\n", "f.blf", "--layout 16x64");
    let e = fails(&["export", s(&f), "--parquet", s(&at(&d, "x.sbbf"))], 1);
    assert!(e.contains("8x32"), "{e}");
    assert!(!at(&d, "x.sbbf").exists());
}

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
    // The flow beside the RTL (issue 26: the counting export's twin check is in kinds.rs).
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
