#!/usr/bin/env bash
# The Python package's CI step: a fresh virtual environment with numpy, pyarrow, Dask and PySpark
# from PyPI, the abi3 wheel built by maturin, installed like a user would, then pytest (the Spark
# tests on their own, with their step times; they need a Java runtime, which .ci/run installs),
# then the README's Python example in another fresh environment after the README's own install
# line. Called by .ci/run; runs on its own too (`bash python/ci.sh`). Prints the time of each step.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="$target/python-ci/venv"
wheels="$target/python-ci/wheels"
step() { printf '\n--- python: %s (%ss)\n' "$1" "$SECONDS"; }

# `bash python/ci.sh venv` only makes the environment (.ci/run starts it early, while other steps
# build); `bash python/ci.sh rest` uses that environment for the rest; no argument does both.
mode="${1:-all}"

if [ "$mode" != rest ]; then
  step "virtual environment and packages from PyPI"
  rm -rf "$venv" "$wheels"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    maturin numpy pyarrow "dask[distributed,dataframe]" pyspark pytest
  "$venv/bin/python" -c 'import numpy, pyarrow, dask, distributed, pyspark; print("numpy", numpy.__version__, "pyarrow", pyarrow.__version__, "dask", dask.__version__, "pyspark", pyspark.__version__)'
fi
[ "$mode" = venv ] && exit 0
[ -x "$venv/bin/maturin" ] || { echo "FAILED: no environment at $venv (run python/ci.sh venv first)"; exit 1; }
rm -rf "$wheels"

step "maturin build --release (abi3 wheel)"
# CI's wheel only has to pass the tests: 16 codegen units and line tables instead of the release
# profile's 4 units and full debug info build it faster (set the variables to override).
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS="${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-16}"
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-line-tables-only}"
(cd "$here" && "$venv/bin/maturin" build --release --out "$wheels" --interpreter "$venv/bin/python")
ls -l "$wheels"

step "install the wheel"
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/bloomlanes-*.whl
(cd /tmp && "$venv/bin/python" -c 'import bloomlanes; print(bloomlanes.__file__, "simd:", bloomlanes.simd_path())')

step "pytest"
# From the tests folder, so that the installed package (not the source folder) is imported.
(cd "$here/tests" && "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider --durations=5 \
  --ignore=test_spark.py .)

step "pytest: Spark (local[2] session; skipped, with the reason, without Java)"
(cd "$here/tests" && "$venv/bin/python" -m pytest -q -rs -s -p no:cacheprovider test_spark.py)

step "README's Python example: fresh venv, the README's install line, the example block"
"$venv/bin/python" "$here/tests/readme_example.py" --venv "$target/python-ci/readme-venv"

step "python done"
