//! `bloomlanes stats`: a filter's parameters and the core's statistics of it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bloomlanes_host::bloomlanes_core::{math, window, FilterKind};
use bloomlanes_host::{kinds, AnyFilter, FilterFile, Result, Stats};
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

fn stats_json(path: &Path, s: &Stats, f: &FilterFile, open: Duration) -> Value {
    json!({
        "file": path.display().to_string(),
        "kind": kind_json(s.params.kind),
        "layout": s.params.layout.name(),
        "lanes": s.params.layout.lanes(),
        "word_bits": s.params.layout.word_bits(),
        "blocks": s.params.blocks,
        "bytes": s.bytes,
        "seed": s.params.seed,
        "hash": s.params.hash.name(),
        "recorded_keys": s.recorded_keys,
        "set_bits": s.ones,
        "fill_ratio": s.fill_ratio,
        "estimated_keys": s.estimated_keys,
        "expected_fpr": s.expected_fpr,
        "bits_per_key": s.bits_per_key,
        "parquet_compatible": s.parquet_compatible,
        "memory_mapped": f.is_mapped(),
        "payload_verified": f.payload_verified(),
        "open_seconds": open.as_secs_f64(),
    })
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
    if ctx.json {
        emit(&stats_json(&a.filter, &s, &f, open))?;
        return Ok(ExitCode::SUCCESS);
    }
    let opt = |v: Option<f64>, digits: usize| {
        v.map_or("unknown (saturated)".to_string(), |x| {
            format!("{x:.digits$}")
        })
    };
    let lines = [
        format!("file:               {}", a.filter.display()),
        format!(
            "layout:             {} ({} lanes x {}-bit words, {}-byte blocks)",
            s.params.layout,
            s.params.layout.lanes(),
            s.params.layout.word_bits(),
            s.params.layout.block_bytes()
        ),
        format!("blocks:             {}", s.params.blocks),
        format!("size:               {} bytes", s.bytes),
        format!(
            "hash:               {}, seed {}",
            s.params.hash, s.params.seed
        ),
        format!(
            "recorded keys:      {}",
            s.recorded_keys.map_or("unknown".into(), |k| k.to_string())
        ),
        format!("set bits:           {}", s.ones),
        format!("fill ratio:         {:.4}", s.fill_ratio),
        format!("estimated keys:     {}", opt(s.estimated_keys, 0)),
        format!("expected fpr:       {:.3e}", s.expected_fpr),
        format!(
            "bits per key:       {}",
            s.bits_per_key
                .map_or("n/a (no keys)".to_string(), |b| format!("{b:.2}"))
        ),
        format!(
            "parquet compatible: {}",
            if s.parquet_compatible { "yes" } else { "no" }
        ),
        if f.payload_verified() {
            format!(
                "payload checksum:   verified (opening took {:.3} s)",
                open.as_secs_f64()
            )
        } else {
            "payload checksum:   not verified (--no-verify-payload)".to_string()
        },
    ];
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
                    v["stable_fpr"] = json!(s.expected_fpr);
                }
                _ => {
                    v["counter_overflow_probability"] =
                        json!(math::counter_saturation_probability(
                            p.layout,
                            p.blocks,
                            s.keys.unwrap_or(0),
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
            "stages": sc.stages().iter().enumerate().map(|(i, st)| json!({
                "blocks": st.blocks(),
                "keys": st.key_count(),
                "capacity": sc.stage_capacity(i),
                "fill_ratio": st.fill_ratio(),
                "expected_fpr": st.expected_fpr(st.key_count()),
            })).collect::<Vec<_>>(),
        }),
    }
}

/// `stats` of a counting, stable, window or scalable filter.
fn kind_stats(ctx: &Ctx, path: &Path, f: &AnyFilter, open: Duration) -> Result<ExitCode> {
    let mut s = f.stats();
    s.expected_fpr = kinds::expected_fpr(f);
    let p = *f.params();
    let bytes = kinds::storage_bytes(f);
    let figures = kind_figures(f, &s);
    if ctx.json {
        emit(&json!({
            "file": path.display().to_string(),
            "kind": kind_json(p.kind),
            "description": p.kind.to_string(),
            "layout": p.layout.name(),
            "blocks": p.blocks,
            "bytes": bytes,
            "seed": p.seed,
            "hash": p.hash.name(),
            "key_type": p.key_type.to_string(),
            "recorded_keys": s.recorded_keys,
            "set_bits": s.ones,
            "fill_ratio": s.fill_ratio,
            "expected_fpr": s.expected_fpr,
            "bits_per_key": s.bits_per_key,
            "figures": figures,
            "payload_verified": true,
            "open_seconds": open.as_secs_f64(),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut lines = vec![
        format!("file:               {}", path.display()),
        format!("kind:               {}", p.kind),
        format!(
            "layout:             {} ({} lanes x {}-bit words, {}-byte blocks)",
            p.layout,
            p.layout.lanes(),
            p.layout.word_bits(),
            p.layout.block_bytes()
        ),
        format!("blocks:             {}", p.blocks),
        format!("size:               {bytes} bytes"),
        format!("hash:               {}, seed {}", p.hash, p.seed),
        format!(
            "recorded keys:      {}",
            s.recorded_keys.map_or("unknown".into(), |k| k.to_string())
        ),
        format!("set bits:           {}", s.ones),
        format!("fill ratio:         {:.4}", s.fill_ratio),
        format!("expected fpr:       {:.3e}", s.expected_fpr),
        format!(
            "bits per key:       {}",
            s.bits_per_key
                .map_or("n/a (no keys)".to_string(), |b| format!("{b:.2}"))
        ),
    ];
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
                lines.push(format!(
                    "  stage {i}: {} blocks, {} of {} keys, fill {:.4}",
                    st.blocks(),
                    st.key_count().unwrap_or(0),
                    sc.stage_capacity(i),
                    st.fill_ratio()
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
