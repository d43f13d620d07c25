//! The spatial answer: the minimum of a key's cells, as a tree of registered compares after Y.

use std::fmt::Write as _;

use super::code::CellCode;
use crate::geo::{ceil_log2, part, Geo};

/// The minimum of the lanes' new cells, registered after each level of a tree of
/// `ceil(log2 L)` stages after Y; the last stage's register is the answer (`w0_ans`: the
/// minimum for a lookup, else the result bit). Binary cells: a compare of two per level.
/// Thermometer codes: the minimum is an AND, so the first stages AND groups of up to four
/// codes (one LUT4 a bit) and the last one only decodes (ECP5, spatial z=64 registered: an AND
/// and the decode in the last stage were a critical path at 4.7 ns).
pub(super) fn min_tree(v: &mut String, g: &Geo, code: CellCode) {
    let (l, c, tw) = (g.lanes, g.cell_bits, g.tw);
    let cw = code.width(c);
    let levels = ceil_log2(l as u64);
    let (c1, cw1, tw1) = (c - 1, cw - 1, tw - 1);
    let _ = writeln!(v, "    reg [{c1}:0] w0_ans;");
    let mut prev: Vec<String> = (0..l).map(|i| part("y_cell", i, cw)).collect();
    let mut at = "y".to_string();
    for k in 1..=levels {
        let last = k == levels;
        // How many codes a node of this stage combines (the last stage: one).
        let fan_in = match code {
            CellCode::Binary => 2,
            CellCode::Thermometer if last => 1,
            CellCode::Thermometer => 4,
        };
        let n = prev.len().div_ceil(fan_in);
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
        for (i, group) in prev.chunks(fan_in).enumerate() {
            let min = match (code, group) {
                (CellCode::Binary, [a, b]) => format!("({b} < {a}) ? {b} : {a}"),
                (CellCode::Binary, _) => unreachable!("binary levels pair their cells"),
                (CellCode::Thermometer, _) => group.join(" & "),
            };
            let _ = writeln!(v, "    wire [{cw1}:0] t{k}_min{i} = {min};");
            if last {
                let min = format!("t{k}_min{i}");
                let ans = match code {
                    CellCode::Binary => min,
                    CellCode::Thermometer => code.decode(&min, 0, c),
                };
                let _ = writeln!(
                    regs,
                    "        w0_ans <= {at}_lookup ? {ans} : {{{c1}'d0, {at}_res}};"
                );
            } else {
                let _ = writeln!(v, "    reg [{cw1}:0] t{k}_m{i};");
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
