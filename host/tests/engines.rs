//! Interoperability with real engines (issue #13): `host/tests/engines/check_engines.py` checks
//! typed keys against Parquet files written by DuckDB and pyarrow for every key type (negative
//! numbers, -0.0, NaN included), and that DuckDB reads, answers from and uses the filters that
//! `bloomlanes parquet add-filters` writes. It needs python3 with `duckdb` and `pyarrow`
//! (installed by `.ci/run`); without them it prints a `SKIP:` line and passes.

use bloomlanes_testkit::skip;

use std::path::Path;
use std::process::Command;

#[test]
fn duckdb_and_pyarrow_agree_with_bloomlanes() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engines/check_engines.py");
    let work = tempfile::tempdir().expect("a temporary directory");
    let out = match Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bloomlanes"))
        .arg(work.path())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            skip(format_args!("engine interop tests need python3 ({e})"));
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    assert!(
        out.status.success(),
        "check_engines.py failed:\n{stdout}\n{stderr}"
    );
    if stdout.contains("SKIP:") {
        // The script's own SKIP lines, made visible past the harness's capture.
        for (_, why) in stdout.lines().filter_map(|l| l.split_once("SKIP:")) {
            skip(format_args!("engine interop:{why}"));
        }
        return;
    }
    assert!(stdout.contains("values checked"), "{stdout}");
    assert!(
        stdout.contains("ok: duckdb f64") && stdout.contains("ok: pyarrow f32"),
        "every writer and float type was checked: {stdout}"
    );
}
