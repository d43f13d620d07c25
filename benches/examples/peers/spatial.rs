//! `peers spatial`: bloomlanes' spatial filter beside libSBF (`sbf_driver`), same keys, classes,
//! cells and method: key i = i-th splitmix64 output from state 1 in class `1 + i*c/n`; inserts
//! into a fresh filter (allocation untimed); lookups of the batch of `lookups()`.
//!
//! Cells: the same number as libSBF's (the next power of two at or above cells-per-key × keys),
//! so `cells / 256` blocks of 8x32; 8 cells per key (one per lane, k = 8, as libSBF's 8 hashes).
//!
//! Backends: `scalar` is the core's `SpatialFilter::insert` / `class_of`, key by key, one thread;
//! `simd` is the SIMD path (`Probe::insert_spatial_filter`, `Probe::min_cells` /
//! `par_min_cells`).

use std::fs::OpenOptions;
use std::io::Write;

use bloomlanes_core::{Layout, Params, SpatialFilter};

use bloomlanes_benches::random;
use bloomlanes_core::Keys;
use bloomlanes_simd::{Classes, Probe, Schedule};

use crate::{clock_name, fail, lookups, on_threads, summarize, Args};

/// What one backend does: build the filter from all keys, and answer the classes of a batch.
trait Backend {
    fn insert(&self, f: &mut SpatialFilter, keys: &[u64], classes: &[u8], threads: usize);
    fn classes(&self, f: &SpatialFilter, keys: &[u64], out: &mut [u8], threads: usize);
}

struct Scalar;

impl Backend for Scalar {
    fn insert(&self, f: &mut SpatialFilter, keys: &[u64], classes: &[u8], _threads: usize) {
        for (k, &c) in keys.iter().zip(classes) {
            if let Err(e) = f.insert(k, u32::from(c)) {
                fail(&format!("insert: {e}"));
            }
        }
    }

    fn classes(&self, f: &SpatialFilter, keys: &[u64], out: &mut [u8], _threads: usize) {
        for (o, k) in out.iter_mut().zip(keys) {
            *o = f.class_of(k) as u8;
        }
    }
}

struct Simd(Probe);

impl Backend for Simd {
    fn insert(&self, f: &mut SpatialFilter, keys: &[u64], classes: &[u8], threads: usize) {
        let how = if threads <= 1 {
            Schedule::OneThread
        } else {
            Schedule::AllCores
        };
        on_threads(threads, || {
            self.0
                .insert_spatial_filter(f, Keys::U64(keys), Classes::U8(classes), how)
        })
        .unwrap_or_else(|e| fail(&format!("insert: {e}")));
    }

    fn classes(&self, f: &SpatialFilter, keys: &[u64], out: &mut [u8], threads: usize) {
        on_threads(threads, || {
            if threads <= 1 {
                self.0.min_cells(f, Keys::U64(keys), out);
            } else {
                self.0.par_min_cells(f, Keys::U64(keys), out);
            }
        });
    }
}

fn backend(name: &str, threads: usize) -> Box<dyn Backend> {
    match name {
        "scalar" => {
            if threads > 1 {
                fail("--backend scalar runs on one thread (the core's key-by-key reference)");
            }
            Box::new(Scalar)
        }
        "simd" => Box::new(Simd(Probe::active())),
        b => fail(&format!("--backend is scalar or simd, not {b}")),
    }
}

/// `bl_driver spatial ...`: prints a `spatial_insert` and a `spatial_lookup` row, and appends
/// per-class rates to `--class-csv`.
pub fn run(args: &Args) {
    let n = args.size("--keys", 1 << 20);
    let c = args.size("--classes", 4);
    let per_key = args.size("--cells-per-key", 8);
    let cell_bits = args.size("--cell-bits", if c <= 15 { 4 } else { 8 }) as u32;
    let threads = args.size("--threads", 1).max(1);
    let reps = args.size("--reps", 5).max(1);
    let l = match args.size("--lookups", 0) {
        0 => n,
        l => l,
    };
    let clock = args.clock(threads);
    let backend_name = args.get("--backend").unwrap_or("scalar");
    let b = backend(backend_name, threads);
    if c == 0 || c > 255 || n < 2 {
        fail("need 1 <= --classes <= 255 and --keys >= 2");
    }
    let cells = (per_key * n).next_power_of_two().max(256);
    let blocks = u32::try_from(cells / 256).unwrap_or_else(|_| fail("too many cells"));
    let params = Params::new(Layout::L8x32, blocks);
    let names: Vec<String> = (1..=c).map(|i| format!("c{i}")).collect();
    let fresh = || {
        SpatialFilter::new(params, cell_bits, &names)
            .unwrap_or_else(|e| fail(&format!("spatial filter: {e}")))
    };

    let keys = random(n, 1);
    let classes: Vec<u8> = (0..n).map(|i| (1 + i * c / n) as u8).collect();
    let (look, from) = lookups(&keys, l);

    let mut filter = None;
    let mut ins = Vec::with_capacity(reps);
    for _ in 0..reps {
        drop(filter.take());
        let mut f = fresh();
        let s = clock.seconds(|| b.insert(&mut f, &keys, &classes, threads));
        ins.push(n as f64 / s / 1e6);
        filter = Some(f);
    }
    let f = filter.expect("at least one rep");
    let mut out = vec![0u8; l];
    let mut lk = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = clock.seconds(|| b.classes(&f, &look, &mut out, threads));
        std::hint::black_box(&mut out);
        lk.push(l as f64 / s / 1e6);
    }

    // Per class: fpr_c = absent keys answered c / absent keys; emersion_c = keys of class c
    // answered c / keys of class c looked up. A present key answered below its class is an error.
    let (mut fp, mut present, mut right) = (
        vec![0usize; c + 1],
        vec![0usize; c + 1],
        vec![0usize; c + 1],
    );
    let (mut absent, mut wrong) = (0usize, 0usize);
    for (&ans, src) in out.iter().zip(&from) {
        let ans = ans as usize;
        match src {
            None => {
                absent += 1;
                fp[ans] += 1;
            }
            Some(i) => {
                let t = classes[*i] as usize;
                present[t] += 1;
                if ans == t {
                    right[t] += 1;
                } else if ans < t {
                    wrong += 1;
                }
            }
        }
    }
    if wrong > 0 {
        eprintln!("bl_driver: {wrong} present keys answered absent or below their class");
        std::process::exit(3);
    }
    let fp_all: usize = fp[1..].iter().sum();
    let right_all: usize = right[1..].iter().sum();
    let present_all: usize = present[1..].iter().sum();
    let bytes = f.image_words().len() * 4 + f.cell_words().len() * 4;
    let name = format!("bloomlanes-8x32-spatial-{backend_name}");
    for (op, rates) in [("spatial_insert", ins), ("spatial_lookup", lk)] {
        let (med, lo, hi) = summarize(rates);
        println!(
            "{name},{op},{bytes},{n},{threads},{med:.3},{lo:.3},{hi:.3},{:.3e},{absent},\
             classes={c} cells=2^{} cell_bits={cell_bits} k=8 emersion={:.4} reps={reps} {}",
            fp_all as f64 / absent as f64,
            cells.trailing_zeros(),
            right_all as f64 / present_all as f64,
            clock_name(clock)
        );
    }
    if let Some(path) = args.get("--class-csv") {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap_or_else(|e| fail(&format!("cannot open {path} for appending: {e}")));
        for k in 1..=c {
            writeln!(
                file,
                "{name},{n},{c},{cells},{k},{:.4e},{:.6},nan,nan",
                fp[k] as f64 / absent as f64,
                right[k] as f64 / present[k].max(1) as f64
            )
            .unwrap_or_else(|e| fail(&format!("cannot write {path}: {e}")));
        }
    }
}
