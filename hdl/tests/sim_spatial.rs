//! The spatial pipeline (class cells, insert `Max(class)`, lookup `Min`) against a reference
//! model written here from core's cell index function and the cell packing: random inserts with
//! random classes, lookups of present and absent keys, often the same key back to back, with
//! input gaps and output backpressure, in Verilator and Icarus Verilog. Every answer and every
//! cell of every bank afterwards must equal the model's; the design without forwarding must fail
//! the same stimulus.
mod common;

use std::process::Command;

use bloomlanes_core::counting::cell;
use bloomlanes_core::Layout;
use bloomlanes_hdl::sim::{self, on_path, BenchParams, Op, Reference, Simulator};
use bloomlanes_hdl::{
    generate_pipeline, CellAlu, CellSpec, Cells, HdlConfig, KeyMode, PipelineConfig, Reduction,
};
use common::*;

/// The spatial filter as the lead's core will define it: `c`-bit cells packed little-endian in
/// 32-bit words (`32 / c` per word, cell `k` at bits `c × (k mod 32/c)` of word `k / (32/c)`),
/// the key's cells those of `bloomlanes_core::counting::cell`.
#[derive(Clone, Debug)]
struct SpatialModel {
    layout: Layout,
    blocks: u32,
    bits: u32,
    words: Vec<u32>,
}

impl SpatialModel {
    fn new(cfg: &HdlConfig, bits: u32) -> SpatialModel {
        let cells = u64::from(cfg.blocks) * cfg.layout.block_bits() as u64;
        SpatialModel {
            layout: cfg.layout,
            blocks: cfg.blocks,
            bits,
            words: vec![0; (cells * u64::from(bits)).div_ceil(32) as usize],
        }
    }

    fn get(&self, k: u64) -> u32 {
        let per = u64::from(32 / self.bits);
        let shift = (k % per) as u32 * self.bits;
        (self.words[(k / per) as usize] >> shift) & ((1u64 << self.bits) - 1) as u32
    }

    fn set(&mut self, k: u64, v: u32) {
        let per = u64::from(32 / self.bits);
        let shift = (k % per) as u32 * self.bits;
        let mask = (((1u64 << self.bits) - 1) as u32) << shift;
        let w = &mut self.words[(k / per) as usize];
        *w = (*w & !mask) | (v << shift & mask);
    }

    fn key_cells(&self, hash: u64) -> Vec<u64> {
        (0..self.layout.lanes())
            .map(|lane| cell(self.layout, self.blocks, hash, lane))
            .collect()
    }
}

impl Cells for SpatialModel {
    fn cell(&self, lane: usize, entry: u64) -> u32 {
        let w = u64::from(self.layout.word_bits());
        let (block, bit) = (entry / w, entry % w);
        self.get((block * self.layout.lanes() as u64 + lane as u64) * w + bit)
    }
}

impl Reference for SpatialModel {
    fn apply(&mut self, code: u8, hash: u64, value: u32) -> u32 {
        let cells = self.key_cells(hash);
        match code {
            0 => cells.iter().map(|&k| self.get(k)).min().unwrap_or(0),
            1 => {
                for k in cells {
                    let v = self.get(k).max(value);
                    self.set(k, v);
                }
                0
            }
            _ => 0,
        }
    }
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

fn params(seed: u32, fast: u32) -> BenchParams {
    BenchParams {
        fast_ops: fast,
        valid_pct: 70,
        ready_pct: 60,
        seed,
        readback: u32::MAX,
    }
}

/// A start model with random classes in a quarter of the cells.
fn loaded(c: &PipelineConfig, seed: u64) -> SpatialModel {
    let mut m = SpatialModel::new(&c.base, c.cells.bits);
    let mut rng = Rng(seed);
    for _ in 0..c.base.bank_entries() / 4 {
        let h = rng.next();
        let v = 1 + rng.below(u64::from(c.cells.max())) as u32;
        m.apply(1, h, v);
    }
    m
}

/// Runs and checks every answer and cell; also the documented latency and one accept per cycle
/// while the bench drives at full rate. Returns the non-zero lookup answers.
fn run_and_check_spatial(
    c: &PipelineConfig,
    simulator: Simulator,
    start: Option<&SpatialModel>,
    ops: &[(Op, u32)],
    p: BenchParams,
) -> u64 {
    let t0 = std::time::Instant::now();
    let design = generate_pipeline(c).unwrap();
    let lists = [ops.to_vec()];
    let log = sim::run_pipeline(c, simulator, start, &lists, p).unwrap_or_else(|e| panic!("{e}"));
    let first = start
        .cloned()
        .unwrap_or_else(|| SpatialModel::new(&c.base, c.cells.bits));
    let (stats, _, expected) = sim::check_pipeline(c, &first, &lists, &log)
        .unwrap_or_else(|e| panic!("{} [{}]: {e}", c.base.top_name, simulator.name()));
    assert_eq!(log.readback.len() as u64, c.base.bank_entries());
    assert_eq!(stats.min_latency, u64::from(design.latency_cycles));
    let acc = &log.accepted[0];
    let n = (p.fast_ops as usize).min(acc.len());
    assert_eq!(acc[n - 1] - acc[0], n as u64 - 1, "II = 1 at full rate");
    // The stimulus must find classes above 1 and absent keys.
    let lookups: Vec<u32> = ops
        .iter()
        .zip(&expected[0])
        .filter(|(o, _)| o.0.code == 0)
        .map(|(_, &a)| a)
        .collect();
    let (zero, high) = (
        lookups.iter().filter(|&&a| a == 0).count(),
        lookups.iter().filter(|&&a| a > 1).count(),
    );
    assert!(
        zero > 0 && high > 0,
        "lookups: {zero} absent, {high} above 1"
    );
    eprintln!(
        "{} [{}]: {} ops, {} lookups ({zero} absent, {high} of class > 1), {} cycles, latency \
         {}..{}, {:.1} s",
        c.base.top_name,
        simulator.name(),
        stats.ops,
        lookups.len(),
        stats.cycles,
        stats.min_latency,
        stats.max_latency,
        t0.elapsed().as_secs_f64()
    );
    stats.hits
}

#[test]
fn verilator_spatial_matches_the_model() {
    if !have(Simulator::Verilator, "verilator_spatial_matches_the_model") {
        return;
    }
    for (i, c) in matrix().iter().enumerate() {
        let ops = spatial_ops(c, 20_000, 3 + 2 * i, 900 + i as u64);
        run_and_check_spatial(
            c,
            Simulator::Verilator,
            None,
            &ops,
            params(3 + i as u32, 3000),
        );
    }
    // Banks loaded from a model (16-bit cells: four hex digits a line).
    let c = &matrix()[2];
    let start = loaded(c, 77);
    let ops = spatial_ops(c, 5_000, 6, 41);
    run_and_check_spatial(c, Simulator::Verilator, Some(&start), &ops, params(5, 1000));
}

#[test]
fn icarus_spatial_matches_the_model() {
    if !have(Simulator::Icarus, "icarus_spatial_matches_the_model") {
        return;
    }
    // Icarus is slow on the variable-length hash: the prehashed and fixed-width designs.
    for (i, c) in matrix()
        .iter()
        .enumerate()
        .filter(|(i, _)| [0, 1, 3].contains(i))
    {
        let ops = spatial_ops(c, 4_000, 4 + i, 700 + i as u64);
        run_and_check_spatial(c, Simulator::Icarus, None, &ops, params(9 + i as u32, 1000));
    }
    let c = &matrix()[1];
    let start = loaded(c, 8);
    let ops = spatial_ops(c, 2_000, 5, 44);
    run_and_check_spatial(c, Simulator::Icarus, Some(&start), &ops, params(6, 500));
}

/// Without forwarding, the same stimulus at full rate gives wrong answers (the stimulus hits the
/// same cells back to back), in both simulators.
#[test]
fn spatial_forwarding_is_exercised() {
    for s in [Simulator::Icarus, Simulator::Verilator] {
        if !have(s, "spatial_forwarding_is_exercised") {
            continue;
        }
        let good = scfg(Layout::L8x32, 1000, KeyMode::Prehashed, 8);
        let mut bad = good.clone();
        bad.forwarding = false;
        bad.base.top_name = "s8_no_forwarding".into();
        let ops = vec![spatial_ops(&good, 3000, 3, 12)];
        let p = BenchParams {
            fast_ops: 3000,
            readback: 64,
            ..BenchParams::default()
        };
        let empty = SpatialModel::new(&good.base, 8);
        let log = sim::run_pipeline(&good, s, None::<&SpatialModel>, &ops, p).unwrap();
        sim::check_pipeline(&good, &empty, &ops, &log).unwrap();
        let log = sim::run_pipeline(&bad, s, None::<&SpatialModel>, &ops, p).unwrap();
        assert!(
            sim::check_pipeline(&bad, &empty, &ops, &log).is_err(),
            "[{}] the design without forwarding passed",
            s.name()
        );
    }
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("start tool");
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), s)
}

/// Every ALU and reduction the generator takes is lint-clean (the spatial designs, a counting
/// design answering its minimum, a max design answering membership), the banks are block RAM,
/// and combinations it cannot build are refused.
#[test]
fn cell_pipelines_are_lint_clean_and_synthesizable() {
    let mut designs = matrix();
    let mut count = PipelineConfig::new(
        cfg(Layout::L16x64, 5, KeyMode::Bytes(8), 1),
        CellSpec {
            bits: 8,
            alu: CellAlu::Counter,
            reduction: Reduction::Min,
        },
    );
    count.base.top_name = "count_min".into();
    let mut member = PipelineConfig::new(
        cfg(Layout::L8x32, 9, KeyMode::Prehashed, 1),
        CellSpec {
            bits: 4,
            alu: CellAlu::Max,
            reduction: Reduction::AllNonZero,
        },
    );
    member.base.top_name = "max_member".into();
    designs.extend([count, member]);
    let dir = sim::fresh_dir("slint").unwrap();
    for c in &designs {
        let d = generate_pipeline(c).unwrap();
        let f = dir.join(format!("{}.v", d.top_name));
        std::fs::write(&f, &d.rtl).unwrap();
        if on_path("verilator") {
            let (ok, out) = run(Command::new("verilator")
                .args(["--lint-only", "-Wall"])
                .arg(&f));
            assert!(ok && !out.contains("%Warning"), "{}:\n{out}", d.top_name);
        }
    }
    if on_path("yosys") {
        let d = generate_pipeline(&matrix()[0]).unwrap();
        let f = dir.join(format!("{}.v", d.top_name));
        let (ok, out) = run(Command::new("yosys").arg("-p").arg(format!(
            "read_verilog {}; synth_ice40 -top {}; stat",
            f.display(),
            d.top_name
        )));
        assert!(ok, "{out}");
        assert!(out.contains("SB_RAM40_4K"), "no block RAM:\n{out}");
    } else {
        eprintln!("SKIP: spatial yosys check: yosys is not installed");
    }
    let refused = [
        PipelineConfig::spatial(cfg(Layout::L8x32, 4, KeyMode::Prehashed, 1), 2),
        PipelineConfig::spatial(cfg(Layout::L8x32, 4, KeyMode::Prehashed, 2), 8),
    ];
    for c in refused {
        assert!(generate_pipeline(&c).is_err(), "{c:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}
