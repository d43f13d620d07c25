#!/usr/bin/env python3
"""Runs the cocotb bench (test_filter.py) of the exported filter's AXI wrapper in Icarus Verilog.

usage: python3 run.py [--ops N] [--load-banks] [--sim icarus|verilator]
Needs only Python with cocotb (pip install cocotb) and the simulator; not the Rust crate.
Prints 'N passed, N failed' and exits non-zero on any failure."""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print(f"ERROR: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=None, help="random operations per port and phase")
    ap.add_argument("--load-banks", action="store_true", help="start from the exported bank files")
    ap.add_argument("--sim", default=os.environ.get("SIM", "icarus"))
    ap.add_argument("--test", default=None, help="run only this test (a regular expression)")
    a = ap.parse_args()
    cfg_path = os.path.join(HERE, "config.json")
    if not os.path.isfile(cfg_path):
        fail(f"{cfg_path} is missing: export the design again")
    cfg = json.load(open(cfg_path))
    rtl_dir = os.path.normpath(os.path.join(HERE, cfg["rtl_dir"]))
    sources = [os.path.join(rtl_dir, f) for f in cfg["rtl_files"]]
    banks = [os.path.join(rtl_dir, f) for f in cfg["bank_files"]]
    missing = [f for f in sources + (banks if a.load_banks else []) if not os.path.isfile(f)]
    if missing:
        fail("missing files (export writes them all): " + ", ".join(missing))
    try:
        from cocotb_tools.runner import get_results, get_runner
    except ImportError:
        fail("cocotb is not installed: pip install cocotb")
    tool = {"icarus": "iverilog", "verilator": "verilator"}.get(a.sim, a.sim)
    if not shutil.which(tool):
        fail(f"{tool} is not on PATH (Debian: apt-get install {tool})")
    top = cfg["top"] + "_axis"
    build_dir = os.path.join(HERE, "sim_build", f"{a.sim}_{'loaded' if a.load_banks else 'empty'}")
    runner = get_runner(a.sim)
    runner.build(
        sources=sources,
        hdl_toplevel=top,
        build_dir=build_dir,
        parameters={"LOAD_BANKS": int(a.load_banks)},
        timescale=("1ns", "1ps"),
        always=True,
    )
    if a.load_banks:
        for b in banks:
            shutil.copy(b, build_dir)
    env = {"PYTHONPATH": HERE + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if a.ops is not None:
        env["BLOOMLANES_OPS"] = str(a.ops)
    if a.load_banks:
        env["BLOOMLANES_LOAD_BANKS"] = "1"
    os.environ.update(env)
    xml = runner.test(
        test_module="test_filter",
        hdl_toplevel=top,
        build_dir=build_dir,
        test_dir=build_dir,
        extra_env=env,
        test_filter="loaded_banks_answer_like_the_files" if a.load_banks else a.test,
    )
    tests, failed = get_results(xml)
    print(f"cocotb: {tests - failed} passed, {failed} failed")
    sys.exit(1 if failed or tests == 0 else 0)


if __name__ == "__main__":
    main()
