//! Banks loaded from files written from a software filter answer exactly like that filter.
mod common;

use bloomlanes_core::{Filter, Layout, Params};
use bloomlanes_hdl::sim::{self, BenchParams, Key, Op, Simulator};
use bloomlanes_hdl::{op, simulate_lookup_hashes, simulate_lookups, HdlConfig, KeyMode};
use common::*;

fn filled(c: &HdlConfig, keys: usize, rng: &mut Rng) -> (Filter, Vec<Key>) {
    let mut f = Filter::new(Params::new(c.layout, c.blocks).with_seed(c.seed));
    let mut inserted = Vec::new();
    for _ in 0..keys {
        let k = random_key(c, rng);
        f.insert_hash(sim::key_hash(c, &k));
        inserted.push(k);
    }
    (f, inserted)
}

/// Loads a filled filter, looks up `queries` keys and reads the first `readback` bank entries
/// back through the management port (each read drains the pipeline: slow in Icarus).
fn loaded_lookups(
    sim_kind: Simulator,
    c: &HdlConfig,
    keys: usize,
    queries: usize,
    readback: u32,
    seed: u64,
) {
    let mut rng = Rng(seed);
    let (f, inserted) = filled(c, keys, &mut rng);
    let mut ops: Vec<Vec<Op>> = vec![Vec::new(); c.lookup_ports];
    for i in 0..queries {
        let key = if i % 2 == 0 {
            inserted[rng.below(inserted.len() as u64) as usize].clone()
        } else {
            random_key(c, &mut rng)
        };
        ops[i % c.lookup_ports].push(Op {
            code: op::LOOKUP,
            tag: i as u32,
            key,
        });
    }
    let params = BenchParams {
        fast_ops: 500,
        valid_pct: 80,
        ready_pct: 70,
        seed: seed as u32,
        readback,
    };
    let stats = run_and_check(c, sim_kind, Some(&f), &ops, params);
    // Every inserted key that was asked for must hit.
    assert!(
        stats.hits as usize >= queries / 2,
        "{}: too few hits",
        c.top_name
    );
}

fn configs() -> Vec<HdlConfig> {
    vec![
        cfg(Layout::L8x32, 1000, KeyMode::Bytes(8), 2),
        cfg(Layout::L16x64, 37, KeyMode::Bytes(13), 1),
        cfg(Layout::L8x64, 3, KeyMode::Prehashed, 3),
        cfg(Layout::L16x32, 11, KeyMode::Prehashed, 1),
        cfg(Layout::L8x32, 4000, KeyMode::VarBytes(64), 1),
        cfg(Layout::L16x64, 7, KeyMode::VarBytes(40), 3),
    ]
}

/// Every configuration in `simulator`: `queries` lookups of a filled filter, the first
/// `readback` entries read back, seeds from `seed`.
fn loaded_banks_match(simulator: Simulator, queries: usize, readback: u32, seed: u64) {
    if !have(simulator, "loaded banks") {
        return;
    }
    let configs: Vec<(usize, HdlConfig)> = configs().into_iter().enumerate().collect();
    each_in_parallel(&configs, |(i, c)| {
        let keys = (c.blocks as usize * 20).min(20_000);
        loaded_lookups(simulator, c, keys, queries, readback, seed + *i as u64);
    });
}

#[test]
fn verilator_loaded_banks_match_software_filter() {
    loaded_banks_match(Simulator::Verilator, 20_000, 4096, 300);
}

#[test]
fn icarus_loaded_banks_match_software_filter() {
    // Fewer lookups than Verilator's 20,000: Icarus interprets the design (10,000 took 137 s
    // of the binary's 140 with the variable-length hash).
    loaded_banks_match(Simulator::Icarus, 4_000, 128, 400);
}

#[test]
fn public_simulate_lookups_agrees_with_filter() {
    if !full_runs() || bloomlanes_hdl::simulator_available().is_none() {
        skip(format_args!(
            "public_simulate_lookups_agrees_with_filter: no simulator installed or BLOOMLANES_FULL is unset"
        ));
        return;
    }
    let mut rng = Rng(9);
    // Byte keys hashed on chip.
    let mut f = Filter::new(Params::new(Layout::L8x32, 50).with_seed(3));
    let keys: Vec<Vec<u8>> = (0..2000)
        .map(|i: u64| (i * 7919).to_le_bytes().to_vec())
        .collect();
    for k in &keys[..700] {
        f.insert(k);
    }
    let mut c = HdlConfig::for_filter(&f, KeyMode::Bytes(8));
    c.lookup_ports = 2;
    let got = simulate_lookups(&c, &f, &keys).expect("simulate");
    let want: Vec<bool> = keys.iter().map(|k| f.contains(k)).collect();
    assert_eq!(got, want);
    assert!(got[..700].iter().all(|&b| b));
    // The same filter through a prehashed design, keys hashed on the host.
    let c2 = HdlConfig::for_filter(&f, KeyMode::Prehashed);
    assert_eq!(simulate_lookups(&c2, &f, &keys).expect("simulate"), want);
    let hashes: Vec<u64> = (0..500).map(|_| rng.next()).collect();
    let got = simulate_lookup_hashes(&c2, &f, &hashes).expect("simulate");
    let want: Vec<bool> = hashes.iter().map(|&h| f.contains_hash(h)).collect();
    assert_eq!(got, want);
    // Mismatched filter and configuration.
    let other = Filter::new(Params::new(Layout::L8x32, 51).with_seed(3));
    assert!(simulate_lookups(&c, &other, &keys).is_err());
    assert!(simulate_lookup_hashes(&c, &f, &hashes).is_err());
}
