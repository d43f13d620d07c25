//! Exporting a counting design into a folder: the RTL, the Verilog bench and Verilator
//! harness, the counter banks of a software filter, and a self-checking stimulus whose
//! expected results come from `bloomlanes-core`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bloomlanes_core::{CountingFilter, Params};

use crate::counting::{generate_counting, op, CountingConfig};
use crate::counting_banks::write_counting_bank_files;
use crate::counting_sim::apply_counting_op;
use crate::sim::{stim_line, Key, Op};
use crate::{HdlError, KeyMode};

/// Operations of the stimulus that [`export_counting`] writes.
pub const COUNTING_BENCH_OPS: usize = 1000;

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
    let b = &cfg.base;
    let empty = CountingFilter::counting(
        Params::new(b.layout, b.blocks).with_seed(b.seed),
        cfg.counter_bits,
    );
    let start = match filter {
        Some(f) => {
            cfg.check_filter(f)?;
            f
        }
        None => &empty,
    };
    std::fs::create_dir_all(dir)?;
    let t = &design.top_name;
    let mut paths = Vec::new();
    for (name, text) in [
        (format!("{t}.v"), &design.rtl),
        (format!("{t}_tb.v"), &design.testbench),
        (format!("{t}_harness.cpp"), &design.cpp_harness),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text)?;
        paths.push(p);
    }
    paths.extend(write_counting_bank_files(start, dir, t)?);
    let ops = bench_ops(cfg);
    let mut after = start.clone();
    let mut stim = String::new();
    let mut expect = String::new();
    for o in &ops {
        stim.push_str(&stim_line(b, o)?);
        stim.push('\n');
        let hit = apply_counting_op(cfg, &mut after, o);
        expect.push_str(if hit { "1\n" } else { "0\n" });
    }
    let mut c = String::new();
    for v in [200u32, 90, 80, 7, ops.len() as u32, 0] {
        let _ = writeln!(c, "{v:08x}");
    }
    for (name, text) in [
        ("bench_cfg.hex", c),
        ("stim_p0.hex", stim),
        ("bench_expect_p0.hex", expect),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text)?;
        paths.push(p);
    }
    Ok(paths)
}

/// The stimulus: rounds of 8 new keys inserted, looked up, deleted (each twice: the second is
/// refused unless another key shares the counters) and looked up again, then an absent key
/// deleted; the same key is hit back to back.
fn bench_ops(cfg: &CountingConfig) -> Vec<Op> {
    let mut x = 0x0123_4567_89ab_cdefu64 ^ cfg.base.seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut key = || match cfg.base.key {
        KeyMode::Prehashed => Key::Hash(next()),
        KeyMode::Bytes(n) => Key::Bytes((0..n).map(|_| next() as u8).collect()),
        KeyMode::VarBytes(n) => {
            let len = (next() % (n as u64 + 1)) as usize;
            Key::Bytes((0..len).map(|_| next() as u8).collect())
        }
    };
    let mut ops = Vec::with_capacity(COUNTING_BENCH_OPS);
    while ops.len() < COUNTING_BENCH_OPS {
        let keys: Vec<Key> = (0..8).map(|_| key()).collect();
        let mut round = Vec::new();
        for k in &keys {
            round.extend([(op::INSERT, k), (op::LOOKUP, k), (op::INSERT, k)]);
        }
        for k in &keys {
            round.extend([(op::DELETE, k), (op::LOOKUP, k), (op::DELETE, k)]);
            round.extend([(op::DELETE, k), (op::LOOKUP, k)]);
        }
        let absent = key();
        round.push((op::DELETE, &absent));
        for (code, k) in round {
            if ops.len() < COUNTING_BENCH_OPS {
                ops.push(Op {
                    code,
                    tag: ops.len() as u32,
                    key: k.clone(),
                });
            }
        }
    }
    ops
}
