//! Will a design fit the part? A resource estimate (block RAMs exactly as the synthesis maps the
//! banks, logic from the generated pipeline's own structure) checked against a board's FPGA
//! before anything is written, naming what does not fit and the largest filter that would.

use std::fmt;

use crate::front;
use crate::geo::{geo, shape, Geo};
use crate::pipe::Cost;
use crate::pipeline::PipelineConfig;
use crate::{HdlError, MulStyle};

/// FPGA families with different block RAM shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Lattice iCE40: SB_RAM40_4K (4 Kibit: 256 × 16 … 2048 × 2), logic cells of one LUT4 and
    /// one flip-flop.
    Ice40,
    /// Lattice ECP5: DP16KD (18 Kibit: 16384 × 1 … 1024 × 18), slices of two LUT4s and two
    /// flip-flops.
    Ecp5,
}

/// A board (or bare part) an export can be checked against (`export --hdl --board NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// iCE40-HX8K breakout board (iCE40HX8K-CT256).
    Ice40Hx8k,
    /// iCE40 UltraPlus 5K (iCE40UP5K; its SPRAMs are not used for the banks).
    Ice40Up5k,
    /// ULX3S with an LFE5U-12F.
    Ulx3s12f,
    /// ULX3S with an LFE5U-25F.
    Ulx3s25f,
    /// ULX3S with an LFE5U-45F.
    Ulx3s45f,
    /// ULX3S with an LFE5U-85F.
    Ulx3s85f,
}

impl Device {
    /// Every device, in the order of the CLI's list.
    pub const ALL: [Device; 6] = [
        Device::Ice40Hx8k,
        Device::Ice40Up5k,
        Device::Ulx3s12f,
        Device::Ulx3s25f,
        Device::Ulx3s45f,
        Device::Ulx3s85f,
    ];

    /// The name the CLI takes (`ice40-hx8k`, `ulx3s-85f`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Device::Ice40Hx8k => "ice40-hx8k",
            Device::Ice40Up5k => "ice40-up5k",
            Device::Ulx3s12f => "ulx3s-12f",
            Device::Ulx3s25f => "ulx3s-25f",
            Device::Ulx3s45f => "ulx3s-45f",
            Device::Ulx3s85f => "ulx3s-85f",
        }
    }

    /// The device called `name`, if any.
    pub fn from_name(name: &str) -> Option<Device> {
        Device::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The part's family.
    pub fn family(self) -> Family {
        match self {
            Device::Ice40Hx8k | Device::Ice40Up5k => Family::Ice40,
            _ => Family::Ecp5,
        }
    }

    /// Capacity: (block RAMs, LUT4s, flip-flops, 18 × 18 or 16 × 16 multipliers) from the
    /// vendors' data sheets.
    pub fn capacity(self) -> (u64, u64, u64, u64) {
        match self {
            Device::Ice40Hx8k => (32, 7680, 7680, 0),
            Device::Ice40Up5k => (30, 5280, 5280, 8),
            Device::Ulx3s12f => (32, 12_288, 12_288, 28),
            Device::Ulx3s25f => (56, 24_288, 24_288, 28),
            Device::Ulx3s45f => (108, 43_848, 43_848, 72),
            Device::Ulx3s85f => (208, 83_640, 83_640, 156),
        }
    }

    /// Cells of `bits` bits one block RAM holds at the narrowest aspect ratio that fits them.
    fn cells_per_ram(self, bits: u32) -> u64 {
        match self.family() {
            // 2048 × 2, 1024 × 4, 512 × 8, 256 × 16.
            Family::Ice40 => 4096 / u64::from(bits.next_power_of_two().clamp(2, 16)),
            // 16384 × 1, 8192 × 2, 4096 × 4, 2048 × 9, 1024 × 18.
            Family::Ecp5 => match bits {
                1 => 16_384,
                2 => 8192,
                3 | 4 => 4096,
                5..=9 => 2048,
                _ => 1024,
            },
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = match self {
            Device::Ice40Hx8k => "iCE40 HX8K",
            Device::Ice40Up5k => "iCE40 UP5K",
            Device::Ulx3s12f => "ECP5 LFE5U-12F",
            Device::Ulx3s25f => "ECP5 LFE5U-25F",
            Device::Ulx3s45f => "ECP5 LFE5U-45F",
            Device::Ulx3s85f => "ECP5 LFE5U-85F",
        };
        write!(f, "{} ({part})", self.name())
    }
}

/// The resources a design needs on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Block RAMs: the banks (lanes × replicas × RAMs per bank) and, on iCE40, the answer FIFOs.
    pub block_rams: u64,
    /// Block RAMs of one bank.
    pub rams_per_bank: u64,
    /// LUT4s (estimated from the pipeline's structure).
    pub luts: u64,
    /// Flip-flops (counted from the pipeline's registers).
    pub ffs: u64,
    /// Multipliers (DSP partial products of [`MulStyle::Dsp`]).
    pub dsps: u64,
}

/// The logic behind the address register and around it: the execute stage, the management
/// port, the write port's multiplexers and the answer FIFOs, per lane and port, and the
/// registered banks' own registers ([`bank_registers`]).
fn back_end(cfg: &PipelineConfig, g: &Geo, family: Family) -> Cost {
    let lanes = g.lanes as u64;
    let ports = g.ports as u64;
    let (aw, tw, c) = (u64::from(g.aw), u64::from(g.tw), u64::from(g.cell_bits));
    let fifo_bits = u64::from(g.fifo_bits);
    // The FIFO's memory is a block RAM on iCE40 (counted with the block RAMs) and distributed
    // RAM on ECP5: DPR16X4 (16 entries of 4 bits, 4 LUT4s each).
    let fifo_memory = match family {
        Family::Ice40 => 0,
        Family::Ecp5 => {
            4 * u64::from(g.fifo_depth).div_ceil(16) * (tw + u64::from(g.ans_bits)).div_ceil(4)
        }
    };
    // Six counters of fifo_bits + 1 (wp, rp, rp1, acc, cnt, occ_r), five of them counting, and
    // three flags (s_ready, m_valid_r, one_r), four where the credit has its own stage (room_r).
    let room = u64::from(crate::verilog::credit_lag(g) == 3);
    let fifo = Cost {
        luts: 5 * fifo_bits + 15 + room + fifo_memory,
        ffs: 6 * (fifo_bits + 1) + 3 + room,
        dsps: 0,
    };
    let mgmt = Cost {
        luts: 40 + 2 * aw,
        ffs: 26 + aw + lanes * c,
        dsps: 0,
    };
    let write_port = Cost {
        luts: lanes * (aw + c),
        ffs: 0,
        dsps: 0,
    };
    let n = u64::from(g.bank_read);
    let exec = if cfg.cells.reads_cells() {
        // Per lane, for a bank read of n cycles and a window of w operations (plain: n = 2,
        // w = 4): n + w - 1 address registers, w cells (the merged ones and x_other), w
        // forwarding compares, the forwarding and current-cell multiplexers, the ALU; per port
        // the op and tag chain (R1..Rn, X, Y).
        // (4-bit classes travel as 15-bit thermometer codes: `k` bits a cell.)
        let w = u64::from(g.forwarding_window());
        let k = u64::from(crate::rmw::code::CellCode::of_config(cfg).width(g.cell_bits));
        let tree = if cfg.cells.answer_bits() > 1 {
            Cost {
                luts: 2 * k * lanes,
                ffs: (k + tw + 3) * lanes,
                dsps: 0,
            }
        } else {
            Cost::default()
        };
        Cost {
            luts: lanes * (w * (aw / 2 + 1) + (w - 1) * k + 4 * c + aw) + 2 * tw,
            ffs: lanes * ((n + w - 1) * aw + w * k + 6) + (n + 2) * (tw + 4),
            dsps: 0,
        } + tree
    } else {
        // Per port: valid, lookup flag and tag through R1..Rn and the answer register (a
        // retrieval: one stage more, with its XOR of the cells).
        let x = u64::from(g.exec_stages - g.bank_read - 1);
        Cost {
            luts: ports * (lanes / 3 + 4),
            ffs: ports * ((n + 1) * (tw + 2) + lanes + x * (tw + 2 + c)),
            dsps: 0,
        }
    };
    let fifos = Cost {
        luts: fifo.luts * ports,
        ffs: fifo.ffs * ports,
        dsps: 0,
    };
    exec + mgmt + write_port + fifos + bank_registers(cfg, g, family)
}

/// The flip-flops registered banks add to the banks themselves: every bank's write port
/// registers (enable, address, cell), port B's read address register,
/// and behind every bank read the second output register (on iCE40 a fabric register of a
/// cell; on ECP5 the DP16KD's own, so only the two tile-select registers of a bank of several
/// DP16KD). Nothing for plain banks.
fn bank_registers(cfg: &PipelineConfig, g: &Geo, family: Family) -> Cost {
    if g.write_delay == 0 {
        return Cost::default();
    }
    let (aw, c) = (u64::from(g.aw), u64::from(g.cell_bits));
    let banks = g.lanes as u64 * g.replicas as u64;
    // One read per lane and lookup port (write-through), or port 0's (read-modify-write).
    let reads = g.lanes as u64
        * if cfg.cells.reads_cells() {
            1
        } else {
            g.ports as u64
        };
    let b_reads = if cfg.cells.reads_cells() {
        banks
    } else {
        reads.saturating_sub(g.lanes as u64)
    };
    let per_read = match family {
        Family::Ice40 => c,
        Family::Ecp5 => crate::ecp5_bank::tiles(g.cell_bits, g.depth)
            .map_or(0, |t| 2 * u64::from(crate::geo::ceil_log2(t.rows))),
    };
    Cost {
        luts: 0,
        ffs: banks * (1 + aw + c) + b_reads * aw + reads * per_read,
        dsps: 0,
    }
}

/// The resources of design `cfg` on `device`.
pub fn estimate(cfg: &PipelineConfig, device: Device) -> Estimate {
    let fr = front::build(&cfg.base, &shape(cfg));
    let g = geo(cfg, &fr);
    let depth = cfg.base.bank_entries();
    let registered = cfg.base.registered_banks;
    let rams_per_bank = match crate::ecp5_bank::generated(cfg.cells.bits, depth, registered) {
        // ECP5 banks whose DP16KD tiles the generator cuts itself.
        Some(t) if device.family() == Family::Ecp5 => t.count(),
        _ => depth.div_ceil(device.cells_per_ram(cfg.cells.bits)),
    };
    let banks = g.lanes as u64 * g.replicas as u64 * rams_per_bank;
    let fifo_rams = match device.family() {
        // Yosys maps each answer FIFO (16 to 64 entries of tag + answer bits) to a RAM.
        Family::Ice40 => (g.ports as u64) * u64::from(g.tw + g.ans_bits).div_ceil(16),
        Family::Ecp5 => 0,
    };
    let logic = Cost {
        luts: fr.cost.luts * g.ports as u64,
        ffs: fr.cost.ffs * g.ports as u64,
        dsps: fr.cost.dsps * g.ports as u64,
    } + back_end(cfg, &g, device.family());
    Estimate {
        block_rams: banks + fifo_rams,
        rams_per_bank,
        luts: logic.luts,
        ffs: logic.ffs,
        dsps: logic.dsps,
    }
}

/// The logic estimate is the pipeline's structure; Yosys 0.23 kept 60 to 100 % of its LUT4s
/// and 59.8 to 100 % of its flip-flops (four designs, prehashed and hashed, on iCE40 and ECP5;
/// see `tests/flow.rs`; the flip-flops' low end since the management counter is sized to its
/// need). A design is refused only when even this share of it, LUT4s at 60 % and flip-flops at
/// 59 % (below the lowest seen), exceeds the part.
const LUT_LOWER_BOUND: (u64, u64) = (3, 5);
/// See [`LUT_LOWER_BOUND`].
const FF_LOWER_BOUND: (u64, u64) = (59, 100);

/// Logic of `e` on `device` against its capacity: (what, estimated, surely needed, available).
fn logic(e: &Estimate, device: Device) -> Vec<(&'static str, u64, u64, u64)> {
    let (_, luts, ffs, _) = device.capacity();
    let at_least = |n: u64, (num, den): (u64, u64)| n * num / den;
    let (lut_floor, ff_floor) = (
        at_least(e.luts, LUT_LOWER_BOUND),
        at_least(e.ffs, FF_LOWER_BOUND),
    );
    match device.family() {
        // A logic cell holds one LUT4 (with its carry) and one flip-flop.
        Family::Ice40 => vec![(
            "logic cells",
            e.luts.max(e.ffs),
            lut_floor.max(ff_floor),
            luts,
        )],
        Family::Ecp5 => vec![
            ("LUT4s", e.luts, lut_floor, luts),
            ("flip-flops", e.ffs, ff_floor, ffs),
        ],
    }
}

/// What of `e` surely does not fit `device`, as phrases.
fn overflows(e: &Estimate, device: Device) -> Vec<String> {
    let (rams, _, _, dsps) = device.capacity();
    let ram_name = match device.family() {
        Family::Ice40 => "SB_RAM40_4K block RAMs",
        Family::Ecp5 => "DP16KD block RAMs",
    };
    let mut out = Vec::new();
    if e.block_rams > rams {
        out.push(format!(
            "{} {ram_name} ({} per bank), the part has {rams}",
            e.block_rams, e.rams_per_bank
        ));
    }
    for (what, need, floor, have) in logic(e, device) {
        if floor > have {
            out.push(format!(
                "at least {floor} {what} (estimate {need}), the part has {have}"
            ));
        }
    }
    if e.dsps > dsps {
        out.push(format!(
            "{} multipliers (--mul-style dsp), the part has {dsps}; --mul-style lut builds them \
             from LUTs",
            e.dsps
        ));
    }
    out
}

/// A design that fits (or may fit) a device: the estimate and what may not fit after all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fit {
    /// The resources estimated.
    pub estimate: Estimate,
    /// Resources whose estimate exceeds the part although a design of this size may still fit
    /// (the estimate counts logic that synthesis may remove).
    pub warnings: Vec<String>,
}

/// Checks that design `cfg` fits `device`: refused when its block RAMs or multipliers exceed
/// the part's, or even the lower bound of its logic does; the error names every resource that
/// does not fit and the largest number of blocks of the same layout that would (or says that
/// none does). Logic estimated above the part but not surely is a warning.
pub fn check_fits(cfg: &PipelineConfig, device: Device) -> Result<Fit, HdlError> {
    cfg.validate()?;
    let e = estimate(cfg, device);
    let over = overflows(&e, device);
    if over.is_empty() {
        let warnings = logic(&e, device)
            .into_iter()
            .filter(|(_, need, _, have)| need > have)
            .map(|(what, need, _, have)| {
                format!(
                    "the design may not fit the {device}: about {need} {what} estimated, the part \
                     has {have} (synthesis usually keeps 60 to 100 % of the estimate)"
                )
            })
            .collect();
        return Ok(Fit {
            estimate: e,
            warnings,
        });
    }
    let fits = |z: u32| {
        let mut c = cfg.clone();
        c.base.blocks = z;
        overflows(&estimate(&c, device), device).is_empty()
    };
    // Fewer blocks never need more: the largest count that fits, bit by bit from the top.
    let largest = (0..32).rev().fold(0u32, |best, bit| {
        let z = best | 1 << bit;
        if z < cfg.base.blocks && fits(z) {
            z
        } else {
            best
        }
    });
    let largest = if largest > 0 {
        format!(
            "the largest {} filter of this design that fits has {largest} blocks",
            cfg.base.layout
        )
    } else {
        format!(
            "no {} filter of this design fits, whatever its size{}",
            cfg.base.layout,
            if cfg.base.mul_style == MulStyle::Dsp && e.dsps > device.capacity().3 {
                " (try --mul-style lut, or a prehashed design)"
            } else {
                " (a prehashed design needs far less logic)"
            }
        )
    };
    Err(HdlError::InvalidConfig(format!(
        "{} blocks of {} ({}) do not fit the {device}: the design needs {}; {largest}",
        cfg.base.blocks,
        cfg.base.layout,
        cfg.cells,
        over.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CellSpec, HdlConfig, KeyMode};
    use bloomlanes_core::{CounterBits, Layout};

    fn design(blocks: u32, key: KeyMode, cells: CellSpec) -> PipelineConfig {
        PipelineConfig::new(HdlConfig::new(Layout::L8x32, blocks, key, 0), cells)
    }

    #[test]
    fn a_filter_too_large_for_the_hx8k_is_refused_with_the_largest_that_fits() {
        // Issue #26: 16 384 blocks of 8x32 need 8 banks of 256 SB_RAM40_4K each.
        let big = design(16_384, KeyMode::Prehashed, CellSpec::STATIC);
        let e = check_fits(&big, Device::Ice40Hx8k).unwrap_err().to_string();
        assert!(
            e.contains("2049 SB_RAM40_4K block RAMs (256 per bank)"),
            "{e}"
        );
        assert!(e.contains("the part has 32"), "{e}");
        // 3 RAMs of 2048 x 1 per bank (24) and the answer FIFO's fit; 4 per bank (33) do not.
        assert!(
            e.contains("largest 8x32 filter of this design that fits has 192 blocks"),
            "{e}"
        );
        let fits = check_fits(
            &design(192, KeyMode::Prehashed, CellSpec::STATIC),
            Device::Ice40Hx8k,
        );
        assert_eq!(fits.unwrap().estimate.block_rams, 25);
        assert!(check_fits(
            &design(193, KeyMode::Prehashed, CellSpec::STATIC),
            Device::Ice40Hx8k
        )
        .is_err());
        // The same filter fits nowhere on the ULX3S boards below the 85F's 208 DP16KD either:
        // 8 banks of 32 DP16KD (16384 x 1).
        let e = check_fits(&big, Device::Ulx3s85f).unwrap_err().to_string();
        assert!(e.contains("256 DP16KD block RAMs (32 per bank)"), "{e}");
    }

    #[test]
    fn block_rams_match_the_measured_designs() {
        // hdl/REPORT.md: static z=64: 9 SB_RAM40_4K (8 banks + FIFO), 8 DP16KD; counting c4
        // z=64: 17 and 8; counting c8 z=64: 33 on iCE40; static z=1024: 16 DP16KD.
        let cases = [
            (64, CellSpec::STATIC, Device::Ice40Hx8k, 9),
            (64, CellSpec::STATIC, Device::Ulx3s85f, 8),
            (
                64,
                CellSpec::counting(CounterBits::Four),
                Device::Ice40Hx8k,
                17,
            ),
            (
                64,
                CellSpec::counting(CounterBits::Four),
                Device::Ulx3s85f,
                8,
            ),
            (
                64,
                CellSpec::counting(CounterBits::Eight),
                Device::Ice40Hx8k,
                33,
            ),
            (1024, CellSpec::STATIC, Device::Ulx3s85f, 16),
        ];
        for (z, cells, device, rams) in cases {
            let e = estimate(&design(z, KeyMode::Prehashed, cells), device);
            assert_eq!(e.block_rams, rams, "z={z} {cells} on {device}");
        }
    }

    #[test]
    fn hashed_designs_do_not_fit_the_hx8k_and_say_why() {
        // 8-byte keys: the DSP multiplies need 50 multipliers (the HX8K has none), the LUT ones
        // far more logic than its 7680 cells, whatever the filter's size.
        let dsp = design(64, KeyMode::Bytes(8), CellSpec::STATIC);
        let e = check_fits(&dsp, Device::Ice40Hx8k).unwrap_err().to_string();
        assert!(
            e.contains("50 multipliers") && e.contains("--mul-style lut"),
            "{e}"
        );
        let mut lut = dsp.clone();
        lut.base.mul_style = MulStyle::Lut;
        let e = check_fits(&lut, Device::Ice40Hx8k).unwrap_err().to_string();
        assert!(
            e.contains("logic cells") && e.contains("no 8x32 filter"),
            "{e}"
        );
        // Both fit the 85F.
        assert!(check_fits(&dsp, Device::Ulx3s85f).is_ok());
        assert!(check_fits(&lut, Device::Ulx3s85f).is_ok());
    }

    #[test]
    fn registered_banks_count_their_registers_and_can_change_the_verdict() {
        let registered = |mut c: PipelineConfig| {
            c.base.registered_banks = true;
            c
        };
        // Static 8x32 z=64 (11-bit addresses), one port, on the HX8K: 8 banks' write port
        // registers (enable, address, cell: 13 each), 8 second output registers (1 bit), the
        // lookup's valid, flag and tag (10 bits) through two more stages, and the answer FIFO
        // of 32 entries instead of 16 (one more bit in each of its six counters) with the
        // credit compare in its own register (room_r: 32 >= latency 14 + 5).
        let plain = design(64, KeyMode::Prehashed, CellSpec::STATIC);
        let (p, r) = (
            estimate(&plain, Device::Ice40Hx8k),
            estimate(&registered(plain), Device::Ice40Hx8k),
        );
        assert_eq!(r.ffs - p.ffs, 8 * 13 + 8 + 2 * 10 + 6 + 1, "{p:?} {r:?}");
        assert_eq!(r.block_rams, p.block_rams);
        // On ECP5 the second output register is the DP16KD's own; z=1024 (15-bit addresses)
        // is two tiles a bank, whose pick is two registered select bits a bank. The FIFO's
        // distributed RAM doubles (9 bits: 3 DPR16X4 of 16 entries, 6 of 32).
        let plain = design(1024, KeyMode::Prehashed, CellSpec::STATIC);
        let (p, r) = (
            estimate(&plain, Device::Ulx3s85f),
            estimate(&registered(plain), Device::Ulx3s85f),
        );
        assert_eq!(
            r.ffs - p.ffs,
            8 * 17 + 8 * 2 + 2 * 10 + 6 + 1,
            "{p:?} {r:?}"
        );
        assert_eq!(r.luts - p.luts, 5 + 1 + 3 * 4, "{p:?} {r:?}");
        // A 16x32 counting design of 4-bit counters fits the HX8K plainly; with registered
        // banks (write port registers, a window of six operations instead of four) its
        // estimate passes the part's 7680 logic cells and export warns.
        let counting = PipelineConfig::new(
            HdlConfig::new(Layout::L16x32, 8, KeyMode::Prehashed, 0),
            CellSpec::counting(CounterBits::Four),
        );
        let plain = check_fits(&counting, Device::Ice40Hx8k).unwrap();
        assert!(plain.warnings.is_empty(), "{plain:?}");
        let reg = check_fits(&registered(counting), Device::Ice40Hx8k).unwrap();
        assert!(
            reg.warnings.len() == 1 && reg.warnings[0].contains("logic cells"),
            "{reg:?}"
        );
    }

    #[test]
    fn device_names_round_trip() {
        for d in Device::ALL {
            assert_eq!(Device::from_name(d.name()), Some(d));
        }
        assert_eq!(Device::from_name("ice40"), None);
    }
}
