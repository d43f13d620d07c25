//! `--kind` and the options of each kind of filter (shared by `build` and `dedup`), and how a
//! kind is described in reports.

use bloomlanes_host::bloomlanes_core::{CounterBits, FilterKind, WindowUnit};
use bloomlanes_host::{Error, KindSpec, Result};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

/// A `--kind` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// A plain split-block filter (no deletions).
    Static,
    /// Counting filter: one small counter per bit, so keys can be deleted (`bloomlanes delete`).
    Counting,
    /// Stable Bloom filter: a stream filter that forgets old keys at a steady false-positive rate.
    Stable,
    /// Sliding window: the last --window-keys keys (or --window-seconds seconds).
    Window,
    /// Scalable filter: a chain of filters that grows past --capacity keys, rate kept under --fpp.
    Scalable,
    /// Spatial Bloom filter: each key's class (--class-column, --classes, --class NAME=FILE).
    Spatial,
    /// Retrieval table: each key's value (--value-column, --value-bits, --check-bits).
    Retrieval,
}

/// The options of the filter kinds.
#[derive(Args, Debug)]
pub struct KindArgs {
    /// Kind of filter.
    #[arg(long, value_enum, default_value = "static")]
    pub kind: KindArg,
    /// Counter width in bits (counting and stable filters): 4 or 8 [default: 4].
    #[arg(long, value_name = "BITS")]
    pub counter_bits: Option<u32>,
    /// Cells decremented per insert (stable filters) [default: the fewest that keep the stable
    /// false-positive rate under --fpp].
    #[arg(long, value_name = "P")]
    pub decrements: Option<u32>,
    /// The window: the last N keys are always found (window filters).
    #[arg(long, value_name = "N", conflicts_with = "window_seconds")]
    pub window_keys: Option<u64>,
    /// The window in seconds of arrival time (window filters; sized for --capacity keys per
    /// window).
    #[arg(long, value_name = "T")]
    pub window_seconds: Option<f64>,
    /// Generations that make up the window (window filters; one more holds the newest keys).
    /// More generations follow the window's edge more closely; `auto` picks the count (and,
    /// with --layout auto, the layout) that meets --fpp in the fewest bits, at the cost of more
    /// blocks read per lookup [default: 4].
    #[arg(long, value_name = "G|auto", value_parser = parse_generations)]
    pub generations: Option<Generations>,
    /// Capacity growth factor between stages (scalable filters) [default: 2].
    #[arg(long, value_name = "S")]
    pub growth: Option<u8>,
    /// Tightening ratio of the stages' false-positive rates, between 0 and 1 (scalable filters)
    /// [default: 0.8].
    #[arg(long, value_name = "R")]
    pub tightening: Option<f64>,
}

/// A `--generations` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generations {
    /// This many generations.
    Count(u16),
    /// The count with the fewest bits.
    Auto,
}

/// Parses `--generations`: a count from 1 to 65535, or `auto`.
fn parse_generations(s: &str) -> std::result::Result<Generations, String> {
    if s == "auto" {
        return Ok(Generations::Auto);
    }
    match s.parse::<u16>() {
        Ok(0) => Err("a window needs at least 1 generation".into()),
        Ok(g) => Ok(Generations::Count(g)),
        Err(_) => Err(format!(
            "`{s}` is not a generation count (1 to 65535) or `auto`"
        )),
    }
}

/// Refuses an option given for a kind it does not apply to.
fn only_for<T>(v: &Option<T>, flag: &str, kinds: &str, kind: KindArg) -> Result<()> {
    if v.is_some() {
        return Err(Error::usage(format!(
            "{flag} applies to --kind {kinds}, not to --kind {}",
            kind_name(kind)
        )));
    }
    Ok(())
}

fn kind_name(k: KindArg) -> &'static str {
    match k {
        KindArg::Static => "static",
        KindArg::Counting => "counting",
        KindArg::Stable => "stable",
        KindArg::Window => "window",
        KindArg::Scalable => "scalable",
        KindArg::Spatial => "spatial",
        KindArg::Retrieval => "retrieval",
    }
}

/// Nanoseconds in `seconds`, checked: a positive number, at most `u64::MAX` nanoseconds.
pub fn nanos(seconds: f64, flag: &str) -> Result<u64> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(Error::usage(format!(
            "{flag} {seconds} must be a positive number of seconds"
        )));
    }
    let most = u64::MAX as f64 / 1e9;
    if seconds >= most {
        return Err(Error::usage(format!(
            "{flag} {seconds:e} is too long: a window is at most {} seconds (2^64 nanoseconds, \
             about 584 years)",
            most.floor()
        )));
    }
    Ok(((seconds * 1e9).round() as u64).max(1))
}

impl KindArgs {
    /// The kind asked for, with its options checked.
    pub fn spec(&self) -> Result<KindSpec> {
        let k = self.kind;
        let counting = matches!(k, KindArg::Counting | KindArg::Stable);
        if !counting {
            only_for(
                &self.counter_bits,
                "--counter-bits",
                "counting or stable",
                k,
            )?;
        }
        if k != KindArg::Stable {
            only_for(&self.decrements, "--decrements", "stable", k)?;
        }
        if k != KindArg::Window {
            only_for(&self.window_keys, "--window-keys", "window", k)?;
            only_for(&self.window_seconds, "--window-seconds", "window", k)?;
            only_for(&self.generations, "--generations", "window", k)?;
        }
        if k != KindArg::Scalable {
            only_for(&self.growth, "--growth", "scalable", k)?;
            only_for(&self.tightening, "--tightening", "scalable", k)?;
        }
        let counter_bits = match self.counter_bits {
            None => CounterBits::Four,
            Some(b) => CounterBits::from_bits(b).ok_or_else(|| {
                Error::usage(format!("--counter-bits {b}: counters are 4 or 8 bits wide"))
            })?,
        };
        Ok(match k {
            KindArg::Static => KindSpec::Static,
            KindArg::Counting => KindSpec::Counting { counter_bits },
            KindArg::Stable => KindSpec::Stable {
                counter_bits,
                decrements: self.decrements,
            },
            KindArg::Window => {
                let generations = match self.generations {
                    None => Some(4),
                    Some(Generations::Count(g)) => Some(g),
                    Some(Generations::Auto) => None,
                };
                let (unit, window) = match (self.window_keys, self.window_seconds) {
                    (Some(0), _) => {
                        return Err(Error::usage("--window-keys must be at least 1"));
                    }
                    (Some(n), _) => (WindowUnit::Keys, n),
                    (None, Some(t)) => (WindowUnit::Nanos, nanos(t, "--window-seconds")?),
                    (None, None) => {
                        return Err(Error::usage(
                            "--kind window needs --window-keys N (the last N keys) or \
                             --window-seconds T",
                        ))
                    }
                };
                KindSpec::Window {
                    generations,
                    unit,
                    window,
                }
            }
            KindArg::Spatial | KindArg::Retrieval => {
                return Err(Error::usage(format!(
                    "--kind {} is built by `build` from keys with labels, not here",
                    kind_name(k)
                )))
            }
            KindArg::Scalable => KindSpec::Scalable {
                growth: self.growth.unwrap_or(2),
                tightening: self.tightening.unwrap_or(0.8),
            },
        })
    }
}

/// A filter kind's identity parameters as JSON (`{"name": "counting", "counter_bits": 4}`).
pub fn kind_json(kind: FilterKind) -> Value {
    match kind {
        FilterKind::Counting { counter_bits } => {
            json!({"name": kind.name(), "counter_bits": counter_bits.bits()})
        }
        FilterKind::Stable {
            counter_bits,
            decrements,
        } => json!({"name": kind.name(), "counter_bits": counter_bits.bits(),
                    "decrements": decrements}),
        FilterKind::Window {
            generations,
            unit,
            span,
        } => json!({"name": kind.name(), "generations": generations,
                    "unit": match unit { WindowUnit::Keys => "keys", WindowUnit::Nanos => "ns" },
                    "span": span, "window": span.saturating_mul(u64::from(generations))}),
        FilterKind::Scalable { growth, tightening } => json!({"name": kind.name(),
                    "growth": growth, "tightening": f64::from(tightening) / 256.0}),
        FilterKind::Spatial { cell_bits, classes } => json!({"name": kind.name(),
                    "cell_bits": cell_bits.bits(), "classes": classes}),
        _ => json!({"name": kind.name()}),
    }
}
