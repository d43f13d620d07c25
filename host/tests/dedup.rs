//! End-to-end tests of `bloomlanes dedup`: the streaming duplicate filter over the last N lines
//! or packets, or the last T seconds.

mod common;

use common::*;

/// `prefix{i}` for `i` in `range`, one per line.
fn range_lines(prefix: &str, range: std::ops::Range<usize>) -> String {
    range.map(|i| format!("{prefix}{i}\n")).collect()
}

#[test]
fn dedup_drops_repeats_within_the_window_and_lets_old_ones_through() {
    let d = tmp();
    let mut input = String::new();
    input += &range_lines("a", 0..2000);
    input += &range_lines("b", 0..2000);
    // Older than the window (and than every stored generation): written again.
    input += &range_lines("a", 0..500);
    // Within the last 1000 lines: dropped, every one.
    input += &(0..200)
        .map(|j| format!("b{}\n", 1999 - j))
        .collect::<String>();
    let f = write(&d, "in.txt", &input);
    let out = bl()
        .args(["dedup", s(&f), "--window-keys", "1000"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let kept: Vec<&str> = text.lines().collect();
    let b_kept = kept.iter().filter(|l| l.starts_with('b')).count();
    let a_kept = kept.iter().filter(|l| l.starts_with('a')).count();
    assert!((1995..=2000).contains(&b_kept), "{b_kept} b lines");
    assert!(a_kept >= 2490, "{a_kept} a lines: old repeats pass");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("4700 lines"), "{summary}");

    // The repeats alone, and the same through -o and standard input.
    let dup = bl()
        .args(["dedup", "--window-keys", "1000", "--duplicates"])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    let dups = String::from_utf8(dup.stdout).unwrap();
    for j in 0..200 {
        assert!(
            dups.contains(&format!("b{}\n", 1999 - j)),
            "b{} let through",
            1999 - j
        );
    }
    assert!(dups.lines().count() < 215);
    let o = at(&d, "out.txt");
    bl().args(["dedup", s(&f), "--window-keys", "1000", "-o", s(&o)])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&o).unwrap(), text);
    // JSON summary on standard error; standard output keeps the lines.
    let j = bl()
        .args(["--json", "dedup", s(&f), "--window-keys", "1000"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&j.stderr).unwrap();
    assert_eq!(v["lines"], 4700);
    assert_eq!(v["kept"].as_u64().unwrap() as usize, kept.len());
    assert_eq!(String::from_utf8(j.stdout).unwrap(), text);
}

#[test]
fn dedup_over_seconds_forgets_by_time() {
    use std::io::Write;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("bloomlanes"))
        .args(argv!(
            "dedup --window-seconds 0.4 --capacity 100 --generations 2"
        ))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"x\ny\nx\n").unwrap();
    stdin.flush().unwrap();
    // Past the window and every stored generation (3 x 0.2 s).
    std::thread::sleep(std::time::Duration::from_millis(900));
    stdin.write_all(b"x\nx\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "x\ny\nx\n");
}

#[test]
fn dedup_refuses_bad_windows() {
    assert!(fails(&["dedup", "--window-keys", "0"], 2).contains("--window-keys"));
    assert!(fails(&["dedup", "--window-seconds=-1", "--capacity", "5"], 2).contains("seconds"));
    assert!(fails(&["dedup", "--window-seconds", "1"], 2).contains("--capacity"));
    let d = tmp();
    assert!(fails(&["dedup", s(d.path()), "--window-keys", "5"], 1).contains("directory"));
}

/// A pcap of Ethernet frames carrying IPv4 TCP packets `10.0.0.a:port -> 10.0.0.1:80` for
/// each `(a, port)`, plus one ARP frame.
fn capture(packets: &[(u8, u16)]) -> Vec<u8> {
    let mut frames: Vec<Vec<u8>> = packets
        .iter()
        .map(|&(a, port)| {
            eth(
                0x0800,
                0,
                &ipv4(6, [10, 0, 0, a], [10, 0, 0, 1], port, 80, 0),
            )
        })
        .collect();
    frames.push(eth(0x0806, 0, &[0; 28]));
    pcap_file(&frames)
}

#[test]
fn dedup_reads_packets_and_writes_the_new_flows() {
    let d = tmp();
    // 100 flows, then the first 50 again (within 200 packets: repeats), then 300 other flows,
    // then flow 0 again (more than a window and every stored generation back: new again).
    let mut packets: Vec<(u8, u16)> = (0..100).map(|i| (1, 1000 + i)).collect();
    packets.extend((0..50).map(|i| (1, 1000 + i)));
    packets.extend((0..300).map(|i| (2, 5000 + i)));
    packets.push((1, 1000));
    let cap = write(&d, "c.pcap", capture(&packets));
    let out = succeeds(bl().args(["dedup", s(&cap), "--window-keys", "200"]));
    let text = String::from_utf8(out.stdout).unwrap();
    let flows: Vec<&str> = text.lines().collect();
    assert!(flows.len() >= 398 && flows.len() <= 401, "{}", flows.len());
    assert_eq!(flows[0], "10.0.0.1:1000 -> 10.0.0.1:80 proto 6");
    assert_eq!(
        *flows.last().unwrap(),
        "10.0.0.1:1000 -> 10.0.0.1:80 proto 6"
    );
    assert!(!flows[100..].iter().any(|f| f.contains("10.0.0.1:1049 ")));
    let err = String::from_utf8_lossy(&out.stderr);
    says(&err, &["451 lines", "1 packets not IP"]);
    let e = fails(&argv!("dedup", cap, "--window-seconds 1 --capacity 10"), 1);
    assert!(e.contains("--window-keys"), "{e}");
}
