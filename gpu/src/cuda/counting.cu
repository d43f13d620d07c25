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
// ---- Sliced kernels (partitioned batches: hashes grouped by partition, see partition.cu).
// A CTA owns slice s = blocks [s * sb, min((s + 1) * sb, blocks)) of the filter: it copies that
// slice's counters and image into shared memory, applies every key of the batch whose block lies
// in the slice with shared-memory compare-and-swap loops (the same rules as bl_counters_step:
// a counter at max sticks, a counter at 0 is not decremented), and copies the slice back. Slices
// are disjoint whole blocks, so no two CTAs touch the same word. A CTA reads only the grouped
// hashes of the partitions that can hold its blocks: bounds[p] (from bl_part_bounds) is the
// first grouped index of partition p.

// bounds[p] = the first index i of the grouped hashes (sorted by partition) with
// bl_part(hashes[i]) >= p, for p = 0..parts (bounds[parts] = n).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_bounds(const u64* hashes, u64 n, u32 parts, u32* bounds) {
  u64 p = bl_thread_index();
  if (p > parts) return;
  u64 lo = 0, hi = n;  // the answer lies in [lo, hi]
  while (lo < hi) {
    u64 mid = lo + (hi - lo) / 2;
    if ((u64)bl_part(__ldg(hashes + mid), parts) < p) lo = mid + 1; else hi = mid;
  }
  bounds[p] = (u32)lo;
}
// Counter words per block (a multiple of 4: L * W >= 256 bits).
__device__ __forceinline__ u32 bl_counter_words_per_block(u32 cbits) { return BL_LANES * BL_WORD_BITS / 32 * cbits; }
// Copies n16 16-byte vectors from src to dst with the whole CTA, 8 loads in flight per thread.
__device__ __forceinline__ void bl_copy16(uint4* dst, const uint4* src, u32 n16) {
  for (u32 t = threadIdx.x; t < n16; t += BL_THREADS * 8) {
    uint4 v[8];
    #pragma unroll
    for (int j = 0; j < 8; j++) { u32 k = t + j * BL_THREADS; if (k < n16) v[j] = src[k]; }
    #pragma unroll
    for (int j = 0; j < 8; j++) { u32 k = t + j * BL_THREADS; if (k < n16) dst[k] = v[j]; }
  }
}
// One counter of the slice in shared memory: +1 (inc) or -1, leaving alone a counter at max
// (either way) or at 0 (when subtracting). Returns the counter's value before.
__device__ __forceinline__ u32 bl_shared_counter_step(u32* w, u32 sh, u32 max, bool inc) {
  u32 old = *(volatile u32*)w;
  for (;;) {
    u32 c = (old >> sh) & max;
    if (c == max || (!inc && c == 0)) return c;
    u32 seen = atomicCAS(w, old, inc ? old + (1u << sh) : old - (1u << sh));
    if (seen == old) return c;
    old = seen;
  }
}
// The CTA's shared memory: first each warp's queue of the hashes in the slice found by its last
// scan step (32 * BL_SLICE_KPT hashes, then as many key indices), then the slice's counters,
// then its image. The host sizes it: BL_THREADS * BL_SLICE_KPT * 12 bytes + the slice.
template <bool DEL>
__device__ __forceinline__ void bl_count_slices(u32* image, u32* counters, u64 blocks, const u64* __restrict__ hashes, u64 n,
    const u32* __restrict__ bounds, u32 parts, u32 cbits, u64 sb, u32* status, u64* stats) {
  extern __shared__ __align__(16) u32 bl_slice_smem[];
  constexpr u32 QN = 32 * BL_SLICE_KPT;  // queue entries per warp
  const u32 cw = bl_counter_words_per_block(cbits), iw = BL_BLOCK_U32S, max = (1u << cbits) - 1u;
  const u32 cshift = cbits == 4 ? 3 : 2, cmask = cbits == 4 ? 7 : 3;
  u64 a = (u64)blockIdx.x * sb;
  if (a >= blocks) return;
  u64 b = min(a + sb, blocks);
  u32 nb = (u32)(b - a);
  u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  u64* qh = (u64*)bl_slice_smem + warp * QN;
  u32* qi = (u32*)((u64*)bl_slice_smem + BL_THREADS * BL_SLICE_KPT) + warp * QN;
  u32* sc = bl_slice_smem + BL_THREADS * BL_SLICE_KPT * 3;
  u32* si = sc + nb * cw;
  bl_copy16((uint4*)sc, (const uint4*)(counters + a * cw), nb * cw / 4);
  bl_copy16((uint4*)si, (const uint4*)(image + a * iw), nb * iw / 4);
  // The grouped hashes that can fall in [a, b): block(x) = (x * blocks) >> 32 of x = h >> 32 is
  // monotonic, so x lies in [ceil(a 2^32 / blocks), ceil(b 2^32 / blocks) - 1], whose
  // partitions (x * parts) >> 32 are p_lo..p_hi.
  u64 x_lo = ((a << 32) + blocks - 1) / blocks, x_hi = ((b << 32) + blocks - 1) / blocks - 1;
  u32 p_lo = (u32)((x_lo * parts) >> 32), p_hi = (u32)((x_hi * parts) >> 32);
  u64 lo = bounds[p_lo], hi = min((u64)bounds[p_hi + 1], n);
  __syncthreads();
  u32 under = 0;
  // Every thread runs every step (the warp collectives need all lanes): a step loads
  // BL_SLICE_KPT hashes per thread, each warp queues those in the slice (ballot, no atomics),
  // then its lanes apply the queue, one hash each, so that lanes are busy even when few of the
  // scanned hashes fall in this slice.
  for (u64 step = lo; step < hi; step += BL_THREADS * BL_SLICE_KPT) {
    u64 h[BL_SLICE_KPT];
    #pragma unroll
    for (int j = 0; j < BL_SLICE_KPT; j++) { u64 i = step + j * BL_THREADS + threadIdx.x; h[j] = i < hi ? __ldg(hashes + i) : 0; }
    u32 queued = 0;
    #pragma unroll
    for (int j = 0; j < BL_SLICE_KPT; j++) {
      u64 i = step + j * BL_THREADS + threadIdx.x;
      u64 blk = bl_block(h[j], blocks);
      bool in = i < hi && blk >= a && blk < b;
      u32 m = __ballot_sync(0xffffffffu, in);
      if (in) {
        u32 at = queued + __popc(m & ((1u << lane) - 1u));
        qh[at] = h[j];
        if constexpr (DEL) qi[at] = (u32)i;
      }
      queued += __popc(m);
    }
    __syncwarp();
    for (u32 t = lane; t < queued; t += 32) {
      u64 hh = qh[t];
      if constexpr (DEL) { if (!(status[qi[t]] & BL_ACCEPTED)) continue; }
      u32 lb = (u32)(bl_block(hh, blocks) - a);
      u32 bit[BL_LANES]; bl_bits((u32)hh, bit);
      u32 lanes = 0;
      #pragma unroll
      for (int l = 0; l < BL_LANES; l++) {
        u32 cell = (lb * BL_LANES + l) * BL_WORD_BITS + bit[l];
        u32 c = bl_shared_counter_step(sc + (cell >> cshift), (cell & cmask) * cbits, max, !DEL);
        if constexpr (DEL) {
          if (c == 0) {
            under += 1;
          } else if (c < max) {
            lanes |= 1u << l;
            // Nothing increments during a delete batch, so a counter that reached 0 stays 0.
            if (c == 1) atomicAnd(si + (cell >> 5), ~(1u << (cell & 31)));
          }
        } else {
          // The key's image bits, set whatever the counters held (as the core does).
          atomicOr(si + (cell >> 5), 1u << (cell & 31));
        }
      }
      if constexpr (DEL) status[qi[t]] = BL_ACCEPTED | lanes;
    }
    __syncwarp();
  }
  __syncthreads();
  bl_copy16((uint4*)(counters + a * cw), (const uint4*)sc, nb * cw / 4);
  bl_copy16((uint4*)(image + a * iw), (const uint4*)si, nb * iw / 4);
  if constexpr (DEL) { if (under) atomicAdd(stats + 1, (u64)under); }
}
// Inserts the grouped hashes (one CTA per slice of sb blocks; shared memory: sb blocks of
// counters and image).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_insert_slices(u32* image, u32* counters, u64 blocks, const u64* hashes, u64 n, const u32* bounds, u32 parts, u32 cbits, u64 sb) {
  bl_count_slices<false>(image, counters, blocks, hashes, n, bounds, parts, cbits, sb, nullptr, nullptr);
}
// bl_count_delete over grouped hashes, slice by slice: for each accepted key, its counters
// decremented, status[i] = BL_ACCEPTED | the lanes decremented; stats[1] += counters found at 0.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_count_delete_slices(u32* image, u32* counters, u64 blocks, const u64* hashes, u64 n, const u32* bounds, u32 parts, u32 cbits, u64 sb, u32* status, u64* stats) {
  bl_count_slices<true>(image, counters, blocks, hashes, n, bounds, parts, cbits, sb, status, stats);
}
