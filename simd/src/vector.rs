//! The per-ISA surface and the block operations written once above it.
//!
//! An instruction set offers a [`Vector`] (one register of `u32` words, in the style of
//! hashbrown's `Group` and memchr's `Vector`): load and store a register's part of a block,
//! build the registers of a key's block mask from its hash, and the three bit operations that a
//! lookup or an insert needs. [`contains`], [`insert`] and [`mask_words`] are the only loops over
//! a block's registers, for every instruction set and layout (and [`on_vector`] the one choice
//! of the register for a layout).
//!
//! An [`Isa`] names two vectors: [`Isa::Wide`] for blocks at least as wide as it, and
//! [`Isa::Narrow`] for smaller ones (AVX-512 leaves the 256-bit 8x32 block to AVX2 registers),
//! plus its integer-key hasher.
//!
//! Everything here is `#[inline(always)]` and `unsafe` with the contract "the CPU supports the
//! vector's instruction set": it is compiled inside the `#[target_feature]` entry points of
//! each ISA (see `bulk::entry_points!`), which the dispatcher calls only on CPUs that have it.

use crate::shape::Shape;

/// The most registers a block mask takes: a 1024-bit block in 128-bit registers.
pub(crate) const MAX_REGS: usize = 8;

/// One vector register of `u32` words of one instruction set.
pub(crate) trait Vector: Copy {
    /// `u32` words per register.
    const WORDS: usize;

    /// A register with every bit clear.
    ///
    /// # Safety
    /// The CPU supports the vector's instruction set.
    unsafe fn zero() -> Self;

    /// Reads the [`Vector::WORDS`] words from `p` on.
    ///
    /// # Safety
    /// The words `p .. p + WORDS` are readable (`p` need only be aligned for `u32`), and the CPU
    /// supports the vector's instruction set.
    unsafe fn load(p: *const u32) -> Self;

    /// Writes the register to the [`Vector::WORDS`] words from `p` on.
    ///
    /// # Safety
    /// The words `p .. p + WORDS` are writable and not accessed by anyone else during the call
    /// (`p` need only be aligned for `u32`), and the CPU supports the vector's instruction set.
    unsafe fn store(self, p: *mut u32);

    /// Register `part` of the block of `S` that starts at `block`: by default its words
    /// `part × WORDS .. (part + 1) × WORDS`. An ISA may map registers to a block's words
    /// differently (the portable one keeps the low and the high halves of 64-bit lanes in
    /// separate registers); [`Vector::store_part`] and [`Vector::block_mask`] use the same map.
    ///
    /// # Safety
    /// `block` points to `S::LAYOUT.block_u32s()` readable `u32`s, `part` is below
    /// `S::LAYOUT.block_u32s() / WORDS`, and the CPU supports the vector's instruction set.
    #[inline(always)]
    unsafe fn load_part<S: Shape>(block: *const u32, part: usize) -> Self {
        // SAFETY: `part < block_u32s / WORDS` (caller), so the register's words lie in the
        // block, which is readable (caller); the CPU supports the vector (caller).
        unsafe { Self::load(block.add(part * Self::WORDS)) }
    }

    /// Writes the register back as part `part` of the block of `S` at `block` (the map of
    /// [`Vector::load_part`]).
    ///
    /// # Safety
    /// As [`Vector::load_part`], and the block's words are writable and not accessed by anyone
    /// else during the call.
    #[inline(always)]
    unsafe fn store_part<S: Shape>(self, block: *mut u32, part: usize) {
        // SAFETY: `part < block_u32s / WORDS` (caller), so the register's words lie in the
        // block, which is writable and ours (caller); the CPU supports the vector (caller).
        unsafe { self.store(block.add(part * Self::WORDS)) }
    }

    /// The mask that a hash whose low 32 bits are `h` sets in a block of `S` (the core's
    /// [`block_mask`](bloomlanes_core::block_mask)), as the block's registers in the order of
    /// [`Vector::load_part`]. Only the first `S::LAYOUT.block_u32s() / WORDS` are meaningful.
    ///
    /// # Safety
    /// The CPU supports the vector's instruction set.
    unsafe fn block_mask<S: Shape>(h: u32) -> [Self; MAX_REGS];

    /// `self | other`.
    ///
    /// # Safety
    /// The CPU supports the vector's instruction set.
    unsafe fn or(self, other: Self) -> Self;

    /// The bits of `self` that are clear in `block`: `self & !block`.
    ///
    /// # Safety
    /// The CPU supports the vector's instruction set.
    unsafe fn clear_in(self, block: Self) -> Self;

    /// Whether every bit is clear.
    ///
    /// # Safety
    /// The CPU supports the vector's instruction set.
    unsafe fn is_zero(self) -> bool;
}

/// One instruction set: its vectors and its hasher of integer keys. A CPU that supports the
/// instruction set supports both of its vectors (AVX-512F implies AVX2, whose registers are
/// AVX-512's [`Isa::Narrow`]).
pub(crate) trait Isa {
    /// The vector for blocks at least as wide as its register.
    type Wide: Vector;
    /// The vector for blocks narrower than [`Isa::Wide`]'s register (the same type where no
    /// block is narrower).
    type Narrow: Vector;

    /// `out[i] = xxh64_u64(keys[i], seed)` for every `i`; `out.len() == keys.len()`.
    ///
    /// # Safety
    /// The CPU supports the instruction set.
    unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]);
}

/// Implements [`Isa`] for `$isa`: its vectors and its hasher of integer keys, `$hash(keys,
/// seed, out)` on equally long slices (scalar XXH64 if none is named), which may use only the
/// ISA's instructions.
macro_rules! isa {
    ($isa:ty, $wide:ty, $narrow:ty) => {
        crate::vector::isa!($isa, $wide, $narrow, crate::vector::hash_u64_scalar);
    };
    ($isa:ty, $wide:ty, $narrow:ty, $hash:path) => {
        impl crate::vector::Isa for $isa {
            type Wide = $wide;
            type Narrow = $narrow;

            #[inline(always)]
            unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]) {
                debug_assert_eq!(keys.len(), out.len());
                let n = keys.len().min(out.len());
                // SAFETY: the CPU supports the ISA (contract); the slices are `n` long.
                unsafe { $hash(&keys[..n], seed, &mut out[..n]) }
            }
        }
    };
}
pub(crate) use isa;

/// `out[i] = xxh64_u64(keys[i], seed)`, one key at a time (ISAs without a 64-bit multiply in
/// their lanes, where scalar `imul` is faster).
///
/// # Safety
/// None (safe code; `unsafe` only to share the hashers' type).
#[inline(always)]
pub(crate) unsafe fn hash_u64_scalar(keys: &[u64], seed: u64, out: &mut [u64]) {
    for (o, &k) in out.iter_mut().zip(keys) {
        *o = bloomlanes_core::xxh64_u64(k, seed);
    }
}

/// The methods of [`Vector`] that map to one intrinsic each, for a register type of
/// `words` words: `zero`, `load` and `store` (unaligned), `or`, `andnot` (`!a & b`) and the
/// test `is_zero` (`|v| expression`). To be expanded in the `impl Vector` of an x86 register
/// type, whose intrinsics the vector's instruction set provides.
macro_rules! vector_ops {
    (words: $w:expr, zero: $zero:path, load: $load:path, store: $store:path, or: $or:path,
     andnot: $andnot:path, is_zero: |$v:ident| $is_zero:expr) => {
        const WORDS: usize = $w;

        #[inline(always)]
        unsafe fn zero() -> Self {
            // SAFETY: the CPU supports the vector's instruction set (trait contract).
            unsafe { $zero() }
        }

        #[inline(always)]
        unsafe fn load(p: *const u32) -> Self {
            // SAFETY: the CPU supports the vector's instruction set and the register's bytes at
            // `p` are readable (trait contract); the load has no alignment requirement.
            unsafe { $load(p.cast()) }
        }

        #[inline(always)]
        unsafe fn store(self, p: *mut u32) {
            // SAFETY: the CPU supports the vector's instruction set and the register's bytes at
            // `p` are writable and ours (trait contract); the store has no alignment
            // requirement.
            unsafe { $store(p.cast(), self) }
        }

        #[inline(always)]
        unsafe fn or(self, other: Self) -> Self {
            // SAFETY: the CPU supports the vector's instruction set (trait contract).
            unsafe { $or(self, other) }
        }

        #[inline(always)]
        unsafe fn clear_in(self, block: Self) -> Self {
            // SAFETY: the CPU supports the vector's instruction set (trait contract).
            unsafe { $andnot(block, self) }
        }

        #[inline(always)]
        unsafe fn is_zero(self) -> bool {
            let $v = self;
            // SAFETY: the CPU supports the vector's instruction set (trait contract).
            unsafe { $is_zero }
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(crate) use vector_ops;

/// Whether blocks of `S` are held in [`Isa::Wide`] registers (else in [`Isa::Narrow`] ones).
const fn uses_wide<I: Isa, S: Shape>() -> bool {
    S::LAYOUT.block_u32s() >= I::Wide::WORDS
}

/// Registers of `V` in one block of `S`.
const fn regs<V: Vector, S: Shape>() -> usize {
    S::LAYOUT.block_u32s() / V::WORDS
}

/// Whether the vector that [`uses_wide`] picks tiles a block of `S` exactly, in at most
/// [`MAX_REGS`] registers (checked at compile time for every ISA and shape in use).
const fn tiles<I: Isa, S: Shape>() -> bool {
    let words = if uses_wide::<I, S>() {
        I::Wide::WORDS
    } else {
        I::Narrow::WORDS
    };
    let block = S::LAYOUT.block_u32s();
    block >= words && block.is_multiple_of(words) && block / words <= MAX_REGS
}

/// One operation on a block of `S`, written for any [`Vector`] that tiles it.
pub(crate) trait OnVector {
    /// The operation's result.
    type Out;

    /// Runs the operation with `V` registers.
    ///
    /// # Safety
    /// `V` tiles a block of `S` in at most [`MAX_REGS`] registers; the CPU supports `V`; the
    /// operation's own conditions on its block hold.
    unsafe fn run<V: Vector, S: Shape>(self) -> Self::Out;
}

/// Runs `op` with the vector of `I` that holds blocks of `S` (see [`uses_wide`]).
///
/// # Safety
/// The CPU supports `I`; `op`'s own conditions on its block hold.
#[inline(always)]
pub(crate) unsafe fn on_vector<I: Isa, S: Shape, O: OnVector>(op: O) -> O::Out {
    const { assert!(tiles::<I, S>()) };
    // SAFETY: the CPU supports I, so both of I's vectors (this function's contract and
    // `Isa`'s); the vector chosen by `uses_wide` tiles the block (the assertion above); the
    // operation's conditions are the caller's.
    unsafe {
        if uses_wide::<I, S>() {
            op.run::<I::Wide, S>()
        } else {
            op.run::<I::Narrow, S>()
        }
    }
}

/// Whether every bit of a hash's mask is set in the readable block at the pointer.
struct Contains(*const u32, u64);

impl OnVector for Contains {
    type Out = bool;

    #[inline(always)]
    unsafe fn run<V: Vector, S: Shape>(self) -> bool {
        // SAFETY: the CPU supports V and the block is readable (caller); the parts read are
        // below `regs`, the block's register count.
        unsafe {
            let mask = V::block_mask::<S>(self.1 as u32);
            let mut missing = V::zero();
            for (i, m) in mask.into_iter().enumerate().take(regs::<V, S>()) {
                missing = missing.or(m.clear_in(V::load_part::<S>(self.0, i)));
            }
            missing.is_zero()
        }
    }
}

/// ORs a hash's mask into the writable block at the pointer, which no one else accesses.
struct Insert(*mut u32, u64);

impl OnVector for Insert {
    type Out = ();

    #[inline(always)]
    unsafe fn run<V: Vector, S: Shape>(self) {
        // SAFETY: the CPU supports V and the block is writable and ours (caller); the parts
        // read and written are below `regs`, the block's register count.
        unsafe {
            let mask = V::block_mask::<S>(self.1 as u32);
            for (i, m) in mask.into_iter().enumerate().take(regs::<V, S>()) {
                V::load_part::<S>(self.0, i)
                    .or(m)
                    .store_part::<S>(self.0, i);
            }
        }
    }
}

/// Whether every bit of `hash`'s mask is set in the block of `S` that starts at `block`.
///
/// # Safety
/// `block` points to `S::LAYOUT.block_u32s()` readable `u32`s; the CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn contains<I: Isa, S: Shape>(block: *const u32, hash: u64) -> bool {
    // SAFETY: the caller's contract.
    unsafe { on_vector::<I, S, _>(Contains(block, hash)) }
}

/// ORs `hash`'s mask into the block of `S` that starts at `block`.
///
/// # Safety
/// `block` points to `S::LAYOUT.block_u32s()` writable `u32`s that no one else accesses during
/// the call; the CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn insert<I: Isa, S: Shape>(block: *mut u32, hash: u64) {
    // SAFETY: the caller's contract.
    unsafe { on_vector::<I, S, _>(Insert(block, hash)) }
}

/// Writes `hash`'s mask for a block of `S` as `S::LAYOUT.block_u32s()` words into `out` (the
/// rest is untouched): its insert into zeroed words.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn mask_words<I: Isa, S: Shape>(hash: u64, out: &mut [u32; 32]) {
    out[..S::LAYOUT.block_u32s()].fill(0);
    // SAFETY: the first `block_u32s <= 32` words of `out` are one block of S, exclusively
    // borrowed; the CPU supports I (caller).
    unsafe { on_vector::<I, S, _>(Insert(out.as_mut_ptr(), hash)) }
}
