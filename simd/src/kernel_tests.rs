//! Every ISA's block operations and integer hasher, for every layout, against the core's
//! reference (`block_mask`, `xxh64_u64`), one key at a time: the lane shifts, salts and XXH64
//! constants of each kernel must be the core's, or these fail.

use bloomlanes_core::{block_mask, xxh64_u64, Layout};

use crate::shape::{with_shape, Shape};
use crate::vector::{self, Isa};

/// Hashes that stress the lane formula: the extremes of `lo32`, and random ones.
fn hashes() -> Vec<u64> {
    let mut out = vec![
        0,
        u64::MAX,
        0xffff_ffff,
        1 << 32,
        1,
        0x8000_0000,
        0x7fff_ffff,
    ];
    let mut state = 0x1234_5678_9abc_def0u64;
    for _ in 0..if cfg!(miri) { 20 } else { 2000 } {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.push(z ^ (z >> 31));
    }
    out
}

/// Compares `I`'s mask, lookup and insert on one block of `S` with the core for every hash.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn check_blocks<I: Isa, S: Shape>(name: &str) {
    let layout = S::LAYOUT;
    let per = layout.block_u32s();
    let hashes = hashes();
    for (n, &h) in hashes.iter().enumerate() {
        let want = block_mask(layout, h);
        let mut got = [0xdead_beefu32; 32];
        // SAFETY: the CPU supports I (caller).
        unsafe { vector::mask_words::<I, S>(h, &mut got) };
        assert_eq!(got[..per], want[..per], "{name} {layout} mask of {h:#x}");
        assert!(
            got[per..].iter().all(|&w| w == 0xdead_beef),
            "{name} {layout} mask wrote past the block"
        );
        // A block one word into its storage (not vector-aligned) with some bits set: either
        // another key's mask (so lookups see both hits and misses) or all of this key's bits.
        let other = block_mask(layout, hashes[(n * 7 + 3) % hashes.len()]);
        let mut storage = [0u32; 33];
        for (i, w) in storage[1..=per].iter_mut().enumerate() {
            *w = if n % 3 == 0 {
                want[i] | other[i]
            } else {
                other[i]
            };
        }
        let block = &storage[1..=per];
        let present = block.iter().zip(&want).all(|(&b, &m)| b & m == m);
        // SAFETY: `block` holds one block of S; the CPU supports I (caller).
        let got = unsafe { vector::contains::<I, S>(block.as_ptr(), h) };
        assert_eq!(got, present, "{name} {layout} contains {h:#x}");
        let mut inserted = storage;
        // SAFETY: words 1 ..= per of `inserted` are one block of S, exclusively ours; the CPU
        // supports I (caller).
        unsafe { vector::insert::<I, S>(inserted.as_mut_ptr().add(1), h) };
        for i in 0..33 {
            let want_word = if (1..=per).contains(&i) {
                storage[i] | want[i - 1]
            } else {
                storage[i]
            };
            assert_eq!(
                inserted[i], want_word,
                "{name} {layout} insert {h:#x} word {i}"
            );
        }
    }
}

/// Compares `I`'s integer hasher with `xxh64_u64` for every batch length up to 40 (every tail of
/// the vector loops) and a few seeds.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn check_hash<I: Isa>(name: &str) {
    let keys = hashes();
    for seed in [0, 1, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
        for n in 0..40 {
            let keys = &keys[n..2 * n];
            let mut out = vec![0u64; n];
            // SAFETY: the CPU supports I (caller); `out` is as long as `keys`.
            unsafe { I::hash_u64(keys, seed, &mut out) };
            for (i, (&k, &o)) in keys.iter().zip(&out).enumerate() {
                assert_eq!(o, xxh64_u64(k, seed), "{name} hash {i} of {n}, seed {seed}");
            }
        }
    }
}

/// [`check_blocks`] for every layout, and [`check_hash`].
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn check_isa<I: Isa>(name: &str) {
    for layout in Layout::ALL {
        // SAFETY: the CPU supports I (caller).
        with_shape!(layout, S => unsafe { check_blocks::<I, S>(name) });
    }
    // SAFETY: the CPU supports I (caller).
    unsafe { check_hash::<I>(name) };
}

#[test]
fn portable_kernel_matches_the_core() {
    // SAFETY: the portable ISA is whatever the build targets.
    unsafe { check_isa::<crate::portable::Portable>("portable") };
}

#[cfg(target_arch = "x86_64")]
mod x86_64 {
    use super::check_isa;
    use crate::arch::x86_64::{avx2::Avx2, avx512::Avx512, has_avx2, has_avx512, sse2::Sse2};

    fn skip(name: &str) {
        bloomlanes_testkit::skip(format_args!(
            "the {name} kernel test: this CPU lacks {name}"
        ));
    }

    /// A test of one x86 ISA's kernels: `check_isa` compiled with `$feature`, run if the CPU
    /// `$has` it, else skipped with a visible line.
    macro_rules! isa_test {
        ($test:ident, $isa:ty, $name:literal, $feature:literal, $has:expr) => {
            #[test]
            fn $test() {
                /// # Safety
                /// The CPU supports the ISA.
                #[target_feature(enable = $feature)]
                unsafe fn check() {
                    // SAFETY: the ISA is enabled for this function (its caller's contract).
                    unsafe { check_isa::<$isa>($name) }
                }
                if $has {
                    // SAFETY: the CPU's support of the ISA was just detected.
                    unsafe { check() }
                } else {
                    skip($name);
                }
            }
        };
    }

    isa_test!(sse2_kernel_matches_the_core, Sse2, "sse2", "sse2", true);
    isa_test!(
        avx2_kernel_matches_the_core,
        Avx2,
        "avx2",
        "avx2",
        has_avx2()
    );
    isa_test!(
        avx512_kernel_matches_the_core,
        Avx512,
        "avx512",
        "avx512f,avx512dq",
        has_avx512()
    );

    #[test]
    fn avx2_lanes_only_hasher_matches_the_core() {
        let keys: Vec<u64> = (0..37u64)
            .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let mut out = vec![0u64; keys.len()];
        if crate::bench_support::hash_u64_avx2(&keys, 7, &mut out) {
            for (&k, &o) in keys.iter().zip(&out) {
                assert_eq!(o, bloomlanes_core::xxh64_u64(k, 7));
            }
        } else {
            skip("avx2");
        }
    }
}
