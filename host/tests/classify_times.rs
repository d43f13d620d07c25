//! `classify --per-packet` times: every packet's capture time in the printed form of its
//! capture's resolution, seconds and as many decimals as the unit has (6 for microseconds, 9
//! for nanoseconds), for classic pcap and for pcapng, whose enhanced packet blocks count units
//! of their interface's `if_tsresol` (10^-6 s when the option is absent).

mod common;

use bloomlanes_host::input::pcap::write::{
    PcapWriter, PcapngWriter, Resolution, LINKTYPE_ETHERNET,
};
use common::*;
use serde_json::Value;

/// Six IPv4 UDP frames, flows 10.0.0.{i % 3}:1000 > 10.9.9.9:53.
fn frames() -> Vec<Vec<u8>> {
    (0..6usize)
        .map(|i| {
            let udp = ipv4(17, [10, 0, 0, (i % 3) as u8], [10, 9, 9, 9], 1000, 53, i);
            eth(0x0800, 0, &udp)
        })
        .collect()
}

/// A pcapng section of `frames` whose interface has `tsresol` (`None`: no option), each packet
/// stamped with the matching entry of `ticks`.
fn section(frames: &[Vec<u8>], tsresol: Option<u8>, ticks: &[u64]) -> Vec<u8> {
    let mut w = PcapngWriter::with_tsresol(Vec::new(), LINKTYPE_ETHERNET, 65535, tsresol)
        .expect("a section");
    for (f, t) in frames.iter().zip(ticks) {
        w.packet(*t, f.len() as u32, f).expect("a packet block");
    }
    w.into_inner()
}

/// The `time` of every line of `classify --json --per-packet` (a filter of the first flow),
/// cutting the capture in chunks of `chunk` bytes.
fn times(cap: &[u8], chunk: usize) -> Vec<String> {
    let d = tmp();
    let cap = write(&d, "cap", cap);
    let listed = write(&d, "one.pcap", pcap_file(&frames()[..1]));
    let f = at(&d, "f.blf");
    json(&argv!("build", &listed, "-o", &f));
    let chunk = chunk.to_string();
    let out = succeeds(bl().args(argv!(
        "--json",
        "classify",
        &f,
        &cap,
        "--per-packet --chunk-bytes",
        chunk.as_str()
    )));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["time"]
                .as_str()
                .unwrap_or_else(|| panic!("{v}"))
                .to_string()
        })
        .collect()
}

#[test]
fn pcapng_times_follow_each_interfaces_tsresol() {
    let fr = frames();
    // Nanoseconds (if_tsresol 9) in the first section, the default microseconds in the second:
    // the unit is the interface's, and a new section starts afresh.
    let ns = [
        1_700_000_000_123_456_789,
        1_700_000_001_000_000_001,
        1_700_000_002_999_999_999,
    ];
    let us = [1_700_000_003_000_007, 1_700_000_004_500_000, 42];
    let mut cap = section(&fr[..3], Some(9), &ns);
    cap.extend(section(&fr[3..], None, &us));
    let want = [
        "1700000000.123456789",
        "1700000001.000000001",
        "1700000002.999999999",
        "1700000003.000007",
        "1700000004.500000",
        "0.000042",
    ];
    // Whole, and cut in chunks of every few blocks (each chunk starts from the interfaces in
    // force there).
    for chunk in [1 << 20, 200, 64] {
        assert_eq!(times(&cap, chunk), want, "chunks of {chunk} bytes");
    }
    // The text form prints the same, second column.
    let d = tmp();
    let path = write(&d, "cap.pcapng", &cap);
    let f = at(&d, "f.blf");
    json(&argv!("build", &path, "-o", &f));
    let out = succeeds(bl().args(argv!("classify", &f, &path, "--per-packet")));
    let text = String::from_utf8(out.stdout).unwrap();
    let col: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap())
        .collect();
    assert_eq!(col, want);
}

#[test]
fn binary_tsresol_and_classic_nanosecond_captures() {
    let fr = frames();
    // 2^-10 s: exact in 10 decimals, shown to the nanosecond (cut).
    let cap = section(&fr[..2], Some(0x8a), &[(5 << 10) | 512, (6 << 10) | 1]);
    assert_eq!(times(&cap, 1 << 20), ["5.500000000", "6.000976562"]);
    // A classic pcap with nanosecond timestamps: 9 decimals; with microseconds: 6.
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, Resolution::Nanos).unwrap();
    w.packet(1_700_000_000, 5, 60, &fr[0]).unwrap();
    assert_eq!(times(&w.into_inner(), 1 << 20), ["1700000000.000000005"]);
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, Resolution::Micros).unwrap();
    w.packet(1_700_000_000, 5, 60, &fr[0]).unwrap();
    assert_eq!(times(&w.into_inner(), 1 << 20), ["1700000000.000005"]);
}

#[test]
fn a_damaged_interface_option_is_refused_by_offset() {
    let fr = frames();
    let mut cap = section(&fr[..1], Some(9), &[1]);
    // The section header is 28 bytes; the interface block's options start 16 bytes into it.
    // An if_tsresol of 2 bytes, and one whose unit no 64-bit count reaches a second with.
    let opt = 28 + 16;
    assert_eq!(cap[opt..opt + 5], [9, 0, 1, 0, 9]);
    let d = tmp();
    let f = at(&d, "f.blf");
    json(&argv!("build", write(&d, "ok.pcapng", &cap), "-o", &f));
    cap[opt + 4] = 0x7f;
    let bad = write(&d, "unit.pcapng", &cap);
    let err = fails(&argv!("classify", &f, &bad), 1);
    assert!(err.contains("if_tsresol") && err.contains("48"), "{err}");
    cap[opt + 2] = 2;
    let bad = write(&d, "len.pcapng", &cap);
    let err = fails(&argv!("classify", &f, &bad), 1);
    assert!(
        err.contains("option 9 has 2 bytes") && err.contains("44"),
        "{err}"
    );
}
