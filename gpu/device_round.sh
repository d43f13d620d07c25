#!/usr/bin/env bash
# Prepared here: `gpu/device_checks.sh prepare` (carry/gpu), the previous round's stripped
# gpu_bench in carry/base/ and the cuco-2026 peer's bench_cuco (built with nvcc 13.0 from
# ../shared/peers/cuco-2026, see its README) in carry/cuco/. On the device:
#   run(command="bash gpu/device_round.sh", carry=["carry"], timeout_s=590)
# One device call: every GPU check and benchmark of this round, in priority order, each step
# time-boxed, every log under $OUT (at most 8 files come back).
#   tests.log      the five GPU test binaries (integration branch)
#   bench_kinds.md spatial, static+counting (2 GiB) and retrieval (1 GiB) sections
#   bench_insert.md every insert path beside auto, 1 MiB .. 64 GiB (issue #25)
#   peers.md       our static 8x32 at 256M..2G, 2^28 keys, beside cuco-2026 (same run) and the
#                  previous round's binary (A/B)
#   cuco.csv, cuco_fpr.csv, cuco.log, device.txt
set -uo pipefail
cd "$(dirname "$0")/../carry"
here=$PWD
out=${OUT:-$here/out}; mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
export BLOOMLANES_NVRTC=$(python3 -c 'import glob, nvidia, os; print(next((d for p in nvidia.__path__ for d in [os.path.join(p, "cu13", "lib")] if glob.glob(os.path.join(d, "libnvrtc.so*"))), ""))' 2>/dev/null)
export BLOOMLANES_KERNEL_CACHE=$here/gpu/kernel-cache
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; lscpu | grep -E "Model name|^CPU\(s\)"; echo "nvrtc: $BLOOMLANES_NVRTC"; } > "$out/device.txt" 2>&1
cat "$out/device.txt"

stamp "tests"
for t in gpu kinds lookup borrowed retrieval; do
  echo "== $t" >> "$out/tests.log"
  timeout 90 gpu/$t --test-threads=4 >> "$out/tests.log" 2>&1; echo "== $t exit $?" >> "$out/tests.log"
done
grep -E "^== |test result|FAILED|panicked|^SKIP" "$out/tests.log"

stamp "spatial, static+counting, retrieval benches"
timeout 150 gpu/gpu_bench SECTIONS=spatial SPATIAL_SIZES=256M,2G SPATIAL_BITS=4,8 REPS=3 > "$out/bench_kinds.md" 2>&1
timeout 60 gpu/gpu_bench SECTIONS=static,counting SIZES=2G LAYOUTS=8x32 PART_SWEEP= KEYS_LOG2=28 REPS=3 >> "$out/bench_kinds.md" 2>&1
timeout 90 gpu/gpu_bench SECTIONS=retrieval REPS=3 >> "$out/bench_kinds.md" 2>&1
stamp "insert paths"
timeout 120 gpu/gpu_bench SECTIONS=insert REPS=3 > "$out/bench_insert.md" 2>&1

stamp "peers: ours, base, cuco-2026 at 256M..2G, 2^28 keys"
{ echo "## this branch"; timeout 60 gpu/gpu_bench SECTIONS=static SIZES=256M,512M,1G,2G LAYOUTS=8x32 PART_SWEEP= KEYS_LOG2=28 REPS=5 2>&1;
  echo "## previous round (main 5d76a1c)"; BLOOMLANES_KERNEL_CACHE= timeout 75 base/gpu_bench SECTIONS=static SIZES=256M,512M,1G,2G LAYOUTS=8x32 PART_SWEEP= KEYS_LOG2=28 REPS=5 2>&1; } > "$out/peers.md"
( cd cuco && timeout 90 ./bench_cuco --bits /tmp/cuco_bits.bin --fpr "$out/cuco_fpr.csv" --log2n 28 --reps 5 \
    --sizes 268435456,536870912,1073741824,2147483648 --policies arrow,param_fast,sbf512_k16 \
    > "$out/cuco.csv" 2> "$out/cuco.log" )
cat "$out/cuco.csv"
stamp "done"
