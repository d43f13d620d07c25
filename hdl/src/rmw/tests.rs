//! Structure of the generated read-modify-write stage: which registers its critical cones read.

use crate::cone::register_cone;
use crate::{generate_pipeline, CellSpec, HdlConfig, KeyMode, PipelineConfig};
use bloomlanes_core::{CounterBits, Layout};

/// The RTL of a counting design of 4-bit counters, 8x32 z=64 prehashed.
fn counting_rtl(registered_banks: bool) -> String {
    let mut cfg = HdlConfig::new(Layout::L8x32, 64, KeyMode::Prehashed, 1);
    cfg.registered_banks = registered_banks;
    let cells = CellSpec::counting(CounterBits::Four);
    generate_pipeline(&PipelineConfig::new(cfg, cells))
        .unwrap()
        .rtl
}

/// Each copy of the counter's decrement decision, which every counter bit of the next cycle
/// waits for, reads at most seven register bits, all its own copy's (one ECP5 LUT7, one LUT
/// level): before, it read every lane's forwarding flag and both zero flags (26 bits, four to
/// five LUT levels on the loop from Y, the counting design's critical path on ECP5).
#[test]
fn the_decrement_decision_reads_seven_register_bits() {
    for registered in [false, true] {
        let rtl = counting_rtl(registered);
        for k in 0..2 {
            let cone = register_cone(&rtl, &format!("x_dec[{k}]"));
            assert!(cone.contains(&format!("y_dec[{k}]")), "{cone:?}");
            assert!(cone.contains(&format!("x_del[{k}]")), "{cone:?}");
            assert!(
                cone.len() <= 7,
                "registered {registered}: x_dec[{k}] reads {cone:?}"
            );
        }
    }
}

/// The decrement decision selects every counter bit's update; each of its two copies selects
/// half of them (16 of 32: on ECP5 one decision drove all 32, 0.9–2.2 ns of routing on that
/// net, the critical path of seeds 1–5), and the copies' registers start apart, so that
/// synthesis does not merge them again.
#[test]
fn each_copy_of_the_decision_selects_half_the_counters() {
    for registered in [false, true] {
        let rtl = counting_rtl(registered);
        let mut selected = [0; 2];
        for bit in 0..32 {
            let cone = register_cone(&rtl, &format!("nxt[{bit}]"));
            let copies: Vec<usize> = (0..2)
                .filter(|k| cone.contains(&format!("x_del[{k}]")))
                .collect();
            assert_eq!(copies.len(), 1, "bit {bit} reads {cone:?}");
            selected[copies[0]] += 1;
        }
        assert_eq!(selected, [16, 16], "registered {registered}");
        for reg in ["x_pre_bank", "x_pa", "x_qa", "x_del", "y_dec"] {
            assert!(rtl.contains(&format!(" {reg} = 2'b10")), "{reg}");
        }
        assert!(rtl.contains("x_pre_fwd = 4'b1100"));
    }
}

/// With registered banks, the flag of four lanes not shared with the one ahead
/// (`x_pre_fwd`, registered in R4) reads 16 register bits: per lane the one-ahead and
/// two-ahead flags, Y's zero flag and the merged flag of the three to six ahead (`r4_far`,
/// registered in R3). Before, it read every forwarded stage's flag and zero flag (44 bits,
/// three LUT levels: the critical path of every seed once the loop was shortened).
#[test]
fn registered_forwarded_flags_are_merged_a_stage_early() {
    let cone = register_cone(&counting_rtl(true), "next:x_pre_fwd[0]");
    assert!(cone.contains("r4_far[0]"), "{cone:?}");
    assert!(cone.len() <= 16, "x_pre_fwd[0] reads {cone:?}");
}

/// The RTL of a spatial design of 4-bit classes, 8x32 z=64 prehashed.
fn spatial_rtl(registered_banks: bool) -> String {
    let mut cfg = HdlConfig::new(Layout::L8x32, 64, KeyMode::Prehashed, 1);
    cfg.registered_banks = registered_banks;
    generate_pipeline(&PipelineConfig::new(cfg, CellSpec::spatial(4)))
        .unwrap()
        .rtl
}

/// With 4-bit classes carried as thermometer codes (behind registered banks), the next cells
/// (the one-cycle loop from Y back into X) are `(x_fw_y ? y_cell : x_other) | x_vth` in each
/// lane: one LUT4 a bit. The cone reader follows whole vectors through `|`, so the check is
/// that a lane's next code reads its forwarding flag, its own lane's codes in Y and `x_other`
/// and the class's code, and nothing else: no class compared (`x_val`) and no insert flag
/// (`x_ins`), which the binary form reads (a 4-bit compare and two multiplexers, two wide
/// LUTs: ECP5's critical path on every seed). Behind plain banks the binary form stays (on
/// iCE40 it measured faster: the codes' registers spread the placement).
#[test]
fn the_registered_spatial_loop_is_an_or_of_codes() {
    assert!(spatial_rtl(false).contains("x_val;"));
    let rtl = spatial_rtl(true);
    assert!(!rtl.contains("x_val;"));
    for bit in [0, 7, 14, 15, 64, 119] {
        let lane = bit / 15;
        let cone = register_cone(&rtl, &format!("nxt[{bit}]"));
        let mut want: std::collections::BTreeSet<String> = (0..15)
            .flat_map(|j| {
                let b = lane * 15 + j;
                [
                    format!("y_cell[{b}]"),
                    format!("x_other[{b}]"),
                    format!("x_vth[{j}]"),
                ]
            })
            .collect();
        want.insert(format!("x_fw_y[{lane}]"));
        assert_eq!(cone, want, "nxt[{bit}]");
    }
}

/// Behind registered banks the forwarded codes merge by OR (a class only grows, so the newest
/// write is the largest): `x_other`'s next value reads the bank's read data, the two-ahead flag
/// and Y's codes, and the codes of the three to six ahead already ORed in R3 (`r4_fcell`), not
/// the four flags of those stages, whose priority chain was the next critical path.
#[test]
fn registered_spatial_codes_merge_by_or() {
    let rtl = spatial_rtl(true);
    let cone = register_cone(&rtl, "other_next[16]");
    for want in ["rd0[4]", "rd0[7]", "r4_m2[1]", "y_cell[16]", "r4_fcell[16]"] {
        assert!(cone.contains(want), "{want}: {cone:?}");
    }
    assert!(!cone.iter().any(|r| r.starts_with("r4_m3")), "{cone:?}");
    assert!(!rtl.contains("r4_m6"));
}

/// Behind registered banks a 4-bit class goes into the banks in its Gray form, each bank bit
/// the XOR of at most four of Y's code bits (one LUT4), every code bit read by exactly one of
/// them. In binary, bit 0 was the parity of all fifteen: two LUT levels before the management
/// multiplexer, ECP5's critical path on half the seeds.
#[test]
fn registered_spatial_writes_read_four_code_bits_a_bank_bit() {
    let rtl = spatial_rtl(true);
    let line = rtl
        .lines()
        .find(|l| l.trim_start().starts_with("assign y_bank[7:4] = {"))
        .expect("lane 1's bank form");
    let mut read = Vec::new();
    for element in line.split(" = ").nth(1).unwrap().split(", ") {
        let bits: Vec<u32> = element
            .split("y_cell[")
            .skip(1)
            .map(|b| b.split(']').next().unwrap().parse().unwrap())
            .collect();
        assert!((1..=4).contains(&bits.len()), "{element}");
        read.extend(bits);
    }
    read.sort_unstable();
    assert_eq!(read, (15..30).collect::<Vec<u32>>(), "{line}");
}

/// Behind registered banks a forwarding flag's upper address bits are compared a stage
/// early, two bits a register (one LUT4; the first piece with the valid bit), and the flag's
/// own stage ANDs the pieces with the lower bits' compare (16 register bits at most, two LUT
/// levels; spatial designs 9). Before, the upper compare with its valid bit went into one
/// register (13 bits, two LUT levels) and the flag's stage read the valid bit of every lane's
/// partner: ECP5's critical paths on the seeds the write was not.
#[test]
fn forwarding_compares_take_two_address_bits_a_register_a_stage_early() {
    for (kind, rtl, split) in [
        (
            "spatial",
            spatial_rtl(true),
            super::early_split_within(11, 9),
        ),
        ("counting", counting_rtl(true), super::early_split(11)),
    ] {
        let flags: Vec<u32> = (1..)
            .take_while(|k| rtl.contains(&format!("r2_h{k}[0] <=")))
            .collect();
        assert!(flags.len() >= 4, "{kind}: {flags:?}");
        let (lo, pieces) = split;
        for &k in &flags {
            for bit in 0..8 * pieces {
                let cone = register_cone(&rtl, &format!("next:r2_h{k}[{bit}]"));
                let valid = usize::from(bit % pieces == 0);
                assert!(cone.len() <= 4 + valid, "{kind} r2_h{k}[{bit}]: {cone:?}");
                let valids = cone.iter().filter(|r| r.contains("_valid")).count();
                assert_eq!(valids, valid, "{kind} r2_h{k}[{bit}]: {cone:?}");
            }
            for lane in 0..8 {
                let cone = register_cone(&rtl, &format!("next:r3_p{k}[{lane}]"));
                assert_eq!(
                    cone.len() as u32,
                    2 * lo + pieces,
                    "{kind} r3_p{k}: {cone:?}"
                );
                assert!(
                    !cone.iter().any(|r| r.contains("_valid")),
                    "{kind}: {cone:?}"
                );
            }
        }
    }
}

/// The split keeps the flag's stage at 16 inputs or fewer (two LUT4 levels) for every address
/// width, with at most half the bits left to it, and covers every bit.
#[test]
fn the_early_split_fits_two_lut_levels() {
    assert_eq!(super::early_split(11), (5, 3), "z=64");
    assert_eq!(super::early_split(15), (5, 5), "z=1024");
    for aw in 1..=30 {
        let (lo, pieces) = super::early_split(aw);
        assert!(2 * lo + pieces <= 16 && lo <= aw / 2, "aw {aw}");
        assert!(
            lo + 2 * pieces >= aw && lo + 2 * (pieces - 1) < aw,
            "aw {aw}"
        );
        // The spatial designs' split: 9 inputs where the pieces leave room (up to 18
        // address bits), every bit covered.
        let (lo, pieces) = super::early_split_within(aw, 9);
        assert!(aw > 18 || 2 * lo + pieces <= 9, "aw {aw}: {lo}, {pieces}");
        assert!(
            lo + 2 * pieces >= aw && lo + 2 * (pieces - 1) < aw,
            "aw {aw}: {lo}, {pieces}"
        );
    }
}

/// A spatial design behind registered banks compares all but a few address bits a stage
/// early, so that each flag's stage reads 9 register bits, not 15 (z=1024: one bit pair and
/// seven pieces) or 13 (z=64: two pairs and five pieces, against five and three): the compare
/// was the critical path of ECP5 seeds (three LUT levels). Floorplanned, z=1024: medians
/// 224.87 / 229.36 to 229.52 / 232.02 MHz; z=64, twelve seeds: median 231.35 to 239.18 MHz
/// (92.7 % to 95.8 % of static). Counting keeps [`super::early_split`]. Each lane of a
/// floorplanned design also gets its own copy of `y_we` (`y_we_cp<lane>`), which its write
/// enable reads.
#[test]
fn spatial_flags_read_nine_register_bits() {
    assert_eq!(super::early_split_within(11, 9), (2, 5));
    let rtl = spatial_rtl(true);
    for lane in 0..8 {
        let cone = register_cone(&rtl, &format!("next:r3_p3[{lane}]"));
        assert_eq!(cone.len(), 9, "z=64 r3_p3[{lane}]: {cone:?}");
    }
    let mut cfg = HdlConfig::new(Layout::L8x32, 1024, KeyMode::Prehashed, 1);
    cfg.registered_banks = true;
    let rtl = generate_pipeline(&PipelineConfig::new(cfg, CellSpec::spatial(4)))
        .unwrap()
        .rtl;
    assert_eq!(super::early_split_within(15, 9), (1, 7));
    for k in 1..=4 {
        for lane in 0..8 {
            let cone = register_cone(&rtl, &format!("next:r3_p{k}[{lane}]"));
            assert_eq!(cone.len(), 9, "r3_p{k}[{lane}]: {cone:?}");
        }
    }
    for lane in 0..8 {
        let we =
            format!("wire a_we{lane} = clearing_cp{lane} | mg_write_cp{lane} | (y_we_cp{lane});");
        assert!(rtl.contains(&we), "{we}");
    }
}

/// With binary classes (8 and 16 bits) the max's decision `g<lane>` (raise the cell to the
/// class) is a function of registers that do not include the cells in Y: where the cell comes
/// from Y, whether the class is above it was registered a cycle ahead (`y_g`, `x_gt_pval`,
/// `x_f`), so the loop from Y back into Y holds a multiplexer and no compare. Before, the
/// 8-bit compare's carry chain sat in that loop (6.7-7.9 ns on ECP5, z=1024: the critical
/// path). ECP5 spatial c8 z=1024, seeds 1-3 | 4-6: medians 139.82 / 159.26 -> 186.12 /
/// 170.42 MHz.
#[test]
fn binary_classes_decide_the_max_from_registers_outside_the_loop() {
    let mut cfg = HdlConfig::new(Layout::L8x32, 1024, KeyMode::Prehashed, 1);
    cfg.registered_banks = true;
    let rtl = generate_pipeline(&PipelineConfig::new(cfg, CellSpec::spatial(8)))
        .unwrap()
        .rtl;
    for lane in 0..8 {
        let cone = register_cone(&rtl, &format!("g{lane}"));
        assert!(
            !cone.iter().any(|r| r.starts_with("y_cell")),
            "g{lane}: {cone:?}"
        );
        for want in [
            format!("y_g[{lane}]"),
            format!("x_f[{lane}]"),
            "x_gt_pval[0]".to_string(),
            format!("x_fw_y[{lane}]"),
        ] {
            assert!(cone.contains(&want), "g{lane} lacks {want}: {cone:?}");
        }
        // The compare a cycle ahead reads the cell X works on, which may come from Y.
        let ahead = register_cone(&rtl, &format!("next:x_f[{lane}]"));
        assert!(
            ahead.contains(&format!("y_cell[{}]", 8 * lane)),
            "{ahead:?}"
        );
    }
}
