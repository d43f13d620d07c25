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
        // (answer port, answer bits, cell bits, what op 2 does)
        let (answer, answer_bits, cell_bits, op2) = match kind {
            "static" => ("m0_hit", 1, 1, "2 clear"),
            "counting" => ("m0_hit", 1, 4, "2 delete"),
            _ => ("m0_min", 4, 4, "2 and 3 no-op"),
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
        let mg_bits = 8 * cell_bits;
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
        if on_path("iverilog") {
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
            if sim::on_path("make") {
                let (ok, out) =
                    run_tool(Command::new("make").current_dir(&dir).args(["-s", "sim"]));
                assert!(ok && out.contains("PASS: "), "{kind}: make sim:\n{out}");
            } else {
                skip(format_args!("every_kind_gets_a_kit_wired_to_its_design ({kind}, make sim): make is not installed"));
            }
        } else {
            skip(format_args!("every_kind_gets_a_kit_wired_to_its_design ({kind}): iverilog is not installed or BLOOMLANES_FULL is unset"));
        }
        if on_path("verilator") {
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
        } else {
            skip(format_args!("every_kind_gets_a_kit_wired_to_its_design ({kind}): verilator is not installed or BLOOMLANES_FULL is unset"));
        }
        assert!(s.report.is_file());
        std::fs::remove_dir_all(dir).ok();
    }
}
