//! The counting-filter pipeline: one `c`-bit counter bank per lane, one operation per clock
//! (insert, delete, lookup), read-modify-write of the key's counters with forwarding.
//!
//! The front end (input register, XXH64, block index and lane bits) is the static design's
//! (`front`), the answer FIFO with its credit-counted `s_ready` is the static design's port
//! module, and the top module has the static design's interface (`s0_*`, `m0_*`, `mg_*`,
//! `busy`), so the same test benches drive it. What differs is behind the address register:
//!
//! * stages R1, R2: the banks' synchronous read and output register; in R2 the read data are
//!   merged with the counters of the operations two, three and four ahead (whose writes the
//!   read did not see) when those hit the same entry (forwarding; the flags are compared in R1
//!   from registered addresses), and registered with their zero test;
//! * stage X (execute): that value, or the counters of the operation one ahead (still in Y), are
//!   the key's current counters; all nonzero = the answer of a lookup and the acceptance of a
//!   delete; the new counters are computed (insert +1, accepted delete −1, a saturated counter
//!   unchanged) — exactly [`bloomlanes_core::CountingMut`] — with their zero test;
//! * stage Y (result): registered new counters, written into the banks at the end of the cycle;
//!   the answer goes into the FIFO.
//!
//! The loop from Y back into X is the only one-cycle feedback path: Y's zero flags, one
//! multiplexer, the AND of the lanes, and the multiplexer that picks the decremented counters;
//! it lets an operation on the counters of the previous one run in the next cycle (II = 1).

use std::fmt::Write as _;

use bloomlanes_core::{CounterBits, CountingFilter, HashId};

use crate::front::{self, Front, LEN_BITS};
use crate::geo::{ceil_log2, geo, shape, Geo};
use crate::{bank_file_name, bench, verilog, Design, HdlConfig, HdlError, KeyMode, RamStyle};

/// Operation codes of a counting design's `s0_op` input.
pub mod op {
    /// Lookup: answers 1 when every counter of the key is positive.
    pub const LOOKUP: u8 = 0;
    /// Insert: every counter of the key + 1 (a saturated one stays at the maximum); answers 1.
    pub const INSERT: u8 = 1;
    /// Delete: when every counter of the key is positive, each − 1 (a saturated one stays) and
    /// the answer is 1; otherwise nothing changes and the answer is 0.
    pub const DELETE: u8 = 2;
    /// No operation (answers 0).
    pub const NOP: u8 = 3;
}

/// Cycles from the address register to the answer FIFO's write: bank read, bank output
/// register, execute, result.
const RMW_STAGES: u32 = 4;

/// A counting-filter design: the static design's configuration (layout, blocks, key input,
/// seed, tag width, top name, multiplies, adders, RAM style; one port) and the counter width.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CountingConfig {
    /// Shape, key input and naming; `lookup_ports` must be 1.
    pub base: HdlConfig,
    /// Counter width (4 or 8 bits): each bank holds `z × W` counters of this width.
    pub counter_bits: CounterBits,
    /// Whether the read-modify-write forwards the counters of the operations in flight (true;
    /// false generates a deliberately wrong design for the tests that prove the forwarding is
    /// exercised).
    pub forwarding: bool,
}

impl CountingConfig {
    /// A counting design of `base`'s shape with `counter_bits`-bit counters.
    pub fn new(base: HdlConfig, counter_bits: CounterBits) -> CountingConfig {
        CountingConfig {
            base,
            counter_bits,
            forwarding: true,
        }
    }

    /// The configuration that matches `filter` (layout, blocks, seed, counter width).
    pub fn for_filter(filter: &CountingFilter, key: KeyMode) -> CountingConfig {
        let p = filter.params();
        CountingConfig::new(
            HdlConfig::new(p.layout, p.blocks, key, p.seed),
            filter.counter_bits(),
        )
    }

    /// Width of one bank entry in bits (the counter width).
    pub fn entry_bits(&self) -> u32 {
        self.counter_bits.bits()
    }

    /// Checks the configuration (the base's checks, one port).
    pub fn validate(&self) -> Result<(), HdlError> {
        self.base.validate()?;
        if self.base.lookup_ports != 1 {
            return Err(HdlError::InvalidConfig(format!(
                "a counting design has one port (inserts, deletes and lookups), not {}",
                self.base.lookup_ports
            )));
        }
        Ok(())
    }

    /// Checks that `filter` is a counting filter of this configuration's layout, block count,
    /// seed and counter width, hashed with XXH64.
    pub fn check_filter(&self, filter: &CountingFilter) -> Result<(), HdlError> {
        let p = filter.params();
        if !matches!(p.kind, bloomlanes_core::FilterKind::Counting { .. }) {
            return Err(HdlError::Mismatch(format!(
                "the filter is a {} filter; the design is a counting filter",
                p.kind.name()
            )));
        }
        let b = &self.base;
        if p.layout != b.layout
            || p.blocks != b.blocks
            || p.seed != b.seed
            || filter.counter_bits() != self.counter_bits
        {
            return Err(HdlError::Mismatch(format!(
                "filter is {} × {} blocks, seed {}, {}-bit counters; the configuration is {} × {} \
                 blocks, seed {}, {}-bit counters",
                p.layout,
                p.blocks,
                p.seed,
                filter.counter_bits().bits(),
                b.layout,
                b.blocks,
                b.seed,
                self.counter_bits.bits()
            )));
        }
        if p.hash != HashId::Xxh64 {
            return Err(HdlError::Mismatch(format!(
                "filter uses hash {:?}; the hardware computes XXH64",
                p.hash
            )));
        }
        Ok(())
    }
}

/// Generates the RTL and test benches of a counting design.
pub fn generate_counting(cfg: &CountingConfig) -> Result<Design, HdlError> {
    cfg.validate()?;
    let base = &cfg.base;
    let front = front::build(base, &shape(base));
    let g = counting_geo(cfg, &front);
    let mut v = String::new();
    header(&mut v, cfg, &g);
    v.push_str("`default_nettype none\n\n");
    top_module(&mut v, cfg, &g);
    v.push_str("// verilator lint_off DECLFILENAME\n");
    verilog::front_module(&mut v, base, &g, &front);
    verilog::port_module(&mut v, &g);
    bank_module(&mut v, cfg, &g);
    v.push_str("// verilator lint_on DECLFILENAME\n`default_nettype wire\n");
    Ok(Design {
        rtl: v,
        testbench: bench::verilog_bench(&g),
        cpp_harness: bench::cpp_harness(&g),
        top_name: g.top.clone(),
        latency_cycles: g.latency,
        hash_stages: g.hash_stages,
        addr_bits: g.aw,
        fifo_depth: g.fifo_depth,
        bank_files: (0..g.lanes).map(|i| bank_file_name(&g.top, i)).collect(),
    })
}

/// The static design's derived sizes with the counting pipeline's latency, FIFO and
/// management data width (`lanes × c`).
fn counting_geo(cfg: &CountingConfig, front: &Front) -> Geo {
    let mut g = geo(&cfg.base, front);
    g.latency = front.stages + RMW_STAGES + 1;
    g.fifo_bits = ceil_log2(u64::from(g.latency) + 4).max(2);
    g.fifo_depth = 1 << g.fifo_bits;
    g.mg_bits = g.lanes as u32 * cfg.entry_bits();
    g
}

fn header(v: &mut String, cfg: &CountingConfig, g: &Geo) {
    let c = cfg.entry_bits();
    let _ = write!(
        v,
        "// {top}: bloomlanes counting split-block Bloom filter, generated by bloomlanes-hdl {ver}.
// Do not edit: regenerate from the configuration below.
//
// Layout {layout}: {lanes} lanes x {w}-bit words; z = {z} blocks; {c}-bit counters (max {max});
// key input: {key}; seed 0x{seed:016x}. Hash, block index and lane bits as in the static design.
// Lane i is bank i: z*W = {depth} counters of {c} bits, address = {{block, bit}} ({aw} bits);
// entry block*W + bit of bank i is core's counter (block*L + i)*W + bit.
// Port 0: s0_valid/s0_ready, s0_op (0 lookup, 1 insert, 2 delete, 3 no-op), s0_tag, s0_key.
//   Answers in order on m0_valid/m0_ready: m0_hit = lookup: every counter > 0; insert: 1;
//   delete: 1 when accepted (every counter > 0: each - 1), 0 when refused (nothing changed);
//   no-op: 0. A counter at {max} is saturated: an insert leaves it, a delete never lowers it.
// Pipeline: read-modify-write of the key's counters, one operation per clock (II = 1), also on
//   the same counters back to back: the execute stage takes the counters of the previous four
//   operations when they hit the same entry (forwarding), so every operation sees the result of
//   every operation accepted before it. Under backpressure s0_ready (a register) drops only when
//   the {fd}-entry answer FIFO could overflow.
// Latency: {lat} cycles from the accept (s0_valid && s0_ready) to m0_valid.
// mg_*: a request (mg_req held until mg_ack) stops the port, drains the pipeline, then clears
//   every counter (mg_clear), writes mg_wdata (bits c*i+c-1..c*i into bank i) or reads entry
//   mg_addr of every bank into mg_rdata (same packing); busy is high while clearing.
// Bank contents at start: LOAD_BANKS = 1 reads bank i from {file0} .. ($readmemh: one
//   {digits}-digit hex counter per line, entry block*W + bit); otherwise every counter is 0.
// Reset: rst (synchronous, active high) empties the pipeline; the counters stay.
",
        top = g.top,
        ver = env!("CARGO_PKG_VERSION"),
        layout = cfg.base.layout,
        lanes = g.lanes,
        w = g.w,
        z = g.z,
        max = cfg.counter_bits.max(),
        key = cfg.base.key,
        seed = cfg.base.seed,
        depth = g.depth,
        aw = g.aw,
        fd = g.fifo_depth,
        lat = g.latency,
        file0 = bank_file_name(&g.top, 0),
        digits = c / 4,
    );
    v.push('\n');
}

/// Bits `[(i+1)w-1 : iw]`.
fn part(sig: &str, i: usize, w: u32) -> String {
    let lo = i as u32 * w;
    if w == 1 {
        format!("{sig}[{lo}]")
    } else {
        format!("{sig}[{}:{lo}]", lo + w - 1)
    }
}

fn top_module(v: &mut String, cfg: &CountingConfig, g: &Geo) {
    let t = &g.top;
    let (kw, tw, aw, l) = (g.kw, g.tw, g.aw, g.lanes);
    let c = cfg.entry_bits();
    let mb = g.mg_bits;
    let len_port = if g.var_len {
        format!("    input  wire [{}:0] s0_len,\n", LEN_BITS - 1)
    } else {
        String::new()
    };
    let _ = writeln!(
        v,
        "module {t} #(
    parameter LOAD_BANKS = 0
) (
    input  wire clk,
    input  wire rst,
    output wire busy,
    input  wire mg_req,
    input  wire mg_clear,
    input  wire mg_we,
    input  wire [{aw1}:0] mg_addr,
    input  wire [{mb1}:0] mg_wdata,
    output reg  mg_ack,
    output reg  [{mb1}:0] mg_rdata,
    input  wire s0_valid,
    output wire s0_ready,
    input  wire [1:0] s0_op,
    input  wire [{tw1}:0] s0_tag,
    input  wire [{kw1}:0] s0_key,
{len_port}    output wire m0_valid,
    input  wire m0_ready,
    output wire m0_hit,
    output wire [{tw1}:0] m0_tag
);
    localparam [1:0] OP_LOOKUP = 2'd{lk}, OP_INSERT = 2'd{ins}, OP_DELETE = 2'd{del};
    localparam [{aw1}:0] LAST_ADDR = {aw}'d{last};
    wire s0_fire = s0_valid & s0_ready;
    wire f0_valid;
    wire [1:0] f0_op;
    wire [{tw1}:0] f0_tag;
    wire [{la1}:0] f0_addr;
    {t}_front u_front0 (
        .clk(clk), .rst(rst), .i_valid(s0_fire), .i_op(s0_op), .i_tag(s0_tag), .i_key(s0_key){len_conn},
        .o_valid(f0_valid), .o_op(f0_op), .o_tag(f0_tag), .o_addr(f0_addr)
    );
    // ---- read-modify-write. R1: bank read; R2: the banks' read data (rd) is valid; X: execute;
    // Y: result, written to the banks at the end of the cycle; Z, W: the counters written one
    // and two cycles before. The bank data R2 sees lacks the writes of the four operations
    // ahead: X takes the one ahead's counters from Y (x_fw_y: the only one-cycle loop), and R2
    // merges those of the two, three and four ahead (in Y, Z, W; flags r2_m2..4 compared in R1)
    // into x_other, with its zero test (x_other_nz).
    reg r1_valid, r2_valid, x_valid, y_valid, z_valid, y_we, y_res;
    reg [1:0] r1_op, r2_op, x_op;
    reg [{tw1}:0] r1_tag, r2_tag, x_tag, y_tag;
    reg [{la1}:0] r1_addr, r2_addr, x_addr, y_addr, z_addr;
    reg [{l1}:0] r2_m2, r2_m3, r2_m4, x_fw_y, x_other_nz, y_nz;
    reg [{lc1}:0] x_other, y_cnt, z_cnt, w_cnt;
    wire [{lc1}:0] rd;
    wire [{lc1}:0] other_next;
    wire [{l1}:0] other_next_nz;
    wire [{lc1}:0] nxt;
    wire [{l1}:0] nz;
    wire [{l1}:0] nxt_nz;
    wire all_nz = &nz;
    wire x_ins = (x_op == OP_INSERT);
    wire x_del = (x_op == OP_DELETE);
    wire x_dec = x_del & all_nz;",
        aw1 = aw - 1,
        mb1 = mb - 1,
        tw1 = tw - 1,
        kw1 = kw - 1,
        la1 = l as u32 * aw - 1,
        l1 = l - 1,
        lc1 = l as u32 * c - 1,
        lk = op::LOOKUP,
        ins = op::INSERT,
        del = op::DELETE,
        last = g.depth - 1,
        len_conn = if g.var_len { ", .i_len(s0_len)" } else { "" },
    );
    let hi = if c > 2 {
        format!("[{}:1]", c - 1)
    } else {
        "[1]".to_string()
    };
    for lane in 0..l {
        let d = |s: &str| part(s, lane, c);
        let _ = writeln!(
            v,
            "    assign {on} = r2_m2[{lane}] ? {yc} : r2_m3[{lane}] ? {zc} : r2_m4[{lane}] ? {wc} : {rd};
    assign other_next_nz[{lane}] = |{on};
    wire [{c1}:0] cur{lane} = x_fw_y[{lane}] ? {yc} : {xo};
    assign nz[{lane}] = x_fw_y[{lane}] ? y_nz[{lane}] : x_other_nz[{lane}];
    wire sat{lane} = &cur{lane};
    wire [{c1}:0] inc{lane} = sat{lane} ? cur{lane} : cur{lane} + {c}'d1;
    wire [{c1}:0] dec{lane} = sat{lane} ? cur{lane} : cur{lane} - {c}'d1;
    wire [{c1}:0] keep{lane} = x_ins ? inc{lane} : cur{lane};
    assign {nx} = x_dec ? dec{lane} : keep{lane};
    assign nxt_nz[{lane}] = x_ins | (x_dec ? (sat{lane} | (|cur{lane}{hi})) : nz[{lane}]);",
            on = d("other_next"),
            yc = d("y_cnt"),
            zc = d("z_cnt"),
            wc = d("w_cnt"),
            rd = d("rd"),
            xo = d("x_other"),
            nx = d("nxt"),
            c1 = c - 1,
        );
    }
    v.push_str(
        "    always @(posedge clk) begin
        if (rst) begin
            r1_valid <= 1'b0;
            r2_valid <= 1'b0;
            x_valid <= 1'b0;
            y_valid <= 1'b0;
            z_valid <= 1'b0;
            y_we <= 1'b0;
        end else begin
            r1_valid <= f0_valid;
            r2_valid <= r1_valid;
            x_valid <= r2_valid;
            y_valid <= x_valid;
            z_valid <= y_valid;
            y_we <= x_valid & (x_ins | x_dec);
        end
        r1_op <= f0_op;
        r1_tag <= f0_tag;
        r1_addr <= f0_addr;
        r2_op <= r1_op;
        r2_tag <= r1_tag;
        r2_addr <= r1_addr;
        x_op <= r2_op;
        x_tag <= r2_tag;
        x_addr <= r2_addr;
        x_other <= other_next;
        x_other_nz <= other_next_nz;
        y_tag <= x_tag;
        y_addr <= x_addr;
        y_cnt <= nxt;
        y_nz <= nxt_nz;
        y_res <= x_ins | (((x_op == OP_LOOKUP) | x_del) & all_nz);
        z_addr <= y_addr;
        z_cnt <= y_cnt;
        w_cnt <= z_cnt;
",
    );
    for lane in 0..l {
        let a = |s: &str| part(s, lane, aw);
        let (m2, m3, m4, fy) = if cfg.forwarding {
            (
                format!("x_valid & ({} == {})", a("r1_addr"), a("x_addr")),
                format!("y_valid & ({} == {})", a("r1_addr"), a("y_addr")),
                format!("z_valid & ({} == {})", a("r1_addr"), a("z_addr")),
                format!("x_valid & ({} == {})", a("r2_addr"), a("x_addr")),
            )
        } else {
            let off = "1'b0 /* forwarding removed (test design) */".to_string();
            (off.clone(), off.clone(), off.clone(), off)
        };
        let _ = writeln!(
            v,
            "        r2_m2[{lane}] <= {m2};\n        r2_m3[{lane}] <= {m3};\n        r2_m4[{lane}] <= {m4};\n        x_fw_y[{lane}] <= {fy};"
        );
    }
    v.push_str("    end\n");
    let _ = writeln!(
        v,
        "    // ---- management (mg_*) and clear, as in the static design
    reg busy_q;
    reg clearing;
    reg [{aw1}:0] clr_addr;
    reg [1:0] mg_state;
    reg [15:0] mg_cnt;
    reg mg_zero;
    wire mg_idle = (mg_state == 2'd0);
    wire mg_access = (mg_state == 2'd2);
    wire clear_start = mg_access & mg_clear;
    wire clear_done = clearing & (clr_addr == LAST_ADDR);
    wire busy_next = clear_start | (busy_q & ~clear_done);
    // A clear starts in the access state and the FSM waits for its end, so busy is low in the
    // idle state: neither the start nor hold needs the clear's end compare.
    wire mg_start = mg_idle & mg_req & ~mg_ack;
    wire hold = mg_start | ~mg_idle;
    assign busy = busy_q;
    always @(posedge clk) begin
        if (rst) begin
            mg_state <= 2'd0;
            mg_cnt <= 16'd0;
            mg_zero <= 1'b1;
            mg_ack <= 1'b0;
            busy_q <= 1'b0;
            clearing <= 1'b0;
            clr_addr <= {aw}'d0;
        end else begin
            mg_ack <= 1'b0;
            case (mg_state)
                2'd0: if (mg_start) begin
                    mg_state <= 2'd1;
                    mg_cnt <= 16'd{drain};
                    mg_zero <= 1'b0;
                end
                2'd1: if (mg_zero) mg_state <= 2'd2; else begin
                    mg_cnt <= mg_cnt - 16'd1;
                    mg_zero <= (mg_cnt == 16'd1);
                end
                2'd2: begin
                    mg_state <= 2'd3;
                    mg_cnt <= 16'd2;
                    mg_zero <= 1'b0;
                end
                default: if (mg_zero) begin
                    if (~mg_clear | ~busy_q) begin
                        mg_state <= 2'd0;
                        mg_ack <= 1'b1;
                    end
                end else begin
                    mg_cnt <= mg_cnt - 16'd1;
                    mg_zero <= (mg_cnt == 16'd1);
                end
            endcase
            busy_q <= busy_next;
            if (clear_start) begin
                clearing <= 1'b1;
                clr_addr <= {aw}'d0;
            end else if (clearing) begin
                if (clear_done) clearing <= 1'b0;
                else clr_addr <= clr_addr + {aw}'d1;
            end
        end
        if (mg_state == 2'd3 && mg_zero) mg_rdata <= x_other;
    end
    wire b_we = clearing | (mg_access & mg_we & ~mg_clear) | y_we;
    {t}_port u_port0 (
        .clk(clk), .rst(rst), .hold(hold), .s_fire(s0_fire), .s_ready(s0_ready),
        .w_valid(y_valid), .w_hit(y_res), .w_tag(y_tag),
        .m_valid(m0_valid), .m_ready(m0_ready), .m_hit(m0_hit), .m_tag(m0_tag)
    );",
        aw1 = aw - 1,
        drain = g.front_stages + RMW_STAGES,
    );
    for lane in 0..l {
        let a = |s: &str| part(s, lane, aw);
        let d = |s: &str| part(s, lane, c);
        let _ = writeln!(
            v,
            "    {t}_cbank #(.LOAD(LOAD_BANKS), .INIT_FILE(\"{file}\")) u_bank_l{lane} (
        .clk(clk), .we(b_we),
        .waddr(clearing ? clr_addr : mg_access ? mg_addr : {ya}),
        .wdata(clearing ? {c}'d0 : mg_access ? {mw} : {yc}),
        .raddr(mg_access ? mg_addr : {fa}),
        .rdata({rd})
    );",
            file = bank_file_name(t, lane),
            ya = a("y_addr"),
            fa = a("f0_addr"),
            mw = d("mg_wdata"),
            yc = d("y_cnt"),
            rd = d("rd"),
        );
    }
    v.push_str("endmodule\n\n");
}

fn bank_module(v: &mut String, cfg: &CountingConfig, g: &Geo) {
    let style = match cfg.base.ram_style {
        RamStyle::Auto => "",
        RamStyle::Block => " (* ram_style = \"block\" *)",
        RamStyle::Distributed => " (* ram_style = \"distributed\" *)",
        RamStyle::Ultra => " (* ram_style = \"ultra\" *)",
    };
    let c = cfg.entry_bits();
    let _ = writeln!(
        v,
        "// One counter bank: {depth} x {c} bits, one write port and one synchronous read port with an
// output register (the block RAM's own, or the first fabric register). A read
// of the entry written in the same cycle may return either value: the pipeline never uses it
// (it forwards the written counters instead).
module {t}_cbank #(
    parameter LOAD = 0,
    parameter INIT_FILE = \"bank.hex\"
) (
    input  wire clk,
    input  wire we,
    input  wire [{aw1}:0] waddr,
    input  wire [{c1}:0] wdata,
    input  wire [{aw1}:0] raddr,
    output reg  [{c1}:0] rdata
);
    (* no_rw_check *){style} reg [{c1}:0] mem [0:{d1}];
`ifndef SYNTHESIS
    integer i;
    initial for (i = 0; i < {depth}; i = i + 1) mem[i] = {c}'d0;
`endif
    initial if (LOAD != 0) $readmemh(INIT_FILE, mem);
    always @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
    end
    reg [{c1}:0] rd_raw;
    always @(posedge clk) rd_raw <= mem[raddr];
    always @(posedge clk) rdata <= rd_raw;
endmodule
",
        t = g.top,
        depth = g.depth,
        d1 = g.depth - 1,
        aw1 = g.aw - 1,
        c1 = c - 1,
    );
}
