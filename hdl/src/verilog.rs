//! Verilog-2005 text generation.

use std::fmt::Write as _;

use bloomlanes_core::SALTS;

use crate::front::{self, Front, Shape, LEN_BITS};
use crate::{axis, bank_file_name, bench, board, kit, op, Design, HdlConfig, KeyMode, RamStyle};

/// Derived sizes of a configuration.
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
    }
}

pub(crate) fn generate(cfg: &HdlConfig) -> Design {
    let front = front::build(cfg, &shape(cfg));
    let g = geo(cfg, &front);
    let mut v = String::new();
    header(&mut v, cfg, &g);
    v.push_str("`default_nettype none\n\n");
    top_module(&mut v, &g);
    // One file holds every module of the design; only the top module is named after it.
    v.push_str("// verilator lint_off DECLFILENAME\n");
    front_module(&mut v, cfg, &g, &front);
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
    }
}

/// The files of the build and verification kit, as (path relative to the export folder, text).
pub(crate) fn kit_files(cfg: &HdlConfig) -> Vec<(String, String)> {
    let front = front::build(cfg, &shape(cfg));
    let g = geo(cfg, &front);
    let t = &g.top;
    let mut files = vec![
        (format!("{t}_board.v"), board::board_tops(cfg, &g)),
        (format!("{t}_axis.v"), axis::axis_module(cfg, &g)),
        ("Makefile".to_string(), board::makefile(cfg, &g)),
        (
            "fpga/hx8k_breakout.pcf".to_string(),
            board::pcf_hx8k_breakout(),
        ),
        ("fpga/ulx3s.lpf".to_string(), board::lpf_ulx3s()),
        ("fpga/fmax.sh".to_string(), board::fmax_script()),
    ];
    files.extend(kit::files(cfg, &g));
    files
}

fn header(v: &mut String, cfg: &HdlConfig, g: &Geo) {
    let top = &g.top;
    let key = match cfg.key {
        KeyMode::Bytes(n) => format!(
            "{n}-byte keys (s<p>_key[{}:0], byte i = bits 8i+7..8i), hashed on chip by XXH64 \
             (seed 0x{:016x}) in {} pipeline stages",
            8 * n - 1,
            cfg.seed,
            g.hash_stages
        ),
        KeyMode::VarBytes(n) => format!(
            "keys of 0 to {n} bytes (s<p>_key[{}:0], byte i = bits 8i+7..8i; s<p>_len[6:0] = \
             the length, bytes at and above it ignored), hashed on chip by XXH64 (seed \
             0x{:016x}) in {} pipeline stages, one key per clock whatever the length",
            8 * n - 1,
            cfg.seed,
            g.hash_stages
        ),
        KeyMode::Prehashed => format!(
            "prehashed: s<p>_key[63:0] is the 64-bit XXH64 hash of the key (seed 0x{:016x} on the host)",
            cfg.seed
        ),
    };
    let _ = write!(
        v,
        "// {top}: bloomlanes split-block Bloom filter, generated by bloomlanes-hdl {ver}.
// Do not edit: regenerate from the configuration below.
//
// Layout {layout}: {lanes} lanes x {w}-bit words; z = {z} blocks; {key}.
// Block index = ((h >> 32) * z) >> 32; lane i bit = ((h[31:0] * SALT_i) mod 2^32) >> {shift}
// (constants from bloomlanes-core). Parallel-partitioned: lane i is bank i, 1 bit wide,
// z*W = {depth} entries, address = block*W + bit = {{block, bit}} ({aw} bits). An insert writes 1
// into every bank; a lookup reads one bit of every bank and ANDs them.
// Timing: every multiply is registered partial products and a pipelined adder tree (adders of
// at most {adder} bits per stage); the bank outputs are registered twice (block RAM output
// register, then a fabric register) before the registered AND of the lanes.
//
// Ports: {ports} stream port(s) with valid/ready handshakes (AXI4-Stream style; see
// {top}_axis for the AXI4-Stream and AXI4-Lite wrapper, when exported).
//   Port 0: s0_valid/s0_ready, s0_op (0 lookup, 1 insert, 2 clear, 3 no-op), s0_tag, s0_key.
//   Ports 1..: lookups only (no op input). Every port p answers on m<p>_valid/m<p>_ready with
//   m<p>_hit (1 = may be present; always 0 for insert, clear and no-op) and m<p>_tag, one answer
//   per accepted operation, in order. Port 0 uses port A of the dual-port banks, port 1 port B;
//   ports 2.. each add a replica of every bank ({replicas} replica(s)): a replica's port A is
//   written by port 0's inserts and clears, its port B serves one lookup port.
// Throughput: one operation per clock per port (II = 1), also under backpressure: s<p>_ready is
//   a register that drops only when the port's {fd}-entry answer FIFO (the skid buffer that holds
//   every operation in flight) could overflow; with m<p>_ready high it never drops.
// Latency: {lat} cycles from the cycle an operation is accepted (s<p>_valid && s<p>_ready) to the
//   first cycle its answer is offered (m<p>_valid); the bank read/write happens {mem} cycles
//   after acceptance (input register, {hs} hash stage(s), index stages, address register).
// Read-after-write: on port 0 there is no restriction: operations are applied in order, so a
//   lookup accepted in any cycle after an insert sees it (no forwarding needed: both pass the
//   same pipeline and the banks are written before the next read). A lookup on port p >= 1 sees
//   an insert on port 0 if it is accepted in a strictly later cycle than the insert (every port
//   has the same latency); one accepted in the same cycle is answered from the contents before
//   the insert.
// Clear (op 2 on port 0): operations accepted before it, or in the same cycle on other ports,
//   are answered from the contents before the clear. From the cycle after the clear is accepted,
//   busy is high and every s<p>_ready low until all {depth} entries of every bank are zero
//   (about {clr} cycles in all); its answer (hit 0) is offered like any other. rst does not clear.
// Bank contents at start: parameter LOAD_BANKS = 1 makes bank i read {file0} .. (one
//   $readmemh file per lane: one hex digit 0/1 per line, entry block*W + bit) from the
//   working folder; otherwise the banks start empty.
// Reset: rst (synchronous, active high) empties the pipelines; hold it for 2 cycles or more.
",
        ver = env!("CARGO_PKG_VERSION"),
        layout = cfg.layout,
        lanes = g.lanes,
        w = g.w,
        z = g.z,
        shift = cfg.layout.lane_shift(),
        depth = g.depth,
        aw = g.aw,
        adder = cfg.adder_bits,
        ports = g.ports,
        replicas = g.replicas,
        fd = g.fifo_depth,
        lat = g.latency,
        mem = g.front_stages,
        hs = g.hash_stages,
        clr = u64::from(g.front_stages) + 1 + g.depth,
        file0 = bank_file_name(top, 0),
    );
    v.push('\n');
}

fn top_module(v: &mut String, g: &Geo) {
    let t = &g.top;
    let (kw, tw, aw, l) = (g.kw, g.tw, g.aw, g.lanes);
    let _ = writeln!(v, "module {t} #(\n    parameter LOAD_BANKS = 0\n) (");
    let mut ports = vec![
        "    input  wire clk".to_string(),
        "    input  wire rst".to_string(),
        "    output wire busy".to_string(),
        "    input  wire mg_req".to_string(),
        "    input  wire mg_clear".to_string(),
        "    input  wire mg_we".to_string(),
        format!("    input  wire [{}:0] mg_addr", aw - 1),
        format!("    input  wire [{}:0] mg_wdata", l - 1),
        "    output reg  mg_ack".to_string(),
        format!("    output reg  [{}:0] mg_rdata", l - 1),
    ];
    for p in 0..g.ports {
        ports.push(format!("    input  wire s{p}_valid"));
        ports.push(format!("    output wire s{p}_ready"));
        if p == 0 {
            ports.push("    input  wire [1:0] s0_op".to_string());
        }
        ports.push(format!("    input  wire [{}:0] s{p}_tag", tw - 1));
        ports.push(format!("    input  wire [{}:0] s{p}_key", kw - 1));
        if g.var_len {
            ports.push(format!("    input  wire [{}:0] s{p}_len", LEN_BITS - 1));
        }
        ports.push(format!("    output wire m{p}_valid"));
        ports.push(format!("    input  wire m{p}_ready"));
        ports.push(format!("    output wire m{p}_hit"));
        ports.push(format!("    output wire [{}:0] m{p}_tag", tw - 1));
    }
    v.push_str(&ports.join(",\n"));
    v.push_str("\n);\n");
    let _ = writeln!(
        v,
        "    localparam [1:0] OP_LOOKUP = 2'd{}, OP_INSERT = 2'd{}, OP_CLEAR = 2'd{};",
        op::LOOKUP,
        op::INSERT,
        op::CLEAR
    );
    let _ = writeln!(
        v,
        "    localparam [{}:0] LAST_ADDR = {aw}'d{};\n",
        aw - 1,
        g.depth - 1
    );
    // Clear FSM signals.
    let _ = writeln!(
        v,
        "    reg busy_q;\n    reg clearing;\n    reg [{}:0] clr_addr;\n    // Management access (mg_*): idle, drain the pipelines, access port A, wait for the data.\n    reg [1:0] mg_state;\n    reg [15:0] mg_cnt;\n    reg mg_zero;  // mg_cnt == 0, kept in a register (no wide compare before the FSM)\n    wire mg_idle = (mg_state == 2'd0);\n    wire mg_access = (mg_state == 2'd2);",
        aw - 1
    );
    for p in 0..g.ports {
        let _ = writeln!(
            v,
            "    // ---- port {p}\n    wire s{p}_fire = s{p}_valid & s{p}_ready;\n    wire f{p}_valid;\n    wire [1:0] f{p}_op;\n    wire [{}:0] f{p}_tag;\n    wire [{}:0] f{p}_addr;",
            tw - 1,
            l as u32 * aw - 1
        );
        let op_in = if p == 0 {
            "s0_op".to_string()
        } else {
            "OP_LOOKUP".to_string()
        };
        let len_conn = if g.var_len {
            format!(", .i_len(s{p}_len)")
        } else {
            String::new()
        };
        let _ = writeln!(
            v,
            "    {t}_front u_front{p} (\n        .clk(clk), .rst(rst), .i_valid(s{p}_fire), .i_op({op_in}), .i_tag(s{p}_tag), .i_key(s{p}_key){len_conn},\n        .o_valid(f{p}_valid), .o_op(f{p}_op), .o_tag(f{p}_tag), .o_addr(f{p}_addr)\n    );"
        );
        // Memory stages: bank read register (r1), bank output register (r2), AND register (w).
        let _ = writeln!(
            v,
            "    reg r{p}_valid1, r{p}_valid2, w{p}_valid;\n    reg r{p}_lookup1, r{p}_lookup2, w{p}_hit;\n    reg [{tw1}:0] r{p}_tag1, r{p}_tag2, w{p}_tag;\n    wire [{}:0] r{p}_bits;",
            l - 1,
            tw1 = tw - 1
        );
        let _ = writeln!(
            v,
            "    always @(posedge clk) begin\n        if (rst) begin\n            r{p}_valid1 <= 1'b0;\n            r{p}_valid2 <= 1'b0;\n            w{p}_valid <= 1'b0;\n        end else begin\n            r{p}_valid1 <= f{p}_valid;\n            r{p}_valid2 <= r{p}_valid1;\n            w{p}_valid <= r{p}_valid2;\n        end\n        r{p}_lookup1 <= (f{p}_op == OP_LOOKUP);\n        r{p}_lookup2 <= r{p}_lookup1;\n        w{p}_hit <= r{p}_lookup2 & (&r{p}_bits);\n        r{p}_tag1 <= f{p}_tag;\n        r{p}_tag2 <= r{p}_tag1;\n        w{p}_tag <= r{p}_tag2;\n    end"
        );
        let _ = writeln!(
            v,
            "    {t}_port u_port{p} (\n        .clk(clk), .rst(rst), .hold(hold), .s_fire(s{p}_fire), .s_ready(s{p}_ready),\n        .w_valid(w{p}_valid), .w_hit(w{p}_hit), .w_tag(w{p}_tag),\n        .m_valid(m{p}_valid), .m_ready(m{p}_ready), .m_hit(m{p}_hit), .m_tag(m{p}_tag)\n    );\n"
        );
    }
    // Clear control.
    let _ = writeln!(
        v,
        "    // ---- clear: starts the cycle after the clear reaches the banks, one entry per cycle
    wire clear_fire = s0_fire & (s0_op == OP_CLEAR);
    wire clear_start = (f0_valid & (f0_op == OP_CLEAR)) | (mg_access & mg_clear);
    wire clear_done = clearing & (clr_addr == LAST_ADDR);
    wire busy_next = clear_fire | (mg_access & mg_clear) | (busy_q & ~clear_done);
    wire mg_start = mg_idle & mg_req & ~mg_ack & ~busy_next;
    wire hold = busy_next | mg_start | ~mg_idle;
    // mg_*: a request (mg_req held until mg_ack) stops every port, waits until operations in
    // flight have passed the banks, then clears (mg_clear), writes mg_wdata (bit i into lane
    // i's bank, every replica) or reads (mg_rdata) entry mg_addr; mg_ack pulses when done.
    always @(posedge clk) begin
        if (rst) begin
            mg_state <= 2'd0;
            mg_cnt <= 16'd0;
            mg_zero <= 1'b1;
            mg_ack <= 1'b0;
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
                    mg_cnt <= 16'd{mem};
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
        end
        if (mg_state == 2'd3 && mg_zero) mg_rdata <= r0_bits;
    end
    assign busy = busy_q;
    always @(posedge clk) begin
        if (rst) begin
            busy_q <= 1'b0;
            clearing <= 1'b0;
            clr_addr <= {aw}'d0;
        end else begin
            busy_q <= busy_next;
            if (clear_start) begin
                clearing <= 1'b1;
                clr_addr <= {aw}'d0;
            end else if (clearing) begin
                if (clear_done) clearing <= 1'b0;
                else clr_addr <= clr_addr + {aw}'d1;
            end
        end
    end
    // ---- bank port A (all replicas): port 0's inserts and the clear; port 0's lookups read replica 0
    wire a_we = clearing | (mg_access & mg_we & ~mg_clear) | (f0_valid & (f0_op == OP_INSERT));",
        drain = g.front_stages + 2,
        mem = MEM_STAGES - 2,
    );
    for lane in 0..l {
        let _ = writeln!(
            v,
            "    wire a_din{lane} = clearing ? 1'b0 : mg_access ? mg_wdata[{lane}] : 1'b1;\n    wire [{}:0] a_addr{lane} = clearing ? clr_addr : mg_access ? mg_addr : f0_addr[{}:{}];",
            aw - 1,
            (lane as u32 + 1) * aw - 1,
            lane as u32 * aw
        );
    }
    // Banks.
    for r in 0..g.replicas {
        let b_port = if r == 0 { 1 } else { r + 1 };
        let has_b = b_port < g.ports;
        let read_a = r == 0;
        let module = bank_module_name(t, read_a, has_b);
        for lane in 0..l {
            let mut conns = vec![
                ".clk(clk)".to_string(),
                ".a_we(a_we)".to_string(),
                format!(".a_din(a_din{lane})"),
                format!(".a_addr(a_addr{lane})"),
            ];
            if read_a {
                conns.push(format!(".a_dout(r0_bits[{lane}])"));
            }
            if has_b {
                conns.push(format!(
                    ".b_addr(f{b_port}_addr[{}:{}])",
                    (lane as u32 + 1) * aw - 1,
                    lane as u32 * aw
                ));
                conns.push(format!(".b_dout(r{b_port}_bits[{lane}])"));
            }
            let _ = writeln!(
                v,
                "    {module} #(.LOAD(LOAD_BANKS), .INIT_FILE(\"{}\")) u_bank_r{r}_l{lane} (\n        {}\n    );",
                bank_file_name(t, lane),
                conns.join(", ")
            );
        }
    }
    v.push_str("endmodule\n\n");
}

pub(crate) fn bank_module_name(top: &str, read_a: bool, has_b: bool) -> String {
    format!(
        "{top}_bank_{}{}",
        if read_a { "rw" } else { "w" },
        if has_b { "_r" } else { "" }
    )
}

fn front_module(v: &mut String, cfg: &HdlConfig, g: &Geo, front: &Front) {
    let t = &g.top;
    let (kw, tw, aw, l) = (g.kw, g.tw, g.aw, g.lanes);
    let len_port = if g.var_len {
        format!("    input  wire [{}:0] i_len,\n", LEN_BITS - 1)
    } else {
        String::new()
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
    output wire [{}:0] o_tag,
    output wire [{}:0] o_addr
);
    // Partial products keep only the bits that reach the result; the rest is unused on purpose.
    /* verilator lint_off UNUSEDSIGNAL */",
        front.stages,
        tw - 1,
        kw - 1,
        tw - 1,
        l as u32 * aw - 1,
        salts = SALTS[..l]
            .iter()
            .map(|s| format!("{s:08x}"))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let _ = cfg;
    v.push_str(&front.body);
    v.push_str("    /* verilator lint_on UNUSEDSIGNAL */\nendmodule\n\n");
}

fn port_module(v: &mut String, g: &Geo) {
    let t = &g.top;
    let tw = g.tw;
    let fb = g.fifo_bits;
    let _ = writeln!(
        v,
        "// Answer FIFO of one port ({d} entries) with credit counting: s_ready is a register that stays
// high while every operation in flight is sure of a FIFO entry, so no stage ever stalls. The
// credit test reads registers only: acc counts accepted operations, rp dequeued ones, occ_r
// holds acc - rp one cycle late, and occ_r <= {d}-3 leaves room for the operations accepted in
// the cycle occ_r lags, in this cycle and in the next one.
module {t}_port (
    input  wire clk,
    input  wire rst,
    input  wire hold,
    input  wire s_fire,
    output reg  s_ready,
    input  wire w_valid,
    input  wire w_hit,
    input  wire [{tw1}:0] w_tag,
    output wire m_valid,
    input  wire m_ready,
    output wire m_hit,
    output wire [{tw1}:0] m_tag
);
    reg [{tw}:0] mem [0:{d1}];
    reg [{fb}:0] wp;
    reg [{fb}:0] rp;
    reg [{fb}:0] acc;
    wire deq = m_valid & m_ready;
    reg [{fb}:0] occ_r;
    assign m_valid = (wp != rp);
    assign m_hit = mem[rp[{fb1}:0]][{tw}];
    assign m_tag = mem[rp[{fb1}:0]][{tw1}:0];
    always @(posedge clk) begin
        if (w_valid) mem[wp[{fb1}:0]] <= {{w_hit, w_tag}};
    end
    always @(posedge clk) begin
        if (rst) begin
            wp <= {fbp}'d0;
            rp <= {fbp}'d0;
            acc <= {fbp}'d0;
            occ_r <= {fbp}'d0;
            s_ready <= 1'b0;
        end else begin
            if (w_valid) wp <= wp + {fbp}'d1;
            if (deq) rp <= rp + {fbp}'d1;
            if (s_fire) acc <= acc + {fbp}'d1;
            occ_r <= acc - rp;
            s_ready <= ~hold & (occ_r <= {fbp}'d{d3});
        end
    end
endmodule
",
        d = g.fifo_depth,
        d1 = g.fifo_depth - 1,
        d3 = g.fifo_depth - 3,
        tw1 = tw - 1,
        fb1 = fb - 1,
        fbp = fb + 1,
    );
}

fn bank_modules(v: &mut String, cfg: &HdlConfig, g: &Geo) {
    let t = &g.top;
    let style = match cfg.ram_style {
        RamStyle::Auto => "",
        RamStyle::Block => " (* ram_style = \"block\" *)",
        RamStyle::Distributed => " (* ram_style = \"distributed\" *)",
        RamStyle::Ultra => " (* ram_style = \"ultra\" *)",
    };
    let mut kinds = Vec::new();
    for r in 0..g.replicas {
        let b_port = if r == 0 { 1 } else { r + 1 };
        let k = (r == 0, b_port < g.ports);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    for (read_a, has_b) in kinds {
        let name = bank_module_name(t, read_a, has_b);
        let aw1 = g.aw - 1;
        let mut ports = vec![
            "    input  wire clk".to_string(),
            "    input  wire a_we".to_string(),
            "    input  wire a_din".to_string(),
            format!("    input  wire [{aw1}:0] a_addr"),
        ];
        if read_a {
            ports.push("    output reg  a_dout".to_string());
        }
        if has_b {
            ports.push(format!("    input  wire [{aw1}:0] b_addr"));
            ports.push("    output reg  b_dout".to_string());
        }
        let desc = match (read_a, has_b) {
            (true, true) => "port A read/write (no-change read), port B read",
            (true, false) => "one read/write port (no-change read)",
            (false, true) => "port A write, port B read",
            (false, false) => "port A write",
        };
        let _ = writeln!(
            v,
            "// One bank: {depth} x 1 bit, {desc}; synchronous reads (block RAM) and an output
// register (the block RAM's own, or the first fabric register).
module {name} #(
    parameter LOAD = 0,
    parameter INIT_FILE = \"bank.hex\"
) (
{ports}
);
    (* no_rw_check *){style} reg mem [0:{d1}];
`ifndef SYNTHESIS
    integer i;
    initial for (i = 0; i < {depth}; i = i + 1) mem[i] = 1'b0;
`endif
    initial if (LOAD != 0) $readmemh(INIT_FILE, mem);",
            depth = g.depth,
            d1 = g.depth - 1,
            ports = ports.join(",\n"),
        );
        if read_a {
            v.push_str(
                "    reg a_rd;\n    always @(posedge clk) begin\n        if (a_we) mem[a_addr] <= a_din;\n        else a_rd <= mem[a_addr];\n    end\n    always @(posedge clk) a_dout <= a_rd;\n",
            );
        } else {
            v.push_str("    always @(posedge clk) begin\n        if (a_we) mem[a_addr] <= a_din;\n    end\n");
        }
        if has_b {
            v.push_str("    reg b_rd;\n    always @(posedge clk) b_rd <= mem[b_addr];\n    always @(posedge clk) b_dout <= b_rd;\n");
        }
        v.push_str("endmodule\n\n");
    }
}
