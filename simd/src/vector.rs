//! The per-ISA surface and the block operations written once above it.
//!
//! An instruction set offers a [`Vector`] (one register of `u32` words, in the style of
//! hashbrown's `Group` and memchr's `Vector`): load and store a register's part of a block,
//! build the registers of a key's block mask from its hash, and the three bit operations that a
//! lookup or an insert needs. [`contains`], [`insert`] and [`mask_words`] are the only loops over
//! a block's registers, for every instruction set and layout.
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

/// Whether every bit of `hash`'s mask is set in the block at `block`, with `V` registers.
///
/// # Safety
/// `block` points to a block of `S` (`S::LAYOUT.block_u32s()` readable `u32`s), which `V`
/// tiles; the CPU supports `V`.
#[inline(always)]
unsafe fn contains_with<V: Vector, S: Shape>(block: *const u32, hash: u64) -> bool {
    // SAFETY: the CPU supports V and `block` points to a readable block of S (caller); the
    // parts read are below `regs`, the block's register count.
    unsafe {
        let mask = V::block_mask::<S>(hash as u32);
        let mut missing = V::zero();
        for (i, m) in mask.into_iter().enumerate().take(regs::<V, S>()) {
            missing = missing.or(m.clear_in(V::load_part::<S>(block, i)));
        }
        missing.is_zero()
    }
}

/// ORs `hash`'s mask into the block at `block`, with `V` registers.
///
/// # Safety
/// As [`contains_with`], and the block's words are writable and not accessed by anyone else
/// during the call.
#[inline(always)]
unsafe fn insert_with<V: Vector, S: Shape>(block: *mut u32, hash: u64) {
    // SAFETY: the CPU supports V and `block` points to a block of S that is writable and
    // exclusively ours for the call (caller); the parts read and written are below `regs`, the
    // block's register count.
    unsafe {
        let mask = V::block_mask::<S>(hash as u32);
        for (i, m) in mask.into_iter().enumerate().take(regs::<V, S>()) {
            V::load_part::<S>(block, i).or(m).store_part::<S>(block, i);
        }
    }
}

/// Writes `hash`'s mask as the block's words into `out[.. S::LAYOUT.block_u32s()]`, with `V`
/// registers.
///
/// # Safety
/// `V` tiles a block of `S`; the CPU supports `V`.
#[inline(always)]
unsafe fn mask_words_with<V: Vector, S: Shape>(hash: u64, out: &mut [u32; 32]) {
    // SAFETY: the CPU supports V (caller); `out` is 32 words, at least one block of S (the
    // widest block is 32 words), exclusively borrowed, and the parts written are below `regs`,
    // the block's register count.
    unsafe {
        let mask = V::block_mask::<S>(hash as u32);
        for (i, m) in mask.into_iter().enumerate().take(regs::<V, S>()) {
            m.store_part::<S>(out.as_mut_ptr(), i);
        }
    }
}

/// Whether every bit of `hash`'s mask is set in the block of `S` that starts at `block`.
///
/// # Safety
/// `block` points to `S::LAYOUT.block_u32s()` readable `u32`s; the CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn contains<I: Isa, S: Shape>(block: *const u32, hash: u64) -> bool {
    const { assert!(tiles::<I, S>()) };
    // SAFETY: `block` points to a readable block of S and the CPU supports I, so both of I's
    // vectors (this function's contract and `Isa`'s); the vector chosen by `uses_wide` tiles the
    // block (the assertion above). That is all `contains_with` needs.
    unsafe {
        if uses_wide::<I, S>() {
            contains_with::<I::Wide, S>(block, hash)
        } else {
            contains_with::<I::Narrow, S>(block, hash)
        }
    }
}

/// ORs `hash`'s mask into the block of `S` that starts at `block`.
///
/// # Safety
/// `block` points to `S::LAYOUT.block_u32s()` writable `u32`s that no one else accesses during
/// the call; the CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn insert<I: Isa, S: Shape>(block: *mut u32, hash: u64) {
    const { assert!(tiles::<I, S>()) };
    // SAFETY: `block` points to a block of S that is writable and ours for the call, and the CPU
    // supports I, so both of I's vectors (this function's contract and `Isa`'s); the vector
    // chosen by `uses_wide` tiles the block (the assertion above). That is all `insert_with`
    // needs.
    unsafe {
        if uses_wide::<I, S>() {
            insert_with::<I::Wide, S>(block, hash)
        } else {
            insert_with::<I::Narrow, S>(block, hash)
        }
    }
}

/// Writes `hash`'s mask for a block of `S` as `S::LAYOUT.block_u32s()` words into `out` (the
/// rest is untouched).
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn mask_words<I: Isa, S: Shape>(hash: u64, out: &mut [u32; 32]) {
    const { assert!(tiles::<I, S>()) };
    // SAFETY: the CPU supports I, so both of I's vectors (this function's contract and
    // `Isa`'s); the vector chosen by `uses_wide` tiles the block (the assertion above). That is
    // all `mask_words_with` needs.
    unsafe {
        if uses_wide::<I, S>() {
            mask_words_with::<I::Wide, S>(hash, out)
        } else {
            mask_words_with::<I::Narrow, S>(hash, out)
        }
    }
}
