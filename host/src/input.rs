//! Reading keys from inputs: the `bloomlanes-input` crate under the paths this library has
//! always had (`bloomlanes_host::input::read_inputs`, `input::pcap`, [`KeySet`] …), and the
//! adapter that reports its progress as this library's [`Progress`].
//!
//! Text lines, decimal integers, text flow keys, a CSV column, binary little-endian u64 words
//! or the flow keys (5-tuples) of a packet capture are streamed through one pipeline: opened
//! (memory-mapped, standard input as `-`, gzip/zstd/xz undone with the feature `compression`),
//! cut into chunks of whole records, parsed and hashed on every core. See the crate's
//! documentation for the whole story.

use std::path::PathBuf;

pub use bloomlanes_input::*;

use crate::bulk::{Progress, Stage as Doing};

/// [`stream_keys`] with its progress reported as `doing` (a [`Progress`] of this library).
pub(crate) fn stream_keys_as<S: Stage>(
    doing: Doing,
    paths: &[PathBuf],
    opts: &InputOptions,
    seed: u64,
    stage: &S,
    consume: &mut dyn FnMut(S::Out) -> Result<(), S::Error>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<InputSummary>, S::Error> {
    stream_keys(paths, opts, seed, stage, consume, &mut |p| {
        progress(progress_of(doing, p))
    })
}

/// A stream's progress as a [`Progress`] of stage `doing`.
pub(crate) fn progress_of(doing: Doing, p: StreamProgress) -> Progress {
    let report = Progress::stream(doing, p.keys, p.bytes, p.bytes_total);
    if p.finished {
        report.finished()
    } else {
        report
    }
}
