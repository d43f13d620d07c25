// ---- the emulation driver (tests/emulated/): runs a script of kernel launches over buffers.
// The job and the result are files of little-endian u64 words:
//   job = [buffers, launches], then per buffer [bytes, data padded to 8 bytes], then per launch
//         [name bytes, name padded to 8 bytes, grid, dynamic shared bytes, args, (tag, value) per
//         arg] with tag 0 = a scalar, 1 = buffer `value` (a pointer to its first byte), 2 = null;
//   result = every buffer's bytes, padded to 8, in order.
// Every CTA has BL_THREADS threads. The kernels are called through their own signatures: each
// argument is converted to its parameter's type (a pointer parameter takes a buffer or null).
#include <string>
#include <utility>

struct BlArgs {
  std::vector<void*> ptr;
  std::vector<unsigned long long> val;
};
template <class T> struct BlArg { static T get(const BlArgs& a, size_t i) { return (T)a.val[i]; } };
template <class T> struct BlArg<T*> { static T* get(const BlArgs& a, size_t i) { return (T*)a.ptr[i]; } };
template <class... P, size_t... I>
static void bl_call(void (*k)(P...), const BlArgs& a, std::index_sequence<I...>) { k(BlArg<P>::get(a, I)...); }
typedef std::function<void(const BlArgs&)> BlAdapter;
template <class... P> static BlAdapter bl_adapter(void (*k)(P...)) {
  return [k](const BlArgs& a) {
    if (a.val.size() != sizeof...(P)) { fprintf(stderr, "wrong argument count\n"); exit(7); }
    bl_call(k, a, std::index_sequence_for<P...>{});
  };
}
#define BL_KERNEL(name) {#name, bl_adapter(name)}
static const std::pair<const char*, BlAdapter> bl_kernels[] = {
#ifdef BL_EMULATE_STATIC
    BL_KERNEL(bl_part_hist), BL_KERNEL(bl_part_scan), BL_KERNEL(bl_part_scatter), BL_KERNEL(bl_part_scatter_pos),
    BL_KERNEL(bl_radix_scatter_keys), BL_KERNEL(bl_radix_scatter_hashes), BL_KERNEL(bl_part_bounds),
    BL_KERNEL(bl_insert_slices), BL_KERNEL(bl_insert_hash_bulk), BL_KERNEL(bl_insert_u64), BL_KERNEL(bl_insert_hash),
#endif
#ifdef BL_EMULATE_WINDOW
    BL_KERNEL(bl_insert_slices_window), BL_KERNEL(bl_insert_hash_bulk_window),
#endif
#ifdef BL_EMULATE_CELLS
    BL_KERNEL(bl_cells_update_set), BL_KERNEL(bl_cells_update_inc), BL_KERNEL(bl_cells_update_dec),
    BL_KERNEL(bl_cells_update_decay), BL_KERNEL(bl_cells_update_max), BL_KERNEL(bl_cells_slices_set),
    BL_KERNEL(bl_cells_slices_inc), BL_KERNEL(bl_cells_slices_dec), BL_KERNEL(bl_cells_slices_decay),
    BL_KERNEL(bl_cells_slices_max), BL_KERNEL(bl_cells_reduce_all), BL_KERNEL(bl_cells_reduce_min),
    BL_KERNEL(bl_count_check), BL_KERNEL(bl_check_classes), BL_KERNEL(bl_status_bytes), BL_KERNEL(bl_status_scatter),
#endif
#ifdef BL_EMULATE_RETRIEVAL
    BL_KERNEL(bl_retrieval_get),
#endif
};

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* f = fopen(argv[1], "rb");
  if (!f) return 2;
  std::vector<unsigned long long> job;
  unsigned long long w;
  while (fread(&w, 8, 1, f) == 1) job.push_back(w);
  fclose(f);
  size_t at = 0;
  auto next = [&]() -> unsigned long long {
    if (at >= job.size()) { fprintf(stderr, "truncated job\n"); exit(3); }
    return job[at++];
  };
  unsigned long long nbuf = next(), nlaunch = next();
  std::vector<std::vector<unsigned long long>> bufs(nbuf);
  std::vector<unsigned long long> lens(nbuf);
  for (unsigned long long b = 0; b < nbuf; b++) {
    lens[b] = next();
    bufs[b].resize((lens[b] + 7) / 8 + 1);
    for (size_t i = 0; i < (lens[b] + 7) / 8; i++) bufs[b][i] = next();
  }
  for (unsigned long long l = 0; l < nlaunch; l++) {
    unsigned long long name_len = next();
    std::string name;
    for (size_t i = 0; i < (name_len + 7) / 8; i++) {
      unsigned long long c = next();
      name.append((const char*)&c, 8);
    }
    name.resize(name_len);
    unsigned long long grid = next(), smem = next(), nargs = next();
    BlArgs a;
    for (unsigned long long i = 0; i < nargs; i++) {
      unsigned long long tag = next(), v = next();
      if (tag == 1 && v >= nbuf) { fprintf(stderr, "bad buffer\n"); exit(3); }
      a.ptr.push_back(tag == 1 ? (void*)bufs[v].data() : nullptr);
      a.val.push_back(v);
    }
    const BlAdapter* k = nullptr;
    for (const auto& e : bl_kernels) if (name == e.first) k = &e.second;
    if (!k) { fprintf(stderr, "unknown kernel %s\n", name.c_str()); exit(4); }
    bl_launch((unsigned)grid, BL_THREADS, smem, [&] { (*k)(a); });
  }
  f = fopen(argv[2], "wb");
  if (!f) return 4;
  for (unsigned long long b = 0; b < nbuf; b++) fwrite(bufs[b].data(), 8, (lens[b] + 7) / 8, f);
  fclose(f);
  return 0;
}
