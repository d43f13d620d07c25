//! The read-modify-write execute stage of port 0, for every ALU that reads the cells it writes
//! (counter, max): one operation per clock, also on the same cells back to back.
//!
//! * R1, R2: the banks' synchronous read and output register; in R2 the read data are merged
//!   with the cells of the operations two, three and four ahead (whose writes the read did not
//!   see) when those hit the same entry (forwarding; the flags are compared in R1 from
//!   registered addresses), and registered.
//!   With registered banks the read takes four cycles (R1 the read address registered at the
//!   memory, then the read, the memory's output register and a fabric register) and the write
//!   one more; the address register delays the read and every stage after it alike, so R4
//!   merges the two to six ahead. There each flag is compared in two halves: the upper
//!   address bits in R1, two a LUT4 (`r2_h*`), the lower ones in R2.
//! * X (execute): that value, or the cells of the operation one ahead (still in Y), are the
//!   key's current cells; the ALU computes the new cells and the reduction the answer.
//! * Y (result): the new cells, written into the banks at the end of the cycle. A membership
//!   answer goes into the FIFO from here; a minimum is a tree of compares after Y, one level
//!   per stage (lookups do not change the cells, so the new cells are the current ones).
//! * 4-bit spatial classes behind registered banks travel from the read to the write as
//!   thermometer codes (`code`): the ALU is an OR, the merge an OR, the minimum an AND.
//!
//! The loop from Y back into X is the only one-cycle feedback path. Where the answer or the ALU
//! needs "every cell non-zero" (membership, the counter's delete), the cells' zero flags travel
//! beside them, and the flag `all_nz` of the operation in X is an AND of registers, so that
//! neither the lanes' multiplexer nor their AND is in the loop (a cycle early, Rn already knows
//! which lanes the operation shares with the one ahead: `rn_f1`, compared in R(n-1); with a
//! read of three cycles every flag is compared in R(n-2), and R(n-1) merges the zero flags of
//! the three to (m + 2)th ahead into `rn_far`):
//!
//! * `x_pre_bank` and `x_pre_fwd` (by groups of four lanes), registered in Rn: every lane it
//!   does not share with the one ahead is non-zero, split by where the lane's flag comes from:
//!   the banks' read data (OR of the cells) or a stage ahead's carried flag (Y .. U), so that
//!   neither cone holds both the OR and the forwarding multiplexer;
//! * `x_yp`: every lane it shares is non-zero after the one ahead's update. That update depends
//!   on the one ahead's own `all_nz` (a counter decrements only then), so both candidates are
//!   registered in X beside the loop (`x_pa` decremented, `x_qa` not) and the one ahead's
//!   registered decision `y_dec` picks one: the loop `y_dec` → `x_dec` → `y_dec` is one LUT.
//! * A counter's decision `x_dec` selects every counter bit's update: it and the registers it
//!   reads are kept in two copies, each deciding for half of the lanes (`DECISION_COPIES`).
//!
//! ECP5-85k, counting c4 8x32 with registered banks, medians of seeds 1-3 / 4-6: 178.00 /
//! 173.13 MHz before (the loop's multiplexer and lane AND, 4 LUT levels, then a fan-out to every
//! counter bit), 179.28 / 188.25 after (hdl/REPORT.md, "Counting at 180 MHz"); with the decision
//! in two copies 191.61 / 190.69 ("Answer stage and counting fan-out").

use std::fmt::Write as _;

use split::{early_split, early_split_within};

use crate::cell::{CellAlu, Reduction};
use crate::geo::{bits, part, Geo};
use crate::pipeline::PipelineConfig;
use code::CellCode;
use stages::Stages;

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
    let l1 = l - 1;
    let la1 = l as u32 * aw - 1;
    let lc1 = l as u32 * c - 1;
    // The cells as X and the forwarding registers carry them (`k` bits: a 4-bit class as a
    // thermometer code, see `code`).
    let code = CellCode::of_config(cfg);
    let k = code.width(c);
    let lk1 = l as u32 * k - 1;
    let n = g.bank_read as usize;
    let m = g.forwarding_window() as usize - 2;
    let thermo = code == CellCode::Thermometer;
    // Binary classes: the max's compare a cycle ahead of the loop (`alu`).
    let lookahead = cells.alu == CellAlu::Max && !thermo;
    let pipe = Stages::new(n, m, thermo, cfg.forwarding);
    let (rn, rm, rp, early) = (pipe.rn, pipe.rm, pipe.rp, pipe.early);
    let (compared, merged) = (&pipe.compared[..], &pipe.merged[..]);
    let ahead = 2..m + 3;
    let with = |names: &[&str], suffix: &str| {
        names
            .iter()
            .map(|s| format!("{s}{suffix}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rr = pipe.reads;
    // Codes merge by OR: a class only grows, so the newest write is the largest and every
    // matching stage may be ORed in, without the flags' priority. Codes travel only behind
    // registered banks (a read of four cycles), so the three to (m + 2)th ahead are ORed a
    // stage early, into `{rn}_fcell`, and only the one two ahead (Y) is merged in Rn.
    debug_assert!(
        !thermo || early,
        "thermometer codes only behind registered banks"
    );
    let flag_names: Vec<String> = ahead
        .clone()
        .take(if thermo { 1 } else { m + 1 })
        .map(|k| format!("{rn}_m{k}"))
        .collect();
    let comment = if n == 2 {
        "    // ---- read-modify-write. R1: bank read; R2: the banks' read data (rd0) is valid; X: execute;
    // Y: result, written to the banks at the end of the cycle; Z, W: the cells written one and
    // two cycles before. The bank data R2 sees lacks the writes of the four operations ahead:
    // X takes the one ahead's cells from Y (x_fw_y, compared in R1 as r2_f1: the only
    // one-cycle loop), and R2 merges those of the two, three and four ahead (in Y, Z, W; flags
    // r2_m2..4 compared in R1) into x_other."
    } else {
        "    // ---- read-modify-write, registered banks. R1: the read address registered at the
    // memory; R2: bank read; R3: the memory's output register; R4: the fabric register, the
    // banks' read data (rd0) is valid; X: execute; Y: result, registered at the banks' write
    // port (one cycle) and written at the end of the next cycle; Z, W, V, U: the cells of Y one
    // to four cycles before. The bank data R4 sees lacks the writes of the six operations
    // ahead (the read at the memory, in R1, to the write there, one cycle after Y): X takes
    // the one ahead's cells from Y (x_fw_y, as r4_f1: the only one-cycle loop), and R4 merges
    // those of the two to six ahead (in Y, Z, W, V, U; flags r4_m2..6) into x_other. The flags
    // are compared in R2 (r3_p1..6, against the stage ahead a cycle later), so R3 merges the
    // zero flags of the three to six ahead into r4_far."
    };
    // Floorplanned designs: y_we as a copy a lane (`y_we_cp<lane>`, kept apart by the
    // floorplan), which the lane's bank write enable reads; one y_we drove every lane's row
    // enables across the die (3.07 ns of routing, an ECP5 seed's critical path).
    let floorplanned = crate::ecp5_floorplan::applies(g, cells.alu);
    let we_regs: Vec<String> = if floorplanned {
        (0..l).map(|i| format!("y_we_cp{i}")).collect()
    } else {
        vec!["y_we".into()]
    };
    let we_decl = we_regs.join(", ");
    // The lower address bits an early compare leaves to R(n-2), and the pieces of the upper
    // ones compared in R(n-3): spatial designs leave R(n-2) 9 register bits (two LUT levels
    // on ECP5; ECP5 z=64, twelve seeds: median 231.35 -> 239.18 MHz), counting 16 (its
    // critical paths are elsewhere).
    let (lo_bits, pieces) = if cells.alu == CellAlu::Max {
        early_split_within(aw, 9)
    } else {
        early_split(aw)
    };
    let _ = writeln!(
        v,
        "{comment}
    reg {valids}, {we_decl};
    reg [1:0] {ops}, x_op;
    reg [{tw1}:0] {tags}, x_tag, y_tag;
    reg [{la1}:0] {addrs};
    reg [{l1}:0] {flags_decl}, {rn}_f1, x_fw_y;{early_decl}
    reg [{lk1}:0] x_other, {cells_decl};
    wire [{lc1}:0] rd0;
    wire [{lk1}:0] other_next;
    wire [{lk1}:0] nxt;
    reg x_ins; // x_op == OP_INSERT, registered with it (a select of every cell's update)
    wire x_lookup = (x_op == OP_LOOKUP);",
        valids = pipe.valid_names(),
        ops = with(rr, "_op"),
        tags = with(rr, "_tag"),
        addrs = with(pipe.addressed(), "_addr"),
        flags_decl = flag_names.join(", "),
        early_decl = if early {
            let p: Vec<String> = (1..m + 3).map(|k| format!("{rm}_p{k}")).collect();
            let far = if flags {
                format!(", {rn}_far, {rn}_farhit")
            } else {
                String::new()
            };
            format!("\n    reg [{l1}:0] {}{far};", p.join(", "))
        } else {
            String::new()
        },
        rn = rn,
        cells_decl = with(&merged[..pipe.kept_cells], "_cell"),
        tw1 = tw - 1,
    );
    if early && cfg.forwarding {
        let h: Vec<String> = (1..m + 3).map(|k| format!("{rp}_h{k}")).collect();
        let _ = writeln!(
            v,
            "    reg [{}:0] {}; // upper address bits equal, two a LUT, a stage before the flags",
            l as u32 * pieces - 1,
            h.join(", ")
        );
    }
    if thermo {
        let _ = writeln!(
            v,
            "    reg [{lk1}:0] {rn}_fcell; // the codes of the three to (m + 2)th ahead, ORed (no flags {rn}_m3..)"
        );
    }
    if vw > 0 {
        // X takes the class as it is (`x_val`) or as its code (`x_vth`).
        let x = if thermo { "" } else { ", x_val" };
        let _ = writeln!(v, "    reg [{}:0] {}{x};", vw - 1, with(rr, "_val"));
        if lookahead {
            let _ = writeln!(
                v,
                "    reg [{l1}:0] y_g, x_f; // the decision of the one in Y; the class behind above X's cell\n    reg x_gt_pval; // the class behind above X's\n    reg [{}:0] {}; // x_val, a copy a lane",
                vw - 1,
                (0..l).map(|i| format!("x_val_cp{i}")).collect::<Vec<_>>().join(", ")
            );
        }
        if thermo {
            let _ = writeln!(
                v,
                "    reg [{}:0] x_vth; // the inserted class's code (0 unless an insert)",
                k - 1
            );
        }
    }
    match cells.reduction {
        Reduction::AllNonZero => v.push_str("    reg y_ans;\n"),
        Reduction::Min => v.push_str("    reg y_lookup, y_res;\n"),
        Reduction::Retrieve { .. } => unreachable!("a retrieval reads without writing"),
    }
    let counter = cells.alu == CellAlu::Counter;
    // The lanes' "not shared with the one ahead" flags are ANDed in groups of four, one register
    // each (an AND of eight such lanes took four LUT levels on ECP5).
    let groups = l.div_ceil(4);
    // Counters: the decrement decision selects the update of every counter bit, so the
    // registers it reads are kept in copies, `x_dec[k]` deciding for its share of the lanes.
    let copies = if counter { alu::DECISION_COPIES } else { 1 };
    let dec_of = |lane: usize| format!("x_dec[{}]", lane * copies / l);
    if flags {
        let _ = writeln!(
            v,
            "    reg [{l1}:0] x_other_nz, {nzs};
    // all_nz of the operation in X, an AND of registers: x_pre_bank and x_pre_fwd (from {rn}:
    // its lanes not shared with the one ahead, read from the banks or forwarded; x_pre_fwd by
    // groups of four lanes) and x_yp (its lanes shared with the one ahead, after that one's
    // update: registered in X as both candidates, x_pa decremented and x_qa not, that one's
    // y_dec picks).
    wire [{l1}:0] other_next_nz, rd_nz, fwd_any, fwd_nz;
    wire [{l1}:0] nz;
    wire [{l1}:0] nxt_nz;",
            nzs = with(&merged[..pipe.nz_stages], "_nz"),
        );
        if counter {
            alu::decision_copies(v, groups);
        } else {
            let _ = writeln!(
                v,
                "    reg x_pre_bank, x_pa;\n    reg [{}:0] x_pre_fwd;\n    wire x_yp = x_pa;\n    wire all_nz = x_pre_bank & (&x_pre_fwd) & x_yp;",
                groups - 1
            );
        }
    }
    let (we, answer, result) = match cells.alu {
        CellAlu::Counter => {
            let _ = writeln!(
                v,
                "    // x_other_ge2: x_other is at least 2 (non-zero after a decrement; a saturated counter is).\n    reg [{l1}:0] x_other_ge2;\n    wire [{l1}:0] dec_nz, keep_nz, other_next_ge2;"
            );
            (
                "x_ins | x_dec[0]",
                "x_ins | ((x_lookup | x_del[0]) & all_nz[0])",
                "x_ins | x_dec[0]",
            )
        }
        CellAlu::Max => ("x_ins", "x_lookup & all_nz", "1'b0"),
        CellAlu::SetBit | CellAlu::Fixed => unreachable!("write-through ALUs do not read"),
    };
    for lane in 0..l {
        let d = |s: &str| part(s, lane, k);
        let rd = part("rd0", lane, c);
        let merge_of = |sig: &dyn Fn(&str) -> String| -> String {
            ahead
                .clone()
                .zip(merged)
                .map(|(k, m)| format!("{rn}_m{k}[{lane}] ? {} : ", sig(m)))
                .collect()
        };
        let merge = if thermo {
            format!(
                "{} | {} | ",
                gated(k, &format!("{rn}_m2[{lane}]"), &d("y_cell")),
                d(&format!("{rn}_fcell"))
            )
        } else {
            merge_of(&|m| d(&format!("{m}_cell")))
        };
        let _ = writeln!(
            v,
            "    assign {on} = {merge}{rd};\n    wire [{k1}:0] cur{lane} = x_fw_y[{lane}] ? {yc} : {xo};",
            on = d("other_next"),
            yc = d("y_cell"),
            rd = code.code_of_bank(&rd, c),
            xo = d("x_other"),
            k1 = k - 1,
        );
        if flags && early {
            // The newest of the three to (m + 2)th ahead was merged in R(n-1) (`{rn}_far`).
            let _ = writeln!(
                v,
                "    assign rd_nz[{lane}] = |{rd};\n    assign other_next_nz[{lane}] = {rn}_m2[{lane}] ? y_nz[{lane}] : {rn}_farhit[{lane}] ? {rn}_far[{lane}] : rd_nz[{lane}];\n    assign fwd_any[{lane}] = {rn}_f1[{lane}] | {rn}_m2[{lane}] | {rn}_farhit[{lane}];\n    assign fwd_nz[{lane}] = {rn}_m2[{lane}] ? y_nz[{lane}] : {rn}_far[{lane}];\n    assign nz[{lane}] = x_fw_y[{lane}] ? y_nz[{lane}] : x_other_nz[{lane}];",
            );
        } else if flags {
            // The merged flag is the forwarded stage's own flag (no OR of its cells).
            let _ = writeln!(
                v,
                "    assign rd_nz[{lane}] = |{rd};\n    assign other_next_nz[{lane}] = {merge_nz}rd_nz[{lane}];\n    assign fwd_any[{lane}] = {rn}_f1[{lane}] | {any};\n    assign fwd_nz[{lane}] = {merge_nz}1'b1;\n    assign nz[{lane}] = x_fw_y[{lane}] ? y_nz[{lane}] : x_other_nz[{lane}];",
                merge_nz = merge_of(&|m| format!("{m}_nz[{lane}]")),
                any = flag_names
                    .iter()
                    .map(|f| format!("{f}[{lane}]"))
                    .collect::<Vec<_>>()
                    .join(" | "),
            );
        }
        if cells.alu == CellAlu::Counter {
            // A decrement leaves a counter non-zero when it was at least 2 (its bits above the
            // lowest; a saturated counter is): from Y's register or precomputed in Rn.
            let hi = |s: &str| format!("{s}[{}:{}]", lane as u32 * c + c - 1, lane as u32 * c + 1);
            let _ = writeln!(
                v,
                "    assign other_next_ge2[{lane}] = |{};\n    assign dec_nz[{lane}] = x_fw_y[{lane}] ? (|{}) : x_other_ge2[{lane}];",
                hi("other_next"),
                hi("y_cell"),
            );
        }
        alu::alu_lane(v, cells.alu, code, flags, lane, c, &d("nxt"), &dec_of(lane));
    }
    // The valid bits and addresses pass f0 -> R1 .. Rn -> X -> Y -> the compared stages after
    // Y; ops and tags go as far as X (tags to Y), the cells from Y through `after_y`.
    let [resets, valids, regs] = pipe.registers(v, l, aw, lo_bits, tw, flags);
    let each_we = |value: &str| -> String {
        let lines: Vec<String> = we_regs
            .iter()
            .map(|r| format!("            {r} <= {value};"))
            .collect();
        lines.join("\n")
    };
    let (we_reset, we_set) = (each_we("1'b0"), each_we(&format!("x_valid & ({we})")));
    let _ = write!(
        v,
        "    always @(posedge clk) begin
        if (rst) begin
{resets}{we_reset}
        end else begin
{valids}{we_set}
        end
{regs}"
    );
    if vw > 0 {
        let _ = writeln!(v, "        r1_val <= f0_tag[{}:{tw}];", tw + vw - 1);
        let to_x: &[&str] = if thermo { &[] } else { &["x"] };
        for (prev, st) in rr.iter().zip(rr[1..].iter().chain(to_x)) {
            let _ = writeln!(v, "        {st}_val <= {prev}_val;");
        }
        if lookahead {
            let _ = writeln!(v, "        x_gt_pval <= ({rn}_val > x_val);");
            for lane in 0..l {
                let _ = writeln!(
                    v,
                    "        y_g[{lane}] <= g{lane};\n        x_f[{lane}] <= ({rn}_val > cur{lane});\n        x_val_cp{lane} <= {rn}_val;"
                );
            }
        }
        if thermo {
            let _ = writeln!(
                v,
                "        x_vth <= {{{k}{{{rn}_op == OP_INSERT}}}} & {};",
                code.encode(&format!("{rn}_val"), c)
            );
        }
    }
    if flags {
        // Every copy of a decision register takes the same value.
        let each = |e: String| match copies {
            1 => e,
            k => format!("{{{k}{{{e}}}}}"),
        };
        let _ = writeln!(
            v,
            "        x_other_nz <= other_next_nz;\n        y_nz <= nxt_nz;\n        x_pre_bank <= {};",
            each("&(fwd_any | rd_nz)".into())
        );
        for (k, grp) in (0..copies).flat_map(|k| (0..groups).map(move |g| (k, g))) {
            let (lo, hi) = (4 * grp, (4 * grp + 3).min(l - 1));
            let _ = writeln!(
                v,
                "        x_pre_fwd[{}] <= &(fwd_nz[{hi}:{lo}] | {rn}_f1[{hi}:{lo}]);",
                k * groups + grp
            );
        }
        if counter {
            // The next operation's shared lanes after this one's update, decremented or not.
            let _ = writeln!(
                v,
                "        x_pa <= {};\n        x_qa <= {};\n        y_dec <= x_dec;\n        x_del <= {};\n        x_other_ge2 <= other_next_ge2;",
                each(format!("&(dec_nz | ~{rn}_f1)")),
                each(format!("&(keep_nz | ~{rn}_f1)")),
                each(format!("({rn}_op == OP_DELETE)")),
            );
        } else {
            let _ = writeln!(v, "        x_pa <= &(nxt_nz | ~{rn}_f1);");
        }
    }
    for lane in 0..l {
        let a = |s: &str| part(s, lane, aw);
        let off = "1'b0 /* forwarding removed (test design) */";
        // Distance k: the stage ahead when compared in R(n-1), or (early) the one before it,
        // which a cycle later is that stage, compared in R(n-2).
        let one_ahead: Vec<&str> = [rn].iter().chain(compared).copied().collect();
        let (at, stages, flag) = if early {
            (rp, &one_ahead[..], format!("{rm}_p"))
        } else {
            (rm, compared, format!("{rn}_m"))
        };
        let nearest = if early { rm } else { rn };
        for (k, st) in (1..).zip([nearest].iter().chain(stages.iter())) {
            let eq = if cfg.forwarding && early {
                // Split in two cycles: the upper address bits a stage earlier still, between
                // the stages the two operations are in then (`{rp}_h{k}`), two bits a LUT4
                // and a register (the first with the valid bit); the lower ones and the
                // pieces here. ECP5, spatial z=64 registered: the 11-bit compare with its
                // valid bit was the critical path once the loop was one LUT (4.75-4.98 ns),
                // then the upper 6 bits with the valid bit in one register (two LUT levels,
                // 4.2-4.5 ns).
                let lo = |s: &str| {
                    let w = if pipe.narrow_stage() == Some(s) {
                        lo_bits
                    } else {
                        aw
                    };
                    bits(&format!("{s}_addr"), lane as u32 * w, lo_bits)
                };
                let (atp, stp) = (pipe.before(at), pipe.before(st));
                for i in 0..pieces {
                    let at_bit = lo_bits + 2 * i;
                    let w = 2.min(aw - at_bit);
                    let hi = |s: &str| bits(s, lane as u32 * aw + at_bit, w);
                    // The valid bit in the first piece, a copy a lane: in the flag's stage
                    // it fanned out to every lane's compare (3.2-3.4 ns of routing).
                    let valid = if i == 0 {
                        format!("{stp}_valid & ")
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        v,
                        "        {rp}_h{k}[{}] <= {valid}({} == {});",
                        lane as u32 * pieces + i,
                        hi(&format!("{atp}_addr")),
                        hi(&format!("{stp}_addr"))
                    );
                }
                format!(
                    "(&{}) & ({} == {})",
                    bits(&format!("{rp}_h{k}"), lane as u32 * pieces, pieces),
                    lo(at),
                    lo(st)
                )
            } else if cfg.forwarding {
                format!(
                    "{st}_valid & ({} == {})",
                    a(&format!("{at}_addr")),
                    a(&format!("{st}_addr"))
                )
            } else {
                off.to_string()
            };
            let name = if k == 1 && !early {
                format!("{rn}_f1")
            } else {
                format!("{flag}{k}")
            };
            let _ = writeln!(v, "        {name}[{lane}] <= {eq};");
            if early && !(thermo && k >= 3) {
                let copy = if k == 1 {
                    format!("{rn}_f1")
                } else {
                    format!("{rn}_m{k}")
                };
                let _ = writeln!(v, "        {copy}[{lane}] <= {name}[{lane}];");
            }
        }
        if thermo {
            let far: Vec<String> = (3..m + 3)
                .zip(merged)
                .map(|(a, st)| {
                    gated(
                        k,
                        &format!("{rm}_p{a}[{lane}]"),
                        &part(&format!("{st}_cell"), lane, k),
                    )
                })
                .collect();
            let _ = writeln!(
                v,
                "        {} <= {};",
                part(&format!("{rn}_fcell"), lane, k),
                far.join(" | ")
            );
        }
        if early && flags {
            let far: String = (3..m + 3)
                .zip(merged)
                .map(|(k, st)| format!("{rm}_p{k}[{lane}] ? {st}_nz[{lane}] : "))
                .collect();
            let hit: Vec<String> = (3..m + 3).map(|k| format!("{rm}_p{k}[{lane}]")).collect();
            let _ = writeln!(
                v,
                "        {rn}_far[{lane}] <= {far}1'b1;\n        {rn}_farhit[{lane}] <= {};",
                hit.join(" | ")
            );
        }
        let _ = writeln!(v, "        x_fw_y[{lane}] <= {rn}_f1[{lane}];");
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
            min_tree::min_tree(v, g, code);
        }
        Reduction::Retrieve { .. } => unreachable!("a retrieval reads without writing"),
    }
    let data = match code {
        CellCode::Binary => "y_cell",
        CellCode::Thermometer => {
            // The banks take their Gray form: Y's codes turned into it on the way to the
            // write port's registers. (A register of the binary decode beside Y, from X's
            // next codes, measured slower: 189.68-202.72 MHz against 221.39-238.32, the
            // inserted class's code then fanning out to every lane's decode.)
            let _ = writeln!(v, "    wire [{lc1}:0] y_bank;");
            for lane in 0..l {
                let _ = writeln!(
                    v,
                    "    assign {} = {};",
                    part("y_bank", lane, c),
                    code.to_bank("y_cell", lane as u32 * k, c)
                );
            }
            "y_bank"
        }
    };
    Update {
        we: "y_we".into(),
        addr: "y_addr".into(),
        data: Some(data.into()),
    }
}

/// A code of `k` bits kept where the one-bit `flag` is set, else 0 (a forwarded stage's cell
/// in the OR merge).
fn gated(k: u32, flag: &str, cell: &str) -> String {
    format!("({{{k}{{{flag}}}}} & {cell})")
}

mod alu;
pub(crate) mod code;
mod min_tree;
mod split;
mod stages;
#[cfg(test)]
mod tests;
