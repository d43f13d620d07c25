//! `bloomlanes insert` into a spatial filter: every key comes with one of the filter's classes,
//! all of an input's keys in one (`--class NAME`, streamed) or each from a CSV column beside
//! the key (`--class-column C`), so a rule table grows without a rebuild.

use std::path::{Path, PathBuf};

use bloomlanes_host::bloomlanes_core::{Keys, SpatialError, SpatialFilter};
use bloomlanes_host::kinds::labels;
use bloomlanes_host::ops::stream::stream_hashes;
use bloomlanes_host::{Backend, Error, KeyType, Result};
use bloomlanes_input::pairs::{self, LabelColumn};
use bloomlanes_input::{InputOptions, InputSummary};
use bloomlanes_simd::{Classes, Probe, Schedule};
use clap::Args;

use crate::progress::Bar;

/// The options of `insert` that spatial filters take.
#[derive(Args, Debug)]
pub struct ClassArgs {
    /// Spatial filters: the class of every key of the inputs (one of the filter's classes). A
    /// key already in a higher class stays there (a cell never falls; moving a key down takes
    /// a rebuild): the insert warns when more keys answer above their class than emersion
    /// explains, and `--json` counts them (`above_class`).
    #[arg(long, value_name = "NAME", conflicts_with = "class_column")]
    pub class: Option<String>,
    /// Spatial filters: the CSV column holding each key's class name (a header name or a
    /// 0-based index; the key is --csv-column). Spaces around a name are ignored.
    #[arg(long, value_name = "NAME|INDEX")]
    pub class_column: Option<String>,
}

impl ClassArgs {
    /// Whether a class was given.
    pub fn given(&self) -> bool {
        self.class.is_some() || self.class_column.is_some()
    }
}

/// What a spatial insert read: each input's summary, the keys' type, and the warning for keys
/// listed in two classes, if any.
pub struct Inserted {
    /// What each input gave.
    pub summaries: Vec<InputSummary>,
    /// The type the keys were read as.
    pub key_type: KeyType,
    /// The warning for keys of the inputs listed in two of the classes.
    pub conflict_warning: Option<String>,
    /// Keys answered above the class given them.
    pub above: AboveClass,
}

/// Inserted keys that the filter answers in a higher class than the one given them, not
/// because the inputs list them higher too: emersion, or a key that was in a higher class
/// before (a spatial filter never lowers a cell, so `insert` cannot move a key down).
#[derive(Debug, Default)]
pub struct AboveClass {
    /// How many.
    pub keys: u64,
    /// How many emersion explains at the filter's fill after the insert (the per-class rates of
    /// `stats`, summed over the keys inserted).
    pub expected: f64,
    /// The first: the key as shown (when the inputs were read whole), the class given and the
    /// class answered.
    pub example: Option<(Option<String>, u16, u32)>,
}

impl AboveClass {
    /// The warning, when more keys are above their class than emersion explains: a count
    /// that emersion alone (a Poisson count of mean `expected`) reaches less than once in a
    /// thousand inserts.
    pub fn warning(&self, f: &SpatialFilter) -> Option<String> {
        let (key, given, got) = self.example.as_ref()?;
        if poisson_at_least(self.keys, self.expected) >= 1e-3 {
            return None;
        }
        let name = |c: u32| f.class_name(c).unwrap_or("?").to_string();
        let which = key.as_ref().map_or("one".to_string(), |k| format!("{k:?}"));
        Some(format!(
            "{} inserted key{} answer{} a higher class than the one given ({which} answers {}, \
             not {}); emersion at this fill explains about {:.1} of them. A key that was in a \
             higher class before stays there: a spatial filter never lowers a class, so moving \
             a key to a lower class takes a rebuild without its old listing",
            self.keys,
            if self.keys == 1 { "" } else { "s" },
            if self.keys == 1 { "s" } else { "" },
            name(*got),
            name(u32::from(*given)),
            self.expected
        ))
    }
}

/// P(X >= n) for a Poisson count X of mean `mean`: summed exactly up to a mean of 50 (the
/// terms stay above f64's range there), past it the normal approximation with a continuity
/// correction, close enough for a one-in-a-thousand threshold.
fn poisson_at_least(n: u64, mean: f64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    if mean <= 50.0 {
        // 1 - P(X < n), the terms e^-m m^k / k! built one from the last.
        let (mut term, mut below) = ((-mean).exp(), 0.0);
        for k in 0..n.min(1000) {
            below += term;
            term *= mean / (k + 1) as f64;
        }
        return (1.0 - below).max(0.0);
    }
    let z = (n as f64 - 0.5 - mean) / mean.sqrt();
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function (Numerical Recipes' `erfcc`, relative error under 1.2e-7).
fn erfc(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807
                            + t * (-1.13520398
                                + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The keys `expected` emersion gives among `counts[c - 1]` keys inserted in each class `c`.
fn expected_emersion(f: &SpatialFilter, counts: impl Iterator<Item = (u16, u64)>) -> f64 {
    let stats = f.class_stats();
    counts
        .map(|(c, n)| n as f64 * stats[usize::from(c) - 1].expected_emersion)
        .sum()
}

/// The class number of `name` in `f` (spaces around it ignored; a stored name that has them,
/// which earlier writers let through, is found by its trimmed form when only one has it), or
/// the error that lists the filter's classes.
fn class_number(f: &SpatialFilter, name: &[u8]) -> std::result::Result<u16, String> {
    let name = crate::class_names::class_field(name)?;
    if let Some(c) = f.class_number(name) {
        return Ok(c);
    }
    let mut trimmed = (1..=u16::MAX)
        .zip(f.class_names())
        .filter(|(_, n)| n.trim() == name);
    match (trimmed.next(), trimmed.next()) {
        (Some((c, _)), None) => Ok(c),
        _ => Err(format!(
            "class {name:?} is not one of the filter's classes ({})",
            f.class_names().join(", ")
        )),
    }
}

/// Inserts the keys of `inputs` into `f` (read from `filter`, which errors name) with their
/// classes (`classes`): on the SIMD engine's bulk path when `engine` has one, else key by key
/// through the core.
pub fn insert(
    engine: &dyn Backend,
    f: &mut SpatialFilter,
    filter: &Path,
    classes: &ClassArgs,
    inputs: &[PathBuf],
    opts: &InputOptions,
    bar: &mut Bar,
) -> Result<Inserted> {
    let mut opts = opts.clone();
    let key_type = f.params().key_type;
    opts.filter_key_type.get_or_insert(key_type);
    if let Some(name) = &classes.class {
        let class = class_number(f, name.as_bytes())
            .map_err(|e| Error::usage(format!("--class: {e} in {}", filter.display())))?;
        let seed = f.params().seed;
        let mut above = AboveClass::default();
        let mut got = Vec::new();
        let (summaries, key_type) = stream_hashes(
            inputs,
            &opts,
            seed,
            key_type,
            &mut |hashes| {
                let keys = Keys::Hashes(hashes);
                add(engine, f, keys, Classes::One(u32::from(class)))?;
                // Exact per batch: a later key of the same class never raises a cell above it.
                got.resize(hashes.len(), 0u32);
                Probe::active().par_min_cells(f, keys, &mut got);
                for &g in got.iter().filter(|&&g| g > u32::from(class)) {
                    above.keys += 1;
                    above.example.get_or_insert((None, class, g));
                }
                Ok(())
            },
            &mut |p| bar.update(p),
        )?;
        let inserted = summaries.iter().map(|s| s.keys).sum();
        above.expected = expected_emersion(f, std::iter::once((class, inserted)));
        return Ok(Inserted {
            summaries,
            key_type,
            conflict_warning: None,
            above,
        });
    }
    let column = classes.class_column.as_deref().expect("a class was given");
    let flag = "--class-column";
    // CSV fields are parsed as the filter's key type unless --key-type says otherwise (a
    // filter that recorded none reads them as bytes).
    if key_type != KeyType::Any {
        opts.key_type.get_or_insert(key_type);
    }
    let read = pairs::read_pairs(
        inputs,
        &opts,
        LabelColumn { name: column, flag },
        &mut |field| class_number(f, field).map(u32::from),
    )?;
    let labels: Vec<u16> = read.labels.iter().map(|&c| c as u16).collect();
    add(engine, f, read.keys.keys(), Classes::U16(&labels))?;
    let found = labels::class_conflicts(f, read.keys.keys(), &labels);
    let conflict_warning = found.example.map(|(low, high)| {
        let (low_at, high_at) = crate::labelled::record_places(inputs, &opts, column, (low, high));
        let name = |i: usize| f.class_name(u32::from(labels[i])).unwrap_or("?");
        crate::labelled::two_classes_warning(
            &read.keys.display(low),
            found.keys,
            (name(low), low_at),
            (name(high), high_at),
        )
    });
    let mut per_class = vec![0u64; usize::from(f.classes())];
    for &c in &labels {
        per_class[usize::from(c) - 1] += 1;
    }
    let above = AboveClass {
        keys: found.above,
        expected: expected_emersion(f, (1..=u16::MAX).zip(per_class)),
        example: found
            .above_example
            .map(|(i, got)| (Some(read.keys.display(i)), labels[i], got)),
    };
    Ok(Inserted {
        summaries: read.summaries,
        key_type: read.keys.key_type(),
        conflict_warning,
        above,
    })
}

/// Inserts one batch.
fn add(
    engine: &dyn Backend,
    f: &mut SpatialFilter,
    keys: Keys<'_>,
    classes: Classes<'_>,
) -> Result<()> {
    let bad = |e: SpatialError| Error::usage(e.to_string());
    match engine.simd_probe() {
        Some((probe, par)) => {
            let how = if par {
                Schedule::AllCores
            } else {
                Schedule::OneThread
            };
            probe
                .insert_spatial_filter(f, keys, classes, how)
                .map_err(bad)
        }
        None => {
            let seed = f.params().seed;
            for i in 0..keys.len() {
                let class = match classes {
                    Classes::One(c) => c,
                    Classes::U8(v) => u32::from(v[i]),
                    Classes::U16(v) => u32::from(v[i]),
                    Classes::U32(v) => v[i],
                };
                f.insert_hash(keys.hash(i, seed), class).map_err(bad)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::poisson_at_least;

    #[test]
    fn poisson_tail() {
        let close = |a: f64, b: f64, tol: f64| assert!((a - b).abs() <= tol, "{a} vs {b}");
        close(poisson_at_least(0, 3.0), 1.0, 0.0);
        close(poisson_at_least(1, 1.0), 1.0 - (-1.0f64).exp(), 1e-12);
        close(poisson_at_least(3, 2.0), 1.0 - 5.0 * (-2.0f64).exp(), 1e-12);
        // One key where 0.001 are expected is past the threshold; where 0.055 are, not.
        assert!(poisson_at_least(1, 1e-3) < 1e-3);
        assert!(poisson_at_least(1, 0.055) > 1e-3);
        // The normal branch: P(X >= 100 | 100) = 0.5133, P(X >= 150 | 100) = 1.2e-5.
        close(poisson_at_least(100, 100.0), 0.5133, 0.02);
        assert!(poisson_at_least(150, 100.0) < 1e-3);
        assert!(poisson_at_least(63, 59.9) > 0.2);
        assert!(poisson_at_least(50_000, 49.9) < 1e-12);
    }
}
