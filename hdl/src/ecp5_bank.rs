//! Registered banks on ECP5: DP16KD block RAMs instantiated with their output registers on
//! (`REGMODE = "OUTREG"`), which Yosys does not infer (its DP16KD mapping is always `NOREG`,
//! Yosys 0.23 and 0.70), so the bank read no longer ends in the memory's 5.6 ns clock-to-out.
//!
//! A bank of `depth` cells of `c ≤ 18` bits is a column of tiles of the narrowest DP16KD width
//! that holds a cell (1, 2, 4, 9 or 18 bits: 16 Ki, 8 Ki, 4 Ki, 2 Ki or 1 Ki entries); the high
//! address bits pick the tile, the write enables are decoded from them, and the read data of the
//! tile picked two cycles before (the read and the output register) goes through a multiplexer
//! into the fabric register `<port>_dout`: three cycles, like the inferred registered bank.
//!
//! The tiles are emitted under `` `ifdef BLOOMLANES_ECP5_EBR `` (the export's ECP5 flow
//! defines it) and only when the bank starts empty (`LOAD == 0`; DP16KD contents come from
//! `INITVAL_*` parameters, not `$readmemh`): otherwise the inferred bank is used, so simulation,
//! the other vendors and loaded banks keep the portable RTL.

use std::fmt::Write as _;

use crate::geo::{ceil_log2, Geo};

/// The macro that selects the DP16KD tiles.
pub(crate) const MACRO: &str = "BLOOMLANES_ECP5_EBR";

/// DP16KD data width for `c`-bit cells and the address bits below the entry address (the
/// address pins count bits: entry `e` of a `w`-bit tile is at `e << shift`), or `None` above 18
/// bits.
fn tile_width(c: u32) -> Option<(u32, u32)> {
    [(1, 0), (2, 1), (4, 2), (9, 3), (18, 4)]
        .into_iter()
        .find(|&(w, _)| w >= c)
}

/// Whether a bank of `g`'s cells has a DP16KD form (registered banks of cells up to 18 bits).
pub(crate) fn applies(g: &Geo) -> bool {
    g.bank_read > crate::geo::BANK_READ && tile_width(g.cell_bits).is_some()
}

/// The opening of the tile branch: the DP16KD tiles of the bank module's ports (`read_a`: port
/// A reads; `has_b`: port B reads), then the `else` branch that the inferred bank fills.
pub(crate) fn open(v: &mut String, g: &Geo, read_a: bool, has_b: bool) {
    let (w, shift) = tile_width(g.cell_bits).expect("applies() was checked");
    let c = g.cell_bits;
    // The write port's and port B's signals at the memory (registered inputs, if any).
    let [we_m, wa_m, wd_m, ra_m] = crate::verilog::at_memory(g);
    let addr_of = |p: &str| if p == "a" { wa_m } else { ra_m };
    let tile_bits = 14 - shift;
    let tiles = g.depth.div_ceil(1 << tile_bits) as usize;
    let sel_bits = ceil_log2(tiles as u64);
    let _ = writeln!(
        v,
        "`ifdef {MACRO}
    // ECP5: {tiles} DP16KD tile(s) of {entries} x {w} bits with the output register on
    // (REGMODE OUTREG); the tile read two cycles before is picked into the fabric register.
    generate if (LOAD == 0) begin : g_ebr",
        entries = 1u32 << tile_bits,
    );
    let ports: Vec<(&str, bool)> = [("a", read_a), ("b", has_b)]
        .into_iter()
        .filter(|&(p, used)| used || p == "a")
        .collect();
    for &(p, reads) in &ports {
        // Address pins: the entry address above `shift` zero bits (byte enables 11 at width 18).
        let low = if w == 18 {
            "2'b00, 2'b11".to_string()
        } else if shift > 0 {
            format!("{shift}'d0")
        } else {
            String::new()
        };
        let pa = addr_of(p);
        let entry = if g.aw > tile_bits {
            format!("{pa}[{}:0]", tile_bits - 1)
        } else if g.aw < tile_bits {
            format!("{}'d0, {pa}", tile_bits - g.aw)
        } else {
            pa.to_string()
        };
        let parts: Vec<String> = [entry, low].into_iter().filter(|s| !s.is_empty()).collect();
        let _ = writeln!(
            v,
            "        wire [13:0] {p}_ad = {{{}}};\n        wire [{}:0] {p}_tiles;",
            parts.join(", "),
            18 * tiles - 1
        );
        if sel_bits > 0 {
            let _ = writeln!(
                v,
                "        wire [{s1}:0] {p}_sel = {pa}[{}:{tile_bits}];",
                g.aw - 1,
                s1 = sel_bits - 1
            );
        }
        if reads {
            let pick = if sel_bits > 0 {
                let _ = writeln!(
                    v,
                    "        reg [{s1}:0] {p}_sel1, {p}_sel2;\n        always @(posedge clk) begin\n            {p}_sel1 <= {p}_sel;\n            {p}_sel2 <= {p}_sel1;\n        end",
                    s1 = sel_bits - 1
                );
                // One case per tile, not `tiles[sel * 18 +: c]`: Yosys builds that part-select
                // from a multiplier and a shifter (3.93 ns on ECP5 past two tiles).
                let mut arms = String::new();
                for t in 0..tiles {
                    let _ = write!(
                        arms,
                        "\n            {sel_bits}'d{t}: {p}_dout <= {p}_tiles[{}:{}];",
                        18 * t as u32 + c - 1,
                        18 * t
                    );
                }
                format!(
                    "case ({p}_sel2){arms}\n            default: {p}_dout <= {c}'d0;\n        endcase"
                )
            } else {
                format!("{p}_dout <= {p}_tiles[{}:0];", c - 1)
            };
            let _ = writeln!(v, "        always @(posedge clk) {pick}");
        }
    }
    let pins = |p: &str, name: &str, expr: &dyn Fn(u32) -> String| -> String {
        (0..18)
            .map(|i| format!(".{}{}{i}({})", name, p.to_uppercase(), expr(i)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for t in 0..tiles {
        let mut conns = Vec::new();
        for p in ["a", "b"] {
            let writes = p == "a";
            let used = p == "a" || has_b;
            let we = match (writes, sel_bits) {
                (false, _) => "1'b0".to_string(),
                (true, 0) => we_m.to_string(),
                (true, _) => format!("{we_m} & (a_sel == {sel_bits}'d{t})"),
            };
            let up = p.to_uppercase();
            let addr = |i: u32| {
                if used {
                    format!("{p}_ad[{i}]")
                } else {
                    "1'b0".into()
                }
            };
            let din = |i: u32| {
                if writes && c == 1 && i == 0 {
                    wd_m.into()
                } else if writes && i < c {
                    format!("{wd_m}[{i}]")
                } else {
                    "1'b0".into()
                }
            };
            let dout = |i: u32| {
                if used {
                    format!("{p}_tiles[{}]", 18 * t as u32 + i)
                } else {
                    String::new()
                }
            };
            conns.push(format!(
                ".CLK{up}(clk), .CE{up}(1'b1), .OCE{up}(1'b1), .WE{up}({we}), .RST{up}(1'b0), .CS{up}0(1'b0), .CS{up}1(1'b0), .CS{up}2(1'b0)"
            ));
            conns.push(
                (0..14)
                    .map(|i| format!(".AD{up}{i}({})", addr(i)))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            conns.push(pins(p, "DI", &din));
            conns.push(pins(p, "DO", &dout));
        }
        let _ = writeln!(
            v,
            "        DP16KD #(.DATA_WIDTH_A({w}), .DATA_WIDTH_B({w}), .REGMODE_A(\"OUTREG\"), .REGMODE_B(\"OUTREG\"),
            .WRITEMODE_A(\"NORMAL\"), .WRITEMODE_B(\"NORMAL\"), .RESETMODE(\"SYNC\"), .CSDECODE_A(\"0b000\"),
            .CSDECODE_B(\"0b000\")) u_tile{t} (\n            {}\n        );",
            conns.join(",\n            ")
        );
    }
    v.push_str("    end else begin : g_mem\n`endif\n");
}

/// The end of the branch [`open`] began.
pub(crate) fn close(v: &mut String) {
    let _ = writeln!(v, "`ifdef {MACRO}\n    end endgenerate\n`endif");
}
