#!/usr/bin/env bash
# Fuzz smoke run for CI: every target for FUZZ_SECONDS (default 30) from seeds the library writes.
# Needs a nightly toolchain and cargo-fuzz; without them it prints a visible SKIP and succeeds.
set -euo pipefail
cd "$(dirname "$0")"
secs="${FUZZ_SECONDS:-30}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "SKIP: fuzz smoke run: no nightly toolchain"
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz ($SECONDS s)"
  if ! cargo install -q --locked cargo-fuzz; then
    echo "SKIP: fuzz smoke run: cargo-fuzz could not be installed"
    exit 0
  fi
fi
echo "building fuzz targets ($SECONDS s)"
cargo +nightly fuzz build
cargo +nightly run -q --release --bin make_seeds -- corpus
# Every target, each with its seeds from make_seeds; a target added to Cargo.toml but not here
# fails the run rather than going unfuzzed.
targets="filter_file filter_fields parquet_form parquet_file key_text filter_stream capture text_inputs decompress retrieval_file"
for t in $(cargo +nightly fuzz list); do
  [ "$t" = make_seeds ] && continue
  case " $targets " in
    *" $t "*) ;;
    *) echo "FUZZ FAILURE: target $t is not listed in fuzz/ci.sh"; exit 1 ;;
  esac
done
# libFuzzer runs one thread per target: run as many targets at once as there are cores (two on
# CI), each for the full FUZZ_SECONDS, straight from the built binaries (`cargo fuzz run` would
# take cargo's build lock once per target). Each target's output goes to its own log, shown
# when it ends.
bin="target/x86_64-unknown-linux-gnu/release"
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
