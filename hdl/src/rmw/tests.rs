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
