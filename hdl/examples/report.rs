//! Exports the report configurations with synthesis and prints the table of hdl/REPORT.md:
//! `cargo run --release -p bloomlanes-hdl --example report -- <out-dir>`.
use bloomlanes_core::Layout;
use bloomlanes_hdl::report::{bram_minimum, describe};
use bloomlanes_hdl::{export, HdlConfig, KeyMode, RamStyle};

fn cfg(layout: Layout, blocks: u32, key: KeyMode, ports: usize, name: &str) -> HdlConfig {
    let mut c = HdlConfig::new(layout, blocks, key, 0);
    c.lookup_ports = ports;
    c.ram_style = RamStyle::Block;
    c.top_name = name.to_string();
    c
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "hdl-report".to_string());
    let only: Option<String> = std::env::args().nth(2);
    let configs = [
        cfg(
            Layout::L8x32,
            1024,
            KeyMode::Bytes(8),
            1,
            "bl_8x32_z1024_k8",
        ),
        cfg(
            Layout::L8x64,
            1000,
            KeyMode::Bytes(13),
            2,
            "bl_8x64_z1000_k13_p2",
        ),
        cfg(
            Layout::L16x32,
            100,
            KeyMode::Prehashed,
            1,
            "bl_16x32_z100_h",
        ),
        cfg(
            Layout::L16x64,
            1500,
            KeyMode::Bytes(8),
            3,
            "bl_16x64_z1500_k8_p3",
        ),
        cfg(Layout::L8x32, 64, KeyMode::Prehashed, 1, "bl_8x32_z64_h"),
    ];
    println!("| configuration | latency | LUT | FF | RAMB36 | RAMB18 | LUTRAM | DSP | BRAM (36K eq.) | minimum | Yosys s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &configs {
        if only.as_ref().is_some_and(|o| o != &c.top_name) {
            continue;
        }
        let dir = std::path::Path::new(&out).join(&c.top_name);
        match export(c, None, &dir, true) {
            Ok(s) => {
                let lat = s.design.latency_cycles;
                if let Some(f) = &s.synth {
                    println!(
                        "| {} (`{}`) | {lat} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
                        describe(c),
                        c.top_name,
                        f.lut,
                        f.ff,
                        f.ramb36,
                        f.ramb18,
                        f.lutram,
                        f.dsp,
                        f.bram36_equiv(),
                        f.bram_min,
                        f.xcup_seconds
                    );
                    if let Some(i) = &f.ice40 {
                        println!(
                            "|   iCE40 HX8K: {} SB_LUT4, {} FF, {} SB_RAM40_4K, Fmax {} MHz ({}) {}|",
                            i.luts, i.ffs, i.brams,
                            i.fmax_mhz.map_or("-".into(), |x| format!("{x:.2}")),
                            i.command, i.note.clone().unwrap_or_default()
                        );
                    }
                } else {
                    println!(
                        "| {} | {lat} | skipped: {:?} | minimum {} |",
                        describe(c),
                        s.synth_skipped,
                        bram_minimum(c)
                    );
                }
            }
            Err(e) => println!("| {} | error: {e} |", describe(c)),
        }
    }
}
