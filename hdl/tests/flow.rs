//! The export as an engineer uses it: synthesis of every layout, the self-contained Verilog
//! bench (self-checking, fails fast on a missing file), several filters in one design, and the
//! key-width check.
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use bloomlanes_core::Params;
use bloomlanes_core::{Filter, Layout};
use bloomlanes_hdl::sim;
use bloomlanes_hdl::{check_key_mode, export, generate, HdlConfig, KeyKind, KeyMode, RamStyle};
use common::*;

#[test]
fn synth_works_for_every_layout() {
    // `export --synth` used to fail for every filter: Yosys mapped the 1-bit banks to LUT RAM.
    if !test_may_run("synth_works_for_every_layout", "yosys") {
        return;
    }
    // Small prehashed designs (the hash adds logic, not memories; 8x32 z=300 is too big for the
    // iCE40 part of the synthesis); 16x64 z=600 needs RAMB36s.
    let layouts: Vec<(usize, Layout)> = Layout::ALL.into_iter().enumerate().collect();
    each_in_parallel(&layouts, |&(i, layout)| {
        let mut c = cfg(layout, [300, 100, 9, 600][i], KeyMode::Prehashed, 1 + i % 2);
        assert_eq!(c.ram_style, RamStyle::Block, "block RAM is the default");
        c.top_name = format!("syn_{}", layout.name());
        let dir = sim::fresh_dir("synth").unwrap();
        let t0 = Instant::now();
        let s = export(&c, None, &dir, true).unwrap_or_else(|e| panic!("{layout}: {e}"));
        let f = s.synth.expect("synthesis figures");
        assert!(
            f.ramb36 + f.ramb18 >= f.bram_min.min(1),
            "{layout}: banks not in block RAM: {f:?}"
        );
        assert!(f.lut > 0 && f.ff > 0, "{layout}: {f:?}");
        eprintln!(
            "{layout}: {} LUT, {} FF, {} RAMB36 + {} RAMB18 (minimum {}), {} DSP, {:.1} s",
            f.lut,
            f.ff,
            f.ramb36,
            f.ramb18,
            f.bram_min,
            f.dsp,
            t0.elapsed().as_secs_f64()
        );
        std::fs::remove_dir_all(dir).ok();
    });
}

#[test]
fn exported_bench_checks_itself_and_fails_fast() {
    if !test_may_run("exported_bench_checks_itself_and_fails_fast", "iverilog") {
        return;
    }
    let mut f = Filter::new(Params::new(Layout::L8x32, 40).with_seed(7));
    for i in 0..300u64 {
        f.insert(&i.to_le_bytes());
    }
    let mut c = HdlConfig::for_filter(&f, KeyMode::Prehashed);
    c.lookup_ports = 2;
    c.top_name = "bench_ph".into();
    let dir = sim::fresh_dir("bench").unwrap();
    export(&c, Some(&f), &dir, false).unwrap();
    let compile = |dir: &std::path::Path| {
        run_tool(Command::new("iverilog").current_dir(dir).args([
            "-g2005",
            "-o",
            "sim.vvp",
            "-s",
            "bench_ph_tb",
            "-Pbench_ph_tb.LOAD_BANKS=1",
            "-Pbench_ph_tb.MAX_OPS=1024",
            "bench_ph.v",
            "bench_ph_tb.v",
        ]))
    };
    let (ok, out) = compile(&dir);
    assert!(ok, "{out}");
    let (ok, out) = run_tool(
        Command::new("vvp")
            .current_dir(&dir)
            .args(["-n", "sim.vvp"]),
    );
    assert!(ok && out.contains("PASS: 1999 answers"), "{out}");
    // A wrong expectation is reported.
    let exp = dir.join("bench_expect_p1.hex");
    let text = std::fs::read_to_string(&exp).unwrap();
    let flipped: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 5 {
                if l == "1" { "0\n" } else { "1\n" }.to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&exp, flipped).unwrap();
    let (_, out) = run_tool(
        Command::new("vvp")
            .current_dir(&dir)
            .args(["-n", "sim.vvp"]),
    );
    assert!(out.contains("FAIL: 1 of 1999"), "{out}");
    // A missing input stops the bench at once with a message naming the file.
    for missing in ["bench_ph_bank03.hex", "stim_p1.hex", "bench_cfg.hex"] {
        let keep = dir.join(format!("{missing}.keep"));
        std::fs::rename(dir.join(missing), &keep).unwrap();
        let t0 = Instant::now();
        let (_, out) = run_tool(
            Command::new("vvp")
                .current_dir(&dir)
                .args(["-n", "sim.vvp"]),
        );
        assert!(
            out.contains(&format!("ERROR: {missing} is missing")),
            "{out}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "took {:?}",
            t0.elapsed()
        );
        std::fs::rename(&keep, dir.join(missing)).unwrap();
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn two_filters_live_in_one_design() {
    let a = {
        let mut c = cfg(Layout::L8x32, 64, KeyMode::Prehashed, 1);
        c.top_name = "filt_a".into();
        c
    };
    let b = {
        let mut c = cfg(Layout::L16x64, 10, KeyMode::VarBytes(16), 2);
        c.top_name = "filt_b".into();
        c
    };
    let dir = sim::fresh_dir("two").unwrap();
    let mut files = Vec::new();
    for c in [&a, &b] {
        export(c, None, &dir, false).unwrap();
        files.push(format!("{}.v", c.top_name));
        files.push(format!("{}_axis.v", c.top_name));
    }
    // Every module name of one filter starts with its top name.
    for c in [&a, &b] {
        let d = generate(c).unwrap();
        for line in d.rtl.lines().filter(|l| l.starts_with("module ")) {
            assert!(
                line.starts_with(&format!("module {}", c.top_name)),
                "{line}"
            );
        }
    }
    if test_may_run("two_filters_live_in_one_design (icarus part)", "iverilog") {
        let wrapper = "module both(input wire clk); endmodule\n";
        std::fs::write(dir.join("both.v"), wrapper).unwrap();
        let (ok, out) = run_tool(
            Command::new("iverilog")
                .current_dir(&dir)
                .args(["-g2005", "-o", "/dev/null"])
                .args(&files)
                .arg("both.v"),
        );
        assert!(ok, "{out}");
    }
    if on_path("yosys") {
        let script = format!("read_verilog {}; hierarchy -check", files.join(" "));
        let (ok, out) = run_tool(
            Command::new("yosys")
                .current_dir(&dir)
                .args(["-q", "-p", &script]),
        );
        assert!(ok, "{out}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn key_width_must_match_the_filter() {
    use KeyMode::*;
    let ok = [
        (KeyKind::Fixed(8), Bytes(8)),
        (KeyKind::Fixed(8), VarBytes(8)),
        (KeyKind::Fixed(13), VarBytes(64)),
        (KeyKind::Fixed(8), Prehashed),
        (KeyKind::Variable { max: None }, VarBytes(64)),
        (KeyKind::Variable { max: Some(20) }, VarBytes(20)),
        (KeyKind::Variable { max: Some(200) }, Prehashed),
        (KeyKind::Prehashed, Prehashed),
    ];
    for (kind, mode) in ok {
        assert!(check_key_mode(mode, kind).is_ok(), "{kind} / {mode}");
    }
    let bad = [
        (KeyKind::Fixed(8), Bytes(4)),
        (KeyKind::Fixed(16), VarBytes(8)),
        (KeyKind::Variable { max: None }, Bytes(8)),
        (KeyKind::Variable { max: Some(65) }, VarBytes(64)),
        (KeyKind::Prehashed, Bytes(8)),
        (KeyKind::Prehashed, VarBytes(64)),
    ];
    for (kind, mode) in bad {
        let e = check_key_mode(mode, kind).expect_err(&format!("{kind} / {mode}"));
        let msg = e.to_string();
        assert!(
            msg.contains(&kind.to_string()) && msg.contains(&mode.to_string()),
            "{msg}"
        );
    }
}

#[test]
fn key_kind_comes_from_the_recorded_key_type() {
    use bloomlanes_core::{HashId, KeyType};
    let p = Params::new(Layout::L8x32, 10);
    let kind = |t: KeyType| KeyKind::of_params(&p.with_key_type(t));
    assert_eq!(kind(KeyType::Any), None, "not recorded: nothing to check");
    assert_eq!(kind(KeyType::U64), Some(KeyKind::Fixed(8)));
    assert_eq!(kind(KeyType::TimestampNanos), Some(KeyKind::Fixed(8)));
    assert_eq!(kind(KeyType::Date32), Some(KeyKind::Fixed(4)));
    assert_eq!(kind(KeyType::FixedBytes(16)), Some(KeyKind::Fixed(16)));
    assert_eq!(kind(KeyType::Bytes), Some(KeyKind::Variable { max: None }));
    assert_eq!(
        kind(KeyType::Flow),
        Some(KeyKind::Variable { max: Some(37) })
    );
    let hashes = p.with_hash(HashId::Prehashed).with_key_type(KeyType::U64);
    assert_eq!(KeyKind::of_params(&hashes), Some(KeyKind::Prehashed));
    // Text keys cannot go to a fixed-width input; u64 keys can go to 8 bytes but not 4.
    let text = kind(KeyType::Bytes).unwrap();
    assert!(check_key_mode(KeyMode::Bytes(8), text).is_err());
    assert!(check_key_mode(KeyMode::VarBytes(64), text).is_ok());
    let u64s = kind(KeyType::U64).unwrap();
    assert!(check_key_mode(KeyMode::Bytes(8), u64s).is_ok());
    assert!(check_key_mode(KeyMode::Bytes(4), u64s).is_err());
}

/// The resource estimate against Yosys (`synth_ice40`): the block RAMs exactly, the flip-flops
/// between 59 and 100 % of the estimate (the bound `check_fits` refuses flip-flops by), the
/// LUT4s below it; plain and with registered banks, for the static, counting and spatial
/// designs (4-bit classes behind registered banks travel as 15-bit codes).
#[test]
fn resource_estimate_brackets_yosys() {
    use bloomlanes_core::CounterBits;
    use bloomlanes_hdl::report::parse_stat;
    use bloomlanes_hdl::{estimate, generate_pipeline, CellSpec, Device, PipelineConfig};
    if !have_tool("yosys", "resource estimate") {
        return;
    }
    let dir = sim::fresh_dir("estimate").unwrap();
    let base = HdlConfig::new(Layout::L8x32, 64, KeyMode::Prehashed, 5);
    let designs = [
        CellSpec::STATIC,
        CellSpec::counting(CounterBits::Four),
        CellSpec::spatial(4),
    ]
    .into_iter()
    .flat_map(|cells| [(cells, false), (cells, true)]);
    for (cells, registered) in designs {
        let mut c = PipelineConfig::new(base.clone(), cells);
        c.base.registered_banks = registered;
        let e = estimate(&c, Device::Ice40Hx8k);
        let d = generate_pipeline(&c).unwrap();
        std::fs::write(dir.join("d.v"), &d.rtl).unwrap();
        let script = format!(
            "read_verilog d.v; synth_ice40 -top {}; tee -o stat.txt stat",
            d.top_name
        );
        let (ok, out) = run_tool(
            Command::new("yosys")
                .current_dir(&dir)
                .args(["-q", "-p", &script]),
        );
        assert!(ok, "{out}");
        let cells_of = parse_stat(&std::fs::read_to_string(dir.join("stat.txt")).unwrap());
        let sum = |p: &dyn Fn(&str) -> bool| -> u64 {
            cells_of.iter().filter(|(n, _)| p(n)).map(|(_, k)| k).sum()
        };
        let rams = sum(&|n| n.starts_with("SB_RAM40"));
        let ffs = sum(&|n| n.starts_with("SB_DFF"));
        let luts = sum(&|n| n == "SB_LUT4");
        let cells = format!("{cells}, registered banks {registered}");
        eprintln!("{cells}: estimate {e:?}; yosys {rams} RAMs, {luts} LUT4, {ffs} FF");
        assert_eq!(rams, e.block_rams, "{cells}");
        assert!(
            ffs * 100 >= e.ffs * 59 && ffs <= e.ffs,
            "{cells}: {ffs} FF, {e:?}"
        );
        assert!(luts <= e.luts, "{cells}: {luts} LUT4, {e:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The keys (low 64 bits) of a stimulus file of a prehashed design.
fn stim_keys(path: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l[l.len() - 16..].to_string())
        .collect()
}

/// Issue #26: with seed 0x0123456789abcdef the old bench generator's xorshift state was 0, every
/// stimulus key was 0, and the search for port 1's keys never returned. Every export must finish
/// (within a minute here) with distinct keys, for seeds that zeroed the old state and others.
#[test]
fn export_bench_terminates_for_every_seed() {
    use bloomlanes_core::{CounterBits, CountingFilter};
    use bloomlanes_hdl::{export_counting, CountingConfig};
    for seed in [0x0123_4567_89ab_cdef, 0, u64::MAX] {
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = sim::fresh_dir("seed").unwrap();
        let work = dir.clone();
        std::thread::spawn(move || {
            let params = Params::new(Layout::L8x32, 8).with_seed(seed);
            let mut f = Filter::new(params);
            for i in 0..50u64 {
                f.insert(&i.to_le_bytes());
            }
            let mut c = HdlConfig::for_filter(&f, KeyMode::Prehashed);
            c.lookup_ports = 2;
            let static_export = export(&c, Some(&f), &work.join("static"), false).map(|_| ());
            let cc = CountingConfig::for_filter(
                &CountingFilter::counting(params, CounterBits::Four),
                KeyMode::Prehashed,
            );
            let counting = export_counting(&cc, None, &work.join("counting")).map(|_| ());
            let _ = tx.send((static_export, counting));
        });
        let (s, c) = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("seed {seed:#x}: the export did not finish in a minute"));
        s.unwrap();
        c.unwrap();
        // 666 new keys on static port 0, 1000 on port 1; 9 per round of 65 counting operations.
        for (file, least) in [
            ("static/stim_p0.hex", 600),
            ("static/stim_p1.hex", 900),
            ("counting/stim_p0.hex", 130),
        ] {
            let keys = stim_keys(&dir.join(file));
            assert!(
                keys.len() >= least,
                "seed {seed:#x}: {file} has {} distinct keys",
                keys.len()
            );
        }
        std::fs::remove_dir_all(dir).ok();
    }
}

/// What every export offers beyond its Verilog bench, on designs with registered banks (the
/// static design's latency 14 instead of 12 with a 32-entry answer FIFO; the counting design's
/// wider forwarding window): `make formal` (SymbiYosys proof of the FIFO and its handshakes at
/// the registered design's depth) and the cocotb suite (random operations under backpressure,
/// deletes and saturated counters of the counting design, the AXI4-Lite register block, bank
/// read-back), each run when its tools are installed, a visible SKIP line otherwise.
#[test]
fn registered_export_passes_formal_and_cocotb() {
    if !full_runs() {
        skip(format_args!(
            "SKIP: registered_export_passes_formal_and_cocotb: the long HDL runs are off; set BLOOMLANES_FULL=1"
        ));
        return;
    }
    let mut c = cfg(Layout::L8x32, 64, KeyMode::Prehashed, 1);
    c.registered_banks = true;
    for kind in KIT_KINDS {
        c.top_name = format!("reg_{kind}");
        let dir = sim::fresh_dir("regkit").unwrap();
        let d = export_kind(kind, &c, &dir);
        if kind == "static" {
            assert_eq!(
                d.design.latency_cycles, 14,
                "prehashed 8x32 with registered banks"
            );
        }
        let sby = ["sby", "yowasp-sby"].into_iter().any(sim::on_path);
        if sby && sim::on_path("yices-smt2") && sim::on_path("make") {
            let (ok, out) = run_tool(
                Command::new("make")
                    .current_dir(&dir)
                    .args(["-s", "formal"]),
            );
            assert!(
                ok && out.contains("DONE (PASS"),
                "{kind}: make formal:\n{out}"
            );
        } else {
            skip(format_args!(
                "SKIP: registered_export_passes_formal_and_cocotb ({kind}, formal): sby (or yowasp-sby), yices-smt2 or make is not installed"
            ));
        }
        let cocotb = Command::new("python3")
            .args(["-c", "import cocotb"])
            .output()
            .is_ok_and(|o| o.status.success());
        if cocotb && sim::on_path("iverilog") {
            let (ok, out) = run_tool(
                Command::new("python3")
                    .current_dir(dir.join("cocotb"))
                    .args(["run.py", "--ops", "150"]),
            );
            assert!(
                ok && out.contains("3 passed, 0 failed"),
                "{kind}: cocotb:\n{out}"
            );
            // The banks loaded from the exported files read back through the AXI4-Lite port
            // as the model reads the files (a spatial design of 4-bit classes holds them in a
            // Gray code: the files, the model and the management port must agree on it).
            let (ok, out) = run_tool(
                Command::new("python3")
                    .current_dir(dir.join("cocotb"))
                    .args(["run.py", "--ops", "60", "--load-banks"]),
            );
            assert!(
                ok && out.contains("1 passed, 0 failed"),
                "{kind}: cocotb --load-banks:\n{out}"
            );
        } else {
            skip(format_args!(
                "SKIP: registered_export_passes_formal_and_cocotb ({kind}, cocotb): iverilog or the cocotb Python package is not installed"
            ));
        }
        std::fs::remove_dir_all(dir).ok();
    }
}

/// The kit's Makefile measures the top it names: its `RTL` files are all in the export, every
/// `TOP=` choice (`selftest`, `wrap`, `bramref`) is a module of one of them, `make fmax-ecp5
/// TOP=wrap` synthesises the pin-light top `<top>_wrap` (the REPORT's retrieval/static
/// comparisons use it; before, the kit had no such file and measured the self-test top only)
/// and an unknown `TOP` is refused by name. With Yosys (and `BLOOMLANES_FULL`) the wrap top
/// synthesises for ECP5 through the Makefile's own rule; a SKIP line otherwise.
#[test]
fn exported_kit_measures_the_top_it_names() {
    for kind in KIT_KINDS {
        kit_measures_the_top_it_names(kind);
    }
}

fn kit_measures_the_top_it_names(kind: &str) {
    let mut c = cfg(Layout::L8x32, 16, KeyMode::Prehashed, 1);
    c.top_name = "kit_tops".into();
    let dir = sim::fresh_dir("kit_tops").unwrap();
    export_kind(kind, &c, &dir);
    let mk = std::fs::read_to_string(dir.join("Makefile")).unwrap();
    let words = |var: &str| -> Vec<String> {
        let line = mk.lines().find_map(|l| l.strip_prefix(var));
        let line = line.unwrap_or_else(|| panic!("no `{var}` line in the Makefile:\n{mk}"));
        line.split_whitespace().map(String::from).collect()
    };
    let rtl = words("RTL = ");
    let tops = words("TOPS = ");
    assert_eq!(words("BOARD_TOP ?= "), ["kit_tops_$(TOP)"]);
    assert!(tops.contains(&"wrap".to_string()) && tops.contains(&"selftest".to_string()));
    let text: String = rtl
        .iter()
        .map(|f| {
            std::fs::read_to_string(dir.join(f))
                .unwrap_or_else(|e| panic!("the Makefile's RTL names {f}, not exported: {e}"))
        })
        .collect();
    for t in &tops {
        let module = format!("module kit_tops_{t} ");
        assert!(text.contains(&module), "no `{module}` in {rtl:?}");
    }
    if !sim::on_path("make") {
        skip(format_args!(
            "exported_kit_measures_the_top_it_names: make is not installed"
        ));
        std::fs::remove_dir_all(dir).ok();
        return;
    }
    let make = |args: &[&str]| run_tool(Command::new("make").current_dir(&dir).args(args));
    let (ok, out) = make(&["-n", "fmax-ecp5", "TOP=wrap"]);
    assert!(
        ok && out.contains("synth_ecp5 -top kit_tops_wrap ")
            && out.contains("build/kit_tops_wrap_ecp5.json"),
        "make -n fmax-ecp5 TOP=wrap:\n{out}"
    );
    let (ok, out) = make(&["-n", "fmax-ice40", "TOP=wrapp"]);
    assert!(
        !ok && out.contains("TOP must be one of: selftest wrap bramref; not 'wrapp'"),
        "{out}"
    );
    if test_may_run(
        "exported_kit_measures_the_top_it_names (synthesis)",
        "yosys",
    ) {
        let json = "build/kit_tops_wrap_ecp5.json";
        let (ok, out) = make(&["-s", json, "TOP=wrap"]);
        assert!(ok, "make {json}:\n{out}");
        let netlist = std::fs::read_to_string(dir.join(json)).unwrap();
        assert!(
            netlist.contains("\"kit_tops_wrap\""),
            "{json} lacks the top"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}
