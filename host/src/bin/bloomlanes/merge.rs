//! `bloomlanes merge`: union or intersection of compatible filters.

use std::path::PathBuf;
use std::process::ExitCode;

use bloomlanes_host::bloomlanes_core::MergeError;
use bloomlanes_host::{ops, store, Error, MergeOp, Result};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::args::OpenArgs;
use crate::merge_cells;
use crate::opened::Opened;
use crate::output::{check_output, emit, say, Warnings};
use crate::Ctx;

/// A `--op` value.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum OpArg {
    /// OR: contains every key of every filter.
    Union,
    /// AND: contains every key common to all filters.
    Intersection,
}

/// Arguments of `merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Filter files (at least two; all with the same layout, hash and seed, and block counts
    /// that are multiples of the smallest: larger filters are folded to it, which gives the
    /// bytes of a build at that size). The merged key count is the sum of the recorded counts,
    /// unknown if one input has none. Spatial filters (the same classes in the same order)
    /// merge by union into the filter of all their keys, each key in its highest class;
    /// counting filters by union into the sum of their counts.
    #[arg(required = true, num_args = 2..)]
    filters: Vec<PathBuf>,
    /// The merged filter file to write ("-": standard output; the report then goes to standard
    /// error).
    #[arg(short, long)]
    output: PathBuf,
    /// How to combine.
    #[arg(long, value_enum, default_value = "union")]
    op: OpArg,
    #[command(flatten)]
    open: OpenArgs,
}

/// Runs `merge`.
pub fn run(ctx: &Ctx, a: MergeArgs) -> Result<ExitCode> {
    check_output(&a.output)?;
    // Held from the reads to the write: `merge a.blf b.blf -o a.blf` is a read-modify-write.
    let _lock = store::lock::lock_output(&a.output)?;
    let op = match a.op {
        OpArg::Union => MergeOp::Union,
        OpArg::Intersection => MergeOp::Intersection,
    };
    let opened = a
        .filters
        .iter()
        .map(|p| Opened::open(p, a.open.verify()))
        .collect::<Result<Vec<_>>>()?;
    if let Some(k) = opened.iter().position(|o| matches!(o, Opened::Kind(_))) {
        // Spatial and counting filters merge cell by cell, with filters of their own kind only:
        // a static one among them is refused before it is read whole.
        let kind = opened[k].params().kind;
        let mut filters = Vec::with_capacity(opened.len());
        for (path, o) in a.filters.iter().zip(opened) {
            match o {
                Opened::Kind(f) => filters.push((path.clone(), f)),
                Opened::Static(f) => {
                    return Err(Error::Merge {
                        first: a.filters[k].clone(),
                        other: path.clone(),
                        source: MergeError::Kind(kind, f.params().kind),
                    })
                }
            }
        }
        return merge_cells::run(ctx, &a.output, op, filters);
    }
    let files: Vec<_> = opened
        .into_iter()
        .map(|o| match o {
            Opened::Static(f) => f,
            Opened::Kind(_) => unreachable!("every input is static here"),
        })
        .collect();
    let ops::Merged {
        filter: merged,
        inputs,
        folds,
    } = ops::merge(&files, op)?;
    store::save_filter(&a.output, &merged)?;
    let input_fpr: Vec<f64> = files.iter().map(|f| f.view().fpr_from_bits()).collect();
    let worst_input = input_fpr.iter().copied().fold(0.0, f64::max);
    let fpr = merged.as_view().fpr_from_bits();
    let mut warnings = Warnings::default();
    if op == MergeOp::Union && fpr > 3.0 * worst_input && fpr > 0.001 {
        warnings.warn(format!(
            "the union's false-positive rate is {fpr:.3e} (from its bits), against at most \
             {worst_input:.3e} for the inputs: the merged filter holds more keys than its size \
             suits; build the inputs with --capacity for the union's keys"
        ));
    }
    // The intersection of two key sets, by inclusion-exclusion over the three estimates.
    let intersection = match (op, inputs.as_slice()) {
        (MergeOp::Intersection, [x, y]) => {
            let (_, est) = x
                .estimate_union_intersection(y)
                .expect("checked by the merge");
            let mut u = x.clone();
            u.union_with(y).expect("checked by the merge");
            let sd = estimate_sd(x) + estimate_sd(y) + estimate_sd(&u);
            Some((est.max(0.0), sd))
        }
        _ => None,
    };
    let est = merged.estimated_keys();
    if ctx.json {
        emit(&json!({
            "output": a.output.display().to_string(),
            "op": op.name(),
            "inputs": a.filters.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "layout": merged.layout().name(),
            "blocks": merged.blocks(),
            "key_count": merged.key_count(),
            "folded": folds_json(&folds),
            "fill_ratio": merged.fill_ratio(),
            "fpr_from_bits": fpr,
            "input_fpr_from_bits": input_fpr,
            "estimated_keys": if op == MergeOp::Union { est } else { None },
            "intersection_estimate": intersection.map(|(e, sd)| json!({"keys": e, "standard_error": sd})),
            "warnings": warnings.json(),
        }))?;
    } else {
        let size = match (op, intersection) {
            (MergeOp::Union, _) => format!(
                "about {} keys",
                est.map_or("unknown".into(), |e| format!("{e:.0}"))
            ),
            (_, Some((e, sd))) => format!(
                "the intersection holds about {e:.0} ± {sd:.0} keys (one standard error, summed \
                 over the three fill-ratio estimates it is made of)"
            ),
            _ => "the size of an intersection of more than two filters is not estimated".into(),
        };
        let folded = folds_text(&folds);
        let keys = match merged.key_count() {
            Some(n) => format!("{n} keys recorded"),
            None => "key count not recorded (an input has none, or an intersection)".into(),
        };
        say(&format!(
            "merged {} filters ({}){folded} into {}: layout {}, {} blocks, {keys}, fill ratio \
             {:.4}, false-positive rate {fpr:.3e} (inputs: {}); {size}",
            files.len(),
            op.name(),
            a.output.display(),
            merged.layout(),
            merged.blocks(),
            merged.fill_ratio(),
            rates_text(&input_fpr),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Standard error of a filter's key-count estimate from its fill ratio, by the bit-array model
/// (Swamidass & Baldi 2007): `sqrt(m (e^t − 1 − t)) / k` with `t = k n / m`, `m` bits, `k` bits
/// set per key (one per lane), `n` the estimate. Infinite for a saturated filter.
fn estimate_sd(f: &bloomlanes_host::Filter) -> f64 {
    let Some(n) = f.estimated_keys() else {
        return f64::INFINITY;
    };
    let m = f.params().bit_len() as f64;
    let k = f.layout().lanes() as f64;
    let t = k * n / m;
    (m * (t.exp_m1() - t)).max(0.0).sqrt() / k
}

/// The folded inputs, as the JSON report's `folded`.
pub fn folds_json(folds: &[ops::Fold]) -> Value {
    folds
        .iter()
        .map(|f| {
            json!({
                "input": f.path.display().to_string(),
                "from_blocks": f.from,
                "to_blocks": f.to,
            })
        })
        .collect()
}

/// The folded inputs, for people: ` (folded FILE FROM → TO blocks)` each.
pub fn folds_text(folds: &[ops::Fold]) -> String {
    folds
        .iter()
        .map(|f| {
            format!(
                " (folded {} {} → {} blocks)",
                f.path.display(),
                f.from,
                f.to
            )
        })
        .collect()
}

/// Rates for people: `1.234e-3, 5.678e-4`.
pub fn rates_text(rates: &[f64]) -> String {
    rates
        .iter()
        .map(|r| format!("{r:.3e}"))
        .collect::<Vec<_>>()
        .join(", ")
}
