//! Running the generated RTL in a simulator and checking it against `bloomlanes-core`.
//!
//! A run writes, into a fresh working folder, the RTL, the bench, `bench_cfg.hex`,
//! `stim_p<p>.hex` (see the bench's header for the formats) and, with banks loaded, the bank
//! files; it runs Icarus Verilog (`iverilog` + `vvp`) or Verilator (`verilator --cc --exe
//! --build` with the C++ harness) there and parses `bench_log.txt` into a [`SimLog`].
//! [`check`] replays the accepted operations in hardware order on a software [`Filter`] and
//! compares every answer.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use bloomlanes_core::{xxh64, Filter};

use crate::{generate, op, write_bank_files_for, Design, HdlConfig, HdlError, KeyMode};

/// A Verilog simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Simulator {
    /// Icarus Verilog (`iverilog` and `vvp`).
    Icarus,
    /// Verilator (with a C++ compiler and `make`).
    Verilator,
}

impl Simulator {
    /// Whether this simulator's programs are on `PATH`.
    pub fn is_available(self) -> bool {
        match self {
            Simulator::Icarus => on_path("iverilog") && on_path("vvp"),
            Simulator::Verilator => {
                on_path("verilator") && on_path("make") && (on_path("g++") || on_path("c++"))
            }
        }
    }

    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            Simulator::Icarus => "iverilog",
            Simulator::Verilator => "verilator",
        }
    }
}

/// Whether `prog` is an executable file in a folder of `PATH`.
pub fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let p = d.join(prog);
            p.is_file()
                && std::fs::metadata(&p).is_ok_and(|m| {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                })
        })
    })
}

/// The simulator to use: Icarus Verilog if installed (it starts fastest), else Verilator.
pub fn simulator_available() -> Option<Simulator> {
    [Simulator::Icarus, Simulator::Verilator]
        .into_iter()
        .find(|s| s.is_available())
}

/// The key of one operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// Key bytes ([`KeyMode::Bytes`]: the length must equal the configured width;
    /// [`KeyMode::VarBytes`]: at most the configured maximum).
    Bytes(Vec<u8>),
    /// A 64-bit hash ([`KeyMode::Prehashed`]).
    Hash(u64),
}

/// One operation of a stimulus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// Operation code ([`op`]); ports other than 0 only take lookups.
    pub code: u8,
    /// Tag (truncated to the configured tag width).
    pub tag: u32,
    /// The key.
    pub key: Key,
}

/// How the bench drives the ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchParams {
    /// Operations per port driven at full rate first (`s_valid` and `m_ready` always high).
    pub fast_ops: u32,
    /// Afterwards, the chance (percent) that a port offers its next operation in a cycle.
    pub valid_pct: u32,
    /// Afterwards, the chance (percent) that a port takes an answer in a cycle.
    pub ready_pct: u32,
    /// Seed of the bench's random generator.
    pub seed: u32,
    /// Bank entries `0 .. readback` read back through the management port after the last
    /// answer (0: none); [`check`] compares them with the filter the operations leave behind.
    pub readback: u32,
}

impl Default for BenchParams {
    fn default() -> Self {
        BenchParams {
            fast_ops: 0,
            valid_pct: 100,
            ready_pct: 100,
            seed: 1,
            readback: 0,
        }
    }
}

/// What the bench logged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimLog {
    /// Per port, the cycle every operation was accepted in, in order.
    pub accepted: Vec<Vec<u64>>,
    /// Per port, every answer taken: cycle, tag, hit.
    pub answers: Vec<Vec<(u64, u32, bool)>>,
    /// Bank entries read back after the run: entry address, data (bit `i` = lane `i`; `c` bits
    /// per lane for a counting design).
    pub readback: Vec<(u64, u128)>,
}

/// What [`check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckStats {
    /// Operations compared.
    pub ops: u64,
    /// Lookups that answered "may be present".
    pub hits: u64,
    /// Smallest latency (answer cycle − accept cycle) seen.
    pub min_latency: u64,
    /// Largest.
    pub max_latency: u64,
    /// Cycles of the run.
    pub cycles: u64,
}

static RUN_ID: AtomicU64 = AtomicU64::new(0);

/// A fresh empty folder under the system temporary folder, private to this user (mode 0700 on
/// Unix) and created by this call: a name that already exists (another program's file, folder
/// or link there) is never used, so the run's files cannot be redirected elsewhere.
pub fn fresh_dir(what: &str) -> std::io::Result<PathBuf> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let n = RUN_ID.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "bloomlanes-hdl-{what}-{}-{n}-{nanos}",
            std::process::id()
        ));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 100 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The stimulus line of `op` for `cfg`: `{op, tag, key}` in hex.
pub fn stim_line(cfg: &HdlConfig, o: &Op) -> Result<String, HdlError> {
    let lw = if matches!(cfg.key, KeyMode::VarBytes(_)) {
        crate::front::LEN_BITS as usize
    } else {
        0
    };
    let kw = cfg.key.key_bits() as usize + lw;
    let tw = cfg.tag_bits as usize;
    let total = kw + tw + 2;
    let mut bits = vec![false; total.div_ceil(4) * 4];
    match (&o.key, cfg.key) {
        (Key::Bytes(b), KeyMode::Bytes(n)) if b.len() == n => {
            for (i, byte) in b.iter().enumerate() {
                for j in 0..8 {
                    bits[8 * i + j] = byte >> j & 1 == 1;
                }
            }
        }
        (Key::Bytes(b), KeyMode::VarBytes(n)) if b.len() <= n => {
            for (i, byte) in b.iter().enumerate() {
                for j in 0..8 {
                    bits[8 * i + j] = byte >> j & 1 == 1;
                }
            }
            for j in 0..lw {
                bits[8 * n + j] = b.len() >> j & 1 == 1;
            }
        }
        (Key::Hash(h), KeyMode::Prehashed) => {
            for (j, bit) in bits.iter_mut().enumerate().take(64) {
                *bit = h >> j & 1 == 1;
            }
        }
        (k, mode) => {
            return Err(HdlError::Mismatch(format!(
                "key {k:?} does not fit key mode {mode}"
            )))
        }
    }
    for j in 0..tw {
        bits[kw + j] = o.tag >> j & 1 == 1;
    }
    bits[kw + tw] = o.code & 1 == 1;
    bits[kw + tw + 1] = o.code & 2 == 2;
    let mut s = String::with_capacity(bits.len() / 4 + 1);
    for nib in (0..bits.len() / 4).rev() {
        let d = (0..4).fold(0u32, |acc, j| acc | u32::from(bits[4 * nib + j]) << j);
        s.push(char::from_digit(d, 16).unwrap_or('0'));
    }
    Ok(s)
}

pub(crate) fn tool_err(tool: &str, msg: impl Into<String>) -> HdlError {
    HdlError::Tool {
        tool: tool.to_string(),
        message: msg.into(),
    }
}

/// Runs an external tool; on failure the error carries the last 3000 characters of its output.
pub(crate) fn run_cmd(cmd: &mut Command, tool: &str) -> Result<String, HdlError> {
    let out = cmd
        .output()
        .map_err(|e| tool_err(tool, format!("cannot start: {e}")))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        let tail: String = text
            .chars()
            .rev()
            .take(3000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(tool_err(tool, format!("{}: {tail}", out.status)));
    }
    Ok(text)
}

/// Writes the inputs of a run into `dir`: RTL, benches, configuration and stimulus files, and
/// the bank files of `banks` if given.
pub fn write_run_files(
    cfg: &HdlConfig,
    design: &Design,
    banks: Option<&Filter>,
    ops: &[Vec<Op>],
    params: BenchParams,
    dir: &Path,
) -> Result<(), HdlError> {
    if ops.len() != cfg.lookup_ports {
        return Err(HdlError::Mismatch(format!(
            "{} stimulus lists for {} ports",
            ops.len(),
            cfg.lookup_ports
        )));
    }
    std::fs::write(dir.join(format!("{}.v", design.top_name)), &design.rtl)?;
    std::fs::write(
        dir.join(format!("{}_tb.v", design.top_name)),
        &design.testbench,
    )?;
    std::fs::write(
        dir.join(format!("{}_harness.cpp", design.top_name)),
        &design.cpp_harness,
    )?;
    let mut c = String::new();
    for x in [
        params.fast_ops,
        params.valid_pct,
        params.ready_pct,
        params.seed.max(1),
    ] {
        let _ = writeln!(c, "{x:08x}");
    }
    for port_ops in ops {
        let _ = writeln!(c, "{:08x}", port_ops.len());
    }
    let readback = u64::from(params.readback).min(cfg.bank_entries());
    let _ = writeln!(c, "{readback:08x}");
    std::fs::write(dir.join("bench_cfg.hex"), c)?;
    for (p, port_ops) in ops.iter().enumerate() {
        let mut s = String::new();
        for o in port_ops {
            if p > 0 && o.code != op::LOOKUP {
                return Err(HdlError::Mismatch(format!(
                    "port {p} takes lookups only, not op {}",
                    o.code
                )));
            }
            s.push_str(&stim_line(cfg, o)?);
            s.push('\n');
        }
        std::fs::write(dir.join(format!("stim_p{p}.hex")), s)?;
    }
    if let Some(f) = banks {
        cfg.check_filter(f)?;
        write_bank_files_for(f, dir, &cfg.top_name)?;
    }
    Ok(())
}

/// Runs `ops` (one list per port) on the RTL of `cfg` in `sim`, in folder `dir`, banks loaded
/// from `banks` if given (else empty), and returns the log.
pub fn run_ops_in(
    cfg: &HdlConfig,
    sim: Simulator,
    banks: Option<&Filter>,
    ops: &[Vec<Op>],
    params: BenchParams,
    dir: &Path,
) -> Result<SimLog, HdlError> {
    let design = generate(cfg)?;
    write_run_files(cfg, &design, banks, ops, params, dir)?;
    let max_ops = ops.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let readback = u64::from(params.readback).min(cfg.bank_entries());
    run_simulator(
        sim,
        dir,
        &design.top_name,
        max_ops,
        banks.is_some(),
        cfg.lookup_ports,
        readback,
    )
}

/// Builds and runs the bench of top module `top` (files written by [`write_run_files`]) in
/// `dir` and parses its log, which must hold `readback` read-back entries.
pub(crate) fn run_simulator(
    sim: Simulator,
    dir: &Path,
    top: &str,
    max_ops: usize,
    load_banks: bool,
    ports: usize,
    readback: u64,
) -> Result<SimLog, HdlError> {
    let load = u8::from(load_banks);
    match sim {
        Simulator::Icarus => {
            run_cmd(
                Command::new("iverilog")
                    .current_dir(dir)
                    .args(["-g2005", "-o", "sim.vvp", "-s"])
                    .arg(format!("{top}_tb"))
                    .arg(format!("-P{top}_tb.MAX_OPS={max_ops}"))
                    .arg(format!("-P{top}_tb.LOAD_BANKS={load}"))
                    .arg(format!("{top}.v"))
                    .arg(format!("{top}_tb.v")),
                "iverilog",
            )?;
            run_cmd(
                Command::new("vvp").current_dir(dir).args(["-n", "sim.vvp"]),
                "vvp",
            )?;
        }
        Simulator::Verilator => {
            run_cmd(
                Command::new("verilator")
                    .current_dir(dir)
                    .args(["--cc", "--exe", "--build", "-j", "2", "-O1", "--top-module"])
                    .arg(top)
                    .arg(format!("-GLOAD_BANKS={load}"))
                    .args(["-CFLAGS", "-O1", "-Mdir", "obj", "-o", "vsim"])
                    .arg(format!("{top}.v"))
                    .arg(format!("{top}_harness.cpp")),
                "verilator",
            )?;
            run_cmd(
                Command::new(dir.join("obj").join("vsim")).current_dir(dir),
                "vsim",
            )?;
        }
    }
    let text = std::fs::read_to_string(dir.join("bench_log.txt"))?;
    let log = parse_log(&text, ports)?;
    if log.readback.len() as u64 != readback {
        return Err(tool_err(
            "bench",
            format!(
                "{} bank entries read back, {readback} asked for",
                log.readback.len()
            ),
        ));
    }
    Ok(log)
}

/// Like [`run_ops_in`], in a fresh temporary folder that is removed afterwards unless the run
/// failed (its path is then in the error).
pub fn run_ops(
    cfg: &HdlConfig,
    sim: Simulator,
    banks: Option<&Filter>,
    ops: &[Vec<Op>],
    params: BenchParams,
) -> Result<SimLog, HdlError> {
    let dir = fresh_dir(sim.name())?;
    match run_ops_in(cfg, sim, banks, ops, params, &dir) {
        Ok(log) => {
            let _ = std::fs::remove_dir_all(&dir);
            Ok(log)
        }
        Err(HdlError::Tool { tool, message }) => Err(HdlError::Tool {
            tool,
            message: format!("{message} (files kept in {})", dir.display()),
        }),
        Err(e) => Err(e),
    }
}

/// Parses a bench log.
pub fn parse_log(text: &str, ports: usize) -> Result<SimLog, HdlError> {
    let mut log = SimLog {
        accepted: vec![Vec::new(); ports],
        answers: vec![Vec::new(); ports],
        readback: Vec::new(),
    };
    let bad = |l: &str| tool_err("bench", format!("bad log line {l:?}"));
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["a", p, cyc] => {
                let p: usize = p.parse().map_err(|_| bad(line))?;
                let c: u64 = cyc.parse().map_err(|_| bad(line))?;
                log.accepted.get_mut(p).ok_or_else(|| bad(line))?.push(c);
            }
            ["r", p, cyc, tag, hit] => {
                let p: usize = p.parse().map_err(|_| bad(line))?;
                let c: u64 = cyc.parse().map_err(|_| bad(line))?;
                let tag = u32::from_str_radix(tag, 16).map_err(|_| bad(line))?;
                let hit = match *hit {
                    "0" => false,
                    "1" => true,
                    _ => return Err(bad(line)),
                };
                log.answers
                    .get_mut(p)
                    .ok_or_else(|| bad(line))?
                    .push((c, tag, hit));
            }
            ["m", addr, data] => {
                let a: u64 = addr.parse().map_err(|_| bad(line))?;
                let d = u128::from_str_radix(data, 16).map_err(|_| bad(line))?;
                log.readback.push((a, d));
            }
            [] => {}
            _ => return Err(bad(line)),
        }
    }
    Ok(log)
}

/// The 64-bit hash of `key` under `cfg`'s seed.
pub fn key_hash(cfg: &HdlConfig, key: &Key) -> u64 {
    match key {
        Key::Bytes(b) => xxh64(b, cfg.seed),
        Key::Hash(h) => *h,
    }
}

/// Replays the accepted operations on a copy of `start` in the order the hardware applied them
/// (by accept cycle; within a cycle the lookups of ports 1.. before port 0's operation) and
/// checks every answer: count, order (tags), and hit bit. Returns the answers of every port.
pub fn check(
    cfg: &HdlConfig,
    start: &Filter,
    ops: &[Vec<Op>],
    log: &SimLog,
) -> Result<(CheckStats, Vec<Vec<bool>>), String> {
    let tag_mask = if cfg.tag_bits >= 32 {
        u32::MAX
    } else {
        (1u32 << cfg.tag_bits) - 1
    };
    let mut events: Vec<(u64, bool, usize, usize)> = Vec::new();
    for (p, port_ops) in ops.iter().enumerate() {
        let acc = &log.accepted[p];
        if acc.len() != port_ops.len() || log.answers[p].len() != port_ops.len() {
            return Err(format!(
                "port {p}: {} operations, {} accepted, {} answers",
                port_ops.len(),
                acc.len(),
                log.answers[p].len()
            ));
        }
        for (i, &c) in acc.iter().enumerate() {
            if i > 0 && c <= acc[i - 1] {
                return Err(format!("port {p}: two operations accepted in cycle {c}"));
            }
            events.push((c, p == 0, p, i));
        }
    }
    events.sort_unstable();
    let mut filter = start.clone();
    let mut expected: Vec<Vec<bool>> = ops.iter().map(|o| vec![false; o.len()]).collect();
    for &(_, _, p, i) in &events {
        let o = &ops[p][i];
        let h = key_hash(cfg, &o.key);
        match o.code {
            op::LOOKUP => expected[p][i] = filter.contains_hash(h),
            op::INSERT => filter.insert_hash(h),
            op::CLEAR => filter.clear(),
            _ => {}
        }
    }
    check_readback(&filter, &log.readback)?;
    let mut stats = CheckStats {
        min_latency: u64::MAX,
        ..CheckStats::default()
    };
    for (p, port_ops) in ops.iter().enumerate() {
        for (i, o) in port_ops.iter().enumerate() {
            let (cyc, tag, hit) = log.answers[p][i];
            let acc = log.accepted[p][i];
            if tag != o.tag & tag_mask {
                return Err(format!(
                    "port {p} answer {i}: tag {tag:#x}, expected {:#x} (out of order)",
                    o.tag & tag_mask
                ));
            }
            if hit != expected[p][i] {
                return Err(format!(
                    "port {p} op {i} (code {}, key {:?}, accepted cycle {acc}): hit {hit}, core says {}",
                    o.code, o.key, expected[p][i]
                ));
            }
            if cyc <= acc {
                return Err(format!(
                    "port {p} op {i}: answered in cycle {cyc}, accepted in {acc}"
                ));
            }
            stats.min_latency = stats.min_latency.min(cyc - acc);
            stats.max_latency = stats.max_latency.max(cyc - acc);
            stats.cycles = stats.cycles.max(cyc);
            stats.ops += 1;
            stats.hits += u64::from(hit);
        }
    }
    Ok((stats, expected))
}

/// Compares bank entries read back after a run with `filter` (the filter the run left behind).
fn check_readback(filter: &Filter, readback: &[(u64, u128)]) -> Result<(), String> {
    let lanes = filter.layout().lanes();
    let banks: Vec<Vec<bool>> = (0..lanes).map(|l| crate::bank_bits(filter, l)).collect();
    for (i, &(addr, data)) in readback.iter().enumerate() {
        if addr != i as u64 {
            return Err(format!("read-back {i} is of entry {addr}"));
        }
        let want = banks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.get(addr as usize).copied().unwrap_or(false))
            .fold(0u128, |acc, (l, _)| acc | 1 << l);
        if data != want {
            return Err(format!(
                "bank entry {addr} read back as {data:#x} (bit i = lane i), core's filter has {want:#x}"
            ));
        }
    }
    Ok(())
}

fn lookups_in(cfg: &HdlConfig, filter: &Filter, keys: Vec<Key>) -> Result<Vec<bool>, HdlError> {
    cfg.validate()?;
    cfg.check_filter(filter)?;
    let sim = simulator_available().ok_or(HdlError::NoSimulator)?;
    let p = cfg.lookup_ports;
    let mut ops: Vec<Vec<Op>> = vec![Vec::new(); p];
    for (i, key) in keys.into_iter().enumerate() {
        ops[i % p].push(Op {
            code: op::LOOKUP,
            tag: (i / p) as u32,
            key,
        });
    }
    let log = run_ops(cfg, sim, Some(filter), &ops, BenchParams::default())?;
    let (_, answers) = check(cfg, filter, &ops, &log).map_err(|m| tool_err(sim.name(), m))?;
    // Return the hardware's answers (check() has verified they equal the software's).
    let mut out = Vec::new();
    for i in 0..ops.iter().map(Vec::len).sum::<usize>() {
        out.push(answers[i % p][i / p]);
    }
    Ok(out)
}

/// Looks `keys` up in the RTL of `cfg` with the banks loaded from `filter`'s bank files, in the
/// first available simulator, and returns the hardware's answers (spread over all lookup
/// ports). With [`KeyMode::Prehashed`] the keys are hashed on the host with `filter`'s seed.
/// Fails with [`HdlError::NoSimulator`] when none is installed, and with a tool error if any
/// answer differs from the software filter's (they are compared before returning).
pub fn simulate_lookups(
    cfg: &HdlConfig,
    filter: &Filter,
    keys: &[Vec<u8>],
) -> Result<Vec<bool>, HdlError> {
    let keys = keys
        .iter()
        .map(|k| match cfg.key {
            KeyMode::Bytes(n) if k.len() == n => Ok(Key::Bytes(k.clone())),
            KeyMode::Bytes(n) => Err(HdlError::Mismatch(format!(
                "a {}-byte key for a design with {n}-byte keys",
                k.len()
            ))),
            KeyMode::VarBytes(n) if k.len() <= n => Ok(Key::Bytes(k.clone())),
            KeyMode::VarBytes(n) => Err(HdlError::Mismatch(format!(
                "a {}-byte key for a design with keys of at most {n} bytes",
                k.len()
            ))),
            KeyMode::Prehashed => Ok(Key::Hash(xxh64(k, cfg.seed))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    lookups_in(cfg, filter, keys)
}

/// Like [`simulate_lookups`] with 64-bit hashes; the design must be [`KeyMode::Prehashed`].
pub fn simulate_lookup_hashes(
    cfg: &HdlConfig,
    filter: &Filter,
    hashes: &[u64],
) -> Result<Vec<bool>, HdlError> {
    if cfg.key != KeyMode::Prehashed {
        return Err(HdlError::Mismatch(format!(
            "hashes given to a design with {}; use KeyMode::Prehashed",
            cfg.key
        )));
    }
    lookups_in(cfg, filter, hashes.iter().map(|&h| Key::Hash(h)).collect())
}

/// Operations per port of the stimulus that [`crate::export`] writes for the Verilog bench.
pub const EXPORT_BENCH_OPS: usize = 1000;

/// Writes a self-checking stimulus for the exported Verilog bench into `dir`: `bench_cfg.hex`,
/// `stim_p<p>.hex` and `bench_expect_p<p>.hex` (the hit bit core expects for every answer) for
/// banks loaded from `filter` (`LOAD_BANKS = 1`). Port 0 looks up random keys, inserts new ones
/// and looks those up (they must hit); the other ports look up random keys whose answer no
/// insert of port 0 can change, so the expectations hold whatever the timing.
pub fn write_export_bench(
    cfg: &HdlConfig,
    filter: &Filter,
    dir: &Path,
) -> Result<Vec<PathBuf>, HdlError> {
    cfg.check_filter(filter)?;
    let mut x = 0x0123_4567_89ab_cdefu64 ^ cfg.seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let key = |next: &mut dyn FnMut() -> u64| match cfg.key {
        KeyMode::Prehashed => Key::Hash(next()),
        KeyMode::Bytes(n) => Key::Bytes((0..n).map(|_| next() as u8).collect()),
        KeyMode::VarBytes(n) => {
            let len = (next() % (n as u64 + 1)) as usize;
            Key::Bytes((0..len).map(|_| next() as u8).collect())
        }
    };
    let n = EXPORT_BENCH_OPS;
    let third = n / 3;
    let mut after = filter.clone();
    let mut port0: Vec<Op> = Vec::new();
    for i in 0..third {
        port0.push(Op {
            code: op::LOOKUP,
            tag: i as u32,
            key: key(&mut next),
        });
    }
    let inserted: Vec<Key> = (0..third).map(|_| key(&mut next)).collect();
    for (i, k) in inserted.iter().enumerate() {
        after.insert_hash(key_hash(cfg, k));
        port0.push(Op {
            code: op::INSERT,
            tag: (third + i) as u32,
            key: k.clone(),
        });
    }
    for (i, k) in inserted.iter().enumerate() {
        port0.push(Op {
            code: op::LOOKUP,
            tag: (2 * third + i) as u32,
            key: k.clone(),
        });
    }
    let mut ops = vec![port0];
    for _ in 1..cfg.lookup_ports {
        let mut v = Vec::new();
        while v.len() < n {
            let k = key(&mut next);
            let h = key_hash(cfg, &k);
            if filter.contains_hash(h) == after.contains_hash(h) {
                v.push(Op {
                    code: op::LOOKUP,
                    tag: v.len() as u32,
                    key: k,
                });
            }
        }
        ops.push(v);
    }
    // Expected answers: the first lookups of port 0 see the exported filter, the last ones the
    // filter after the inserts; the other ports' answers are the same in both.
    let mut files = Vec::new();
    let mut c = String::new();
    for v in [200u32, 90, 80, 7] {
        let _ = writeln!(c, "{v:08x}");
    }
    for o in &ops {
        let _ = writeln!(c, "{:08x}", o.len());
    }
    let _ = writeln!(c, "{:08x}", 0);
    let p = dir.join("bench_cfg.hex");
    std::fs::write(&p, c)?;
    files.push(p);
    for (port, list) in ops.iter().enumerate() {
        let mut stim = String::new();
        let mut exp = String::new();
        for (i, o) in list.iter().enumerate() {
            stim.push_str(&stim_line(cfg, o)?);
            stim.push('\n');
            let h = key_hash(cfg, &o.key);
            let hit = match o.code {
                op::LOOKUP if port == 0 && i < third => filter.contains_hash(h),
                op::LOOKUP => after.contains_hash(h),
                _ => false,
            };
            exp.push_str(if hit { "1\n" } else { "0\n" });
        }
        for (name, text) in [
            (format!("stim_p{port}.hex"), stim),
            (format!("bench_expect_p{port}.hex"), exp),
        ] {
            let p = dir.join(name);
            std::fs::write(&p, text)?;
            files.push(p);
        }
    }
    Ok(files)
}
