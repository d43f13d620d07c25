//! Generated text: constants come from core, Verilator lint is clean, Icarus and Yosys accept it,
//! bad configurations are errors.
mod common;

use std::process::Command;

use bloomlanes_core::Params;
use bloomlanes_core::{Filter, Layout, SALTS};
use bloomlanes_hdl::sim::{self, BenchParams, Simulator};
use bloomlanes_hdl::{bank_bits, export, generate, write_bank_files, HdlConfig, KeyMode};
use common::*;

fn lint_matrix() -> Vec<HdlConfig> {
    let mut v = Vec::new();
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        for (blocks, key, ports) in [
            (1, KeyMode::Prehashed, 1),
            (7, KeyMode::Bytes(8), 2),
            (1000, KeyMode::Bytes(13), 3),
            (3, KeyMode::Bytes(1), 1),
            (123, KeyMode::Bytes(64 + i), 2),
            (5, KeyMode::VarBytes(64 - 20 * i), 1),
        ] {
            v.push(cfg(layout, blocks, key, ports));
        }
    }
    v
}

#[test]
fn constants_come_from_core() {
    // The hash and index constants live in partial-product tables (checked against core by the
    // crate's pipeline tests and by simulation); the salts and sizes are also documented.
    for c in lint_matrix() {
        let d = generate(&c).unwrap();
        let line = d
            .rtl
            .lines()
            .find(|l| l.contains("Salts: "))
            .expect("salts line");
        let salts: Vec<u32> = line
            .split("Salts: ")
            .nth(1)
            .unwrap()
            .trim_end_matches('.')
            .split_whitespace()
            .map(|x| u32::from_str_radix(x.trim_end_matches('.'), 16).unwrap())
            .collect();
        assert_eq!(salts, SALTS[..c.layout.lanes()].to_vec(), "{}", c.top_name);
        assert!(
            d.rtl.contains(&format!(">> {}", c.layout.lane_shift())),
            "shift documented"
        );
        assert!(d.rtl.contains(&format!("z = {} blocks", c.blocks)));
        if let KeyMode::Bytes(_) = c.key {
            assert!(d.rtl.contains(&format!("(seed 0x{:016x})", c.seed)));
        }
        assert!(d.rtl.contains("`default_nettype none"));
        assert!(d
            .rtl
            .contains(&format!("Latency: {} cycles", d.latency_cycles)));
        assert!(d.rtl.contains("Read-after-write"));
    }
}

#[test]
fn verilator_lint_is_clean() {
    let designs: Vec<_> = lint_matrix().iter().map(|c| generate(c).unwrap()).collect();
    lint(&designs);
}

#[test]
fn icarus_and_yosys_accept_the_text() {
    let dir = sim::fresh_dir("parse").unwrap();
    let icarus = test_may_run("icarus_and_yosys_accept_the_text (icarus part)", "iverilog");
    let yosys = test_may_run("icarus_and_yosys_accept_the_text (yosys part)", "yosys");
    // Yosys's `proc` is slow on the big hashed designs: every third configuration.
    for (i, c) in lint_matrix().into_iter().enumerate() {
        let d = generate(&c).unwrap();
        let top = &d.top_name;
        std::fs::write(dir.join(format!("{top}.v")), &d.rtl).unwrap();
        std::fs::write(dir.join(format!("{top}_tb.v")), &d.testbench).unwrap();
        if icarus {
            let (ok, out) = run_tool(
                Command::new("iverilog")
                    .current_dir(&dir)
                    .args(["-g2005", "-o", "/dev/null"])
                    .arg(format!("{top}.v"))
                    .arg(format!("{top}_tb.v")),
            );
            assert!(ok, "{top}:\n{out}");
        }
        if yosys && i % 3 == 0 {
            let (ok, out) = run_tool(Command::new("yosys").current_dir(&dir).args([
                "-q",
                "-p",
                &format!("read_verilog {top}.v; hierarchy -check -top {top}; proc; check -assert"),
            ]));
            assert!(ok, "{top}:\n{out}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_configurations_are_errors() {
    let base = HdlConfig::new(Layout::L8x32, 10, KeyMode::Bytes(8), 0);
    type Mutation = Box<dyn Fn(&mut HdlConfig)>;
    let cases: Vec<Mutation> = vec![
        Box::new(|c| c.blocks = 0),
        Box::new(|c| c.blocks = u32::MAX),
        Box::new(|c| c.key = KeyMode::Bytes(0)),
        Box::new(|c| c.key = KeyMode::Bytes(10_000)),
        Box::new(|c| c.lookup_ports = 0),
        Box::new(|c| c.lookup_ports = 99),
        Box::new(|c| c.tag_bits = 0),
        Box::new(|c| c.tag_bits = 33),
        Box::new(|c| c.top_name = "9bad".into()),
        Box::new(|c| c.top_name = "a b".into()),
        Box::new(|c| c.top_name = String::new()),
        // Issue #26: keywords of Verilog-2005 and SystemVerilog-2017 gave `module module #(`.
        Box::new(|c| c.top_name = "module".into()),
        Box::new(|c| c.top_name = "wire".into()),
        Box::new(|c| c.top_name = "begin".into()),
        Box::new(|c| c.top_name = "logic".into()),
    ];
    for (i, f) in cases.iter().enumerate() {
        let mut c = base.clone();
        f(&mut c);
        let e = generate(&c).expect_err(&format!("case {i} must fail"));
        assert!(!e.to_string().is_empty());
        let dir = std::env::temp_dir().join("bloomlanes-hdl-never-written");
        assert!(export(&c, None, &dir, false).is_err());
    }
    assert!(generate(&base).is_ok());
}

#[test]
fn bank_files_hold_the_lanes() {
    let mut f = Filter::new(Params::new(Layout::L16x64, 9).with_seed(1));
    for i in 0..200u64 {
        f.insert(&i);
    }
    let dir = sim::fresh_dir("banks").unwrap();
    let paths = write_bank_files(&f, &dir).unwrap();
    assert_eq!(paths.len(), 16);
    let words = f.words();
    for (lane, p) in paths.iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap();
        let digits: Vec<bool> = text
            .lines()
            .filter(|l| !l.starts_with("//"))
            .map(|l| l == "1")
            .collect();
        assert_eq!(digits, bank_bits(&f, lane));
        assert_eq!(digits.len(), 9 * 64);
        for block in 0..9 {
            for bit in 0..64 {
                let g = block * 1024 + lane * 64 + bit;
                assert_eq!(digits[block * 64 + bit], words[g / 32] >> (g % 32) & 1 == 1);
            }
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn checker_catches_wrong_answers() {
    // The comparison itself must be able to fail.
    let Some(sim_kind) = [Simulator::Verilator, Simulator::Icarus]
        .into_iter()
        .find(|s| full_runs() && s.is_available())
    else {
        skip(format_args!(
            "checker_catches_wrong_answers: no simulator installed or BLOOMLANES_FULL is unset"
        ));
        return;
    };
    let c = cfg(Layout::L8x32, 64, KeyMode::Prehashed, 1);
    let ops = random_ops(&c, 3000, 0, 100, 5);
    let design = bloomlanes_hdl::PipelineConfig::static_filter(&c);
    let log = sim::run_pipeline(
        &design,
        sim_kind,
        None::<&Filter>,
        &ops,
        BenchParams::default(),
    )
    .unwrap();
    let empty = Filter::new(Params::new(c.layout, c.blocks).with_seed(c.seed));
    assert!(sim::check(&c, &empty, &ops, &log).is_ok());
    // Against a start filter that already holds every key looked up, the hardware (which
    // started empty) must disagree.
    let mut full = empty.clone();
    for o in &ops[0] {
        full.insert_hash(sim::key_hash(&c, &o.key));
    }
    assert!(sim::check(&c, &full, &ops, &log).is_err());
    let mut bad = log.clone();
    let last = bad.answers[0].iter().rposition(|a| a.2 != 0).unwrap();
    bad.answers[0][last].2 = 0;
    assert!(sim::check(&c, &empty, &ops, &bad).is_err());
}

/// Every kind's export writes the same kit: the RTL, benches, bank files and stimulus, and the
/// flow (issue 26: a counting export had no report, README, Makefile, board tops, AXI wrapper,
/// cocotb bench or formal harness).
#[test]
fn export_writes_everything() {
    let c = HdlConfig::new(Layout::L8x32, 20, KeyMode::Bytes(5), 0);
    for kind in KIT_KINDS {
        let dir = sim::fresh_dir("export").unwrap();
        let s = export_kind(kind, &c, &dir);
        for p in &s.files {
            assert!(p.is_file(), "{}", p.display());
        }
        let top = &c.top_name;
        for name in [
            format!("{top}.v"),
            format!("{top}_tb.v"),
            format!("{top}_harness.cpp"),
            format!("{top}_axis.v"),
            format!("{top}_board.v"),
            format!("{top}_wrap.v"),
            // The last bank: lane 7 of 8x32, cell 2 of the retrieval table's arity 3.
            format!("{top}_bank0{}.hex", if kind == "retrieval" { 2 } else { 7 }),
            format!("{top}_report.md"),
            "README.md".to_string(),
            "Makefile".to_string(),
            "bench_cfg.hex".to_string(),
            "stim_p0.hex".to_string(),
            "bench_expect_p0.hex".to_string(),
            "fpga/hx8k_breakout.pcf".to_string(),
            "fpga/ulx3s.lpf".to_string(),
            "fpga/fmax.sh".to_string(),
            "cocotb/run.py".to_string(),
            "cocotb/model.py".to_string(),
            "cocotb/test_filter.py".to_string(),
            "cocotb/config.json".to_string(),
            format!("formal/{top}_port_formal.sv"),
            format!("formal/{top}_port.sby"),
        ] {
            assert!(
                s.files.iter().any(|p| p.ends_with(&name)),
                "the {kind} export did not write {name}"
            );
        }
        let report = std::fs::read_to_string(&s.report).unwrap();
        assert!(
            report.contains("Latency") && report.contains(kind),
            "{report}"
        );
        assert!(s.synth.is_none());
        if kind == "retrieval" {
            // The lookups-only self-test's answers, and a stimulus that finds built keys.
            assert!(s
                .files
                .iter()
                .any(|p| p.ends_with(format!("{top}_selftest.hex"))));
            let expect = std::fs::read_to_string(dir.join("bench_expect_p0.hex")).unwrap();
            let found = expect.lines().filter(|l| l.starts_with('1')).count();
            assert!(found > 500, "{found} of 1000 expected answers found");
        }
        std::fs::remove_dir_all(dir).ok();
    }
}

#[test]
fn fresh_dirs_are_new_and_private() {
    let a = sim::fresh_dir("fresh").unwrap();
    let b = sim::fresh_dir("fresh").unwrap();
    assert_ne!(a, b);
    assert_eq!(std::fs::read_dir(&a).unwrap().count(), 0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
    std::fs::remove_dir(&a).unwrap();
    std::fs::remove_dir(&b).unwrap();
}
