//! Live capture for real: two network namespaces joined by a veth pair; `bloomlanes capture`
//! listens on one end, a sender in the other namespace sends a known set of UDP packets, and
//! every verdict is checked (per flow, and packet by packet in the written capture). Without
//! the privilege to create namespaces (or without `ip`), the test prints a `SKIP:` line.
#![cfg(target_os = "linux")]

use bloomlanes_testkit::skip;

mod common;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bloomlanes_host::input::pcap::{self, IPV6_TUPLE_LEN};
use common::*;

/// Namespaces and the veth pair, removed on drop.
struct Netns {
    a: String,
    b: String,
}

impl Netns {
    fn create() -> Result<Netns, String> {
        // Tests run side by side in one process: each takes its own names.
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}n{n}", std::process::id());
        let ns = Netns {
            a: format!("blcapA{tag}"),
            b: format!("blcapB{tag}"),
        };
        let ip = |args: &[&str]| -> Result<(), String> {
            let o = Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("cannot run ip: {e}"))?;
            if o.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&o.stderr).trim()
                ))
            }
        };
        ip(&["netns", "add", &ns.a])?;
        ip(&["netns", "add", &ns.b])?;
        ip(&[
            "-n", &ns.a, "link", "add", "vA", "type", "veth", "peer", "name", "vB", "netns", &ns.b,
        ])?;
        ip(&["-n", &ns.a, "addr", "add", "10.77.0.1/24", "dev", "vA"])?;
        ip(&["-n", &ns.b, "addr", "add", "10.77.0.2/24", "dev", "vB"])?;
        ip(&["-n", &ns.a, "link", "set", "vA", "up"])?;
        ip(&["-n", &ns.b, "link", "set", "vB", "up"])?;
        ip(&["-n", &ns.a, "link", "set", "lo", "up"])?;
        // Known neighbours, so that no ARP exchange is needed before the first packet.
        Ok(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Sends `count` UDP datagrams from 10.77.0.2:`sport` to 10.77.0.1:`dport`, from namespace `ns`
/// (this thread joins it; the socket then lives there).
fn send_from(ns: &str, flows: &[(u16, u16, usize)]) -> Result<(), String> {
    let f = std::fs::File::open(format!("/var/run/netns/{ns}")).map_err(|e| e.to_string())?;
    // SAFETY: `setns` on a valid namespace descriptor affects only this thread, which is a
    // thread of its own made for this purpose.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("setns: {}", std::io::Error::last_os_error()));
    }
    for &(sport, dport, count) in flows {
        let s = UdpSocket::bind(("10.77.0.2", sport)).map_err(|e| e.to_string())?;
        for i in 0..count {
            s.send_to(format!("packet {i}").as_bytes(), ("10.77.0.1", dport))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Runs `bloomlanes --json capture FILTER FLAGS…` (in namespace `netns.a` if given), runs
/// `send` once it listens, then stops it with Ctrl-C: its output (which must be a success) and
/// standard error; `Err` with its message if it did not start listening.
fn capture_while_sending(
    netns: Option<&Netns>,
    filter: &std::path::Path,
    flags: &[std::ffi::OsString],
    send: impl FnOnce() -> Result<(), String> + Send,
) -> Result<(std::process::Output, String), String> {
    let bin = assert_cmd::cargo::cargo_bin("bloomlanes");
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &ns.a]).arg(&bin);
            c
        }
        None => Command::new(&bin),
    };
    let mut child = cmd
        .args(argv!("--json capture", filter))
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the capture");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let started = Instant::now();
    while !line.contains("listening on") {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 || started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the capture did not start: {line}"));
        }
    }
    std::thread::scope(|t| t.spawn(send).join().unwrap()).expect("send the packets");
    std::thread::sleep(Duration::from_millis(300));
    // Ctrl-C ends the capture with its summary.
    // SAFETY: sends SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    assert!(o.status.success(), "capture failed: {rest}");
    Ok((o, rest))
}

/// A fresh pair of network namespaces for the live test `test`, or `None` after a visible SKIP
/// line saying why there is none.
fn netns_or_skip(test: &str) -> Option<Netns> {
    Netns::create()
        .map_err(|why| {
            skip(format_args!(
                "{test}: cannot create network namespaces ({why})"
            ))
        })
        .ok()
}

#[test]
fn live_capture_on_a_veth_pair_classifies_every_packet() {
    let Some(ns) = netns_or_skip("live capture test") else {
        return;
    };
    let d = tmp();
    // In the filter: flows 40001>5001 and 40003>5003; not: 40002>5002 and 40004>5004.
    let inside = [(40001u16, 5001u16, 7usize), (40003, 5003, 5)];
    let outside = [(40002u16, 5002u16, 6usize), (40004, 5004, 4)];
    let flows: String = inside
        .iter()
        .map(|(s, d, _)| format!("10.77.0.2:{s}>10.77.0.1:{d}/udp\n"))
        .collect();
    let (_, f) = write_and_build(
        &d,
        "flows.txt",
        flows,
        "live.blf",
        "--format flows --fpp 0.000001",
    );
    let out = at(&d, "live.pcap");
    let bits = at(&d, "live.bits");
    let mut all = inside.to_vec();
    all.extend_from_slice(&outside);
    let flags = argv!("vA --duration 20s --flows -w", out, "--bitmap", bits);
    let (o, _) = capture_while_sending(Some(&ns), &f, &flags, || send_from(&ns.b, &all))
        .unwrap_or_else(|e| panic!("{e}"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON summary");
    assert!(v["kernel_seen"].as_u64().unwrap() >= 22, "{v}");
    assert_eq!(v["kernel_dropped"], 0, "{v}");
    let rows = v["flows"].as_array().unwrap();
    for (set, expected) in [(&inside[..], true), (&outside[..], false)] {
        for &(sp, dp, count) in set {
            let name = format!("10.77.0.2:{sp} -> 10.77.0.1:{dp} proto 17");
            let row = rows
                .iter()
                .find(|r| r["flow"] == name.as_str())
                .unwrap_or_else(|| panic!("flow {name} not seen: {v}"));
            assert_eq!(row["packets"], count as u64, "{name}");
            assert_eq!(row["matched"], expected, "{name}");
        }
    }
    // The written capture holds exactly the matching packets: 12, of the two inside flows.
    let written = pcap::parse(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["matched"], 12, "{v}");
    assert_eq!(written.packets, 12);
    for t in &written.tuples {
        assert_eq!(t.len(), 13);
        let sport = u16::from_be_bytes([t[8], t[9]]);
        assert!(
            sport == 40001 || sport == 40003,
            "{}",
            pcap::format_tuple(t)
        );
    }
    // One bit per packet seen, as many set as matched.
    let bitmap = std::fs::read(&bits).unwrap();
    let packets = v["packets"].as_u64().unwrap();
    assert_eq!(bitmap.len() as u64, packets.div_ceil(8));
    let ones: u32 = bitmap.iter().map(|b| b.count_ones()).sum();
    assert_eq!(u64::from(ones), 12);
    let _ = IPV6_TUPLE_LEN;
}

/// `capture -w DIR` with a spatial filter on the veth pair: one capture per class (and `absent`),
/// as `classify -w DIR` writes them, each holding exactly the packets of its class's flows.
#[test]
fn live_capture_writes_one_capture_per_class() {
    let Some(ns) = netns_or_skip("live per-class capture test") else {
        return;
    };
    let d = tmp();
    // (source port, destination port, packets, class); class "" is not in the filter.
    let sent = [
        (40011u16, 5011u16, 7usize, "deny"),
        (40012, 5012, 5, "allow"),
        (40013, 5013, 4, "deny"),
        (40014, 5014, 6, ""),
    ];
    let mut rules = String::from("flow\tclass\n");
    for (sp, dp, _, class) in sent.iter().filter(|r| !r.3.is_empty()) {
        rules.push_str(&format!(
            "10.77.0.2:{sp} -> 10.77.0.1:{dp} proto 17\t{class}\n"
        ));
    }
    let f = at(&d, "classes.blf");
    build(
        &write(&d, "rules.tsv", rules),
        &f,
        "--kind spatial --csv-column flow --class-column class --key-type flow \
         --classes allow,mirror,deny --fpp 0.000001",
    );
    let dir = at(&d, "by_class");
    let flows: Vec<(u16, u16, usize)> = sent.iter().map(|r| (r.0, r.1, r.2)).collect();
    let flags = argv!("vA --duration 20s -w", dir);
    let (o, _) = capture_while_sending(Some(&ns), &f, &flags, || send_from(&ns.b, &flows))
        .unwrap_or_else(|e| panic!("{e}"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON summary");
    assert_eq!(v["kind"], "spatial", "{v}");
    assert_eq!(v["files"].as_array().map(Vec::len), Some(4), "{v}");
    assert_eq!(v["written"], v["packets"], "every packet is written: {v}");
    // Each file: the classes' flows' packets, none of another's; `absent` the rest.
    for class in ["allow", "mirror", "deny", "absent"] {
        let bytes = std::fs::read(dir.join(format!("{class}.pcap"))).unwrap();
        let got = pcap::parse(&bytes).unwrap();
        let mut ports: Vec<u16> = (got.tuples.iter())
            .filter(|t| t.len() == 13)
            .map(|t| u16::from_be_bytes([t[8], t[9]]))
            .filter(|p| sent.iter().any(|r| r.0 == *p))
            .collect();
        ports.sort_unstable();
        let want = match class {
            "absent" => "",
            c => c,
        };
        let mut expected: Vec<u16> = (sent.iter())
            .filter(|r| r.3 == want)
            .flat_map(|r| std::iter::repeat_n(r.0, r.2))
            .collect();
        expected.sort_unstable();
        assert_eq!(ports, expected, "{class}.pcap");
        if class != "absent" {
            assert_eq!(got.packets, expected.len() as u64, "{class}.pcap");
        }
    }
}

/// `capture --per-packet` on the loopback interface (root only; a `SKIP:` line otherwise): one
/// line per packet on standard output, in order, with the shared writer of `classify`.
#[test]
fn live_per_packet_lines_name_every_packet_in_order() {
    let d = tmp();
    // Ports of this run's own (other tests may send on lo at the same time).
    let port = 20_000 + (std::process::id() % 20_000) as u16;
    let flows = format!("127.0.0.1:{port}>127.0.0.1:{}/udp\n", port + 1);
    let f = at(&d, "live.blf");
    build(
        &write(&d, "flows.txt", flows),
        &f,
        "--format flows --fpp 0.000001",
    );
    let send = || {
        let to = ("127.0.0.1", port + 1);
        let listed = UdpSocket::bind(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        let other = UdpSocket::bind(("127.0.0.1", port + 2)).map_err(|e| e.to_string())?;
        for (s, n) in [(&listed, 4), (&other, 3)] {
            for i in 0..n {
                s.send_to(format!("packet {i}").as_bytes(), to)
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    };
    let (o, err) = match capture_while_sending(None, &f, &argv!("lo --per-packet"), send) {
        Ok(r) => r,
        Err(why) if why.contains("CAP_NET_RAW") => {
            skip(format_args!("SKIP: live --per-packet test on lo: {why}"));
            return;
        }
        Err(why) => panic!("{why}"),
    };
    // The lines on standard output (JSON Lines), the summary on standard error.
    let rows: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let summary: serde_json::Value = err
        .find('{')
        .and_then(|at| serde_json::from_str(&err[at..]).ok())
        .unwrap_or_else(|| panic!("a JSON summary on stderr: {err}"));
    assert_eq!(summary["packets"], rows.len() as u64, "{summary}");
    let mut last = 0.0;
    let mut seen = [0usize; 2];
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["index"], i as u64, "{r}");
        // Seconds with nine decimals (the ring's nanoseconds), in capture order.
        let time = r["time"].as_str().unwrap_or_else(|| panic!("{r}"));
        assert_eq!(time.split('.').nth(1).map(str::len), Some(9), "{r}");
        let t: f64 = time.parse().unwrap();
        assert!(t >= last, "{r}");
        last = t;
        for (k, from) in [port, port + 2].into_iter().enumerate() {
            let flow = format!("127.0.0.1:{from} -> 127.0.0.1:{} proto 17", port + 1);
            if r["flow"] == flow.as_str() {
                seen[k] += 1;
                assert_eq!(r["match"], k == 0, "{r}");
            }
        }
    }
    // Each datagram once at least (lo may show a packet on its way out and in).
    assert!(seen[0] >= 4 && seen[1] >= 3, "{seen:?}: {rows:?}");
    assert_eq!(seen[0] % 4 + seen[1] % 3, 0, "{seen:?}");
    // --per-packet and -w - would both be standard output: refused before capturing.
    let e = fails(&argv!("capture", f, "lo --per-packet -w -"), 2);
    assert!(e.contains("-w -"), "{e}");
}

#[test]
fn unreadable_interfaces_are_named() {
    let (d, _, f) = built(
        "f.txt",
        "10.0.0.1:1>10.0.0.2:2/udp\n",
        "f.blf",
        "--format flows",
    );
    let e = fails(&["capture", s(&f), "no-such-if0", "--count", "1"], 1);
    says(&e, &["no-such-if0", "no such network interface"]);
    // Privileges are dropped after the socket is open (as root here; elsewhere the open fails).
    let o = bl()
        .args(argv!(
            "--json capture",
            f,
            "lo --user nobody --duration 200ms"
        ))
        .output()
        .unwrap();
    if o.status.success() {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["packets"].is_u64(), "{v}");
        let e = fails(
            &argv!("capture", f, "lo --user no-such-user-bl --count 1"),
            1,
        );
        assert!(e.contains("no user named"), "{e}");
    } else {
        skip(format_args!(
            "privilege drop check: capture on lo failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    // Without the privilege (as user nobody), opening the socket is refused with a hint.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let nobody = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(assert_cmd::cargo::cargo_bin("bloomlanes"))
        .args(["capture", s(&f), "lo", "--count", "1"])
        .output();
    match nobody {
        Ok(o) if o.status.code() == Some(1) => {
            let e = String::from_utf8_lossy(&o.stderr);
            says(&e, &["interface lo", "CAP_NET_RAW"]);
        }
        Ok(o) => skip(format_args!(
            "unprivileged capture check: setpriv gave {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => skip(format_args!("unprivileged capture check: no setpriv ({e})")),
    }
}
