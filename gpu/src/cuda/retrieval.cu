// Retrieval tables (bloomlanes_core::retrieval, docs/FORMAT.md §9): a key's value is the XOR of
// its `arity` cells of c = vbits + fbits bits, packed little-endian in 64-bit words (plus one zero
// word at the end, so that every cell is read with two loads). The host checks the table's shape
// (core's Shape::check) and uploads Shape::words() words, so every cell read is in bounds.
__device__ __forceinline__ u64 bl_fmix64(u64 x) {
  x ^= x >> 33; x *= BL_MIX_MUL1; x ^= x >> 33; x *= BL_MIX_MUL2; return x ^ (x >> 33);
}
// Cell i (not yet masked to c bits). `<< 1 << (63 - s)` is `<< (64 - s)` without a shift by 64.
// The second word is read only when the cell runs into it (s + c > 64): otherwise it adds bits
// at 64 - s >= c and above, which the caller masks off (or none, for c = 64 and s = 0). That
// saves a load of the next sector for a cell that ends at a sector's last word.
__device__ __forceinline__ u64 bl_read_cell(const u64* __restrict__ words, u32 c, u32 i) {
  u64 p = (u64)i * c, w = p >> 6;
  u32 s = (u32)(p & 63);
  u64 x = __ldg(words + w) >> s;
  if (s + c > 64u) x |= (__ldg(words + w + 1) << 1) << (63 - s);
  return x;
}
// The value of the key with hash h, or false when its check bits say it is absent.
__device__ __forceinline__ bool bl_retrieve(const u64* __restrict__ words, u64 cseed, u32 sigma, u32 segs,
    u32 arity, u32 vbits, u32 fbits, u64 h, u32* value) {
  u64 m = bl_fmix64(h + cseed);
  u64 r = __umul64hi(m, BL_MIX_MUL2) ^ (m * BL_MIX_MUL2);
  u32 len = 1u << sigma, c = vbits + fbits;
  u32 start = (u32)__umul64hi(m, (u64)segs << sigma);
  u64 x = bl_read_cell(words, c, start);
  for (u32 j = 1; j < arity; j++)
    x ^= bl_read_cell(words, c, (start + j * len) ^ ((u32)(r >> ((j - 1) * sigma)) & (len - 1)));
  if (c < 64) x &= (1ull << c) - 1;
  u64 check = fbits == 0 ? 0 : m & ((1ull << fbits) - 1);
  *value = (u32)(x & ((1ull << vbits) - 1));
  return (x >> vbits) == check;
}
// values[i] = the value of key i (0 when absent); bit i of found (u32 words) = key i found.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_retrieval_get(const u64* words, u64 cseed, u32 sigma, u32 segs, u32 arity, u32 vbits, u32 fbits, const u64* keys, u64 n, u64 seed, int mode, u32* values, u32* found) {
  bl_each_key(keys, n, [&](u64 i, u64 k) {
    u32 v = 0;
    bool ok = i < n && bl_retrieve(words, cseed, sigma, segs, arity, vbits, fbits, bl_key_hash(k, seed, mode), &v);
    if (i < n) values[i] = ok ? v : 0u;
    bl_put_bits(found, i, n, ok);
  });
}
