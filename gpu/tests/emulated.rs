//! The cell kernels' device code run on the CPU: the generated CUDA source (every layout) is
//! compiled as C++17 with host stand-ins for the CUDA built-ins (`host_cuda/shim.h`), and the
//! direct-shape update kernels (every `CellUpdate`, one operand or one per key, with grouped
//! positions, a delete's recorded statuses and their undo) and the reductions (`AllNonZero`,
//! `Min`, into 1, 2 or 4 bytes) run one thread after another over 4-, 8- and 16-bit cells.
//! Sequential threads are one interleaving of the device's, and the updates of one batch
//! commute, so the words must equal core's `CellsMut` bit for bit. These kernels have no warp
//! collectives; the slice shape and the class check, which do, run only on a GPU
//! (`tests/spatial.rs`, `tests/kinds.rs`). Without a C++ compiler (`$CXX`, else `c++`) the test
//! prints a SKIP line and passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use bloomlanes_core::cell::reduce_cells;
use bloomlanes_core::{CellBits, CellReduce, CellUpdate, Keys, Layout, Params, SpatialFilter};
use bloomlanes_gpu::{kernel_source, KernelModule};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const ACCEPTED: u32 = 1 << 31;
/// The kernels' `flags` (`kernel.rs`).
const RECORD: u32 = 1;
const LANES: u32 = 2;

/// The driver's kernel indices (`host_cuda/driver.cpp`).
fn update_index(u: CellUpdate) -> u64 {
    match u {
        CellUpdate::Set => 0,
        CellUpdate::Increment => 1,
        CellUpdate::Decrement => 2,
        CellUpdate::Decay => 3,
        CellUpdate::Max(_) => 4,
    }
}

fn reduce_index(r: CellReduce) -> u64 {
    match r {
        CellReduce::AllNonZero => 5,
        CellReduce::Min => 6,
    }
}

/// The emulated kernels of one layout, compiled once.
struct Emulator {
    bin: PathBuf,
    dir: PathBuf,
    runs: std::cell::Cell<u32>,
}

fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .ok()?
        .status
        .success();
    ok.then_some(cxx)
}

impl Emulator {
    fn build(cxx: &str, layout: Layout, dir: &Path) -> Emulator {
        let src = dir.join(format!("cells_{layout}.cpp"));
        let text = format!(
            "{}\n{}\n{}",
            include_str!("host_cuda/shim.h"),
            kernel_source(layout, KernelModule::Cells),
            include_str!("host_cuda/driver.cpp")
        );
        std::fs::write(&src, text).unwrap();
        let bin = dir.join(format!("cells_{layout}"));
        let out = Command::new(cxx)
            .args(["-std=c++17", "-O1", "-w", "-o"])
            .arg(&bin)
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{layout}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Emulator {
            bin,
            dir: dir.to_path_buf(),
            runs: std::cell::Cell::new(0),
        }
    }

    /// Runs `job`; returns (image, cells, status, stats, out).
    fn run(&self, job: &Job<'_>) -> Result_ {
        let run = self.runs.get();
        self.runs.set(run + 1);
        let (input, output) = (
            self.dir.join(format!("job{run}")),
            self.dir.join(format!("out{run}")),
        );
        let n = job.keys.len() as u64;
        let mut w: Vec<u64> = vec![
            job.kernel,
            u64::from(job.bits.bits()),
            u64::from(job.params.blocks),
            job.params.seed,
            job.mode,
            n,
            u64::from(job.value),
            u64::from(job.flags),
            u64::from(job.values.is_some()),
            u64::from(job.pos.is_some()),
            u64::from(job.out_bytes),
            job.image.len() as u64,
            job.cells.len() as u64,
        ];
        w.extend_from_slice(job.keys);
        for v in [job.values, job.pos].into_iter().flatten() {
            w.extend(v.iter().map(|&x| u64::from(x)));
        }
        for v in [&job.status[..], job.image, job.cells] {
            w.extend(v.iter().map(|&x| u64::from(x)));
        }
        std::fs::write(&input, bytemuck_bytes(&w)).unwrap();
        let st = Command::new(&self.bin)
            .arg(&input)
            .arg(&output)
            .status()
            .unwrap();
        assert!(st.success(), "emulator exited with {st}");
        let r: Vec<u64> = std::fs::read(&output)
            .unwrap()
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let (il, cl, n) = (job.image.len(), job.cells.len(), job.keys.len());
        let u32s = |s: &[u64]| s.iter().map(|&x| x as u32).collect::<Vec<u32>>();
        Result_ {
            image: u32s(&r[..il]),
            cells: u32s(&r[il..il + cl]),
            status: u32s(&r[il + cl..il + cl + n]),
            zeros: r[il + cl + n + 1],
            out: r[il + cl + n + 2..].to_vec(),
        }
    }
}

fn bytemuck_bytes(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Result_ {
    image: Vec<u32>,
    cells: Vec<u32>,
    status: Vec<u32>,
    zeros: u64,
    out: Vec<u64>,
}

struct Job<'a> {
    kernel: u64,
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

impl<'a> Job<'a> {
    fn new(kernel: u64, f: &'a SpatialFilter, keys: &'a [u64], mode: u64) -> Job<'a> {
        Job {
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

fn hashes(keys: &[u64], mode: u64, seed: u64) -> Vec<u64> {
    let k = if mode == 0 {
        Keys::U64(keys)
    } else {
        Keys::Hashes(keys)
    };
    (0..keys.len()).map(|i| k.hash(i, seed)).collect()
}

#[test]
fn cell_kernels_equal_the_core_when_run_on_the_cpu() {
    let Some(cxx) = compiler() else {
        common::skip(
            "cell_kernels_equal_the_core_when_run_on_the_cpu: no C++ compiler ($CXX or c++)",
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("bloomlanes-emulated-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut r = rand::rngs::StdRng::seed_from_u64(0xce11);
    for layout in Layout::ALL {
        let emu = Emulator::build(&cxx, layout, &dir);
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
    let _ = std::fs::remove_dir_all(&dir);
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
        let mut job = Job::new(update_index(u), &f, &keys, mode);
        job.value = match u {
            CellUpdate::Max(v) => v,
            _ => 0,
        };
        let got = case.emu.run(&job);
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
    let mut job = Job::new(update_index(CellUpdate::Max(0)), &f, &keys, 1);
    job.values = Some(&values);
    job.pos = Some(&pos);
    let got = case.emu.run(&job);
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
                let mut job = Job::new(reduce_index(reduce), &f, &keys, 0);
                job.out_bytes = out_bytes;
                if grouped {
                    job.pos = Some(&pos);
                }
                let got = case.emu.run(&job);
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
    let mut job = Job::new(update_index(CellUpdate::Decrement), &f, &batch, 1);
    job.flags = RECORD;
    job.status = check.clone();
    let got = case.emu.run(&job);
    // Keys absent from the filter but accepted (false positives) may take a present key's
    // last count; the statuses then differ by order, so compare them only without underflow.
    if got.zeros == 0 {
        assert!(got.image == want.image_words(), "{what}: delete image");
        assert!(got.cells == want.cell_words(), "{what}: delete cells");
        assert_eq!(got.status, want_status, "{what}: delete statuses");
    }
    // The undo restores the state before the attempt exactly.
    let (image, cells) = (got.image.clone(), got.cells.clone());
    let mut undo = Job::new(update_index(CellUpdate::Increment), &f, &batch, 1);
    undo.image = &image;
    undo.cells = &cells;
    undo.flags = LANES;
    undo.status = got.status.clone();
    let back = case.emu.run(&undo);
    assert!(back.image == f.image_words(), "{what}: undo image");
    assert!(back.cells == f.cell_words(), "{what}: undo cells");
    // A key alone in a filter, deleted twice: its counters are at 1, so the second decrement
    // of each underflows; the undo puts back what the first took.
    let mut one = SpatialFilter::new(params, case.bits.bits(), &["one"]).unwrap();
    let key = [r.gen::<u64>()];
    one.as_view_mut().update_hash(key[0], CellUpdate::Increment);
    let twice = [key[0], key[0]];
    let mut job = Job::new(update_index(CellUpdate::Decrement), &one, &twice, 1);
    job.flags = RECORD;
    job.status = vec![ACCEPTED; 2];
    let got = case.emu.run(&job);
    assert_eq!(
        got.zeros,
        case.layout.lanes() as u64,
        "{what}: the second delete underflows"
    );
    assert!(got.cells.iter().all(|&w| w == 0) && got.image.iter().all(|&w| w == 0));
    let (image, cells) = (got.image.clone(), got.cells.clone());
    let mut undo = Job::new(update_index(CellUpdate::Increment), &one, &twice, 1);
    undo.image = &image;
    undo.cells = &cells;
    undo.flags = LANES;
    undo.status = got.status;
    let back = case.emu.run(&undo);
    assert!(
        back.cells == one.cell_words() && back.image == one.image_words(),
        "{what}: undo"
    );
}
