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
// Adds 1 (inc) or subtracts 1 (!inc) to each of the key's L counters `cell[i]` with a
// compare-and-swap loop on the counter's word, leaving alone a counter at max (either way) or at
// 0 (when subtracting); v[i] receives counter i's value before. The CAS makes concurrent updates
// of counters sharing a word exact, and a counter below max (above 0) never carries into (borrows
// from) its neighbour. The L loops are interleaved, so their loads and CASes are in flight
// together instead of one round trip after another (a key's lanes lie in distinct words; were
// two in one word, a failed CAS would simply retry with the word's new value).
__device__ __forceinline__ void bl_counters_step(u32* counters, const u64 cell[BL_LANES], u32 cbits, bool inc, u32 v[BL_LANES]) {
  u32 max = (1u << cbits) - 1u;
  u32* w[BL_LANES];
  u32 sh[BL_LANES], old[BL_LANES];
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
    w[i] = bl_counter_word(counters, cell[i], cbits);
    sh[i] = bl_counter_shift(cell[i], cbits);
    old[i] = *(volatile u32*)w[i];
  }
  u32 pending = (1u << BL_LANES) - 1u;  // BL_LANES <= 16
  while (pending) {
    u32 seen[BL_LANES];
    #pragma unroll
    for (int i = 0; i < BL_LANES; i++) {
      seen[i] = old[i];
      if ((pending >> i) & 1u) {
        u32 c = (old[i] >> sh[i]) & max;
        v[i] = c;
        if (c == max || (!inc && c == 0)) {
          pending &= ~(1u << i);
        } else {
          u32 next = inc ? old[i] + (1u << sh[i]) : old[i] - (1u << sh[i]);
          seen[i] = atomicCAS(w[i], old[i], next);
        }
      }
    }
    #pragma unroll
    for (int i = 0; i < BL_LANES; i++) {
      if ((pending >> i) & 1u) {
        if (seen[i] == old[i]) pending &= ~(1u << i);  // this CAS took
        else old[i] = seen[i];                         // lost a race: retry with the new word
      }
    }
  }
}
// The key's L cells.
__device__ __forceinline__ u64 bl_cells(u64 h, u64 blocks, u64 cell[BL_LANES]) {
  u64 blk = bl_block(h, blocks);
  u32 b[BL_LANES]; bl_bits((u32)h, b);
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) cell[i] = bl_cell(blk, i, b[i]);
  return blk;
}
__device__ __forceinline__ void bl_count_insert_hashed(u32* image, u32* counters, u64 blocks, u64 h, u32 cbits) {
  u64 cell[BL_LANES];
  u32 v[BL_LANES];
  bl_cells(h, blocks, cell);
  bl_counters_step(counters, cell, cbits, true, v);
  // The key's image bits, set whatever the counters held (as the core does).
  bl_insert_hashed(image, blocks, h);
}
// Decrements the counters of an accepted key; returns BL_ACCEPTED | the lanes decremented, and
// adds the lanes whose counter was 0 to *under.
__device__ __forceinline__ u32 bl_count_delete_hashed(u32* image, u32* counters, u64 blocks, u64 h, u32 cbits, u32* under) {
  u32 max = (1u << cbits) - 1u;
  u64 cell[BL_LANES];
  u32 v[BL_LANES];
  bl_cells(h, blocks, cell);
  bl_counters_step(counters, cell, cbits, false, v);
  u32 lanes = 0;
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
    if (v[i] == 0) {
      *under += 1;
    } else if (v[i] < max) {
      lanes |= 1u << i;
      // Nothing increments during a delete batch, so a counter that reached 0 stays 0.
      if (v[i] == 1) atomicAnd(image + (cell[i] >> 5), ~(1u << (cell[i] & 31)));
    }
  }
  return BL_ACCEPTED | lanes;
}
// Puts back the decrements that bl_count_delete_hashed recorded in `status`. Every counter ends
// at its value before the attempt (at most max), so the additions never carry.
__device__ __forceinline__ void bl_count_undo_hashed(u32* image, u32* counters, u64 blocks, u64 h, u32 cbits, u32 status) {
  u64 cell[BL_LANES];
  bl_cells(h, blocks, cell);
  #pragma unroll
  for (int i = 0; i < BL_LANES; i++) {
    if ((status >> i) & 1u) {
      atomicAdd(bl_counter_word(counters, cell[i], cbits), 1u << bl_counter_shift(cell[i], cbits));
      atomicOr(image + (cell[i] >> 5), 1u << (cell[i] & 31));
    }
  }
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_insert(u32* image, u32* counters, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32 cbits) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    if (i < n) bl_count_insert_hashed(image, counters, blocks, bl_key_hash(k, seed, mode), cbits);
  });
}
// status[i] = BL_ACCEPTED iff all of key i's image bits are set, else 0; stats[0] += accepted.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_check(const u32* image, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32* status, u64* stats) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    bool ok = i < n ? bl_contains_hashed(image, blocks, bl_key_hash(k, seed, mode)) : false;
    if (i < n) status[i] = ok ? BL_ACCEPTED : 0u;
    u32 m = __ballot_sync(0xffffffffu, ok);
    if ((threadIdx.x & 31) == 0 && m) atomicAdd(stats, (u64)__popc(m));
  });
}
// For each accepted key: its counters decremented, status[i] |= the lanes decremented;
// stats[1] += counters found at 0.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_delete(u32* image, u32* counters, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32 cbits, u32* status, u64* stats) {
  u32 under = 0;
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    if (i < n && (status[i] & BL_ACCEPTED)) {
      status[i] = bl_count_delete_hashed(image, counters, blocks, bl_key_hash(k, seed, mode), cbits, &under);
    }
  });
  if (under) atomicAdd(stats + 1, (u64)under);
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_undo(u32* image, u32* counters, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32 cbits, const u32* status) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    if (i < n) {
      u32 s = status[i];
      if (s & ~BL_ACCEPTED) bl_count_undo_hashed(image, counters, blocks, bl_key_hash(k, seed, mode), cbits, s);
    }
  });
}
