// ---- the emulation driver (tests/emulated.rs): runs one cell kernel over one job, every thread
// of every CTA one after another. The job and the result are files of little-endian u64 words:
// job = [kernel, cbits, blocks, seed, mode, n, value, flags, has_values, has_pos, out_bytes,
// image words, cell words], keys[n], values[n]?, pos[n]?, status[n], image, cells;
// result = image, cells, status[n], stats[2], out[n].
typedef void (*BlCellKernel)(BL_CELL_PARAMS);
static const BlCellKernel bl_emulated[] = {
    bl_cells_update_set, bl_cells_update_inc, bl_cells_update_dec, bl_cells_update_decay,
    bl_cells_update_max, bl_cells_reduce_all, bl_cells_reduce_min,
};

static std::vector<u64> bl_read(const char* path) {
  std::vector<u64> v;
  FILE* f = fopen(path, "rb");
  if (!f) exit(2);
  u64 w;
  while (fread(&w, 8, 1, f) == 1) v.push_back(w);
  fclose(f);
  return v;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::vector<u64> job = bl_read(argv[1]);
  size_t at = 13;
  if (job.size() < at) return 3;
  u64 kernel = job[0], n = job[5], image_len = job[11], cells_len = job[12];
  u32 cbits = (u32)job[1], value = (u32)job[6], flags = (u32)job[7], out_bytes = (u32)job[10];
  auto take = [&](u64 len) {
    std::vector<u64> part(job.begin() + at, job.begin() + at + len);
    at += len;
    return part;
  };
  std::vector<u64> keys = take(n);
  auto words32 = [](const std::vector<u64>& v) {
    std::vector<u32> w(v.size() + 1);
    for (size_t i = 0; i < v.size(); i++) w[i] = (u32)v[i];
    return w;
  };
  std::vector<u32> values = job[8] ? words32(take(n)) : std::vector<u32>();
  std::vector<u32> pos = job[9] ? words32(take(n)) : std::vector<u32>();
  std::vector<u32> status = words32(take(n));
  std::vector<u32> image = words32(take(image_len));
  std::vector<u32> cells = words32(take(cells_len));
  std::vector<u64> stats(2, 0);
  std::vector<u8> out(n * 4 + 4, 0);
  u64 per_cta = (u64)BL_THREADS * BL_KPT, ctas = n == 0 ? 1 : (n + per_cta - 1) / per_cta;
  gridDim.x = (unsigned)ctas;
  for (u64 b = 0; b < ctas; b++) {
    blockIdx.x = (unsigned)b;
    for (unsigned t = 0; t < BL_THREADS; t++) {
      threadIdx.x = t;
      bl_emulated[kernel](image.data(), cells.data(), job[2], keys.data(), n, job[3], (int)job[4], cbits,
                          value, job[8] ? values.data() : nullptr, job[9] ? pos.data() : nullptr,
                          flags ? status.data() : nullptr, flags, stats.data(), nullptr, 0, 0, out.data(),
                          out_bytes);
    }
  }
  FILE* f = fopen(argv[2], "wb");
  if (!f) return 4;
  auto put = [&](u64 w) { fwrite(&w, 8, 1, f); };
  for (u64 i = 0; i < image_len; i++) put(image[i]);
  for (u64 i = 0; i < cells_len; i++) put(cells[i]);
  for (u64 i = 0; i < n; i++) put(status[i]);
  put(stats[0]);
  put(stats[1]);
  for (u64 i = 0; i < n; i++) {
    u64 v = 0;
    memcpy(&v, out.data() + i * out_bytes, out_bytes);
    put(v);
  }
  fclose(f);
  return 0;
}
