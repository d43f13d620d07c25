// The key kernels: insert, lookup into bytes, lookup into a bitmap, for each key form.
// u64 keys and caller hashes: KEYS_PER_THREAD (BL_KPT) keys per thread, loads first so that they
// are in flight together; MODE 0 = u64 keys (hashed), 1 = caller hashes (used as they are).
// Records and strings: one thread per key. Records: key i is data[i*width, (i+1)*width).
// Strings: key i is data[offsets[i]-base, offsets[i+1]-base), of data_len bytes in all.
// The thread shapes below serve every kernel file after this one.
__device__ __forceinline__ u64 bl_key_hash(u64 k, u64 seed, int mode) {
  return mode == 0 ? bl_hash_u64(k, seed) : k;
}
// The item of this thread in the one-item-per-thread kernels.
__device__ __forceinline__ u64 bl_thread_index() { return (u64)blockIdx.x * BL_THREADS + threadIdx.x; }
// The first key index of this thread in the BL_KPT-keys-per-thread kernels (its keys are
// base + j * BL_THREADS), and its keys loaded first so that the loads are in flight together.
__device__ __forceinline__ u64 bl_kpt_base() { return (u64)blockIdx.x * (BL_THREADS * BL_KPT) + threadIdx.x; }
__device__ __forceinline__ void bl_load_keys(const u64* __restrict__ keys, u64 n, u64 base, u64 k[BL_KPT]) {
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) { u64 i = base + j * BL_THREADS; k[j] = i < n ? __ldg(keys + i) : 0; }
}
// Calls body(i, k) for each of this thread's keys, key i = k (0 past n), once all are loaded.
// Every thread calls the body for every j, so a body may use warp collectives; it tests i < n.
template <class Body>
__device__ __forceinline__ void bl_each_key(const u64* keys, u64 n, Body body) {
  u64 base = bl_kpt_base(), k[BL_KPT];
  bl_load_keys(keys, n, base, k);
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) body(base + j * BL_THREADS, k[j]);
}
// out[i] = r[j] for this thread's keys i = base + j * BL_THREADS below n.
template <class T>
__device__ __forceinline__ void bl_store_keys(u8* __restrict__ out, u64 n, u64 base, const T r[BL_KPT]) {
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) { u64 i = base + j * BL_THREADS; if (i < n) out[i] = r[j]; }
}
// The kernels are templates on the image's geometry (BlFlat, BlGens; see block.cu); their entry
// points are the macro BL_KEY_ENTRIES at the end of this file, instantiated for BlFlat by the
// static module and for BlGens by the window module (kernel.rs).
// r[j] = answer(key) for this thread's keys i = base + j * BL_THREADS below n (else `none`),
// computed once all of them are loaded, so that their loads are in flight together; returns
// base (for bl_store_keys).
template <class T, class F>
__device__ __forceinline__ u64 bl_answers(const u64* __restrict__ keys, u64 n, T none, T r[BL_KPT], F answer) {
  u64 base = bl_kpt_base(), k[BL_KPT];
  bl_load_keys(keys, n, base, k);
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) {
    u64 i = base + j * BL_THREADS;
    r[j] = i < n ? answer(k[j]) : none;
  }
  return base;
}
template <int MODE, class Geo>
__device__ __forceinline__ void bl_insert_keys(const Geo& g, u32* __restrict__ words, u64 blocks,
    const u64* __restrict__ keys, u64 n, u64 seed) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    if (i < n) bl_insert_geo(g, words, blocks, bl_key_hash(k, seed, MODE));
  });
}
template <int MODE, class Geo>
__device__ __forceinline__ void bl_contains_keys(const Geo& g, const u32* __restrict__ words, u64 blocks,
    const u64* __restrict__ keys, u64 n, u64 seed, u8* __restrict__ out) {
  bool r[BL_KPT];
  u64 base = bl_answers(keys, n, false, r, [&](u64 k) {
    return bl_contains_geo(g, words, blocks, bl_key_hash(k, seed, MODE));
  });
  bl_store_keys(out, n, base, r);
}
template <int MODE, class Geo>
__device__ __forceinline__ void bl_bitmap_keys(const Geo& g, const u32* __restrict__ words, u64 blocks,
    const u64* __restrict__ keys, u64 n, u64 seed, u32* __restrict__ bits) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    bool r = i < n ? bl_contains_geo(g, words, blocks, bl_key_hash(k, seed, MODE)) : false;
    bl_put_bits(bits, i, n, r);
  });
}
// Insert by TMA bulk reduction (sm_90+): the block mask is staged in shared memory and ORed into
// the filter with one cp.reduce.async.bulk per key instead of one atomic per lane word.
template <int MODE, class Geo>
__device__ __forceinline__ void bl_insert_keys_bulk(const Geo& g, u32* __restrict__ words, u64 blocks,
    const u64* __restrict__ keys, u64 n, u64 seed) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(128) u32 sm[BL_THREADS * BL_SLOTS * BL_BLOCK_U32S];
  u64 base = bl_kpt_base(), k[BL_KPT];
  bl_load_keys(keys, n, base, k);
  #pragma unroll
  for (int j = 0; j < BL_KPT; j++) {
    u64 i = base + j * BL_THREADS;
    u32* my = sm + (threadIdx.x * BL_SLOTS + (j % BL_SLOTS)) * BL_BLOCK_U32S;
    u32 saddr = (u32)__cvta_generic_to_shared(my);
    if (i < n) {
      u64 h = bl_key_hash(k[j], seed, MODE);
      u64 blk = bl_block(h, blocks);
      u32 m[BL_BLOCK_U32S]; bl_mask((u32)h, m);
      // Before reusing a slot, the bulk op that read it must be done reading.
      if (j >= BL_SLOTS) asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(BL_SLOTS - 1) : "memory");
      #pragma unroll
      for (int t = 0; t < BL_BLOCK_U32S; t += 4) *(uint4*)(my + t) = make_uint4(m[t], m[t + 1], m[t + 2], m[t + 3]);
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.or.b64 [%0], [%1], %2;"
                   :: "l"(g.insert_block(words, blk)), "r"(saddr), "n"(BL_BLOCK_U32S * 4) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  bl_insert_keys<MODE>(g, words, blocks, keys, n, seed);
#endif
}
// The slice insert of hashes grouped into `parts` partitions (partition.cu; ends[p] = the end of
// partition p's run of hashes[0, n), and its start ends[p - 1], or 0): CTA s owns blocks
// [s * sb, min((s + 1) * sb, blocks)) of the image of geometry g. It copies them into dynamic
// shared memory (sb blocks, sized by the host), ORs in the lane bits of every grouped hash whose
// block is in the slice with shared-memory atomics, and copies them back: the filter is read and
// written once, in 16-byte vectors, however many keys hit a block. Slices are disjoint whole
// blocks, so no two CTAs touch the same word. A CTA scans only the hashes of the partitions that
// can hold its blocks: block(x) = (x * blocks) >> 32 of x = h >> 32 is monotonic, so x lies in
// [ceil(a 2^32 / blocks), ceil(b 2^32 / blocks) - 1], whose partitions are p_lo..p_hi.
template <class Geo>
__device__ __forceinline__ uint4* bl_slice_vector(const Geo& g, u32* words, u64 a, u32 k) {
  return (uint4*)g.insert_block(words, a + k / BL_BLOCK_VEC4) + k % BL_BLOCK_VEC4;
}
template <class Geo>
__device__ __forceinline__ void bl_insert_slices_geo(const Geo& g, u32* __restrict__ words, u64 blocks, const u64* __restrict__ hashes,
    u64 n, const u32* __restrict__ ends, u32 parts, u64 sb) {
  BL_DYNAMIC_SHARED(slice);
  u64 a = (u64)blockIdx.x * sb;
  if (parts == 0u || sb == 0u || a >= blocks) return;  // uniform across the CTA
  u64 b = min(a + sb, blocks);
  u32 nv = (u32)(b - a) * BL_BLOCK_VEC4;  // 16-byte vectors of the slice
  uint4* sv = (uint4*)slice;
  for (u32 t = threadIdx.x; t < nv; t += BL_THREADS * 8) {
    uint4 v[8];
    #pragma unroll
    for (int j = 0; j < 8; j++) { u32 k = t + j * BL_THREADS; if (k < nv) v[j] = *bl_slice_vector(g, words, a, k); }
    #pragma unroll
    for (int j = 0; j < 8; j++) { u32 k = t + j * BL_THREADS; if (k < nv) sv[k] = v[j]; }
  }
  u64 x_lo = ((a << 32) + blocks - 1) / blocks, x_hi = ((b << 32) + blocks - 1) / blocks - 1;
  u32 p_lo = (u32)((x_lo * parts) >> 32), p_hi = (u32)((x_hi * parts) >> 32);
  u64 hi = min((u64)ends[p_hi], n), lo = min(p_lo ? (u64)ends[p_lo - 1] : 0ull, hi);
  __syncthreads();
  for (u64 base = lo + threadIdx.x; base < hi; base += BL_THREADS * BL_KPT) {
    u64 h[BL_KPT];
    #pragma unroll
    for (int j = 0; j < BL_KPT; j++) { u64 i = base + j * BL_THREADS; h[j] = i < hi ? __ldg(hashes + i) : 0; }
    #pragma unroll
    for (int j = 0; j < BL_KPT; j++) {
      u64 i = base + j * BL_THREADS, blk = bl_block(h[j], blocks);
      if (i < hi && blk >= a && blk < b) bl_insert_block(slice + (blk - a) * BL_BLOCK_U32S, (u32)h[j]);
    }
  }
  __syncthreads();
  for (u32 t = threadIdx.x; t < nv; t += BL_THREADS) *bl_slice_vector(g, words, a, t) = sv[t];
}
__device__ __forceinline__ u64 bl_record_hash(const u8* data, u64 width, u64 i, u64 seed) {
  return bl_xxh64(data + i * width, width, seed);
}
// The host checks string offsets before a launch; the clamps keep even offsets that are out of
// order or out of range (say, overwritten behind the check's back) inside data[0, data_len).
__device__ __forceinline__ u64 bl_string_hash(const u8* data, u64 data_len, const u64* offsets, u64 base, u64 i, u64 seed) {
  u64 a = min(offsets[i] - base, data_len), b = min(offsets[i + 1] - base, data_len);
  return bl_xxh64(data + a, b > a ? b - a : 0, seed);
}
// The record and string kernels: one key per thread, hashed by `HASH(i)`.
#define BL_RECORD_HASH bl_record_hash(data, width, i, seed)
#define BL_STRING_HASH bl_string_hash(data, data_len, offsets, base, i, seed)
#define BL_RECORD_PARAMS const u8* data, u64 width, u64 n, u64 seed
#define BL_STRING_PARAMS const u8* data, u64 data_len, const u64* offsets, u64 base, u64 n, u64 seed
// The entry points of one geometry G (FLAT or GENS, see block.cu), named with SUFFIX. Every kernel takes
// (words, blocks, <keys>, n, seed[, out], <geometry>); MODE 0 = u64 keys, 1 = caller hashes.
#define BL_BYTE_KEY_ENTRIES(FORM, PARAMS, HASH, SUFFIX, G) \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_insert_##FORM##SUFFIX(u32* words, u64 blocks, PARAMS BL_GEO_PARAMS_##G) { \
  u64 i = bl_thread_index(); \
  if (i < n) bl_insert_geo(BL_GEO_##G, words, blocks, HASH); \
} \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_contains_##FORM##SUFFIX(const u32* words, u64 blocks, PARAMS, u8* out BL_GEO_PARAMS_##G) { \
  u64 i = bl_thread_index(); \
  if (i < n) out[i] = bl_contains_geo(BL_GEO_##G, words, blocks, HASH); \
} \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_bitmap_##FORM##SUFFIX(const u32* words, u64 blocks, PARAMS, u32* bits BL_GEO_PARAMS_##G) { \
  u64 i = bl_thread_index(); \
  bool r = i < n ? bl_contains_geo(BL_GEO_##G, words, blocks, HASH) : false; \
  bl_put_bits(bits, i, n, r); \
}
#define BL_WORD_KEY_ENTRIES(FORM, MODE, SUFFIX, G) \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_insert_##FORM##SUFFIX(u32* words, u64 blocks, const u64* keys, u64 n, u64 seed BL_GEO_PARAMS_##G) { \
  bl_insert_keys<MODE>(BL_GEO_##G, words, blocks, keys, n, seed); \
} \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_insert_##FORM##_bulk##SUFFIX(u32* words, u64 blocks, const u64* keys, u64 n, u64 seed BL_GEO_PARAMS_##G) { \
  bl_insert_keys_bulk<MODE>(BL_GEO_##G, words, blocks, keys, n, seed); \
} \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_contains_##FORM##SUFFIX(const u32* words, u64 blocks, const u64* keys, u64 n, u64 seed, u8* out BL_GEO_PARAMS_##G) { \
  bl_contains_keys<MODE>(BL_GEO_##G, words, blocks, keys, n, seed, out); \
} \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_bitmap_##FORM##SUFFIX(const u32* words, u64 blocks, const u64* keys, u64 n, u64 seed, u32* bits BL_GEO_PARAMS_##G) { \
  bl_bitmap_keys<MODE>(BL_GEO_##G, words, blocks, keys, n, seed, bits); \
}
#define BL_SLICE_ENTRY(SUFFIX, G) \
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_insert_slices##SUFFIX(u32* words, u64 blocks, const u64* hashes, u64 n, const u32* ends, u32 parts, u64 sb BL_GEO_PARAMS_##G) { \
  bl_insert_slices_geo(BL_GEO_##G, words, blocks, hashes, n, ends, parts, sb); \
}
#define BL_KEY_ENTRIES(SUFFIX, G) \
BL_SLICE_ENTRY(SUFFIX, G) \
BL_WORD_KEY_ENTRIES(u64, 0, SUFFIX, G) \
BL_WORD_KEY_ENTRIES(hash, 1, SUFFIX, G) \
BL_BYTE_KEY_ENTRIES(records, BL_RECORD_PARAMS, BL_RECORD_HASH, SUFFIX, G) \
BL_BYTE_KEY_ENTRIES(strings, BL_STRING_PARAMS, BL_STRING_HASH, SUFFIX, G)
