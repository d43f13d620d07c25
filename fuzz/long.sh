#!/usr/bin/env bash
# Long fuzz runs (RELIABILITY.md): each target named (default: all) for FUZZ_SECONDS (default
# 600) seconds, one after another; logs in fuzz/logs/<target>.log, a summary line per target.
set -euo pipefail
cd "$(dirname "$0")"
secs="${FUZZ_SECONDS:-600}"
cargo +nightly fuzz build
cargo +nightly run -q --release --bin make_seeds -- corpus
mkdir -p logs
targets=("$@")
[ ${#targets[@]} -eq 0 ] && mapfile -t targets < <(cargo +nightly fuzz list | grep -vx make_seeds)
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  rc=0
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 >"logs/$t.log" 2>&1 || rc=$?
  last=$(grep -E '^#[0-9]+' "logs/$t.log" | tail -1 || true)
  echo "$t: exit $rc; $last; artifacts: $(ls "artifacts/$t" 2>/dev/null | wc -l)"
done
