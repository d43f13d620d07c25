//! Derived sizes of a configuration, shared by the generators of every module and bench (so
//! that `verilog` imports the bench, board, AXI and kit generators and none of them imports it).

use crate::front::{Front, Shape, LEN_BITS};
use crate::{HdlConfig, KeyMode};

/// Derived sizes of a configuration.
#[derive(Clone, Debug)]
pub(crate) struct Geo {
    pub top: String,
    pub lanes: usize,
    pub w: u32,
    pub z: u32,
    pub aw: u32,
    pub depth: u64,
    pub kw: u32,
    pub tw: u32,
    /// Whether ports have a length input (variable-length keys).
    pub var_len: bool,
    pub ports: usize,
    pub replicas: usize,
    pub hash_stages: u32,
    /// Stages of the front end (accept to address register, inclusive).
    pub front_stages: u32,
    pub latency: u32,
    pub fifo_depth: u32,
    pub fifo_bits: u32,
    /// Width of a stimulus word: op (2) + tag + length (variable-length keys) + key.
    pub stim_bits: u32,
    /// Width of the management port's data (`mg_wdata`, `mg_rdata`): one entry of every lane.
    pub mg_bits: u32,
}

pub(crate) fn ceil_log2(x: u64) -> u32 {
    if x <= 1 {
        0
    } else {
        64 - (x - 1).leading_zeros()
    }
}

/// Cycles from the bank address register to the answer FIFO's write: bank read register, bank
/// output register, AND register.
pub(crate) const MEM_STAGES: u32 = 3;

pub(crate) fn shape(cfg: &HdlConfig) -> Shape {
    Shape {
        kw: cfg.key.key_bits(),
        tw: cfg.tag_bits,
        lanes: cfg.layout.lanes(),
        bit_bits: cfg.layout.bit_index_bits(),
        block_bits: ceil_log2(u64::from(cfg.blocks)),
        blocks: cfg.blocks,
    }
}

pub(crate) fn geo(cfg: &HdlConfig, front: &Front) -> Geo {
    let s = shape(cfg);
    let var_len = matches!(cfg.key, KeyMode::VarBytes(_));
    // accept -> front (input register .. address register) -> bank read -> bank output
    // register -> AND register -> FIFO write -> m_valid.
    let latency = front.stages + MEM_STAGES + 1;
    let fifo_bits = ceil_log2(u64::from(latency) + 4).max(2);
    Geo {
        top: cfg.top_name.clone(),
        lanes: s.lanes,
        w: cfg.layout.word_bits(),
        z: cfg.blocks,
        aw: s.block_bits + s.bit_bits,
        depth: cfg.bank_entries(),
        kw: s.kw,
        tw: s.tw,
        var_len,
        ports: cfg.lookup_ports,
        replicas: cfg.replicas(),
        hash_stages: front.hash_stage - 1,
        front_stages: front.stages,
        latency,
        fifo_depth: 1 << fifo_bits,
        fifo_bits,
        stim_bits: 2 + s.tw + s.kw + if var_len { LEN_BITS } else { 0 },
        mg_bits: s.lanes as u32,
    }
}

pub(crate) fn bank_module_name(top: &str, read_a: bool, has_b: bool) -> String {
    format!(
        "{top}_bank_{}{}",
        if read_a { "rw" } else { "w" },
        if has_b { "_r" } else { "" }
    )
}
