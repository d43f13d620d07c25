//! End-to-end tests of the streaming inputs (chunk boundaries, standard input, gzip/zstd/xz,
//! undetectable formats), of `classify` (packet outputs, bitmap, per-flow counts, verdicts equal
//! to the core's answers packet by packet) and the regressions of issue #11 that live in the
//! input and listing code.

use bloomlanes_testkit::skip;

mod common;

use std::io::Write;

use bloomlanes_host::input::pcap::{self, IPV6_TUPLE_LEN};
use bloomlanes_host::input::{read_inputs, InputOptions, PipelineConfig};
use bloomlanes_host::ops::classify::{self, Outputs};
use bloomlanes_host::{FilterFile, InputFormat};
use common::*;

// ---- captures built by the test (frames and writers in `common`) ---------------------------

/// 600 packets: 20 IPv4 UDP flows (some VLAN/QinQ-tagged), 4 IPv6 TCP flows, ARP frames, and a
/// frame whose IP header is cut short. Flow `i` of IPv4 is 10.0.0.{i}:{1000+i} > 10.9.9.9:53.
fn mixed_frames() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for p in 0..600usize {
        let f = match p % 30 {
            0 => eth(0x0806, 0, &[0; 28]),
            1 => eth(
                0x0800,
                0,
                &ipv4(17, [10, 0, 0, 1], [10, 9, 9, 9], 1001, 53, 0)[..12],
            ),
            k if k < 6 => eth(0x86dd, 0, &ipv6(6, k as u8, 0xfe, 4000 + k as u16, 443)),
            k => {
                let i = (k + p / 30) % 20;
                eth(
                    0x0800,
                    p % 3,
                    &ipv4(
                        17,
                        [10, 0, 0, i as u8],
                        [10, 9, 9, 9],
                        1000 + i as u16,
                        53,
                        p % 50,
                    ),
                )
            }
        };
        v.push(f);
    }
    v
}

/// The flows text of IPv4 flows `0..n` (even ones) and one IPv6 flow.
fn half_the_flows() -> String {
    let mut s = String::new();
    for i in (0..20).step_by(2) {
        s.push_str(&format!("10.0.0.{i}:{}>10.9.9.9:53/udp\n", 1000 + i));
    }
    s.push_str("[2001::3]:4003>[2001::fe]:443/tcp\n");
    s
}

/// A temporary directory with `flows.txt` ([`half_the_flows`]) and `flows.blf` built from it
/// with `--format flows FLAGS`: `(directory, flows.txt, flows.blf)`.
fn flows_filter(flags: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    built(
        "flows.txt",
        half_the_flows(),
        "flows.blf",
        &format!("--format flows {flags}"),
    )
}

/// The records of a classic pcap body: (record bytes with header).
fn records(file: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= file.len() {
        let incl = u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(&file[at..at + 16 + incl]);
        at += 16 + incl;
    }
    out
}

fn flow_of(frame: &[u8]) -> Option<Vec<u8>> {
    let mut k = [0u8; IPV6_TUPLE_LEN];
    match pcap::flow_key(1, frame, &mut k) {
        pcap::Flow::Key(n) => Some(k[..n].to_vec()),
        _ => None,
    }
}

// ---- chunk boundaries ------------------------------------------------------------------------

/// Every format read with chunks of 1, 2, 3, 7 and 64 bytes gives the keys of one whole read.
#[test]
fn records_cut_at_chunk_boundaries_are_read_exactly() {
    let d = tmp();
    let mut u64s = Vec::new();
    for k in [1u64, 2, 300, u64::MAX, 7 << 40] {
        u64s.extend_from_slice(&k.to_le_bytes());
    }
    let inputs: Vec<(std::path::PathBuf, InputFormat)> = vec![
        (
            write(&d, "l.txt", "alpha\r\n\nbeta\ngamma delta\nlast-no-newline"),
            InputFormat::Lines,
        ),
        (
            write(&d, "d.txt", "1\n 0x2a \n\n1_000\n18446744073709551615"),
            InputFormat::Decimal,
        ),
        (write(&d, "f.txt", half_the_flows()), InputFormat::Flows),
        (
            write(
                &d,
                "c.csv",
                "id,name\r\n1,\"multi\nline, \"\"quoted\"\"\"\n2,plain\n3,\"\"\n",
            ),
            InputFormat::Csv,
        ),
        (write(&d, "k.u64", &u64s), InputFormat::U64),
        (
            write(&d, "p.pcap", pcap_file(&mixed_frames()[..80])),
            InputFormat::Pcap,
        ),
        (
            write(&d, "n.pcapng", pcapng_file(&mixed_frames()[..80])),
            InputFormat::Pcap,
        ),
    ];
    for (path, format) in &inputs {
        let opts = |chunk: Option<usize>| {
            let mut p = PipelineConfig::with_threads(2);
            if let Some(c) = chunk {
                p = p.chunk_bytes(c);
            }
            InputOptions {
                format: *format,
                csv_column: (*format == InputFormat::Csv).then(|| "name".to_string()),
                pipeline: p,
                ..InputOptions::default()
            }
        };
        let (whole, s) = read_inputs(std::slice::from_ref(path), &opts(None)).unwrap();
        assert!(!whole.is_empty(), "{path:?}");
        for chunk in [1usize, 2, 3, 7, 64] {
            let (cut, s2) = read_inputs(std::slice::from_ref(path), &opts(Some(chunk))).unwrap();
            assert_eq!(cut.len(), whole.len(), "{path:?} in {chunk}-byte chunks");
            for i in 0..whole.len() {
                assert_eq!(
                    cut.key_bytes(i),
                    whole.key_bytes(i),
                    "{path:?} key {i}, {chunk}-byte chunks"
                );
            }
            assert_eq!(s2, s);
        }
        if *format == InputFormat::Csv {
            assert_eq!(whole.display(0), "multi\nline, \"quoted\"");
            assert_eq!(whole.len(), 3);
        }
        if *format == InputFormat::Decimal {
            assert_eq!(whole.display(1), "42");
            assert_eq!(whole.len(), 4);
        }
    }
}

// ---- compressed inputs, standard input, undetectable formats ---------------------------------

#[test]
fn gzip_zstd_xz_and_stdin_inputs_give_the_same_answers() {
    let d = tmp();
    let text: String = (0..20_000).map(|i| format!("key-{i}\n")).collect();
    let plain = write(&d, "keys.txt", &text);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = write(&d, "keys.txt.gz", gz.finish().unwrap());
    let zst = write(
        &d,
        "keys.zst",
        zstd::encode_all(text.as_bytes(), 3).unwrap(),
    );
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(text.as_bytes()).unwrap();
    let xz = write(&d, "keys.xz", xz.finish().unwrap());
    let f = at(&d, "k.blf");
    let v = build(&zst, &f, "");
    assert_eq!(v["keys"], 20_000, "{v}");
    assert_eq!(v["inputs"][0]["compression"], "zstd");
    assert_eq!(
        v["capacity"]["source"], "counted",
        "a compressed file is read twice"
    );
    let probe: String = (10_000..30_000).map(|i| format!("key-{i}\n")).collect();
    let probe_path = write(&d, "probe.txt", &probe);
    let expected = json(&["query", s(&f), s(&probe_path), "--count"])["matches"].clone();
    assert!(expected.as_u64().unwrap() >= 10_000);
    for p in [&plain, &gz, &zst, &xz] {
        let v = json(&["query", s(&f), s(p), "--count"]);
        assert_eq!(v["matches"], 20_000, "{p:?}: {v}");
    }
    // Standard input, plain and gzip-compressed, for query and build.
    let mut gz_probe = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz_probe.write_all(probe.as_bytes()).unwrap();
    let gz_probe = gz_probe.finish().unwrap();
    for stdin in [probe.as_bytes().to_vec(), gz_probe] {
        let out = succeeds(
            bl().args(["--json", "query", s(&f), "-", "--count"])
                .write_stdin(stdin),
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["matches"], expected);
        assert_eq!(v["inputs"][0]["path"], "<stdin>");
    }
    // A compressed stream cut short is an error naming the file, and nothing is written.
    let bytes = std::fs::read(&gz).unwrap();
    let cut = write(&d, "cut.txt.gz", &bytes[..bytes.len() / 2]);
    let out = at(&d, "cut.blf");
    let e = fails(&["build", s(&cut), "-o", s(&out), "--capacity", "10"], 1);
    says(&e, &["cut.txt.gz", "gzip", "cut short"]);
    let bytes = std::fs::read(&zst).unwrap();
    let cut = write(&d, "cut.zst", &bytes[..bytes.len() - 7]);
    let e = fails(&["query", s(&f), s(&cut), "--count"], 2);
    assert!(e.contains("cut.zst") && e.contains("zstd"), "{e}");
    // A zstd frame whose window passes the decoder's bound is named as such (issue #24: it was
    // "damaged or cut short").
    let mut wide = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    wide.set_parameter(zstd::zstd_safe::CParameter::WindowLog(29))
        .unwrap();
    std::io::Write::write_all(&mut wide, text.as_bytes()).unwrap();
    let wide = write(&d, "wide.zst", wide.finish().unwrap());
    let e = fails(&["query", s(&f), s(&wide), "--count"], 2);
    assert!(
        e.contains("wide.zst") && e.contains("window") && !e.contains("cut short"),
        "{e}"
    );
    assert!(!out.exists());
    // Binary data of no known format is an error, not text; other compressors are named.
    let bin = write(&d, "mystery.dat", [7u8, 0, 0, 1, 2, 3]);
    let e = fails(&["build", s(&bin), "-o", s(&out)], 1);
    says(&e, &["mystery.dat", "cannot tell", "--format"]);
    let bz = write(&d, "k.bz2", b"BZh91AY&SY\x00\x00");
    let e = fails(&["build", s(&bz), "-o", s(&out)], 1);
    assert!(e.contains("k.bz2") && e.contains("bzip2"), "{e}");
    // A zip inside a gzip is refused as the zip is, not read as text.
    let mut gz_zip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz_zip
        .write_all(b"PK\x03\x04\x14\x00\x00\x00keys.txt")
        .unwrap();
    let gz_zip = write(&d, "k.zip.gz", gz_zip.finish().unwrap());
    let e = fails(&["build", s(&gz_zip), "-o", s(&out)], 1);
    says(&e, &["k.zip.gz", "zip-compressed"]);
    // Inputs that merely start like another compressor's magic are read: a text line "BZh9 …"
    // (no bzip2 block magic follows) and a u64 file whose first key is 93 (`5d 00 00 …`, not a
    // legacy .lzma header).
    let bzh = write(&d, "bzh.txt", "BZh9 is a key\nother\n");
    assert_eq!(build(&bzh, &out, "")["keys"], 2);
    let ints: Vec<u8> = [93u64, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    let ints = write(&d, "ints.u64", ints);
    let v = build(&ints, &out, "--format u64");
    assert_eq!(v["keys"], 3, "{v}");
}

// ---- classify --------------------------------------------------------------------------------

/// The verdict of every packet equals the core's answer for its flow key, packet by packet.
#[test]
fn per_packet_verdicts_equal_the_cores_answers() {
    let (d, _, f) = flows_filter("--fpp 0.3");
    let frames = mixed_frames();
    let cap = write(&d, "mixed.pcap", pcap_file(&frames));
    let filter = FilterFile::open(&f).unwrap();
    for threads in [1, 2] {
        for chunk in [33usize, 4096, 2 << 20] {
            let mut bitmap = Vec::new();
            let cfg = PipelineConfig::with_threads(threads).chunk_bytes(chunk);
            let t = classify::classify(
                &filter,
                &cap,
                &cfg,
                Outputs {
                    packets: None,
                    bitmap: Some(&mut bitmap),
                    ..Outputs::default()
                },
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(t.packets, frames.len() as u64);
            assert_eq!(bitmap.len(), frames.len().div_ceil(8));
            let mut matched = 0;
            for (i, fr) in frames.iter().enumerate() {
                let expected = flow_of(fr).is_some_and(|k| filter.contains(&k[..]));
                let got = (bitmap[i / 8] >> (i % 8)) & 1 == 1;
                assert_eq!(
                    got, expected,
                    "packet {i} ({threads} threads, {chunk}-byte chunks)"
                );
                matched += u64::from(expected);
            }
            assert_eq!(t.matched, matched);
            assert_eq!(t.non_ip, 20, "the ARP frames");
            assert_eq!(t.malformed, 20, "the frames cut inside the IP header");
        }
    }
}

#[test]
fn classify_writes_captures_bitmaps_and_flow_counts() {
    let (d, _, f) = flows_filter("--fpp 0.000001");
    let frames = mixed_frames();
    let input = pcap_file(&frames);
    let cap = write(&d, "mixed.pcap", &input);
    let out = at(&d, "match.pcap");
    let bits = at(&d, "bits");
    let v = json(&argv!(
        "classify",
        f,
        cap,
        "-w",
        out,
        "--bitmap",
        bits,
        "--flows --chunk-bytes 999"
    ));
    let filter = FilterFile::open(&f).unwrap();
    let wanted: Vec<bool> = frames
        .iter()
        .map(|fr| flow_of(fr).is_some_and(|k| filter.contains(&k[..])))
        .collect();
    let n_match = wanted.iter().filter(|&&m| m).count() as u64;
    assert_eq!(v["packets"], 600);
    assert_eq!(v["matched"], n_match, "{v}");
    assert_eq!(v["written"], n_match);
    // The written capture: the input's header, then exactly the matching records, byte for byte
    // (timestamps, lengths, link type and snap length preserved).
    let written = std::fs::read(&out).unwrap();
    assert_eq!(written[..24], input[..24]);
    let expected: Vec<&[u8]> = records(&input)
        .into_iter()
        .zip(&wanted)
        .filter(|(_, &m)| m)
        .map(|(r, _)| r)
        .collect();
    assert_eq!(records(&written), expected);
    let bitmap = std::fs::read(&bits).unwrap();
    for (i, &m) in wanted.iter().enumerate() {
        assert_eq!((bitmap[i / 8] >> (i % 8)) & 1 == 1, m, "bit {i}");
    }
    // Per-flow counts: every IPv4 flow, with its verdict.
    let rows = v["flows"].as_array().unwrap();
    let distinct: std::collections::HashSet<Vec<u8>> =
        frames.iter().filter_map(|f| flow_of(f)).collect();
    assert_eq!(distinct.len(), 24, "20 IPv4 + 4 IPv6 flows");
    assert_eq!(rows.len(), 24);
    let total: u64 = rows.iter().map(|r| r["packets"].as_u64().unwrap()).sum();
    assert_eq!(total, 600 - 40);
    let f3 = rows
        .iter()
        .find(|r| r["flow"] == "[2001::3]:4003 -> [2001::fe]:443 proto 6")
        .unwrap();
    assert_eq!(
        (f3["packets"].as_u64(), f3["matched"].as_bool()),
        (Some(20), Some(true))
    );
    // The complement, and pcapng in gives pcapng out.
    let rest = at(&d, "rest.pcap");
    let v = json(&argv!(
        "classify",
        f,
        cap,
        "-w",
        rest,
        "--select not-matching"
    ));
    assert_eq!(v["written"], 600 - n_match);
    assert_eq!(
        records(&std::fs::read(&rest).unwrap()).len() as u64,
        600 - n_match
    );
    let ng = write(&d, "mixed.pcapng", pcapng_file(&frames));
    let ng_out = at(&d, "match.pcapng");
    let v = json(&argv!("classify", f, ng, "-w", ng_out, "--chunk-bytes 500"));
    assert_eq!(v["matched"], n_match);
    let back = pcap::parse(&std::fs::read(&ng_out).unwrap()).unwrap();
    assert_eq!(back.packets, n_match);
    // tcpdump reads what was written.
    if std::process::Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok()
    {
        for p in [&out, &ng_out] {
            let r = std::process::Command::new("tcpdump")
                .args(["-n", "-r", s(p)])
                .output()
                .unwrap();
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            assert_eq!(
                String::from_utf8_lossy(&r.stdout).lines().count() as u64,
                n_match
            );
        }
    } else {
        skip(format_args!("tcpdump is not installed; the written captures were checked by this test's own reader only"));
    }
    // Standard input, gzip-compressed.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&input).unwrap();
    let o = succeeds(
        bl().args(["--json", "classify", s(&f), "-"])
            .write_stdin(gz.finish().unwrap()),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["matched"], n_match);
}

#[test]
fn bad_captures_are_named_and_outputs_left_unwritten() {
    let (d, _, f) = flows_filter("");
    let frames = mixed_frames();
    let out = at(&d, "o.pcap");
    // A truncated last record: a warning, the rest classified.
    let mut b = pcap_file(&frames);
    b.truncate(b.len() - 10);
    let cut = write(&d, "cut.pcap", &b);
    let o = bl()
        .args(["--json", "classify", s(&f), s(&cut), "-w", s(&out)])
        .output()
        .unwrap();
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    says(&e, &["warning", "cut.pcap", "cut short"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["packets"], 599);
    std::fs::remove_file(&out).unwrap();
    // An unknown link type, a corrupt record length: errors with offsets, no output file.
    let mut b = pcap_file(&frames);
    b[20] = 0xee;
    let lt = write(&d, "lt.pcap", &b);
    let e = fails(&["classify", s(&f), s(&lt), "-w", s(&out)], 1);
    says(&e, &["lt.pcap", "byte offset 20", "link type 238"]);
    let mut b = pcap_file(&frames);
    let second = 24 + 16 + frames[0].len();
    b[second + 8..second + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let bad = write(&d, "bad.pcap", &b);
    let e = fails(&["classify", s(&f), s(&bad), "-w", s(&out)], 1);
    assert!(
        e.contains("bad.pcap") && e.contains(&format!("byte offset {}", second + 8)),
        "{e}"
    );
    assert!(!out.exists(), "no partial output");
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A snap length shorter than the headers is a warning.
    let mut b = pcap_file(&frames);
    b[16..20].copy_from_slice(&20u32.to_le_bytes());
    let snap = write(&d, "snap.pcap", &b);
    let o = bl().args(["classify", s(&f), s(&snap)]).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && e.contains("snap length 20"), "{e}");
    // Not a capture at all.
    let junk = write(&d, "junk.pcap", "hello\n");
    let e = fails(&["classify", s(&f), s(&junk)], 1);
    assert!(e.contains("junk.pcap") && e.contains("not a pcap"), "{e}");
}

/// `-w -` writes the capture to standard output (the report goes to standard error), byte for
/// byte what a file gets; outputs are checked before any packet is read.
#[test]
fn classify_writes_to_standard_output_and_checks_outputs_first() {
    let (d, _, f) = flows_filter("");
    let frames = mixed_frames();
    let cap = write(&d, "mixed.pcap", pcap_file(&frames));
    let file = at(&d, "match.pcap");
    json(&["classify", s(&f), s(&cap), "-w", s(&file)]);
    let out = succeeds(bl().args(["classify", s(&f), s(&cap), "-w", "-"]));
    assert_eq!(out.stdout, std::fs::read(&file).unwrap());
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("600 packets"), "{report}");
    // A folder as output is refused before reading (the capture is not even opened).
    let e = fails(
        &["classify", s(&f), "/nonexistent.pcap", "-w", s(d.path())],
        1,
    );
    assert!(e.contains("folder") || e.contains("directory"), "{e}");
    let e = fails(&["classify", s(&f), s(&cap), "-w", "-", "--bitmap", "-"], 2);
    assert!(e.contains("standard output"), "{e}");
}

/// A text flow key is the key of the captured packets of that flow.
#[test]
fn flows_as_text_match_captured_packets() {
    let d = tmp();
    let f = at(&d, "one.blf");
    let flows = write(&d, "one.txt", "10.0.0.4:1004 > 10.9.9.9:53/udp\n");
    build(&flows, &f, "--format flows --fpp 0.000001");
    let cap = write(&d, "m.pcap", pcap_file(&mixed_frames()));
    let v = json(&["classify", s(&f), s(&cap), "--flows"]);
    let rows = v["flows"].as_array().unwrap();
    let hits: Vec<_> = rows.iter().filter(|r| r["matched"] == true).collect();
    assert_eq!(hits.len(), 1, "{v}");
    assert_eq!(hits[0]["flow"], "10.0.0.4:1004 -> 10.9.9.9:53 proto 17");
    let bad = write(
        &d,
        "bad.txt",
        "10.0.0.1:1>10.0.0.2:2/tcp\n10.0.0.1:99999>10.0.0.2:2/tcp\n",
    );
    let e = fails(&["build", s(&bad), "--format", "flows", "-o", s(&f)], 1);
    says(&e, &["bad.txt", "line 2", "99999"]);
}
