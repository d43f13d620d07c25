//! `bloomlanes stats`: a filter's parameters and the core's statistics of it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bloomlanes_host::bloomlanes_core::{math, window, FilterKind};
use bloomlanes_host::{kinds, AnyFilter, Result, Stats};
use clap::Args;
use serde_json::{json, Value};

use crate::args::OpenArgs;
use crate::kind::kind_json;
use crate::opened::Opened;
use crate::output::{emit, say};
use crate::Ctx;

/// Arguments of `stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The filter file.
    filter: PathBuf,
    #[command(flatten)]
    open: OpenArgs,
}

/// The figures every kind shares, as JSON: the parameters, the inserts the file records, the
/// distinct keys its bits show and the rate of those bits. `blocks` and `bytes` are the whole
/// filter's (all stages of a scalable filter).
fn common_json(path: &Path, s: &Stats, blocks: u64, bytes: u64) -> Value {
    let p = &s.params;
    json!({
        "file": path.display().to_string(),
        "kind": kind_json(p.kind),
        "key_type": p.key_type.to_string(),
        "layout": p.layout.name(),
        "lanes": p.layout.lanes(),
        "word_bits": p.layout.word_bits(),
        "blocks": blocks,
        "bytes": bytes,
        "seed": p.seed,
        "hash": p.hash.name(),
        "recorded_keys": s.recorded_keys,
        "inserts_recorded": s.recorded_keys,
        "set_bits": s.ones,
        "fill_ratio": s.fill_ratio,
        "estimated_keys": s.estimated_keys,
        "distinct_keys_estimated": s.estimated_keys,
        "distinct_keys_standard_error": s.estimated_keys_error,
        "expected_fpr": s.expected_fpr,
        "fpr_from_bits": s.fpr_from_bits,
        "bits_per_key": s.bits_per_key,
    })
}

/// The distinct keys the bits show, for people: `about 19933 (± 103, from the set bits)`.
pub fn describe_distinct(estimate: Option<f64>, error: Option<f64>) -> String {
    match (estimate, error) {
        (Some(n), Some(e)) => format!("about {n:.0} (±{e:.0}, estimated from the set bits)"),
        (Some(n), None) => format!("about {n:.0} (estimated from the set bits)"),
        (None, _) => "unknown (every bit is set)".to_string(),
    }
}

/// The lines every kind shares, for people (see [`common_json`]).
fn common_lines(path: &Path, s: &Stats, blocks: &str, bytes: u64) -> Vec<String> {
    let p = &s.params;
    let mut lines = vec![format!("file:               {}", path.display())];
    if p.kind != FilterKind::Static {
        lines.push(format!("kind:               {}", p.kind));
    }
    lines.extend([
        format!("key type:           {}", p.key_type),
        format!(
            "layout:             {} ({} lanes x {}-bit words, {}-byte blocks)",
            p.layout,
            p.layout.lanes(),
            p.layout.word_bits(),
            p.layout.block_bytes()
        ),
        format!("blocks:             {blocks}"),
        format!("size:               {bytes} bytes"),
        format!("hash:               {}, seed {}", p.hash, p.seed),
        format!(
            "inserts recorded:   {} (repeated keys counted each time)",
            s.recorded_keys.map_or("unknown".into(), |k| k.to_string())
        ),
        format!(
            "distinct keys:      {}",
            describe_distinct(s.estimated_keys, s.estimated_keys_error)
        ),
        format!("set bits:           {}", s.ones),
        format!("fill ratio:         {:.4}", s.fill_ratio),
        format!(
            "expected fpr:       {:.3e}{}",
            s.expected_fpr,
            if s.fpr_from_bits.is_some() {
                " (of the filter's bits)"
            } else {
                ""
            }
        ),
        format!(
            "bits per key:       {}",
            s.bits_per_key
                .map_or("n/a (no keys)".to_string(), |b| format!(
                    "{b:.2} (per distinct key)"
                ))
        ),
    ]);
    lines
}

/// Runs `stats`.
pub fn run(ctx: &Ctx, a: StatsArgs) -> Result<ExitCode> {
    // Opening is timed here: with the payload check it reads the whole file.
    let start = Instant::now();
    let f = match Opened::open(&a.filter, a.open.verify())? {
        Opened::Static(f) => f,
        Opened::Kind(f) => return kind_stats(ctx, &a.filter, &f, start.elapsed()),
    };
    let open = start.elapsed();
    let s = f.stats();
    f.check_unchanged()?;
    let blocks = u64::from(s.params.blocks);
    if ctx.json {
        let mut v = common_json(&a.filter, &s, blocks, s.bytes);
        v["parquet_compatible"] = json!(s.parquet_compatible);
        v["memory_mapped"] = json!(f.is_mapped());
        v["payload_verified"] = json!(f.payload_verified());
        v["open_seconds"] = json!(open.as_secs_f64());
        emit(&v)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut lines = common_lines(&a.filter, &s, &blocks.to_string(), s.bytes);
    lines.push(format!(
        "parquet compatible: {}",
        if s.parquet_compatible { "yes" } else { "no" }
    ));
    lines.push(if f.payload_verified() {
        format!(
            "payload checksum:   verified (opening took {:.3} s)",
            open.as_secs_f64()
        )
    } else {
        "payload checksum:   not verified (--no-verify-payload)".to_string()
    });
    say(&lines.join("\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// The figures particular to a kind: counters saturated, the window's current generation, the
/// scalable filter's stages.
fn kind_figures(f: &AnyFilter, s: &Stats) -> Value {
    let p = f.params();
    match f {
        AnyFilter::Spatial(_) | AnyFilter::Retrieval(_) => label_figures(f),
        AnyFilter::Static(_) => json!({}),
        AnyFilter::Counting(c) => {
            let max = c.counter_bits().max();
            let mut v = json!({
                "counter_bits": c.counter_bits().bits(),
                "counters": p.bit_len(),
                "counters_saturated": c.saturated(),
            });
            match p.kind {
                FilterKind::Stable { decrements, .. } => {
                    v["decrements"] = json!(decrements);
                    v["stable_fpr"] = json!(c.stable_fpr());
                }
                _ => {
                    v["counter_overflow_probability"] =
                        json!(math::counter_saturation_probability(
                            p.layout,
                            p.blocks,
                            // Counters count inserts, repeats included.
                            s.recorded_keys.or(s.keys).unwrap_or(0),
                            max
                        ));
                }
            }
            v
        }
        AnyFilter::Window(w) => {
            let st = w.state();
            json!({
                "generations_stored": window::generations(p),
                "current_generation": st.current,
                "keys_in_current_generation": st.keys_in_current,
                "current_generation_start_ns": st.started.then_some(st.current_start),
                "generation_keys_estimated": kinds::generation_keys(w),
            })
        }
        AnyFilter::Scalable(sc) => json!({
            "target_fpr": sc.target_rate(),
            "stages": sc.stages().iter().enumerate().map(|(i, st)| {
                let t = st.stats();
                json!({
                    "blocks": st.blocks(),
                    "bytes": t.bytes,
                    "keys": st.key_count(),
                    "inserts_recorded": st.key_count(),
                    "distinct_keys_estimated": t.estimated_keys,
                    "capacity": sc.stage_capacity(i),
                    "fill_ratio": t.fill_ratio,
                    "expected_fpr": t.expected_fpr,
                })
            }).collect::<Vec<_>>(),
        }),
    }
}

/// `stats` of a counting, stable, window, scalable, spatial or retrieval filter.
fn kind_stats(ctx: &Ctx, path: &Path, f: &AnyFilter, open: Duration) -> Result<ExitCode> {
    let s = f.stats();
    let p = *f.params();
    let bytes = kinds::storage_bytes(f);
    let figures = kind_figures(f, &s);
    // A scalable filter's blocks are those of all its stages (the header holds stage 0's).
    let (blocks, blocks_text) = match f {
        AnyFilter::Scalable(sc) => {
            let total: u64 = sc.stages().iter().map(|st| u64::from(st.blocks())).sum();
            let n = sc.stages().len();
            (
                total,
                format!("{total} in {n} stage{}", if n == 1 { "" } else { "s" }),
            )
        }
        _ => (u64::from(p.blocks), p.blocks.to_string()),
    };
    if ctx.json {
        let mut v = common_json(path, &s, blocks, bytes);
        v["description"] = json!(p.kind.to_string());
        v["figures"] = figures;
        v["payload_verified"] = json!(true);
        v["open_seconds"] = json!(open.as_secs_f64());
        emit(&v)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut lines = common_lines(path, &s, &blocks_text, bytes);
    let n = |k: &str| figures[k].to_string();
    match f {
        AnyFilter::Counting(_) => {
            if let FilterKind::Stable { decrements, .. } = p.kind {
                lines.push(format!(
                    "counters:           {} of {} bits, {} at the maximum",
                    n("counters"),
                    n("counter_bits"),
                    n("counters_saturated")
                ));
                lines.push(format!("decrements/insert:  {decrements}"));
            } else {
                lines.push(format!(
                    "counters:           {} of {} bits, {} saturated (stuck at the maximum)",
                    n("counters"),
                    n("counter_bits"),
                    n("counters_saturated")
                ));
                lines.push(format!(
                    "overflow per counter: {:.3e} (probability a counter reaches the maximum)",
                    figures["counter_overflow_probability"]
                        .as_f64()
                        .unwrap_or(0.0)
                ));
            }
        }
        AnyFilter::Spatial(_) | AnyFilter::Retrieval(_) => lines.extend(label_lines(f)),
        AnyFilter::Window(_) => lines.push(format!(
            "generation:         {} of {} ({} keys in it)",
            n("current_generation"),
            n("generations_stored"),
            n("keys_in_current_generation")
        )),
        AnyFilter::Scalable(sc) => {
            lines.push(format!("target fpr:         {:.3e}", sc.target_rate()));
            lines.push(format!("stages:             {}", sc.stages().len()));
            for (i, st) in sc.stages().iter().enumerate() {
                let t = st.stats();
                lines.push(format!(
                    "  stage {i}: {} blocks, {} bytes, {} keys of {}, distinct keys {}, fill \
                     {:.4}, fpr {:.3e}",
                    st.blocks(),
                    t.bytes,
                    st.key_count().unwrap_or(0),
                    sc.stage_capacity(i),
                    t.estimated_keys
                        .map_or("unknown".to_string(), |n| format!("about {n:.0}")),
                    t.fill_ratio,
                    t.expected_fpr
                ));
            }
        }
        AnyFilter::Static(_) => {}
    }
    lines.push("payload checksum:   verified".into());
    say(&lines.join("\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// The figures of a spatial filter (cell width and the per-class table: keys, cells owned,
/// expected false-positive and emersion rates) or a retrieval table (its shape); `{}` for the
/// other kinds. Shared by `stats` and `build`.
pub fn label_figures(f: &AnyFilter) -> Value {
    match f {
        AnyFilter::Spatial(sp) => {
            let classes: Vec<Value> = sp
                .class_stats()
                .iter()
                .map(|c| {
                    json!({"class": c.class, "name": c.name, "keys": c.keys, "cells": c.cells,
                           "expected_cells": c.expected_cells, "expected_fpr": c.expected_fpr,
                           "expected_emersion": c.expected_emersion})
                })
                .collect();
            json!({"cell_bits": sp.cell_bits().bits(), "priority": "higher class wins",
                   "classes": classes})
        }
        AnyFilter::Retrieval(t) => {
            let s = t.shape();
            json!({"value_bits": s.value_bits, "check_bits": s.check_bits, "keys": t.key_count(),
                   "bits_per_key": t.bits_per_key(), "cells": s.cells(), "arity": s.arity,
                   "bytes": s.array_bytes(),
                   "absent_answered_fpr": 0.5f64.powi(i32::from(s.check_bits))})
        }
        _ => json!({}),
    }
}

/// [`label_figures`] as text lines.
pub fn label_lines(f: &AnyFilter) -> Vec<String> {
    let v = label_figures(f);
    let mut lines = Vec::new();
    if let Some(classes) = v["classes"].as_array() {
        lines.push(format!(
            "cell bits:          {} (the higher class wins a shared cell)",
            v["cell_bits"]
        ));
        lines.push(format!(
            "  {:>5}  {:<16} {:>12} {:>12} {:>12} {:>12}",
            "class", "name", "keys", "cells", "fpr", "emersion"
        ));
        for c in classes {
            lines.push(format!(
                "  {:>5}  {:<16} {:>12} {:>12} {:>12.3e} {:>12.3e}",
                c["class"].as_u64().unwrap_or(0),
                c["name"].as_str().unwrap_or(""),
                c["keys"].as_u64().unwrap_or(0),
                c["cells"].as_u64().unwrap_or(0),
                c["expected_fpr"].as_f64().unwrap_or(0.0),
                c["expected_emersion"].as_f64().unwrap_or(0.0)
            ));
        }
    } else if v.get("value_bits").is_some() {
        lines.push(format!(
            "value bits:         {}\ncheck bits:         {} (an absent key is answered absent \
             with probability 1 - {:.3e})\nkeys:               {}\nbits per key:       {:.3}\n\
             cells:              {} ({} per key looked up, {} bytes)",
            v["value_bits"],
            v["check_bits"],
            v["absent_answered_fpr"].as_f64().unwrap_or(1.0),
            v["keys"],
            v["bits_per_key"].as_f64().unwrap_or(0.0),
            v["cells"],
            v["arity"],
            v["bytes"]
        ));
    }
    lines
}
