//! `bloomlanes export`: the Parquet split-block form, the generated RTL and its bank files, or a
//! static filter file; a counting or stable filter exports its projection (or, `--counting`, its
//! counting pipeline), a spatial filter its spatial pipeline and a retrieval table its retrieval
//! pipeline (`--hdl` only; `--keys` gives the keys it was built from, read in `export_keys`).

use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::{store, AnyFilter, Error, Result};
use clap::Args;
use serde_json::json;

use crate::args::OpenArgs;
use crate::inputs::InputArgs;
use crate::opened::Opened;
use crate::output::{check_output, emit, say, Warnings};
use crate::Ctx;

/// `--mul-style`: how the hash pipeline multiplies.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MulStyleArg {
    /// 16 × 16-bit products in DSP blocks.
    Dsp,
    /// 4-bit table products in LUTs.
    Lut,
}

/// Arguments of `export`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["parquet", "hdl", "static_file"])))]
pub struct ExportArgs {
    /// The filter file.
    filter: PathBuf,
    /// Write the Parquet split-block form (layout 8x32, seed 0 only; of a counting, stable or
    /// spatial filter, its projection); "-": standard output (the report then goes to standard
    /// error).
    #[arg(long, value_name = "FILE")]
    parquet: Option<PathBuf>,
    /// Write the filter as a static filter file: for a counting, stable or spatial filter its
    /// projection (a bit is set where its counter or class is positive), byte-identical to a
    /// static filter of the keys present.
    #[arg(long = "static", value_name = "FILE")]
    static_file: Option<PathBuf>,
    /// Write HDL bank files and the generated RTL into this directory.
    #[arg(long, value_name = "DIR")]
    hdl: Option<PathBuf>,
    /// With --hdl: also run synthesis (Yosys) when it is installed, and add its figures to the report.
    #[arg(long, requires = "hdl")]
    synth: bool,
    /// With --hdl: the RTL hashes fixed-width keys of this many bytes on chip (e.g. 8 for u64
    /// keys, 13 for IPv4 5-tuples, 37 for IPv6); without it, the ports take 64-bit hashes
    /// computed by the host.
    #[arg(long, requires = "hdl", value_name = "N")]
    key_bytes: Option<usize>,
    /// With --hdl: the RTL hashes keys of 0 to N bytes (N at most 64) on chip, one key per clock,
    /// with a length field beside each key (strings, lines).
    #[arg(long, requires = "hdl", value_name = "N", conflicts_with = "key_bytes")]
    max_key_bytes: Option<usize>,
    /// With --hdl: number of stream ports (1 to 8). Port 0 inserts, looks up and clears; the
    /// others look up.
    #[arg(long, requires = "hdl", value_name = "N")]
    ports: Option<usize>,
    /// With --hdl: name of the top module (a Verilog identifier), also the prefix of every other
    /// module and file, so that several exported filters live in one design.
    #[arg(long, requires = "hdl", value_name = "NAME")]
    top: Option<String>,
    /// With --hdl: the board (FPGA) the design must fit: ice40-hx8k, ice40-up5k, ulx3s-12f,
    /// ulx3s-25f, ulx3s-45f or ulx3s-85f. The block RAMs, multipliers and logic are estimated
    /// before anything is written; a design that does not fit is refused with what does not fit
    /// and the largest filter that would.
    #[arg(long, requires = "hdl", value_name = "NAME")]
    board: Option<String>,
    /// With --hdl: how the on-chip hash builds its 64 × 64-bit multiplies: dsp (16 × 16-bit
    /// products in DSP blocks, the default) or lut (4-bit table products in LUTs, for parts with
    /// few or no multipliers such as iCE40).
    #[arg(long, requires = "hdl", value_name = "STYLE")]
    mul_style: Option<MulStyleArg>,
    /// With --hdl: registered banks for a faster clock: writes and read addresses registered
    /// beside the memory, reads through the block RAM's output register and a fabric register
    /// (DP16KD tiles with REGMODE OUTREG in the ECP5 flow); every design reads in four cycles,
    /// counting and spatial designs with a wider forwarding window (latency in the export's
    /// report).
    #[arg(long, requires = "hdl")]
    registered_banks: bool,
    /// With --hdl, for a counting filter: the counting pipeline (insert, delete and lookup at one
    /// operation per clock, one counter bank per lane, loaded with the filter's counters)
    /// instead of the lookup design of its projection.
    #[arg(long, requires = "hdl")]
    counting: bool,
    /// With --hdl, for a retrieval table: the keys it was built from (or some of them; read with
    /// --format, the CSV options and --key-type as `query` reads keys, the first 1 Mi at most),
    /// looked up as the present keys of the stimulus and self-test; the table file keeps no
    /// keys, so without it they are random keys the table happens to find (none with many check
    /// bits). Keys of another type than the table's are refused. The other kinds' stimuli insert
    /// the keys they look up and take no --keys.
    #[arg(long, requires = "hdl", value_name = "FILE")]
    keys: Option<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    open: OpenArgs,
}

/// Runs `export`.
pub fn run(ctx: &Ctx, a: ExportArgs) -> Result<ExitCode> {
    // clap's `requires = "hdl"` is not enforced beside the required target group: check here.
    if a.hdl.is_none() {
        let given = [
            ("--synth", a.synth),
            ("--key-bytes", a.key_bytes.is_some()),
            ("--max-key-bytes", a.max_key_bytes.is_some()),
            ("--ports", a.ports.is_some()),
            ("--top", a.top.is_some()),
            ("--board", a.board.is_some()),
            ("--mul-style", a.mul_style.is_some()),
            ("--registered-banks", a.registered_banks),
            ("--counting", a.counting),
            ("--keys", a.keys.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, set)| *set) {
            return Err(bloomlanes_host::Error::usage(format!(
                "{name} applies to --hdl only"
            )));
        }
    }
    if let (None, Some(name)) = (&a.keys, a.input.first_given()) {
        return Err(Error::usage(format!(
            "{name} applies to --keys only (how its key file is read)"
        )));
    }
    if let Some(out) = &a.parquet {
        check_output(out)?;
    }
    if let Some(out) = &a.static_file {
        check_output(out)?;
    }
    let opened = Opened::open(&a.filter, a.open.verify())?;
    if a.keys.is_some() && !matches!(opened, Opened::Kind(AnyFilter::Retrieval(_))) {
        return Err(Error::usage(format!(
            "--keys: {} is a {} filter; only a retrieval table's export takes the keys it was \
             built from (its file keeps none); the stimuli of static, counting and spatial \
             designs insert the keys they look up",
            a.filter.display(),
            opened.params().kind.name()
        )));
    }
    if a.counting {
        return match (opened, &a.hdl) {
            (Opened::Kind(AnyFilter::Counting(c)), Some(dir))
                if matches!(
                    c.params().kind,
                    bloomlanes_host::bloomlanes_core::FilterKind::Counting { .. }
                ) =>
            {
                export_counting_hdl(ctx, &a, &c, dir).map(|()| ExitCode::SUCCESS)
            }
            (o, _) => Err(Error::KindUnsupported {
                path: a.filter.clone(),
                op: "export --hdl --counting",
                kind: o.params().kind.name().to_string(),
                hint: "the counting pipeline holds a counting filter (build --kind counting); \
                       without --counting, --hdl exports any static, counting or stable \
                       filter's lookup design",
            }),
        };
    }
    let filter = match opened {
        Opened::Static(file) => {
            let f = file.to_filter();
            file.check_unchanged()?;
            f
        }
        Opened::Kind(AnyFilter::Counting(c)) => c.to_static(),
        // The target group requires one of --hdl, --parquet and --static: here --hdl.
        Opened::Kind(AnyFilter::Spatial(sp)) if a.parquet.is_none() && a.static_file.is_none() => {
            let dir = a.hdl.as_deref().unwrap_or(std::path::Path::new("."));
            return export_spatial_hdl(ctx, &a, &sp, dir).map(|()| ExitCode::SUCCESS);
        }
        // --static or --parquet: its projection, the static filter of all its keys.
        Opened::Kind(AnyFilter::Spatial(sp)) => sp.to_static(),
        Opened::Kind(AnyFilter::Retrieval(t)) if a.parquet.is_none() && a.static_file.is_none() => {
            let dir = a.hdl.as_deref().unwrap_or(std::path::Path::new("."));
            return export_retrieval_hdl(ctx, &a, &t, dir).map(|()| ExitCode::SUCCESS);
        }
        Opened::Kind(other) => {
            return Err(Error::KindUnsupported {
                path: a.filter.clone(),
                op: "export",
                kind: other.params().kind.name().to_string(),
                hint: "it holds no single static image (a window or scalable filter holds \
                       several, a retrieval table none); static, counting, stable and spatial \
                       filters export, and a retrieval table to --hdl alone",
            })
        }
    };
    if let Some(out) = &a.static_file {
        store::save_filter(out, &filter)?;
        tell_written(
            ctx,
            out,
            "static",
            json!({"bytes": filter.byte_len()}),
            format!("{} as a static filter", a.filter.display()),
            format!("{} bytes of bits", filter.byte_len()),
        )?;
    }
    if let Some(out) = &a.parquet {
        let bytes = bloomlanes_parquet::export(&filter)?;
        let mut warnings = Warnings::default();
        for w in bloomlanes_parquet::sizing::reader_warnings(filter.byte_len() as u64) {
            warnings.warn(format!("{}: {w}", a.filter.display()));
        }
        store::write_atomic(out, &bytes)?;
        tell_written(
            ctx,
            out,
            "parquet",
            json!({"bytes": bytes.len(), "bitset_bytes": filter.byte_len(),
                   "warnings": warnings.json()}),
            format!("the Parquet bloom filter of {}", a.filter.display()),
            format!("{} bytes", bytes.len()),
        )?;
    }
    if let Some(dir) = &a.hdl {
        export_hdl(ctx, &a, &filter, dir)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Reports the file `out` that `export` wrote in the form `form` (`static`, `parquet`): with
/// `--json`, `{"output": out, "form": form}` and `fields`; otherwise `wrote WHAT to OUT (SIZE)`.
fn tell_written(
    ctx: &Ctx,
    out: &std::path::Path,
    form: &str,
    fields: serde_json::Value,
    what: String,
    size: String,
) -> Result<()> {
    if !ctx.json {
        return say(&format!("wrote {what} to {} ({size})", out.display()));
    }
    let mut v = json!({"output": out.display().to_string(), "form": form});
    if let (Some(m), serde_json::Value::Object(f)) = (v.as_object_mut(), fields) {
        m.extend(f);
    }
    emit(&v)
}

/// The design's configuration from the options shared by every HDL export (key input, ports,
/// top name, multiplies), checked before anything is written: the configuration itself, the
/// key input against the filter's recorded key type, and the fit on `--board`. Returns the
/// configuration with its pipeline's cells (a retrieval table's, of its `retrieval` shape), and
/// the warnings.
#[cfg(feature = "hdl")]
fn hdl_design(
    a: &ExportArgs,
    params: &bloomlanes_host::bloomlanes_core::Params,
    cells: bloomlanes_hdl::CellSpec,
    retrieval: Option<bloomlanes_host::bloomlanes_core::retrieval::Shape>,
    dir: &std::path::Path,
) -> Result<(bloomlanes_hdl::PipelineConfig, Warnings)> {
    use bloomlanes_hdl::{check_fits, check_key_mode, Device, HdlConfig, KeyKind, KeyMode};
    let key = match (a.key_bytes, a.max_key_bytes) {
        (Some(n), _) => KeyMode::Bytes(n),
        (None, Some(n)) => KeyMode::VarBytes(n),
        (None, None) => KeyMode::Prehashed,
    };
    let hdl_err = |source| Error::Hdl {
        dir: dir.to_path_buf(),
        source,
    };
    let mut cfg = HdlConfig::new(params.layout, params.blocks, key, params.seed);
    if let Some(p) = a.ports {
        cfg.lookup_ports = p;
    }
    if let Some(t) = &a.top {
        cfg.top_name = t.clone();
    }
    if let Some(m) = a.mul_style {
        cfg.mul_style = match m {
            MulStyleArg::Dsp => bloomlanes_hdl::MulStyle::Dsp,
            MulStyleArg::Lut => bloomlanes_hdl::MulStyle::Lut,
        };
    }
    cfg.registered_banks = a.registered_banks;
    let design = match retrieval {
        Some(shape) => bloomlanes_hdl::PipelineConfig::retrieval(cfg, shape),
        None => bloomlanes_hdl::PipelineConfig::new(cfg, cells),
    };
    design.validate().map_err(hdl_err)?;
    // The design must hash the keys exactly as the filter's builder did: refuse a key input
    // that does not fit the recorded key type (e.g. 8-byte keys for a filter of text lines).
    let mut warnings = Warnings::default();
    match KeyKind::of_params(params) {
        Some(kind) => check_key_mode(key, kind).map_err(hdl_err)?,
        None if key != KeyMode::Prehashed => warnings.warn(format!(
            "{} does not record its key type, so the design's {key} cannot be checked against \
             the keys it was built from",
            a.filter.display()
        )),
        None => {}
    }
    if let Some(name) = &a.board {
        let device = Device::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Device::ALL.iter().map(|d| d.name()).collect();
            Error::usage(format!(
                "--board {name:?} is not a known board; use one of {}",
                names.join(", ")
            ))
        })?;
        let fit = check_fits(&design, device).map_err(hdl_err)?;
        for w in fit.warnings {
            warnings.warn(w);
        }
    }
    Ok((design, warnings))
}

#[cfg(feature = "hdl")]
fn export_hdl(
    ctx: &Ctx,
    a: &ExportArgs,
    filter: &bloomlanes_host::Filter,
    dir: &std::path::Path,
) -> Result<()> {
    let (design, warnings) = hdl_design(
        a,
        filter.params(),
        bloomlanes_hdl::CellSpec::STATIC,
        None,
        dir,
    )?;
    let cfg = design.base;
    let summary = bloomlanes_host::hdl_io::export(&cfg, filter, dir, a.synth)?;
    let head = format!(
        "wrote the RTL (top module {}, {} port{}) and {} bank files of {} ({}, {}) to {}:",
        cfg.top_name,
        cfg.lookup_ports,
        if cfg.lookup_ports == 1 { "" } else { "s" },
        filter.layout().lanes(),
        a.filter.display(),
        filter.layout(),
        cfg.key,
        dir.display()
    );
    let fields = json!({"form": "hdl", "ports": cfg.lookup_ports});
    tell_export(ctx, a, &cfg, dir, &summary, &warnings, fields, head)
}

/// Says what an HDL export wrote: one JSON object (`form` and the other `fields`, the key
/// input, top, warnings, files, report and synthesis figures) or `head` and the files.
#[cfg(feature = "hdl")]
#[allow(clippy::too_many_arguments)]
fn tell_export(
    ctx: &Ctx,
    a: &ExportArgs,
    cfg: &bloomlanes_hdl::HdlConfig,
    dir: &std::path::Path,
    summary: &bloomlanes_hdl::ExportSummary,
    warnings: &Warnings,
    mut fields: serde_json::Value,
    head: String,
) -> Result<()> {
    let files: Vec<String> = summary
        .files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if ctx.json {
        let common = json!({
            "output": dir.display().to_string(),
            "key": cfg.key.to_string(),
            "top": cfg.top_name,
            "warnings": warnings.json(),
            "files": files,
            "report": summary.report.display().to_string(),
            "synth": summary.synth.as_ref().map(|f| json!({
                "lut": f.lut, "ff": f.ff, "ramb36": f.ramb36, "ramb18": f.ramb18,
                "lutram": f.lutram, "dsp": f.dsp,
            })),
            "synth_skipped": summary.synth_skipped,
        });
        if let (Some(m), serde_json::Value::Object(c)) = (fields.as_object_mut(), common) {
            m.extend(c);
        }
        emit(&fields)?;
    } else {
        let mut lines = vec![head];
        lines.extend(files.iter().map(|f| format!("  {f}")));
        if let Some(f) = &summary.synth {
            lines.push(format!(
                "synthesis: {} LUTs, {} FFs, {} RAMB36 + {} RAMB18, {} LUT RAM, {} DSP",
                f.lut, f.ff, f.ramb36, f.ramb18, f.lutram, f.dsp
            ));
        }
        if let (true, Some(why)) = (a.synth, &summary.synth_skipped) {
            lines.push(format!("synthesis skipped: {why}"));
        }
        lines.push(format!(
            "the flow (simulation, formal, cocotb, boards): {}",
            dir.join("README.md").display()
        ));
        say(&lines.join("\n"))?;
    }
    Ok(())
}

/// Refuses `--ports` other than 1 for a pipeline with one port; `why` says which and what the
/// port does.
#[cfg(feature = "hdl")]
fn one_port_only(a: &ExportArgs, why: &str) -> Result<()> {
    match a.ports {
        Some(p) if p != 1 => Err(Error::usage(format!("--ports: {why}"))),
        _ => Ok(()),
    }
}

/// `export --hdl DIR --counting`: the counting pipeline of a counting filter, with the kit.
#[cfg(feature = "hdl")]
fn export_counting_hdl(
    ctx: &Ctx,
    a: &ExportArgs,
    c: &bloomlanes_host::bloomlanes_core::CountingFilter,
    dir: &std::path::Path,
) -> Result<()> {
    use bloomlanes_hdl::{CellSpec, CountingConfig};
    one_port_only(
        a,
        "the counting pipeline has one port (insert, delete and lookup)",
    )?;
    let cells = CellSpec::counting(c.counter_bits());
    let (design, warnings) = hdl_design(a, c.params(), cells, None, dir)?;
    let cfg = CountingConfig::new(design.base, c.counter_bits());
    let summary = bloomlanes_host::hdl_io::export_counting(&cfg, c, dir, a.synth)?;
    let head = format!(
        "wrote the counting pipeline (top module {}, {}-bit counters, {}) and {} counter bank files of {} to {}:",
        cfg.base.top_name,
        cfg.counter_bits.bits(),
        cfg.base.key,
        c.params().layout.lanes(),
        a.filter.display(),
        dir.display()
    );
    let fields = json!({"form": "hdl-counting", "counter_bits": cfg.counter_bits.bits()});
    tell_export(ctx, a, &cfg.base, dir, &summary, &warnings, fields, head)
}

/// `export --hdl DIR` of a spatial filter: the spatial pipeline (insert a class, look up the
/// smallest class, one operation per clock) with its class banks and the kit.
#[cfg(feature = "hdl")]
fn export_spatial_hdl(
    ctx: &Ctx,
    a: &ExportArgs,
    sp: &bloomlanes_host::bloomlanes_core::SpatialFilter,
    dir: &std::path::Path,
) -> Result<()> {
    one_port_only(a, "the spatial pipeline has one port (insert and lookup)")?;
    let bits = sp.cell_bits().bits();
    let cells = bloomlanes_hdl::CellSpec::spatial(bits);
    let (design, warnings) = hdl_design(a, sp.params(), cells, None, dir)?;
    let summary = bloomlanes_host::hdl_io::export_spatial(&design, sp, dir, a.synth)?;
    let cfg = &design.base;
    let head = format!(
        "wrote the spatial pipeline (top module {}, {bits}-bit classes, {} classes, {}) and {} class bank files of {} to {}:",
        cfg.top_name,
        sp.classes(),
        cfg.key,
        sp.params().layout.lanes(),
        a.filter.display(),
        dir.display()
    );
    let fields = json!({"form": "hdl-spatial", "cell_bits": bits, "classes": sp.classes()});
    tell_export(ctx, a, cfg, dir, &summary, &warnings, fields, head)
}

/// `export --hdl DIR` of a retrieval table: the retrieval pipeline (a lookup per clock: one bank
/// per cell of a key, their XOR and the check bits) with the table's banks and the kit. The
/// table does not keep its keys: with `--keys FILE` the stimulus and self-test look up the keys
/// of FILE (the table's built keys; read as `query` reads keys, of the table's key type, at
/// most [`crate::export_keys::KEYS_READ_LIMIT`]) as the present ones, and the summary says how many
/// the table holds (a warning when none); without it, random keys the table finds (every key
/// with 0 check bits, one in 2^f with f: none to speak of with many check bits).
#[cfg(feature = "hdl")]
fn export_retrieval_hdl(
    ctx: &Ctx,
    a: &ExportArgs,
    t: &bloomlanes_host::bloomlanes_core::retrieval::RetrievalTable,
    dir: &std::path::Path,
) -> Result<()> {
    one_port_only(a, "the retrieval pipeline has one port (lookups)")?;
    let s = *t.shape();
    let cells = bloomlanes_hdl::CellSpec::retrieval(s.value_bits.into(), s.check_bits.into());
    let (design, mut warnings) = hdl_design(a, t.params(), cells, Some(s), dir)?;
    let keys = match &a.keys {
        Some(path) => Some(crate::export_keys::read_design_keys(
            path,
            &a.input,
            t,
            &design.base,
            &mut warnings,
        )?),
        None => None,
    };
    let given = keys.as_ref().map_or(&[][..], |k| &k.keys[..]);
    let summary = bloomlanes_host::hdl_io::export_retrieval(&design, t, given, dir, a.synth)?;
    let cfg = &design.base;
    let mut head = format!(
        "wrote the retrieval pipeline (top module {}, {} value and {} check bits, arity {}, {}) and {} bank files of {} to {}",
        cfg.top_name,
        s.value_bits,
        s.check_bits,
        s.arity,
        cfg.key,
        s.arity,
        a.filter.display(),
        dir.display()
    );
    head = match &keys {
        Some(k) => format!("{head}; {}:", k.describe()),
        None => format!("{head}:"),
    };
    let fields = json!({"form": "hdl-retrieval", "value_bits": s.value_bits,
                        "check_bits": s.check_bits, "arity": s.arity,
                        "keys": keys.as_ref().map(|k| k.json())});
    tell_export(ctx, a, cfg, dir, &summary, &warnings, fields, head)
}

/// Without the `hdl` feature every HDL export (static, counting, spatial, retrieval) is
/// refused, naming the feature.
#[cfg(not(feature = "hdl"))]
fn hdl_unavailable<F>(_: &Ctx, _: &ExportArgs, _: &F, _: &std::path::Path) -> Result<()> {
    Err(bloomlanes_host::Error::Unsupported {
        what: "export --hdl",
        feature: "hdl",
    })
}

#[cfg(not(feature = "hdl"))]
use self::{
    hdl_unavailable as export_hdl, hdl_unavailable as export_counting_hdl,
    hdl_unavailable as export_retrieval_hdl, hdl_unavailable as export_spatial_hdl,
};
