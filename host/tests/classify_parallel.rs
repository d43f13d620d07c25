//! `classify` on several cores finds a classic pcap file's records by speculation
//! (`input::speculate`): its outputs must equal the one-thread run's byte for byte, on ordinary
//! captures, on captures whose payloads are made of fake record headers, and on captures with a
//! corrupt record or a cut-short tail (the same error or warning, at the same byte offset).

mod common;

use bloomlanes_host::input::pcap::write::{PcapWriter, Resolution, LINKTYPE_ETHERNET};
use common::*;

/// A little-endian pcap (Ethernet) of `n` UDP/IPv4 packets: flow `i % flows`, payload sizes
/// varying from 0 to 1400 bytes, payload bytes from `fill`.
fn capture(n: usize, flows: usize, fill: impl Fn(usize, usize) -> u8) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, Resolution::Micros)
        .expect("a pcap header");
    for i in 0..n {
        let flow = (i % flows) as u32;
        let payload = (i * 37) % 1401;
        let dst = (0x0a01_0000u32 + flow).to_be_bytes();
        let dport = 1000 + (flow % 50_000) as u16;
        let mut ip = ipv4(17, [10, 0, 0, 1], dst, 12345, dport, 0);
        ip[2..4].copy_from_slice(&((28 + payload) as u16).to_be_bytes());
        ip[24..26].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
        ip.extend((0..payload).map(|j| fill(i, j)));
        let f = eth(0x0800, 0, &ip);
        let (sec, usec) = (1_700_000_000 + (i / 1000) as u32, (i % 1000) as u32 * 1000);
        w.packet(sec, usec, f.len() as u32, &f)
            .expect("a packet record");
    }
    w.into_inner()
}

/// The flow keys of half the flows, as `--format flows` text.
fn half_the_flows(flows: usize) -> String {
    (0..flows)
        .step_by(2)
        .map(|f| {
            let dst = 0x0a01_0000u32 + f as u32;
            let [a, b, c, d] = dst.to_be_bytes();
            format!(
                "10.0.0.1:12345>{a}.{b}.{c}.{d}:{}/udp\n",
                1000 + (f % 50_000)
            )
        })
        .collect()
}

/// The file header of the capture `bytes` (made by [`capture`]) and the records of the packets
/// whose number `keep` takes, walked here from the file's own record headers: what a `-w`
/// output of those packets must hold, byte for byte.
fn records_of(bytes: &[u8], keep: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut out = bytes[..24].to_vec();
    let (mut at, mut i) = (24, 0);
    while at < bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        if keep(i) {
            out.extend_from_slice(&bytes[at..at + 16 + incl]);
        }
        at += 16 + incl;
        i += 1;
    }
    out
}

/// A run's JSON summary (timings removed), written capture and bitmap.
type Outputs = (String, Vec<u8>, Vec<u8>);

/// Runs classify with `threads` and the given chunk size; returns (JSON summary without
/// timings, written capture, bitmap), or the exit code and standard error when it fails.
fn classify(
    d: &tempfile::TempDir,
    filter: &std::path::Path,
    cap: &std::path::Path,
    threads: usize,
    tag: &str,
) -> Result<Outputs, (i32, String)> {
    // The same output names for every run (the summary names them); read back right after.
    let _ = tag;
    let out = at(d, "m.pcap");
    let bits = at(d, "bits");
    let r = bl()
        .args(argv!(
            "--json classify",
            filter,
            cap,
            "-w",
            out,
            "--bitmap",
            bits
        ))
        .args([
            "--flows",
            "--threads",
            &threads.to_string(),
            "--chunk-bytes",
            "4096",
        ])
        .output()
        .unwrap();
    if !r.status.success() {
        return Err((
            r.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&r.stderr).into_owned(),
        ));
    }
    let mut v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    for k in ["seconds", "elapsed_seconds", "packets_per_second", "rate"] {
        v.as_object_mut().unwrap().remove(k);
    }
    Ok((
        v.to_string(),
        std::fs::read(&out).unwrap(),
        std::fs::read(&bits).unwrap(),
    ))
}

fn setup(d: &tempfile::TempDir, flows: usize) -> std::path::PathBuf {
    let list = write(d, "flows.txt", half_the_flows(flows));
    let f = at(d, "flows.blf");
    build(&list, &f, "--format flows --fpp 0.0001");
    f
}

#[test]
fn several_threads_equal_one_thread_byte_for_byte() {
    let d = tmp();
    let f = setup(&d, 500);
    let cases: [(&str, Vec<u8>); 2] = [
        (
            "ordinary",
            capture(6000, 500, |i, j| (i * 31 + j * 7) as u8),
        ),
        (
            // Payloads of fake records (the first packet's timestamp, 1-byte packets): a
            // speculative guess that starts inside a payload is wrong.
            "fake headers",
            capture(6000, 500, |_, j| match j % 17 {
                k @ 0..4 => 1_700_000_000u32.to_le_bytes()[k],
                8 | 12 => 1,
                _ => 0,
            }),
        ),
    ];
    for (what, bytes) in cases {
        let cap = write(&d, "c.pcap", &bytes);
        let one = classify(&d, &f, &cap, 1, "1").unwrap();
        let four = classify(&d, &f, &cap, 4, "4").unwrap();
        assert!(one.0 == four.0, "{what}: the summaries differ");
        assert!(one.0.contains("\"packets\":6000"), "{what}: 6000 packets");
        assert!(one.1 == four.1, "{what}: the written captures differ");
        assert!(one.2 == four.2, "{what}: the bitmaps differ");
        assert!(one.1.len() > 24, "{what}: some packets match");
    }
}

/// The packets written on several cores (records found and classified in one walk by
/// speculation) are exactly the records of the filter's flows, checked against the test's own
/// walk of the file, not only against a one-thread run (which shares the classifier).
#[test]
fn written_packets_are_the_records_of_the_filters_flows() {
    let d = tmp();
    let f = setup(&d, 500);
    let bytes = capture(6000, 500, |i, j| (i * 31 + j * 7) as u8);
    let cap = write(&d, "c.pcap", &bytes);
    // Packet i is of flow i % 500; the filter holds the even flows.
    let want = records_of(&bytes, |i| i % 500 % 2 == 0);
    for threads in [1, 2, 4] {
        let (_, written, _) = classify(&d, &f, &cap, threads, "").unwrap();
        assert!(
            written == want,
            "{threads} threads: the written packets are not the even flows' records"
        );
    }
}

#[test]
fn corrupt_records_and_cut_tails_are_reported_the_same_way() {
    let d = tmp();
    let f = setup(&d, 500);
    let good = capture(6000, 500, |i, j| (i ^ j) as u8);
    // Record 4000's captured length is corrupt.
    let mut at_rec = 24;
    for _ in 0..4000 {
        let incl = u32::from_le_bytes(good[at_rec + 8..at_rec + 12].try_into().unwrap());
        at_rec += 16 + incl as usize;
    }
    let mut corrupt = good.clone();
    corrupt[at_rec + 8..at_rec + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let cap = write(&d, "corrupt.pcap", &corrupt);
    let one = classify(&d, &f, &cap, 1, "1").unwrap_err();
    let four = classify(&d, &f, &cap, 4, "4").unwrap_err();
    assert_eq!(one, four, "the same exit code and message");
    assert!(
        one.1.contains(&format!("byte offset {}", at_rec + 8)),
        "{}",
        one.1
    );
    // A cut-short last record: the same warning and outputs.
    let cut = write(&d, "cut.pcap", &good[..good.len() - 10]);
    let one = classify(&d, &f, &cut, 1, "1").unwrap();
    let four = classify(&d, &f, &cut, 4, "4").unwrap();
    assert!(one == four, "cut short: the outputs differ");
    assert!(one.0.contains("cut short"), "the warning is in the summary");
}

/// `-w DIR` against a spatial filter: every class's file, and the per-packet lines, of runs
/// on several cores (speculation, consumed while the workers go on) equal the one-thread
/// run's byte for byte.
#[test]
fn per_class_files_of_several_threads_equal_one_threads() {
    let d = tmp();
    let flows = 500;
    // Class "allow": the even flows; "deny" (the higher): every third one.
    let flow = |f: usize| {
        let [a, b, c, e] = (0x0a01_0000u32 + f as u32).to_be_bytes();
        let dport = 1000 + (f % 50_000);
        format!("10.0.0.1:12345 -> {a}.{b}.{c}.{e}:{dport} proto 17")
    };
    let tsv: String = (0..flows)
        .step_by(2)
        .map(|f| format!("{}\tallow\n", flow(f)))
        .chain(
            (0..flows)
                .step_by(3)
                .map(|f| format!("{}\tdeny\n", flow(f))),
        )
        .collect();
    let (_, f) = write_and_build(
        &d,
        "rules.tsv",
        format!("flow\tclass\n{tsv}"),
        "sp.blf",
        "--kind spatial --classes allow,deny --csv-column flow --class-column class --key-type flow \
         --fpp 0.0001",
    );
    let cap = write(
        &d,
        "c.pcap",
        capture(6000, flows, |i, j| (i * 31 + j * 7) as u8),
    );
    let run = |threads: &str| {
        let dir = at(&d, &format!("out{threads}"));
        let out = succeeds(bl().args(argv!("classify", &f, &cap, "-w", &dir)).args([
            "--per-packet",
            "--threads",
            threads,
            "--chunk-bytes",
            "4096",
        ]));
        let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
        let files = [read("allow.pcap"), read("deny.pcap"), read("absent.pcap")];
        (files, out.stdout)
    };
    let (one, one_lines) = run("1");
    // Each file holds its class's records, walked here from the capture: deny every third
    // flow, allow the other even ones, absent the rest.
    let bytes = std::fs::read(&cap).unwrap();
    let class = |i: usize| match i % flows {
        f if f % 3 == 0 => 2,
        f if f % 2 == 0 => 1,
        _ => 0,
    };
    for (name, (file, c)) in ["allow", "deny", "absent"]
        .iter()
        .zip(one.iter().zip([1, 2, 0]))
    {
        assert!(
            *file == records_of(&bytes, |i| class(i) == c),
            "{name}.pcap does not hold its class's records"
        );
    }
    for threads in ["2", "3"] {
        let (files, lines) = run(threads);
        for (name, (a, b)) in ["allow", "deny", "absent"]
            .iter()
            .zip(one.iter().zip(&files))
        {
            assert!(a.len() > 24, "{name}: some packets");
            assert!(
                a == b,
                "{threads} threads: {name}.pcap differs from one thread's"
            );
        }
        assert!(
            one_lines == lines,
            "{threads} threads: the per-packet lines differ"
        );
    }
}
