//! The ALU of one lane of the read-modify-write stage (a counter's increment and decrement, a
//! spatial cell's maximum) and the copies of the counter's decrement decision.

use std::fmt::Write as _;

use super::code::CellCode;
use crate::cell::CellAlu;
use crate::geo::part;

/// The ALU of one lane: `nxt` from `cur<lane>` (and the zero flags `nxt_nz` when carried); a
/// counter decrements when `dec` (its copy of the decision).
#[allow(clippy::too_many_arguments)]
pub(super) fn alu_lane(
    v: &mut String,
    alu: CellAlu,
    code: CellCode,
    flags: bool,
    lane: usize,
    c: u32,
    nxt: &str,
    dec: &str,
) {
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
    assign {nxt} = {dec} ? dec{lane} : keep{lane};
    assign keep_nz[{lane}] = x_ins | nz[{lane}];
    assign nxt_nz[{lane}] = {dec} ? dec_nz[{lane}] : keep_nz[{lane}];"
            );
        }
        CellAlu::Max if code == CellCode::Thermometer => {
            // max(cell, class) of thermometer codes: one OR per bit (one LUT4 with the
            // forwarding multiplexer before it).
            let _ = writeln!(v, "    assign {nxt} = cur{lane} | x_vth;");
            if flags {
                let _ = writeln!(v, "    assign nxt_nz[{lane}] = nz[{lane}] | x_vth[0];");
            }
        }
        CellAlu::Max => {
            // max(cell, class) without a compare in the loop from Y: where the cell comes
            // from Y (`x_fw_y`), "the class is above it" is known a cycle ahead, from the one
            // ahead's decision `y_g`: above its class (`x_gt_pval`) if it raised the cell,
            // else above the cell it found (`x_f`), both registered while it was in X. The
            // loop is then Y -> one multiplexer -> Y; the compares end in registers.
            let _ = writeln!(
                v,
                "    wire g{lane} = x_ins & (x_fw_y[{lane}] ? (y_g[{lane}] ? x_gt_pval : x_f[{lane}]) : (x_val_cp{lane} > {other}));
    assign {nxt} = g{lane} ? x_val_cp{lane} : cur{lane};",
                other = part("x_other", lane, c),
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

/// Copies of the counter's decrement decision `x_dec` and of the registers it reads: copy `k`
/// selects the update of its share of the lanes (ECP5, counting c4 8x32 registered: one
/// decision's LUT drove all 32 counter bits, 0.9–2.2 ns of routing on that net, the critical
/// path of seeds 1–5). Synthesis merges flip-flops of the same input (Yosys 0.23, also with
/// `keep`), but not ones of different initial values, so copy `k` starts at `k mod 2`: two
/// copies. The start value is never used: an operation's decision registers are written
/// before it reaches X, and a stage's `y_dec` matters only to an operation that shares a lane
/// with it, which needs it valid.
pub(super) const DECISION_COPIES: usize = 2;

/// Declares the decision registers of `DECISION_COPIES` copies (`x_pre_fwd`: copy `k`'s
/// groups from bit `k × groups`) and `x_yp`, `all_nz`, `x_dec` of each copy.
pub(super) fn decision_copies(v: &mut String, groups: usize) {
    let k1 = DECISION_COPIES - 1;
    let init = |per_copy: usize| -> String {
        let bits: String = (0..DECISION_COPIES)
            .rev()
            .flat_map(|k| std::iter::repeat_n(if k % 2 == 1 { '1' } else { '0' }, per_copy))
            .collect();
        format!("{}'b{bits}", DECISION_COPIES * per_copy)
    };
    let one = init(1);
    let _ = writeln!(
        v,
        "    // Copies of the decrement decision, each for its share of the lanes, started apart so\n    // that synthesis keeps them (the start value is never used).\n    reg [{k1}:0] x_pre_bank = {one}, x_pa = {one}, x_qa = {one}, x_del = {one}, y_dec = {one};\n    reg [{}:0] x_pre_fwd = {};\n    wire [{k1}:0] x_yp, all_nz, x_dec;",
        DECISION_COPIES * groups - 1,
        init(groups)
    );
    for k in 0..DECISION_COPIES {
        let fwd = part("x_pre_fwd", k, groups as u32);
        let _ = writeln!(
            v,
            "    assign x_yp[{k}] = y_dec[{k}] ? x_pa[{k}] : x_qa[{k}];\n    assign all_nz[{k}] = x_pre_bank[{k}] & (&{fwd}) & x_yp[{k}];\n    assign x_dec[{k}] = x_del[{k}] & all_nz[{k}];"
        );
    }
}
