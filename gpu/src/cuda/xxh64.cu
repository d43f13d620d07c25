// XXH64 on the device, the same function as bloomlanes_core::xxh64. Every constant (primes,
// rotations, avalanche shifts, initial accumulators) is a BL_ define generated from core's
// exported constants; this file holds only the algorithm.
__device__ __forceinline__ u64 bl_rotl(u64 x, int r) { return (x << r) | (x >> (64 - r)); }
__device__ __forceinline__ u64 bl_round(u64 acc, u64 input) {
  acc += input * BL_P2; acc = bl_rotl(acc, BL_ROUND_ROTATE); return acc * BL_P1;
}
__device__ __forceinline__ u64 bl_merge(u64 acc, u64 val) {
  acc ^= bl_round(0, val); return acc * BL_P1 + BL_P4;
}
__device__ __forceinline__ u64 bl_avalanche(u64 h) {
  h ^= h >> BL_AVALANCHE_SHIFT0; h *= BL_P2;
  h ^= h >> BL_AVALANCHE_SHIFT1; h *= BL_P3;
  return h ^ (h >> BL_AVALANCHE_SHIFT2);
}
// XXH64 of the 8 little-endian bytes of `key` (bloomlanes_core::xxh64_u64).
__device__ __forceinline__ u64 bl_hash_u64(u64 key, u64 seed) {
  u64 h = seed + BL_SHORT_INIT + 8ull;
  h ^= bl_round(0, key);
  h = bl_rotl(h, BL_TAIL8_ROTATE) * BL_P1 + BL_P4;
  return bl_avalanche(h);
}
__device__ __forceinline__ u64 bl_ld64(const u8* p) {
  u64 v = 0;
  #pragma unroll
  for (int i = 0; i < 8; i++) v |= (u64)p[i] << (8 * i);
  return v;
}
__device__ __forceinline__ u32 bl_ld32(const u8* p) {
  return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24);
}
// XXH64 of `len` bytes at `p` (bloomlanes_core::xxh64).
__device__ u64 bl_xxh64(const u8* p, u64 len, u64 seed) {
  const u8* end = p + len;
  u64 h;
  if (len >= 32) {
    u64 v1 = seed + BL_LANE_INIT0, v2 = seed + BL_LANE_INIT1, v3 = seed + BL_LANE_INIT2, v4 = seed + BL_LANE_INIT3;
    while (end - p >= 32) {
      v1 = bl_round(v1, bl_ld64(p)); v2 = bl_round(v2, bl_ld64(p + 8));
      v3 = bl_round(v3, bl_ld64(p + 16)); v4 = bl_round(v4, bl_ld64(p + 24));
      p += 32;
    }
    h = bl_rotl(v1, BL_MERGE_ROTATE0) + bl_rotl(v2, BL_MERGE_ROTATE1) + bl_rotl(v3, BL_MERGE_ROTATE2) + bl_rotl(v4, BL_MERGE_ROTATE3);
    h = bl_merge(h, v1); h = bl_merge(h, v2); h = bl_merge(h, v3); h = bl_merge(h, v4);
  } else {
    h = seed + BL_SHORT_INIT;
  }
  h += len;
  while (end - p >= 8) { h ^= bl_round(0, bl_ld64(p)); h = bl_rotl(h, BL_TAIL8_ROTATE) * BL_P1 + BL_P4; p += 8; }
  if (end - p >= 4) { h ^= (u64)bl_ld32(p) * BL_P1; h = bl_rotl(h, BL_TAIL4_ROTATE) * BL_P2 + BL_P3; p += 4; }
  while (p < end) { h ^= (u64)(*p) * BL_P5; h = bl_rotl(h, BL_TAIL1_ROTATE) * BL_P1; p++; }
  return bl_avalanche(h);
}
