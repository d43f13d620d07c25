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

/// The counter's decrement decision, which every counter bit of the next cycle waits for,
/// reads at most seven register bits (one ECP5 LUT7, one LUT level): before, it read every
/// lane's forwarding flag and both zero flags (26 bits, four to five LUT levels on the
/// loop from Y, the counting design's critical path on ECP5).
#[test]
fn the_decrement_decision_reads_seven_register_bits() {
    for registered in [false, true] {
        let cone = register_cone(&counting_rtl(registered), "x_dec");
        assert!(cone.contains("y_dec[0]"), "{cone:?}");
        assert!(
            cone.len() <= 7,
            "registered {registered}: x_dec reads {cone:?}"
        );
    }
}

/// With registered banks, the flag of four lanes not shared with the one ahead
/// (`x_pre_fwd`, registered in R3) reads 16 register bits: per lane the one-ahead and
/// two-ahead flags, Y's zero flag and the merged flag of the three to six ahead (`r3_far`,
/// registered in R2). Before, it read every forwarded stage's flag and zero flag (44 bits,
/// three LUT levels: the critical path of every seed once the loop was shortened).
#[test]
fn registered_forwarded_flags_are_merged_a_stage_early() {
    let cone = register_cone(&counting_rtl(true), "next:x_pre_fwd[0]");
    assert!(cone.contains("r3_far[0]"), "{cone:?}");
    assert!(cone.len() <= 16, "x_pre_fwd[0] reads {cone:?}");
}
