//! What the workspace's test crates share (a dev-dependency, never published): the one way a
//! test says it was skipped.

use std::fmt::Display;
use std::io::Write;

/// Writes `SKIP: {reason}` as one line straight to the process's standard error, past
/// libtest's output capture (which holds `println!` and `eprintln!` of a passing test), so that
/// a test that could not run (no GPU, no simulator, no root) shows in a plain `cargo test` run
/// instead of passing silently. `reason` names the test and what it lacked.
pub fn skip(reason: impl Display) {
    // One write of the whole line, so that lines of tests running at once do not interleave.
    let line = format!("SKIP: {reason}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
