//! Exporting a counting design into a folder: the RTL, the Verilog bench and Verilator
//! harness, the counter banks of a software filter, and a self-checking stimulus whose
//! expected results come from `bloomlanes-core`.

use std::path::{Path, PathBuf};

use bloomlanes_core::CountingFilter;

use crate::counting::{generate_counting, CountingConfig};
use crate::counting_banks::write_counting_bank_files;
use crate::stimulus::write_counting_bench;
use crate::HdlError;

pub use crate::stimulus::COUNTING_BENCH_OPS;

/// Writes into `dir` (created if needed): `<top>.v`, `<top>_tb.v`, `<top>_harness.cpp`, one
/// bank file per lane holding `filter`'s counters (all zero without a filter), and a stimulus
/// for the Verilog bench (`bench_cfg.hex`, `stim_p0.hex`, `bench_expect_p0.hex`): inserts of
/// new keys, lookups and deletes of them (often back to back), deletes of absent keys; the
/// expected results are core's, in order, so they hold whatever the bench's random gaps and
/// backpressure. Run it with
/// `iverilog -g2005 -s <top>_tb -P<top>_tb.LOAD_BANKS=1 -o sim.vvp <top>.v <top>_tb.v &&
/// vvp -n sim.vvp` in `dir`: it prints `PASS: ...` or `FAIL: ...`.
/// Returns the paths written.
pub fn export_counting(
    cfg: &CountingConfig,
    filter: Option<&CountingFilter>,
    dir: &Path,
) -> Result<Vec<PathBuf>, HdlError> {
    let design = generate_counting(cfg)?;
    let empty = CountingFilter::counting(cfg.pipeline().params(), cfg.counter_bits);
    let start = match filter {
        Some(f) => {
            cfg.check_filter(f)?;
            f
        }
        None => &empty,
    };
    let mut paths = design.write_sources(dir)?;
    paths.extend(write_counting_bank_files(start, dir, &design.top_name)?);
    paths.extend(write_counting_bench(cfg, start, dir)?);
    Ok(paths)
}
