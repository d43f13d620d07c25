//! Derived sizes of a configuration, shared by the generators of every module and bench (so
//! that `verilog` imports the bench, board, AXI and kit generators and none of them imports it).

use crate::cell::Reduction;
use crate::front::{Front, Shape, LEN_BITS};
use crate::pipeline::PipelineConfig;
use crate::KeyMode;

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
    /// Stages from the address register to the answer register (the FIFO's input).
    pub exec_stages: u32,
    /// Stages from the address register to the last bank access of an operation (what a
    /// management access waits for).
    pub bank_stages: u32,
    /// Cycles from a bank's address to its read data (`rd<p>`): 2 (the block RAM's read and
    /// output register), or with registered banks 3 (read, the memory's output register, a
    /// fabric register) plus 1 for the read address's register at the memory: every registered
    /// bank registers its read address like its write port (`<name>_m`), so that in a design
    /// that reads port B (counting, spatial) the address multiplexer's fan-out to every tile of
    /// a deep bank ends in a register (ECP5, spatial 8x32 z = 1024: 5.4–6.9 ns of routing on
    /// that net); one cycle of latency, no wider forwarding window
    /// ([`Geo::forwarding_window`]).
    pub bank_read: u32,
    /// Registers in front of the banks' write port (address, enable, data): 1 with registered
    /// banks (the clear, management and update multiplexers and the tile write decode then
    /// end in a register next to the memory), else 0.
    pub write_delay: u32,
    pub latency: u32,
    pub fifo_depth: u32,
    pub fifo_bits: u32,
    /// Width of a stimulus word: op (2) + tag + value + length (variable-length keys) + key.
    pub stim_bits: u32,
    /// Bits of one cell (one bank entry of one lane).
    pub cell_bits: u32,
    /// Width of an answer (`m<p>_hit`: 1; `m<p>_min`: the cell width).
    pub ans_bits: u32,
    /// Name of the answer output after `m<p>_`.
    pub ans_name: &'static str,
    /// Width of the value an insert carries (`s0_value`; 0: none).
    pub value_bits: u32,
    /// Check bits a retrieval's front end carries above the tag (0 for the other kinds).
    pub check_bits: u32,
    /// Width of the management port's data (`mg_wdata`, `mg_rdata`): one entry of every lane.
    pub mg_bits: u32,
    /// Whether updates read the cells they write (read-modify-write: counting, spatial).
    pub reads_cells: bool,
    /// Whether the cells are fixed (a retrieval table: lookups only, the cells loaded).
    pub fixed_cells: bool,
}

impl Geo {
    /// How many operations ahead a read-modify-write's bank read misses the writes of (the
    /// read's cycles at the memory, execute and result, and the write's delay): the forwarding
    /// window. The read address's register at the memory (registered banks) delays the read
    /// and every stage after it alike, so it widens no window: 4, or 6 with registered banks.
    pub(crate) fn forwarding_window(&self) -> u32 {
        let address = if self.write_delay > 0 {
            READ_ADDRESS_REGISTER
        } else {
            0
        };
        self.bank_read - address + 2 + self.write_delay
    }

    /// Which ports the banks of replica `r` have, as `(read on port A, read port B)`:
    /// write-through designs read replica 0's port A for port 0 and one replica's port B for
    /// each further port; read-modify-write designs write port A and read port B.
    pub(crate) fn bank_roles(&self, r: usize) -> (bool, bool) {
        if self.reads_cells {
            (false, true)
        } else {
            (r == 0, Self::b_port(r) < self.ports)
        }
    }

    /// The stream port that reads port B of replica `r` (write-through designs).
    pub(crate) fn b_port(r: usize) -> usize {
        if r == 0 {
            1
        } else {
            r + 1
        }
    }
}

pub(crate) fn ceil_log2(x: u64) -> u32 {
    if x <= 1 {
        0
    } else {
        64 - (x - 1).leading_zeros()
    }
}

/// Cycles of a bank read (address to read data): the block RAM's read and output register.
pub(crate) const BANK_READ: u32 = 2;
/// The same with registered banks: one fabric register more behind the memory's own (plus the
/// read address's register at the memory, [`READ_ADDRESS_REGISTER`]).
pub(crate) const REGISTERED_BANK_READ: u32 = 3;
/// The register of a registered bank's read address at the memory (`<p>_addr_m`).
pub(crate) const READ_ADDRESS_REGISTER: u32 = 1;

/// Stages from the bank address register to the answer register when updates only write: the
/// bank read, then the reduction register.
pub(crate) fn write_through_stages(bank_read: u32) -> u32 {
    bank_read + 1
}

/// The same for read-modify-write: the bank read, execute, result.
pub(crate) fn rmw_stages(bank_read: u32) -> u32 {
    bank_read + 2
}

/// The front end's shape; the value of an insert travels beside the tag.
pub(crate) fn shape(cfg: &PipelineConfig) -> Shape {
    let b = &cfg.base;
    let (lanes, bit_bits, block_bits) = match &cfg.retrieval {
        Some(s) => (
            usize::from(s.arity),
            u32::from(s.segment_bits),
            crate::retrieval::row_bits(s),
        ),
        None => (
            b.layout.lanes(),
            b.layout.bit_index_bits(),
            ceil_log2(u64::from(b.blocks)),
        ),
    };
    Shape {
        kw: b.key.key_bits(),
        tw: b.tag_bits + cfg.cells.value_bits(),
        lanes,
        bit_bits,
        block_bits,
        blocks: b.blocks,
        retrieval: cfg.retrieval,
        decode_ops: cfg.op_clears(),
    }
}

pub(crate) fn geo(cfg: &PipelineConfig, front: &Front) -> Geo {
    let b = &cfg.base;
    let s = shape(cfg);
    let var_len = matches!(b.key, KeyMode::VarBytes(_));
    let cells = cfg.cells;
    let write_delay = u32::from(b.registered_banks);
    let bank_read = if b.registered_banks {
        REGISTERED_BANK_READ + READ_ADDRESS_REGISTER
    } else {
        BANK_READ
    };
    // A minimum is a tree of compares, one level per stage after the result register.
    let (exec_stages, bank_stages) = if cells.reads_cells() {
        let tree = match cells.reduction {
            Reduction::Min => ceil_log2(s.lanes as u64),
            Reduction::AllNonZero | Reduction::Retrieve { .. } => 0,
        };
        (
            rmw_stages(bank_read) + tree,
            rmw_stages(bank_read) + write_delay,
        )
    } else {
        let reduce = cells.reduction.stages_before_answer();
        (write_through_stages(bank_read) + reduce, bank_read)
    };
    // accept -> front (input register .. address register) -> execute stages -> FIFO write ->
    // m_valid.
    let latency = front.stages + exec_stages + 1;
    let fifo_bits = ceil_log2(u64::from(latency) + 4).max(2);
    let value_bits = cells.value_bits();
    Geo {
        top: b.top_name.clone(),
        lanes: s.lanes,
        w: b.layout.word_bits(),
        z: b.blocks,
        aw: s.block_bits + s.bit_bits,
        depth: cfg.bank_shape().0,
        kw: s.kw,
        tw: b.tag_bits,
        var_len,
        ports: b.lookup_ports,
        replicas: b.replicas(),
        hash_stages: front.hash_stage - 1,
        front_stages: front.stages,
        exec_stages,
        bank_stages,
        bank_read,
        write_delay,
        latency,
        fifo_depth: 1 << fifo_bits,
        fifo_bits,
        stim_bits: 2 + b.tag_bits + value_bits + s.kw + if var_len { LEN_BITS } else { 0 },
        cell_bits: cells.bits,
        ans_bits: cells.answer_bits(),
        ans_name: match cells.reduction {
            Reduction::AllNonZero => "hit",
            Reduction::Min => "min",
            Reduction::Retrieve { .. } => "found_value",
        },
        check_bits: cfg.retrieval.map_or(0, |s| s.check_bits.into()),
        value_bits,
        mg_bits: s.lanes as u32 * cells.bits,
        reads_cells: cells.reads_cells(),
        fixed_cells: cells.alu == crate::cell::CellAlu::Fixed,
    }
}

pub(crate) fn bank_module_name(top: &str, read_a: bool, has_b: bool) -> String {
    format!(
        "{top}_bank_{}{}",
        if read_a { "rw" } else { "w" },
        if has_b { "_r" } else { "" }
    )
}

/// Bits `[(i+1)w-1 : iw]` of `sig` (`sig[iw]` when `w` is 1).
pub(crate) fn part(sig: &str, i: usize, w: u32) -> String {
    bits(sig, i as u32 * w, w)
}

/// Bits `[lo+w-1 : lo]` of `sig` (`sig[lo]` when `w` is 1).
pub(crate) fn bits(sig: &str, lo: u32, w: u32) -> String {
    if w == 1 {
        format!("{sig}[{lo}]")
    } else {
        format!("{sig}[{}:{lo}]", lo + w - 1)
    }
}

/// `[w-1:0] ` (with the space), or nothing for one bit: the range of a declaration.
pub(crate) fn range(w: u32) -> String {
    if w == 1 {
        String::new()
    } else {
        format!("[{}:0] ", w - 1)
    }
}
