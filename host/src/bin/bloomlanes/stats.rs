//! `bloomlanes stats`: a filter's parameters and the core's statistics of it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bloomlanes_host::{FilterFile, Result, Stats};
use clap::Args;
use serde_json::{json, Value};

use crate::args::OpenArgs;
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
    let f = FilterFile::open_with(&a.filter, a.open.verify())?;
    let open = start.elapsed();
    let s = f.stats();
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
