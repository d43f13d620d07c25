//! Exporting a counting design into a folder: the RTL, the Verilog bench and Verilator
//! harness, the counter banks of a software filter, a self-checking stimulus whose expected
//! results come from `bloomlanes-core`, and the kit every export has (report, README,
//! Makefile, board tops, AXI wrapper, cocotb bench, formal harness).

use std::path::{Path, PathBuf};

use bloomlanes_core::CountingFilter;

use crate::counting::CountingConfig;
use crate::counting_banks::write_counting_bank_files;
use crate::report::{export_pipeline, ExportSummary};
use crate::stimulus::write_counting_bench;
use crate::HdlError;

pub use crate::stimulus::COUNTING_BENCH_OPS;

/// Writes into `dir` (created if needed): `<top>.v`, `<top>_tb.v`, `<top>_harness.cpp`, one
/// bank file per lane holding `filter`'s counters (all zero without a filter), a stimulus
/// for the Verilog bench (`bench_cfg.hex`, `stim_p0.hex`, `bench_expect_p0.hex`): inserts of
/// new keys, lookups and deletes of them (often back to back), deletes of absent keys; the
/// expected results are core's, in order, so they hold whatever the bench's random gaps and
/// backpressure; and the kit of [`crate::export`] (README.md, Makefile, board tops, AXI
/// wrapper, cocotb, formal, report). Run the bench with `make sim`, or
/// `iverilog -g2005 -s <top>_tb -P<top>_tb.LOAD_BANKS=1 -o sim.vvp <top>.v <top>_tb.v &&
/// vvp -n sim.vvp` in `dir`: it prints `PASS: ...` or `FAIL: ...`.
/// Returns the paths written.
pub fn export_counting(
    cfg: &CountingConfig,
    filter: Option<&CountingFilter>,
    dir: &Path,
) -> Result<Vec<PathBuf>, HdlError> {
    export_counting_kit(cfg, filter, dir, false).map(|s| s.files)
}

/// [`export_counting`], with synthesis figures in the report when `synth` is set and Yosys is
/// installed; returns what was written.
pub fn export_counting_kit(
    cfg: &CountingConfig,
    filter: Option<&CountingFilter>,
    dir: &Path,
    synth: bool,
) -> Result<ExportSummary, HdlError> {
    cfg.validate()?;
    let empty = CountingFilter::counting(cfg.pipeline().params(), cfg.counter_bits);
    let start = match filter {
        Some(f) => {
            cfg.check_filter(f)?;
            f
        }
        None => &empty,
    };
    export_pipeline(&cfg.pipeline(), dir, synth, |design, dir| {
        let mut paths = write_counting_bank_files(start, dir, &design.top_name)?;
        paths.extend(write_counting_bench(cfg, start, dir)?);
        Ok(paths)
    })
}
