//! `bloomlanes verify`: the same keys through every backend present, compared bit for bit and
//! answer for answer with the scalar reference (and the RTL simulation when one is installed);
//! spatial filters and retrieval tables from the caller's key and label pairs, or with labels
//! generated for the keys (`--kind all`; `--kind spatial|retrieval` without inputs). A bar on
//! standard error shows which check runs (a terminal only, as every command's bars).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::kinds::verify_labels::{Generated, LabelSet, GENERATED_KINDS};
use bloomlanes_host::verify::{Step, VerifyReport};
use bloomlanes_host::{kinds, verify, Error, KindSpec, Layout, Result};
use bloomlanes_input::pairs::{self, LabelColumn};
use bloomlanes_input::{read_inputs, KeySet};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::args::check_fpp;
use crate::inputs::InputArgs;
use crate::labelled::{self, LabelArgs};
use crate::output::{absent_json, emit, say};
use crate::Ctx;

/// Arguments of `verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Input files with the keys (none: built-in sample keys).
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    /// Layout to check ("all" checks every layout).
    #[arg(long, default_value = "all")]
    layout: String,
    /// Number of sample keys when no input is given.
    #[arg(long, default_value_t = 100_000)]
    keys: usize,
    /// Target false-positive rate used for sizing.
    #[arg(long, default_value_t = 0.01)]
    fpp: f64,
    /// Hash seed.
    #[arg(long, default_value = "0", value_parser = crate::args::parse_seed)]
    seed: u64,
    /// Kind of filter to check: all, static, counting, stable, window, scalable, spatial or
    /// retrieval (sample keys or the inputs' keys; spatial and retrieval with labels generated
    /// from each key's hash: three classes, 12-bit values). With inputs, --kind spatial or
    /// retrieval reads the inputs' key and label pairs as `build --kind spatial|retrieval`
    /// reads them. Each listed key must be answered its own class or higher, or exactly its
    /// own value, on every CPU backend.
    #[arg(long, default_value = "all")]
    kind: String,
    /// Inserted (and as many absent) keys looked up in the RTL simulation, when a Verilog
    /// simulator is installed (0 skips it).
    #[arg(long, default_value_t = 64)]
    hdl_keys: usize,
    #[command(flatten)]
    labels: LabelArgs,
}

/// A bar over the checks of a run, on standard error when it is a terminal and bars are
/// wanted (not `--quiet`, not `--json`), as `progress.rs` draws the others.
struct Checks {
    bar: Option<ProgressBar>,
}

impl Checks {
    fn new(wanted: bool) -> Checks {
        Checks {
            bar: (wanted && std::io::stderr().is_terminal()).then(ProgressBar::hidden),
        }
    }

    fn update(&mut self, s: Step) {
        let Some(bar) = &mut self.bar else {
            return;
        };
        if bar.is_hidden() {
            *bar = ProgressBar::new(s.total as u64);
            let style = ProgressStyle::with_template(
                "verifying {msg} [{bar:30}] {pos}/{len} checks ({elapsed}, eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            bar.set_style(style);
        }
        bar.set_position(s.done as u64);
        bar.set_message(s.what);
        if s.done >= s.total {
            bar.finish_and_clear();
        }
    }
}

fn parse_layouts(s: &str) -> Result<Vec<Layout>> {
    if s == "all" {
        return Ok(Layout::ALL.to_vec());
    }
    Layout::from_name(s).map(|l| vec![l]).ok_or_else(|| {
        Error::usage(format!(
            "--layout {s:?}: expected all, 8x32, 8x64, 16x32 or 16x64"
        ))
    })
}

/// The kinds `--kind` names: those filled from keys alone, and those that also take labels
/// (generated: see [`Generated`]).
fn parse_kinds(s: &str, keys: usize) -> Result<(Vec<KindSpec>, Vec<&'static str>)> {
    let mut all = vec![KindSpec::Static];
    all.extend(kinds::verify::kinds_for(keys));
    if s == "all" {
        return Ok((all, GENERATED_KINDS.to_vec()));
    }
    if let Some(&labelled) = GENERATED_KINDS.iter().find(|&&k| k == s) {
        return Ok((Vec::new(), vec![labelled]));
    }
    all.into_iter()
        .find(|k| k.name() == s)
        .map(|k| (vec![k], Vec::new()))
        .ok_or_else(|| {
            Error::usage(format!(
                "--kind {s:?}: expected all, static, counting, stable, window, scalable, spatial or \
                 retrieval"
            ))
        })
}

/// Runs `verify`.
pub fn run(ctx: &Ctx, a: VerifyArgs) -> Result<ExitCode> {
    check_fpp(a.fpp)?;
    let layouts = parse_layouts(&a.layout)?;
    let mut checks = Checks::new(ctx.progress);
    let hook = &mut |s| checks.update(s);
    let own_labels = !a.inputs.is_empty() || !a.labels.class.is_empty();
    if (a.kind == "spatial" || a.kind == "retrieval") && own_labels {
        return run_labelled(ctx, &a, &layouts, hook);
    }
    let keys: KeySet = if a.inputs.is_empty() {
        verify::sample_keyset(a.keys)
    } else {
        read_inputs(&a.inputs, &a.input.options())?.0
    };
    let (kinds, labelled) = parse_kinds(&a.kind, keys.len())?;
    let generated = Generated::for_keys(&keys);
    let sets = generated.sets(&labelled);
    let report = verify::run(
        &keys, &layouts, &kinds, &sets, a.fpp, a.seed, a.hdl_keys, hook,
    )?;
    show(ctx, &report, keys.len(), &|_| None)
}

/// `verify --kind spatial|retrieval`: the inputs' key and label pairs.
fn run_labelled(
    ctx: &Ctx,
    a: &VerifyArgs,
    layouts: &[Layout],
    hook: verify::StepHook<'_>,
) -> Result<ExitCode> {
    let opts = a.input.options();
    let spatial;
    let retrieval;
    let (keys, set, column) = if a.kind == "spatial" {
        spatial = labelled::read_spatial(&a.labels, &a.inputs, &opts)?;
        let set = LabelSet::Spatial {
            names: &spatial.names,
            cell_bits: spatial.cell_bits,
            classes: &spatial.classes,
        };
        (
            &spatial.keys,
            set,
            (&a.labels.class_column, "--class-column"),
        )
    } else {
        let (read, spec) = labelled::read_retrieval(&a.labels, &a.inputs, &opts)?;
        // A key repeated with two values is refused as `build` refuses it, both lines named.
        let builder = bloomlanes_host::FilterBuilder::new().seed(a.seed);
        labelled::build_retrieval_of(&a.labels, &a.inputs, &opts, &builder, &read, spec)?;
        retrieval = read;
        let set = LabelSet::Retrieval {
            spec,
            values: &retrieval.labels,
        };
        (
            &retrieval.keys,
            set,
            (&a.labels.value_column, "--value-column"),
        )
    };
    let report = verify::run_labelled(keys, set, layouts, a.fpp, a.seed, hook)?;
    let column = (column.0.as_deref()).map(|name| LabelColumn {
        name,
        flag: column.1,
    });
    // A difference about a listed key names its input line.
    let place = |i: usize| {
        let (path, line) = pairs::locate(&a.inputs, &opts, column?, i)?;
        Some(format!("{}: line {line}", path.display()))
    };
    show(ctx, &report, keys.len(), &place)
}

/// Prints the report; `place(i)` says where listed key `i` came from, when it is known.
fn show(
    ctx: &Ctx,
    report: &VerifyReport,
    keys: usize,
    place: &dyn Fn(usize) -> Option<String>,
) -> Result<ExitCode> {
    let difference = |d: &verify::Difference| match d.inserted_key().and_then(place) {
        Some(at) => format!("{d} (at {at})"),
        None => d.to_string(),
    };
    if ctx.json {
        emit(&json!({
            "ok": report.ok(),
            "keys": keys,
            "rows": report.rows.iter().map(|r| json!({
                "layout": r.layout.name(),
                "kind": r.kind,
                "backend": r.backend,
                "keys": r.keys,
                "probes": r.probes,
                "identical": r.difference.is_none(),
                "difference": r.difference.as_ref().map(difference),
            })).collect::<Vec<_>>(),
            "absent_backends": absent_json(&report.absent),
        }))?;
    } else {
        let mut lines = vec![format!(
            "verify: {keys} keys inserted and {} probed per layout, compared with the scalar \
             reference",
            keys * 2
        )];
        let mut last = None;
        for r in &report.rows {
            if last != Some((r.layout, r.kind)) && last.is_some() {
                lines.push(String::new());
            }
            last = Some((r.layout, r.kind));
            lines.push(format!(
                "  {:<6} {:<9} {:<30} {}",
                r.layout.name(),
                r.kind,
                r.backend,
                match &r.difference {
                    None if r.backend.starts_with("hdl-sim") => {
                        format!("identical answers ({} operations simulated)", r.probes)
                    }
                    None if r.kind == "static" => "identical bits and answers".to_string(),
                    None if r.backend == "scalar" && r.kind == "spatial" => {
                        "reference: every listed key in its class or higher, file round trip"
                            .to_string()
                    }
                    None if r.backend == "scalar" && r.kind == "retrieval" => {
                        "reference: every listed key answered its value, file round trip"
                            .to_string()
                    }
                    None if r.kind == "spatial" || r.kind == "retrieval" => {
                        "identical file and answers".to_string()
                    }
                    None if r.backend == "scalar" => {
                        "identical images and answers; no false negative, file round trip"
                            .to_string()
                    }
                    None => "identical images and answers".to_string(),
                    Some(d) => format!("DIFFERENT: {}", difference(d)),
                }
            ));
        }
        for (n, why) in &report.absent {
            lines.push(format!("  SKIP: {n}: {why}"));
        }
        lines.push(if report.ok() {
            "all backends agree".into()
        } else {
            "backends DISAGREE".into()
        });
        say(&lines.join("\n"))?;
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
