// Sliding-window filters (bloomlanes_core::window): gens = g + 1 generations of the image,
// interleaved by block: block b of generation j is block b * gens + j of the array, so a lookup
// reads the gens copies of its block from consecutive memory. Keys: mode 0 = u64 keys (hashed),
// 1 = hashes; the host splits batches at generation boundaries and clears generations itself.
__device__ __forceinline__ const u32* bl_window_block(const u32* words, u64 blk, u32 gens, u32 j) {
  return words + (blk * gens + j) * BL_BLOCK_U32S;
}
// Whether all of the key's bits are set in one generation.
__device__ __forceinline__ bool bl_window_has(const u32* __restrict__ words, u64 blocks, u32 gens, u64 h) {
  u64 blk = bl_block(h, blocks);
  for (u32 j = 0; j < gens; j++) {
    if (bl_block_has(bl_window_block(words, blk, gens, j), (u32)h)) return true;
  }
  return false;
}
// Sets the keys' bits in generation `gen`.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_window_insert(u32* words, u64 blocks, u32 gens, u32 gen, const u64* keys, u64 n, u64 seed, int mode) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    if (i < n) {
      u64 h = bl_key_hash(k, seed, mode);
      bl_insert_block(words + (bl_block(h, blocks) * gens + gen) * BL_BLOCK_U32S, (u32)h);
    }
  });
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_window_contains(const u32* words, u64 blocks, u32 gens, const u64* keys, u64 n, u64 seed, int mode, u8* out) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    if (i < n) out[i] = bl_window_has(words, blocks, gens, bl_key_hash(k, seed, mode));
  });
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_window_bitmap(const u32* words, u64 blocks, u32 gens, const u64* keys, u64 n, u64 seed, int mode, u32* bits) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    bool r = i < n ? bl_window_has(words, blocks, gens, bl_key_hash(k, seed, mode)) : false;
    bl_put_bits(bits, i, n, r);
  });
}
// Clears generation `gen`: one thread per u32 word of it (blocks * BL_BLOCK_U32S words).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_window_clear(u32* words, u64 blocks, u32 gens, u32 gen) {
  u64 i = bl_thread_index();
  if (i < blocks * BL_BLOCK_U32S) {
    u64 b = i / BL_BLOCK_U32S, w = i % BL_BLOCK_U32S;
    words[(b * gens + gen) * BL_BLOCK_U32S + w] = 0;
  }
}
