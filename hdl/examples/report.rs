//! Exports the report configurations with synthesis and prints the table of hdl/REPORT.md:
//! `cargo run --release -p bloomlanes-hdl --example report -- <out-dir>`.
use bloomlanes_core::Layout;
use bloomlanes_hdl::report::{bram_minimum, describe};
use bloomlanes_hdl::{export, HdlConfig, KeyMode, MulStyle, RamStyle};

fn cfg(
    layout: Layout,
    blocks: u32,
    key: KeyMode,
    ports: usize,
    mul: MulStyle,
    ram: RamStyle,
    name: &str,
) -> HdlConfig {
    let mut c = HdlConfig::new(layout, blocks, key, 0);
    c.lookup_ports = ports;
    c.ram_style = ram;
    c.mul_style = mul;
    c.top_name = name.to_string();
    c
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "hdl-report".to_string());
    let only: Option<String> = std::env::args().nth(2);
    use KeyMode::*;
    use MulStyle::*;
    use RamStyle::*;
    let configs = [
        cfg(
            Layout::L8x32,
            1024,
            Bytes(8),
            1,
            Dsp,
            Block,
            "bl_8x32_z1024_k8",
        ),
        cfg(
            Layout::L8x32,
            1024,
            Bytes(8),
            1,
            Lut,
            Block,
            "bl_8x32_z1024_k8_lut",
        ),
        cfg(
            Layout::L8x32,
            1024,
            VarBytes(64),
            1,
            Dsp,
            Block,
            "bl_8x32_z1024_v64",
        ),
        cfg(
            Layout::L8x32,
            1024,
            Prehashed,
            1,
            Dsp,
            Block,
            "bl_8x32_z1024_h",
        ),
        cfg(
            Layout::L16x64,
            1500,
            Bytes(8),
            3,
            Dsp,
            Block,
            "bl_16x64_z1500_k8_p3",
        ),
        cfg(
            Layout::L8x32,
            1024,
            Prehashed,
            1,
            Dsp,
            Ultra,
            "bl_8x32_z1024_h_uram",
        ),
        cfg(Layout::L8x32, 64, Prehashed, 1, Dsp, Block, "bl_8x32_z64_h"),
    ];
    println!("| configuration | latency | LUT | FF | RAMB36 | RAMB18 | URAM | LUTRAM | DSP | BRAM (36K eq.) | minimum | Yosys s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
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
                        "| {} (`{}`) | {lat} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
                        describe(c),
                        c.top_name,
                        f.lut,
                        f.ff,
                        f.ramb36,
                        f.ramb18,
                        f.uram,
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
                        bram_minimum(&bloomlanes_hdl::PipelineConfig::static_filter(c))
                    );
                }
            }
            Err(e) => println!("| {} | error: {e} |", describe(c)),
        }
    }
}
