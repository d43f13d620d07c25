#!/usr/bin/env python3
"""Class verdicts against yes/no verdicts (issue #23): `bloomlanes classify` of one generated
capture against a static filter, a spatial filter (3 classes) and a retrieval table (8-bit
values) of the same rules, each binary and kind in turn, rounds interleaved; wall and CPU time
(children) per run, medians and ranges, and each kind's rate as a share of the static filter's
with the same binary.

    python3 benches/classify/kinds_classify.py DIR [--packets N] [--flows F] [--rounds R] BIN...

The capture (N packets over F UDP flows, rules for every second flow) and the filters are made
in DIR on first use, with the first binary. Each round reads a fresh copy of the capture: on the
2-core development VM a capture whose page cache has aged (minutes after it was written) walks
2-3 times slower, which dilutes the kinds' own cost; the copy keeps every round in the same state.
"""
import argparse
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import time

KINDS = ("static", "spatial", "retrieval")


def ip(i):
    return bytes([10, (i >> 16) & 255, (i >> 8) & 255, i & 255])


def frame(i):
    src, dst = ip(i), bytes([10, 200, 0, 1])
    udp = struct.pack(">HHHH", 1024 + (i % 50000), 53, 8 + 18, 0) + b"x" * 18
    iph = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
    return b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00" + iph + udp


def flow_text(i):
    a = ip(i)
    return f"{a[0]}.{a[1]}.{a[2]}.{a[3]}:{1024 + (i % 50000)} -> 10.200.0.1:53 proto 17"


def make_inputs(d, packets, flows, binary):
    cap = os.path.join(d, "k.pcap")
    if not os.path.exists(cap):
        frames = [frame(i) for i in range(flows)]
        rnd = random.Random(7)
        with open(cap + ".part", "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            out = []
            for p in range(packets):
                fr = frames[rnd.randrange(flows)]
                out.append(struct.pack("<IIII", 1_700_000_000 + p // 1000, p % 1000, len(fr), len(fr)))
                out.append(fr)
                if len(out) > 200_000:
                    f.write(b"".join(out))
                    out = []
            f.write(b"".join(out))
        os.replace(cap + ".part", cap)
    rules, values = os.path.join(d, "rules.tsv"), os.path.join(d, "values.tsv")
    labels = ["allow", "mirror", "deny"]
    with open(rules, "w") as f:
        f.write("flow\tlabel\n")
        f.writelines(f"{flow_text(i)}\t{labels[(i // 2) % 3]}\n" for i in range(0, flows, 2))
    with open(values, "w") as f:
        f.write("flow\tv\n")
        f.writelines(f"{flow_text(i)}\t{(i // 2) % 200 + 1}\n" for i in range(0, flows, 2))
    common = ["--csv-column", "flow", "--key-type", "flow", "--fpp", "0.01"]
    builds = {
        "static": [rules, "--format", "csv"],
        "spatial": [rules, "--kind", "spatial", "--class-column", "label"],
        "retrieval": [values, "--kind", "retrieval", "--value-column", "v", "--value-bits", "8"],
    }
    for kind, args in builds.items():
        out = os.path.join(d, kind + ".blf")
        if not os.path.exists(out):
            cmd = [binary, "build", *args, *common, "-o", out]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return cap


def run(binary, filt, cap):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([binary, "classify", filt, cap], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("dir")
    a.add_argument("binaries", nargs="+")
    a.add_argument("--packets", type=int, default=3_000_000)
    a.add_argument("--flows", type=int, default=200_000)
    a.add_argument("--rounds", type=int, default=7)
    a.add_argument("--reps", type=int, default=3, help="runs of each binary and kind a round")
    o = a.parse_args()
    os.makedirs(o.dir, exist_ok=True)
    cap = make_inputs(o.dir, o.packets, o.flows, o.binaries[0])
    fresh = os.path.join(o.dir, "fresh.pcap")
    res = {(b, k): [] for b in o.binaries for k in KINDS}
    for _ in range(o.rounds):
        shutil.copyfile(cap, fresh + ".part")
        os.replace(fresh + ".part", fresh)
        for _ in range(o.reps):
            for b in o.binaries:
                for k in KINDS:
                    res[(b, k)].append(run(b, os.path.join(o.dir, k + ".blf"), fresh))
    print(f"{o.packets} packets, {o.flows} flows, {o.rounds} rounds x {o.reps} reps, "
          f"load {os.getloadavg()[0]:.1f} at the end")
    for b in o.binaries:
        base_w = statistics.median(w for w, _ in res[(b, "static")])
        base_c = statistics.median(c for _, c in res[(b, "static")])
        for k in KINDS:
            ws = sorted(w for w, _ in res[(b, k)])
            cs = sorted(c for _, c in res[(b, k)])
            mw, mc = statistics.median(ws), statistics.median(cs)
            print(f"{b} {k:9s} wall {mw:.4f} s [{ws[0]:.4f}-{ws[-1]:.4f}] "
                  f"{o.packets / mw / 1e6:6.1f} Mpps ({base_w / mw:.3f} of static); "
                  f"CPU {mc:.4f} s [{cs[0]:.4f}-{cs[-1]:.4f}] "
                  f"{o.packets / mc / 1e6:6.1f} Mpps per CPU-second ({base_c / mc:.3f} of static)")


if __name__ == "__main__":
    main()
