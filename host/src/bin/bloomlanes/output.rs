//! Writing results: JSON objects and lines of text on standard output (standard error when an
//! output file goes to standard output), with write failures as errors (a closed pipe ends the
//! program quietly); checking output paths early.

use std::io::{self, Write};
use std::path::Path;

use bloomlanes_host::{outfile, Error, Result};
use serde_json::Value;

/// Whether `e` is a write to a closed pipe (`bloomlanes query … | head`): not worth a message.
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

/// A failed write to standard output.
pub fn stdout_err(e: io::Error) -> Error {
    Error::io(Path::new("<stdout>"), "write", e)
}

/// Runs `write` with a writer into `path` through the library's atomic writer (a temporary file
/// renamed into place only when everything succeeded); an error of `write` itself (a bad input,
/// say) is returned as it is, not as a failure to write `path`.
pub fn with_output<T>(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<T>) -> Result<T> {
    keeping_errors(path, write, |w| {
        bloomlanes_host::store::write_atomic_with(path, w)
    })
}

/// Runs `write` with a buffered writer into standard output, which is then marked as carrying
/// data (reports and errors go to standard error even on a terminal); an error of `write` is
/// returned as it is.
pub fn with_stdout<T>(write: impl FnOnce(&mut dyn Write) -> Result<T>) -> Result<T> {
    keeping_errors(Path::new("<stdout>"), write, |w| outfile::write_stdout(w))
}

/// Hands `write` to `sink` (a writer that fails when its closure fails) and returns `write`'s
/// own result or error, the sink's error only when `write` succeeded.
fn keeping_errors<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<T>,
    sink: impl FnOnce(&mut dyn FnMut(&mut dyn Write) -> io::Result<()>) -> Result<()>,
) -> Result<T> {
    let mut write = Some(write);
    let mut result: Option<Result<T>> = None;
    let written = sink(&mut |w| {
        let Some(write) = write.take() else {
            return Err(io::Error::other("the output was written twice"));
        };
        let r = write(w);
        let failed = r.is_err();
        result = Some(r);
        if failed {
            Err(io::Error::other("stopped: the output is not complete"))
        } else {
            Ok(())
        }
    });
    match (result, written) {
        (Some(Err(e)), _) | (_, Err(e)) => Err(e),
        (Some(Ok(v)), Ok(())) => Ok(v),
        (None, Ok(())) => Err(Error::io(
            path,
            "write",
            io::Error::other("the output was never written"),
        )),
    }
}

/// Where reports go: standard output, unless it carries data (`-o -`, `--bitmap -`,
/// `--parquet -`): then standard error.
fn report_stream() -> Box<dyn Write> {
    if outfile::stdout_carries_data() {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    }
}

/// Prints `v` as pretty JSON (on standard error when standard output carries data).
pub fn emit(v: &Value) -> Result<()> {
    let mut out = report_stream();
    serde_json::to_writer_pretty(&mut out, v).map_err(|e| stdout_err(e.into()))?;
    writeln!(out).map_err(stdout_err)
}

/// Warnings of one command: each printed to standard error at once, and kept for its JSON
/// report (`"warnings": [...]`).
#[derive(Debug, Default)]
pub struct Warnings(Vec<String>);

impl Warnings {
    /// Prints `msg` as `bloomlanes: warning: msg` on standard error and keeps it.
    pub fn warn(&mut self, msg: impl Into<String>) {
        let msg = msg.into();
        eprintln!("bloomlanes: warning: {msg}");
        self.0.push(msg);
    }

    /// The warnings, as a JSON array of strings.
    pub fn json(&self) -> Value {
        Value::Array(self.0.iter().map(|w| Value::String(w.clone())).collect())
    }
}

/// Prints a line, or several joined with `\n` (on standard error when standard output
/// carries data).
pub fn say(line: &str) -> Result<()> {
    writeln!(report_stream(), "{line}").map_err(stdout_err)
}

/// Checks an output path before the work that fills it: `-` (standard output, not a terminal),
/// a regular file, a link to one, or a new name in an existing folder; never a folder, FIFO or
/// device.
pub fn check_output(path: &Path) -> Result<()> {
    outfile::Destination::of(path).map(|_| ())
}

/// A rate for people: `1.23 G`, `45.6 M`, `7.8 k`.
pub fn rate(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.1} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0} ")
    }
}

/// The backends that were not measured or checked, as JSON.
pub fn absent_json(absent: &[(String, String)]) -> Value {
    Value::Array(
        absent
            .iter()
            .map(|(n, w)| serde_json::json!({"backend": n, "why": w}))
            .collect(),
    )
}
