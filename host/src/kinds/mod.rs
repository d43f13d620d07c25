//! Filters of every kind: static, counting (deletions), stable (a stream filter that forgets),
//! sliding window (the last N keys or T nanoseconds) and scalable (grows with the keys). The core
//! defines each kind ([`FilterKind`], [`AnyFilter`]); this module sizes them from a
//! [`FilterBuilder`]'s request ([`empty`]) and runs the bulk operations over them ([`ops`]).
//!
//! The per-key work of the non-static kinds lives in [`ops`] alone, so that the SIMD bulk
//! operations can replace it in one place. Lookups already take the backends' static paths where
//! a kind exposes static images: the projection of a counting or stable filter, the stages of a
//! scalable filter.

use bloomlanes_core::math;
use bloomlanes_core::{
    AnyFilter, CounterBits, CountingFilter, FilterKind, KeyType, Layout, Params, ScalableFilter,
    Sizing, WindowFilter, WindowUnit,
};

use crate::builder::FilterBuilder;
use crate::error::{Error, Result};

pub mod labels;
pub mod ops;
pub mod verify;
pub mod verify_labels;

/// What kind of filter to build, with its options (the core's [`FilterKind`] fields, and what
/// sizing needs besides them).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum KindSpec {
    /// A static split-block filter.
    #[default]
    Static,
    /// A counting filter (deletions) with counters of this width.
    Counting {
        /// Counter width.
        counter_bits: CounterBits,
    },
    /// A stable Bloom filter.
    Stable {
        /// Counter width.
        counter_bits: CounterBits,
        /// Cells decremented per insert (`None`: the fewest that meet the target rate, by
        /// [`math::stable_decrements_for_rate`]).
        decrements: Option<u32>,
    },
    /// A sliding-window filter over the last `window` keys (or nanoseconds).
    Window {
        /// Generations that make up the window (one more holds the newest keys); `None`: the
        /// count (and, without a layout, the layout) that meets the rate in the fewest bits
        /// ([`math::smallest_window`]).
        generations: Option<u16>,
        /// What `window` counts.
        unit: WindowUnit,
        /// The window: keys, or nanoseconds (a time window is sized for the builder's capacity
        /// in keys per window).
        window: u64,
    },
    /// A scalable filter: its first stage holds the builder's capacity.
    Scalable {
        /// Capacity growth factor between stages (at least 2).
        growth: u8,
        /// Tightening ratio of the stages' rates (0 < r < 1).
        tightening: f64,
    },
}

impl KindSpec {
    /// The kind's name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            KindSpec::Static => "static",
            KindSpec::Counting { .. } => "counting",
            KindSpec::Stable { .. } => "stable",
            KindSpec::Window { .. } => "window",
            KindSpec::Scalable { .. } => "scalable",
        }
    }
}

/// Refuses a filter of `bytes` bytes that cannot be allocated here ([`Error::TooLarge`]).
fn check_alloc(bytes: u64, keys: u64, params: Params) -> Result<()> {
    let too_large = |source| Error::TooLarge {
        keys,
        params,
        source,
    };
    let bytes = usize::try_from(bytes).map_err(|_| too_large(None))?;
    let mut probe: Vec<u8> = Vec::new();
    probe
        .try_reserve_exact(bytes)
        .map_err(|e| too_large(Some(e)))?;
    Ok(())
}

/// The target rate of a sizing request that must be a rate (window and scalable filters).
fn rate_of(b: &FilterBuilder, kind: &str) -> Result<f64> {
    match b.sizing {
        Sizing::FalsePositiveRate(r) => Ok(r),
        _ => Err(Error::usage(format!(
            "a {kind} filter is sized by a false-positive rate (--fpp), not by bits per key"
        ))),
    }
}

/// The layout asked for, or the one that meets `rate` for `keys` keys in the fewest bits.
fn layout_for(b: &FilterBuilder, keys: u64, rate: f64) -> Result<Layout> {
    match b.layout {
        Some(l) => Ok(l),
        None => Ok(math::auto_size(keys.max(1), rate)?.0),
    }
}

/// An empty filter of the builder's kind, sized for `keys` keys (or the builder's capacity):
/// - static, counting and stable: the static sizing (counters beside the image); a stable
///   filter's decrements per insert default to the fewest that keep its stable false-positive
///   rate under the target;
/// - window: each generation sized so that the whole window meets the rate; a time window needs
///   a capacity (keys expected per window);
/// - scalable: the first stage holds the capacity; the rate is that of the whole chain.
pub fn empty(b: &FilterBuilder, keys: u64) -> Result<AnyFilter> {
    let n = b.capacity.unwrap_or(keys).max(1);
    let key_type = b.key_type.unwrap_or(KeyType::Any);
    let shaped = |p: Params| p.with_seed(b.seed).with_key_type(key_type);
    let refuse_pow2 = |kind: &str| {
        if b.pow2 {
            Err(Error::usage(format!(
                "--pow2 applies to static, counting and stable filters, not to a {kind} filter"
            )))
        } else {
            Ok(())
        }
    };
    Ok(match b.kind {
        KindSpec::Static => AnyFilter::Static(b.empty(keys)?),
        KindSpec::Counting { counter_bits } => {
            let p = b
                .params(keys)?
                .with_kind(FilterKind::Counting { counter_bits });
            check_alloc(p.byte_len() * (1 + u64::from(counter_bits.bits())), n, p)?;
            AnyFilter::Counting(CountingFilter::new(p).expect("a counting kind"))
        }
        KindSpec::Stable {
            counter_bits,
            decrements,
        } => {
            let p = b.params(keys)?;
            let rate = match b.sizing {
                Sizing::FalsePositiveRate(r) => r,
                _ => p.expected_fpr(n),
            };
            let decrements = match decrements {
                Some(0) => {
                    return Err(Error::usage(
                        "--decrements must be at least 1 (a stable filter forgets by them)",
                    ))
                }
                Some(d) => d,
                None => {
                    math::stable_decrements_for_rate(p.layout, p.blocks, counter_bits.max(), rate)
                }
            };
            let p = p.with_kind(FilterKind::Stable {
                counter_bits,
                decrements,
            });
            check_alloc(p.byte_len() * (1 + u64::from(counter_bits.bits())), n, p)?;
            AnyFilter::Counting(CountingFilter::new(p).expect("a stable kind"))
        }
        KindSpec::Window {
            generations,
            unit,
            window,
        } => {
            refuse_pow2("window")?;
            let rate = rate_of(b, "window")?;
            if generations == Some(0) || window == 0 {
                return Err(Error::usage(
                    "a window needs at least one generation and a positive span",
                ));
            }
            // The keys a window holds: its span in keys, or the capacity of a time window.
            let keys_per_window = match unit {
                WindowUnit::Keys => window,
                WindowUnit::Nanos => b.capacity.ok_or_else(|| {
                    Error::usage(
                        "a time window is sized for the keys it holds: give --capacity \
                         (keys expected per window)",
                    )
                })?,
            };
            // Each of the g + 1 generations gets a share of the rate; below about (g + 1) × 1e-16
            // that share rounds to 0 in double precision, which the sizing would report as a
            // rate of 0 (issue #24: `dedup --fpp 1e-300` said "rate 0").
            let share = |g: u16| 1.0 - (1.0 - rate).powf(1.0 / (f64::from(g) + 1.0));
            let g = generations.unwrap_or(1);
            if share(g) <= 0.0 {
                return Err(Error::usage(format!(
                    "--fpp {rate:e} is too small for a window of {g} generation(s): each \
                     generation's share of it rounds to 0 in double precision; give at least \
                     {:.0e}",
                    (f64::from(g) + 1.0) * f64::EPSILON
                )));
            }
            let (layout, generations, blocks) = match generations {
                Some(generations) => {
                    let per_generation = keys_per_window.max(1).div_ceil(u64::from(generations));
                    let per_rate = share(generations);
                    let layout = layout_for(b, per_generation, per_rate)?;
                    let blocks =
                        math::blocks_for_window_rate(layout, per_generation, generations, rate)?;
                    (layout, generations, blocks)
                }
                None => {
                    let layouts = b.layout.map_or(Layout::ALL.to_vec(), |l| vec![l]);
                    let s = math::smallest_window(keys_per_window, rate, &layouts)?;
                    (s.layout, s.generations, s.blocks)
                }
            };
            let g = u64::from(generations);
            let span = window.div_ceil(g);
            let p = shaped(Params::new(layout, blocks)).with_kind(FilterKind::Window {
                generations,
                unit,
                span,
            });
            check_alloc(p.byte_len() * (g + 1), n, p)?;
            AnyFilter::Window(WindowFilter::new(p).expect("a window kind"))
        }
        KindSpec::Scalable { growth, tightening } => {
            refuse_pow2("scalable")?;
            let rate = rate_of(b, "scalable")?;
            if growth < 2 {
                return Err(Error::usage("--growth must be at least 2"));
            }
            if !(tightening > 0.0 && tightening < 1.0) {
                return Err(Error::usage(format!(
                    "--tightening {tightening} must be between 0 and 1 (exclusive)"
                )));
            }
            let stage0 = math::scalable_stage_rate(rate, tightening, 0);
            let layout = layout_for(b, n, stage0)?;
            let base = shaped(Params::new(layout, 1));
            AnyFilter::Scalable(ScalableFilter::new(base, n, rate, growth, tightening)?)
        }
    })
}

/// Bytes of a filter's arrays: the image, and the counters, generations or stages.
pub fn storage_bytes(f: &AnyFilter) -> u64 {
    match f {
        AnyFilter::Static(s) => s.byte_len() as u64,
        AnyFilter::Counting(c) => (c.image_words().len() + c.counter_words().len()) as u64 * 4,
        AnyFilter::Spatial(c) => (c.image_words().len() + c.cell_words().len()) as u64 * 4,
        AnyFilter::Window(w) => w.words().len() as u64 * 4,
        AnyFilter::Scalable(s) => s.stages().iter().map(|st| st.byte_len() as u64).sum(),
        AnyFilter::Retrieval(t) => t.shape().array_bytes(),
    }
}

/// Keys estimated in each generation of a window (oldest slot order: slot 0 first) from its set
/// bits (`None` where every bit is set); see [`WindowFilter::generation_keys`].
pub fn generation_keys(w: &WindowFilter) -> Vec<Option<f64>> {
    w.generation_keys()
}

/// The expected false-positive rate of a filter: the rate of its actual bits, for every kind
/// (the core's [`AnyFilter::stats`]: set bits, non-zero cells, generations and stages combined;
/// `2^-f` for a retrieval table), whatever its recorded insert count.
pub fn expected_fpr(f: &AnyFilter) -> f64 {
    f.stats().expected_fpr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_sized_for_its_target() {
        let b = FilterBuilder::new().fpp(0.01).layout(Some(Layout::L8x32));
        let AnyFilter::Window(w) = b
            .clone()
            .kind(KindSpec::Window {
                generations: Some(4),
                unit: WindowUnit::Keys,
                window: 1000,
            })
            .empty_any(0)
            .unwrap()
        else {
            panic!("a window")
        };
        let p = w.params();
        let rate = math::window_false_positive_rate(p.layout, p.blocks, 250, 4);
        assert!(rate <= 0.01 && rate > 0.001, "{rate}");
        let AnyFilter::Counting(s) = b
            .clone()
            .capacity(Some(5000))
            .kind(KindSpec::Stable {
                counter_bits: CounterBits::Four,
                decrements: None,
            })
            .empty_any(0)
            .unwrap()
        else {
            panic!("a stable filter")
        };
        let FilterKind::Stable { decrements, .. } = s.params().kind else {
            panic!("a stable kind")
        };
        let p = s.params();
        assert!(math::stable_false_positive_rate(p.layout, p.blocks, 15, decrements) <= 0.01);
        assert!(math::stable_false_positive_rate(p.layout, p.blocks, 15, decrements - 1) > 0.01);
        let sc = KindSpec::Scalable {
            growth: 2,
            tightening: 0.8,
        };
        let e = b.clone().pow2(true).kind(sc).empty_any(10).unwrap_err();
        assert!(e.to_string().contains("--pow2"), "{e}");
        let e = b
            .clone()
            .bits_per_key(8.0)
            .kind(sc)
            .empty_any(10)
            .unwrap_err();
        assert!(e.to_string().contains("false-positive rate"), "{e}");
        let timed = KindSpec::Window {
            generations: Some(2),
            unit: WindowUnit::Nanos,
            window: 1_000_000,
        };
        assert!(b.clone().kind(timed).empty_any(10).is_err());
        assert!(b.capacity(Some(100)).kind(timed).empty_any(10).is_ok());
    }
}
