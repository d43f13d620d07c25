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

// Insert: OR the lane bits into the block with the fewest atomics (two 32-bit lanes share one
// 64-bit atomic; the byte image is little-endian, so lane 2j is the low half).
__device__ __forceinline__ void bl_insert_hashed(u32* __restrict__ words, u64 blocks, u64 h) {
  u64 blk = bl_block(h, blocks);
  u32 b[BL_LANES]; bl_bits((u32)h, b);
  u64* w = (u64*)(words + blk * BL_BLOCK_U32S);
#if BL_WORD_BITS == 32
  #pragma unroll
  for (int j = 0; j < BL_LANES / 2; j++) atomicOr(w + j, (u64)(1u << b[2 * j]) | ((u64)(1u << b[2 * j + 1]) << 32));
#else
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) atomicOr(w + i, 1ull << b[i]);
#endif
}

// Lookup: the whole block in 16-byte vector loads, then every lane tested.
__device__ __forceinline__ bool bl_contains_hashed(const u32* __restrict__ words, u64 blocks, u64 h) {
  u64 blk = bl_block(h, blocks);
  const uint4* p = (const uint4*)(words + blk * BL_BLOCK_U32S);
  uint4 v[BL_BLOCK_VEC4];
  #pragma unroll
  for (int k = 0; k < BL_BLOCK_VEC4; k++) v[k] = __ldg(p + k);
  const u32* w = (const u32*)v;
  u32 b[BL_LANES]; bl_bits((u32)h, b);
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
