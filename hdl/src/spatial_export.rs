//! Exporting a spatial design into a folder: its class cells loaded from a software
//! [`SpatialFilter`], a self-checking stimulus whose expected answers come from
//! `bloomlanes-core`, and the kit every export has (report, README, Makefile, board tops, AXI
//! wrapper, cocotb bench, formal harness).

use std::path::Path;

use bloomlanes_core::{HashId, SpatialFilter};

use crate::banks::write_cell_bank_files;
use crate::cell::CellAlu;
use crate::report::{export_pipeline, ExportSummary};
use crate::sim::{Key, Op};
use crate::stimulus::{bench_rng, write_expected, EXPORT_BENCH_OPS};
use crate::{op, CellSpec, HdlError, PipelineConfig};

/// Checks that `cfg` is the spatial design of `filter`: its cells, layout, blocks and seed,
/// one port, and XXH64.
fn check(cfg: &PipelineConfig, filter: &SpatialFilter) -> Result<(), HdlError> {
    let p = filter.params();
    let b = &cfg.base;
    let want = CellSpec::spatial(filter.cell_bits().bits());
    if cfg.cells != want || p.layout != b.layout || p.blocks != b.blocks || p.seed != b.seed {
        return Err(HdlError::Mismatch(format!(
            "filter is {} × {} blocks, seed {}, {}; the configuration is {} × {} blocks, seed {}, {}",
            p.layout, p.blocks, p.seed, want, b.layout, b.blocks, b.seed, cfg.cells
        )));
    }
    if p.hash != HashId::Xxh64 {
        return Err(HdlError::Mismatch(format!(
            "filter uses hash {:?}; the hardware computes XXH64",
            p.hash
        )));
    }
    Ok(())
}

/// Writes the spatial design `cfg` (cells of [`CellSpec::spatial`], one port) of `filter` into
/// `dir` (created if needed): the RTL and benches, one bank file per lane holding `filter`'s
/// classes, a stimulus of inserts of new keys in random classes (each key twice, in two
/// classes, so that the larger wins) and lookups of them and of random keys, whose expected
/// answers are core's, and the kit of [`crate::export`]. With `synth`, synthesis figures when
/// Yosys is installed. Returns what was written.
pub fn export_spatial_kit(
    cfg: &PipelineConfig,
    filter: &SpatialFilter,
    dir: &Path,
    synth: bool,
) -> Result<ExportSummary, HdlError> {
    cfg.validate()?;
    if cfg.cells.alu != CellAlu::Max {
        return Err(HdlError::InvalidConfig(format!(
            "a spatial export needs spatial cells, not {}",
            cfg.cells
        )));
    }
    check(cfg, filter)?;
    export_pipeline(cfg, dir, synth, |_, dir| {
        let mut paths = write_cell_bank_files(cfg, filter, dir)?;
        let mut rng = bench_rng(cfg.base.seed);
        let classes = u64::from(filter.classes());
        let mut ops: Vec<(Op, u32)> = Vec::with_capacity(EXPORT_BENCH_OPS);
        while ops.len() < EXPORT_BENCH_OPS {
            let keys: Vec<Key> = (0..8).map(|_| rng.key(cfg.base.key)).collect();
            let mut round = Vec::new();
            for k in &keys {
                let (a, b) = (1 + rng.below(classes), 1 + rng.below(classes));
                round.extend([(op::INSERT, k, a), (op::LOOKUP, k, 0)]);
                round.extend([(op::INSERT, k, b), (op::LOOKUP, k, 0)]);
            }
            let absent = rng.key(cfg.base.key);
            round.push((op::LOOKUP, &absent, 0));
            for (code, k, value) in round.into_iter().take(EXPORT_BENCH_OPS - ops.len()) {
                let o = Op {
                    code,
                    tag: ops.len() as u32,
                    key: k.clone(),
                };
                ops.push((o, value as u32));
            }
        }
        paths.extend(write_expected(cfg, filter, &[ops], dir)?);
        Ok(paths)
    })
}
