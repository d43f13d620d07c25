//! The one launcher of the key kernels: every (operation × key form × geometry) goes through
//! [`launch_keys`], which picks the kernel, checks every length the kernel relies on and pushes
//! the arguments in the order of the `.cu` signatures.
//!
//! The kernels (src/cuda/keys.cu) all take `(words, blocks, <keys>, n, seed[, out])` with
//! `<keys>` one of `keys` (u64 keys or hashes), `data, width` (records) or
//! `data, data_len, offsets, base` (strings); a sliding window's twins take `(…, u32 gens,
//! u32 gen)` after them ([`Geometry`]).

use bloomlanes_core::Params;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};

use crate::kernel::{Kernel, KEYS_PER_THREAD, THREADS};
use crate::module::{grid, Kernels};
use crate::GpuError;

/// Where the blocks of the image a key kernel runs on lie (`BlFlat` / `BlGens` in
/// `cuda/block.cu`): a static image (one generation), or a sliding window's `gens` generations
/// interleaved by block, whose inserts go to generation `gen` and whose lookups test them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Generations (1: a static image).
    pub(crate) gens: u32,
    /// The generation inserts go to (below `gens`).
    pub(crate) gen: u32,
}

impl Geometry {
    /// The kernel of this geometry: the static kernel, or its window twin.
    pub(crate) fn kernel(self, k: Kernel) -> Kernel {
        if self.gens > 1 {
            k.windowed()
        } else {
            k
        }
    }

    /// The words an image of `params` needs in this geometry.
    pub(crate) fn words(self, params: &Params) -> u64 {
        u64::from(self.gens) * params.u32_len()
    }

    /// Checks that `words` words hold every generation of a filter of `params`, and that `gen`
    /// is one of them.
    pub(crate) fn check(self, params: &Params, words: usize) -> Result<(), GpuError> {
        if self.gens == 0 || self.gen >= self.gens || (words as u64) < self.words(params) {
            return Err(GpuError::internal(
                "launch_keys",
                format!(
                    "{words} words for {} generations of {} words (generation {})",
                    self.gens,
                    params.u32_len(),
                    self.gen
                ),
            ));
        }
        Ok(())
    }

    /// Pushes the window twin's trailing `(u32 gens, u32 gen)`; nothing for a static image.
    pub(crate) fn push<'a>(&'a self, l: &mut cudarc::driver::LaunchArgs<'a>) {
        if self.gens > 1 {
            l.arg(&self.gens).arg(&self.gen);
        }
    }
}

/// The unpartitioned insert kernels of u64 keys and hashes (records and strings always use
/// atomics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DirectInsert {
    /// One atomic OR per 64-bit word of the block.
    Atomic,
    /// One bulk reduction of the block mask per key (sm_90+; atomics on older devices).
    BulkReduce,
}

/// A batch of keys in device memory, as kernel arguments.
#[derive(Debug)]
pub(crate) enum KeyArgs<'a> {
    /// u64 keys, hashed on the device.
    U64(CudaView<'a, u64>),
    /// Caller-supplied hashes.
    Hashes(CudaView<'a, u64>),
    /// `data.len() / width` records of `width` bytes.
    Records {
        /// The record bytes.
        data: CudaView<'a, u8>,
        /// Record width in bytes.
        width: usize,
    },
    /// `offsets.len() - 1` strings: string `i` is `data[offsets[i] - base .. offsets[i + 1] -
    /// base]`. The kernels clamp every string to `data`, so offsets that are out of order or out
    /// of range give wrong hashes, never an access outside `data`; callers check them first
    /// (core's `Strings` on the host, `device_keys` on the device).
    Strings {
        /// The string bytes.
        data: CudaView<'a, u8>,
        /// At least one offset.
        offsets: CudaView<'a, u64>,
        /// Subtracted from every offset (the first offset of a chunk of a larger batch).
        base: u64,
    },
}

impl<'a> KeyArgs<'a> {
    /// Keys `r` of the batch (panics past the end, like slicing). Strings keep their bytes and
    /// base: only the offsets are cut.
    pub(crate) fn slice(&self, r: std::ops::Range<usize>) -> KeyArgs<'a> {
        match self {
            KeyArgs::U64(k) => KeyArgs::U64(k.slice(r)),
            KeyArgs::Hashes(k) => KeyArgs::Hashes(k.slice(r)),
            KeyArgs::Records { data, width } => KeyArgs::Records {
                data: data.slice(r.start * width..r.end * width),
                width: *width,
            },
            KeyArgs::Strings {
                data,
                offsets,
                base,
            } => KeyArgs::Strings {
                data: data.slice(..),
                offsets: offsets.slice(r.start..=r.end),
                base: *base,
            },
        }
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        match self {
            KeyArgs::U64(k) | KeyArgs::Hashes(k) => k.len(),
            KeyArgs::Records { data, width } => data.len() / (*width).max(1),
            KeyArgs::Strings { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }
}

/// What a call does with the keys, and the buffers it touches: sets their bits in `words`, or
/// looks them up into an output of one byte per key (`B`) or one bit per key (`M`; bit `i % 64`
/// of word `i / 64`, bits past the last key in its word zero). A launch takes device views
/// ([`Pass`]); the host pipeline host slices and pinned buffers (`pipeline.rs`).
#[derive(Debug)]
pub(crate) enum KeyOp<'a, B, M> {
    /// Sets the keys' bits in `words` (the filter's bits, `&mut`: the kernel writes them).
    Insert {
        /// The filter's bits.
        words: &'a mut CudaSlice<u32>,
        /// The kernel for u64 keys and hashes.
        kernel: DirectInsert,
    },
    /// `out[i]` = 1 if key `i` may be present, else 0 (at least one byte per key).
    Contains {
        /// The filter's bits.
        words: &'a CudaSlice<u32>,
        /// The answers.
        out: B,
    },
    /// Bit `i` of `out` = whether key `i` may be present (at least `n.div_ceil(64)` words).
    Bitmap {
        /// The filter's bits.
        words: &'a CudaSlice<u32>,
        /// The answers.
        out: M,
    },
}

/// What a launch does, with device outputs.
pub(crate) type Pass<'a> = KeyOp<'a, CudaViewMut<'a, u8>, CudaViewMut<'a, u64>>;

impl<B, M> KeyOp<'_, B, M> {
    /// The launch of this operation on the same words, with the device output that `bytes` or
    /// `bits` makes of `dev` (only the one of its kind is called).
    pub(crate) fn pass<'s, D>(
        &'s mut self,
        dev: D,
        bytes: impl FnOnce(D) -> CudaViewMut<'s, u8>,
        bits: impl FnOnce(D, &M) -> CudaViewMut<'s, u64>,
    ) -> Pass<'s> {
        match self {
            KeyOp::Insert { words, kernel } => KeyOp::Insert {
                words,
                kernel: *kernel,
            },
            KeyOp::Contains { words, .. } => KeyOp::Contains {
                words,
                out: bytes(dev),
            },
            KeyOp::Bitmap { words, out } => {
                let out = bits(dev, out);
                KeyOp::Bitmap { words, out }
            }
        }
    }
}

/// What a pass does, without its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Insert(DirectInsert),
    Contains,
    Bitmap,
}

/// The form of a batch of keys, without its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    U64,
    Hashes,
    Records,
    Strings,
}

impl Pass<'_> {
    fn op(&self) -> Op {
        match self {
            Pass::Insert { kernel, .. } => Op::Insert(*kernel),
            Pass::Contains { .. } => Op::Contains,
            Pass::Bitmap { .. } => Op::Bitmap,
        }
    }
}

impl KeyArgs<'_> {
    fn form(&self) -> Form {
        match self {
            KeyArgs::U64(_) => Form::U64,
            KeyArgs::Hashes(_) => Form::Hashes,
            KeyArgs::Records { .. } => Form::Records,
            KeyArgs::Strings { .. } => Form::Strings,
        }
    }
}

/// The kernel of each (operation × key form): the one table of kernel names.
fn kernel_for(op: Op, form: Form) -> Kernel {
    use DirectInsert::{Atomic, BulkReduce};
    match (op, form) {
        (Op::Insert(Atomic), Form::U64) => Kernel::InsertU64,
        (Op::Insert(BulkReduce), Form::U64) => Kernel::InsertU64Bulk,
        (Op::Insert(Atomic), Form::Hashes) => Kernel::InsertHash,
        (Op::Insert(BulkReduce), Form::Hashes) => Kernel::InsertHashBulk,
        (Op::Insert(_), Form::Records) => Kernel::InsertRecords,
        (Op::Insert(_), Form::Strings) => Kernel::InsertStrings,
        (Op::Contains, Form::U64) => Kernel::ContainsU64,
        (Op::Contains, Form::Hashes) => Kernel::ContainsHash,
        (Op::Contains, Form::Records) => Kernel::ContainsRecords,
        (Op::Contains, Form::Strings) => Kernel::ContainsStrings,
        (Op::Bitmap, Form::U64) => Kernel::BitmapU64,
        (Op::Bitmap, Form::Hashes) => Kernel::BitmapHash,
        (Op::Bitmap, Form::Records) => Kernel::BitmapRecords,
        (Op::Bitmap, Form::Strings) => Kernel::BitmapStrings,
    }
}

/// Keys per CTA: the u64 / hash kernels give each thread [`KEYS_PER_THREAD`] keys, the byte-key
/// kernels one.
fn keys_per_cta(form: Form) -> u64 {
    match form {
        Form::U64 | Form::Hashes => u64::from(THREADS * KEYS_PER_THREAD),
        Form::Records | Form::Strings => u64::from(THREADS),
    }
}

/// The filter's bits as a kernel argument.
enum WordsArg<'a> {
    Read(&'a CudaSlice<u32>),
    Write(&'a mut CudaSlice<u32>),
}

/// The output as a kernel argument.
enum OutArg<'a> {
    None,
    Bytes(CudaViewMut<'a, u8>),
    Bits(CudaViewMut<'a, u64>),
}

/// The arguments of a pass, apart.
fn split(pass: Pass<'_>) -> (WordsArg<'_>, OutArg<'_>) {
    match pass {
        Pass::Insert { words, .. } => (WordsArg::Write(words), OutArg::None),
        Pass::Contains { words, out } => (WordsArg::Read(words), OutArg::Bytes(out)),
        Pass::Bitmap { words, out } => (WordsArg::Read(words), OutArg::Bits(out)),
    }
}

/// Checks every length the kernel of `pass` over `keys` relies on for a filter of `params` in
/// geometry `geo`.
fn check_lengths(
    params: &Params,
    geo: Geometry,
    keys: &KeyArgs<'_>,
    pass: &Pass<'_>,
) -> Result<(), GpuError> {
    let n = keys.len();
    let words = match pass {
        Pass::Insert { words, .. } => words.len(),
        Pass::Contains { words, .. } | Pass::Bitmap { words, .. } => words.len(),
    };
    geo.check(params, words)?;
    if let KeyArgs::Records { width: 0, .. } = keys {
        return Err(GpuError::Batch(bloomlanes_core::BatchError::ZeroWidth));
    }
    match pass {
        Pass::Contains { out, .. } if out.len() < n => Err(GpuError::OutputTooShort {
            needed: n,
            found: out.len(),
        }),
        Pass::Bitmap { out, .. } if out.len() < n.div_ceil(64) => Err(GpuError::OutputTooShort {
            needed: n.div_ceil(64),
            found: out.len(),
        }),
        _ => Ok(()),
    }
}

/// Queues the kernel of `pass` over `keys` for the filter of `params` in geometry `geo` on
/// `stream`. Checks every length the kernel relies on first (the filter's bits, the keys'
/// buffers, the output); a batch of no keys launches nothing.
pub(crate) fn launch_keys(
    kernels: &Kernels,
    params: &Params,
    geo: Geometry,
    stream: &CudaStream,
    keys: KeyArgs<'_>,
    pass: Pass<'_>,
) -> Result<(), GpuError> {
    check_lengths(params, geo, &keys, &pass)?;
    let n = keys.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let kernel = geo.kernel(kernel_for(pass.op(), keys.form()));
    let cfg = grid(n, keys_per_cta(keys.form()))?;
    let blocks = u64::from(params.blocks);
    let seed = params.seed;
    let (width, data_len, base);
    let (mut words, mut out) = split(pass);
    let mut l = stream.launch_builder(kernels.get(kernel)?);
    match &mut words {
        WordsArg::Write(w) => l.arg(&mut **w),
        WordsArg::Read(w) => l.arg(*w),
    };
    l.arg(&blocks);
    match &keys {
        KeyArgs::U64(k) | KeyArgs::Hashes(k) => {
            l.arg(k);
        }
        KeyArgs::Records { data, width: w } => {
            width = *w as u64;
            l.arg(data).arg(&width);
        }
        KeyArgs::Strings {
            data,
            offsets,
            base: b,
        } => {
            data_len = data.len() as u64;
            base = *b;
            l.arg(data).arg(&data_len).arg(offsets).arg(&base);
        }
    }
    l.arg(&n).arg(&seed);
    match &mut out {
        OutArg::None => {}
        OutArg::Bytes(o) => {
            l.arg(o);
        }
        OutArg::Bits(o) => {
            l.arg(o);
        }
    };
    geo.push(&mut l);
    // SAFETY: the arguments are pushed in the order and with the types of the kernel's
    // signature in src/cuda/keys.cu: `(u32* words, u64 blocks, <keys>, u64 n, u64 seed[, out])`
    // with `<keys>` = `const u64* keys` | `const u8* data, u64 width` | `const u8* data,
    // u64 data_len, const u64* offsets, u64 base`, and `out` = `u8*` (contains) | `u32*`
    // (bitmap; here a u64 buffer: 4-aligned, and any bits are a valid u64), then for a window's
    // twin `u32 gens, u32 gen`. Everything the kernel touches is inside the buffers:
    // - words: it reads and writes blocks `((h >> 32) * blocks) >> 32 < blocks` of
    //   `block_u32s` words each, whatever the hash `h`, at storage block `b × gens + j` with
    //   `j < gens` (lookups) or `j = gen < gens` (inserts), and `words` holds at least `gens ×
    //   params.u32_len()` = `gens × blocks × block_u32s` words (`Geometry::check`);
    // - keys: u64 / hash kernels read `keys[i]` for `i < n` = the view's length; record kernels
    //   read `data[i × width .. (i + 1) × width]` for `i < n = data.len() / width`, width ≥ 1
    //   (checked); string kernels read `offsets[i]` for `i ≤ n` = the view's length − 1, and
    //   bytes of `data` between two offsets clamped to `data_len` = the view's length, so
    //   inside `data` whatever the offsets hold;
    // - out: contains writes `out[i]` for `i < n` ≤ `out.len()` (checked); bitmap writes u32
    //   words `< 2 × n.div_ceil(64)`, inside the `n.div_ceil(64)` ≤ `out.len()` u64s (checked).
    // Inserts get `words` as `&mut`, so cudarc orders them after earlier uses of the filter on
    // other streams, and lookups get it as `&`, so they wait for earlier inserts.
    unsafe { l.launch(cfg) }.map_err(|e| GpuError::cuda("cuLaunchKernel", n, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{kernel_source, KernelModule};
    use bloomlanes_core::Layout;

    const OPS: [Op; 4] = [
        Op::Insert(DirectInsert::Atomic),
        Op::Insert(DirectInsert::BulkReduce),
        Op::Contains,
        Op::Bitmap,
    ];
    const FORMS: [Form; 4] = [Form::U64, Form::Hashes, Form::Records, Form::Strings];

    /// The parameter list `launch_keys` pushes for (op, form), as the CUDA signature spells it.
    fn pushed(op: Op, form: Form) -> String {
        let words = match op {
            Op::Insert(_) => "u32* words",
            Op::Contains | Op::Bitmap => "const u32* words",
        };
        let keys = match form {
            Form::U64 | Form::Hashes => "const u64* keys",
            Form::Records => "const u8* data, u64 width",
            Form::Strings => "const u8* data, u64 data_len, const u64* offsets, u64 base",
        };
        let out = match op {
            Op::Insert(_) => "",
            Op::Contains => ", u8* out",
            Op::Bitmap => ", u32* bits",
        };
        format!("({words}, u64 blocks, {keys}, u64 n, u64 seed{out})")
    }

    #[test]
    fn every_op_form_and_geometry_has_its_own_kernel_with_the_pushed_parameters() {
        let src = kernel_source(Layout::L8x32, KernelModule::Static);
        let mut seen = Vec::new();
        for op in OPS {
            for form in FORMS {
                let k = kernel_for(op, form);
                let name = k.name();
                let word = match op {
                    Op::Insert(_) => "insert",
                    Op::Contains => "contains",
                    Op::Bitmap => "bitmap",
                };
                assert!(name.contains(word), "{op:?} {form:?}: {name}");
                let direct = matches!((op, form), (Op::Insert(_), Form::Records | Form::Strings));
                if !direct {
                    assert!(!seen.contains(&k), "{name} used twice");
                }
                seen.push(k);
                // The compiled entry points take what `launch_keys` pushes, in both geometries
                // (checked in the PTX when NVRTC is at hand).
                for geo in [Geometry { gens: 1, gen: 0 }, Geometry { gens: 3, gen: 1 }] {
                    let k = geo.kernel(k);
                    let mut params = pushed(op, form);
                    if geo.gens > 1 {
                        params = params.replace(')', ", u32 gens, u32 gen)");
                    }
                    if let Some(ptx) = crate::kernel::ptx::entries() {
                        assert_eq!(
                            ptx.get(k.name()),
                            Some(&crate::kernel::ptx::sizes(&params)),
                            "{}: {params}",
                            k.name()
                        );
                    }
                }
            }
        }
        assert!(
            src.contains("#define BL_RECORD_PARAMS const u8* data, u64 width, u64 n, u64 seed\n")
        );
    }

    #[test]
    fn word_keys_get_several_keys_per_thread() {
        assert_eq!(
            keys_per_cta(Form::U64),
            u64::from(THREADS * KEYS_PER_THREAD)
        );
        assert_eq!(
            keys_per_cta(Form::Hashes),
            u64::from(THREADS * KEYS_PER_THREAD)
        );
        assert_eq!(keys_per_cta(Form::Records), u64::from(THREADS));
        assert_eq!(keys_per_cta(Form::Strings), u64::from(THREADS));
    }
}
