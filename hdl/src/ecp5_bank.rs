//! ECP5 banks as DP16KD block RAMs the generator instantiates itself. Registered banks: with
//! their output registers on (`REGMODE = "OUTREG"`), which Yosys does not infer (its DP16KD
//! mapping is always `NOREG`, Yosys 0.23 and 0.70), so the bank read no longer ends in the
//! memory's 5.6 ns clock-to-out. Plain banks (`NOREG`) only where Yosys would stack tiles and
//! pick one but the bank fits one tile deep ([`generated`]).
//!
//! A bank of `depth` cells of `c ≤ 18` bits is a grid of tiles ([`tiles`]): one tile deep and
//! cut side by side where it fits in 16 Ki entries (each tile a slice of the cell bits, so the
//! read needs no pick), else rows of such slices (DP16KD widths 1, 2, 4, 9 or 18 bits: 16 Ki,
//! 8 Ki, 4 Ki, 2 Ki or 1 Ki entries; the fewest tiles, then the fewest rows) whose high
//! address bits pick the row: the write enables are decoded from them, and the read data of
//! the row picked two cycles before (the read and the output register) goes through a
//! multiplexer into the fabric register `<port>_dout`. Three cycles from the address at the
//! memory (two for plain banks) either way, like the inferred bank; registered banks register
//! every address at the memory first (`<name>_m`, in `verilog.rs`).
//!
//! The tiles are emitted under `` `ifdef BLOOMLANES_ECP5_EBR `` (the export's ECP5 flow
//! defines it) and only when the bank starts empty (`LOAD == 0`; DP16KD contents come from
//! `INITVAL_*` parameters, not `$readmemh`): otherwise the inferred bank is used, so simulation,
//! the other vendors and loaded banks keep the portable RTL.

use std::fmt::Write as _;

use crate::geo::{ceil_log2, Geo};

/// The macro that selects the DP16KD tiles.
pub(crate) const MACRO: &str = "BLOOMLANES_ECP5_EBR";

/// DP16KD data widths and the address bits below the entry address (the address pins count
/// bits: entry `e` of a `w`-bit tile is at `e << shift`): 16 Ki, 8 Ki, 4 Ki, 2 Ki, 1 Ki entries.
const WIDTHS: [(u32, u32); 5] = [(1, 0), (2, 1), (4, 2), (9, 3), (18, 4)];

/// How a bank is cut into DP16KD tiles: `rows` tiles deep (the high address bits pick one)
/// by `cols` side by side (tile `col` holds cell bits `[col·width, (col + 1)·width)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tiles {
    /// Data width of a tile (1, 2, 4, 9 or 18).
    pub width: u32,
    /// Address bits below the entry address.
    shift: u32,
    /// Tiles deep.
    pub rows: u64,
    /// Tiles side by side.
    pub cols: u64,
}

impl Tiles {
    /// Every tile of the bank.
    pub fn count(self) -> u64 {
        self.rows * self.cols
    }
}

/// The tiles of a bank of `depth` cells of `c ≤ 18` bits (`None` above 18 bits). Where the
/// bank fits one tile deep (16 Ki entries at most), it is cut side by side: the read then goes
/// from the tiles' output registers straight to the fabric register, with no pick between
/// tiles far apart on the die (a pick of 5 tiles held the 16384-key retrieval table to
/// 156–170 MHz, 4.7 ns of its 6.4 ns routing); of those cuts the fewest tiles, then the
/// narrowest. Deeper banks are a grid: of every width's cut the fewest tiles, then the fewest
/// rows (the shallowest pick), so a bank of narrow cells is cut into 1-bit tiles side by side,
/// 16 Ki entries deep each (spatial 8x32, 1024 blocks of 4-bit cells: 32 Ki entries in 2 x 4
/// tiles of 16 Ki x 1, a pick of two, not a column of eight 4 Ki x 4 tiles, whose 8-way pick
/// was the critical path on ECP5), while cells of 9 or 18 bits keep their tile width (9 bits
/// in 1-bit tiles would take 18 tiles for the 10 of 2 Ki x 9).
pub(crate) fn tiles(c: u32, depth: u64) -> Option<Tiles> {
    let entries = |shift: u32| 1u64 << (14 - shift);
    if c > 18 {
        return None;
    }
    let grid = WIDTHS
        .into_iter()
        .map(|(width, shift)| Tiles {
            width,
            shift,
            rows: depth.div_ceil(entries(shift)),
            cols: u64::from(c.div_ceil(width)),
        })
        .min_by_key(|t| (t.count(), t.rows, t.width))
        .expect("five widths");
    let one_deep = WIDTHS
        .into_iter()
        .filter(|&(_, shift)| entries(shift) >= depth)
        .map(|(width, shift)| Tiles {
            width,
            shift,
            rows: 1,
            cols: u64::from(c.div_ceil(width)),
        })
        .min_by_key(|t| (t.cols, t.width));
    Some(one_deep.unwrap_or(grid))
}

/// The tiles the generator instantiates for a bank of `depth` cells of `c` bits (`registered`:
/// registered banks), `None` where the bank is left to synthesis: every registered bank of
/// cells up to 18 bits (Yosys maps no DP16KD output register), and a plain bank only where it
/// is cut side by side and Yosys would stack its tiles and pick one (its own choice for the
/// rest: the same tiles).
pub(crate) fn generated(c: u32, depth: u64, registered: bool) -> Option<Tiles> {
    let t = tiles(c, depth)?;
    let stacked = || {
        let (_, shift) = WIDTHS.into_iter().find(|&(w, _)| w >= c)?;
        Some(depth > 1 << (14 - shift))
    };
    (registered || (t.rows == 1 && stacked() == Some(true))).then_some(t)
}

/// Whether a bank of `g`'s cells has a DP16KD form ([`generated`]).
pub(crate) fn applies(g: &Geo) -> bool {
    generated(g.cell_bits, g.depth, registered(g)).is_some()
}

/// The registered DP16KD tiles of a bank of `g` (`None` for plain banks or cells wider than 18
/// bits): what the ECP5 floorplan places.
pub(crate) fn registered_tiles(g: &Geo) -> Option<Tiles> {
    if registered(g) {
        generated(g.cell_bits, g.depth, true)
    } else {
        None
    }
}

/// Whether `g`'s banks are registered (the tiles' output registers on).
fn registered(g: &Geo) -> bool {
    g.bank_read > crate::geo::BANK_READ
}

/// The opening of the tile branch: the DP16KD tiles of the bank module's ports (`read_a`: port
/// A reads; `has_b`: port B reads), then the `else` branch that the inferred bank fills.
pub(crate) fn open(v: &mut String, g: &Geo, read_a: bool, has_b: bool) {
    let t = generated(g.cell_bits, g.depth, registered(g)).expect("applies() was checked");
    // The tile's read: two cycles with its output register, one without.
    let (regmode, reads) = if registered(g) {
        ("OUTREG", "two cycles")
    } else {
        ("NOREG", "one cycle")
    };
    let (w, shift) = (t.width, t.shift);
    let c = g.cell_bits;
    // The write port's and port B's signals at the memory (registered inputs, if any).
    let [we_m, wa_m, wd_m, ra_m] = crate::verilog::at_memory(g);
    let addr_of = |p: &str| if p == "a" { wa_m } else { ra_m };
    let tile_bits = 14 - shift;
    let sel_bits = ceil_log2(t.rows);
    // Tile `r·cols + col` holds bits `[col·w, col·w + bits(col))` of the cells of row `r`.
    let bits = |col: u64| w.min(c - col as u32 * w);
    let at = |r: u64, col: u64| 18 * (r * t.cols + col) as u32;
    let _ = writeln!(
        v,
        "`ifdef {MACRO}
    // ECP5: {rows} x {cols} DP16KD tile(s) of {entries} x {w} bits (deep x side by side),
    // REGMODE {regmode}; the tile row read {reads} before is picked into the fabric register.
    generate if (LOAD == 0) begin : g_ebr",
        rows = t.rows,
        cols = t.cols,
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
            18 * t.count() - 1
        );
        if sel_bits > 0 {
            let _ = writeln!(
                v,
                "        wire [{s1}:0] {p}_sel = {pa}[{}:{tile_bits}];",
                g.aw - 1,
                s1 = sel_bits - 1
            );
        }
        // The cells of tile row `r`: its tiles' data, last column highest.
        let row = |r: u64| {
            let words: Vec<String> = (0..t.cols)
                .rev()
                .map(|col| format!("{p}_tiles[{}:{}]", at(r, col) + bits(col) - 1, at(r, col)))
                .collect();
            if words.len() == 1 {
                words[0].clone()
            } else {
                format!("{{{}}}", words.join(", "))
            }
        };
        if reads {
            let pick = if sel_bits > 0 {
                let _ = writeln!(
                    v,
                    "        reg [{s1}:0] {p}_sel1, {p}_sel2;\n        always @(posedge clk) begin\n            {p}_sel1 <= {p}_sel;\n            {p}_sel2 <= {p}_sel1;\n        end",
                    s1 = sel_bits - 1
                );
                let sel = if registered(g) { "sel2" } else { "sel1" };
                // One case per row, not `tiles[sel * 18 +: c]`: Yosys builds that part-select
                // from a multiplier and a shifter (3.93 ns on ECP5 past two tiles).
                let mut arms = String::new();
                for r in 0..t.rows {
                    let _ = write!(
                        arms,
                        "\n            {sel_bits}'d{r}: {p}_dout <= {};",
                        row(r)
                    );
                }
                format!(
                    "case ({p}_{sel}){arms}\n            default: {p}_dout <= {c}'d0;\n        endcase"
                )
            } else {
                format!("{p}_dout <= {};", row(0))
            };
            let _ = writeln!(v, "        always @(posedge clk) {pick}");
        }
    }
    debug_assert!(
        sel_bits == 0 || registered(g),
        "only registered banks have rows"
    );
    if sel_bits > 0 {
        // The row write enables, decoded from the bank's inputs into one register per row (a
        // tile's WE pin then reads a register, not a LUT after one): only registered banks are
        // cut into rows, so these registers stand where `a_we_m` and `a_addr_m` would.
        // ECP5, spatial c=4 z=1024 (32 tiles a row over the die): the decode LUT → WEA was the
        // critical path, 5.1–5.9 ns of routing.
        let mut decode = String::new();
        for r in 0..t.rows {
            let _ = write!(
                decode,
                "\n            a_we_row[{r}] <= a_we & (a_addr[{}:{tile_bits}] == {sel_bits}'d{r});",
                g.aw - 1
            );
        }
        let _ = writeln!(
            v,
            "        reg [{}:0] a_we_row;\n        always @(posedge clk) begin{decode}\n        end",
            t.rows - 1
        );
    }
    let pins = |p: &str, name: &str, expr: &dyn Fn(u32) -> String| -> String {
        (0..18)
            .map(|i| format!(".{}{}{i}({})", name, p.to_uppercase(), expr(i)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for r in 0..t.rows {
        for col in 0..t.cols {
            let mut conns = Vec::new();
            for p in ["a", "b"] {
                let writes = p == "a";
                let used = p == "a" || has_b;
                let we = match (writes, sel_bits) {
                    (false, _) => "1'b0".to_string(),
                    (true, 0) => we_m.to_string(),
                    (true, _) => format!("a_we_row[{r}]"),
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
                    } else if writes && i < bits(col) {
                        format!("{wd_m}[{}]", col as u32 * w + i)
                    } else {
                        "1'b0".into()
                    }
                };
                let dout = |i: u32| {
                    if used {
                        format!("{p}_tiles[{}]", at(r, col) + i)
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
                "        DP16KD #(.DATA_WIDTH_A({w}), .DATA_WIDTH_B({w}), .REGMODE_A(\"{regmode}\"), .REGMODE_B(\"{regmode}\"),
            .WRITEMODE_A(\"NORMAL\"), .WRITEMODE_B(\"NORMAL\"), .RESETMODE(\"SYNC\"), .CSDECODE_A(\"0b000\"),
            .CSDECODE_B(\"0b000\")) u_tile{} (\n            {}\n        );",
                r * t.cols + col,
                conns.join(",\n            ")
            );
        }
    }
    v.push_str("    end else begin : g_mem\n`endif\n");
}

/// The end of the branch [`open`] began.
pub(crate) fn close(v: &mut String) {
    let _ = writeln!(v, "`ifdef {MACRO}\n    end endgenerate\n`endif");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banks_that_fit_one_tile_deep_are_cut_side_by_side() {
        let cut = |c, depth| {
            let t = tiles(c, depth).unwrap();
            (t.rows, t.cols, t.width)
        };
        // The 16384-key retrieval table's banks: 5120 16-bit cells in eight 8 Ki x 2 tiles,
        // not five 1 Ki x 18 tiles read through a pick of five.
        assert_eq!(cut(16, 5120), (1, 8, 2));
        assert_eq!(cut(16, 1280), (1, 2, 9));
        assert_eq!(cut(8, 3200), (1, 2, 4));
        assert_eq!(cut(8, 9600), (1, 8, 1));
        // One tile already: unchanged (the narrowest that holds a cell).
        assert_eq!(cut(1, 2048), (1, 1, 1));
        assert_eq!(cut(18, 1024), (1, 1, 18));
        assert_eq!(cut(4, 4096), (1, 1, 4));
        // Deeper than 16 Ki entries: the fewest tiles, then the shallowest pick. The spatial
        // 8x32 z = 1024 banks of 4-bit cells: 2 deep x 4 wide of 16 Ki x 1 (a column of eight
        // 4 Ki x 4 before); 8-bit counters likewise 2 x 8; 9-bit cells stay 2 Ki x 9.
        assert_eq!(cut(1, 32_768), (2, 1, 1));
        assert_eq!(cut(4, 32_768), (2, 4, 1));
        assert_eq!(cut(8, 32_768), (2, 8, 1));
        // Where 1-bit tiles would take more tiles (40 000 x 2: six), the column stays.
        assert_eq!(cut(2, 40_000), (5, 1, 2));
        assert_eq!(cut(9, 20_000), (10, 1, 9));
        assert_eq!(tiles(19, 100), None);
        for c in 1..=18 {
            for depth in [1, 700, 1024, 1025, 5000, 16_384, 16_385, 40_000] {
                let t = tiles(c, depth).unwrap();
                let entries = 1u64 << (14 - t.shift);
                assert!(t.rows * entries >= depth && t.cols * u64::from(t.width) >= u64::from(c));
                // A deep bank never takes more tiles than the column of the narrowest width
                // that holds a cell.
                let (_, shift) = WIDTHS.into_iter().find(|&(w, _)| w >= c).unwrap();
                let column = depth.div_ceil(1 << (14 - shift));
                assert!(t.rows == 1 || t.count() <= column, "{c} x {depth}: {t:?}");
            }
        }
    }
}
