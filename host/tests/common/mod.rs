//! Shared helpers for the end-to-end tests of the `bloomlanes` binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The binary under test, quiet and without colours.
pub fn bl() -> Command {
    let mut c = Command::cargo_bin("bloomlanes").expect("the bloomlanes binary is built");
    c.env_remove("BLOOMLANES_SIMD");
    c
}

/// A fresh temporary directory.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// `dir/name`.
pub fn at(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// Writes `bytes` to `dir/name` and returns the path.
pub fn write(dir: &tempfile::TempDir, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = at(dir, name);
    std::fs::write(&p, bytes).expect("write a test file");
    p
}

/// Runs the binary and parses its standard output as JSON (the run must succeed).
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = bl().arg("--json").args(args).output().expect("run");
    assert!(
        out.status.success(),
        "bloomlanes {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// Runs the binary expecting failure with `code`; returns stderr.
pub fn fails(args: &[&str], code: i32) -> String {
    let out = bl().args(args).output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "bloomlanes {args:?}: expected exit {code}; stderr: {err}; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "panic on user input: {err}");
    err
}

/// The path as a `&str`.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 test path")
}

/// Names of the files in `dir` (to check no temporary or partial files are left behind).
pub fn files(dir: &tempfile::TempDir) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `n` text keys `prefix0 … prefix{n-1}`, one per line.
pub fn lines(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix}{i}\n")).collect()
}
