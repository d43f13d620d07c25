//! x86_64 kernels: SSE2 (baseline), AVX2, AVX-512 (F + DQ; BW + VL in the counting kernels), each
//! behind `#[target_feature]`.

pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod counters_8x32;
pub(crate) mod retrieval;
pub(crate) mod sse2;

/// Whether the AVX2 path hashes `u64` keys 8 at a time, 4 in vector lanes (the 64-bit multiply
/// emulated with three `vpmuludq`) interleaved with 4 by scalar `imul`, rather than 4 at a time in
/// lanes only. Measured on the reference 2-core AMD EPYC (Zen 3) with the `ab` example, 64 KiB
/// lookups, best of 21 × 4 batches of 256 Ki keys, 5 runs: lanes only 264–273 M keys/s, scalar
/// only 277–280, 4 + 2 scalar 282–284, 4 + 4 scalar 292–299, 4 + 8 scalar 286–288.
pub(crate) const HYBRID_HASH_AVX2: bool = true;

/// Whether the CPU has AVX2.
pub(crate) fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
}

/// Whether the CPU has what the AVX-512 path uses (AVX-512F and AVX-512DQ; the counting kernels
/// also use AVX-512BW and AVX-512VL, which every CPU with AVX-512DQ has).
pub(crate) fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512dq")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl")
}
