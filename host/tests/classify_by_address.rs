//! `classify --by src|dst|host`: packets keyed by one or either address of their IP header,
//! against filters of key type `ip` built from address text, as tcpdump's `src host` / `dst
//! host` / `host` select them. The expected verdicts come from the addresses this test put in
//! each packet, not from the tool.

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
    let (one, addrs) = capture();
    // The same packets 20 times over (1,200: past one batch of 512 packets of two keys).
    let mut twenty = one.clone();
    for _ in 1..20 {
        twenty.extend_from_slice(&one[24..]);
    }
    let (one, twenty) = (write(&d, "c.pcap", one), write(&d, "c20.pcap", twenty));
    let hosts = ["192.168.1.3", "10.0.0.5", "2001::b", "2001::2"];
    let list = write(&d, "hosts.txt", hosts.join("\n") + "\n");
    let f = at(&d, "hosts.blf");
    // A false positive among 60 addresses at this rate is a one-in-10^8 event.
    build(&list, &f, "--key-type ip --fpp 0.000000001");
    let runs = ["src", "dst", "host"].map(|by| (by, &one, 1)).into_iter();
    for (by, cap, times) in runs.chain([("host", &twenty, 20)]) {
        let addrs: Vec<_> = addrs.iter().cycle().take(addrs.len() * times).collect();
        let bm = at(&d, &format!("{by}{times}.bits"));
        let summary = json(&argv!("classify", &f, &cap, "--by", by, "--bitmap", &bm));
        let got = bits(&std::fs::read(&bm).unwrap(), addrs.len());
        let held = |a: &String| hosts.contains(&a.as_str());
        let want: Vec<bool> = addrs
            .iter()
            .map(|(src, dst)| match by {
                "src" => held(src),
                "dst" => held(dst),
                _ => held(src) || held(dst),
            })
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

/// The JSON lines of `classify --json --per-packet --by host`.
fn per_packet_by_host(filter: &std::path::Path, cap: &std::path::Path) -> Vec<serde_json::Value> {
    let out = succeeds(bl().args(argv!(
        "--json",
        "classify",
        filter,
        cap,
        "--per-packet --by host"
    )));
    let lines = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    rows
}

#[test]
fn either_address_gives_the_higher_class_or_the_sources_value() {
    let d = tmp();
    let (cap, addrs) = capture();
    let cap = write(&d, "c.pcap", cap);
    // Sources and destinations with classes and values of their own; 10.0.0.2 → 192.168.1.4
    // and 2001::2 → 2001::b packets have both ends in the tables.
    let classes = [
        ("10.0.0.2", "allow"),
        ("192.168.1.4", "deny"),
        ("2001::b", "allow"),
    ];
    let classes = classes.into_iter().chain([("2001::2", "deny")]);
    let classes: Vec<(&str, &str)> = classes.collect();
    let values = [
        ("10.0.0.2", 7u32),
        ("192.168.1.4", 9),
        ("2001::b", 3),
        ("2001::2", 5),
    ];
    let mut rules = String::from("ip,action,v\n");
    for (&(a, c), &(_, v)) in classes.iter().zip(&values) {
        rules += &format!("{a},{c},{v}\n");
    }
    let rules = write(&d, "rules.csv", rules);
    let (sp, rt) = (at(&d, "sp.blf"), at(&d, "rt.blf"));
    let base = "--key-type ip --fpp 0.000000001 --csv-column ip";
    let spatial = "--kind spatial --class-column action --classes allow,deny";
    json(&argv!("build", &rules, "-o", &sp, base, spatial));
    let retrieval = "--kind retrieval --value-column v --value-bits 8 --check-bits 24";
    json(&argv!("build", &rules, "-o", &rt, base, retrieval));
    let class_of = |a: &String| classes.iter().find(|c| c.0 == a).map(|c| c.1);
    let value_of = |a: &String| values.iter().find(|c| c.0 == a).map(|c| c.1);
    let (sp_rows, rt_rows) = (per_packet_by_host(&sp, &cap), per_packet_by_host(&rt, &cap));
    assert_eq!((sp_rows.len(), rt_rows.len()), (addrs.len(), addrs.len()));
    let mut both = 0;
    for (i, (src, dst)) in addrs.iter().enumerate() {
        both += usize::from(class_of(src).is_some() && class_of(dst).is_some());
        // "deny" ranks above "allow" (--classes order): the higher of the two ends.
        let rank = |a: &String| match class_of(a) {
            None => 0,
            Some("allow") => 1,
            Some(_) => 2,
        };
        let want = [None, Some("allow"), Some("deny")][rank(src).max(rank(dst))];
        let got = sp_rows[i]["class"].as_str();
        assert_eq!(got, want, "packet {i} {src} -> {dst}: {}", sp_rows[i]);
        assert_eq!(sp_rows[i]["match"], want.is_some(), "{}", sp_rows[i]);
        let want = value_of(src).or(value_of(dst));
        let got = rt_rows[i]["value"].as_u64();
        assert_eq!(
            got,
            want.map(u64::from),
            "packet {i} {src} -> {dst}: {}",
            rt_rows[i]
        );
    }
    assert!(both > 0, "some packets have both ends in the tables");
}

#[test]
fn a_filter_of_the_other_packet_key_is_refused() {
    let d = tmp();
    let (cap, _) = capture();
    let cap = write(&d, "c.pcap", cap);
    let hosts = at(&d, "hosts.blf");
    build(&write(&d, "h.txt", "10.0.0.1\n"), &hosts, "--key-type ip");
    let e = fails(&argv!("classify", &hosts, &cap), 1);
    says(
        &e,
        &["keys are of type ip", "--by src, --by dst or --by host"],
    );
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
