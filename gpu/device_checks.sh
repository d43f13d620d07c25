#!/usr/bin/env bash
# The GPU checks of bloomlanes-gpu (gpu/DEVICE_CHECKS.md says what they show and what passes).
#
#   gpu/device_checks.sh prepare   # here, without a GPU: builds the test and bench binaries,
#                                  # strips them into carry/gpu/, and compiles the sm_90 kernels
#                                  # of every layout into carry/gpu/kernel-cache/ (NVRTC only)
#   gpu/device_checks.sh run       # on the GPU machine, from the repository root, with
#                                  # carry/gpu carried: the tests, then the benchmark rows;
#                                  # logs and tables into $OUT (or carry/gpu/out)
#   gpu/device_checks.sh run perf  # the optional second phase, alone: every insert path and
#                                  # lookup path beside `auto` from 1 MiB to 64 GiB (issue #25;
#                                  # needs 70.25 GiB of device memory at 64 GiB, skips a size that
#                                  # does not fit); about 1 minute
set -euo pipefail
dir=carry/gpu

# The lib folder of the nvidia-cuda-nvrtc wheel (CUDA 13): the first of the `nvidia` namespace
# package's folders that holds it (a namespace package can span several site folders).
nvrtc_dir() {
  python3 -c 'import glob, nvidia, os; print(next((d for p in nvidia.__path__ for d in [os.path.join(p, "cu13", "lib")] if glob.glob(os.path.join(d, "libnvrtc.so*"))), ""))'
}

prepare() {
  mkdir -p "$dir/kernel-cache"
  local list
  # Shown as it builds; `tee /dev/stderr` would truncate a log file that stderr is sent to.
  list=$(cargo test -p bloomlanes-gpu --release --no-run 2>&1 | tee >(cat >&2))
  for t in gpu kinds lookup borrowed retrieval; do
    local bin
    bin=$(printf '%s\n' "$list" | sed -n "s|.*(\(target/release/deps/$t-[0-9a-f]*\))|\1|p" | tail -1)
    strip -o "$dir/$t" "$bin"
  done
  local bench
  bench=$(cargo bench -p bloomlanes-gpu --no-run 2>&1 | sed -n 's|.*(\(target/release/deps/gpu_bench-[0-9a-f]*\))|\1|p' | tail -1)
  strip -o "$dir/gpu_bench" "$bench"
  # The compile test fills the cache with the sm_90 CUBIN and PTX of every layout and module
  # (static, window, cells, retrieval).
  BLOOMLANES_NVRTC="${BLOOMLANES_NVRTC:-$(nvrtc_dir)}" \
    BLOOMLANES_KERNEL_CACHE="$PWD/$dir/kernel-cache" \
    cargo test -p bloomlanes-gpu --release --test source -- nvrtc_compiles_every_layout
  ls -la "$dir" "$dir/kernel-cache"
  du -sh "$dir"
}

setup() {
  out="${OUT:-$dir/out}"
  mkdir -p "$out"
  export BLOOMLANES_NVRTC="${BLOOMLANES_NVRTC:-$(nvrtc_dir)}"
  # Loaded instead of compiled when the NVRTC version matches (else compiled: a layout's static
  # module ~4 s, its cell module ~12 s, on first use).
  export BLOOMLANES_KERNEL_CACHE="$PWD/$dir/kernel-cache"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/device.txt"
}

# Fails (after listing them) if any of the logs `$@` has a `SKIP:` line: on the GPU machine that
# means a check found no GPU or no NVRTC and verified nothing, though its binary passed.
no_skips() {
  if grep -l '^SKIP:' "$@"; then
    echo "!! the logs above have SKIP lines: those checks did not run" >&2
    return 1
  fi
}

# Phase 2 (issue #25): every insert path by name beside `auto` at 1 MiB, 256 MiB, 2 GiB, 8 GiB,
# 32 GiB and 64 GiB (8x32, 2^28 device keys, each insert checked), the cost model's estimates,
# every lookup path beside `auto`, and the radix insert by partition size past L2.
perf() {
  setup
  echo "== gpu_bench SECTIONS=insert"
  timeout 300 "$dir/gpu_bench" SECTIONS=insert REPS=3 2>&1 | tee "$out/bench_insert.md"
  no_skips "$out/bench_insert.md"
}

run() {
  setup
  local status=0
  for t in gpu kinds lookup borrowed retrieval; do
    echo "== $t"
    # The tests of one binary share the loaded kernels; 4 threads keep the GPU busy.
    if ! timeout 420 "$dir/$t" --test-threads=4 2>&1 | tee "$out/test_$t.log"; then
      status=1
    fi
  done
  echo "== gpu_bench SECTIONS=spatial"
  timeout 300 "$dir/gpu_bench" SECTIONS=spatial REPS=3 2>&1 | tee "$out/bench_spatial.md" || status=1
  echo "== gpu_bench SECTIONS=static,counting at 2 GiB, 8x32 (regression check)"
  timeout 240 "$dir/gpu_bench" SECTIONS=static,counting SIZES=2G LAYOUTS=8x32 PART_SWEEP= \
    KEYS_LOG2=28 REPS=3 2>&1 | tee "$out/bench_static_counting.md" || status=1
  no_skips "$out"/test_*.log "$out"/bench_*.md || status=1
  return "$status"
}

case "${1:-} ${2:-}" in
  "prepare ") prepare ;;
  "run ") run ;;
  "run perf") perf ;;
  *) echo "usage: $0 prepare | run | run perf" >&2; exit 2 ;;
esac
