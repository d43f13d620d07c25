//! Verilog-2005 text generation: the header, the front end, answer FIFO and bank modules of
//! every design (the top module is `top`'s).

use std::fmt::Write as _;

use bloomlanes_core::SALTS;

use crate::cell::CellAlu;
use crate::front::{self, Front, LEN_BITS};
use crate::geo::{bank_module_name, geo, range, shape, Geo};
use crate::pins::{bank_pins, declare};
use crate::pipeline::PipelineConfig;
use crate::{
    axis, bank_file_name, bench, board, ecp5_floorplan, kit, readme, top, Design, KeyMode, RamStyle,
};

pub(crate) fn generate(cfg: &PipelineConfig) -> Design {
    let front = front::build(&cfg.base, &shape(cfg));
    let g = geo(cfg, &front);
    let mut v = String::new();
    header(&mut v, cfg, &g);
    v.push_str("`default_nettype none\n\n");
    top::top_module(&mut v, cfg, &g);
    // One file holds every module of the design; only the top module is named after it.
    v.push_str("// verilator lint_off DECLFILENAME\n");
    front_module(&mut v, &g, &front);
    port_module(&mut v, &g);
    bank_modules(&mut v, cfg, &g);
    v.push_str("// verilator lint_on DECLFILENAME\n`default_nettype wire\n");
    Design {
        rtl: v,
        testbench: bench::verilog_bench(&g),
        cpp_harness: bench::cpp_harness(&g),
        top_name: g.top.clone(),
        latency_cycles: g.latency,
        hash_stages: g.hash_stages,
        addr_bits: g.aw,
        fifo_depth: g.fifo_depth,
        bank_files: (0..g.lanes).map(|i| bank_file_name(&g.top, i)).collect(),
        pin_light_top: board::pin_light_top(&g),
    }
}

/// The files of the build and verification kit of any design (the board tops, the AXI
/// wrapper, the Makefile and constraints, the cocotb bench, the formal harness, the README), as
/// (path relative to the export folder, text).
pub(crate) fn kit_files(cfg: &PipelineConfig) -> Vec<(String, String)> {
    let front = front::build(&cfg.base, &shape(cfg));
    let g = geo(cfg, &front);
    let t = &g.top;
    let mut files = vec![
        (format!("{t}_board.v"), board::board_tops(&g)),
        (format!("{t}_wrap.v"), board::pin_light_top(&g)),
        (format!("{t}_axis.v"), axis::axis_module(cfg, &g)),
        ("README.md".to_string(), readme::readme(cfg, &g)),
        ("Makefile".to_string(), board::makefile(&g)),
        (
            "fpga/hx8k_breakout.pcf".to_string(),
            board::pcf_hx8k_breakout(),
        ),
        ("fpga/ulx3s.lpf".to_string(), board::lpf_ulx3s()),
        ("fpga/fmax.sh".to_string(), board::fmax_script()),
    ];
    if let Some(script) = ecp5_floorplan::script(&g, cfg.cells.alu) {
        files.push((ecp5_floorplan::PATH.to_string(), script));
    }
    files.extend(kit::files(cfg, &g));
    files
}

/// What the ports take and answer, by ALU.
fn ops_text(cfg: &PipelineConfig, g: &Geo) -> String {
    let max = cfg.cells.max();
    match cfg.cells.alu {
        CellAlu::SetBit => format!(
            "// Ports: {ports} stream port(s) with valid/ready handshakes (AXI4-Stream style; see
// {top}_axis for the AXI4-Stream and AXI4-Lite wrapper, when exported).
//   Port 0: s0_valid/s0_ready, s0_op (0 lookup, 1 insert, 2 clear, 3 no-op), s0_tag, s0_key.
//   Ports 1..: lookups only (no op input). Every port p answers on m<p>_valid/m<p>_ready with
//   m<p>_hit (1 = may be present; always 0 for insert, clear and no-op) and m<p>_tag, one answer
//   per accepted operation, in order. An insert writes 1 into every bank; a lookup reads one
//   bit of every bank and ANDs them. Port 0 uses port A of the dual-port banks, port 1 port B;
//   ports 2.. each add a replica of every bank ({replicas} replica(s)): a replica's port A is
//   written by port 0's inserts and clears, its port B serves one lookup port.
// Timing: every multiply is registered partial products and a pipelined adder tree (adders of
// at most {adder} bits per stage); {bank_regs} before the registered AND of the lanes.
// Read-after-write: on port 0 there is no restriction: operations are applied in order, so a
//   lookup accepted in any cycle after an insert sees it (no forwarding needed: both pass the
//   same pipeline and the banks are written before the next read). A lookup on port p >= 1 sees
//   an insert on port 0 if it is accepted in a strictly later cycle than the insert (every port
//   has the same latency); one accepted in the same cycle is answered from the contents before
//   the insert.
// Clear (op 2 on port 0): operations accepted before it, or in the same cycle on other ports,
//   are answered from the contents before the clear. From the cycle after the clear is accepted,
//   busy is high and every s<p>_ready low until all {depth} entries of every bank are zero
//   (about {clr} cycles in all); its answer (hit 0) is offered like any other.
",
            ports = g.ports,
            top = g.top,
            replicas = g.replicas,
            adder = cfg.base.adder_bits,
            depth = g.depth,
            clr = u64::from(g.front_stages) + 1 + g.depth,
            bank_regs = if g.bank_read > crate::geo::BANK_READ {
"the banks are registered: an\n// input register at the memory, the block RAM's read, its output register and a fabric\n// register (4 cycles)"
            } else {
                "the bank outputs are registered twice (block RAM output\n// register, then a fabric register)"
            },
        ),
        CellAlu::Counter => format!(
            "// Port 0: s0_valid/s0_ready, s0_op (0 lookup, 1 insert, 2 delete, 3 no-op), s0_tag, s0_key.
//   Answers in order on m0_valid/m0_ready: m0_{ans} = lookup: {lookup}; insert: 1;
//   delete: 1 when accepted (every counter > 0: each - 1), 0 when refused (nothing changed);
//   no-op: 0. A counter at {max} is saturated: an insert leaves it, a delete never lowers it.
",
            ans = g.ans_name,
            lookup = match cfg.cells.reduction {
                crate::Reduction::AllNonZero => "every counter > 0",
                crate::Reduction::Min => "the smallest counter",
                crate::Reduction::Retrieve { .. } => unreachable!("counters are not retrieved"),
            },
        ),
        CellAlu::Fixed => format!(
            "// Port 0: s0_valid/s0_ready, s0_op (0 lookup, 1..3 no-op), s0_tag, s0_key. The cells are
//   loaded (LOAD_BANKS, or mg_* writes) and never changed by an operation. Answers in order on
//   m0_valid/m0_ready: m0_{ans}[{v}] = found (the XOR of the key's {l} cells has the key's check
//   bits above its low {v} bits), m0_{ans}[{v1}:0] = the value (0 when not found); no-ops: 0.
",
            ans = g.ans_name,
            l = g.lanes,
            v = g.ans_bits - 1,
            v1 = g.ans_bits.saturating_sub(2),
        ),
        CellAlu::Max => format!(
            "// Port 0: s0_valid/s0_ready, s0_op (0 lookup, 1 insert, 2 and 3 no-op), s0_value (the
//   class of an insert, 1..{max}), s0_tag, s0_key. An insert sets each of the key's cells to
//   max(cell, s0_value). Answers in order on m0_valid/m0_ready: m0_{ans} = lookup: {lookup};
//   insert and no-ops: 0.
",
            ans = g.ans_name,
            lookup = match cfg.cells.reduction {
                crate::Reduction::AllNonZero => "1 when every cell > 0",
                crate::Reduction::Min => "the smallest of the key's cells (0 = absent)",
                crate::Reduction::Retrieve { .. } => unreachable!("classes are not retrieved"),
            },
        ),
    }
}

fn header(v: &mut String, cfg: &PipelineConfig, g: &Geo) {
    let b = &cfg.base;
    let key = match b.key {
        KeyMode::Bytes(n) => format!(
            "{n}-byte keys (s<p>_key[{}:0], byte i = bits 8i+7..8i), hashed on chip by XXH64 \
             (seed 0x{:016x}) in {} pipeline stages",
            8 * n - 1,
            b.seed,
            g.hash_stages
        ),
        KeyMode::VarBytes(n) => format!(
            "keys of 0 to {n} bytes (s<p>_key[{}:0], byte i = bits 8i+7..8i; s<p>_len[6:0] = \
             the length, bytes at and above it ignored), hashed on chip by XXH64 (seed \
             0x{:016x}) in {} pipeline stages, one key per clock whatever the length",
            8 * n - 1,
            b.seed,
            g.hash_stages
        ),
        KeyMode::Prehashed => format!(
            "prehashed: s<p>_key[63:0] is the 64-bit XXH64 hash of the key (seed 0x{:016x} on the host)",
            b.seed
        ),
    };
    let kind = match cfg.cells.alu {
        CellAlu::SetBit => "split-block Bloom filter",
        CellAlu::Counter => "counting split-block Bloom filter",
        CellAlu::Max => "spatial split-block Bloom filter",
        CellAlu::Fixed => "retrieval table (4-wise binary fuse, docs/FORMAT.md section 9)",
    };
    let placement = match &cfg.retrieval {
        Some(s) => format!(
            "// Retrieval: v = {}, f = {}, a = {}, L = 2^{}, S = {}, construction seed 0x{:016x}; m = mix(h + seed),
//   cells (m*S*L) >> 64 + j*L XOR ((r >> (j-1)*sigma) mod L); bank b = segment mod a holds one
//   cell of every key at address (segment / a)*L + cell mod L ({} bits, {} cells per bank).
",
            s.value_bits,
            s.check_bits,
            s.arity,
            s.segment_bits,
            s.segment_count,
            s.seed,
            g.aw,
            g.depth
        ),
        None => format!(
            "// Layout {layout}: {lanes} lanes x {w}-bit words; z = {z} blocks.
// Block index = ((h >> 32) * z) >> 32; lane i bit = ((h[31:0] * SALT_i) mod 2^32) >> {shift}
// (constants from bloomlanes-core).
// Parallel-partitioned: lane i is bank i, z*W = {depth} cells, address = block*W + bit =
// {{block, bit}} ({aw} bits); entry block*W + bit of bank i is cell (block*L + i)*W + bit.
",
            layout = b.layout,
            lanes = g.lanes,
            w = g.w,
            z = g.z,
            shift = b.layout.lane_shift(),
            depth = g.depth,
            aw = g.aw,
        ),
    };
    let pipeline = if cfg.cells.reads_cells() {
        format!(
            "// Pipeline: read-modify-write of the key's cells, one operation per clock (II = 1), also on
//   the same cells back to back: the execute stage takes the cells of the previous {missed}
//   operations when they hit the same entry (forwarding), so every operation sees the result of
//   every operation accepted before it.{tree} Under backpressure s0_ready (a register) drops only
//   when the {fd}-entry answer FIFO could overflow.
",
            tree = if g.exec_stages > crate::geo::rmw_stages(g.bank_read) {
                " The minimum is a tree of compares, one level per stage."
            } else {
                ""
            },
            fd = g.fifo_depth,
            missed = match g.forwarding_window() {
                4 => "four".to_string(),
                5 => "five".to_string(),
                6 => "six".to_string(),
                n => n.to_string(),
            },
        )
    } else {
        format!(
            "// Throughput: one operation per clock per port (II = 1), also under backpressure: s<p>_ready is
//   a register that drops only when the port's {fd}-entry answer FIFO (the skid buffer that holds
//   every operation in flight) could overflow; with m<p>_ready high it never drops.
",
            fd = g.fifo_depth
        )
    };
    let _ = write!(
        v,
        "// {top}: bloomlanes {kind}, generated by bloomlanes-hdl {ver}.
// Do not edit: regenerate from the configuration below.
//
// Keys: {key}.
{placement}// Cells: {cells}.
{ops}{pipeline}// Latency: {lat} cycles from the cycle an operation is accepted (s<p>_valid && s<p>_ready) to the
//   first cycle its answer is offered (m<p>_valid); the banks are read {mem} cycles after
//   acceptance (input register, {hs} hash stage(s), index stages, address register).
// mg_*: a request (mg_req held until mg_ack) stops every port, drains the pipelines, then clears
//   every cell (mg_clear; busy is high while clearing), writes mg_wdata (bits {c}*i+{c1}..{c}*i into
//   bank i, every replica) or reads entry mg_addr of every bank into mg_rdata (same packing).
// Bank contents at start: parameter LOAD_BANKS = 1 makes bank i read {file0} .. (one
//   $readmemh file per lane: one {digits}-digit hex cell per line, entry block*W + bit) from the
//   working folder; otherwise every cell starts at 0.{bank_form}
// Reset: rst (synchronous, active high) empties the pipelines (hold it for 2 cycles or more);
//   the cells stay.
",
        top = g.top,
        ver = env!("CARGO_PKG_VERSION"),
        cells = cfg.cells,
        ops = ops_text(cfg, g),
        lat = g.latency,
        mem = g.front_stages,
        hs = g.hash_stages,
        c = g.cell_bits,
        c1 = g.cell_bits - 1,
        file0 = bank_file_name(&g.top, 0),
        digits = cfg.cells.hex_digits(),
        bank_form = crate::rmw::code::CellCode::of_config(cfg).header_note(),
    );
    v.push('\n');
}

pub(crate) fn front_module(v: &mut String, g: &Geo, front: &Front) {
    let t = &g.top;
    let (kw, aw, l) = (g.kw, g.aw, g.lanes);
    let ftw = g.tw + g.value_bits;
    let len_port = if g.var_len {
        format!("    input  wire [{}:0] i_len,\n", LEN_BITS - 1)
    } else {
        String::new()
    };
    let decode_ports = if front.decodes {
        "    output wire o_insert,\n    output wire o_clear,\n"
    } else {
        ""
    };
    let _ = writeln!(
        v,
        "// Hash and index pipeline of one port ({} stages: input register, hash, index, address
// register), generated from bloomlanes-core's constants. Salts: {salts}.
module {t}_front (
    input  wire clk,
    input  wire rst,
    input  wire i_valid,
    input  wire [1:0] i_op,
    input  wire [{}:0] i_tag,
    input  wire [{}:0] i_key,
{len_port}    output wire o_valid,
    output wire [1:0] o_op,
{decode_ports}    output wire [{}:0] o_tag,
    output wire [{}:0] o_addr
);
    // Partial products keep only the bits that reach the result; the rest is unused on purpose.
    /* verilator lint_off UNUSEDSIGNAL */",
        front.stages,
        ftw - 1,
        kw - 1,
        ftw + g.check_bits - 1,
        l as u32 * aw - 1,
        salts = SALTS[..l]
            .iter()
            .map(|s| format!("{s:08x}"))
            .collect::<Vec<_>>()
            .join(" "),
    );
    v.push_str(&front.body);
    v.push_str("    /* verilator lint_on UNUSEDSIGNAL */\nendmodule\n\n");
}

/// Cycles between the credit's inputs (`acc`, `rp`) and `s_ready`: two registers (`occ_r`,
/// `s_ready`), or three (`occ_r`, `room_r`, `s_ready`) where the FIFO has an entry to spare
/// for the extra cycle's operation, so that the compare and `hold` sit in different stages.
pub(crate) fn credit_lag(g: &Geo) -> u32 {
    if g.fifo_depth >= g.latency + 5 {
        3
    } else {
        2
    }
}

pub(crate) fn port_module(v: &mut String, g: &Geo) {
    let t = &g.top;
    let (tw, dw) = (g.tw, g.ans_bits);
    let fb = g.fifo_bits;
    let lag = credit_lag(g);
    // s_ready reads an occupancy `lag` cycles old: the operations accepted in those `lag`
    // cycles and in s_ready's own cycle may all still be in flight, so it may be at most
    // depth - lag - 1.
    let limit = g.fifo_depth - lag - 1;
    let (room_decl, room_rst, room_upd, ready_upd, room_text) = if lag == 3 {
        (
            "\n    reg room_r;",
            "\n            room_r <= 1'b0;",
            format!("\n            room_r <= (occ_r <= {}'d{limit});", fb + 1),
            "s_ready <= ~hold & room_r;".to_string(),
            format!(
                "occ_r <= {limit} in room_r (its own stage, apart from hold's logic) leaves room for the
// operations accepted in the two cycles occ_r and room_r lag, in this cycle and in the next one"
            ),
        )
    } else {
        (
            "",
            "",
            String::new(),
            format!("s_ready <= ~hold & (occ_r <= {}'d{limit});", fb + 1),
            format!(
                "occ_r <= {limit} leaves room for the operations accepted in the cycle occ_r lags, in
// this cycle and in the next one"
            ),
        )
    };
    let _ = writeln!(
        v,
        "// Answer FIFO of one port ({d} entries) with credit counting: s_ready is a register that stays
// high while every operation in flight is sure of a FIFO entry, so no stage ever stalls. The
// credit test reads registers only: acc counts accepted operations, rp dequeued ones, occ_r
// holds acc - rp one cycle late, and {room_text}.
// m_valid is a register too (cnt = wp - rp is never 0 while it is high; one_r: cnt == 1), and
// rp1 holds rp + 1, so a dequeue, and the next read address behind it (synthesis moves rp into
// a block RAM's read port), is one gate from registers, not a compare and an increment.
module {t}_port (
    input  wire clk,
    input  wire rst,
    input  wire hold,
    input  wire s_fire,
    output reg  s_ready,
    input  wire w_valid,
    input  wire {dr}w_data,
    input  wire [{tw1}:0] w_tag,
    output wire m_valid,
    input  wire m_ready,
    output wire {dr}m_data,
    output wire [{tw1}:0] m_tag
);
    reg [{mw1}:0] mem [0:{d1}];
    reg [{fb}:0] wp;
    reg [{fb}:0] rp;
    reg [{fb}:0] rp1;
    reg [{fb}:0] acc;
    reg [{fb}:0] cnt;
    reg m_valid_r;
    reg one_r;
    wire deq = m_valid_r & m_ready;
    wire two = (cnt == {fbp}'d2);
    reg [{fb}:0] occ_r;{room_decl}
    assign m_valid = m_valid_r;
    assign m_data = mem[rp[{fb1}:0]][{mw1}:{tw}];
    assign m_tag = mem[rp[{fb1}:0]][{tw1}:0];
    always @(posedge clk) begin
        if (w_valid) mem[wp[{fb1}:0]] <= {{w_data, w_tag}};
    end
    always @(posedge clk) begin
        if (rst) begin
            wp <= {fbp}'d0;
            rp <= {fbp}'d0;
            rp1 <= {fbp}'d1;
            acc <= {fbp}'d0;
            cnt <= {fbp}'d0;
            m_valid_r <= 1'b0;
            one_r <= 1'b0;
            occ_r <= {fbp}'d0;{room_rst}
            s_ready <= 1'b0;
        end else begin
            if (w_valid) wp <= wp + {fbp}'d1;
            if (deq) begin
                rp <= rp1;
                rp1 <= rp1 + {fbp}'d1;
            end
            if (s_fire) acc <= acc + {fbp}'d1;
            // cnt + w_valid - deq: nonzero, and equal to 1, told from the registers and two.
            if (w_valid & ~deq) cnt <= cnt + {fbp}'d1;
            if (deq & ~w_valid) cnt <= cnt - {fbp}'d1;
            m_valid_r <= w_valid | (m_valid_r & ~(one_r & deq));
            one_r <= w_valid ? (deq ? one_r : ~m_valid_r) : (deq ? two : one_r);
            occ_r <= acc - rp;{room_upd}
            {ready_upd}
        end
    end
`ifdef FORMAL
    // make formal: the registers kept beside the pointers agree with them in every cycle after
    // a reset, and the FIFO never holds more than {d} entries.
    reg f_reset_seen = 1'b0;
    always @(posedge clk) if (rst) f_reset_seen <= 1'b1;
    always @(*) begin
        if (f_reset_seen) begin
            assert(cnt == wp - rp);
            assert(cnt <= {fbp}'d{d});
            assert(m_valid_r == (cnt != {fbp}'d0));
            assert(one_r == (cnt == {fbp}'d1));
            assert(rp1 == rp + {fbp}'d1);
        end
    end
`endif
endmodule
",
        d = g.fifo_depth,
        d1 = g.fifo_depth - 1,
        dr = range(dw),
        mw1 = tw + dw - 1,
        tw1 = tw - 1,
        fb1 = fb - 1,
        fbp = fb + 1,
    );
}

fn bank_modules(v: &mut String, cfg: &PipelineConfig, g: &Geo) {
    let t = &g.top;
    let style = match cfg.base.ram_style {
        RamStyle::Auto => "",
        RamStyle::Block => " (* ram_style = \"block\" *)",
        RamStyle::Distributed => " (* ram_style = \"distributed\" *)",
        RamStyle::Ultra => " (* ram_style = \"ultra\" *)",
    };
    let mut kinds = Vec::new();
    for r in 0..g.replicas {
        let k = g.bank_roles(r);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let c = g.cell_bits;
    let cr = range(c);
    for (read_a, has_b) in kinds {
        let name = bank_module_name(t, read_a, has_b);
        let ports = declare(&bank_pins(read_a, has_b, c, g.aw));
        let ebr = crate::ecp5_bank::applies(g);
        let mut tiles = bank_inputs(g, read_a, has_b);
        if ebr {
            crate::ecp5_bank::open(&mut tiles, g, read_a, has_b);
        }
        let desc = match (read_a, has_b) {
            (true, true) => "port A read/write (no-change read), port B read",
            (true, false) => "one read/write port (no-change read)",
            (false, true) => {
                "port A write, port B read (a read of the entry written in the same cycle may \
                 return either value)"
            }
            (false, false) => "port A write",
        };
        let _ = writeln!(
            v,
            "// One bank: {depth} x {c} bit(s), {desc}; synchronous reads (block RAM) and {regs}.
module {name} #(
    parameter LOAD = 0,
    parameter INIT_FILE = \"bank.hex\"
) (
{ports}
);
{tiles}    (* no_rw_check *){style} reg {cr}mem [0:{d1}];
`ifndef SYNTHESIS
    integer i;
    initial for (i = 0; i < {depth}; i = i + 1) mem[i] = {c}'d0;
`endif
    initial if (LOAD != 0) $readmemh(INIT_FILE, mem);",
            depth = g.depth,
            d1 = g.depth - 1,
            regs = if g.bank_read > crate::geo::BANK_READ {
                "two output\n// registers (registered banks: <port>_q, the block RAM's own where it has one: ECP5 DP16KD\n// REGMODE OUTREG, Xilinx DOA_REG/DOB_REG; then <port>_dout in the fabric), the write port's\n// inputs registered (<name>_m)"
            } else {
                "an output\n// register (the block RAM's own, or the first fabric register)"
            },
        );
        let [we, wa, wd, ra] = at_memory(g);
        if read_a {
            let _ = writeln!(
                v,
                "    reg {cr}a_rd;\n    always @(posedge clk) begin\n        if ({we}) mem[{wa}] <= {wd};\n        else a_rd <= mem[{wa}];\n    end\n{}",
                read_registers("a", &cr, g.bank_read)
            );
        } else {
            let _ = writeln!(
                v,
                "    always @(posedge clk) begin\n        if ({we}) mem[{wa}] <= {wd};\n    end"
            );
        }
        if has_b {
            let _ = writeln!(
                v,
                "    reg {cr}b_rd;\n    always @(posedge clk) b_rd <= mem[{ra}];\n{}",
                read_registers("b", &cr, g.bank_read)
            );
        }
        if ebr {
            crate::ecp5_bank::close(v);
        }
        v.push_str("endmodule\n\n");
    }
}

/// The names of a bank's write enable, write address, write data and port B read address at
/// the memory: the module's inputs, or their registers ([`bank_inputs`]) with registered banks.
pub(crate) fn at_memory(g: &Geo) -> [&'static str; 4] {
    if g.write_delay == 0 {
        ["a_we", "a_addr", "a_din", "b_addr"]
    } else {
        ["a_we_m", "a_addr_m", "a_din_m", "b_addr_m"]
    }
}

/// With registered banks, the registers between a bank's inputs and the memory (`<name>_m`):
/// the write port always (its clear, management and update multiplexers then end next to the
/// memory), and the read address of port B (its multiplexer's fan-out to every tile of a deep
/// bank then ends in a register, [`Geo::bank_read`]). Nothing without registered banks.
fn bank_inputs(g: &Geo, read_a: bool, has_b: bool) -> String {
    if g.write_delay == 0 {
        return String::new();
    }
    let (a, c) = (range(g.aw), range(g.cell_bits));
    let role = if read_a { "read and write" } else { "write" };
    let mut s = format!(
        "    // Registered inputs: port A's {role} address, enable and data one clock later, next to the
    // memory (the multiplexers in front of them stay in the fabric).
    reg a_we_m;
    reg {a}a_addr_m;
    reg {c}a_din_m;
    always @(posedge clk) begin
        a_we_m <= a_we;
        a_addr_m <= a_addr;
        a_din_m <= a_din;
    end
"
    );
    if has_b {
        let _ = writeln!(
            s,
            "    reg {a}b_addr_m;  // port B's read address, registered like port A's\n    always @(posedge clk) b_addr_m <= b_addr;"
        );
    }
    s
}

/// The output registers behind a bank port's read register `<p>_rd` (ending in `<p>_dout`):
/// one for a read of 2 cycles, two (`<p>_q`, then `<p>_dout`) for registered banks.
fn read_registers(p: &str, cr: &str, bank_read: u32) -> String {
    if bank_read > crate::geo::BANK_READ {
        format!(
            "    reg {cr}{p}_q;\n    always @(posedge clk) begin\n        {p}_q <= {p}_rd;\n        {p}_dout <= {p}_q;\n    end"
        )
    } else {
        format!("    always @(posedge clk) {p}_dout <= {p}_rd;")
    }
}
