//! Cross-checking backends: the same keys through every backend present, compared bit for bit
//! (the filter words) and answer for answer against the scalar reference; the other kinds of
//! filter through [`kinds::verify`].

use bloomlanes_core::{Bitmap, Filter, Keys, Layout};

use crate::backend::{self, Backend, Scalar};
use crate::builder::FilterBuilder;
use crate::bulk;
use crate::error::Result;
use crate::input::KeySet;
use crate::kinds::verify_labels::LabelSet;
use crate::kinds::{self, KindSpec};
use crate::sample::{sample_keys, SplitMix64};

/// The first place where a backend disagrees with the reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Difference {
    /// A filter word differs.
    Bits {
        /// Index of the 32-bit word in the byte image.
        word: usize,
        /// Its block.
        block: usize,
        /// Its lane in the block.
        lane: usize,
        /// The reference's word.
        expected: u32,
        /// The backend's word.
        found: u32,
    },
    /// An answer differs.
    Answer {
        /// Which query set (`inserted` or `absent`).
        set: &'static str,
        /// Index of the key in that set.
        index: usize,
        /// The key, written for people.
        key: String,
        /// The reference's answer.
        expected: bool,
        /// The backend's answer.
        found: bool,
    },
    /// A key of a spatial filter or retrieval table is answered wrongly by the reference
    /// itself (a class below its own, another value than its own).
    Label {
        /// Index of the key in the input (the caller maps it to a file and line).
        index: usize,
        /// The key, written for people.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The backend failed outright.
    Failed(String),
}

impl Difference {
    /// The index of the inserted key this difference is about, if it is about one (for naming
    /// its input line).
    pub fn inserted_key(&self) -> Option<usize> {
        match self {
            Difference::Answer {
                set: "inserted",
                index,
                ..
            }
            | Difference::Label { index, .. } => Some(*index),
            _ => None,
        }
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Bits {
                word,
                block,
                lane,
                expected,
                found,
            } => write!(
                f,
                "bits differ first at word {word} (block {block}, lane {lane}): expected {expected:#010x}, found {found:#010x}"
            ),
            Difference::Answer {
                set,
                index,
                key,
                expected,
                found,
            } => write!(
                f,
                "answers differ first at {set} key #{index} ({key}): expected {expected}, found {found}"
            ),
            Difference::Label {
                index,
                key,
                message,
            } => write!(f, "key #{index} ({key}): {message}"),
            Difference::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

/// One backend on one layout.
#[derive(Clone, Debug)]
pub struct VerifyRow {
    /// Layout.
    pub layout: Layout,
    /// The kind of filter (`static`, `counting`, …).
    pub kind: &'static str,
    /// Backend name.
    pub backend: String,
    /// Keys inserted.
    pub keys: usize,
    /// Keys probed.
    pub probes: usize,
    /// `None` when bits and answers are identical to the reference.
    pub difference: Option<Difference>,
}

/// The whole comparison.
#[derive(Clone, Debug)]
pub struct VerifyReport {
    /// One row per layout and backend.
    pub rows: Vec<VerifyRow>,
    /// Backends not present, and why.
    pub absent: Vec<(String, String)>,
}

impl VerifyReport {
    /// Whether every backend agreed with the reference everywhere.
    pub fn ok(&self) -> bool {
        self.rows.iter().all(|r| r.difference.is_none())
    }
}

/// One check of a verify run, reported before it starts: `done` of `total` checks are done
/// (backend rows; an RTL simulation is reported without counting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Checks finished.
    pub done: usize,
    /// Checks in all.
    pub total: usize,
    /// What is checked now: layout, kind and backend.
    pub what: String,
}

/// Reports each [`Step`] of a verify run (the binary draws a bar on standard error).
pub type StepHook<'a> = &'a mut dyn FnMut(Step);

/// Counts the steps of a run and reports them.
pub(crate) struct Steps<'a> {
    done: usize,
    total: usize,
    hook: StepHook<'a>,
}

impl<'a> Steps<'a> {
    pub(crate) fn new(total: usize, hook: StepHook<'a>) -> Steps<'a> {
        Steps {
            done: 0,
            total,
            hook,
        }
    }

    /// Reports the check `what` as started; `counted`: it is one of the `total`.
    pub(crate) fn start(&mut self, what: String, counted: bool) {
        (self.hook)(Step {
            done: self.done,
            total: self.total,
            what,
        });
        self.done += usize::from(counted);
    }

    /// Reports the end of the run.
    pub(crate) fn finish(&mut self) {
        (self.hook)(Step {
            done: self.total,
            total: self.total,
            what: String::new(),
        });
    }
}

#[cfg(test)]
thread_local! {
    /// Whole-key-set views taken on this thread (see [`key_view`]).
    pub(crate) static KEY_VIEWS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The keys as one batch. Taking the batch checks every string offset, O(n), so verify takes
/// it once per pass over the keys and never once per key: `keys.keys().hash(i, …)` in a loop
/// over the keys made verify quadratic (20,000 word keys: 7.8 s for the counting check in a
/// debug build, 1.8 s at 10,000). Tests count the views ([`KEY_VIEWS`]).
pub(crate) fn key_view(keys: &KeySet) -> Keys<'_> {
    #[cfg(test)]
    KEY_VIEWS.with(|v| v.set(v.get() + 1));
    keys.keys()
}

/// The hashes of every key with `seed`, in one pass.
pub(crate) fn hashes_of(keys: Keys<'_>, seed: u64) -> Vec<u64> {
    (0..keys.len()).map(|i| keys.hash(i, seed)).collect()
}

/// `n` (at least one) absent keys: sample keys of their own seed.
pub(crate) fn absent_keys(n: usize) -> Vec<u64> {
    SplitMix64::new(0xdead_beef_0bad_cafe)
        .take(n.max(1))
        .collect()
}

/// The sample key set `verify` uses when given no input.
pub fn sample_keyset(n: usize) -> KeySet {
    KeySet::from_u64(sample_keys(n))
}

pub(crate) fn first_bit_difference(layout: Layout, a: &Filter, b: &Filter) -> Option<Difference> {
    let (wa, wb) = (a.words(), b.words());
    let i = wa.iter().zip(wb).position(|(x, y)| x != y)?;
    let per_block = layout.block_u32s();
    Some(Difference::Bits {
        word: i,
        block: i / per_block,
        lane: (i % per_block) * 32 / layout.word_bits() as usize,
        expected: wa[i],
        found: wb[i],
    })
}

/// The first key whose answer differs: `expected(i)` against `found(i)` for `i < n`.
#[cfg(feature = "hdl")]
fn first_answer_difference(
    set: &'static str,
    display: &dyn Fn(usize) -> String,
    n: usize,
    expected: &dyn Fn(usize) -> bool,
    found: &dyn Fn(usize) -> bool,
) -> Option<Difference> {
    let i = (0..n).find(|&i| expected(i) != found(i))?;
    Some(Difference::Answer {
        set,
        index: i,
        key: display(i),
        expected: expected(i),
        found: found(i),
    })
}

/// The first key whose bit differs between two answer bitmaps of the same length.
pub(crate) fn first_bitmap_difference(
    set: &'static str,
    display: &dyn Fn(usize) -> String,
    a: &Bitmap,
    b: &Bitmap,
) -> Option<Difference> {
    let (wa, wb) = (a.words(), b.words());
    let w = wa.iter().zip(wb).position(|(x, y)| x != y)?;
    // Bits past the last key are clear in both, so the first differing bit is a key's.
    let i = w * 64 + (wa[w] ^ wb[w]).trailing_zeros() as usize;
    Some(Difference::Answer {
        set,
        index: i,
        key: display(i),
        expected: a.get(i),
        found: b.get(i),
    })
}

fn run_one(
    engine: &dyn Backend,
    empty: &Filter,
    keys: &KeySet,
    absent: &[u64],
) -> Result<(Filter, Bitmap, Bitmap)> {
    let mut f = empty.clone();
    let view = key_view(keys);
    bulk::insert(engine, &mut f, view, &mut |_| {})?;
    let a = bulk::contains(engine, f.as_view(), view, &mut |_| {})?;
    let b = bulk::contains(engine, f.as_view(), Keys::U64(absent), &mut |_| {})?;
    Ok((f, a, b))
}

/// Looks up to `n` inserted and `n` absent keys up in a simulation of the generated RTL with the
/// reference filter's banks; `None` when no simulator is installed.
#[cfg(feature = "hdl")]
fn simulate(
    reference: &Filter,
    keys: &KeySet,
    absent: &[u64],
    ra: &Bitmap,
    rb: &Bitmap,
    n: usize,
) -> Option<(String, usize, Option<Difference>)> {
    use bloomlanes_hdl::{HdlConfig, KeyMode};
    let sim = bloomlanes_hdl::simulator_available()?;
    let name = format!("hdl-sim ({})", sim.name());
    let ni = n.min(keys.len());
    let na = n.min(absent.len());
    let mut probe: Vec<Vec<u8>> = (0..ni).map(|i| keys.key_bytes(i)).collect();
    probe.extend(absent[..na].iter().map(|k| k.to_le_bytes().to_vec()));
    let cfg = HdlConfig::for_filter(reference, KeyMode::Prehashed);
    let diff = match bloomlanes_hdl::simulate_lookups(&cfg, reference, &probe) {
        Err(e) => Some(Difference::Failed(e.to_string())),
        Ok(hw) => {
            first_answer_difference("inserted", &|i| keys.display(i), ni, &|i| ra.get(i), &|i| {
                hw[i]
            })
            .or_else(|| {
                first_answer_difference(
                    "absent",
                    &|i| absent[i].to_string(),
                    na,
                    &|i| rb.get(i),
                    &|i| hw[ni + i],
                )
            })
        }
    };
    Some((name, ni + na, diff))
}

/// Why the RTL simulation cannot run here, or `None` when it can.
#[cfg(feature = "hdl")]
fn simulator_absent() -> Option<String> {
    bloomlanes_hdl::simulator_available()
        .is_none()
        .then(|| "no Verilog simulator (iverilog or verilator) installed".to_string())
}

/// Why the RTL simulation cannot run here: this build has no HDL support.
#[cfg(not(feature = "hdl"))]
fn simulator_absent() -> Option<String> {
    Some("this build has no HDL support (bloomlanes-host without its `hdl` feature)".to_string())
}

/// Builds a filter of `keys` for each layout with every backend present, probes the keys and an
/// equal number of absent sample keys, and compares everything with the scalar reference. When a
/// Verilog simulator is installed, `hdl_keys` inserted and `hdl_keys` absent keys are also looked
/// up in a simulation of the generated RTL loaded with the reference filter's bank files.
///
/// `kinds` says which kinds of filter to check: the static filter as above, the others by
/// `kinds::verify::run` (their properties, and every backend against the core's reference);
/// `labelled`, spatial filters and retrieval tables of the keys with those labels (e.g.
/// [`Generated`](kinds::verify_labels::Generated)), by [`kinds::verify_labels`].
/// `progress` hears of each check before it starts.
#[allow(clippy::too_many_arguments)]
pub fn run(
    keys: &KeySet,
    layouts: &[Layout],
    kinds: &[KindSpec],
    labelled: &[LabelSet<'_>],
    fpp: f64,
    seed: u64,
    hdl_keys: usize,
    progress: StepHook<'_>,
) -> Result<VerifyReport> {
    let absent = absent_keys(keys.len());
    let engines = backend::available();
    let checks = layouts.len() * (kinds.len() + labelled.len()) * engines.len();
    let mut steps = Steps::new(checks, progress);
    let mut rows = Vec::new();
    let static_layouts = if kinds.contains(&KindSpec::Static) {
        layouts
    } else {
        &[]
    };
    for &layout in static_layouts {
        let empty = FilterBuilder::new()
            .fpp(fpp)
            .layout(Some(layout))
            .seed(seed)
            .empty(keys.len() as u64)?;
        steps.start(format!("{} static reference", layout.name()), false);
        let (rf, ra, rb) = run_one(&Scalar, &empty, keys, &absent)?;
        // The scalar backend must also agree with the core filter's own insert path.
        let mut core_f = empty.clone();
        for h in hashes_of(key_view(keys), seed) {
            core_f.insert_hash(h);
        }
        let core_diff = first_bit_difference(layout, &core_f, &rf);
        for engine in &engines {
            steps.start(format!("{} static {}", layout.name(), engine.name()), true);
            let difference = match run_one(&**engine, &empty, keys, &absent) {
                Err(e) => Some(Difference::Failed(e.to_string())),
                Ok((f, a, b)) => first_bit_difference(layout, &rf, &f)
                    .or_else(|| first_bitmap_difference("inserted", &|i| keys.display(i), &ra, &a))
                    .or_else(|| {
                        first_bitmap_difference("absent", &|i| absent[i].to_string(), &rb, &b)
                    })
                    .or_else(|| {
                        a.indices(false).next().map(|i| Difference::Answer {
                            set: "inserted",
                            index: i,
                            key: keys.display(i),
                            expected: true,
                            found: false,
                        })
                    }),
            };
            let difference = if engine.name() == "scalar" {
                difference.or_else(|| core_diff.clone())
            } else {
                difference
            };
            rows.push(VerifyRow {
                layout,
                kind: "static",
                backend: engine.name(),
                keys: keys.len(),
                probes: keys.len() + absent.len(),
                difference,
            });
        }
        #[cfg(feature = "hdl")]
        if hdl_keys > 0 {
            steps.start(format!("{} static hdl-sim", layout.name()), false);
            if let Some((backend, probes, difference)) =
                simulate(&rf, keys, &absent, &ra, &rb, hdl_keys)
            {
                rows.push(VerifyRow {
                    layout,
                    kind: "static",
                    backend,
                    keys: keys.len(),
                    probes,
                    difference,
                });
            }
        }
    }
    let others: Vec<KindSpec> = kinds
        .iter()
        .copied()
        .filter(|k| *k != KindSpec::Static)
        .collect();
    rows.extend(kinds::verify::run(
        keys, &absent, layouts, &others, fpp, seed, hdl_keys, &mut steps,
    )?);
    for &set in labelled {
        rows.extend(kinds::verify_labels::run(
            keys, &absent, set, layouts, fpp, seed, &mut steps,
        )?);
    }
    steps.finish();
    let mut absent_backends = backend::absent();
    if hdl_keys > 0 {
        if let Some(why) = simulator_absent() {
            absent_backends.push(("hdl-sim".into(), why));
        }
    }
    Ok(VerifyReport {
        rows,
        absent: absent_backends,
    })
}

/// Builds a spatial filter or retrieval table of `keys` and their `labels` by the core's
/// reference path (per layout; a retrieval table on the first), checks that every listed key
/// is answered its own class or higher, or exactly its own value, and compares every SIMD
/// backend's build and answers with it (see [`kinds::verify_labels`]).
pub fn run_labelled(
    keys: &KeySet,
    labels: kinds::verify_labels::LabelSet<'_>,
    layouts: &[Layout],
    fpp: f64,
    seed: u64,
    progress: StepHook<'_>,
) -> Result<VerifyReport> {
    let absent = absent_keys(keys.len());
    let engines = backend::available().len();
    let mut steps = Steps::new(layouts.len() * engines, progress);
    let rows = kinds::verify_labels::run(keys, &absent, labels, layouts, fpp, seed, &mut steps)?;
    steps.finish();
    Ok(VerifyReport {
        rows,
        absent: backend::absent(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{KeyKind, KeySetBuilder};
    use crate::kinds::verify_labels::{Generated, GENERATED_KINDS};

    /// Verify takes the whole key set as a batch (an O(n) check of its offsets) a fixed number
    /// of times, however many keys there are: linear, not once per key.
    #[test]
    fn verify_passes_over_the_keys_a_fixed_number_of_times() {
        let views = |n: usize| {
            let mut b = KeySetBuilder::default();
            for i in 0..n {
                b.push_bytes(format!("word-{i}").as_bytes(), KeyKind::Text);
            }
            let keys = b.finish();
            let mut kinds = vec![KindSpec::Static];
            kinds.extend(kinds::verify::kinds_for(n));
            KEY_VIEWS.with(|v| v.set(0));
            let generated = Generated::for_keys(&keys);
            let labelled = generated.sets(&GENERATED_KINDS);
            let one = [Layout::L8x32];
            let report = run(&keys, &one, &kinds, &labelled, 0.01, 1, 0, &mut |_| {}).unwrap();
            assert!(report.ok(), "{:?}", report.rows);
            KEY_VIEWS.with(|v| v.get())
        };
        let (small, large) = (views(200), views(1600));
        assert!(small > 0);
        assert_eq!(small, large, "views of the keys grow with their number");
    }

    #[test]
    fn every_backend_agrees_on_every_layout() {
        let keys = sample_keyset(3000);
        let report = run(
            &keys,
            &Layout::ALL,
            &[KindSpec::Static],
            &[],
            0.01,
            42,
            0,
            &mut |_| {},
        )
        .unwrap();
        assert!(report.ok(), "{:?}", report.rows);
        assert_eq!(
            report.rows.len(),
            Layout::ALL.len() * backend::available().len()
        );
        assert!(report.rows.iter().all(|r| r.probes == 6000));
    }

    #[test]
    fn differences_name_the_first_key() {
        let mut a = Bitmap::new(130);
        let mut b = a.clone();
        a.set(129, true);
        b.set(129, true);
        b.set(70, true);
        let d = first_bitmap_difference("absent", &|i| format!("k{i}"), &a, &b);
        assert_eq!(
            d,
            Some(Difference::Answer {
                set: "absent",
                index: 70,
                key: "k70".into(),
                expected: false,
                found: true,
            })
        );
        assert_eq!(
            first_bitmap_difference("absent", &|i| i.to_string(), &a, &a),
            None
        );
    }
}
