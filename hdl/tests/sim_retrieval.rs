//! The retrieval pipeline (XXH64, the table's mix and segment arithmetic, one bank per cell of
//! a key, XOR and check) against core's `RetrievalTable::get`: tables of several widths and
//! arities built by core, loaded into the banks, and random lookups of built and absent keys
//! (and no-ops) at full rate, then with input gaps and output backpressure, in Verilator and
//! Icarus Verilog. Every answer, its order, latency and one accept per cycle at full rate are
//! checked, and every bank entry read back through the management port equals core's cell.
#[macro_use]
mod common;

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{Layout, Params};
use bloomlanes_hdl::sim::{BenchParams, Key, Op, Simulator};
use bloomlanes_hdl::{
    answer_word, generate_pipeline, op, HdlConfig, KeyMode, PipelineConfig, RetrievalBanks,
};
use common::*;

const SEED: u64 = 0x5eed_0000_0000_0001;

/// A design and the table it holds: `n` keys (u64 keys for hashed designs, random hashes for
/// prehashed ones) with random `v`-bit values.
struct Case {
    cfg: PipelineConfig,
    table: RetrievalTable,
    /// The built keys as the design takes them, with the u64 key where there is one.
    keys: Vec<(Key, Option<u64>)>,
}

fn case(v: u8, f: u8, arity: u8, n: usize, key: KeyMode) -> Case {
    let mut rng = Rng(u64::from(v) << 16 | u64::from(f) << 8 | u64::from(arity));
    let values: Vec<u32> = (0..n)
        .map(|_| (rng.next() & ((1u64 << v) - 1)) as u32)
        .collect();
    let spec = RetrievalSpec::new(v, f).with_arity(arity);
    let base = Params::new(Layout::L8x64, 1).with_seed(SEED);
    let (table, keys) = if key == KeyMode::Prehashed {
        let hashes: Vec<u64> = (0..n).map(|_| rng.next()).collect();
        let t = RetrievalTable::build(base, spec, &hashes, &values).unwrap();
        (t, hashes.iter().map(|&h| (Key::Hash(h), None)).collect())
    } else {
        let ks: Vec<u64> = (0..n).map(|_| rng.next()).collect();
        let t = RetrievalTable::build_keys(base, spec, &ks, &values).unwrap();
        let keys = ks.iter().map(|&k| (bytes(k), Some(k))).collect();
        (t, keys)
    };
    let mut hw = HdlConfig::new(Layout::L8x64, 1, key, SEED);
    hw.tag_bits = 16;
    hw.top_name = format!(
        "rt_v{v}_f{f}_a{arity}_{}",
        if key == KeyMode::Prehashed { "h" } else { "k8" }
    );
    let cfg = PipelineConfig::retrieval(hw, *table.shape());
    Case { cfg, table, keys }
}

fn bytes(k: u64) -> Key {
    Key::Bytes(k.to_le_bytes().to_vec())
}

/// The designs: prehashed and 8-byte keys, arity 3 and 4, cells of 13 to 63 bits (the first,
/// the smallest, is the one synthesised).
fn cases() -> Vec<Case> {
    vec![
        case(16, 0, 3, 1500, KeyMode::Prehashed),
        case(8, 8, 4, 2000, KeyMode::Bytes(8)),
        case(31, 32, 4, 1000, KeyMode::Prehashed),
        case(1, 12, 3, 700, KeyMode::Bytes(8)),
    ]
}

/// `n` operations: lookups of built keys (60 %), of fresh keys (30 %) and no-ops (codes 1 to
/// 3); each with the answer core's `RetrievalTable::get` gives.
fn lookups(c: &Case, n: usize, seed: u64) -> (Vec<Op>, Vec<u32>) {
    let mut rng = Rng(seed);
    let v = c.table.shape().value_bits;
    let mut ops = Vec::with_capacity(n);
    let mut want = Vec::with_capacity(n);
    for _ in 0..n {
        let tag = rng.next() as u32;
        let r = rng.below(10);
        let (code, key, k64) = match r {
            0..=5 => {
                let (key, k64) = c.keys[rng.below(c.keys.len() as u64) as usize].clone();
                (op::LOOKUP, key, k64)
            }
            6..=8 if c.cfg.base.key == KeyMode::Prehashed => {
                (op::LOOKUP, Key::Hash(rng.next()), None)
            }
            6..=8 => {
                let k = rng.next();
                (op::LOOKUP, bytes(k), Some(k))
            }
            _ => (1 + rng.below(3) as u8, Key::Hash(0), None),
        };
        let key = match (code, c.cfg.base.key) {
            (op::LOOKUP, _) | (_, KeyMode::Prehashed) => key,
            _ => bytes(rng.next()),
        };
        let got = match (code, &key, k64) {
            (op::LOOKUP, _, Some(k)) => c.table.get(&k),
            (op::LOOKUP, Key::Hash(h), None) => c.table.get_hash(*h),
            _ => None,
        };
        ops.push(Op { code, tag, key });
        want.push(answer_word(got, v));
    }
    (ops, want)
}

/// Runs `n` lookups (the first `fast` at full rate) on case `c` in `sim` and checks them.
fn run(c: &Case, sim: Simulator, n: usize, fast: u32, readback: u32) {
    let (ops, want) = lookups(c, n, 7 + u64::from(c.table.shape().arity));
    let params = BenchParams {
        readback,
        ..backpressure(11, fast)
    };
    let banks = RetrievalBanks(&c.table);
    let run = checked(
        &c.cfg,
        sim,
        (&banks, true),
        std::slice::from_ref(&ops),
        params,
    );
    // The reference is core's lookup; the answers are what `get` says, key by key.
    assert_eq!(run.expected[0], want, "{}", c.cfg.base.top_name);
    let (found, built) = (
        want.iter().filter(|&&a| a != 0).count(),
        ops.iter()
            .filter(|o| c.keys.iter().any(|k| k.0 == o.key))
            .count(),
    );
    assert!(
        found >= built && built > n / 2,
        "{found} found, {built} built keys"
    );
    if c.table.shape().check_bits >= 8 {
        let absent = ops.len() - built - want.iter().filter(|&&a| a == 0).count();
        assert!(absent < n / 50, "{absent} absent keys passed the check");
    }
    let entries = c.cfg.bank_shape().0.min(readback.into());
    assert_eq!(run.log.readback.len() as u64, entries);
    eprintln!("  {found} of {n} answers found, {built} lookups of built keys");
}

#[test]
fn verilator_retrieval_matches_core() {
    if !have(Simulator::Verilator, "retrieval against core") {
        return;
    }
    // Verilator builds take most of the time: the three designs of 8-byte keys, 63-bit cells
    // and arity 3 without check bits (the fourth runs in Icarus).
    for c in &cases()[..3] {
        run(c, Simulator::Verilator, 3000, 1000, u32::MAX);
    }
}

#[test]
fn icarus_retrieval_matches_core() {
    if !have(Simulator::Icarus, "retrieval against core") {
        return;
    }
    let cs = cases();
    for c in [&cs[0], &cs[3]] {
        run(c, Simulator::Icarus, 1200, 400, 48);
    }
}

/// The same lookups on registered banks (a bank read of three cycles): a prehashed and an
/// 8-byte-key design in Verilator, one in Icarus.
#[test]
fn registered_retrieval_matches_core() {
    let cs = cases();
    for (c, s, n, fast, readback) in [
        (&cs[1], Simulator::Verilator, 2000, 700, u32::MAX),
        (&cs[2], Simulator::Verilator, 2000, 700, u32::MAX),
        (&cs[0], Simulator::Icarus, 800, 300, 48),
    ] {
        if !have(s, "registered retrieval against core") {
            continue;
        }
        let registered = Case {
            cfg: registered(c.cfg.clone()),
            table: c.table.clone(),
            keys: c.keys.clone(),
        };
        run(&registered, s, n, fast, readback);
    }
}

/// Every retrieval design is lint-clean and its banks map to iCE40 block RAM; shapes the
/// design cannot take are refused.
#[test]
fn retrieval_pipelines_are_lint_clean_and_refuse_bad_shapes() {
    let cs = cases();
    let rtl: Vec<_> = cs
        .iter()
        .map(|c| c.cfg.clone())
        .chain(cs.iter().map(|c| registered(c.cfg.clone())))
        .map(|c| generate_pipeline(&c).unwrap())
        .collect();
    lint_and_synthesize(&rtl);
    let mut two_ports = cs[0].cfg.clone();
    two_ports.base.lookup_ports = 2;
    let mut s = *cs[0].table.shape();
    s.value_bits = 32;
    let wide = PipelineConfig::retrieval(cs[0].cfg.base.clone(), s);
    let mut no_shape = cs[0].cfg.clone();
    no_shape.retrieval = None;
    for bad in [two_ports, wide, no_shape] {
        assert!(generate_pipeline(&bad).is_err(), "{:?}", bad.retrieval);
    }
}

/// Yosys `synth_ice40` of `top` from `files` (name, text) written into a fresh folder; the cell
/// counts of its `stat`.
fn ice40_cells(files: &[(String, &str)], top: &str) -> Vec<(String, u64)> {
    let dir = bloomlanes_hdl::sim::fresh_dir("wrap").unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    let script = format!(
        "read_verilog {}; synth_ice40 -top {top}; stat",
        names.join(" ")
    );
    let (ok, out) = run_tool(
        std::process::Command::new("yosys")
            .current_dir(&dir)
            .args(["-p", &script]),
    );
    assert!(ok, "{out}");
    std::fs::remove_dir_all(dir).ok();
    bloomlanes_hdl::report::parse_stat(&out)
}

/// The pin-light top (`<top>_wrap`, a clock in and 8 LEDs out) is how a retrieval core, whose
/// ports outnumber an HX8K's pins, is placed and routed: it must keep the whole core. Yosys
/// maps as many block RAMs and at least as many LUTs and flip-flops in the wrapped core as in
/// the bare one. (That no input is tied to a constant is `board::tests`' check: tied off, the
/// management path goes, 3927 LUTs against 3994 bare for 8x32 r8 of 1024 keys, a difference
/// this small design's LUT count does not show.)
#[test]
fn pin_light_top_keeps_every_bank_and_the_core_logic() {
    if !full_runs() || !have_tool("yosys", "pin-light top synthesis") {
        return;
    }
    let c = &cases()[0];
    let d = generate_pipeline(&c.cfg).unwrap();
    let t = &d.top_name;
    let header = format!("module {t}_wrap (\n    input  wire clk,\n    output wire [7:0] led\n);");
    assert!(d.pin_light_top.contains(&header), "{}", d.pin_light_top);
    let core = (format!("{t}.v"), d.rtl.as_str());
    let wrap = (format!("{t}_wrap.v"), d.pin_light_top.as_str());
    // The two syntheses (about a minute each) side by side.
    let (bare, wrapped) = std::thread::scope(|s| {
        let bare = s.spawn(|| ice40_cells(std::slice::from_ref(&core), t));
        let wrapped = ice40_cells(&[core.clone(), wrap], &format!("{t}_wrap"));
        let bare = bare.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (bare, wrapped)
    });
    let count = |cells: &[(String, u64)], pick: &dyn Fn(&str) -> bool| -> u64 {
        cells.iter().filter(|(n, _)| pick(n)).map(|(_, k)| k).sum()
    };
    let ram = |n: &str| n == "SB_RAM40_4K";
    let lut = |n: &str| n == "SB_LUT4";
    let ff = |n: &str| n.starts_with("SB_DFF");
    assert!(count(&bare, &ram) > 0, "{bare:?}");
    assert_eq!(count(&wrapped, &ram), count(&bare, &ram), "{wrapped:?}");
    assert!(
        count(&wrapped, &lut) >= count(&bare, &lut),
        "{wrapped:?} {bare:?}"
    );
    assert!(
        count(&wrapped, &ff) >= count(&bare, &ff),
        "{wrapped:?} {bare:?}"
    );
}
