//! Reading keys from inputs: the `bloomlanes-input` crate under the paths this library has
//! always had (`bloomlanes_host::input::read_inputs`, `input::pcap`, [`KeySet`] …), and the
//! adapter that reports its progress as this library's [`Progress`].
//!
//! Text lines, decimal integers, text flow keys, a CSV column, binary little-endian u64 words
//! or the flow keys (5-tuples) of a packet capture are streamed through one pipeline: opened
//! (memory-mapped, standard input as `-`, gzip/zstd/xz undone with the feature `compression`),
//! cut into chunks of whole records, parsed and hashed on every core. See the crate's
//! documentation for the whole story.

pub use bloomlanes_input::*;

use crate::bulk::{Progress, Stage as Doing};

/// A stream's progress hook that reports to `progress` as stage `doing` (for
/// [`stream_keys`] and [`count_distinct`]).
pub(crate) fn reporting(
    doing: Doing,
    progress: &mut dyn FnMut(Progress),
) -> impl FnMut(StreamProgress) + '_ {
    move |p| progress(progress_of(doing, p))
}

/// A stream's progress as a [`Progress`] of stage `doing`.
fn progress_of(doing: Doing, p: StreamProgress) -> Progress {
    let report = Progress::stream(doing, p.keys, p.bytes, p.bytes_total);
    if p.finished {
        report.finished()
    } else {
        report
    }
}
