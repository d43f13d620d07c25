//! The read-modify-write execute stage of port 0, for every ALU that reads the cells it writes
//! (counter, max): one operation per clock, also on the same cells back to back.
//!
//! * R1, R2: the banks' synchronous read and output register; in R2 the read data are merged
//!   with the cells of the operations two, three and four ahead (whose writes the read did not
//!   see) when those hit the same entry (forwarding; the flags are compared in R1 from
//!   registered addresses), and registered.
//! * X (execute): that value, or the cells of the operation one ahead (still in Y), are the
//!   key's current cells; the ALU computes the new cells and the reduction the answer.
//! * Y (result): the new cells, written into the banks at the end of the cycle. A membership
//!   answer goes into the FIFO from here; a minimum is a tree of compares after Y, one level
//!   per stage (lookups do not change the cells, so the new cells are the current ones).
//!
//! The loop from Y back into X is the only one-cycle feedback path. Where the answer or the ALU
//! needs "every cell non-zero" (membership, the counter's delete), the cells' zero flags travel
//! beside them, so that the loop holds one multiplexer, the AND of the lanes and the ALU's
//! multiplexer.

use std::fmt::Write as _;

use crate::cell::{CellAlu, Reduction};
use crate::geo::{ceil_log2, part, Geo};
use crate::pipeline::PipelineConfig;

/// How the execute stage writes the banks: the write enable, the lanes' addresses and cells
/// (`None`: every cell written is the maximum, the write-through set).
pub(crate) struct Update {
    pub we: String,
    pub addr: String,
    pub data: Option<String>,
}

/// Emits the execute stage; its answer is `w0_valid`, `w0_ans`, `w0_tag` and its read data
/// `rd0`.
pub(crate) fn execute(v: &mut String, cfg: &PipelineConfig, g: &Geo) -> Update {
    let cells = cfg.cells;
    let (tw, aw, l, c, vw) = (g.tw, g.aw, g.lanes, g.cell_bits, g.value_bits);
    let flags = cells.reduction == Reduction::AllNonZero || cells.alu == CellAlu::Counter;
    let (l1, c1) = (l - 1, c - 1);
    let la1 = l as u32 * aw - 1;
    let lc1 = l as u32 * c - 1;
    let _ = writeln!(
        v,
        "    // ---- read-modify-write. R1: bank read; R2: the banks' read data (rd0) is valid; X: execute;
    // Y: result, written to the banks at the end of the cycle; Z, W: the cells written one and
    // two cycles before. The bank data R2 sees lacks the writes of the four operations ahead:
    // X takes the one ahead's cells from Y (x_fw_y: the only one-cycle loop), and R2 merges
    // those of the two, three and four ahead (in Y, Z, W; flags r2_m2..4 compared in R1) into
    // x_other.
    reg r1_valid, r2_valid, x_valid, y_valid, z_valid, y_we;
    reg [1:0] r1_op, r2_op, x_op;
    reg [{tw1}:0] r1_tag, r2_tag, x_tag, y_tag;
    reg [{la1}:0] r1_addr, r2_addr, x_addr, y_addr, z_addr;
    reg [{l1}:0] r2_m2, r2_m3, r2_m4, x_fw_y;
    reg [{lc1}:0] x_other, y_cell, z_cell, w_cell;
    wire [{lc1}:0] rd0;
    wire [{lc1}:0] other_next;
    wire [{lc1}:0] nxt;
    wire x_ins = (x_op == OP_INSERT);
    wire x_lookup = (x_op == OP_LOOKUP);",
        tw1 = tw - 1,
    );
    if vw > 0 {
        let _ = writeln!(v, "    reg [{}:0] r1_val, r2_val, x_val;", vw - 1);
    }
    match cells.reduction {
        Reduction::AllNonZero => v.push_str("    reg y_ans;\n"),
        Reduction::Min => v.push_str("    reg y_lookup, y_res;\n"),
        Reduction::Retrieve { .. } => unreachable!("a retrieval reads without writing"),
    }
    if flags {
        let _ = writeln!(
            v,
            "    reg [{l1}:0] x_other_nz, y_nz;\n    wire [{l1}:0] other_next_nz;\n    wire [{l1}:0] nz;\n    wire [{l1}:0] nxt_nz;\n    wire all_nz = &nz;"
        );
    }
    let (we, answer, result) = match cells.alu {
        CellAlu::Counter => {
            v.push_str("    wire x_del = (x_op == OP_DELETE);\n    wire x_dec = x_del & all_nz;\n");
            (
                "x_ins | x_dec",
                "x_ins | ((x_lookup | x_del) & all_nz)",
                "x_ins | x_dec",
            )
        }
        CellAlu::Max => ("x_ins", "x_lookup & all_nz", "1'b0"),
        CellAlu::SetBit | CellAlu::Fixed => unreachable!("write-through ALUs do not read"),
    };
    for lane in 0..l {
        let d = |s: &str| part(s, lane, c);
        let _ = writeln!(
            v,
            "    assign {on} = r2_m2[{lane}] ? {yc} : r2_m3[{lane}] ? {zc} : r2_m4[{lane}] ? {wc} : {rd};\n    wire [{c1}:0] cur{lane} = x_fw_y[{lane}] ? {yc} : {xo};",
            on = d("other_next"),
            yc = d("y_cell"),
            zc = d("z_cell"),
            wc = d("w_cell"),
            rd = d("rd0"),
            xo = d("x_other"),
        );
        if flags {
            let _ = writeln!(
                v,
                "    assign other_next_nz[{lane}] = |{on};\n    assign nz[{lane}] = x_fw_y[{lane}] ? y_nz[{lane}] : x_other_nz[{lane}];",
                on = d("other_next")
            );
        }
        alu_lane(v, cells.alu, flags, lane, c, &d("nxt"));
    }
    let _ = writeln!(
        v,
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
            y_we <= x_valid & ({we});
        end
        r1_op <= f0_op;
        r1_tag <= f0_tag[{tw1}:0];
        r1_addr <= f0_addr;
        r2_op <= r1_op;
        r2_tag <= r1_tag;
        r2_addr <= r1_addr;
        x_op <= r2_op;
        x_tag <= r2_tag;
        x_addr <= r2_addr;
        x_other <= other_next;
        y_tag <= x_tag;
        y_addr <= x_addr;
        y_cell <= nxt;
        z_addr <= y_addr;
        z_cell <= y_cell;
        w_cell <= z_cell;",
        tw1 = tw - 1,
    );
    if vw > 0 {
        let _ = writeln!(
            v,
            "        r1_val <= f0_tag[{}:{tw}];\n        r2_val <= r1_val;\n        x_val <= r2_val;",
            tw + vw - 1
        );
    }
    if flags {
        v.push_str("        x_other_nz <= other_next_nz;\n        y_nz <= nxt_nz;\n");
    }
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
    match cells.reduction {
        Reduction::AllNonZero => {
            let _ = writeln!(
                v,
                "        y_ans <= {answer};\n    end\n    wire w0_valid = y_valid;\n    wire w0_ans = y_ans;\n    wire [{}:0] w0_tag = y_tag;",
                tw - 1
            );
        }
        Reduction::Min => {
            let _ = writeln!(
                v,
                "        y_lookup <= x_lookup;\n        y_res <= {result};\n    end"
            );
            min_tree(v, g);
        }
        Reduction::Retrieve { .. } => unreachable!("a retrieval reads without writing"),
    }
    Update {
        we: "y_we".into(),
        addr: "y_addr".into(),
        data: Some("y_cell".into()),
    }
}

/// The ALU of one lane: `nxt` from `cur<lane>` (and the zero flags `nxt_nz` when carried).
fn alu_lane(v: &mut String, alu: CellAlu, flags: bool, lane: usize, c: u32, nxt: &str) {
    let c1 = c - 1;
    match alu {
        CellAlu::Counter => {
            // A saturated counter never changes; a decrement leaves a counter non-zero when it
            // was saturated or at least 2.
            let _ = writeln!(
                v,
                "    wire sat{lane} = &cur{lane};
    wire [{c1}:0] inc{lane} = sat{lane} ? cur{lane} : cur{lane} + {c}'d1;
    wire [{c1}:0] dec{lane} = sat{lane} ? cur{lane} : cur{lane} - {c}'d1;
    wire [{c1}:0] keep{lane} = x_ins ? inc{lane} : cur{lane};
    assign {nxt} = x_dec ? dec{lane} : keep{lane};
    assign nxt_nz[{lane}] = x_ins | (x_dec ? (sat{lane} | (|cur{lane}[{c1}:1])) : nz[{lane}]);"
            );
        }
        CellAlu::Max => {
            let _ = writeln!(
                v,
                "    assign {nxt} = (x_ins & (x_val > cur{lane})) ? x_val : cur{lane};"
            );
            if flags {
                let _ = writeln!(
                    v,
                    "    assign nxt_nz[{lane}] = nz[{lane}] | (x_ins & (|x_val));"
                );
            }
        }
        CellAlu::SetBit | CellAlu::Fixed => unreachable!("write-through ALUs do not read"),
    }
}

/// The minimum of the lanes' new cells, one level of compares per stage after Y; the last
/// level's register is the answer (`w0_ans`: the minimum for a lookup, else the result bit).
fn min_tree(v: &mut String, g: &Geo) {
    let (l, c, tw) = (g.lanes, g.cell_bits, g.tw);
    let levels = ceil_log2(l as u64);
    let (c1, tw1) = (c - 1, tw - 1);
    let _ = writeln!(v, "    reg [{c1}:0] w0_ans;");
    let mut prev: Vec<String> = (0..l).map(|i| part("y_cell", i, c)).collect();
    let mut at = "y".to_string();
    for k in 1..=levels {
        let n = 1 << (levels - k);
        let last = k == levels;
        let mut regs = String::new();
        let _ = writeln!(
            v,
            "    // min tree, level {k}\n    reg t{k}_valid;\n    reg [{tw1}:0] t{k}_tag;"
        );
        if !last {
            let _ = writeln!(v, "    reg t{k}_lookup, t{k}_res;");
            let _ = writeln!(
                regs,
                "        t{k}_lookup <= {at}_lookup;\n        t{k}_res <= {at}_res;"
            );
        }
        for i in 0..n {
            let (a, b) = (&prev[2 * i], &prev[2 * i + 1]);
            let _ = writeln!(
                v,
                "    wire [{c1}:0] t{k}_min{i} = ({b} < {a}) ? {b} : {a};"
            );
            if last {
                let _ = writeln!(
                    regs,
                    "        w0_ans <= {at}_lookup ? t{k}_min{i} : {{{c1}'d0, {at}_res}};"
                );
            } else {
                let _ = writeln!(v, "    reg [{c1}:0] t{k}_m{i};");
                let _ = writeln!(regs, "        t{k}_m{i} <= t{k}_min{i};");
            }
        }
        let _ = writeln!(
            v,
            "    always @(posedge clk) begin\n        if (rst) t{k}_valid <= 1'b0;\n        else t{k}_valid <= {at}_valid;\n        t{k}_tag <= {at}_tag;\n{regs}    end"
        );
        prev = (0..n).map(|i| format!("t{k}_m{i}")).collect();
        at = format!("t{k}");
    }
    let _ = writeln!(
        v,
        "    wire w0_valid = {at}_valid;\n    wire [{tw1}:0] w0_tag = {at}_tag;"
    );
}
