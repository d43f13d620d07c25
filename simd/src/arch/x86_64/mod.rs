//! x86_64 kernels: SSE2 (baseline), AVX2, AVX-512 (F + DQ), each behind `#[target_feature]`.

pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod sse2;

/// Whether the AVX2 path hashes `u64` keys 4 at a time in vector registers (emulating the 64-bit
/// multiply with three `vpmuludq`) rather than one at a time with scalar `imul`. Measured on the
/// reference AMD EPYC (Zen 3) machine by the `hash_u64` group of the CPU benchmark; see
/// `BENCH_RESULTS.md`.
pub(crate) const VECTOR_HASH_AVX2: bool = true;

/// Whether the CPU has AVX2.
pub(crate) fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
}

/// Whether the CPU has what the AVX-512 path uses (AVX-512F and AVX-512DQ).
pub(crate) fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq")
}
