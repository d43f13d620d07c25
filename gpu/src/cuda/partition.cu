// The partitioned insert's grouping passes (the insert of the grouped hashes is
// bl_insert_hash_bulk). Partition p of `parts` holds the hashes whose block-index input (h >> 32)
// lies in the p-th of `parts` equal ranges. The block index ((h >> 32) * blocks) >> 32 is
// monotonic in (h >> 32), so each partition covers a contiguous range of about blocks / parts
// blocks (neighbours may share one block; OR is order-independent, so that is harmless).
__device__ __forceinline__ u32 bl_part(u64 h, u32 parts) { return (u32)(((h >> 32) * parts) >> 32); }
// Pass 1: histogram of partitions (shared-memory counts, flushed once per CTA; grid-stride).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_hist(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ counts) {
  __shared__ u32 hist[BL_MAXP];
  for (u32 p = threadIdx.x; p < parts; p += BL_THREADS) hist[p] = 0;
  __syncthreads();
  u64 stride = (u64)gridDim.x * (BL_THREADS * BL_KPT);
  for (u64 base = bl_kpt_base(); base < n; base += stride) {
    u64 k[BL_KPT];
    bl_load_keys(keys, n, base, k);
    #pragma unroll
    for (int j = 0; j < BL_KPT; j++) {
      u64 i = base + j * BL_THREADS;
      if (i < n) atomicAdd(&hist[bl_part(bl_key_hash(k[j], seed, mode), parts)], 1u);
    }
  }
  __syncthreads();
  for (u32 p = threadIdx.x; p < parts; p += BL_THREADS) { u32 c = hist[p]; if (c) atomicAdd(counts + p, c); }
}
// Exclusive scan across the CTA: returns the sum of `sum` over the threads before this one.
// `warp_sums` is BL_THREADS / 32 words of shared scratch, free again when this returns.
__device__ __forceinline__ u32 bl_block_scan(u32 sum, u32* warp_sums) {
  u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, x = sum;
  #pragma unroll
  for (int off = 1; off < 32; off <<= 1) { u32 y = __shfl_up_sync(0xffffffffu, x, off); if (lane >= off) x += y; }
  if (lane == 31) warp_sums[warp] = x;
  __syncthreads();
  u32 before = 0;
  #pragma unroll
  for (int w = 0; w < BL_THREADS / 32; w++) before += w < (int)warp ? warp_sums[w] : 0u;
  __syncthreads();
  return before + x - sum;
}
#define BL_PER (BL_MAXP / BL_THREADS)
// Pass 2: cursor[p] = sum of counts[0..p) (one CTA).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_scan(const u32* __restrict__ counts, u32 parts, u32* __restrict__ cursor) {
  __shared__ u32 warp_sums[BL_THREADS / 32];
  u32 v[BL_PER], sum = 0;
  #pragma unroll
  for (int j = 0; j < BL_PER; j++) { u32 p = threadIdx.x * BL_PER + j; v[j] = p < parts ? counts[p] : 0u; sum += v[j]; }
  u32 run = bl_block_scan(sum, warp_sums);
  #pragma unroll
  for (int j = 0; j < BL_PER; j++) { u32 p = threadIdx.x * BL_PER + j; if (p < parts) cursor[p] = run; run += v[j]; }
}
// Pass 3: each CTA hashes a tile of BL_THREADS * SKPT keys, groups the hashes by partition in
// shared memory, reserves one range per partition present with one atomic on its cursor, and
// writes the grouped tile out (runs of consecutive addresses: coalesced). With POS, the index of
// each hash's key in the batch goes to out_pos at the same place (for partitioned lookups).
template <int SKPT, bool POS>
__device__ __forceinline__ void bl_part_scatter_tile(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts,
    u32* __restrict__ cursor, u64* __restrict__ out, u32* __restrict__ out_pos) {
  constexpr u32 TILE = BL_THREADS * SKPT;
  __shared__ u32 start[BL_MAXP];  // counts, then the tile-local start of each partition
  __shared__ u32 gbase[BL_MAXP];  // global position of the partition's run minus its local start
  // The grouped tile: TILE hashes, then (POS) their TILE key indices (48 KiB of static shared in
  // all without POS, 40 KiB with it at half the tile).
  __shared__ __align__(8) u8 tile_bytes[TILE * 8 + (POS ? TILE * 4 : 0)];
  u64* tile = (u64*)tile_bytes;
  u32* tile_pos = (u32*)(tile_bytes + TILE * 8);
  for (u32 p = threadIdx.x; p < parts; p += BL_THREADS) start[p] = 0;
  __syncthreads();
  u64 base = (u64)blockIdx.x * TILE;
  u64 h[SKPT];
  u32 pr[SKPT];
  #pragma unroll
  for (int j = 0; j < SKPT; j++) { u64 i = base + j * BL_THREADS + threadIdx.x; h[j] = i < n ? __ldg(keys + i) : 0; }
  #pragma unroll
  for (int j = 0; j < SKPT; j++) {
    u64 i = base + j * BL_THREADS + threadIdx.x;
    if (i < n) {
      h[j] = bl_key_hash(h[j], seed, mode);
      u32 p = bl_part(h[j], parts);
      pr[j] = (p << 16) | atomicAdd(&start[p], 1u);
    }
  }
  __syncthreads();
  u32 v[BL_PER], sum = 0;
  #pragma unroll
  for (int j = 0; j < BL_PER; j++) { u32 p = threadIdx.x * BL_PER + j; v[j] = p < parts ? start[p] : 0u; sum += v[j]; }
  // gbase is not written yet: lend its first words to the scan.
  u32 run = bl_block_scan(sum, gbase);
  #pragma unroll
  for (int j = 0; j < BL_PER; j++) {
    u32 p = threadIdx.x * BL_PER + j;
    if (p < parts) {
      start[p] = run;
      if (v[j]) gbase[p] = atomicAdd(cursor + p, v[j]) - run;
    }
    run += v[j];
  }
  __syncthreads();
  #pragma unroll
  for (int j = 0; j < SKPT; j++) {
    u64 i = base + j * BL_THREADS + threadIdx.x;
    if (i < n) {
      u32 slot = start[pr[j] >> 16] + (pr[j] & 0xffffu);
      tile[slot] = h[j];
      if constexpr (POS) tile_pos[slot] = (u32)i;
    }
  }
  __syncthreads();
  u32 m = (u32)min((u64)TILE, n - base);
  for (u32 t = threadIdx.x; t < m; t += BL_THREADS) {
    u64 x = tile[t];
    // Below n whenever pass 1 counted these same keys; the test keeps a batch changed between
    // the passes from writing past the output.
    u32 pos = gbase[bl_part(x, parts)] + t;
    if (pos < n) {
      out[pos] = x;
      if constexpr (POS) out_pos[pos] = tile_pos[t];
    }
  }
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_scatter(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out) {
  bl_part_scatter_tile<BL_SKPT, false>(keys, n, seed, mode, parts, cursor, out, nullptr);
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_scatter_pos(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out, u32* __restrict__ out_pos) {
  bl_part_scatter_tile<BL_SKPT_POS, true>(keys, n, seed, mode, parts, cursor, out, out_pos);
}
// bounds[p] = the first index i of the grouped hashes (sorted by partition) with
// bl_part(hashes[i]) >= p, for p = 0..parts (bounds[parts] = n): where the slice kernels
// (cells.cu) find the hashes of their partitions.
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
