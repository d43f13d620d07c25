//! Random inserts, lookups and clears with random backpressure, every answer checked against
//! bloomlanes-core, in Verilator (full matrix) and Icarus Verilog (a subset with a quarter of the
//! operations: it is slower).
mod common;

use bloomlanes_core::Layout;
use bloomlanes_hdl::sim::{BenchParams, Simulator};
use bloomlanes_hdl::KeyMode;
use common::*;

const OPS: usize = 40_000;

/// Random gaps and backpressure; afterwards the first `readback` bank entries (capped at the
/// bank size) are read back and compared with core's filter.
fn params(seed: u32, readback: u32) -> BenchParams {
    BenchParams {
        fast_ops: 2_000,
        valid_pct: 70,
        ready_pct: 60,
        seed,
        readback,
    }
}

fn matrix() -> Vec<bloomlanes_hdl::HdlConfig> {
    vec![
        cfg(Layout::L8x32, 7, KeyMode::Bytes(8), 1),
        cfg(Layout::L8x64, 13, KeyMode::Bytes(13), 2),
        cfg(Layout::L16x32, 100, KeyMode::Prehashed, 3),
        cfg(Layout::L16x64, 1, KeyMode::Bytes(13), 1),
        cfg(Layout::L8x32, 1000, KeyMode::Bytes(8), 2),
        cfg(Layout::L16x64, 5, KeyMode::Bytes(40), 1),
        cfg(Layout::L8x64, 300, KeyMode::VarBytes(64), 2),
    ]
}

#[test]
fn verilator_matches_core() {
    if !have(Simulator::Verilator, "verilator_matches_core") {
        return;
    }
    let designs: Vec<_> = matrix().into_iter().enumerate().collect();
    each_in_parallel(&designs, |(i, c)| {
        let ops = random_ops(c, OPS, OPS / 4, 2_000, 100 + *i as u64);
        let params = params(7 + *i as u32, u32::MAX);
        run_and_check(c, Simulator::Verilator, None, &ops, params);
    });
}

#[test]
fn icarus_matches_core() {
    if !have(Simulator::Icarus, "icarus_matches_core") {
        return;
    }
    // A quarter of Verilator's operations: Icarus interprets the design (the full 40,000 took
    // 22-57 s a design, most of the binary's time).
    let designs: Vec<_> = matrix().into_iter().enumerate().take(3).collect();
    each_in_parallel(&designs, |(i, c)| {
        let ops = random_ops(c, OPS / 4, OPS / 40, 2_000, 200 + *i as u64);
        run_and_check(
            c,
            Simulator::Icarus,
            None,
            &ops,
            params(17 + *i as u32, 256),
        );
    });
}

/// Registered banks (a bank read of three cycles): designs of 1, 2 and 3 ports, prehashed,
/// fixed and variable-length keys, the same random operations, clears and backpressure.
#[test]
fn registered_banks_match_core() {
    for (s, picks, ops) in [
        (Simulator::Verilator, &[0usize, 2, 4, 6][..], OPS / 2),
        (Simulator::Icarus, &[1usize][..], OPS / 4),
    ] {
        if !have(s, "registered banks against core") {
            continue;
        }
        each_in_parallel(picks, |&i| {
            let mut c = matrix()[i].clone();
            c.registered_banks = true;
            c.top_name.push_str("_rb");
            let ops = random_ops(&c, ops, ops / 4, 2_000, 300 + i as u64);
            run_and_check(&c, s, None, &ops, params(27 + i as u32, u32::MAX));
        });
    }
}

/// Answer FIFOs held at their credit limit: operations arrive in 19 cycles of 20 and the sink
/// takes an answer in one cycle of ten, so `s_ready` throttles at the limit for most of the run.
/// The plain design's credit reads an occupancy two cycles old, the registered designs' three
/// (`room_r`, where the FIFO has an entry to spare); a limit one entry too high for either lag
/// loses answers here (an exported registered bench with the limit one higher: 1 of 999
/// answers wrong at these rates).
#[test]
fn full_answer_fifos_lose_no_answer() {
    if !have(Simulator::Verilator, "full answer FIFOs") {
        return;
    }
    let designs: Vec<(usize, bloomlanes_hdl::HdlConfig)> = [
        (cfg(Layout::L8x32, 64, KeyMode::Prehashed, 1), false),
        (cfg(Layout::L8x32, 64, KeyMode::Prehashed, 2), true),
        (cfg(Layout::L8x32, 7, KeyMode::Bytes(8), 1), true),
    ]
    .into_iter()
    .map(|(mut c, registered)| {
        if registered {
            c.registered_banks = true;
            c.top_name.push_str("_rb");
        }
        c.top_name.push_str("_full");
        c
    })
    .enumerate()
    .collect();
    each_in_parallel(&designs, |(i, c)| {
        let ops = random_ops(c, 6_000, 1_500, 200, 400 + *i as u64);
        let params = BenchParams {
            fast_ops: 200,
            valid_pct: 95,
            ready_pct: 10,
            seed: 37 + *i as u32,
            readback: 256,
        };
        run_and_check(c, Simulator::Verilator, None, &ops, params);
    });
}
