//! Cross-checking the kinds that answer *which*: a spatial filter and a retrieval table built
//! from the caller's keys and labels by the core's reference path must answer every listed key
//! its own class or higher (spatial) or exactly its own value (retrieval); every SIMD backend
//! must build the reference's file byte for byte and give its answers key for key, for the
//! listed keys and for absent ones.

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{Keys, Layout, SpatialFilter};
use bloomlanes_simd::{Classes, Probe, Schedule};

use crate::backend::{self, Backend};
use crate::builder::FilterBuilder;
use crate::error::{Error, Result};
use crate::input::KeySet;
use crate::kinds::labels::{Labeller, Labels};
use crate::verify::{hashes_of, key_view, Difference, Steps, VerifyRow};

#[cfg(feature = "gpu")]
mod gpu;

/// The labels of the keys to verify with.
#[derive(Clone, Copy, Debug)]
pub enum LabelSet<'a> {
    /// Spatial filter: the class names (`names[0]` is class 1, the lowest priority), the cell
    /// width, and each key's class (1 to `names.len()`).
    Spatial {
        /// Class names by number.
        names: &'a [String],
        /// Cell width: 4, 8 or 16 bits.
        cell_bits: u32,
        /// Key `i`'s class.
        classes: &'a [u16],
    },
    /// Retrieval table: its widths and each key's value.
    Retrieval {
        /// Value and check bits.
        spec: RetrievalSpec,
        /// Key `i`'s value.
        values: &'a [u32],
    },
}

impl LabelSet<'_> {
    /// The kind's name in rows and on the command line.
    pub fn kind(&self) -> &'static str {
        match self {
            LabelSet::Spatial { .. } => "spatial",
            LabelSet::Retrieval { .. } => "retrieval",
        }
    }
}

/// The labels `verify` gives keys that come without any (`--kind all`, and `--kind spatial` or
/// `--kind retrieval` without inputs): three classes (`allow`, `mirror`, `deny`) in 4-bit
/// cells, and 12-bit values with 8 check bits. Each key's label is taken from its own hash (a
/// seed of its own), so that a key listed twice gets one label whatever the keys are. These
/// sets are made here and nowhere else, as [`super::verify::kinds_for`] makes the other kinds'.
#[derive(Clone, Debug)]
pub struct Generated {
    names: Vec<String>,
    classes: Vec<u16>,
    values: Vec<u32>,
}

/// The kinds [`Generated`] gives labels for, by name.
pub const GENERATED_KINDS: [&str; 2] = ["spatial", "retrieval"];

impl Generated {
    /// Labels for each of `keys`.
    pub fn for_keys(keys: &KeySet) -> Generated {
        const LABEL_SEED: u64 = 0x6c61_6265_6c73_2323;
        let hashes = hashes_of(key_view(keys), LABEL_SEED);
        Generated {
            names: ["allow", "mirror", "deny"].map(String::from).to_vec(),
            classes: hashes.iter().map(|h| (h % 3) as u16 + 1).collect(),
            values: hashes.iter().map(|h| (h >> 32) as u32 & 0xfff).collect(),
        }
    }

    /// The label sets of the kinds in `kinds` (names of [`GENERATED_KINDS`]), in that order.
    pub fn sets(&self, kinds: &[&str]) -> Vec<LabelSet<'_>> {
        let all = [
            LabelSet::Spatial {
                names: &self.names,
                cell_bits: 4,
                classes: &self.classes,
            },
            LabelSet::Retrieval {
                spec: RetrievalSpec::new(12, 8),
                values: &self.values,
            },
        ];
        all.into_iter()
            .filter(|s| kinds.contains(&s.kind()))
            .collect()
    }
}

/// A filter of either kind, owned.
enum Built {
    Spatial(SpatialFilter),
    Retrieval(RetrievalTable),
}

impl Built {
    fn file_bytes(&self) -> Vec<u8> {
        match self {
            Built::Spatial(f) => f.to_file_bytes(),
            Built::Retrieval(t) => t.to_file_bytes(),
        }
    }

    fn labeller(&self) -> Labeller<'_> {
        match self {
            Built::Spatial(f) => Labeller::Spatial(f),
            Built::Retrieval(t) => Labeller::Retrieval(t),
        }
    }

    /// The reference's answers, key by key in the core.
    fn core_labels(&self, hashes: &[u64]) -> Labels {
        let mut out = Labels {
            values: Vec::with_capacity(hashes.len()),
            found: vec![0; hashes.len().div_ceil(64)],
        };
        for (i, &h) in hashes.iter().enumerate() {
            let label = match self {
                Built::Spatial(f) => Some(f.class_of_hash(h)).filter(|&c| c > 0),
                Built::Retrieval(t) => t.get_hash(h),
            };
            out.values.push(label.unwrap_or(0));
            out.found[i / 64] |= u64::from(label.is_some()) << (i % 64);
        }
        out
    }
}

/// Builds the filter of `labels` over `keys` (hashed into `hashes`) shaped like `shape`: with
/// `probe` (one core or all) or, without one, key by key in the core (the reference).
fn build(
    shape: bloomlanes_core::Params,
    labels: LabelSet<'_>,
    keys: Keys<'_>,
    hashes: &[u64],
    probe: Option<(Probe, bool)>,
) -> Result<Built> {
    let usage = |e: &dyn std::fmt::Display| Error::usage(e.to_string());
    Ok(match labels {
        LabelSet::Spatial {
            names,
            cell_bits,
            classes,
        } => {
            let mut f = SpatialFilter::new(shape, cell_bits, names).map_err(|e| usage(&e))?;
            match probe {
                Some((p, par)) => {
                    let how = if par {
                        Schedule::AllCores
                    } else {
                        Schedule::OneThread
                    };
                    p.insert_spatial_filter(&mut f, keys, Classes::U16(classes), how)
                        .map_err(|e| usage(&e))?;
                }
                None => {
                    for (&h, &c) in hashes.iter().zip(classes) {
                        f.insert_hash(h, u32::from(c)).map_err(|e| usage(&e))?;
                    }
                }
            }
            Built::Spatial(f)
        }
        LabelSet::Retrieval { spec, values } => Built::Retrieval(
            match probe {
                Some((p, _)) => p.build_retrieval(shape, spec, hashes, values),
                None => RetrievalTable::build(shape, spec, hashes, values),
            }
            .map_err(|e| usage(&e))?,
        ),
    })
}

/// The first listed key the reference answers wrongly: a class below its own, or another value
/// than its own (or none).
fn wrong_label(
    reference: &Built,
    labels: LabelSet<'_>,
    keys: &KeySet,
    got: &Labels,
) -> Option<Difference> {
    let (index, message) = match (reference, labels) {
        (Built::Spatial(f), LabelSet::Spatial { classes, .. }) => {
            let name = |c: u32| f.class_name(c).unwrap_or("absent").to_string();
            let i = (0..classes.len()).find(|&i| got.values[i] < u32::from(classes[i]))?;
            let (own, found) = (u32::from(classes[i]), got.values[i]);
            let message = format!(
                "answered class {found} ({}), below its own class {own} ({}): a spatial filter \
                 never reports a key below its class",
                name(found),
                name(own)
            );
            (i, message)
        }
        (Built::Retrieval(_), LabelSet::Retrieval { values, .. }) => {
            let i = (0..values.len()).find(|&i| got.get(i) != Some(values[i]))?;
            let found = got
                .get(i)
                .map_or_else(|| "absent".to_string(), |v| format!("value {v}"));
            let message = format!(
                "answered {found}, not its own value {}: a retrieval table returns every \
                 listed key's value",
                values[i]
            );
            (i, message)
        }
        _ => return Some(Difference::Failed("labels of another kind".into())),
    };
    Some(Difference::Label {
        index,
        key: keys.display(index),
        message,
    })
}

/// The first key whose label differs between the reference's answers and a backend's.
fn first_label_difference(
    set: &'static str,
    display: &dyn Fn(usize) -> String,
    expected: &Labels,
    found: &Labels,
    labeller: Labeller<'_>,
) -> Option<Difference> {
    let i = (0..expected.len()).find(|&i| expected.get(i) != found.get(i))?;
    let show = |l: Option<u32>| l.map_or_else(|| "absent".to_string(), |v| labeller.show(v));
    Some(Difference::Failed(format!(
        "answers differ first at {set} key #{i} ({}): expected {}, found {}",
        display(i),
        show(expected.get(i)),
        show(found.get(i))
    )))
}

/// Where a backend's file `b` first differs from the reference's file `a`, if it does.
fn file_difference(a: &[u8], b: &[u8]) -> Option<Difference> {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then_some(a.len().min(b.len())))?;
    Some(Difference::Failed(format!(
        "build: the file differs from the reference's first at byte {at} (of {})",
        a.len()
    )))
}

/// What a backend is checked on: the listed keys, as many absent ones, and the reference's
/// answers for each set.
#[derive(Clone, Copy)]
struct Probes<'a> {
    keys: &'a KeySet,
    absent: &'a [u64],
    expected: (&'a Labels, &'a Labels),
}

/// One SIMD backend against the reference: its build must be the reference's file byte for
/// byte, its answers the reference's for the listed and the absent keys.
fn compare(
    probe: (Probe, bool),
    reference: &Built,
    shape: bloomlanes_core::Params,
    labels: LabelSet<'_>,
    probes: Probes<'_>,
) -> Result<Option<Difference>> {
    let (keys, absent) = (probes.keys, probes.absent);
    let view = key_view(keys);
    let hashes = hashes_of(view, shape.seed);
    let own = build(shape, labels, view, &hashes, Some(probe))?;
    if let Some(d) = file_difference(&reference.file_bytes(), &own.file_bytes()) {
        return Ok(Some(d));
    }
    let labeller = reference.labeller();
    let mut got = Labels::default();
    labeller.label(view, probe.1, &mut got);
    let mut got_absent = Labels::default();
    labeller.label(Keys::U64(absent), probe.1, &mut got_absent);
    Ok(answer_difference(labeller, probes, (&got, &got_absent)))
}

/// The first listed key, then the first absent key, whose answer `got` differs from the
/// reference's.
fn answer_difference(
    labeller: Labeller<'_>,
    probes: Probes<'_>,
    got: (&Labels, &Labels),
) -> Option<Difference> {
    let Probes {
        keys,
        absent,
        expected,
    } = probes;
    first_label_difference("listed", &|i| keys.display(i), expected.0, got.0, labeller).or_else(
        || {
            first_label_difference(
                "absent",
                &|i| absent[i].to_string(),
                expected.1,
                got.1,
                labeller,
            )
        },
    )
}

/// Builds the filter of `labels` over `keys` by the core's reference path on each of `layouts`
/// (a retrieval table has no layout: the first one names its rows), checks that every listed
/// key gets its own class or higher (spatial) or its own value (retrieval), that its file reads
/// back, and compares every SIMD backend and the GPU with it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    keys: &KeySet,
    absent: &[u64],
    labels: LabelSet<'_>,
    layouts: &[Layout],
    fpp: f64,
    seed: u64,
    steps: &mut Steps<'_>,
) -> Result<Vec<VerifyRow>> {
    let engines: Vec<Box<dyn Backend>> = backend::available();
    let layouts = match labels {
        LabelSet::Spatial { .. } => layouts,
        LabelSet::Retrieval { .. } => &layouts[..layouts.len().min(1)],
    };
    let kind = labels.kind();
    let mut rows = Vec::new();
    for &layout in layouts {
        let shape = FilterBuilder::new()
            .fpp(fpp)
            .layout(Some(layout))
            .seed(seed)
            .key_type(Some(keys.key_type()))
            .params(keys.len() as u64)?;
        let what = |backend: &str| format!("{} {kind} {backend}", layout.name(), kind = kind);
        steps.start(what("reference"), false);
        let view = key_view(keys);
        let hashes = hashes_of(view, seed);
        let reference = build(shape, labels, view, &hashes, None)?;
        let expected = reference.core_labels(&hashes);
        let expected_absent = reference.core_labels(&hashes_of(Keys::U64(absent), seed));
        let read_back = match &reference {
            Built::Spatial(f) => SpatialFilter::from_file_bytes(&f.to_file_bytes())
                .map(|g| g == *f)
                .map_err(|e| e.to_string()),
            Built::Retrieval(t) => RetrievalTable::from_file_bytes(&t.to_file_bytes())
                .map(|g| g == *t)
                .map_err(|e| e.to_string()),
        };
        let props = match read_back {
            Ok(true) => wrong_label(&reference, labels, keys, &expected),
            Ok(false) => Some(Difference::Failed(
                "the filter read back from its file differs".into(),
            )),
            Err(e) => Some(Difference::Failed(format!(
                "its file does not read back: {e}"
            ))),
        };
        let probes = Probes {
            keys,
            absent,
            expected: (&expected, &expected_absent),
        };
        for engine in &engines {
            let difference = match engine.simd_probe() {
                None if engine.name() == "scalar" => props.clone(),
                #[cfg(feature = "gpu")]
                None if engine.is_gpu() => {
                    steps.start(what(&engine.name()), true);
                    gpu::compare(&reference, labels, probes)
                        .unwrap_or_else(|e| Some(Difference::Failed(e.to_string())))
                }
                None => continue,
                Some(probe) => {
                    steps.start(what(&engine.name()), true);
                    compare(probe, &reference, shape, labels, probes)
                        .unwrap_or_else(|e| Some(Difference::Failed(e.to_string())))
                }
            };
            rows.push(VerifyRow {
                layout,
                kind,
                backend: engine.name(),
                keys: keys.len(),
                probes: keys.len() + absent.len(),
                difference,
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{absent_keys, sample_keyset};

    fn names() -> Vec<String> {
        ["allow", "mirror", "deny"].map(String::from).to_vec()
    }

    #[test]
    fn spatial_and_retrieval_agree_on_every_backend() {
        let keys = sample_keyset(3000);
        let absent = absent_keys(3000);
        let classes: Vec<u16> = (0..3000).map(|i| (i % 3 + 1) as u16).collect();
        let values: Vec<u32> = (0..3000).map(|i| (i * 7 % 4096) as u32).collect();
        let names = names();
        let sets = [
            LabelSet::Spatial {
                names: &names,
                cell_bits: 4,
                classes: &classes,
            },
            LabelSet::Retrieval {
                spec: RetrievalSpec::new(12, 8),
                values: &values,
            },
        ];
        for set in sets {
            let mut hook = |_| {};
            let mut steps = Steps::new(0, &mut hook);
            let rows = run(&keys, &absent, set, &Layout::ALL, 0.01, 3, &mut steps).unwrap();
            assert!(rows.iter().all(|r| r.difference.is_none()), "{rows:?}");
            let per_layout = backend::available()
                .iter()
                .filter(|e| e.simd_probe().is_some() || e.name() == "scalar")
                .count();
            let layouts = if set.kind() == "spatial" { 4 } else { 1 };
            assert_eq!(rows.len(), layouts * per_layout, "{rows:?}");
        }
    }

    #[test]
    fn a_key_answered_below_its_class_or_with_another_value_is_named() {
        let keys = sample_keyset(500);
        let view = key_view(&keys);
        let hashes = hashes_of(view, 0);
        let shape = FilterBuilder::new().params(500).unwrap();
        let names = names();
        let classes = vec![1u16; 500];
        let spatial = LabelSet::Spatial {
            names: &names,
            cell_bits: 4,
            classes: &classes,
        };
        let f = build(shape, spatial, view, &hashes, None).unwrap();
        let check = |built: &Built, claimed| {
            wrong_label(built, claimed, &keys, &built.core_labels(&hashes))
        };
        // Checked against classes one higher than those inserted: key #0 is the first below.
        let higher = vec![2u16; 500];
        let d = check(
            &f,
            LabelSet::Spatial {
                names: &names,
                cell_bits: 4,
                classes: &higher,
            },
        );
        let names_key = |d: &Option<Difference>, at: usize, says: &str| {
            matches!(d, Some(Difference::Label { index, message, .. })
                if *index == at && message.contains(says))
        };
        assert!(names_key(&d, 0, "below its own class 2 (mirror)"), "{d:?}");
        assert_eq!(check(&f, spatial), None);
        let values: Vec<u32> = (0..500).collect();
        let spec = RetrievalSpec::new(9, 8);
        let table = LabelSet::Retrieval {
            spec,
            values: &values,
        };
        let t = build(shape, table, view, &hashes, None).unwrap();
        let mut other = values.clone();
        other[17] = 3;
        let d = check(
            &t,
            LabelSet::Retrieval {
                spec,
                values: &other,
            },
        );
        assert!(
            names_key(&d, 17, "answered value 17, not its own value 3"),
            "{d:?}"
        );
        assert_eq!(check(&t, table), None);
    }

    /// The generated labels use every class and many values, give a repeated key one label,
    /// and check both kinds on every backend.
    #[test]
    fn generated_labels_check_both_kinds_on_every_backend() {
        let mut listed: Vec<u64> = crate::sample::sample_keys(2000);
        listed.extend_from_within(..100); // repeats: one label each, so a table still builds
        let keys = KeySet::from_u64(listed);
        let g = Generated::for_keys(&keys);
        let sets = g.sets(&GENERATED_KINDS);
        let kinds: Vec<&str> = sets.iter().map(LabelSet::kind).collect();
        assert_eq!(kinds, GENERATED_KINDS);
        assert_eq!(g.sets(&["retrieval"]).len(), 1);
        let LabelSet::Spatial { classes, .. } = sets[0] else {
            unreachable!()
        };
        for c in 1..=3 {
            assert!(classes.iter().filter(|&&x| x == c).count() > 500, "{c}");
        }
        assert_eq!(classes[..100], classes[2000..]);
        let LabelSet::Retrieval { values, .. } = sets[1] else {
            unreachable!()
        };
        let distinct: std::collections::BTreeSet<u32> = values.iter().copied().collect();
        assert!(distinct.len() > 1000, "{}", distinct.len());
        let absent = absent_keys(1000);
        for set in sets {
            let mut hook = |_| {};
            let mut steps = Steps::new(0, &mut hook);
            let one = [Layout::L8x64];
            let rows = run(&keys, &absent, set, &one, 0.01, 9, &mut steps).unwrap();
            assert!(rows.len() >= 2, "{rows:?}");
            assert!(rows.iter().all(|r| r.difference.is_none()), "{rows:?}");
        }
    }

    /// The comparison of a backend with the reference finds one answer altered in what it is
    /// compared with (a listed key's class, an absent key's verdict), and names that key.
    #[test]
    fn one_altered_answer_is_a_difference() {
        let keys = sample_keyset(500);
        let absent = absent_keys(300);
        let g = Generated::for_keys(&keys);
        let probe = backend::available()
            .iter()
            .find_map(|e| e.simd_probe())
            .expect("a SIMD path");
        for set in g.sets(&GENERATED_KINDS) {
            let shape = FilterBuilder::new().seed(4).params(500).unwrap();
            let view = key_view(&keys);
            let hashes = hashes_of(view, 4);
            let reference = build(shape, set, view, &hashes, None).unwrap();
            let listed = reference.core_labels(&hashes);
            let missing = reference.core_labels(&hashes_of(Keys::U64(&absent), 4));
            let check = |expected: (&Labels, &Labels)| {
                let probes = Probes {
                    keys: &keys,
                    absent: &absent,
                    expected,
                };
                compare(probe, &reference, shape, set, probes).unwrap()
            };
            assert_eq!(check((&listed, &missing)), None, "{}", set.kind());
            for i in [0, 63, 64, 499] {
                let mut wrong = listed.clone();
                wrong.values[i] = if wrong.values[i] == 1 { 2 } else { 1 };
                let d = check((&wrong, &missing));
                let at = format!("listed key #{i} ");
                assert!(
                    matches!(&d, Some(Difference::Failed(m)) if m.contains(&at)),
                    "{} {i}: {d:?}",
                    set.kind()
                );
            }
            let mut wrong = missing.clone();
            wrong.found[0] ^= 1 << 5;
            let d = check((&listed, &wrong));
            assert!(
                matches!(&d, Some(Difference::Failed(m)) if m.contains("absent key #5 ")),
                "{}: {d:?}",
                set.kind()
            );
        }
    }
}
