// One hash against one block of the filter: the lane bits, the block mask, insert and lookup.
// The layout comes from BL_LANES, BL_WORD_BITS, BL_LANE_SHIFT and BL_BLOCK_U32S, the salts from
// BL_SALTS (all generated from bloomlanes-core). The block index is ((h >> 32) * blocks) >> 32
// and lane i's bit is (lo * salt[i]) >> BL_LANE_SHIFT, lo = the low 32 bits of h.
#define BL_BLOCK_VEC4 (BL_BLOCK_U32S / 4)

__device__ __forceinline__ u64 bl_block(u64 h, u64 blocks) { return ((h >> 32) * blocks) >> 32; }

// The bit index the key sets in each lane.
__device__ __forceinline__ void bl_bits(u32 lo, u32 b[BL_LANES]) {
  const u32 salt[BL_LANES] = {BL_SALTS};
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) b[i] = (lo * salt[i]) >> BL_LANE_SHIFT;
}

// The block mask as u32 words of the block's byte image (for the bulk-reduce insert).
__device__ __forceinline__ void bl_mask(u32 lo, u32 m[BL_BLOCK_U32S]) {
  u32 b[BL_LANES]; bl_bits(lo, b);
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
#if BL_WORD_BITS == 32
    m[i] = 1u << b[i];
#else
    m[2 * i] = b[i] < 32 ? 1u << b[i] : 0u; m[2 * i + 1] = b[i] >= 32 ? 1u << (b[i] - 32) : 0u;
#endif
  }
}

// Insert: OR the lane bits into the block that starts at `block` with the fewest atomics (two
// 32-bit lanes share one 64-bit atomic; the byte image is little-endian, so lane 2j is the low half).
__device__ __forceinline__ void bl_insert_block(u32* __restrict__ block, u32 lo) {
  u32 b[BL_LANES]; bl_bits(lo, b);
  u64* w = (u64*)block;
#if BL_WORD_BITS == 32
  #pragma unroll
  for (int j = 0; j < BL_LANES / 2; j++) atomicOr(w + j, (u64)(1u << b[2 * j]) | ((u64)(1u << b[2 * j + 1]) << 32));
#else
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) atomicOr(w + i, 1ull << b[i]);
#endif
}
__device__ __forceinline__ void bl_insert_hashed(u32* __restrict__ words, u64 blocks, u64 h) {
  bl_insert_block(words + bl_block(h, blocks) * BL_BLOCK_U32S, (u32)h);
}

// Lookup: the whole block that starts at `block` in 16-byte vector loads, then every lane tested.
// `block` must not be written while the kernel runs (read through the read-only cache).
__device__ __forceinline__ bool bl_block_has(const u32* __restrict__ block, u32 lo) {
  const uint4* p = (const uint4*)block;
  uint4 v[BL_BLOCK_VEC4];
  #pragma unroll
  for (int k = 0; k < BL_BLOCK_VEC4; k++) v[k] = __ldg(p + k);
  const u32* w = (const u32*)v;
  u32 b[BL_LANES]; bl_bits(lo, b);
  bool ok = true;
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
#if BL_WORD_BITS == 32
    ok &= (w[i] >> b[i]) & 1u;
#else
    ok &= (((u64)w[2 * i] | ((u64)w[2 * i + 1] << 32)) >> b[i]) & 1ull;
#endif
  }
  return ok;
}
__device__ __forceinline__ bool bl_contains_hashed(const u32* __restrict__ words, u64 blocks, u64 h) {
  return bl_block_has(words + bl_block(h, blocks) * BL_BLOCK_U32S, (u32)h);
}
// Where the blocks of an image lie (the key kernels are templates on it). BlFlat: a static image,
// block b at b * BL_BLOCK_U32S (the arithmetic of bl_insert_hashed and bl_contains_hashed).
// BlGens: a sliding window's gens generations interleaved by block (block b of generation j is
// block b * gens + j), so that a lookup reads the gens copies of its block from consecutive
// memory; inserts go to generation gen, lookups find a key whose bits are all set in one
// generation.
struct BlFlat {
  __device__ __forceinline__ u32* insert_block(u32* words, u64 b) const { return words + b * BL_BLOCK_U32S; }
  __device__ __forceinline__ bool has(const u32* __restrict__ words, u64 b, u64 h) const {
    return bl_block_has(words + b * BL_BLOCK_U32S, (u32)h);
  }
};
struct BlGens {
  u32 gens, gen;
  __device__ __forceinline__ u32* insert_block(u32* words, u64 b) const { return words + (b * gens + gen) * BL_BLOCK_U32S; }
  __device__ __forceinline__ bool has(const u32* __restrict__ words, u64 b, u64 h) const {
    for (u32 j = 0; j < gens; j++) {
      if (bl_block_has(words + (b * gens + j) * BL_BLOCK_U32S, (u32)h)) return true;
    }
    return false;
  }
};
template <class Geo>
__device__ __forceinline__ void bl_insert_geo(const Geo& g, u32* __restrict__ words, u64 blocks, u64 h) {
  bl_insert_block(g.insert_block(words, bl_block(h, blocks)), (u32)h);
}
template <class Geo>
__device__ __forceinline__ bool bl_contains_geo(const Geo& g, const u32* __restrict__ words, u64 blocks, u64 h) {
  return g.has(words, bl_block(h, blocks), h);
}
// The geometries as entry points take them: BL_GEO_PARAMS_<G> are the trailing parameters of
// geometry G's entry points (none for FLAT) and BL_GEO_<G> builds it from them. Entry-point
// macros take the name G (FLAT or GENS) and paste it, so that the parameter list's commas never
// pass through a macro argument.
#define BL_GEO_PARAMS_FLAT
#define BL_GEO_FLAT (BlFlat{})
#define BL_GEO_PARAMS_GENS , u32 gens, u32 gen
#define BL_GEO_GENS (BlGens{gens, gen})
// One bit per key into a bitmap of u32 words, for kernels whose warps hold 32 consecutive keys
// starting at a multiple of 32 (key i of lane i % 32): the warp's ballot is word i / 32. Words are
// written while the 64-bit word they belong to starts before n (so the tail of the last u64 word
// is cleared) and never past it: the output holds n.div_ceil(64) u64 words.
__device__ __forceinline__ void bl_put_bits(u32* __restrict__ bits, u64 i, u64 n, bool r) {
  u32 m = __ballot_sync(0xffffffffu, r);
  if ((threadIdx.x & 31) == 0 && ((i >> 6) << 6) < n) bits[i >> 5] = m;
}
