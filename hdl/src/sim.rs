//! Running the generated RTL in a simulator and checking it against `bloomlanes-core`.
//!
//! A run writes, into a fresh working folder, the RTL, the bench, `bench_cfg.hex`,
//! `stim_p<p>.hex` (see the bench's header for the formats) and, with banks loaded, the bank
//! files; it runs Icarus Verilog (`iverilog` + `vvp`) or Verilator (`verilator --cc --exe
//! --build` with the C++ harness) there and parses `bench_log.txt` into a [`SimLog`].
//! [`check`] replays the accepted operations in hardware order on a software
//! [`Filter`](bloomlanes_core::Filter) and compares every answer; [`check_pipeline`] does the same
//! for any design against any [`Reference`] (a counting filter, a spatial model). One driver
//! serves every design.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use bloomlanes_core::xxh64;

use crate::banks::{write_cell_bank_files, Cells};
use crate::pipeline::PipelineConfig;
use crate::{generate_pipeline, op, Design, HdlConfig, HdlError, KeyMode};

pub use crate::check::{
    check, check_pipeline, run_and_check, simulate_lookup_hashes, simulate_lookups, CheckStats,
    Checked, Reference,
};
pub use crate::stimulus::{write_export_bench, SplitMix64, EXPORT_BENCH_OPS};

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

impl Key {
    /// The key whose hashed bytes are `k` (a software filter's key: an integer's little-endian
    /// bytes, a string's bytes) as the design `cfg` takes it: the bytes for a design that
    /// hashes on chip ([`KeyMode::Bytes`] of their length, [`KeyMode::VarBytes`] of at least
    /// it), their XXH64 under `cfg`'s seed for a [`KeyMode::Prehashed`] one. A key the design
    /// cannot take (another width, too long) is a [`HdlError::Mismatch`].
    pub fn from_key_bytes(cfg: &HdlConfig, k: &[u8]) -> Result<Key, HdlError> {
        match cfg.key {
            KeyMode::Bytes(n) if k.len() == n => Ok(Key::Bytes(k.to_vec())),
            KeyMode::Bytes(n) => Err(HdlError::Mismatch(format!(
                "a {}-byte key for a design with {n}-byte keys",
                k.len()
            ))),
            KeyMode::VarBytes(n) if k.len() <= n => Ok(Key::Bytes(k.to_vec())),
            KeyMode::VarBytes(n) => Err(HdlError::Mismatch(format!(
                "a {}-byte key for a design with keys of at most {n} bytes",
                k.len()
            ))),
            KeyMode::Prehashed => Ok(Key::Hash(xxh64(k, cfg.seed))),
        }
    }
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

/// An operation of a stimulus: an [`Op`] alone, or `(Op, value)` with the value an insert
/// writes (the class of a spatial insert, `Max(value)`).
pub trait Stim {
    /// The operation.
    fn op(&self) -> &Op;
    /// Its value (0 when it has none).
    fn value(&self) -> u32;
}

impl Stim for Op {
    fn op(&self) -> &Op {
        self
    }
    fn value(&self) -> u32 {
        0
    }
}

impl Stim for (Op, u32) {
    fn op(&self) -> &Op {
        &self.0
    }
    fn value(&self) -> u32 {
        self.1
    }
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
    /// Per port, every answer taken: cycle, tag, answer (the hit bit, or a minimum).
    pub answers: Vec<Vec<(u64, u32, u32)>>,
    /// Bank entries read back after the run: entry address, data as 32-bit words, least
    /// significant first (lane `i`'s cell in bits `c·i + c − 1 .. c·i`).
    pub readback: Vec<(u64, Vec<u32>)>,
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

/// The stimulus line of `o` for a static design `cfg`: `{op, tag, key}` in hex.
pub fn stim_line(cfg: &HdlConfig, o: &Op) -> Result<String, HdlError> {
    stim_word(cfg, 0, o, 0)
}

/// The stimulus line of `o` with `value` (`value_bits` wide; 0: none): `{op, tag, value,
/// length, key}` in hex, as the benches read it.
pub(crate) fn stim_word(
    cfg: &HdlConfig,
    value_bits: u32,
    o: &Op,
    value: u32,
) -> Result<String, HdlError> {
    let lw = if matches!(cfg.key, KeyMode::VarBytes(_)) {
        crate::front::LEN_BITS as usize
    } else {
        0
    };
    let kw = cfg.key.key_bits() as usize + lw;
    let tw = cfg.tag_bits as usize;
    let vw = value_bits as usize;
    let total = kw + vw + tw + 2;
    let mut bits = vec![false; total.div_ceil(4) * 4];
    let mut put = |lo: usize, width: usize, x: u64| {
        for j in 0..width {
            bits[lo + j] = x >> j & 1 == 1;
        }
    };
    match (&o.key, cfg.key) {
        (Key::Bytes(b), KeyMode::Bytes(n)) if b.len() == n => {
            b.iter()
                .enumerate()
                .for_each(|(i, &x)| put(8 * i, 8, x.into()));
        }
        (Key::Bytes(b), KeyMode::VarBytes(n)) if b.len() <= n => {
            b.iter()
                .enumerate()
                .for_each(|(i, &x)| put(8 * i, 8, x.into()));
            put(8 * n, lw, b.len() as u64);
        }
        (Key::Hash(h), KeyMode::Prehashed) => put(0, 64, *h),
        (k, mode) => {
            return Err(HdlError::Mismatch(format!(
                "key {k:?} does not fit key mode {mode}"
            )))
        }
    }
    if vw < 32 && value >> vw != 0 {
        return Err(HdlError::Mismatch(format!(
            "value {value} does not fit {vw} bits"
        )));
    }
    put(kw, vw, value.into());
    put(kw + vw, tw, o.tag.into());
    put(kw + vw + tw, 2, o.code.into());
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

/// Writes the inputs of a run of design `cfg` into `dir`: RTL, benches, configuration and
/// stimulus files, and the bank files of `banks` if given.
pub fn write_run_files<S: Stim>(
    cfg: &PipelineConfig,
    design: &Design,
    banks: Option<&(impl Cells + ?Sized)>,
    ops: &[Vec<S>],
    params: BenchParams,
    dir: &Path,
) -> Result<(), HdlError> {
    let b = &cfg.base;
    if ops.len() != b.lookup_ports {
        return Err(HdlError::Mismatch(format!(
            "{} stimulus lists for {} ports",
            ops.len(),
            b.lookup_ports
        )));
    }
    for (name, text) in design.sources() {
        std::fs::write(dir.join(name), text)?;
    }
    let readback = u64::from(params.readback).min(cfg.bank_shape().0);
    let head = [
        params.fast_ops,
        params.valid_pct,
        params.ready_pct,
        params.seed.max(1),
    ];
    write_stimulus(cfg, ops, &head, readback, dir)?;
    if let Some(banks) = banks {
        write_cell_bank_files(cfg, banks, dir)?;
    }
    Ok(())
}

/// Writes `bench_cfg.hex` (the words of `head`, the operations per port, the entries to read
/// back) and `stim_p<p>.hex`; returns the paths.
pub(crate) fn write_stimulus<S: Stim>(
    cfg: &PipelineConfig,
    ops: &[Vec<S>],
    head: &[u32; 4],
    readback: u64,
    dir: &Path,
) -> Result<Vec<PathBuf>, HdlError> {
    let mut c = String::new();
    for x in head {
        let _ = writeln!(c, "{x:08x}");
    }
    for port_ops in ops {
        let _ = writeln!(c, "{:08x}", port_ops.len());
    }
    let _ = writeln!(c, "{readback:08x}");
    let mut paths = vec![dir.join("bench_cfg.hex")];
    std::fs::write(&paths[0], c)?;
    for (p, port_ops) in ops.iter().enumerate() {
        let mut s = String::new();
        for o in port_ops {
            if p > 0 && o.op().code != op::LOOKUP {
                return Err(HdlError::Mismatch(format!(
                    "port {p} takes lookups only, not op {}",
                    o.op().code
                )));
            }
            s.push_str(&stim_word(
                &cfg.base,
                cfg.cells.value_bits(),
                o.op(),
                o.value(),
            )?);
            s.push('\n');
        }
        let path = dir.join(format!("stim_p{p}.hex"));
        std::fs::write(&path, s)?;
        paths.push(path);
    }
    Ok(paths)
}

/// Runs `ops` (one list per port) on the RTL of design `cfg` in `sim`, the banks loaded from
/// `banks` if given (else every cell 0), in a fresh temporary folder that is removed afterwards
/// unless the run failed (its path is then in the error), and returns the log.
pub fn run_pipeline<S: Stim>(
    cfg: &PipelineConfig,
    sim: Simulator,
    banks: Option<&(impl Cells + ?Sized)>,
    ops: &[Vec<S>],
    params: BenchParams,
) -> Result<SimLog, HdlError> {
    let dir = fresh_dir(sim.name())?;
    let run = || {
        let design = generate_pipeline(cfg)?;
        write_run_files(cfg, &design, banks, ops, params, &dir)?;
        let max_ops = ops.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let readback = u64::from(params.readback).min(cfg.bank_shape().0);
        let load = banks.is_some();
        run_simulator(
            sim,
            &dir,
            &design.top_name,
            max_ops,
            load,
            ops.len(),
            readback,
        )
    };
    match run() {
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
                    // The C++ model unoptimised: a bench runs for seconds at most, and g++ at
                    // Verilator's default -Os took twice as long as the run it built (the
                    // counting tests: 138 s with -Os, 82 s with -O0, on 2 cores).
                    .args(["-MAKEFLAGS", "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"])
                    .args(["-Mdir", "obj", "-o", "vsim"])
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
                let hit = u32::from_str_radix(hit, 16).map_err(|_| bad(line))?;
                log.answers
                    .get_mut(p)
                    .ok_or_else(|| bad(line))?
                    .push((c, tag, hit));
            }
            ["m", addr, data] => {
                let a: u64 = addr.parse().map_err(|_| bad(line))?;
                let d = hex_words(data).ok_or_else(|| bad(line))?;
                log.readback.push((a, d));
            }
            [] => {}
            _ => return Err(bad(line)),
        }
    }
    Ok(log)
}

/// A hex number as 32-bit words, least significant first (`None` if not hex).
fn hex_words(hex: &str) -> Option<Vec<u32>> {
    let digits = hex.as_bytes();
    digits
        .rchunks(8)
        .map(|c| u32::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

/// The 64-bit hash of `key` under `cfg`'s seed.
pub fn key_hash(cfg: &HdlConfig, key: &Key) -> u64 {
    match key {
        Key::Bytes(b) => xxh64(b, cfg.seed),
        Key::Hash(h) => *h,
    }
}
