// The cell kinds' per-key checks and conversions (the cells module, with cells.cu).
// Per-key results of a counting delete: out[i] = 1 iff key i was deleted (status bit 31).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_status_bytes(const u32* status, u64 n, u8* out) {
  u64 i = bl_thread_index();
  if (i < n) out[i] = (u8)(status[i] >> 31);
}
// The same for statuses in grouped order: status[i] belongs to key pos[i] (< n).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_status_scatter(const u32* status, const u32* pos, u64 n, u8* out) {
  u64 i = bl_thread_index();
  if (i < n) {
    u32 p = pos[i];
    if (p < n) out[p] = (u8)(status[i] >> 31);
  }
}
// The classes of a spatial insert, one per key: *first_bad (set to ~0 by the caller) ends as the
// smallest index of a class outside 1..=classes, or stays ~0; counts[c - 1] += the keys of class
// c (each warp adds each class it holds once). Every lane reaches the warp collective.
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_check_classes(const u32* values, u64 n, u32 classes, u64* first_bad, u64* counts) {
  u64 i = bl_thread_index();
  u32 c = i < n ? values[i] : 0u;
  bool ok = i < n && c >= 1u && c <= classes;
  if (i < n && !ok) atomicMin(first_bad, i);
  u32 peers = __match_any_sync(0xffffffffu, ok ? c : 0u);
  if (ok && (threadIdx.x & 31) == (u32)(__ffs(peers) - 1)) atomicAdd(counts + (c - 1), (u64)__popc(peers));
}
