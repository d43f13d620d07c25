//! Export (RTL, benches, bank files and report in one folder) and synthesis figures.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bloomlanes_core::{Filter, Params};

use crate::sim::{on_path, run_cmd as run};
use crate::{write_bank_files_for, Design, HdlConfig, HdlError, KeyMode, PipelineConfig};

/// Bits of one UltraScale+ RAMB36E2 counted by the analytical minimum (36 Kib, parity included).
pub const RAMB36_BITS: u64 = 36 * 1024;
/// Bits a RAMB36E2 holds 1 bit wide (32K × 1: parity bits exist only in ×9/×18/×36/×72 modes).
pub const RAMB36_X1_BITS: u64 = 32 * 1024;

/// Resource figures from Yosys (and nextpnr for iCE40).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SynthFigures {
    /// LUTs (LUT1..LUT6) after `synth_xilinx -family xcup`.
    pub lut: u64,
    /// Flip-flops (FD*).
    pub ff: u64,
    /// RAMB36E2 cells.
    pub ramb36: u64,
    /// RAMB18E2 cells.
    pub ramb18: u64,
    /// UltraRAM cells (URAM288).
    pub uram: u64,
    /// LUT RAM cells (RAM32M, RAM64X1D, RAM256X1D, ...).
    pub lutram: u64,
    /// DSP48E2 cells.
    pub dsp: u64,
    /// CARRY8 cells.
    pub carry: u64,
    /// Analytical minimum in 36 Kib blocks: replicas × L × ceil(z × W / 36 Kib).
    pub bram_min: u64,
    /// Seconds Yosys took for the UltraScale+ run.
    pub xcup_seconds: f64,
    /// iCE40 HX8K results, when the configuration is small enough and the tools are installed.
    pub ice40: Option<Ice40Figures>,
}

impl SynthFigures {
    /// Block RAM used, in RAMB36 equivalents (a RAMB18 counts one half).
    pub fn bram36_equiv(&self) -> f64 {
        self.ramb36 as f64 + self.ramb18 as f64 / 2.0
    }
}

/// `synth_ice40` + `nextpnr-ice40` figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ice40Figures {
    /// Logic cells (SB_LUT4).
    pub luts: u64,
    /// Flip-flops (SB_DFF*).
    pub ffs: u64,
    /// SB_RAM40_4K cells.
    pub brams: u64,
    /// Fmax of `clk` that nextpnr reported, in MHz (`None` if place and route failed).
    pub fmax_mhz: Option<f64>,
    /// The nextpnr command line.
    pub command: String,
    /// A note (failure reason), if any.
    pub note: Option<String>,
}

/// What [`export`] wrote.
#[derive(Clone, Debug)]
pub struct ExportSummary {
    /// The generated design.
    pub design: Design,
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// The report (`<top>_report.md`).
    pub report: PathBuf,
    /// Synthesis figures, if synthesis was asked for and Yosys is installed.
    pub synth: Option<SynthFigures>,
    /// Why synthesis was skipped, if it was.
    pub synth_skipped: Option<String>,
}

/// The analytical minimum of UltraScale+ block RAMs for the banks: replicas × banks per replica
/// × ceil(cells per bank × cell bits / 36 Kib).
pub fn bram_minimum(cfg: &PipelineConfig) -> u64 {
    let (depth, lanes) = cfg.bank_shape();
    let bits = depth * u64::from(cfg.cells.bits);
    cfg.base.replicas() as u64 * lanes as u64 * bits.div_ceil(RAMB36_BITS)
}

/// Whether the iCE40 HX8K run is attempted: prehashed (XXH64's 64-bit multiplies do not fit
/// its 7680 cells) and the design surely fits ([`crate::check_fits`]: block RAMs, logic).
pub fn ice40_feasible(cfg: &PipelineConfig) -> bool {
    cfg.base.key == KeyMode::Prehashed
        && crate::check_fits(cfg, crate::Device::Ice40Hx8k).is_ok_and(|f| f.warnings.is_empty())
}

/// Cell counts from a Yosys `stat` listing: the design hierarchy totals (or the last module).
pub fn parse_stat(text: &str) -> Vec<(String, u64)> {
    // With hierarchy kept, the totals are in the last section, "=== design hierarchy ===".
    let start = text
        .rfind("=== design hierarchy ===")
        .or_else(|| text.rfind("=== "))
        .unwrap_or(0);
    let mut cells = Vec::new();
    for line in text[start..].lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 2 {
            if let Ok(n) = f[1].parse::<u64>() {
                if f[0]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
                {
                    if f[0] == "Number" {
                        continue;
                    }
                    cells.push((f[0].to_string(), n));
                }
            }
        }
    }
    cells
}

fn sum(cells: &[(String, u64)], pred: impl Fn(&str) -> bool) -> u64 {
    cells.iter().filter(|(n, _)| pred(n)).map(|(_, c)| c).sum()
}

/// Runs Yosys on `<top>.v` in `dir`: `<synth> -top <top>` (a script `<top>_<name>.ys`, its log
/// `<top>_<name>.log`), and returns the cell counts of its `stat` (`<top>_<name>_stat.txt`).
fn yosys_stat(
    dir: &Path,
    top: &str,
    name: &str,
    synth: &str,
) -> Result<Vec<(String, u64)>, HdlError> {
    let script =
        format!("read_verilog {top}.v\n{synth} -top {top}\ntee -o {top}_{name}_stat.txt stat\n");
    std::fs::write(dir.join(format!("{top}_{name}.ys")), &script)?;
    run(
        Command::new("yosys")
            .current_dir(dir)
            .args(["-q", "-l"])
            .arg(format!("{top}_{name}.log"))
            .arg("-s")
            .arg(format!("{top}_{name}.ys")),
        "yosys",
    )?;
    // The flattened top is the last module listed.
    Ok(parse_stat(&std::fs::read_to_string(
        dir.join(format!("{top}_{name}_stat.txt")),
    )?))
}

/// Runs `synth_xilinx -family xcup` (and, if feasible, `synth_ice40` + `nextpnr-ice40 --hx8k`)
/// on `<top>.v` in `dir`.
pub fn synthesize(
    cfg: &PipelineConfig,
    design: &Design,
    dir: &Path,
) -> Result<SynthFigures, HdlError> {
    let top = &design.top_name;
    let t0 = Instant::now();
    let cells = yosys_stat(dir, top, "xcup", "synth_xilinx -family xcup")?;
    let mut f = SynthFigures {
        lut: sum(&cells, |n| n.starts_with("LUT")),
        ff: sum(&cells, |n| n.starts_with("FD")),
        ramb36: sum(&cells, |n| n.starts_with("RAMB36")),
        ramb18: sum(&cells, |n| n.starts_with("RAMB18")),
        uram: sum(&cells, |n| n.starts_with("URAM")),
        lutram: sum(&cells, |n| n.starts_with("RAM") && !n.starts_with("RAMB")),
        dsp: sum(&cells, |n| n.starts_with("DSP")),
        carry: sum(&cells, |n| n.starts_with("CARRY")),
        bram_min: bram_minimum(cfg),
        xcup_seconds: t0.elapsed().as_secs_f64(),
        ice40: None,
    };
    if ice40_feasible(cfg) && on_path("nextpnr-ice40") {
        f.ice40 = Some(ice40(design, dir)?);
    }
    Ok(f)
}

fn ice40(design: &Design, dir: &Path) -> Result<Ice40Figures, HdlError> {
    let top = &design.top_name;
    let synth = format!("synth_ice40 -json {top}_ice40.json");
    let cells = yosys_stat(dir, top, "ice40", &synth)?;
    let args = [
        "--hx8k",
        "--package",
        "ct256",
        "--json",
        &format!("{top}_ice40.json"),
        "--pcf-allow-unconstrained",
        "--freq",
        "12",
        "--seed",
        "1",
        "--log",
        &format!("{top}_nextpnr.log"),
    ];
    let command = format!("nextpnr-ice40 {}", args.join(" "));
    let mut fig = Ice40Figures {
        luts: sum(&cells, |n| n == "SB_LUT4"),
        ffs: sum(&cells, |n| n.starts_with("SB_DFF")),
        brams: sum(&cells, |n| n.starts_with("SB_RAM40")),
        fmax_mhz: None,
        command,
        note: None,
    };
    match run(
        Command::new("nextpnr-ice40").current_dir(dir).args(args),
        "nextpnr-ice40",
    ) {
        Ok(text) => {
            fig.fmax_mhz = text
                .lines()
                .rev()
                .filter(|l| l.contains("Max frequency for clock"))
                .filter_map(|l| {
                    let after = l.split("':").nth(1)?;
                    after.split_whitespace().next()?.parse::<f64>().ok()
                })
                .next();
            if fig.fmax_mhz.is_none() {
                fig.note = Some("nextpnr reported no Fmax".into());
            }
        }
        Err(e) => {
            let text = e.to_string();
            let line = text
                .lines()
                .rev()
                .find(|l| l.starts_with("ERROR"))
                .unwrap_or("failed");
            fig.note = Some(format!("nextpnr-ice40: {line}"));
        }
    }
    Ok(fig)
}

/// Writes into `dir`: the RTL (`<top>.v`), the Verilog test bench (`<top>_tb.v`), the Verilator
/// harness (`<top>_harness.cpp`), the kit (board tops, AXI wrapper, Makefile, constraints,
/// cocotb bench, formal harness, `README.md`), one bank file per lane (from `filter`, or empty),
/// the bench's stimulus and a report (`<top>_report.md`) with the configuration, latency,
/// read-after-write rule and, when `synth` is set and Yosys is installed, the UltraScale+
/// resources against the block RAM minimum and the iCE40 Fmax for small configurations.
pub fn export(
    cfg: &HdlConfig,
    filter: Option<&Filter>,
    dir: &Path,
    synth: bool,
) -> Result<ExportSummary, HdlError> {
    let pc = PipelineConfig::static_filter(cfg);
    export_pipeline(&pc, dir, synth, |design, dir| {
        let empty;
        let f = match filter {
            Some(f) => {
                cfg.check_filter(f)?;
                f
            }
            None => {
                empty = Filter::new(Params::new(cfg.layout, cfg.blocks).with_seed(cfg.seed));
                &empty
            }
        };
        let mut files = write_bank_files_for(f, dir, &design.top_name)?;
        files.extend(crate::sim::write_export_bench(cfg, f, dir)?);
        Ok(files)
    })
}

/// Writes the design of `cfg` with its whole kit into `dir` (created if needed): the sources,
/// the kit files of every kind (`verilog::kit_files`), what `data` writes (the bank files and
/// the bench's stimulus, which depend on the kind; it returns their paths) and the report.
pub(crate) fn export_pipeline(
    cfg: &PipelineConfig,
    dir: &Path,
    synth: bool,
    data: impl FnOnce(&Design, &Path) -> Result<Vec<PathBuf>, HdlError>,
) -> Result<ExportSummary, HdlError> {
    let design = crate::generate_pipeline(cfg)?;
    let top = design.top_name.clone();
    let mut files = design.write_sources(dir)?;
    for (rel, text) in crate::verilog::kit_files(cfg) {
        let p = dir.join(&rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, text)?;
        files.push(p);
    }
    files.extend(data(&design, dir)?);
    let (synth_fig, skipped) = if !synth {
        (None, Some("not requested".to_string()))
    } else if !on_path("yosys") {
        (None, Some("yosys is not installed".to_string()))
    } else {
        (Some(synthesize(cfg, &design, dir)?), None)
    };
    let report = dir.join(format!("{top}_report.md"));
    std::fs::write(
        &report,
        report_text(cfg, &design, synth_fig.as_ref(), skipped.as_deref()),
    )?;
    files.push(report.clone());
    Ok(ExportSummary {
        design,
        files,
        report,
        synth: synth_fig,
        synth_skipped: skipped,
    })
}

/// A one-line description of a configuration, e.g. `8x32 z=1000 8-byte keys, 2 ports`.
pub fn describe(cfg: &HdlConfig) -> String {
    format!(
        "{} z={} {}, {} port{}",
        cfg.layout,
        cfg.blocks,
        cfg.key,
        cfg.lookup_ports,
        if cfg.lookup_ports == 1 { "" } else { "s" }
    )
}

/// The Markdown report of one design.
pub fn report_text(
    cfg: &PipelineConfig,
    design: &Design,
    synth: Option<&SynthFigures>,
    skipped: Option<&str>,
) -> String {
    let mut s = String::new();
    let (depth, lanes) = cfg.bank_shape();
    let _ = writeln!(
        s,
        "# {}: {} filter, {}\n",
        design.top_name,
        cfg.cells.kind_name(),
        describe(&cfg.base)
    );
    let _ = writeln!(s, "- Cells: {}.", cfg.cells);
    let _ = writeln!(
        s,
        "- Banks: {lanes} lanes × {} replica(s), each {depth} × {} bit(s) ({} address bits).",
        cfg.base.replicas(),
        cfg.cells.bits,
        design.addr_bits
    );
    let _ = writeln!(
        s,
        "- Latency: {} cycles (accept → answer offered); {} hash stage(s); II = 1 per port; answer FIFO {} entries.",
        design.latency_cycles, design.hash_stages, design.fifo_depth
    );
    if let Some(r) = &cfg.retrieval {
        let _ = writeln!(
            s,
            "- Table: arity {}, {} segments of 2^{} cells, {} value bits, {} check bits, construction seed {:#x}; lookups answer {{found, value}} (0 when absent); operations 1 to 3 are no-ops (the cells are loaded from the bank files or the management port).",
            r.arity, r.segment_count, r.segment_bits, r.value_bits, r.check_bits, r.seed
        );
    }
    s.push_str(if cfg.cells.alu == crate::CellAlu::Fixed {
        "- Read-after-write: none: no operation writes the cells.\n"
    } else if cfg.cells.reads_cells() {
        "- Read-after-write: none: every operation sees every operation accepted before it (the read-modify-write forwards the cells in flight).\n"
    } else {
        "- Read-after-write: none on port 0 (in order); on ports 1.. a lookup sees an insert accepted in an earlier cycle.\n"
    });
    s.push_str(
        "- Flow: see README.md (simulation, formal checks, cocotb, synthesis for the boards).\n",
    );
    match (synth, skipped) {
        (Some(f), _) => {
            let _ = writeln!(
                s,
                "\n## Yosys `synth_xilinx -family xcup`\n\n| LUT | FF | RAMB36 | RAMB18 | URAM | LUTRAM | DSP | CARRY8 | BRAM (36K eq.) | minimum | \n|---|---|---|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                f.lut, f.ff, f.ramb36, f.ramb18, f.uram, f.lutram, f.dsp, f.carry, f.bram36_equiv(), f.bram_min
            );
            if let Some(i) = &f.ice40 {
                let _ = writeln!(
                    s,
                    "\n## iCE40 HX8K (`synth_ice40`, `{}`)\n\n| SB_LUT4 | SB_DFF* | SB_RAM40_4K | Fmax (MHz) |\n|---|---|---|---|\n| {} | {} | {} | {} |",
                    i.command,
                    i.luts,
                    i.ffs,
                    i.brams,
                    i.fmax_mhz.map_or("-".to_string(), |x| format!("{x:.2}"))
                );
                if let Some(n) = &i.note {
                    let _ = writeln!(s, "\nNote: {n}");
                }
            }
        }
        (None, Some(why)) => {
            let _ = writeln!(s, "\nSynthesis skipped: {why}.");
        }
        (None, None) => {}
    }
    s
}
