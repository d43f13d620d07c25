//! End-to-end benchmarks of the streaming commands (issue #12), best of N runs of the release
//! `bloomlanes` binary on files it generates in page cache, against `tcpdump` in the same run:
//!
//! ```sh
//! cargo bench -p bloomlanes-host --bench stream            # every row
//! cargo bench -p bloomlanes-host --bench stream -- pcap    # rows whose name contains "pcap"
//! BL_BENCH_RUNS=5 BL_BENCH_DIR=/tmp/blb cargo bench -p bloomlanes-host --bench stream
//! ```
//!
//! Rows: `text/*` and `u64/*` build and query 50 M keys, with a filter that fits the caches (1 M
//! distinct keys, each 50 times) and one that does not (50 M distinct keys, 60 MiB); `list/*`
//! prints 10 M matching text keys against `--count`; `pcap/*` classifies 15 M packets of 60
//! bytes (1 M flows) with and without writing the matching packets, and `tcpdump -r FILE -w OUT
//! 'host 10.0.0.1'` on the same file; `rss/*` builds from 4·10^9 binary keys (32 GB, more than
//! this machine's memory) piped to standard input, under `/usr/bin/time -v`.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_bloomlanes");

fn runs() -> usize {
    std::env::var("BL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// Best wall time of `runs()` runs of `cmd` (a shell command line), and the CPU seconds (user +
/// system, all threads and children) of that run: on a machine shared with other jobs the CPU
/// time says what the work costs, the wall time what it took.
fn best(cmd: &str) -> (f64, f64) {
    let mut best = (f64::INFINITY, 0.0);
    for _ in 0..runs() {
        let before = children_cpu();
        let t = Instant::now();
        let st = Command::new("sh")
            .args(["-c", cmd])
            .stdout(Stdio::null())
            .status()
            .expect("run sh");
        let wall = t.elapsed().as_secs_f64();
        assert!(st.success(), "failed: {cmd}");
        if wall < best.0 {
            best = (wall, children_cpu() - before);
        }
    }
    best
}

/// CPU seconds of all waited-for children so far.
fn children_cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name: cutime and cstime are the 14th and 15th after ')'.
    let rest = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(13) + ticks(14)) / 100.0
}

fn row(name: &str, items: f64, unit: &str, (secs, cpu): (f64, f64), cmd: &str) {
    println!(
        "| {name} | {:.1} {unit} | {secs:.3} s | {cpu:.2} s | {:.1} {unit} | `{cmd}` |",
        items / secs / 1e6,
        items / cpu.max(1e-3) / 1e6
    );
}

fn gen_text(path: &Path, n: u64, distinct: u64) {
    if path.exists() {
        return;
    }
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    for i in 0..n {
        writeln!(w, "user-{}", i % distinct).unwrap();
    }
    w.flush().unwrap();
}

fn gen_u64(path: &Path, n: u64, distinct: u64) {
    if path.exists() {
        return;
    }
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    for i in 0..n {
        w.write_all(&((i % distinct).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes())
            .unwrap();
    }
    w.flush().unwrap();
}

/// 15 M Ethernet/IPv4/UDP packets of 60 bytes over 1 M flows: flow `f` is
/// 10.0.0.{1 + f%16}:{1024 + f/16} > 10.200.0.1:53, so host 10.0.0.1 has 1/16 of the flows
/// and of the packets.
fn gen_pcap(path: &Path, packets: u64, flows: u64) {
    if path.exists() {
        return;
    }
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut h = Vec::new();
    h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h.extend_from_slice(&[2, 0, 4, 0]);
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    w.write_all(&h).unwrap();
    for p in 0..packets {
        // Spread flows: a multiplicative step visits all of them.
        let f = (p.wrapping_mul(0x9e37_79b1)) % flows;
        let src = flow_src(f);
        let mut rec = [0u8; 16 + 60];
        rec[0..4].copy_from_slice(&((p / 1_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&((p % 1_000_000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&60u32.to_le_bytes());
        rec[12..16].copy_from_slice(&60u32.to_le_bytes());
        let fr = &mut rec[16..];
        fr[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut fr[14..];
        ip[..12].copy_from_slice(&[0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0]);
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&[10, 200, 0, 1]);
        ip[20..22].copy_from_slice(&(1024 + (f / 16) as u16).to_be_bytes());
        ip[22..24].copy_from_slice(&53u16.to_be_bytes());
        ip[24..26].copy_from_slice(&26u16.to_be_bytes());
        w.write_all(&rec).unwrap();
    }
    w.flush().unwrap();
}

fn flow_src(f: u64) -> [u8; 4] {
    [10, 0, 0, 1 + (f % 16) as u8]
}

/// The flows (as text) whose source is 10.0.0.1: what `host 10.0.0.1` selects.
fn gen_host_flows(path: &Path, flows: u64) {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    for f in 0..flows {
        if flow_src(f) == [10, 0, 0, 1] {
            writeln!(w, "10.0.0.1:{}>10.200.0.1:53/udp", 1024 + f / 16).unwrap();
        }
    }
    w.flush().unwrap();
}

/// `stream gen-u64 N`: writes N binary u64 keys to standard output (the `rss` row's generator).
fn gen_u64_stdout(n: u64) {
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 1 << 20];
    let mut i = 0u64;
    while i < n {
        let k = ((n - i) as usize).min(buf.len() / 8);
        for (j, c) in buf[..k * 8].chunks_exact_mut(8).enumerate() {
            c.copy_from_slice(
                &((i + j as u64) % 300_000_000)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .to_le_bytes(),
            );
        }
        if out.write_all(&buf[..k * 8]).is_err() {
            return;
        }
        i += k as u64;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("gen-u64") {
        gen_u64_stdout(args.get(2).and_then(|n| n.parse().ok()).unwrap_or(0));
        return;
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let want = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let dir =
        PathBuf::from(std::env::var("BL_BENCH_DIR").unwrap_or("/tmp/bloomlanes-bench".into()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let n = 50_000_000u64;
    println!("best of {} runs; binary {BIN}", runs());
    println!("| row | rate (wall) | best wall time | CPU time of that run | rate per CPU-second | command |\n|---|---:|---:|---:|---:|---|");
    if want("text") || want("u64") || want("list") {
        gen_text(&dir.join("text50m.txt"), n, n);
        gen_text(&dir.join("text50m-1m.txt"), n, 1_000_000);
        gen_u64(&dir.join("u64-50m.bin"), n, n);
        gen_u64(&dir.join("u64-50m-1m.bin"), n, 1_000_000);
        // Warm the page cache.
        for f in [
            "text50m.txt",
            "text50m-1m.txt",
            "u64-50m.bin",
            "u64-50m-1m.bin",
        ] {
            best(&format!("cat {} > /dev/null", p(f)));
        }
    }
    for (kind, fmt, big, cached) in [
        ("text", "lines", "text50m.txt", "text50m-1m.txt"),
        ("u64", "u64", "u64-50m.bin", "u64-50m-1m.bin"),
    ] {
        if !want(kind) {
            continue;
        }
        let (fb, fc) = (
            p(&format!("{kind}-big.blf")),
            p(&format!("{kind}-cache.blf")),
        );
        let cmd = format!(
            "{BIN} build {} --format {fmt} --capacity 1000000 -o {fc}",
            p(cached)
        );
        row(
            &format!("{kind}/build/cache (1.2 MB filter)"),
            n as f64,
            "M keys/s",
            best(&cmd),
            &cmd,
        );
        let cmd = format!("{BIN} query {fc} {} --format {fmt} --count", p(cached));
        row(
            &format!("{kind}/query/cache"),
            n as f64,
            "M keys/s",
            best(&cmd),
            &cmd,
        );
        let cmd = format!(
            "{BIN} build {} --format {fmt} --capacity {n} -o {fb}",
            p(big)
        );
        row(
            &format!("{kind}/build/60MiB filter"),
            n as f64,
            "M keys/s",
            best(&cmd),
            &cmd,
        );
        let cmd = format!("{BIN} query {fb} {} --format {fmt} --count", p(big));
        row(
            &format!("{kind}/query/60MiB filter"),
            n as f64,
            "M keys/s",
            best(&cmd),
            &cmd,
        );
        let cmd = format!("{BIN} build {} --format {fmt} -o {fb}", p(big));
        row(
            &format!("{kind}/build/counted capacity (2 passes)"),
            n as f64,
            "M keys/s",
            best(&cmd),
            &cmd,
        );
    }
    if want("list") {
        gen_text(&dir.join("text10m.txt"), 10_000_000, 10_000_000);
        let f = p("list.blf");
        best(&format!(
            "{BIN} build {} --capacity 10000000 -o {f}",
            p("text10m.txt")
        ));
        for (name, extra) in [
            ("list/count", "--count"),
            ("list/keys", ""),
            ("list/json", "--json"),
        ] {
            let (flag, rest) = if extra == "--json" {
                ("--json", "")
            } else {
                ("", extra)
            };
            let cmd = format!(
                "{BIN} {flag} query {f} {} {rest} > /dev/null",
                p("text10m.txt")
            );
            row(name, 1e7, "M keys/s", best(&cmd), &cmd);
        }
    }
    if want("pcap") {
        let (packets, flows) = (15_000_000u64, 1_000_000u64);
        let cap = p("cap15m.pcap");
        gen_pcap(Path::new(&cap), packets, flows);
        gen_host_flows(&dir.join("host-flows.txt"), flows);
        let f = p("host.blf");
        best(&format!(
            "{BIN} build {} --format flows -o {f} --fpp 0.0001",
            p("host-flows.txt")
        ));
        best(&format!("cat {cap} > /dev/null"));
        let cmd = format!("{BIN} classify {f} {cap}");
        row(
            "pcap/classify (verdicts only)",
            packets as f64,
            "Mpps",
            best(&cmd),
            &cmd,
        );
        let cmd = format!("{BIN} classify {f} {cap} --bitmap {}", p("bits"));
        row(
            "pcap/classify --bitmap",
            packets as f64,
            "Mpps",
            best(&cmd),
            &cmd,
        );
        let cmd = format!("{BIN} classify {f} {cap} -w {}", p("match.pcap"));
        row(
            "pcap/classify -w (matching packets)",
            packets as f64,
            "Mpps",
            best(&cmd),
            &cmd,
        );
        let cmd = format!(
            "tcpdump -r {cap} -w {} 'host 10.0.0.1' 2>/dev/null",
            p("td.pcap")
        );
        if Command::new("tcpdump").arg("--version").output().is_ok() {
            row(
                "pcap/tcpdump -w 'host 10.0.0.1'",
                packets as f64,
                "Mpps",
                best(&cmd),
                &cmd,
            );
        } else {
            println!("| pcap/tcpdump | not installed | | | | |");
        }
        let cmd = format!("{BIN} query {f} {cap} --count");
        row(
            "pcap/query --count (one key per packet)",
            packets as f64,
            "M keys/s",
            best(&cmd),
            &cmd,
        );
    }
    if want("rss") {
        // 4·10^9 binary keys (32 GB) from a generator, through standard input.
        let keys = 4_000_000_000u64;
        let cmd = format!(
            "{} gen-u64 {keys} | /usr/bin/time -v {BIN} build - --format u64 --capacity 100000000 -o {} 2> {}",
            std::env::current_exe().unwrap().display(),
            p("rss.blf"),
            p("rss.time")
        );
        let t = Instant::now();
        let st = Command::new("sh").args(["-c", &cmd]).status().unwrap();
        let secs = t.elapsed().as_secs_f64();
        let report = std::fs::read_to_string(p("rss.time")).unwrap_or_default();
        let rss = report
            .lines()
            .find(|l| l.contains("Maximum resident set size"))
            .unwrap_or("?")
            .trim()
            .to_string();
        println!("| rss/stdin 32 GB of u64 keys | {:.1} M keys/s | {secs:.1} s | | | `{cmd}` ({rss}; exit {st}) |", keys as f64 / secs / 1e6);
    }
}
