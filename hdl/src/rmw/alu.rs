//! The ALU of one lane of the read-modify-write stage: a counter's increment and decrement, a
//! spatial cell's maximum.

use std::fmt::Write as _;

use super::code::CellCode;
use crate::cell::CellAlu;

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
