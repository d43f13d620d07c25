//! `classify -w DIR` and `capture -w DIR` against a spatial filter or a retrieval table: one
//! capture per class (named by the class) or value (named by the value in decimal), and
//! `absent` for the packets with none, all in `DIR` and in the input's format (a live capture:
//! pcap); none appears unless the whole run succeeds (see [`LabelFiles`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bloomlanes_host::kinds::labels::Labeller;
use bloomlanes_host::ops::classify::Outputs;
use bloomlanes_host::ops::label_writers::LabelFiles;
use bloomlanes_host::{outfile, Error, Result};
use serde_json::{json, Value};

use crate::classify::{with_outputs, VerdictOutputs};
use crate::output::{check_output, with_output};

/// Runs `run` with the outputs `o` asks for, as `classify` and `capture` both do: against a
/// labelled target (`labeller`) with `-w`, one capture per label in that folder
/// ([`with_label_files`]); otherwise [`with_outputs`]. Returns what `run` returned and the
/// per-label files written.
pub fn with_verdict_outputs<T>(
    labeller: Option<&Labeller<'_>>,
    o: &VerdictOutputs,
    run: impl FnOnce(Outputs<'_>) -> Result<T>,
) -> Result<(T, Vec<PathBuf>)> {
    match (labeller, &o.write) {
        (Some(l), Some(dir)) => with_label_files(dir, l, o, run),
        _ => Ok((with_outputs(o, run)?, Vec::new())),
    }
}

/// The per-label files written, as the JSON summary's `files`.
pub fn files_json(written: &[PathBuf]) -> Value {
    json!(written
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>())
}

/// Runs `run` with every packet going to its label's file in `dir` (and the bitmap, if asked
/// for, to its file); the files are put in place once `run` succeeded. Returns what `run`
/// returned and the files written.
pub fn with_label_files<T>(
    dir: &Path,
    labeller: &Labeller<'_>,
    o: &VerdictOutputs,
    run: impl FnOnce(Outputs<'_>) -> Result<T>,
) -> Result<(T, Vec<PathBuf>)> {
    if outfile::is_stdout(dir) {
        return Err(Error::usage(
            "against a spatial filter or retrieval table -w names a directory (one capture per \
             class or value); it cannot be standard output (-)",
        ));
    }
    if let Some(b) = &o.bitmap {
        check_output(b)?;
    }
    let names: BTreeMap<u32, String> = match labeller {
        Labeller::Spatial(f) => (1..=u32::from(f.classes()))
            .filter_map(|c| Some((c, f.class_name(c)?.to_string())))
            .collect(),
        Labeller::Retrieval(_) | Labeller::Counts(_) => BTreeMap::new(),
    };
    let mut files = LabelFiles::new(dir, names)?;
    let flows = o.flows;
    let by = o.by.into();
    let t = match &o.bitmap {
        None => run(Outputs {
            packets: None,
            bitmap: None,
            flows,
            by,
            by_label: Some(&mut files),
        })?,
        Some(b) => with_output(b, |w| {
            run(Outputs {
                packets: None,
                bitmap: Some(w),
                flows,
                by,
                by_label: Some(&mut files),
            })
        })?,
    };
    Ok((t, files.commit()?))
}
