#!/usr/bin/env bash
# Fuzz smoke run for CI: every target for FUZZ_SECONDS (default 30) from seeds the library writes.
# Needs a nightly toolchain; without one it prints a visible SKIP and succeeds. It does not need
# cargo-fuzz: the targets are built by cargo with the flags `cargo fuzz build` (0.13.2) passes
# (libFuzzer's coverage counters, compare tracing, AddressSanitizer, `--cfg fuzzing`, line
# tables), so CI does not spend minutes installing it. One change: 16 codegen units instead of
# cargo-fuzz's 1 (the host crate's build took 5 min 56 s, now 3 min 36 s on 2 cores; the same
# executions per second in a 10 s run of `filter_file` and `capture`). `make_seeds` comes from
# the same build (the same seeds, byte for byte, as a plain release build's).
#
# `bash fuzz/ci.sh build` only builds (.ci/run starts it early, beside other steps), `bash
# fuzz/ci.sh run` only runs what was built; no argument does both.
set -euo pipefail
cd "$(dirname "$0")"
secs="${FUZZ_SECONDS:-30}"
mode="${1:-all}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "SKIP: fuzz smoke run: no nightly toolchain"
  exit 0
fi
triple="x86_64-unknown-linux-gnu"
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Zsanitizer=address"
flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth -Ccodegen-units=16"
if [ "$mode" != run ]; then
  echo "building fuzz targets ($SECONDS s)"
  RUSTFLAGS="$flags ${RUSTFLAGS:-}" cargo +nightly build -q --release --target "$triple" --bins \
    --config 'profile.release.debug="line-tables-only"'
  echo "fuzz targets built ($SECONDS s)"
fi
[ "$mode" = build ] && exit 0
bin="target/$triple/release"
export ASAN_OPTIONS="detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
"$bin/make_seeds" corpus
# Every target, each with its seeds from make_seeds; a target added to Cargo.toml but not here
# fails the run rather than going unfuzzed.
targets="filter_file filter_fields parquet_form parquet_file key_text filter_stream capture text_inputs decompress retrieval_file"
for t in $(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml); do
  case "$t" in bloomlanes-fuzz | make_seeds) continue ;; esac
  case " $targets " in
    *" $t "*) ;;
    *) echo "FUZZ FAILURE: target $t is not listed in fuzz/ci.sh"; exit 1 ;;
  esac
done
# libFuzzer runs one thread per target: run as many targets at once as there are cores (two on
# CI), each for the full FUZZ_SECONDS, straight from the built binaries (`cargo fuzz run` would
# take cargo's build lock once per target). Each target's output goes to its own log, shown
# when it ends.
jobs="${FUZZ_JOBS:-$(nproc)}"
mkdir -p logs
fuzz_one() {
  local t="$1"
  mkdir -p "corpus/$t" "artifacts/$t"
  "$bin/$t" -artifact_prefix="artifacts/$t/" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    "corpus/$t" >"logs/$t.log" 2>&1 || true
  # One write, so that two targets ending together do not interleave their lines.
  printf -- '--- %s (%s s):\n%s\n' "$t" "$SECONDS" \
    "$(grep -E "^(Done|==|SUMMARY|.*(panicked|ERROR|crash|timeout|oom))" "logs/$t.log" || true)"
}
echo "fuzzing ${targets// /, } for ${secs}s each, $jobs at a time ($SECONDS s)"
running=0
for t in $targets; do
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
# libFuzzer exits non-zero on a crash, timeout or OOM; the runs above go on regardless, so check
# for artifacts instead.
failed=0
for t in $targets; do
  if compgen -G "artifacts/$t/*" >/dev/null; then
    echo "FUZZ FAILURE in $t: $(ls "artifacts/$t")"
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz smoke run done ($SECONDS s)"
