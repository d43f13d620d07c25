//! `bloomlanes insert`: add keys to an existing filter file of any kind (the file is replaced
//! in one step, or written to `-o`). Also the arguments `delete` shares with it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bloomlanes_host::kinds::{self, ops};
use bloomlanes_host::ops::stream::insert_streamed;
use bloomlanes_host::store::lock::WriteLock;
use bloomlanes_host::{backend, store, AnyFilter, Error, KeyType, Result, Stage};
use bloomlanes_input::InputSummary;
use clap::Args;
use serde_json::{json, Map, Value};

use crate::args::BackendArg;
use crate::build::now_nanos;
use crate::inputs::{describe_inputs, inputs_json, InputArgs};
use crate::insert_classes::{self, ClassArgs};
use crate::kind::kind_json;
use crate::opened::Opened;
use crate::output::{check_output, emit, say, Warnings};
use crate::progress::Bar;
use crate::Ctx;

/// The arguments `insert` and `delete` share.
#[derive(Args, Debug)]
pub struct EditArgs {
    /// The filter file (read whole and checked).
    pub filter: PathBuf,
    /// Input files with the keys ("-" reads standard input).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Where to write the changed filter [default: replace the filter file, in one step].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

impl EditArgs {
    /// The output's write lock (held until the changed filter is saved, so that no other
    /// writer's change falls between this read and that write), the filter, loaded whole and
    /// checked (its keys must be hashable here), and where the changed filter goes (checked as
    /// an output).
    pub fn open(&self) -> Result<(Option<WriteLock>, AnyFilter, PathBuf)> {
        let output = self.output.clone().unwrap_or_else(|| self.filter.clone());
        check_output(&output)?;
        let lock = store::lock::lock_output(&output)?;
        let filter = store::load_any(&self.filter)?;
        Opened::check_params_hashable(filter.params(), &self.filter)?;
        Ok((lock, filter, output))
    }

    /// Checks the type of the keys read against the filter's (an error where their byte forms
    /// differ) and gives the warning where they differ only in meaning.
    pub fn key_type_warnings(&self, filter: &AnyFilter, read: KeyType) -> Result<Warnings> {
        let filter_type = filter.params().key_type;
        let key_match = bloomlanes_host::ops::check_key_type(&self.filter, filter_type, read)?;
        let mut warnings = Warnings::default();
        if let Some(note) = bloomlanes_host::ops::key_type_note(filter_type, read, key_match) {
            warnings.warn(note);
        }
        Ok(warnings)
    }
}

/// Arguments of `insert`.
#[derive(Args, Debug)]
pub struct InsertArgs {
    #[command(flatten)]
    edit: EditArgs,
    /// Which backend inserts the keys (the SIMD backends have bulk inserts for every kind; the
    /// others take the core's per-key path for the kinds other than static).
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    #[command(flatten)]
    classes: ClassArgs,
}

/// A changed filter, written: what the reports of `insert` and `delete` share.
pub struct Saved {
    /// The fields of the JSON report (the filter, the output, the inputs and the kind).
    shared: Map<String, Value>,
    /// `from INPUTS into OUTPUT (KIND)`, for the text report.
    place: String,
}

/// Writes the changed filter to `output`; returns what the report of the edit shares.
pub fn save(
    e: &EditArgs,
    output: &Path,
    f: &AnyFilter,
    summaries: &[InputSummary],
) -> Result<Saved> {
    store::save_any(output, f)?;
    let kind = f.params().kind;
    let mut shared = Map::new();
    shared.insert("filter".into(), e.filter.display().to_string().into());
    shared.insert("output".into(), output.display().to_string().into());
    shared.insert("inputs".into(), inputs_json(summaries));
    shared.insert("kind".into(), kind_json(kind));
    let place = format!(
        "from {} into {} ({kind})",
        describe_inputs(summaries),
        output.display()
    );
    Ok(Saved { shared, place })
}

impl Saved {
    /// Reports the edit: with `--json` the shared fields and then `fields`; otherwise the line
    /// `DONE from INPUTS into OUTPUT (KIND); THEN`.
    pub fn report(self, ctx: &Ctx, fields: Value, done: &str, then: &str) -> Result<()> {
        if ctx.json {
            let mut all = self.shared;
            if let Value::Object(m) = fields {
                all.extend(m);
            }
            emit(&Value::Object(all))
        } else {
            say(&format!("{done} {}; {then}", self.place))
        }
    }
}

/// Runs `insert`: the keys are streamed (parsed and hashed on every core) and inserted chunk
/// after chunk in input order, so that a window rotates and a scalable filter grows exactly as
/// key-by-key inserts would; the filter is written once, at the end.
pub fn run(ctx: &Ctx, a: InsertArgs) -> Result<ExitCode> {
    let e = &a.edit;
    let (_lock, mut filter, output) = e.open()?;
    let engine = backend::select(a.backend.into(), 0)?;
    let mut bar = Bar::new(ctx.progress);
    let start = Instant::now();
    let mut above = None;
    let (summaries, key_type, conflict) = match (&mut filter, a.classes.given()) {
        (AnyFilter::Spatial(f), true) => {
            let opts = e.input.options();
            let r = insert_classes::insert(
                &*engine, f, &e.filter, &a.classes, &e.inputs, &opts, &mut bar,
            )?;
            above = Some((r.above.warning(f), r.above));
            (r.summaries, r.key_type, r.conflict_warning)
        }
        (AnyFilter::Spatial(f), false) => {
            return Err(Error::usage(format!(
                "{} is a spatial filter: each key goes in with its class, --class NAME (every \
                 key of the inputs) or --class-column C (a CSV column beside --csv-column); its \
                 classes: {}",
                e.filter.display(),
                f.class_names().join(", ")
            )))
        }
        (f, true) => {
            return Err(Error::usage(format!(
                "--class and --class-column are for spatial filters; {} is a {} filter",
                e.filter.display(),
                f.params().kind.name()
            )))
        }
        (f, false) => {
            let (s, k) = insert_streamed(
                &*engine,
                f,
                &e.inputs,
                &e.input.options(),
                now_nanos(),
                &mut |p| bar.update(p),
            )?;
            (s, k, None)
        }
    };
    let inserted: u64 = summaries.iter().map(|s| s.keys).sum();
    let mut warnings = e.key_type_warnings(&filter, key_type)?;
    if let Some(c) = conflict {
        warnings.warn(c);
    }
    if let Some(w) = above.as_ref().and_then(|(w, _)| w.clone()) {
        warnings.warn(w);
    }
    let seconds = start.elapsed().as_secs_f64();
    let saved = save(e, &output, &filter, &summaries)?;
    let recorded = filter.stats().recorded_keys;
    let fpr = kinds::expected_fpr(&filter);
    let mut fields = json!({
        "inserted": inserted,
        "recorded_keys": recorded,
        "expected_fpr": fpr,
        "backend": ops::engine_name(&*engine, &filter, Stage::Insert),
        "seconds": seconds,
        "warnings": warnings.json(),
    });
    if let Some((_, a)) = &above {
        // Spatial inserts: keys answered above the class given them (see AboveClass).
        fields["above_class"] = json!({"keys": a.keys, "expected_from_emersion": a.expected});
    }
    saved.report(
        ctx,
        fields,
        &format!("inserted {inserted} keys"),
        &format!(
            "{} keys recorded, expected false-positive rate {fpr:.3e}",
            recorded.map_or("unknown".into(), |k| k.to_string())
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}
