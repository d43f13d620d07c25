//! `bloomlanes-hdl`: a Verilog generator for the bloomlanes split-block Bloom filter.
//!
//! [`generate`] turns an [`HdlConfig`] (layout, block count, key width, seed, number of lookup
//! ports) into synthesizable Verilog-2005 and a self-checking test bench. The design is
//! *parallel-partitioned*: lane `i` of every block lives in its own 1-bit-wide memory bank of
//! `z × W` entries (address `block × W + bit`), so an insert is a plain write of 1 into every bank
//! and a lookup reads one bit from every bank in the same cycle and ANDs them. Every constant
//! (salts, XXH64 primes, shifts, widths) is taken from [`bloomlanes_core`].
//!
//! * [`write_bank_files`] writes a software [`Filter`] as one `$readmemh` file per bank, so a
//!   filter built on the CPU or GPU runs in the FPGA image;
//! * [`export`] writes the RTL, the test bench, the bank files, a resource report (Yosys, when
//!   installed) and the flow (README, Makefile, board tops, AXI wrapper, cocotb bench, formal
//!   harness) into one folder;
//! * [`generate_counting`] turns a [`CountingConfig`] into a counting-filter pipeline (one
//!   counter bank per lane; insert, delete and lookup at one per clock with forwarding), whose
//!   banks [`write_counting_bank_files`] loads from a software counting filter,
//!   [`counting_sim`] checks against it, and [`export_counting`] writes with a self-checking
//!   bench and the same flow;
//! * [`simulate_lookups`] runs the generated RTL in Icarus Verilog or Verilator with banks loaded
//!   from files and returns the answers, which must equal the software filter's.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};

use bloomlanes_core::{Filter, HashId, KeyType, Layout, Params};

mod arith;
pub mod axis;
mod banks;
mod bench;
mod board;
pub mod cell;
mod check;
#[cfg(test)]
mod cone;
pub mod counting;
mod counting_banks;
mod counting_export;
pub mod counting_sim;
mod ecp5_bank;
mod ecp5_floorplan;
mod front;
mod geo;
mod hash;
pub mod kit;
pub mod names;
mod pins;
mod pipe;
pub mod pipeline;
mod readme;
pub mod report;
pub mod resources;
mod retrieval;
mod retrieval_export;
mod retrieval_mul;
mod rmw;
pub mod sim;
mod spatial_export;
mod stimulus;
mod top;
mod verilog;

pub use banks::{
    bank_bits, bank_cells, bank_file_name, read_cell_bank_files, write_bank_files,
    write_bank_files_for, write_cell_bank_files, write_empty_bank_files, Cells,
};
pub use cell::{CellAlu, CellSpec, Reduction};
pub use names::check_module_name;
pub use pipeline::PipelineConfig;
pub use resources::{check_fits, estimate, Device, Estimate};
pub use retrieval::{answer_word, RetrievalBanks};

pub use counting::{generate_counting, CountingConfig};
pub use counting_banks::{
    counting_bank_entries, counting_filter_from_banks, read_counting_bank_files,
    write_counting_bank_files,
};
pub use counting_export::{export_counting, export_counting_kit, COUNTING_BENCH_OPS};
pub use report::{export, ExportSummary, SynthFigures};
pub use retrieval_export::{export_retrieval_kit, RETRIEVAL_SELFTEST_LOOKUPS};
pub use sim::{simulate_lookup_hashes, simulate_lookups, simulator_available, Simulator};
pub use spatial_export::export_spatial_kit;

/// Largest number of entries of one bank (`z × W`): 2^24 bits, far more than any FPGA's block RAM
/// per bank; it keeps addresses, bank files and simulations sane.
pub const MAX_BANK_ENTRIES: u64 = 1 << 24;
/// Default of [`HdlConfig::adder_bits`].
pub const DEFAULT_ADDER_BITS: u32 = 16;
/// Largest key width in bytes for [`KeyMode::Bytes`] (the hash is unrolled per byte width).
pub const MAX_KEY_BYTES: usize = 256;
/// Largest key length of [`KeyMode::VarBytes`].
pub const MAX_VAR_KEY_BYTES: usize = 64;
/// Largest number of stream ports ([`HdlConfig::lookup_ports`]).
pub const MAX_PORTS: usize = 8;

/// What a stream port carries as its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyMode {
    /// Fixed-width keys of this many bytes, hashed on chip by a fully pipelined XXH64 unrolled for
    /// the width (byte `i` of the key is bits `8i+7..8i` of the key input, little-endian like
    /// [`bloomlanes_core::xxh64()`] reads it).
    Bytes(usize),
    /// The input is the 64-bit XXH64 hash itself (computed by the host).
    Prehashed,
    /// Keys of 0 to this many bytes (at most [`MAX_VAR_KEY_BYTES`]), hashed on chip at one key
    /// per clock: the key input holds the bytes (byte `i` = bits `8i+7..8i`, bytes at and above
    /// the length are ignored) and a 7-bit length input says how many there are.
    VarBytes(usize),
}

impl KeyMode {
    /// Width of the key input in bits.
    pub fn key_bits(self) -> u32 {
        match self {
            KeyMode::Bytes(n) | KeyMode::VarBytes(n) => 8 * n as u32,
            KeyMode::Prehashed => 64,
        }
    }
}

impl fmt::Display for KeyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyMode::Bytes(n) => write!(f, "{n}-byte keys"),
            KeyMode::Prehashed => f.write_str("prehashed"),
            KeyMode::VarBytes(n) => write!(f, "keys of 0 to {n} bytes"),
        }
    }
}

/// Parses `hash` (prehashed), `N` (N-byte keys) or `vN` (keys of 0 to N bytes), as the
/// examples and scripts write a key input.
impl std::str::FromStr for KeyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<KeyMode, String> {
        let bytes = |n: &str| {
            n.parse::<usize>()
                .map_err(|_| format!("{s:?} is not hash, N or vN"))
        };
        match s.strip_prefix('v') {
            _ if s == "hash" => Ok(KeyMode::Prehashed),
            Some(n) => bytes(n).map(KeyMode::VarBytes),
            None => bytes(s).map(KeyMode::Bytes),
        }
    }
}

/// What the keys of a filter are, as its builder knows them (the CLI passes the filter's key
/// type); [`check_key_mode`] refuses a hardware key input that cannot hash them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// Every key is exactly this many bytes (e.g. 8 for u64 keys, 13 for IPv4 5-tuples).
    Fixed(usize),
    /// Keys of varying length (strings, lines); the longest, if known.
    Variable {
        /// Length of the longest key in bytes, when known.
        max: Option<usize>,
    },
    /// The filter holds caller-supplied 64-bit hashes (hash id 0): only a prehashed design
    /// can answer for it.
    Prehashed,
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyKind::Fixed(n) => write!(f, "fixed {n}-byte keys"),
            KeyKind::Variable { max: Some(n) } => {
                write!(f, "variable-length keys of up to {n} bytes")
            }
            KeyKind::Variable { max: None } => f.write_str("variable-length keys"),
            KeyKind::Prehashed => f.write_str("caller-supplied hashes"),
        }
    }
}

impl KeyKind {
    /// What a filter's recorded parameters say about its keys: caller-supplied hashes (hash id
    /// 0), fixed-width keys (numbers, fixed bytes), or variable-length keys (bytes, text; flow
    /// 5-tuples, which are 13 or 37 bytes). `None` when the key type is not recorded (format
    /// version 1 files, filters built without one): then nothing can be checked.
    pub fn of_params(params: &Params) -> Option<KeyKind> {
        if params.hash == HashId::Prehashed {
            return Some(KeyKind::Prehashed);
        }
        match params.key_type {
            KeyType::Any => None,
            KeyType::Bytes => Some(KeyKind::Variable { max: None }),
            KeyType::Flow => Some(KeyKind::Variable { max: Some(37) }),
            KeyType::Ip => Some(KeyKind::Variable { max: Some(16) }),
            t => t.fixed_width().map(KeyKind::Fixed),
        }
    }
}

/// Checks that a design with key input `mode` hashes the keys of a filter built from `kind`
/// exactly as the software did, and refuses a mismatch with a message that names both:
/// fixed `n`-byte keys need [`KeyMode::Bytes`]`(n)` or [`KeyMode::VarBytes`]`(m ≥ n)`;
/// variable-length keys need [`KeyMode::VarBytes`] (long enough for the longest key when it is
/// known); caller-supplied hashes need [`KeyMode::Prehashed`]. A prehashed design fits every
/// filter (the host hashes the keys).
pub fn check_key_mode(mode: KeyMode, kind: KeyKind) -> Result<(), HdlError> {
    let refuse = |why: String| {
        Err(HdlError::Mismatch(format!(
            "the filter was built from {kind}, the design takes {mode}: {why}"
        )))
    };
    match (kind, mode) {
        (_, KeyMode::Prehashed) => Ok(()),
        (KeyKind::Fixed(n), KeyMode::Bytes(m)) if n == m => Ok(()),
        (KeyKind::Fixed(n), KeyMode::Bytes(m)) => {
            refuse(format!("use a key width of {n} bytes, not {m}"))
        }
        (KeyKind::Fixed(n), KeyMode::VarBytes(m)) if n <= m => Ok(()),
        (KeyKind::Fixed(n), KeyMode::VarBytes(m)) => refuse(format!(
            "{n}-byte keys do not fit a variable-length input of at most {m} bytes"
        )),
        (KeyKind::Variable { .. }, KeyMode::Bytes(m)) => refuse(format!(
            "a fixed {m}-byte input would hash only keys of exactly {m} bytes; use \
             variable-length keys (up to {MAX_VAR_KEY_BYTES} bytes) or a prehashed design"
        )),
        (KeyKind::Variable { max: Some(k) }, KeyMode::VarBytes(m)) if k > m => refuse(format!(
            "the longest key has {k} bytes; use a maximum of at least {k} bytes (at most \
             {MAX_VAR_KEY_BYTES}) or a prehashed design"
        )),
        (KeyKind::Variable { .. }, KeyMode::VarBytes(_)) => Ok(()),
        (KeyKind::Prehashed, _) => refuse(
            "the filter stores caller-supplied hashes, so the keys cannot be hashed on chip; \
             use a prehashed design"
                .to_string(),
        ),
    }
}

/// A hint to synthesis about which memory resource the banks should use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RamStyle {
    /// No attribute: the synthesis tool chooses (small banks often become LUT RAM, which Yosys
    /// cannot map 1 bit wide for UltraScale+).
    Auto,
    /// `(* ram_style = "block" *)`: block RAM even for small banks (the default).
    #[default]
    Block,
    /// `(* ram_style = "distributed" *)`: LUT RAM.
    Distributed,
    /// `(* ram_style = "ultra" *)`: UltraScale+ UltraRAM (URAM288, 4K × 72 each: a 1-bit bank
    /// uses one of its 72 columns, so this pays off only for deep banks).
    Ultra,
}

/// How the hash pipeline builds its 64 × 64-bit multiplies by the XXH64 primes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MulStyle {
    /// 16 × 16-bit partial products, each a registered multiply with registered operands and
    /// result (one DSP block each: 10 per 64 × 64 multiply), summed by a pipelined adder tree.
    #[default]
    Dsp,
    /// 4-bit table partial products (one LUT4 per product bit), summed by a pipelined adder
    /// tree; no DSPs (for parts with few or slow multipliers, e.g. iCE40).
    Lut,
}

/// Parses `dsp` or `lut`.
impl std::str::FromStr for MulStyle {
    type Err = String;
    fn from_str(s: &str) -> Result<MulStyle, String> {
        match s {
            "dsp" => Ok(MulStyle::Dsp),
            "lut" => Ok(MulStyle::Lut),
            _ => Err(format!("{s:?} is not dsp or lut")),
        }
    }
}

/// Everything the generator needs to know.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HdlConfig {
    /// Block shape (lanes × word bits); one bank per lane.
    pub layout: Layout,
    /// Number of blocks `z` (any value from 1; each bank has `z × W` entries).
    pub blocks: u32,
    /// Key input: fixed-width bytes hashed on chip, or prehashed.
    pub key: KeyMode,
    /// XXH64 seed (a constant of the generated hash pipeline).
    pub seed: u64,
    /// Number of stream ports (1 to [`MAX_PORTS`]). Port 0 takes inserts, lookups and clears;
    /// ports 1.. take lookups only. Port 0 uses port A of the dual-port banks, port 1 port B of
    /// the same banks; each further port adds one replica of every bank (written by port 0's
    /// inserts on its port A, read on its port B), so `max(1, lookup_ports − 1)` replicas.
    pub lookup_ports: usize,
    /// Width of the tag that travels with every operation (1 to 32 bits).
    pub tag_bits: u32,
    /// Memory resource hint for the banks.
    pub ram_style: RamStyle,
    /// Name of the top module (a Verilog identifier); the other modules are prefixed with it.
    pub top_name: String,
    /// Multiplies of the hash pipeline.
    pub mul_style: MulStyle,
    /// Widest adder in one pipeline stage (8 to 64 bits); wider sums are split into segments
    /// with a registered carry. Smaller is faster and costs latency and flip-flops.
    pub adder_bits: u32,
    /// Registered banks: a bank read takes four cycles instead of two (the read address
    /// registered next to the memory like the write port's inputs, the block RAM's read, its
    /// output register, a fabric register), so that no logic follows the memory's own
    /// clock-to-out and none precedes its inputs. The output register is the one the memory
    /// has where it has one (ECP5 DP16KD `REGMODE = "OUTREG"`, Xilinx `DOA_REG`/`DOB_REG`), a
    /// fabric register behind iCE40's SB_RAM40_4K, which has none. Costs two cycles of
    /// latency (and, for read-modify-write designs, two more levels of forwarding, for the
    /// output and write registers); false by default.
    pub registered_banks: bool,
}

impl HdlConfig {
    /// A configuration with one port, 8-bit tags, block RAM banks, DSP multiplies, 16-bit
    /// adders and top module `bloomlanes`.
    pub fn new(layout: Layout, blocks: u32, key: KeyMode, seed: u64) -> HdlConfig {
        HdlConfig {
            layout,
            blocks,
            key,
            seed,
            lookup_ports: 1,
            tag_bits: 8,
            ram_style: RamStyle::Block,
            top_name: "bloomlanes".to_string(),
            mul_style: MulStyle::Dsp,
            adder_bits: DEFAULT_ADDER_BITS,
            registered_banks: false,
        }
    }

    /// A configuration from the words `<layout> <blocks> <hash|N|vN> <ports> [dsp|lut] [adder
    /// bits]` and `seed`, as the examples and scripts write one.
    pub fn from_words(words: &[&str], seed: u64) -> Result<HdlConfig, String> {
        let [layout, blocks, key, ports, rest @ ..] = words else {
            return Err("give <layout> <blocks> <hash|N|vN> <ports> [dsp|lut] [adder bits]".into());
        };
        let layout = Layout::from_name(layout).ok_or(format!("layout {layout:?}"))?;
        let blocks = blocks.parse().map_err(|_| format!("blocks {blocks:?}"))?;
        let mut cfg = HdlConfig::new(layout, blocks, key.parse()?, seed);
        cfg.lookup_ports = ports.parse().map_err(|_| format!("ports {ports:?}"))?;
        if let Some(m) = rest.first() {
            cfg.mul_style = m.parse()?;
        }
        if let Some(b) = rest.get(1) {
            cfg.adder_bits = b.parse().map_err(|_| format!("adder bits {b:?}"))?;
        }
        Ok(cfg)
    }

    /// The configuration that matches `filter` (its layout, blocks and seed).
    pub fn for_filter(filter: &Filter, key: KeyMode) -> HdlConfig {
        HdlConfig::new(filter.layout(), filter.blocks(), key, filter.seed())
    }

    /// Number of replicas of every bank: `max(1, lookup_ports − 1)`.
    pub fn replicas(&self) -> usize {
        self.lookup_ports.saturating_sub(1).max(1)
    }

    /// Entries (bits) of one bank: `z × W`.
    pub fn bank_entries(&self) -> u64 {
        u64::from(self.blocks) * u64::from(self.layout.word_bits())
    }

    /// Checks the configuration; every generator entry point calls this first.
    pub fn validate(&self) -> Result<(), HdlError> {
        let bad = |m: String| Err(HdlError::InvalidConfig(m));
        if self.blocks == 0 {
            return bad("blocks must be at least 1".into());
        }
        if self.bank_entries() > MAX_BANK_ENTRIES {
            return bad(format!(
                "{} blocks of {} give banks of {} entries; at most {} entries per bank are supported",
                self.blocks,
                self.layout,
                self.bank_entries(),
                MAX_BANK_ENTRIES
            ));
        }
        if let KeyMode::Bytes(n) = self.key {
            if n == 0 || n > MAX_KEY_BYTES {
                return bad(format!(
                    "key width must be 1 to {MAX_KEY_BYTES} bytes, not {n}"
                ));
            }
        }
        if let KeyMode::VarBytes(n) = self.key {
            if n == 0 || n > MAX_VAR_KEY_BYTES {
                return bad(format!(
                    "variable-length keys must have a maximum of 1 to {MAX_VAR_KEY_BYTES} bytes, not {n}"
                ));
            }
        }
        if !(8..=64).contains(&self.adder_bits) {
            return bad(format!(
                "adder_bits must be 8 to 64, not {}",
                self.adder_bits
            ));
        }
        if self.lookup_ports == 0 || self.lookup_ports > MAX_PORTS {
            return bad(format!(
                "lookup_ports must be 1 to {MAX_PORTS}, not {}",
                self.lookup_ports
            ));
        }
        if self.tag_bits == 0 || self.tag_bits > 32 {
            return bad(format!("tag_bits must be 1 to 32, not {}", self.tag_bits));
        }
        names::check_module_name(&self.top_name).map_err(HdlError::InvalidConfig)?;
        Ok(())
    }

    /// Checks that `filter` has this configuration's layout, block count and seed.
    pub fn check_filter(&self, filter: &Filter) -> Result<(), HdlError> {
        if filter.layout() != self.layout
            || filter.blocks() != self.blocks
            || filter.seed() != self.seed
        {
            return Err(HdlError::Mismatch(format!(
                "filter is {} × {} blocks, seed {}; the configuration is {} × {} blocks, seed {}",
                filter.layout(),
                filter.blocks(),
                filter.seed(),
                self.layout,
                self.blocks,
                self.seed
            )));
        }
        if filter.hash_id() != bloomlanes_core::HashId::Xxh64 {
            return Err(HdlError::Mismatch(format!(
                "filter uses hash {:?}; the hardware computes XXH64",
                filter.hash_id()
            )));
        }
        Ok(())
    }
}

/// Why generation, export or simulation failed.
#[derive(Debug)]
pub enum HdlError {
    /// The configuration cannot be generated (the message says why).
    InvalidConfig(String),
    /// A filter or query does not fit the configuration.
    Mismatch(String),
    /// Reading or writing files failed.
    Io(std::io::Error),
    /// No simulator (Icarus Verilog or Verilator) on `PATH`.
    NoSimulator,
    /// A simulator or synthesis tool failed or answered something unexpected.
    Tool {
        /// The tool (`iverilog`, `verilator`, `yosys`, ...).
        tool: String,
        /// What went wrong, with the tail of its output.
        message: String,
    },
}

impl fmt::Display for HdlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HdlError::InvalidConfig(m) => write!(f, "invalid HDL configuration: {m}"),
            HdlError::Mismatch(m) => write!(f, "mismatch: {m}"),
            HdlError::Io(e) => write!(f, "I/O error: {e}"),
            HdlError::NoSimulator => {
                f.write_str("no Verilog simulator found (install iverilog or verilator)")
            }
            HdlError::Tool { tool, message } => write!(f, "{tool} failed: {message}"),
        }
    }
}

impl std::error::Error for HdlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HdlError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for HdlError {
    fn from(e: std::io::Error) -> Self {
        HdlError::Io(e)
    }
}

/// Operation codes of port 0's `s0_op` input.
pub mod op {
    /// Lookup: answers whether the key may be present.
    pub const LOOKUP: u8 = 0;
    /// Insert: sets the key's bit in every bank (answers 0).
    pub const INSERT: u8 = 1;
    /// Clear: zeroes every bank; `busy` is high until done (answers 0).
    pub const CLEAR: u8 = 2;
    /// No operation (answers 0).
    pub const NOP: u8 = 3;
}

/// The generated design.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Design {
    /// Verilog-2005 source of all modules; the top module comes first.
    pub rtl: String,
    /// A Verilog test bench (module `<top>_tb`) that drives stimulus files with random
    /// backpressure and logs every handshake (see [`sim`]).
    pub testbench: String,
    /// A C++ harness for Verilator that does the same as [`Design::testbench`].
    pub cpp_harness: String,
    /// Name of the top module.
    pub top_name: String,
    /// Cycles from the clock cycle an operation is accepted (`valid && ready`) to the cycle its
    /// answer is first offered (`m_valid`).
    pub latency_cycles: u32,
    /// Pipeline stages of the hash (0 when prehashed).
    pub hash_stages: u32,
    /// Address width of a bank.
    pub addr_bits: u32,
    /// Depth of each port's answer FIFO (the skid buffer that keeps II = 1 under backpressure).
    pub fifo_depth: u32,
    /// File names (relative to the simulator's or synthesizer's working folder) that
    /// `$readmemh` reads when parameter `LOAD_BANKS` is 1, one per lane.
    pub bank_files: Vec<String>,
    /// A pin-light top (`<top>_wrap`: a clock in, 8 LEDs out, every core port driven from or
    /// read into registers) to place and route a core whose ports outnumber a package's pins.
    pub pin_light_top: String,
}

impl Design {
    /// The generated sources as (file name, text): `<top>.v`, `<top>_tb.v`,
    /// `<top>_harness.cpp`.
    pub fn sources(&self) -> [(String, &str); 3] {
        let t = &self.top_name;
        [
            (format!("{t}.v"), self.rtl.as_str()),
            (format!("{t}_tb.v"), self.testbench.as_str()),
            (format!("{t}_harness.cpp"), self.cpp_harness.as_str()),
        ]
    }

    /// Writes [`Design::sources`] into `dir` (created if needed); returns the paths.
    pub fn write_sources(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut paths = Vec::new();
        for (name, text) in self.sources() {
            let p = dir.join(name);
            std::fs::write(&p, text)?;
            paths.push(p);
        }
        Ok(paths)
    }
}

/// Generates the RTL and test benches of the static design for `cfg`.
pub fn generate(cfg: &HdlConfig) -> Result<Design, HdlError> {
    generate_pipeline(&PipelineConfig::new(cfg.clone(), CellSpec::STATIC))
}

/// Generates the RTL and test benches of any design: the pipeline of `cfg`'s cells.
pub fn generate_pipeline(cfg: &PipelineConfig) -> Result<Design, HdlError> {
    cfg.validate()?;
    Ok(verilog::generate(cfg))
}
