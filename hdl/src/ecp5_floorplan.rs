//! The ECP5-85k floorplan of a spatial design whose banks are several DP16KD tiles each (1024
//! blocks and more): a Yosys script (`fpga/ecp5_floorplan.ys`)
//! that the export's ECP5 synthesis runs between `flatten` and `synth_ecp5`.
//!
//! Why: placed freely, nextpnr scatters a lane's tiles over the die (spatial 8x32, 1024 blocks:
//! lane 0's eight tiles from X4 to X35, the write data crossing the die to reach them), and
//! Yosys merges the lanes' copies of the block address (equal in every lane) into one register
//! that drives every tile. The script
//! - marks every register of a lane's address (`*addr*`), its early compare pieces (`r2_h*`)
//!   and its copies of the management and clear registers (`*_cp<lane>`, which the top module
//!   writes for floorplanned designs) `keep`, so each lane keeps its own copy from the front
//!   to its tiles;
//! - pins each bank's tiles with nextpnr's `BEL` attribute into whole EBR groups of the
//!   85k's rows Y22 and Y46 (Y70 and Y82 as well where two rows do not hold them), the tiles
//!   of a cell bit side by side.
//!
//! Measured (hdl/REPORT.md, "The ECP5 floorplan in the flow"): spatial c4 z=1024, registered,
//! 162 → 222 MHz (seeds 1-3) with the floorplan alone, 238 with the lane copies it keeps apart
//! (`top.rs`, `rmw.rs`). The grid is the LFE5U-85F's (read from a placement of 208
//! DP16KD by nextpnr-ecp5): 4 rows of 13 groups of 4 tiles, tile `j` of a group at `X + 2j`.

use std::fmt::Write as _;

use crate::cell::CellAlu;
use crate::ecp5_bank::{self, Tiles};
use crate::geo::Geo;

/// The Y of the 85k's EBR rows, in the order the floorplan fills them.
const EBR_ROWS: [u32; 4] = [22, 46, 70, 82];
/// The X of each EBR group's first tile (a group is four tiles, at `X`, `X + 2`, `X + 4`, `X + 6`).
const EBR_GROUPS: [u32; 13] = [4, 13, 22, 31, 40, 49, 58, 69, 78, 87, 96, 105, 114];
/// Tiles in a group.
const GROUP_TILES: u64 = 4;

/// Where the script goes in the export.
pub(crate) const PATH: &str = "fpga/ecp5_floorplan.ys";

/// The tile sites of every bank of `g`: `(replica, lane, tile, BEL)`, or `None` where the
/// design gets no floorplan: not spatial (static and retrieval designs meet their targets
/// placed freely; counting, 1024 blocks, measured slower floorplanned, 161.21 / 160.77 against
/// 168.80 / 167.03 MHz: its lookups reduce a zero flag over every lane, which the floorplan's
/// spread lengthens), no registered DP16KD tiles, one tile a bank (nextpnr keeps a lane's logic
/// beside its one tile), or more tiles than the rows hold.
pub(crate) fn sites(g: &Geo, alu: CellAlu) -> Option<Vec<(usize, usize, u64, String)>> {
    if alu != CellAlu::Max {
        return None;
    }
    layout(g.lanes, g.replicas, ecp5_bank::registered_tiles(g)?)
}

/// Whether `g` gets a floorplan ([`sites`]), and with it the lane copies that the top module
/// and the read-modify-write stage write for floorplanned designs.
pub(crate) fn applies(g: &Geo, alu: CellAlu) -> bool {
    sites(g, alu).is_some()
}

/// The sites of `lanes · replicas` banks of `t` tiles each, bank `lane · replicas + r` after
/// bank `lane · replicas + r - 1`: each bank in whole EBR groups, half the banks in row Y22 and
/// half in Y46 where that holds them, else a quarter in each row. Tile `row · cols + col` of a
/// bank goes to position `col · rows + row` of its groups, so a cell bit's tiles sit side by
/// side.
fn layout(lanes: usize, replicas: usize, t: Tiles) -> Option<Vec<(usize, usize, u64, String)>> {
    if t.count() < 2 {
        return None;
    }
    let banks = lanes * replicas;
    let groups_per_bank = usize::try_from(t.count().div_ceil(GROUP_TILES)).ok()?;
    let rows_used = [2, 4]
        .into_iter()
        .find(|&rows| banks.div_ceil(rows) * groups_per_bank <= EBR_GROUPS.len())?;
    let per_row = banks.div_ceil(rows_used);
    let mut out = Vec::new();
    for lane in 0..lanes {
        for r in 0..replicas {
            let bank = lane * replicas + r;
            let y = EBR_ROWS[bank / per_row];
            let first_group = (bank % per_row) * groups_per_bank;
            for tile in 0..t.count() {
                let (row, col) = (tile / t.cols, tile % t.cols);
                let pos = col * t.rows + row;
                let group = first_group + usize::try_from(pos / GROUP_TILES).ok()?;
                let j = pos % GROUP_TILES;
                let x = u64::from(EBR_GROUPS[group]) + 2 * j;
                out.push((r, lane, tile, format!("X{x}/Y{y}/EBR{j}")));
            }
        }
    }
    Some(out)
}

/// The Yosys script of [`sites`], or `None` where the design gets no floorplan.
pub(crate) fn script(g: &Geo, alu: CellAlu) -> Option<String> {
    let sites = sites(g, alu)?;
    let t = &g.top;
    let mut s = format!(
        "# ECP5-85k (LFE5U-85F) floorplan of {t}, written by `bloomlanes export`. The Makefile's
# ECP5 synthesis runs it after `hierarchy; proc; flatten` and before `synth_ecp5` (make
# FLOORPLAN= to place freely). A bank of several DP16KD tiles is otherwise scattered over the
# die, and the lanes' copies of the block address (equal in every lane) are merged into one
# register that drives every tile.
#
# Each lane's own copy of its address registers, its early compare pieces and the management
# and clear registers its multiplexers read (`*_cp<lane>`):
select -set lane_regs w:*addr* w:*r2_h* w:*_cp* %u %u %ci1 t:$dff %i
setattr -set keep 1 @lane_regs
#
# Each bank's tiles in whole EBR groups, a cell bit's tiles side by side (nextpnr's BEL):
"
    );
    for (r, lane, tile, bel) in sites {
        let _ = writeln!(
            s,
            "setattr -set BEL \"{bel}\" */c:*u_bank_r{r}_l{lane}.g_ebr.u_tile{tile}"
        );
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecp5_bank::tiles;
    use crate::{CellSpec, HdlConfig, KeyMode, PipelineConfig};
    use bloomlanes_core::{CounterBits, Layout};
    use std::collections::HashSet;

    /// The BEL of `lane`'s `tile` in `s`.
    fn at(s: &[(usize, usize, u64, String)], lane: usize, tile: u64) -> &str {
        s.iter()
            .find(|&&(_, l, t, _)| l == lane && t == tile)
            .map(|(.., b)| b.as_str())
            .expect("a site")
    }

    #[test]
    fn spatial_1024_blocks_fill_two_rows_a_lane_in_two_groups() {
        // 8 lanes of 32 Ki 4-bit cells: 2 x 4 tiles of 16 Ki x 1 a lane.
        let t = tiles(4, 32 * 1024).unwrap();
        assert_eq!((t.rows, t.cols), (2, 4));
        let s = layout(8, 1, t).expect("a floorplan");
        assert_eq!(s.len(), 64);
        let bels: HashSet<&str> = s.iter().map(|(.., b)| b.as_str()).collect();
        assert_eq!(bels.len(), 64, "every tile its own site");
        // Lane 0 in groups X4 and X13 of row Y22, tile 0 (row 0, col 0) beside tile 4 (row 1,
        // col 0): the placement measured by hand before it joined the flow.
        assert_eq!(at(&s, 0, 0), "X4/Y22/EBR0");
        assert_eq!(at(&s, 0, 4), "X6/Y22/EBR1");
        assert_eq!(at(&s, 0, 1), "X8/Y22/EBR2");
        assert_eq!(at(&s, 0, 3), "X17/Y22/EBR2");
        assert_eq!(at(&s, 5, 0), "X22/Y46/EBR0");
        assert_eq!(at(&s, 5, 7), "X37/Y46/EBR3");
        for (_, lane, _, bel) in &s {
            let row = if *lane < 4 { "/Y22/" } else { "/Y46/" };
            assert!(bel.contains(row), "lane {lane} at {bel}");
        }
    }

    #[test]
    fn every_site_is_on_the_85k_grid_and_used_once_up_to_four_rows() {
        // 8-bit cells, 1024 blocks: 16 tiles (four groups) a lane; two rows would hold three
        // lanes each, so 8 lanes take all four rows.
        let t = tiles(8, 32 * 1024).unwrap();
        let s = layout(8, 1, t).expect("a floorplan");
        assert_eq!(s.len(), 128);
        let bels: HashSet<&str> = s.iter().map(|(.., b)| b.as_str()).collect();
        assert_eq!(bels.len(), 128);
        for b in &bels {
            let mut it = b.split('/');
            let x: u32 = it.next().unwrap()[1..].parse().unwrap();
            let y: u32 = it.next().unwrap()[1..].parse().unwrap();
            let j: u32 = it.next().unwrap()[3..].parse().unwrap();
            assert!(EBR_ROWS.contains(&y), "{b}");
            assert!(j < 4 && EBR_GROUPS.contains(&(x - 2 * j)), "{b}");
        }
        assert!(bels.iter().any(|b| b.contains("/Y82/")));
        // More tiles than the chip holds (208): none. One tile a bank: none.
        assert!(layout(16, 1, t).is_none());
        assert!(layout(8, 1, tiles(4, 2048).unwrap()).is_none());
    }

    fn kit(cells: CellSpec, blocks: u32, registered_banks: bool) -> Option<String> {
        let mut cfg = HdlConfig::new(Layout::L8x32, blocks, KeyMode::Prehashed, 1);
        cfg.registered_banks = registered_banks;
        let files = crate::verilog::kit_files(&PipelineConfig::new(cfg, cells));
        files
            .into_iter()
            .find(|(p, _)| p == PATH)
            .map(|(_, text)| text)
    }

    /// The script names tiles that the generated RTL has: every bank instance, its tile
    /// branch and each tile, as Yosys names them after `flatten`.
    #[test]
    fn the_script_names_the_generated_tiles() {
        for cells in [CellSpec::spatial(4), CellSpec::spatial(8)] {
            let mut cfg = HdlConfig::new(Layout::L8x32, 1024, KeyMode::Prehashed, 1);
            cfg.registered_banks = true;
            let pc = PipelineConfig::new(cfg, cells);
            let rtl = crate::generate_pipeline(&pc).unwrap().rtl;
            let script = kit(cells, 1024, true).expect("a floorplan");
            let mut n = 0;
            for line in script.lines().filter(|l| l.starts_with("setattr -set BEL")) {
                let sel = line.rsplit("*/c:*").next().unwrap();
                let (bank, rest) = sel.split_once(".g_ebr.").unwrap();
                assert!(rtl.contains(&format!(") {bank} (")), "{bank}");
                assert!(rtl.contains("begin : g_ebr"));
                assert!(rtl.contains(&format!(") {rest} (")), "{rest}");
                n += 1;
            }
            assert_eq!(n, 64 * cells.bits as usize / 4);
            assert!(script.contains("setattr -set keep 1 @lane_regs"));
            // The registers the keep selection names exist.
            for reg in [
                "r2_h1",
                "x_addr",
                "b_addr_m",
                "mg_access_cp7",
                "clr_addr_cp7",
                "y_we_cp7",
            ] {
                assert!(rtl.contains(reg), "{reg}");
            }
        }
        // The registered 8-bit, 1000-block design of `sim_spatial`'s matrix is floorplanned,
        // so its simulations run the lane copies of `top.rs`.
        assert!(kit(CellSpec::spatial(8), 1000, true).is_some());
        // None for 64 blocks (one tile a lane), plain banks, static designs.
        assert!(kit(CellSpec::spatial(4), 64, true).is_none());
        assert!(kit(CellSpec::spatial(4), 1024, false).is_none());
        assert!(kit(CellSpec::STATIC, 1024, true).is_none());
        assert!(kit(CellSpec::counting(CounterBits::Four), 1024, true).is_none());
    }
}
