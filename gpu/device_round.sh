#!/usr/bin/env bash
# One device call: every GPU check and benchmark of this round and the 16-core host's CPU rows,
# in priority order, each step time-boxed against one deadline, every log under $OUT (at most 8
# files come back). Prepared here (gpu/DEVICE_CHECKS.md, section 2b, "The round"):
#   carry/gpu     `gpu/device_checks.sh prepare` (test binaries, gpu_bench, kernel cache)
#   carry/bin     bloomlanes (stripped, default features), peers + pf_driver (benches/peers)
#   carry/cuco    ../shared/peers/cuco-2026 (built here on the device's CPU while the GPU tests run)
#   carry/wheel   the Python wheel (abi3), for the GPU tests of the Python package
#   carry/py      python/tests and benches/classify/kinds_classify.py
# On the device:
#   run(command="bash gpu/device_round.sh", carry=["carry"], timeout_s=570)
# Files back: device.txt, tests.log, bench_kinds.md, bench_insert.md, peers.md, cpu16.txt,
# pf.csv, round.log (and bench_cuco, the peer's binary). PEER_SIZES: the peers step's filter
# sizes (default 256M,512M,1G,2G: 8 to 64 bits per key); KIND_SECTIONS the kinds step's
# gpu_bench sections (default spatial retrieval counting lookup). ROUND_STEPS picks steps (default all: tests verify kinds insert peers
# python bench classify pf), e.g. a second call that re-checks a kernel change:
#   run(command="ROUND_STEPS='tests verify kinds bench' bash gpu/device_round.sh", ...)
set -uo pipefail
cd "$(dirname "$0")/../carry"
here=$PWD
out=${OUT:-$here/out}; mkdir -p "$out"
exec > >(tee "$out/round.log") 2>&1
t0=$(date +%s)
deadline=$(( t0 + ${ROUND_SECONDS:-530} ))
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps=" ${ROUND_STEPS:-tests verify kinds insert peers python bench classify pf} "
want() { [[ $steps == *" $1 "* ]]; }
# `box N CMD...`: CMD under a timeout of N seconds or what is left before the deadline.
box() {
  local want=$1 left; shift
  left=$(( deadline - $(date +%s) ))
  if (( left < 5 )); then echo "SKIPPED (deadline): $*"; return 124; fi
  timeout $(( want < left ? want : left )) "$@"
}
export BLOOMLANES_NVRTC=$(python3 -c 'import glob, nvidia, os; print(next((d for p in nvidia.__path__ for d in [os.path.join(p, "cu13", "lib")] if glob.glob(os.path.join(d, "libnvrtc.so*"))), ""))' 2>/dev/null)
export BLOOMLANES_KERNEL_CACHE=$here/gpu/kernel-cache
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv;
  lscpu | grep -E "Model name|^CPU\(s\)|L2|L3|Flags" | cut -c1-400; free -g | head -2;
  echo "nvrtc: $BLOOMLANES_NVRTC"; python3 --version; } > "$out/device.txt" 2>&1
cat "$out/device.txt"

# cuco-2026 builds on one CPU core while the GPU tests run (CUDA 13.0's nvcc, sm_90).
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuco_build=
want peers && ( cd cuco && nice "$NVCC" -O3 -std=c++17 -arch=sm_90 --expt-extended-lambda \
    --expt-relaxed-constexpr -I cuco/include bench_cuco.cu -o bench_cuco > /tmp/cuco_build.log 2>&1;
  echo "cuco build exit $?" >> /tmp/cuco_build.log ) &
want peers && cuco_build=$!

if want tests; then
stamp "GPU tests"
for t in unit gpu kinds lookup borrowed retrieval; do
  echo "== $t" >> "$out/tests.log"
  box 80 gpu/$t --test-threads=4 >> "$out/tests.log" 2>&1; echo "== $t exit $?" >> "$out/tests.log"
done
grep -E "^== |test result|FAILED|panicked|^SKIP" "$out/tests.log"
fi

if want verify; then
stamp "verify: spatial and retrieval on every backend, the GPU included"
for k in spatial retrieval; do
  echo "== verify --kind $k" >> "$out/tests.log"
  box 40 bin/bloomlanes verify --kind $k --keys 1000000 --hdl-keys 0 >> "$out/tests.log" 2>&1
  echo "== verify $k exit $?" >> "$out/tests.log"
done
tail -n 30 "$out/tests.log"
fi

if want kinds; then
stamp "spatial and retrieval against static (GPU)"
: > "$out/bench_kinds.md"
kinds=" ${KIND_SECTIONS:-spatial retrieval counting lookup} "
[[ $kinds == *" spatial "* ]] && box 70 gpu/gpu_bench SECTIONS=spatial SPATIAL_SIZES=256M,2G SPATIAL_BITS=4,8 REPS=3 >> "$out/bench_kinds.md" 2>&1
[[ $kinds == *" retrieval "* ]] && box 45 gpu/gpu_bench SECTIONS=retrieval REPS=3 >> "$out/bench_kinds.md" 2>&1
[[ $kinds == *" counting "* ]] && box 40 gpu/gpu_bench SECTIONS=counting COUNTING_SIZES=2G REPS=3 >> "$out/bench_kinds.md" 2>&1
[[ $kinds == *" lookup "* ]] && box 40 gpu/gpu_bench SECTIONS=lookup LOOKUP_SWEEP= LOOKUP_PART_SWEEP= REPS=3 >> "$out/bench_kinds.md" 2>&1
cat "$out/bench_kinds.md"
fi

if want insert; then
stamp "insert and lookup paths beside auto, 1 MiB .. 64 GiB"
box 110 gpu/gpu_bench SECTIONS=insert REPS=3 > "$out/bench_insert.md" 2>&1
cat "$out/bench_insert.md"
fi

if want peers; then
stamp "peers: ours static at 256M..2G, 2^28 keys, beside cuco-2026"
sizes=${PEER_SIZES:-256M,512M,1G,2G}
bytes=$(python3 -c 'import sys; print(",".join(str(int(s[:-1]) << {"K": 10, "M": 20, "G": 30}[s[-1]]) for s in sys.argv[1].split(",")))' "$sizes")
box 60 gpu/gpu_bench SECTIONS=static SIZES=$sizes LAYOUTS=8x32,16x32 PART_SWEEP= KEYS_LOG2=28 REPS=5 > "$out/peers.md" 2>&1
[[ -n $cuco_build ]] && wait "$cuco_build"
{ echo '## cuco-2026 build'; tail -n 5 /tmp/cuco_build.log; } >> "$out/peers.md"
if [[ -x cuco/bench_cuco ]]; then
  ( cd cuco && box 60 ./bench_cuco --bits /tmp/cuco_bits.bin --fpr /tmp/cuco_fpr.csv --log2n 28 --reps 5 \
      --sizes "$bytes" --policies arrow,param_fast,sbf512_k16 \
      > /tmp/cuco.csv 2> /tmp/cuco.err; echo "bench_cuco exit $?" >> /tmp/cuco.err )
  cmp -s cuco/sbbf_ref_1024blocks_keys0-9999.bin /tmp/cuco_bits.bin && echo "cuco arrow bytes == Parquet reference" >> /tmp/cuco.err
  cp cuco/bench_cuco "$out/" 2>/dev/null
  { echo '## cuco.csv'; cat /tmp/cuco.csv; echo '## cuco_fpr.csv'; cat /tmp/cuco_fpr.csv; echo '## cuco stderr'; tail -n 20 /tmp/cuco.err; } >> "$out/peers.md"
fi
cat "$out/peers.md"
fi

if want python; then
stamp "Python package on the GPU (CuPy)"
if python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl >> "$out/tests.log" 2>&1; then
  echo "== python GPU tests" >> "$out/tests.log"
  ( cd py/tests && PYTHONPATH=/tmp/site box 60 python3 -m pytest -q -p no:cacheprovider test_gpu.py test_gpu_kinds.py ) >> "$out/tests.log" 2>&1
  echo "== python exit $?" >> "$out/tests.log"
fi
tail -n 15 "$out/tests.log"
fi

if want bench; then
stamp "bloomlanes bench: every backend and auto, 4 Mi and 64 Mi keys"
{ echo "## bench --keys 4194304"; box 30 bin/bloomlanes bench -q --keys 4194304;
  echo "## bench --keys 67108864"; box 45 bin/bloomlanes bench -q --keys 67108864; } > "$out/cpu16.txt" 2>&1
fi

if want classify; then
stamp "16-core host: class verdicts against yes/no verdicts"
{ echo "## kinds_classify (10 M packets)";
  box 70 python3 py/kinds_classify.py /tmp/kc --packets 10000000 --rounds 2 --reps 2 "$here/bin/bloomlanes"; } >> "$out/cpu16.txt" 2>&1
fi

if want pf; then
stamp "16-core host: bloomlanes against partitioned-filters at 1 GiB"
box 80 python3 py/peers/run.py --bin bin --out "$out/pf.csv" --sizes 1G --threads 1,16 --rounds 2 \
  --impls bloomlanes,bloomlanes:partitioned --spatial-keys 0 >> "$out/cpu16.txt" 2>&1
python3 py/peers/plot.py "$out/pf.csv" --table >> "$out/cpu16.txt" 2>&1
cat "$out/cpu16.txt"
fi

stamp "done"
