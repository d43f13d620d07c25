//! `classify --by src|dst`: packets keyed by one address of their IP header, against filters of
//! key type `ip` built from address text, as tcpdump's `src host` / `dst host` select them. The
//! expected verdicts come from the addresses this test put in each packet, not from the tool.

mod common;

use common::*;

/// 60 packets: IPv4 from 10.0.0.{i % 6} to 192.168.1.{i % 7} (varying ports, TCP and UDP),
/// and every fifth an IPv6 packet from 2001::{i % 4} to 2001::{i % 3 + 10}, so each address
/// shows up in several flows. Returns the capture and, per packet, (source, destination) as
/// text.
fn capture() -> (Vec<u8>, Vec<(String, String)>) {
    let mut frames = Vec::new();
    let mut addrs = Vec::new();
    for i in 0..60u16 {
        if i % 5 == 4 {
            let (s, d) = ((i % 4) as u8, (i % 3 + 10) as u8);
            frames.push(eth(0x86dd, 0, &ipv6(17, s, d, 4000 + i, 53)));
            addrs.push((format!("2001::{s:x}"), format!("2001::{d:x}")));
        } else {
            let (s, d) = ((i % 6) as u8, (i % 7) as u8);
            let proto = if i % 2 == 0 { 6 } else { 17 };
            let ip = ipv4(proto, [10, 0, 0, s], [192, 168, 1, d], 1000 + i, 80, 3);
            frames.push(eth(0x0800, (i % 3) as usize, &ip));
            addrs.push((format!("10.0.0.{s}"), format!("192.168.1.{d}")));
        }
    }
    (pcap_file(&frames), addrs)
}

/// The packets' verdict bits from `--bitmap` (bit j of byte i: packet 8i + j).
fn bits(bytes: &[u8], n: usize) -> Vec<bool> {
    (0..n).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1).collect()
}

#[test]
fn packets_match_by_source_or_destination_address() {
    let d = tmp();
    let (cap, addrs) = capture();
    let cap = write(&d, "c.pcap", cap);
    let hosts = ["192.168.1.3", "10.0.0.5", "2001::b", "2001::2"];
    let list = write(&d, "hosts.txt", hosts.join("\n") + "\n");
    let f = at(&d, "hosts.blf");
    // A false positive among 60 packets at this rate is a one-in-10^8 event.
    build(&list, &f, "--key-type ip --fpp 0.000000001");
    for (by, pick) in [("src", 0), ("dst", 1)] {
        let bm = at(&d, &format!("{by}.bits"));
        let summary = json(&argv!("classify", &f, &cap, "--by", by, "--bitmap", &bm));
        let got = bits(&std::fs::read(&bm).unwrap(), addrs.len());
        let want: Vec<bool> = addrs
            .iter()
            .map(|a| hosts.contains(&if pick == 0 { &a.0 } else { &a.1 }.as_str()))
            .collect();
        assert!(want.iter().any(|&w| w) && !want.iter().all(|&w| w), "{by}");
        assert_eq!(got, want, "--by {by}");
        let matched = want.iter().filter(|&&w| w).count() as u64;
        assert_eq!(summary["matched"], matched, "--by {by}: {summary}");
        assert_eq!(summary["by"], by);
    }
}

#[test]
fn classes_of_destination_addresses() {
    let d = tmp();
    let (cap, addrs) = capture();
    let cap = write(&d, "c.pcap", cap);
    let rules = "ip,action\n192.168.1.3,deny\n192.168.1.5,allow\n2001::a,mirror\n";
    let rules = write(&d, "rules.csv", rules);
    let f = at(&d, "rules.blf");
    let r = bl()
        .args(argv!(
            "build --kind spatial --key-type ip --fpp 0.000000001",
            &rules,
            "-o",
            &f
        ))
        .args(["--csv-column", "ip", "--class-column", "action"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let out = at(&d, "by_class");
    let summary = json(&argv!("classify", &f, &cap, "--by dst -w", &out));
    let count = |a: &str| addrs.iter().filter(|x| x.1 == a).count();
    let labels = summary["per_label"].to_string();
    for (class, addr) in [
        ("deny", "192.168.1.3"),
        ("allow", "192.168.1.5"),
        ("mirror", "2001::a"),
    ] {
        let want = count(addr);
        assert!(want > 0, "{addr}");
        let written = std::fs::read(out.join(format!("{class}.pcap"))).unwrap();
        // 24-byte file header, then one record per packet of the class.
        let mut n = 0;
        let mut at = 24;
        while at < written.len() {
            let incl = u32::from_le_bytes(written[at + 8..at + 12].try_into().unwrap());
            at += 16 + incl as usize;
            n += 1;
        }
        assert_eq!(n, want, "{class} ({addr}): {labels}");
    }
}

#[test]
fn a_filter_of_the_other_packet_key_is_refused() {
    let d = tmp();
    let (cap, _) = capture();
    let cap = write(&d, "c.pcap", cap);
    let hosts = at(&d, "hosts.blf");
    build(&write(&d, "h.txt", "10.0.0.1\n"), &hosts, "--key-type ip");
    let e = fails(&argv!("classify", &hosts, &cap), 1);
    says(&e, &["keys are of type ip", "--by src or --by dst"]);
    let flows = at(&d, "flows.blf");
    let flow = "10.0.0.1:1001>192.168.1.1:80/udp\n";
    build(&write(&d, "f.txt", flow), &flows, "--format flows");
    let e = fails(&argv!("classify", &flows, &cap, "--by dst"), 1);
    says(&e, &["keys are of type flow", "--by flow"]);
    // Address text that is not an address is refused with its line, not hashed as text.
    let bad = write(&d, "bad.txt", "10.0.0.1\nhost-a\n");
    let e = fails(
        &argv!("build --key-type ip", &bad, "-o", at(&d, "x.blf")),
        1,
    );
    says(&e, &["line 2", "not an ip key", "not an IP address"]);
}
