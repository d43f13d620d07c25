//! The kit every export writes, for every kind (issue 26): wired to its own design, accepted by
//! Icarus and Verilator, and its `make sim` passing.
mod common;

use std::process::Command;

use bloomlanes_core::Layout;
use bloomlanes_hdl::sim;
use bloomlanes_hdl::KeyMode;
use common::*;

/// The names of the ports of module `name` declared in `rtl` (ANSI port list).
fn module_ports(rtl: &str, name: &str) -> Vec<String> {
    let head = format!("module {name} ");
    let at = rtl
        .find(&head)
        .unwrap_or_else(|| panic!("no module {name}"));
    let body = &rtl[at + head.len()..];
    let list = if body.starts_with("#(") {
        &body[body.find(") (").unwrap() + 3..]
    } else {
        &body[body.find('(').unwrap() + 1..]
    };
    let list = &list[..list.find(");").unwrap()];
    list.lines()
        .filter_map(|l| l.trim().trim_end_matches(',').split_whitespace().last())
        .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !w.is_empty())
        .map(String::from)
        .collect()
}

/// Runs the self-test board top `<t>_selftest` of the export in `dir` in Icarus Verilog until
/// its `done` LED, and checks its `pass` LED; for a retrieval design also that a wrong answer
/// baked into `<t>_selftest.hex` turns `pass` off (the self-test compares every answer).
fn selftest_passes(kind: &str, dir: &std::path::Path, t: &str) {
    let tb = format!(
        "`timescale 1ns/1ps
module selftest_tb;
    reg clk = 1'b0;
    wire [7:0] led;
    {t}_selftest dut (.clk(clk), .led(led));
    always #5 clk = ~clk;
    integer i;
    initial begin
        for (i = 0; i < 200000 && !led[1]; i = i + 1) @(posedge clk);
        repeat (4) @(posedge clk);
        $display(\"SELFTEST done=%b pass=%b found=%b\", led[1], led[0], led[2]);
        $finish;
    end
endmodule
"
    );
    std::fs::write(dir.join("selftest_tb.v"), tb).unwrap();
    let run = || {
        let (ok, out) = icarus(
            dir,
            "selftest_tb",
            &[],
            &[&format!("{t}.v"), &format!("{t}_board.v"), "selftest_tb.v"],
        );
        assert!(ok, "{kind}: self-test:\n{out}");
        out
    };
    let out = run();
    assert!(out.contains("SELFTEST done=1 pass=1"), "{kind}: {out}");
    if kind == "retrieval" {
        assert!(out.contains("found=1"), "{kind}: no key found: {out}");
        let hex = dir.join(format!("{t}_selftest.hex"));
        let good = std::fs::read_to_string(&hex).unwrap();
        // Line 5's answer is bits above the key: flip the lowest of them (the value's bit 0).
        let mut lines: Vec<String> = good.lines().map(String::from).collect();
        let kw = 64 / 4; // hex digits of a prehashed key
        let l = &mut lines[5];
        let at = l.len() - kw - 1;
        let d = u8::from_str_radix(&l[at..at + 1], 16).unwrap() ^ 1;
        l.replace_range(at..at + 1, &format!("{d:x}"));
        std::fs::write(&hex, lines.join("\n") + "\n").unwrap();
        let out = run();
        assert!(
            out.contains("SELFTEST done=1 pass=0"),
            "{kind}: a wrong answer passed: {out}"
        );
        std::fs::write(&hex, good).unwrap();
    }
}

/// Issue 26: the kit of every kind is wired to its own design. The AXI wrapper, the self-test
/// and pin-light board tops connect every port of the core (the counting core's delete op and
/// counter-wide management data included), the formal harness every port of the answer FIFO at
/// the design's answer width, and cocotb's configuration names the kind, cell and answer widths.
/// With the tools: Icarus (`-g2012 -tnull`) and `verilator --lint-only` accept every top, and
/// `make sim` passes; a visible SKIP line for each missing tool.
#[test]
fn every_kind_gets_a_kit_wired_to_its_design() {
    let c = cfg(Layout::L8x32, 16, KeyMode::Prehashed, 1);
    for kind in KIT_KINDS {
        let mut c = c.clone();
        c.top_name = format!("kit_{kind}");
        let t = &c.top_name;
        let dir = sim::fresh_dir("kit_kind").unwrap();
        let s = export_kind(kind, &c, &dir);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let rtl = read(&format!("{t}.v"));
        // (answer port, answer bits, cell bits, what op 2 does, lanes)
        let (answer, answer_bits, cell_bits, op2, lanes) = match kind {
            "static" => ("m0_hit", 1, 1, "2 clear", 8),
            "counting" => ("m0_hit", 1, 4, "2 delete", 8),
            "spatial" => ("m0_min", 4, 4, "2 and 3 no-op", 8),
            _ => ("m0_found_value", 9, 12, "1 to 3 no-op", 3),
        };
        let core = module_ports(&rtl, t);
        assert!(core.contains(&answer.to_string()), "{kind}: {core:?}");
        for top in [
            format!("{t}_axis.v"),
            format!("{t}_board.v"),
            format!("{t}_wrap.v"),
        ] {
            let text = read(&top);
            for p in &core {
                assert!(
                    text.contains(&format!(".{p}(")),
                    "{kind}: {top} leaves {p} unconnected"
                );
            }
        }
        let fifo = module_ports(&rtl, &format!("{t}_port"));
        let formal = read(&format!("formal/{t}_port_formal.sv"));
        for p in &fifo {
            assert!(
                formal.contains(&format!(".{p}(")),
                "{kind}: formal leaves {p} unconnected"
            );
        }
        let config = read("cocotb/config.json");
        let mg_bits = lanes * cell_bits;
        for want in [
            format!("\"kind\": \"{kind}\""),
            format!("\"cell_bits\": {cell_bits}"),
            format!("\"answer_bits\": {answer_bits}"),
        ] {
            assert!(config.contains(&want), "{kind}: no {want} in {config}");
        }
        let axis = read(&format!("{t}_axis.v"));
        assert!(
            axis.contains(op2) && axis.contains(&format!("wire [{}:0] mg_rdata", mg_bits - 1)),
            "{kind}: {axis}"
        );
        let tops = [
            (format!("{t}_axis"), format!("{t}_axis.v")),
            (format!("{t}_selftest"), format!("{t}_board.v")),
            (format!("{t}_bramref"), format!("{t}_board.v")),
            (format!("{t}_wrap"), format!("{t}_wrap.v")),
        ];
        let test = format!("every_kind_gets_a_kit_wired_to_its_design ({kind})");
        if test_may_run(&test, "iverilog") {
            for (top, file) in &tops {
                let (ok, out) = run_tool(Command::new("iverilog").current_dir(&dir).args([
                    "-g2012",
                    "-tnull",
                    "-s",
                    top,
                    &format!("{t}.v"),
                    file,
                ]));
                assert!(ok, "{kind}: iverilog {top}:\n{out}");
            }
            selftest_passes(kind, &dir, t);
            if sim::on_path("make") {
                let (ok, out) =
                    run_tool(Command::new("make").current_dir(&dir).args(["-s", "sim"]));
                assert!(ok && out.contains("PASS: "), "{kind}: make sim:\n{out}");
            } else {
                skip(format_args!("every_kind_gets_a_kit_wired_to_its_design ({kind}, make sim): make is not installed"));
            }
        }
        if test_may_run(&test, "verilator") {
            for (top, file) in &tops {
                let (ok, out) = run_tool(Command::new("verilator").current_dir(&dir).args([
                    "--lint-only",
                    "--top-module",
                    top,
                    &format!("{t}.v"),
                    file,
                ]));
                assert!(
                    ok && !out.contains("%Warning"),
                    "{kind}: verilator {top}:\n{out}"
                );
            }
        }
        assert!(s.report.is_file());
        std::fs::remove_dir_all(dir).ok();
    }
}
