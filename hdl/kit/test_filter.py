"""cocotb test bench of a bloomlanes filter's AXI wrapper (<top>_axis), exported with the RTL.

Scoreboard: model.py (written from docs/FORMAT.md). Random operation mixes on every port with
random gaps and random backpressure on the AXI4-Stream interfaces (inserts, lookups, no-ops and
clears of a static filter; inserts, lookups, deletes, refused deletes and saturated counters of a
counting one; lookups of keys loaded into a retrieval table, of absent keys and no-ops);
AXI4-Lite counters, bank read-back, clear and run-time load. Parameters come from config.json
beside this file (kind, cell and answer widths, ports, registers, a retrieval table's shape)."""

import json
import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

import model

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = json.load(open(os.path.join(HERE, "config.json")))
REG = CFG["registers"]
OPS = int(os.environ.get("BLOOMLANES_OPS", CFG["default_ops"]))
KIND = CFG.get("kind", "static")
LOOKUP, INSERT, OP2, NOP = 0, 1, 2, 3
CELL_BITS = CFG.get("cell_bits", 1)
ANS_MASK = (1 << CFG.get("answer_bits", 1)) - 1
VALUE_BITS = CFG.get("value_bits", 0)
ENTRY_WORDS = CFG.get("entry_words", 1)


class Bench:
    def __init__(self, dut):
        self.dut = dut
        self.ports = CFG["ports"]
        self.tag_bits = CFG["tag_bits"]
        self.mode = CFG["key_mode"]
        self.key_bytes = CFG["key_bytes"]
        self.model = new_model()
        self.rng = random.Random(CFG.get("random_seed", 1))
        self.cycle = 0
        self.counts = {"lookups": 0, "hits": 0, "inserts": 0, "op2s": 0}
        self.pool = []

    def sig(self, name):
        return getattr(self.dut, name)

    async def start(self, clear=True):
        cocotb.start_soon(Clock(self.dut.aclk, 10, unit="ns").start())
        d = self.dut
        d.aresetn.value = 0
        for p in range(self.ports):
            self.sig(f"s{p}_axis_tvalid").value = 0
            self.sig(f"s{p}_axis_tdata").value = 0
            self.sig(f"s{p}_axis_tuser").value = 0
            self.sig(f"s{p}_axis_tlast").value = 0
            self.sig(f"m{p}_axis_tready").value = 0
        for s in ["awvalid", "wvalid", "bready", "arvalid", "rready"]:
            self.sig(f"s_axil_{s}").value = 0
        d.s_axil_awaddr.value = 0
        d.s_axil_araddr.value = 0
        d.s_axil_wdata.value = 0
        d.s_axil_wstrb.value = 0
        for _ in range(5):
            await RisingEdge(d.aclk)
        d.aresetn.value = 1
        for _ in range(3):
            await RisingEdge(d.aclk)
        if clear:
            # The banks keep their contents across a reset (and across tests): start empty.
            await self.axil_write(REG["CTRL"], 3)

    # ---- keys
    def random_key(self):
        if self.mode == "prehashed":
            return self.rng.getrandbits(64)
        n = self.key_bytes if self.mode == "bytes" else self.rng.randint(0, self.key_bytes)
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def key_hash(self, key):
        return key if self.mode == "prehashed" else self.model.hash_key(key)

    def fields(self, op, tag, key, value=0):
        """(tdata, tuser) of an operation: tuser = {value (spatial), tag, length (variable keys),
        op}."""
        if self.mode == "prehashed":
            tdata, length = key, 0
        else:
            # Bytes at and above the length are garbage on purpose: the hardware must ignore them.
            pad = self.key_bytes - len(key)
            raw = key + bytes(self.rng.getrandbits(8) for _ in range(pad))
            tdata = int.from_bytes(raw, "little")
            # Only variable-length keys have a length field; fixed-width keys go {tag, op}.
            length = len(key) if self.mode == "var" else 0
        tag_lo = 2 + (7 if self.mode == "var" else 0)
        return tdata, (value << (tag_lo + self.tag_bits)) | (tag << tag_lo) | (length << 2) | op

    def next_op(self, port):
        r = self.rng.random()
        if port == 0 and r < 0.45:
            # Counting: inserts of keys already in often, so that counters saturate.
            k = self.rng.choice(self.pool) if KIND == "counting" and self.pool and r < 0.1 else self.random_key()
            if KIND != "retrieval":  # a retrieval table's insert is a no-op
                self.pool.append(k)
            return INSERT, k
        if port == 0 and r < 0.452:
            return NOP, self.random_key()
        if port == 0 and r < 0.4525 and self.allow_clear and KIND == "static":
            self.pool.clear()
            return OP2, self.random_key()
        if port == 0 and r < 0.62 and KIND == "counting":
            # Deletes: of keys inserted (their counters fall, sometimes to 0) and of others
            # (refused unless every counter of the key is positive).
            return OP2, self.rng.choice(self.pool) if self.pool and r < 0.58 else self.random_key()
        if self.pool and self.rng.random() < 0.5:
            return LOOKUP, self.rng.choice(self.pool)
        return LOOKUP, self.random_key()

    # ---- streams
    async def run_ops(self, n_per_port, valid_pct, ready_pct, allow_clear=True, ops=None):
        """Drives n operations per port (or the given lists) and checks every answer."""
        d = self.dut
        self.allow_clear = allow_clear
        P = self.ports
        todo = ops or [[self.next_op(p) for _ in range(n_per_port)] for p in range(P)]
        idx = [0] * P
        offered = [None] * P
        expect = [deque() for _ in range(P)]
        got = [0] * P
        fired = [False] * P
        results = [[] for _ in range(P)]
        limit = 200 * (sum(len(t) for t in todo) + 10) + 20 * CFG["clear_cycles"] + 10000
        while any(got[p] < len(todo[p]) for p in range(P)):
            await RisingEdge(d.aclk)
            self.cycle += 1
            if self.cycle > limit:
                raise AssertionError(f"timeout: answers {got} of {[len(t) for t in todo]}")
            for p in range(P):
                if offered[p] is None or fired[p]:
                    offered[p] = None
                    if idx[p] < len(todo[p]) and self.rng.random() * 100 < valid_pct:
                        op, key = todo[p][idx[p]]
                        tag = self.rng.getrandbits(self.tag_bits)
                        last = self.rng.getrandbits(1)
                        value = self.rng.randint(1, (1 << VALUE_BITS) - 1) if VALUE_BITS else 0
                        tdata, tuser = self.fields(op, tag, key, value)
                        self.sig(f"s{p}_axis_tdata").value = tdata
                        self.sig(f"s{p}_axis_tuser").value = tuser
                        self.sig(f"s{p}_axis_tlast").value = last
                        offered[p] = (op, key, tag, last, value)
                        idx[p] += 1
                    self.sig(f"s{p}_axis_tvalid").value = int(offered[p] is not None)
                self.sig(f"m{p}_axis_tready").value = int(self.rng.random() * 100 < ready_pct)
            await FallingEdge(d.aclk)
            await ReadOnly()
            accepted = []
            for p in range(P):
                fired[p] = offered[p] is not None and int(self.sig(f"s{p}_axis_tready").value) == 1
                if fired[p]:
                    accepted.append(p)
                if int(self.sig(f"m{p}_axis_tvalid").value) and int(self.sig(f"m{p}_axis_tready").value):
                    assert expect[p], f"port {p}: answer without an operation (cycle {self.cycle})"
                    tag, hit, last = expect[p].popleft()
                    got_hit = int(self.sig(f"m{p}_axis_tdata").value) & ANS_MASK
                    got_tag = int(self.sig(f"m{p}_axis_tuser").value)
                    got_last = int(self.sig(f"m{p}_axis_tlast").value)
                    assert (got_tag, got_hit, got_last) == (tag, hit, last), (
                        f"port {p} answer {got[p]} (cycle {self.cycle}): tag/hit/tlast "
                        f"{got_tag:#x}/{got_hit}/{got_last}, model says {tag:#x}/{hit}/{last}")
                    results[p].append(hit)
                    got[p] += 1
            # Same cycle: lookups of ports 1.. see the contents before port 0's operation.
            for p in sorted(accepted, key=lambda q: q == 0):
                op, key, tag, last, value = offered[p]
                if p > 0:
                    op = LOOKUP  # ports 1.. look up whatever op says
                hit = self.model.apply(op, self.key_hash(key), value)
                if op == LOOKUP:
                    self.counts["lookups"] += 1
                    self.counts["hits"] += int(hit != 0)
                elif op == INSERT:
                    self.counts["inserts"] += 1
                elif op == OP2 and p == 0:
                    self.counts["op2s"] += 1
                expect[p].append((tag, hit, last))
        await RisingEdge(d.aclk)
        for p in range(P):
            self.sig(f"s{p}_axis_tvalid").value = 0
        return results

    # ---- AXI4-Lite
    async def axil_write(self, addr, data, timeout=None):
        d = self.dut
        await RisingEdge(d.aclk)
        d.s_axil_awaddr.value = addr
        d.s_axil_wdata.value = data
        d.s_axil_wstrb.value = 0xF
        d.s_axil_awvalid.value = 1
        d.s_axil_wvalid.value = 1
        d.s_axil_bready.value = 1
        taken = False
        for _ in range(timeout or 20 * CFG["latency"] + 2 * CFG["clear_cycles"] + 1000):
            await FallingEdge(d.aclk)
            await ReadOnly()
            if not taken and int(d.s_axil_awready.value):
                taken = True
            done = int(d.s_axil_bvalid.value)
            await RisingEdge(d.aclk)
            if taken:
                d.s_axil_awvalid.value = 0
                d.s_axil_wvalid.value = 0
            if done:
                d.s_axil_bready.value = 0
                return
        raise AssertionError(f"AXI4-Lite write to {addr:#x}: no response")

    async def axil_read(self, addr):
        d = self.dut
        await RisingEdge(d.aclk)
        d.s_axil_araddr.value = addr
        d.s_axil_arvalid.value = 1
        d.s_axil_rready.value = 1
        taken = False
        for _ in range(20 * CFG["latency"] + 1000):
            await FallingEdge(d.aclk)
            await ReadOnly()
            if not taken and int(d.s_axil_arready.value):
                taken = True
            done = int(d.s_axil_rvalid.value)
            data = int(d.s_axil_rdata.value) if done else None
            await RisingEdge(d.aclk)
            if taken:
                d.s_axil_arvalid.value = 0
            if done:
                d.s_axil_rready.value = 0
                return data
        raise AssertionError(f"AXI4-Lite read of {addr:#x}: no response")

    async def read_data(self):
        """The entry at BANK_ADDR (BANK_DATA, then the BANK_HI words it latched); BANK_ADDR
        advances."""
        got = await self.axil_read(REG["BANK_DATA"])
        for i in range(1, ENTRY_WORDS):
            got |= await self.axil_read(REG["BANK_HI"] + 4 * (i - 1)) << (32 * i)
        return got

    async def write_entry(self, addr, value):
        """Writes every lane's cell of entry addr (BANK_HI words first, then BANK_DATA)."""
        await self.axil_write(REG["BANK_ADDR"], addr)
        for i in range(1, ENTRY_WORDS):
            await self.axil_write(REG["BANK_HI"] + 4 * (i - 1), (value >> (32 * i)) & 0xFFFFFFFF)
        await self.axil_write(REG["BANK_DATA"], value & 0xFFFFFFFF)

    async def store_keys(self, model_, n):
        """Retrieval: makes n random keys present in model_ with random values (model.Retrieval.
        insert_hash) and writes the entries they touched through BANK_DATA; returns the keys
        stored."""
        stored = []
        for _ in range(n):
            k = self.random_key()
            if model_.insert_hash(self.key_hash(k), self.rng.getrandbits(model_.v)):
                stored.append(k)
        addrs = sorted({a for k in stored for a in model_.positions(self.key_hash(k))})
        for a in addrs:
            await self.write_entry(a, model_.entry(a))
        return stored

    async def check_entries(self, addrs):
        for a in addrs:
            await self.axil_write(REG["BANK_ADDR"], a)
            got = await self.read_data()
            assert got == self.model.entry(a), f"bank entry {a}: {got:#x}, model {self.model.entry(a):#x}"


def new_model():
    r = CFG.get("retrieval")
    if r:
        return model.Retrieval(CFG["seed"], r["arity"], r["segment_bits"], r["segment_count"],
                               r["seed"], r["value_bits"], r["check_bits"])
    return model.Filter(CFG["lanes"], CFG["word_bits"], CFG["blocks"], CFG["seed"], CELL_BITS, KIND)


def entries(bench):
    return CFG.get("depth", CFG["blocks"] * CFG["word_bits"])


@cocotb.test()
async def random_ops_with_backpressure(dut):
    """Random inserts, lookups, no-ops and clears (static) or deletes (counting) on port 0,
    lookups on the other ports; first at full rate (one operation per clock per port), then with
    random gaps and backpressure. A retrieval table first gets keys loaded through BANK_DATA
    (its inserts change nothing), which the lookups then find."""
    b = Bench(dut)
    await b.start()
    if KIND == "retrieval":
        b.pool.extend(await b.store_keys(b.model, 60))
    n = OPS
    c0 = b.cycle
    await b.run_ops(max(n // 10, 50), 100, 100, allow_clear=False)
    full_rate_cycles = b.cycle - c0
    await b.run_ops(n, 70, 60)
    await b.run_ops(n // 4, 100, 30)
    dut._log.info(f"{b.counts} after {b.cycle} cycles; full-rate phase took {full_rate_cycles} cycles")
    # Counters of the register block equal the scoreboard's.
    assert await b.axil_read(REG["LOOKUPS"]) == b.counts["lookups"]
    assert await b.axil_read(REG["HITS"]) == b.counts["hits"]
    assert await b.axil_read(REG["INSERTS"]) == b.counts["inserts"]
    assert await b.axil_read(REG["OP2S"]) == b.counts["op2s"]


@cocotb.test()
async def register_block(dut):
    """INFO and BLOCKS, bank read-back after inserts, clear by CTRL, run-time load by BANK_DATA."""
    b = Bench(dut)
    await b.start()
    info = await b.axil_read(REG["INFO"])
    assert info & 0xFF == CFG["lanes"] and (info >> 8) & 0xFF == CFG["word_bits"], hex(info)
    assert (info >> 16) & 0xF == CFG["ports"], hex(info)
    assert await b.axil_read(REG["BLOCKS"]) == CFG["blocks"]
    cells = await b.axil_read(REG["CELLS"])
    assert cells & 0xFF == CELL_BITS and (cells >> 8) & 0xFF == CFG["answer_bits"], hex(cells)
    # Inserts through the stream, then read back the touched entries and some others.
    keys = [b.random_key() for _ in range(40)]
    await b.run_ops(0, 100, 100, ops=[[(INSERT, k) for k in keys]] + [[] for _ in range(b.ports - 1)])
    touched = sorted({a for k in keys for a in b.model.positions(b.key_hash(k))})
    sample = touched[:64] + [b.rng.randrange(entries(b)) for _ in range(16)]
    await b.check_entries(sample)
    # Consecutive reads advance BANK_ADDR.
    start = touched[0]
    await b.axil_write(REG["BANK_ADDR"], start)
    for a in range(start, min(start + 8, entries(b))):
        assert await b.read_data() == b.model.entry(a)
    # Clear through CTRL: the write response comes when every entry is zero.
    await b.axil_write(REG["CTRL"], 1)
    b.model.clear()
    await b.check_entries(sample[:16])
    look = [[(LOOKUP, k) for k in keys]] + [[] for _ in range(b.ports - 1)]
    res = await b.run_ops(0, 100, 100, ops=look)
    # (A cleared retrieval table answers what zero cells say, as the model does.)
    assert KIND == "retrieval" or sum(res[0]) == 0, "lookups after a clear must miss"
    # Run-time load: a filter built in the model, written entry by entry, answers like it.
    other = new_model()
    if KIND == "retrieval":
        keys2 = await b.store_keys(other, 30)
    else:
        keys2 = [b.random_key() for _ in range(30)]
        for k in keys2:
            other.insert_hash(b.key_hash(k))
        addrs = sorted({a for k in keys2 for a in other.positions(b.key_hash(k))})
        for a in addrs:
            await b.write_entry(a, other.entry(a))
    b.model = other
    probe = keys2 + [b.random_key() for _ in range(30)]
    look = [[(LOOKUP, k) for k in probe]] + [[(LOOKUP, k) for k in probe] for _ in range(b.ports - 1)]
    res = await b.run_ops(0, 100, 100, ops=look)
    for p in range(b.ports):
        assert all(res[p][: len(keys2)]), f"port {p}: a loaded key missed"
    # Counters reset by CTRL bit 1.
    await b.axil_write(REG["CTRL"], 2)
    assert await b.axil_read(REG["LOOKUPS"]) == 0


@cocotb.test()
async def loaded_banks_answer_like_the_files(dut):
    """With LOAD_BANKS = 1 the banks start from the exported bank files (the filter exported)."""
    if not os.environ.get("BLOOMLANES_LOAD_BANKS"):
        dut._log.info("SKIP: built without LOAD_BANKS")
        return
    b = Bench(dut)
    rtl = os.path.join(HERE, CFG["rtl_dir"])
    b.model.load_bank_files([os.path.join(rtl, f) for f in CFG["bank_files"]],
                            CFG.get("bank_classes") or None)
    await b.start(clear=False)
    # The loaded entries that hold cells read back through BANK_DATA as the files' cells (a
    # design whose banks hold a code of each cell translates on the management port).
    held = [a for a in range(entries(b)) if b.model.entry(a)]
    await b.check_entries(held[:64])
    probe = [b.random_key() for _ in range(200)]
    look = [[(LOOKUP, k) for k in probe] for _ in range(b.ports)]
    await b.run_ops(0, 80, 70, ops=look)
