//! The cell kernels on the CPU: the direct-shape update kernel of every operation (one operand,
//! or one per key at grouped positions; a counting delete's recorded statuses and their undo) and
//! both reductions (1-, 2- and 4-byte answers) on every layout and 4/8/16-bit cells,
//! bit-identical to `CellsMut`.

use bloomlanes_core::cell::reduce_cells;
use bloomlanes_core::{CellBits, CellReduce, CellUpdate, Layout, Params, SpatialFilter};
use bloomlanes_gpu::KernelModule;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::{ctas, hashes, Arg, Emulator, Emulators, Job, KEYS_PER_THREAD, THREADS};

const ACCEPTED: u32 = 1 << 31;
/// The kernels' `flags` (`kernel.rs`).
const RECORD: u32 = 1;
const LANES: u32 = 2;

/// The update kernel of `u` (the entry points of `entry.rs`).
fn update_index(u: CellUpdate) -> &'static str {
    match u {
        CellUpdate::Set => "bl_cells_update_set",
        CellUpdate::Increment => "bl_cells_update_inc",
        CellUpdate::Decrement => "bl_cells_update_dec",
        CellUpdate::Decay => "bl_cells_update_decay",
        CellUpdate::Max(_) => "bl_cells_update_max",
    }
}

fn reduce_index(r: CellReduce) -> &'static str {
    match r {
        CellReduce::AllNonZero => "bl_cells_reduce_all",
        CellReduce::Min => "bl_cells_reduce_min",
    }
}

/// Runs `job`'s kernel over the keys (the launch of `cells.rs`: `BL_THREADS × BL_KPT` keys per
/// CTA); returns (image, cells, status, stats, out).
fn run(emu: &Emulator, job: &CellJob<'_>) -> Result_ {
    let n = job.keys.len() as u64;
    let mut j = Job::default();
    let (image, cells) = (j.buffer(job.image), j.buffer(job.cells));
    let keys = j.buffer(job.keys);
    let values = job.values.map_or(Arg::Null, |v| j.buffer(v));
    let pos = job.pos.map_or(Arg::Null, |v| j.buffer(v));
    let status = j.buffer(&job.status);
    let stats = j.buffer(&[0u64; 2]);
    let out = j.buffer(&vec![0u8; job.keys.len() * 4 + 4]);
    let status_arg = if job.flags != 0 { status } else { Arg::Null };
    let v = |x: u64| Arg::Val(x);
    j.launch(
        job.kernel,
        ctas(n, THREADS * KEYS_PER_THREAD),
        0,
        &[
            image,
            cells,
            v(u64::from(job.params.blocks)),
            keys,
            v(n),
            v(job.params.seed),
            v(job.mode),
            v(u64::from(job.bits.bits())),
            v(u64::from(job.value)),
            values,
            pos,
            status_arg,
            v(u64::from(job.flags)),
            stats,
            Arg::Null,
            v(0),
            v(0),
            out,
            v(u64::from(job.out_bytes)),
        ],
    );
    let got = emu.run(&j);
    let bytes: Vec<u8> = got.get(out);
    let width = job.out_bytes.max(1) as usize;
    Result_ {
        image: got.get(image),
        cells: got.get(cells),
        status: got.get(status),
        zeros: got.get::<u64>(stats)[1],
        out: (0..job.keys.len())
            .map(|i| {
                let mut x = [0u8; 8];
                x[..width].copy_from_slice(&bytes[i * width..(i + 1) * width]);
                u64::from_le_bytes(x)
            })
            .collect(),
    }
}

struct Result_ {
    image: Vec<u32>,
    cells: Vec<u32>,
    status: Vec<u32>,
    zeros: u64,
    out: Vec<u64>,
}

struct CellJob<'a> {
    kernel: &'static str,
    bits: CellBits,
    params: Params,
    keys: &'a [u64],
    mode: u64,
    value: u32,
    flags: u32,
    values: Option<&'a [u32]>,
    pos: Option<&'a [u32]>,
    status: Vec<u32>,
    image: &'a [u32],
    cells: &'a [u32],
    out_bytes: u32,
}

impl<'a> CellJob<'a> {
    fn new(kernel: &'static str, f: &'a SpatialFilter, keys: &'a [u64], mode: u64) -> CellJob<'a> {
        CellJob {
            kernel,
            bits: f.cell_bits(),
            params: *f.params(),
            keys,
            mode,
            value: 0,
            flags: 0,
            values: None,
            pos: None,
            status: vec![0; keys.len()],
            image: f.image_words(),
            cells: f.cell_words(),
            out_bytes: 0,
        }
    }
}

/// A filter of `bits`-bit cells with a varied state: keys at random classes and counts (a
/// spatial filter's storage holds any cells; `CellsMut` applies any update to them).
fn filter(r: &mut impl Rng, layout: Layout, blocks: u32, bits: CellBits) -> SpatialFilter {
    let params = Params::new(layout, blocks).with_seed(r.gen());
    let mut f = SpatialFilter::new(params, bits.bits(), &["one"]).unwrap();
    let mut v = f.as_view_mut();
    for _ in 0..r.gen_range(0..400) {
        let op = match r.gen_range(0..3) {
            0 => CellUpdate::Increment,
            1 => CellUpdate::Max(r.gen_range(0..=bits.max())),
            _ => CellUpdate::Decay,
        };
        v.update_hash(r.gen(), op);
    }
    f
}

#[test]
fn cell_kernels_equal_the_core_when_run_on_the_cpu() {
    let test = "cell_kernels_equal_the_core_when_run_on_the_cpu";
    let Some(emulators) = Emulators::new(test, "cells") else {
        return;
    };
    let mut r = rand::rngs::StdRng::seed_from_u64(0xce11);
    for layout in Layout::ALL {
        let emu = emulators.build(layout, KernelModule::Cells);
        for bits in [CellBits::Four, CellBits::Eight, CellBits::Sixteen] {
            for blocks in [1u32, 5, 333] {
                let case = Case {
                    emu: &emu,
                    layout,
                    blocks,
                    bits,
                    what: format!("{layout} {bits:?} {blocks} blocks"),
                };
                updates(&case, &mut r);
                reductions(&case, &mut r);
                deletes(&case, &mut r);
            }
        }
    }
}

/// One layout, cell width and size the kernels run on.
struct Case<'e> {
    emu: &'e Emulator,
    layout: Layout,
    blocks: u32,
    bits: CellBits,
    what: String,
}

/// Every update, one operand per batch (u64 keys and hashes) or one per key at grouped
/// positions, against `CellsMut::update_hash` key by key.
fn updates(case: &Case<'_>, r: &mut impl Rng) {
    let what = case.what.as_str();
    let max = case.bits.max();
    for u in [
        CellUpdate::Set,
        CellUpdate::Increment,
        CellUpdate::Decrement,
        CellUpdate::Decay,
        CellUpdate::Max(0),
        CellUpdate::Max(1),
        CellUpdate::Max(max / 2),
        CellUpdate::Max(max),
        CellUpdate::Max(max + 7),
    ] {
        let f = filter(r, case.layout, case.blocks, case.bits);
        let keys: Vec<u64> = (0..r.gen_range(1..3000)).map(|_| r.gen()).collect();
        let mode = r.gen_range(0..2);
        let mut want = f.clone();
        for h in hashes(&keys, mode, f.params().seed) {
            want.as_view_mut().update_hash(h, u);
        }
        let mut job = CellJob::new(update_index(u), &f, &keys, mode);
        job.value = match u {
            CellUpdate::Max(v) => v,
            _ => 0,
        };
        let got = run(case.emu, &job);
        assert!(got.image == want.image_words(), "{what} {u:?}: image");
        assert!(got.cells == want.cell_words(), "{what} {u:?}: cells");
    }
    // One operand per key, the keys grouped: grouped key i has operand values[pos[i]].
    let f = filter(r, case.layout, case.blocks, case.bits);
    let n = r.gen_range(1..3000);
    let keys: Vec<u64> = (0..n).map(|_| r.gen()).collect();
    let values: Vec<u32> = (0..n).map(|_| r.gen_range(0..=max + 3)).collect();
    let mut pos: Vec<u32> = (0..n as u32).collect();
    pos.shuffle(r);
    let mut want = f.clone();
    for (i, h) in hashes(&keys, 1, f.params().seed).into_iter().enumerate() {
        let v = values[pos[i] as usize];
        want.as_view_mut().update_hash(h, CellUpdate::Max(v));
    }
    let mut job = CellJob::new(update_index(CellUpdate::Max(0)), &f, &keys, 1);
    job.values = Some(&values);
    job.pos = Some(&pos);
    let got = run(case.emu, &job);
    assert!(got.image == want.image_words(), "{what}: per-key image");
    assert!(got.cells == want.cell_words(), "{what}: per-key cells");
}

/// `AllNonZero` and `Min` into 1, 2 and 4 bytes, in input order and at grouped positions,
/// against `reduce_cells`.
fn reductions(case: &Case<'_>, r: &mut impl Rng) {
    let what = case.what.as_str();
    let f = filter(r, case.layout, case.blocks, case.bits);
    let n = r.gen_range(1..3000);
    let keys: Vec<u64> = (0..n).map(|_| r.gen()).collect();
    let mut pos: Vec<u32> = (0..n as u32).collect();
    pos.shuffle(r);
    let hs = hashes(&keys, 0, f.params().seed);
    for reduce in [CellReduce::AllNonZero, CellReduce::Min] {
        for out_bytes in [1u32, 2, 4] {
            if reduce == CellReduce::Min && u64::from(case.bits.max()) >> (8 * out_bytes) != 0 {
                continue;
            }
            for grouped in [false, true] {
                let mut job = CellJob::new(reduce_index(reduce), &f, &keys, 0);
                job.out_bytes = out_bytes;
                if grouped {
                    job.pos = Some(&pos);
                }
                let got = run(case.emu, &job);
                for (i, &h) in hs.iter().enumerate() {
                    let p = if grouped { pos[i] as usize } else { i };
                    let want = reduce_cells(f.params(), case.bits, f.cell_words(), h, reduce);
                    assert_eq!(
                        got.out[p],
                        u64::from(want),
                        "{what} {reduce:?} {out_bytes} B key {i}"
                    );
                }
                assert!(
                    got.cells == f.cell_words() && got.image == f.image_words(),
                    "{what}: read only"
                );
            }
        }
    }
}

/// A counting delete's attempt (`Decrement` recording statuses) of keys present once each, then
/// its undo (`Increment` of the recorded lanes), and an attempt that underflows, undone.
fn deletes(case: &Case<'_>, r: &mut impl Rng) {
    let what = case.what.as_str();
    let params = Params::new(case.layout, case.blocks).with_seed(r.gen());
    let mut f = SpatialFilter::new(params, case.bits.bits(), &["one"]).unwrap();
    let present: Vec<u64> = (0..r.gen_range(1..2000)).map(|_| r.gen()).collect();
    for &h in &present {
        f.as_view_mut().update_hash(h, CellUpdate::Increment);
    }
    // Each present key once, shuffled, with absent keys (refused by the check: status 0).
    let mut batch: Vec<u64> = present.clone();
    batch.extend((0..200).map(|_| r.gen::<u64>()));
    batch.shuffle(r);
    let check: Vec<u32> = batch
        .iter()
        .map(|&h| if f.contains_hash(h) { ACCEPTED } else { 0 })
        .collect();
    let mut want = f.clone();
    let mut want_status = Vec::new();
    for (&h, &s) in batch.iter().zip(&check) {
        let mut lanes = 0;
        if s != 0 {
            let l = params.layout;
            for lane in 0..l.lanes() {
                let k = bloomlanes_core::cell::cell_index(l, params.blocks, h, lane);
                let c = bloomlanes_core::cell::cell(want.cell_words(), case.bits, k);
                lanes |= u32::from(c != 0 && c != case.bits.max()) << lane;
            }
            want.as_view_mut().update_hash(h, CellUpdate::Decrement);
        }
        want_status.push(s | lanes);
    }
    let mut job = CellJob::new(update_index(CellUpdate::Decrement), &f, &batch, 1);
    job.flags = RECORD;
    job.status = check.clone();
    let got = run(case.emu, &job);
    // Keys absent from the filter but accepted (false positives) may take a present key's
    // last count; the statuses then differ by order, so compare them only without underflow.
    if got.zeros == 0 {
        assert!(got.image == want.image_words(), "{what}: delete image");
        assert!(got.cells == want.cell_words(), "{what}: delete cells");
        assert_eq!(got.status, want_status, "{what}: delete statuses");
    }
    // The undo restores the state before the attempt exactly.
    let (image, cells) = (got.image.clone(), got.cells.clone());
    let mut undo = CellJob::new(update_index(CellUpdate::Increment), &f, &batch, 1);
    undo.image = &image;
    undo.cells = &cells;
    undo.flags = LANES;
    undo.status = got.status.clone();
    let back = run(case.emu, &undo);
    assert!(back.image == f.image_words(), "{what}: undo image");
    assert!(back.cells == f.cell_words(), "{what}: undo cells");
    // A key alone in a filter, deleted twice: its counters are at 1, so the second decrement
    // of each underflows; the undo puts back what the first took.
    let mut one = SpatialFilter::new(params, case.bits.bits(), &["one"]).unwrap();
    let key = [r.gen::<u64>()];
    one.as_view_mut().update_hash(key[0], CellUpdate::Increment);
    let twice = [key[0], key[0]];
    let mut job = CellJob::new(update_index(CellUpdate::Decrement), &one, &twice, 1);
    job.flags = RECORD;
    job.status = vec![ACCEPTED; 2];
    let got = run(case.emu, &job);
    assert_eq!(
        got.zeros,
        case.layout.lanes() as u64,
        "{what}: the second delete underflows"
    );
    assert!(got.cells.iter().all(|&w| w == 0) && got.image.iter().all(|&w| w == 0));
    let (image, cells) = (got.image.clone(), got.cells.clone());
    let mut undo = CellJob::new(update_index(CellUpdate::Increment), &one, &twice, 1);
    undo.image = &image;
    undo.cells = &cells;
    undo.flags = LANES;
    undo.status = got.status;
    let back = run(case.emu, &undo);
    assert!(
        back.cells == one.cell_words() && back.image == one.image_words(),
        "{what}: undo"
    );
}
