// Lookups that write a bitmap at given positions or a list of positions.
// Appends `value` to list[0, cap) for every lane of the warp with r set: one atomic on *count per
// warp. Every lane of the warp must call it together.
__device__ __forceinline__ void bl_append(bool r, u32 value, u32* __restrict__ list, u64 cap, u64* count) {
  u32 m = __ballot_sync(0xffffffffu, r);
  if (m == 0) return;
  u32 lane = threadIdx.x & 31, leader = __ffs(m) - 1;
  u64 first = 0;
  if (lane == leader) first = atomicAdd(count, (u64)__popc(m));
  first = __shfl_sync(0xffffffffu, first, leader);
  if (r) {
    u64 slot = first + __popc(m & ((1u << lane) - 1u));
    if (slot < cap) list[slot] = value;
  }
}
// Partitioned lookups, pass 4: probe the grouped hashes in their grouped order (so that the filter
// blocks probed at any moment lie in one or two partitions, in L2). hashes[i] is the hash of key
// pos[i] of a chunk of n keys that starts at key `base` of the batch; a maybe-present key sets
// bit base + pos[i] of `bits` (zeroed by the host), or appends base + pos[i] to the list.
// bl_positions_keys is the unpartitioned screening form: it appends i for every maybe-present
// key i. Entry points for both geometries (block.cu), named with SUFFIX.
#define BL_PROBE_ENTRIES(SUFFIX, G) \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_probe_bitmap##SUFFIX(const u32* words, u64 blocks, const u64* hashes, const u32* pos, u64 n, u64 base, u32* bits BL_GEO_PARAMS_##G) { \
  bl_each_key(hashes, n, [&](u64 i, u64 h) { \
    if (i < n && bl_contains_geo(BL_GEO_##G, words, blocks, h)) { \
      u32 p = pos[i]; \
      if (p < n) { u64 q = base + p; atomicOr(bits + (q >> 5), 1u << (q & 31)); } \
    } \
  }); \
} \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_probe_list##SUFFIX(const u32* words, u64 blocks, const u64* hashes, const u32* pos, u64 n, u64 base, u32* list, u64 cap, u64* count BL_GEO_PARAMS_##G) { \
  bl_each_key(hashes, n, [=](u64 i, u64 h) { \
    u32 p = i < n ? pos[i] : 0u; \
    bool r = i < n && p < n && bl_contains_geo(BL_GEO_##G, words, blocks, h); \
    bl_append(r, (u32)(base + p), list, cap, count); \
  }); \
} \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_positions_keys##SUFFIX(const u32* words, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32* list, u64 cap, u64* count BL_GEO_PARAMS_##G) { \
  bl_each_key(keys, n, [&](u64 i, u64 k) { \
    bool r = i < n ? bl_contains_geo(BL_GEO_##G, words, blocks, bl_key_hash(k, seed, mode)) : false; \
    bl_append(r, (u32)i, list, cap, count); \
  }); \
}
