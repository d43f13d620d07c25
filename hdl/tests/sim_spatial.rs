//! The spatial pipeline (class cells, insert `Max(class)`, lookup `Min`) against core's
//! `SpatialFilter` of the same shape, the single definition of the kind: random inserts with
//! random classes, lookups of present and absent keys, often the same key back to back, with
//! input gaps and output backpressure, in Verilator and Icarus Verilog. Every answer and every
//! cell of every bank afterwards must equal the filter's; the design without forwarding must fail
//! the same stimulus.
#[macro_use]
mod common;

use bloomlanes_core::{Layout, Params, SpatialFilter};
use bloomlanes_hdl::sim::{self, BenchParams, Checked, Op, Reference, Simulator};
use bloomlanes_hdl::{
    generate_pipeline, CellAlu, CellSpec, HdlConfig, KeyMode, PipelineConfig, Reduction,
};
use common::*;

/// Classes named in the reference filters: every class a cell of 4 or 8 bits holds, and the
/// first 255 of a 16-bit cell (the higher ones the stimulus writes go through core's cell update
/// alone: see `Reference for SpatialFilter`).
const NAMED_CLASSES: u32 = 255;

/// An empty spatial filter of core with the design's layout, blocks and cell width: the
/// reference the RTL is checked against.
fn reference(cfg: &HdlConfig, bits: u32) -> SpatialFilter {
    let classes = ((1u32 << bits) - 1).min(NAMED_CLASSES);
    let names: Vec<String> = (1..=classes).map(|c| format!("c{c}")).collect();
    SpatialFilter::new(Params::new(cfg.layout, cfg.blocks), bits, &names)
        .expect("a spatial filter of the design's shape")
}

fn scfg(layout: Layout, blocks: u32, key: KeyMode, bits: u32) -> PipelineConfig {
    let mut base = cfg(layout, blocks, key, 1);
    base.top_name = format!("s{bits}_{}", base.top_name);
    PipelineConfig::spatial(base, bits)
}

fn matrix() -> Vec<PipelineConfig> {
    vec![
        scfg(Layout::L8x32, 1, KeyMode::Prehashed, 4),
        scfg(Layout::L16x64, 3, KeyMode::Bytes(13), 8),
        scfg(Layout::L8x64, 40, KeyMode::VarBytes(16), 16),
        scfg(Layout::L16x32, 100, KeyMode::Prehashed, 16),
        scfg(Layout::L8x32, 1000, KeyMode::Bytes(8), 8),
    ]
}

/// `n` operations on a pool of `pool` keys: inserts of random classes (1 to the maximum, often
/// small so that later larger ones raise them), lookups of pool keys and of fresh keys, no-ops
/// and op 2; a third of the time a run of 2 to 24 operations on one key back to back.
fn spatial_ops(c: &PipelineConfig, n: usize, pool: usize, seed: u64) -> Vec<(Op, u32)> {
    let mut rng = Rng(seed);
    let max = u64::from(c.cells.max());
    let keys: Vec<_> = (0..pool).map(|_| random_key(&c.base, &mut rng)).collect();
    let mut ops = Vec::with_capacity(n);
    let push = |ops: &mut Vec<(Op, u32)>, code: u8, key, rng: &mut Rng| {
        let top = if rng.below(2) == 0 { max.min(6) } else { max };
        let class = 1 + rng.below(top) as u32;
        let tag = rng.next() as u32;
        ops.push((Op { code, tag, key }, if code == 1 { class } else { 0 }));
    };
    while ops.len() < n {
        let k = keys[rng.below(pool as u64) as usize].clone();
        match rng.below(12) {
            0..=3 => {
                for _ in 0..2 + rng.below(23) {
                    let code = if rng.below(2) == 0 { 1 } else { 0 };
                    push(&mut ops, code, k.clone(), &mut rng);
                }
            }
            4..=6 => push(&mut ops, 1, k, &mut rng),
            7..=9 => push(&mut ops, 0, k, &mut rng),
            10 => {
                let fresh = random_key(&c.base, &mut rng);
                push(&mut ops, 0, fresh, &mut rng)
            }
            _ => {
                let code = 2 + rng.below(2) as u8;
                push(&mut ops, code, k, &mut rng)
            }
        }
    }
    ops.truncate(n);
    ops
}

/// The spatial filter under test: [`matrix`], [`spatial_ops`], core's [`SpatialFilter`].
struct Spatial;

impl Kind for Spatial {
    // Verilator loads banks of 16-bit cells (four hex digits a line); Icarus is slow on the
    // variable-length hash: the prehashed and fixed-width designs.
    const VERILATOR: Plan = (&[0, 1, 2, 3, 4], (20_000, 3000), 2);
    const ICARUS: Plan = (&[0, 1, 3], (4_000, 1000), 1);

    type Model = SpatialFilter;
    type Stim = (Op, u32);

    fn matrix() -> Vec<PipelineConfig> {
        matrix()
    }

    fn ops(c: &PipelineConfig, n: usize, pool: usize, seed: u64) -> Vec<(Op, u32)> {
        spatial_ops(c, n, pool, seed)
    }

    fn empty(c: &PipelineConfig) -> SpatialFilter {
        reference(&c.base, c.cells.bits)
    }

    /// Random classes in a quarter of the cells.
    fn loaded(c: &PipelineConfig, seed: u64) -> SpatialFilter {
        let mut m = Self::empty(c);
        let mut rng = Rng(seed);
        for _ in 0..c.base.bank_entries() / 4 {
            let h = rng.next();
            let v = 1 + rng.below(u64::from(c.cells.max())) as u32;
            m.apply(1, h, v);
        }
        m
    }

    /// Lookups of absent keys and of classes above 1.
    fn exercised(ops: &[(Op, u32)], run: &Checked<SpatialFilter>) {
        let lookups = ops
            .iter()
            .zip(&run.expected[0])
            .filter(|(o, _)| o.0.code == 0);
        let zero = lookups.clone().filter(|(_, &a)| a == 0).count();
        let high = lookups.filter(|(_, &a)| a > 1).count();
        assert!(
            zero > 0 && high > 0,
            "lookups: {zero} absent, {high} above 1"
        );
        eprintln!("  lookups: {zero} absent, {high} of a class above 1");
    }
}

simulator_tests!(
    Spatial,
    verilator_spatial_matches_the_model,
    icarus_spatial_matches_the_model
);

simulator_tests!(
    Registered<Spatial>,
    verilator_registered_spatial_matches_the_model,
    icarus_registered_spatial_matches_the_model
);

/// Without forwarding, the same stimulus at full rate gives wrong answers (the stimulus hits the
/// same cells back to back), in both simulators: 8-bit classes behind plain banks, carried as
/// they are, and 4-bit classes behind registered banks, carried as thermometer codes.
#[test]
fn spatial_forwarding_is_exercised() {
    for s in [Simulator::Icarus, Simulator::Verilator] {
        if !have(s, "spatial_forwarding_is_exercised") {
            continue;
        }
        for (blocks, bits, registered_banks) in [(1000, 8, false), (64, 4, true)] {
            let mut good = scfg(Layout::L8x32, blocks, KeyMode::Prehashed, bits);
            if registered_banks {
                good = common::registered(good);
            }
            let mut bad = good.clone();
            bad.forwarding = false;
            bad.base.top_name = format!("s{bits}_no_forwarding");
            let ops = vec![spatial_ops(&good, 3000, 3, 12)];
            let p = BenchParams {
                fast_ops: 3000,
                readback: 64,
                ..BenchParams::default()
            };
            let empty = reference(&good.base, bits);
            let log = sim::run_pipeline(&good, s, None::<&SpatialFilter>, &ops, p).unwrap();
            sim::check_pipeline(&good, &empty, &ops, &log).unwrap();
            let log = sim::run_pipeline(&bad, s, None::<&SpatialFilter>, &ops, p).unwrap();
            assert!(
                sim::check_pipeline(&bad, &empty, &ops, &log).is_err(),
                "[{}] the {bits}-bit design without forwarding passed",
                s.name()
            );
        }
    }
}

/// Every ALU and reduction the generator takes is lint-clean (the spatial designs, behind plain
/// and registered banks, a counting design answering its minimum, a max design answering
/// membership), the banks are block RAM, and combinations it cannot build are refused.
#[test]
fn cell_pipelines_are_lint_clean_and_synthesizable() {
    let mut designs = matrix();
    // Registered banks: 4-bit classes as thermometer codes, one tile a lane and floorplanned
    // (several DP16KD a lane), and 8-bit classes floorplanned.
    designs.extend([(64, 4), (1000, 4), (1000, 8)].map(|(blocks, bits)| {
        common::registered(scfg(Layout::L8x32, blocks, KeyMode::Prehashed, bits))
    }));
    let others = [
        (
            Layout::L16x64,
            KeyMode::Bytes(8),
            8,
            CellAlu::Counter,
            Reduction::Min,
            "count_min",
        ),
        (
            Layout::L8x32,
            KeyMode::Prehashed,
            4,
            CellAlu::Max,
            Reduction::AllNonZero,
            "max_member",
        ),
    ];
    for (layout, key, bits, alu, reduction, name) in others {
        let mut base = cfg(layout, 5, key, 1);
        base.top_name = name.into();
        designs.push(PipelineConfig::new(
            base,
            CellSpec {
                bits,
                alu,
                reduction,
            },
        ));
    }
    let rtl: Vec<_> = designs
        .iter()
        .map(|c| generate_pipeline(c).unwrap())
        .collect();
    lint_and_synthesize(&rtl);
    let refused = [
        PipelineConfig::spatial(cfg(Layout::L8x32, 4, KeyMode::Prehashed, 1), 2),
        PipelineConfig::spatial(cfg(Layout::L8x32, 4, KeyMode::Prehashed, 2), 8),
    ];
    for c in refused {
        assert!(generate_pipeline(&c).is_err(), "{c:?}");
    }
}
