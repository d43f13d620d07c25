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
targets="filter_file parquet_form parquet_file key_text filter_stream capture text_inputs decompress retrieval_file"
for t in $(cargo +nightly fuzz list); do
  [ "$t" = make_seeds ] && continue
  case " $targets " in
    *" $t "*) ;;
    *) echo "FUZZ FAILURE: target $t is not listed in fuzz/ci.sh"; exit 1 ;;
  esac
done
for t in $targets; do
  mkdir -p "corpus/$t"
  echo "fuzzing $t for ${secs}s ($SECONDS s)"
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 2>&1 \
    | grep -E "^(Done|==|SUMMARY|.*(panicked|ERROR|crash|timeout|oom))" || true
  # libFuzzer exits non-zero on a crash, timeout or OOM; `set -o pipefail` does not see it through
  # grep, so check for artifacts instead.
  if compgen -G "artifacts/$t/*" >/dev/null; then
    echo "FUZZ FAILURE in $t: $(ls artifacts/$t)"
    exit 1
  fi
done
echo "fuzz smoke run done ($SECONDS s)"
