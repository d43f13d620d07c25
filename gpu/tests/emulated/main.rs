//! The kernels' device code run on the CPU: each module's generated CUDA source (every layout) is
//! compiled as C++17 with host stand-ins for the CUDA built-ins (`host_cuda/shim.h`: a CTA's
//! threads run as cooperative fibers, so barriers, shared memory and warp collectives behave as
//! on the device) and a driver that runs a script of kernel launches over buffers
//! (`host_cuda/driver.cpp`). The tests launch the kernels as the crate's launchers do and compare
//! the results with core bit for bit:
//!
//! - `cells`: the direct-shape update kernel of every `CellUpdate` (one operand, or one per key at
//!   grouped positions; a counting delete's recorded statuses and their undo) and both
//!   reductions (`AllNonZero`, `Min` into 1, 2 or 4 bytes) over 4-, 8- and 16-bit cells, against
//!   `CellsMut`;
//! - `radix`: the partition histogram and scan, the one-level scatter, the radix grouping's two
//!   levels, the grouped bulk insert (its host fallback, atomics) and the slice insert of the
//!   static image and of a sliding window's generation, against core's `Filter`;
//! - `retrieval`: the lookup kernel over tables of cells within one word, across two and of 64
//!   bits, arity 3 and 4, u64 keys and hashes, against the core's `get_hashes`.
//!
//! One CTA after another, its threads interleaved only at barriers: one of the device's
//! interleavings, and the results of these kernels do not depend on the interleaving (ORs and
//! updates of one batch commute, groupings are checked as sets per partition). What the CPU
//! cannot run: the bulk-reduce instruction itself (`cp.reduce.async.bulk`, sm_90; the host
//! compiles the kernel's fallback), which only the GPU tests reach. Without a C++ compiler (`$CXX`,
//! else `c++`) the tests print a SKIP line and pass.

#[path = "../common/mod.rs"]
mod common;

mod cells;
mod radix;
mod retrieval;

use std::path::{Path, PathBuf};
use std::process::Command;

use bloomlanes_core::Layout;
use bloomlanes_gpu::{kernel_source, KernelModule};

/// What one test builds its emulators with: the C++ compiler and a scratch folder.
pub struct Emulators {
    cxx: String,
    dir: Scratch,
}

impl Emulators {
    /// The C++ compiler and a scratch folder named `scratch`, or a SKIP line for `test` and
    /// `None` when there is no compiler.
    fn new(test: &str, scratch: &str) -> Option<Emulators> {
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let ok = Command::new(&cxx)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            common::skip(format_args!("{test}: no C++ compiler ($CXX or c++)"));
            return None;
        }
        Some(Emulators {
            cxx,
            dir: Scratch::new(scratch),
        })
    }

    /// `layout`'s `module` compiled for the CPU.
    fn build(&self, layout: Layout, module: KernelModule) -> Emulator {
        Emulator::build(&self.cxx, layout, module, &self.dir.0)
    }
}

/// A scratch folder for one test, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("bloomlanes-emulated-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `command` to its end; panics, naming `what`, with its status and error output unless it
/// succeeded.
fn succeed(command: &mut Command, what: &str) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{what} exited with {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One layout's module compiled for the CPU.
pub struct Emulator {
    bin: PathBuf,
    dir: PathBuf,
    runs: std::cell::Cell<u32>,
}

impl Emulator {
    fn build(cxx: &str, layout: Layout, module: KernelModule, dir: &Path) -> Emulator {
        let src = dir.join(format!("{module}_{layout}.cpp"));
        let text = format!(
            "{}\n{}\n#define BL_EMULATE_{}\n{}",
            include_str!("../host_cuda/shim.h"),
            kernel_source(layout, module),
            module.name().to_uppercase(),
            include_str!("../host_cuda/driver.cpp")
        );
        std::fs::write(&src, text).unwrap();
        let bin = dir.join(format!("{module}_{layout}"));
        succeed(
            Command::new(cxx)
                .args(["-std=c++17", "-O1", "-w", "-o"])
                .arg(&bin)
                .arg(&src),
            &format!("compiling {layout} {module}"),
        );
        Emulator {
            bin,
            dir: dir.to_path_buf(),
            runs: std::cell::Cell::new(0),
        }
    }

    /// Runs the launches of `job` in order; returns every buffer afterwards.
    pub fn run(&self, job: &Job) -> Output {
        let run = self.runs.get();
        self.runs.set(run + 1);
        let input = self.dir.join(format!("job{run}"));
        let output = self.dir.join(format!("out{run}"));
        std::fs::write(&input, job.encode()).unwrap();
        succeed(
            Command::new(&self.bin).arg(&input).arg(&output),
            "the emulator",
        );
        let bytes = std::fs::read(&output).unwrap();
        let mut at = 0;
        let buffers = job
            .buffers
            .iter()
            .map(|b| {
                let padded = b.len().next_multiple_of(8);
                let v = bytes[at..at + b.len()].to_vec();
                at += padded;
                v
            })
            .collect();
        Output(buffers)
    }
}

/// A kernel argument: a buffer of the job, a null pointer, or a scalar (any integer parameter).
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    Buf(usize),
    Null,
    Val(u64),
}

/// A script of launches over buffers.
#[derive(Default)]
pub struct Job {
    buffers: Vec<Vec<u8>>,
    launches: Vec<(String, u64, u64, Vec<Arg>)>,
}

impl Job {
    /// A buffer holding `data`, as an argument.
    pub fn buffer<T: bytemuck::Pod>(&mut self, data: &[T]) -> Arg {
        self.buffers.push(bytemuck::cast_slice(data).to_vec());
        Arg::Buf(self.buffers.len() - 1)
    }

    /// Launches `kernel` on `grid` CTAs of the kernels' thread count with `smem` bytes of
    /// dynamic shared memory.
    pub fn launch(&mut self, kernel: &str, grid: u64, smem: u64, args: &[Arg]) {
        self.launches
            .push((kernel.to_string(), grid, smem, args.to_vec()));
    }

    fn encode(&self) -> Vec<u8> {
        let mut w: Vec<u64> = vec![self.buffers.len() as u64, self.launches.len() as u64];
        let bytes = |w: &mut Vec<u64>, b: &[u8]| {
            w.push(b.len() as u64);
            for c in b.chunks(8) {
                let mut x = [0u8; 8];
                x[..c.len()].copy_from_slice(c);
                w.push(u64::from_le_bytes(x));
            }
        };
        for b in &self.buffers {
            bytes(&mut w, b);
        }
        for (name, grid, smem, args) in &self.launches {
            bytes(&mut w, name.as_bytes());
            w.extend([*grid, *smem, args.len() as u64]);
            for a in args {
                w.extend(match *a {
                    Arg::Val(v) => [0, v],
                    Arg::Buf(i) => [1, i as u64],
                    Arg::Null => [2, 0],
                });
            }
        }
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}

/// Every buffer of a job after its launches.
pub struct Output(Vec<Vec<u8>>);

impl Output {
    /// The buffer `a` as elements of `T`.
    pub fn get<T: bytemuck::Pod>(&self, a: Arg) -> Vec<T> {
        let Arg::Buf(i) = a else {
            panic!("{a:?} is no buffer")
        };
        self.0[i]
            .chunks_exact(std::mem::size_of::<T>())
            .map(bytemuck::pod_read_unaligned)
            .collect()
    }
}

/// The kernels' threads per CTA and keys per thread (`kernel.rs`).
pub const THREADS: u64 = bloomlanes_gpu::THREADS as u64;
pub const KEYS_PER_THREAD: u64 = bloomlanes_gpu::KEYS_PER_THREAD as u64;

/// CTAs of a launch of `per_cta` items each over `n` items (at least one).
pub fn ctas(n: u64, per_cta: u64) -> u64 {
    n.div_ceil(per_cta).max(1)
}

/// The hashes of `keys` read in `mode` (0: u64 keys, 1: hashes) with `seed`, as core computes
/// them.
pub fn hashes(keys: &[u64], mode: u64, seed: u64) -> Vec<u64> {
    let k = if mode == 0 {
        bloomlanes_core::Keys::U64(keys)
    } else {
        bloomlanes_core::Keys::Hashes(keys)
    };
    (0..keys.len()).map(|i| k.hash(i, seed)).collect()
}
