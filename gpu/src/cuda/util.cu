// Layout-independent kernels of the static module: set operations, the input check of device
// strings, the hashes of records and strings, the bitmap-to-bytes conversion of lookups, the random
// key generator and the speed-of-light reference of the benchmarks.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_union(u32* a, const u32* b, u64 n) {
  u64 i = bl_thread_index();
  if (i < n) a[i] |= b[i];
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_intersect(u32* a, const u32* b, u64 n) {
  u64 i = bl_thread_index();
  if (i < n) a[i] &= b[i];
}
// String offsets are valid when each is at most data_len and none is smaller than the one before
// it (bloomlanes_core::Strings::new). *first_bad (set to ~0 by the caller) ends as the smallest
// index of an offset that is not, or stays ~0.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_check_offsets(const u64* offsets, u64 count, u64 data_len, u64* first_bad) {
  u64 i = bl_thread_index();
  if (i < count) {
    u64 v = offsets[i];
    if (v > data_len || (i > 0 && v < offsets[i - 1])) atomicMin(first_bad, i);
  }
}
// SplitMix64 keys: key i = mix(seed + (i + 1) * golden).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_fill_random(u64* keys, u64 n, u64 seed) {
  u64 i = bl_thread_index();
  if (i < n) {
    u64 z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    keys[i] = z ^ (z >> 31);
  }
}
// Speed of light for a lookup: read the key, one random 32-byte-aligned 32-byte read from a
// buffer of `sectors` sectors, write one byte. Same thread shape as the lookups.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_speed_of_light(const uint4* buf, u64 sectors, const u64* keys, u64 n, u8* out) {
  u8 r[BL_KPT];
  u64 base = bl_answers(keys, n, (u8)0, r, [&](u64 k) {
    u64 s = ((k >> 32) * sectors) >> 32;
    uint4 a = __ldg(buf + 2 * s), b = __ldg(buf + 2 * s + 1);
    return (u8)(((a.x | a.y | a.z | a.w | b.x | b.y | b.z | b.w) & 1u) != 0);
  });
  bl_store_keys(out, n, base, r);
}
// out[i] = bit i of the bitmap `bits`, for i < n.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_bits_to_bytes(const u32* bits, u64 n, u8* out) {
  u64 i = bl_thread_index();
  if (i < n) out[i] = (u8)((bits[i >> 5] >> (i & 31)) & 1u);
}
// The hashes of records and strings into out[0, n), for the paths that take hashes (the filter
// kinds, partitioned lookups and deletes).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_hash_records(const u8* data, u64 width, u64 n, u64 seed, u64* out) {
  u64 i = bl_thread_index();
  if (i < n) out[i] = bl_record_hash(data, width, i, seed);
}
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_hash_strings(const u8* data, u64 data_len, const u64* offsets, u64 base, u64 n, u64 seed, u64* out) {
  u64 i = bl_thread_index();
  if (i < n) out[i] = bl_string_hash(data, data_len, offsets, base, i, seed);
}
