// Counting filters (bloomlanes_core::counting). Image bit k = (block * L + lane) * W + bit has a
// counter of cbits bits (4 or 8): 32 / cbits counters per u32 word, counter k at bits
// cbits * (k mod 32 / cbits) of word k / (32 / cbits). The image is the projection (bit set iff
// its counter is positive). A batch is all inserts or all deletes, never mixed.
//
// Deletes run in two kernels: bl_count_check marks each key accepted iff all its image bits are
// set before the batch (the image is read only), then bl_count_delete decrements the counters of
// the accepted keys. A counter at the maximum (saturated, sticky) is never decremented; a counter
// at 0 is never decremented either (an *underflow*: the batch asked it for more than it held,
// counted in stats[1]), and each key records in its status the lanes it did decrement, so that
// bl_count_undo can put the counters back exactly. The host (src/counting_delete.rs) turns this
// into the core's key-by-key delete in input order. BL_ACCEPTED (bit 31 of a status; the prelude)
// marks an accepted key, the low bits the lanes it decremented.

// Image bit (= counter) index of lane `lane`'s bit `bit` in block `blk`.
__device__ __forceinline__ u64 bl_cell(u64 blk, int lane, u32 bit) {
  return (blk * BL_LANES + (u64)lane) * BL_WORD_BITS + bit;
}
// The counter word of cell k, and the counter's shift in it. The host passes cbits = 4 or 8.
__device__ __forceinline__ u32* bl_counter_word(u32* counters, u64 k, u32 cbits) {
  return counters + (k >> (cbits == 4 ? 3 : 2));
}
__device__ __forceinline__ u32 bl_counter_shift(u64 k, u32 cbits) {
  return (u32)(k & (cbits == 4 ? 7 : 3)) * cbits;
}
// Counter + 1 unless it is at max; returns its value before. The CAS makes concurrent updates of
// counters sharing the word exact; a counter below max never carries into its neighbour.
__device__ __forceinline__ u32 bl_counter_inc(u32* w, u32 sh, u32 max) {
  u32 old = *(volatile u32*)w;
  for (;;) {
    u32 v = (old >> sh) & max;
    if (v == max) return v;
    u32 seen = atomicCAS(w, old, old + (1u << sh));
    if (seen == old) return v;
    old = seen;
  }
}
// Counter - 1 unless it is 0 or max; returns its value before (it changed iff 0 < value < max).
__device__ __forceinline__ u32 bl_counter_dec(u32* w, u32 sh, u32 max) {
  u32 old = *(volatile u32*)w;
  for (;;) {
    u32 v = (old >> sh) & max;
    if (v == max || v == 0) return v;
    u32 seen = atomicCAS(w, old, old - (1u << sh));
    if (seen == old) return v;
    old = seen;
  }
}
__device__ __forceinline__ void bl_count_insert_hashed(u32* image, u32* counters, u64 blocks, u64 h, u32 cbits) {
  u32 max = (1u << cbits) - 1u;
  u64 blk = bl_block(h, blocks);
  u32 b[BL_LANES]; bl_bits((u32)h, b);
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
    u64 k = bl_cell(blk, i, b[i]);
    bl_counter_inc(bl_counter_word(counters, k, cbits), bl_counter_shift(k, cbits), max);
  }
  // The key's image bits, set whatever the counters held (as the core does).
  bl_insert_hashed(image, blocks, h);
}
// Decrements the counters of an accepted key; returns BL_ACCEPTED | the lanes decremented, and
// adds the lanes whose counter was 0 to *under.
__device__ __forceinline__ u32 bl_count_delete_hashed(u32* image, u32* counters, u64 blocks, u64 h, u32 cbits, u32* under) {
  u32 max = (1u << cbits) - 1u;
  u64 blk = bl_block(h, blocks);
  u32 b[BL_LANES]; bl_bits((u32)h, b);
  u32 lanes = 0;
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
    u64 k = bl_cell(blk, i, b[i]);
    u32 v = bl_counter_dec(bl_counter_word(counters, k, cbits), bl_counter_shift(k, cbits), max);
    if (v == 0) {
      *under += 1;
    } else if (v < max) {
      lanes |= 1u << i;
      // Nothing increments during a delete batch, so a counter that reached 0 stays 0.
      if (v == 1) atomicAnd(image + (k >> 5), ~(1u << (k & 31)));
    }
  }
  return BL_ACCEPTED | lanes;
}
// Puts back the decrements that bl_count_delete_hashed recorded in `status`. Every counter ends
// at its value before the attempt (at most max), so the additions never carry.
__device__ __forceinline__ void bl_count_undo_hashed(u32* image, u32* counters, u64 blocks, u64 h, u32 cbits, u32 status) {
  u64 blk = bl_block(h, blocks);
  u32 b[BL_LANES]; bl_bits((u32)h, b);
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
    if ((status >> i) & 1u) {
      u64 k = bl_cell(blk, i, b[i]);
      atomicAdd(bl_counter_word(counters, k, cbits), 1u << bl_counter_shift(k, cbits));
      atomicOr(image + (k >> 5), 1u << (k & 31));
    }
  }
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_insert(u32* image, u32* counters, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32 cbits) {
  u64 base = bl_kpt_base(), k[BL_KPT];
  bl_load_keys(keys, n, base, k);
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) {
    u64 i = base + j * BL_THREADS;
    if (i < n) bl_count_insert_hashed(image, counters, blocks, bl_key_hash(k[j], seed, mode), cbits);
  }
}
// status[i] = BL_ACCEPTED iff all of key i's image bits are set, else 0; stats[0] += accepted.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_check(const u32* image, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32* status, u64* stats) {
  u64 base = bl_kpt_base(), k[BL_KPT];
  bl_load_keys(keys, n, base, k);
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) {
    u64 i = base + j * BL_THREADS;
    bool ok = i < n ? bl_contains_hashed(image, blocks, bl_key_hash(k[j], seed, mode)) : false;
    if (i < n) status[i] = ok ? BL_ACCEPTED : 0u;
    u32 m = __ballot_sync(0xffffffffu, ok);
    if ((threadIdx.x & 31) == 0 && m) atomicAdd(stats, (u64)__popc(m));
  }
}
// For each accepted key: its counters decremented, status[i] |= the lanes decremented;
// stats[1] += counters found at 0.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_delete(u32* image, u32* counters, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32 cbits, u32* status, u64* stats) {
  u64 base = bl_kpt_base(), k[BL_KPT];
  bl_load_keys(keys, n, base, k);
  u32 under = 0;
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) {
    u64 i = base + j * BL_THREADS;
    if (i < n && (status[i] & BL_ACCEPTED)) {
      status[i] = bl_count_delete_hashed(image, counters, blocks, bl_key_hash(k[j], seed, mode), cbits, &under);
    }
  }
  if (under) atomicAdd(stats + 1, (u64)under);
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_undo(u32* image, u32* counters, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32 cbits, const u32* status) {
  u64 base = bl_kpt_base(), k[BL_KPT];
  bl_load_keys(keys, n, base, k);
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) {
    u64 i = base + j * BL_THREADS;
    if (i < n) {
      u32 s = status[i];
      if (s & ~BL_ACCEPTED) bl_count_undo_hashed(image, counters, blocks, bl_key_hash(k[j], seed, mode), cbits, s);
    }
  }
}
