// Grouping hashes by filter region: the partitioned insert's passes (the insert of the grouped
// hashes is bl_insert_hash_bulk or bl_insert_slices), partitioned lookups and the cell filters'
// batches. Partition p of `parts` holds the hashes whose block-index input (h >> 32) lies in the
// p-th of `parts` equal ranges. The block index ((h >> 32) * blocks) >> 32 is monotonic in
// (h >> 32), so each partition covers a contiguous range of about blocks / parts blocks
// (neighbours may share one block; OR is order-independent, so that is harmless).
//
// Two groupings use these passes. The one-level grouping (bl_part_scatter, at most BL_MAXP
// partitions) scatters every key straight to its partition. The radix grouping bounds the
// fan-out of every pass by BL_RADIX_FANOUT, so that a CTA's tile writes runs of tens of hashes
// whatever the filter's size: parts = coarse * fine partitions, where partition q's coarse
// partition is c = q / fine = bl_part(h, coarse) (floor(floor(x p) / f) = floor(x p / f) for the
// integer f). One histogram counts all `parts` partitions; the scan lays out the partitions in
// order and, for two levels, the coarse partitions as segments of the same layout; level 1
// scatters the keys' hashes into their coarse segments, level 2 scatters each coarse segment's
// hashes into its fine partitions (tiles never straddle two segments, so level 2's fan-out is
// `fine`). One level (coarse = 0) scatters the keys straight into the `parts` partitions.
__device__ __forceinline__ u32 bl_part(u64 h, u32 parts) { return (u32)(((h >> 32) * parts) >> 32); }
// Pass 1: histogram of partitions, counted in dynamic shared memory (`parts` words, sized by the
// host) and flushed once per CTA; grid-stride, BL_HIST_KPT keys per thread in flight.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_hist(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ counts) {
  BL_DYNAMIC_SHARED(hist);
  for (u32 p = threadIdx.x; p < parts; p += BL_THREADS) hist[p] = 0;
  __syncthreads();
  u64 stride = (u64)gridDim.x * (BL_THREADS * BL_HIST_KPT);
  for (u64 base = (u64)blockIdx.x * (BL_THREADS * BL_HIST_KPT) + threadIdx.x; base < n; base += stride) {
    u64 k[BL_HIST_KPT];
    #pragma unroll
    for (int j = 0; j < BL_HIST_KPT; j++) { u64 i = base + j * BL_THREADS; k[j] = i < n ? __ldg(keys + i) : 0; }
    #pragma unroll
    for (int j = 0; j < BL_HIST_KPT; j++) {
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
// Pass 2 (one CTA): cursor[p] = counts[0] + ... + counts[p - 1], the start of partition p, for
// p < parts. For a two-level grouping (coarse > 0, parts = coarse * fine, coarse <= BL_THREADS),
// also the coarse segments: seg[c] = coarse_cursor[c] = cursor[c * fine], the start of coarse
// partition c (seg[coarse] = the total), and tiles[c] = the tiles of BL_SKPT * BL_THREADS hashes
// the segments before c take in level 2 (tiles[coarse] = all of them).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_scan(const u32* __restrict__ counts, u32 parts, u32* __restrict__ cursor,
    u32 coarse, u32* __restrict__ coarse_cursor, u32* __restrict__ seg, u32* __restrict__ tiles) {
  __shared__ u32 warp_sums[BL_THREADS / 32];
  __shared__ u32 total;
  u32 per = (parts + BL_THREADS - 1) / BL_THREADS, p0 = threadIdx.x * per, sum = 0;
  for (u32 j = 0; j < per; j++) { u32 p = p0 + j; if (p < parts) sum += counts[p]; }
  u32 run = bl_block_scan(sum, warp_sums);
  for (u32 j = 0; j < per; j++) { u32 p = p0 + j; if (p < parts) { cursor[p] = run; run += counts[p]; } }
  if (coarse == 0u) return;  // the same for every thread of the CTA
  if (threadIdx.x == BL_THREADS - 1) total = run;
  __syncthreads();  // the cursors written above are visible to the whole CTA
  u32 fine = parts / coarse, c = threadIdx.x;
  u32 start = c < coarse ? cursor[c * fine] : total;
  u32 end = c + 1 < coarse ? cursor[(c + 1) * fine] : total;
  u32 len = c < coarse ? end - start : 0u;
  constexpr u32 TILE = BL_THREADS * BL_SKPT;
  u32 before = bl_block_scan(len / TILE + (len % TILE != 0u), warp_sums);
  if (c < coarse) { seg[c] = start; coarse_cursor[c] = start; tiles[c] = before; }
  if (c + 1 == coarse) { seg[coarse] = total; tiles[coarse] = before + len / TILE + (len % TILE != 0u); }
}
// Pass 3: a CTA reads the keys in[lo, hi) (at most SKPT * BL_THREADS; hashed by `mode`), groups
// their hashes by bin(h) < nbins <= MAXB in shared memory, reserves one range per bin present with
// one atomic on cursor[bin], and writes the grouped tile out (runs of consecutive addresses:
// coalesced). Positions are below n whenever the cursors were laid out (pass 2) from the counts
// of these same keys; the test keeps anything else from writing past out[n). With POS, the index
// of each hash's key in the batch goes to out_pos at the same place (for partitioned lookups).
template <int SKPT, bool POS, int MAXB, class Bin>
__device__ __forceinline__ void bl_scatter_tile(const u64* __restrict__ in, u64 lo, u64 hi, u64 seed, int mode, u32 nbins, Bin bin,
    u32* __restrict__ cursor, u64 n, u64* __restrict__ out, u32* __restrict__ out_pos) {
  constexpr u32 TILE = BL_THREADS * SKPT;
  constexpr int PER = MAXB > BL_THREADS ? MAXB / BL_THREADS : 1;
  static_assert(MAXB <= BL_THREADS || MAXB % BL_THREADS == 0, "bins per thread");
  __shared__ u32 start[MAXB];  // counts, then the tile-local start of each bin
  __shared__ u32 gbase[MAXB];  // global position of the bin's run minus its local start
  // The grouped tile: TILE hashes, then (POS) their TILE key indices.
  __shared__ __align__(8) u8 tile_bytes[TILE * 8 + (POS ? TILE * 4 : 0)];
  u64* tile = (u64*)tile_bytes;
  u32* tile_pos = (u32*)(tile_bytes + TILE * 8);
  for (u32 p = threadIdx.x; p < nbins; p += BL_THREADS) start[p] = 0;
  __syncthreads();
  u64 h[SKPT];
  u32 pr[SKPT];
  #pragma unroll
  for (int j = 0; j < SKPT; j++) { u64 i = lo + j * BL_THREADS + threadIdx.x; h[j] = i < hi ? __ldg(in + i) : 0; }
  #pragma unroll
  for (int j = 0; j < SKPT; j++) {
    u64 i = lo + j * BL_THREADS + threadIdx.x;
    if (i < hi) {
      h[j] = bl_key_hash(h[j], seed, mode);
      u32 p = bin(h[j]);
      pr[j] = (p << 16) | atomicAdd(&start[p], 1u);
    }
  }
  __syncthreads();
  u32 v[PER], sum = 0;
  #pragma unroll
  for (int j = 0; j < PER; j++) { u32 p = threadIdx.x * PER + j; v[j] = p < nbins ? start[p] : 0u; sum += v[j]; }
  // gbase is not written yet: lend its first words to the scan.
  u32 run = bl_block_scan(sum, gbase);
  #pragma unroll
  for (int j = 0; j < PER; j++) {
    u32 p = threadIdx.x * PER + j;
    if (p < nbins) {
      start[p] = run;
      if (v[j]) gbase[p] = atomicAdd(cursor + p, v[j]) - run;
    }
    run += v[j];
  }
  __syncthreads();
  #pragma unroll
  for (int j = 0; j < SKPT; j++) {
    u64 i = lo + j * BL_THREADS + threadIdx.x;
    if (i < hi) {
      u32 slot = start[pr[j] >> 16] + (pr[j] & 0xffffu);
      tile[slot] = h[j];
      if constexpr (POS) tile_pos[slot] = (u32)i;
    }
  }
  __syncthreads();
  u32 m = (u32)(hi > lo ? min((u64)TILE, hi - lo) : 0ull);
  for (u32 t = threadIdx.x; t < m; t += BL_THREADS) {
    u64 x = tile[t];
    u32 pos = gbase[bin(x)] + t;
    if (pos < n) {
      out[pos] = x;
      if constexpr (POS) out_pos[pos] = tile_pos[t];
    }
  }
}
// The bins of a one-level grouping: the partition itself.
struct BlPartBin {
  u32 parts;
  __device__ __forceinline__ u32 operator()(u64 h) const { return bl_part(h, parts); }
};
// The one-level scatter of tile blockIdx.x of the keys into `parts` <= BL_MAXP partitions.
template <int SKPT, bool POS, int MAXB>
__device__ __forceinline__ void bl_part_scatter_keys(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts,
    u32* __restrict__ cursor, u64* __restrict__ out, u32* __restrict__ out_pos) {
  u64 lo = (u64)blockIdx.x * (BL_THREADS * SKPT);
  bl_scatter_tile<SKPT, POS, MAXB>(keys, lo, n, seed, mode, parts, BlPartBin{parts}, cursor, n, out, out_pos);
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_scatter(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out) {
  bl_part_scatter_keys<BL_SKPT, false, BL_MAXP>(keys, n, seed, mode, parts, cursor, out, nullptr);
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_part_scatter_pos(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out, u32* __restrict__ out_pos) {
  bl_part_scatter_keys<BL_SKPT_POS, true, BL_MAXP>(keys, n, seed, mode, parts, cursor, out, out_pos);
}
// Radix level 1 (or the only level): the keys' hashes into `parts` <= BL_RADIX_FANOUT partitions
// (the coarse ones of two levels).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_radix_scatter_keys(const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out) {
  bl_part_scatter_keys<BL_SKPT, false, BL_RADIX_FANOUT>(keys, n, seed, mode, parts, cursor, out, nullptr);
}
// Radix level 2: tile blockIdx.x of the coarse segments (tiles[c] <= tile < tiles[c + 1] lies in
// segment c, seg[c] to seg[c + 1] of in[0, n)) grouped into the segment's `fine` partitions
// c * fine .. (c + 1) * fine - 1 of the `coarse * fine`, with cursor[q] the next free position
// of partition q. A hash outside its segment's partitions (none, when level 1 grouped these
// hashes) goes to the segment's last partition, so that shared memory is never indexed past it.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_radix_scatter_hashes(const u64* __restrict__ in, u64 n, u32 coarse, u32 fine,
    const u32* __restrict__ seg, const u32* __restrict__ tiles, u32* __restrict__ cursor, u64* __restrict__ out) {
  u32 t = blockIdx.x;
  if (coarse == 0u || fine == 0u || fine > BL_RADIX_FANOUT || t >= tiles[coarse]) return;  // uniform across the CTA
  u32 lo_c = 0, hi_c = coarse - 1;  // the last c with tiles[c] <= t
  while (lo_c < hi_c) {
    u32 mid = (lo_c + hi_c + 1) / 2;
    if (tiles[mid] <= t) lo_c = mid; else hi_c = mid - 1;
  }
  u32 c = lo_c;
  u64 end = min((u64)seg[c + 1], n);
  u64 lo = min((u64)seg[c] + (u64)(t - tiles[c]) * (BL_THREADS * BL_SKPT), end);
  u64 hi = min(lo + BL_THREADS * BL_SKPT, end);
  u32 parts = coarse * fine, first = c * fine;
  auto bin = [=](u64 h) { u32 q = bl_part(h, parts) - first; return q < fine ? q : fine - 1u; };
  bl_scatter_tile<BL_SKPT, false, BL_RADIX_FANOUT>(in, lo, hi, 0, 1, fine, bin, cursor + first, n, out, nullptr);
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
