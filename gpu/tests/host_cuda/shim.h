// Host stand-ins for the CUDA built-ins the kernel source uses, so that the generated source
// compiles as C++17 and its kernels run on the CPU (tests/emulated/). The threads of a CTA run as
// cooperative fibers (ucontext) on one OS thread, one CTA after another: a thread runs until it
// reaches __syncthreads or a warp collective, where it waits until every live thread of its CTA
// (or warp) has arrived, as on the device. So kernels with barriers, shared memory and warp
// collectives (ballot, shuffles, match) run as written; atomics are plain read-modify-writes (a
// fiber is never interrupted between two barriers). A kernel whose threads wait at different
// barriers, or some lanes of a warp at a collective the others never reach, is reported as a
// deadlock instead of hanging. Shared arrays are function statics (one per CTA at a time: every
// kernel initializes what it reads), dynamic shared memory one static buffer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>
#include <ucontext.h>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct Dim3 { unsigned x, y, z; };
static Dim3 threadIdx, blockIdx, gridDim;
struct uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

// Dynamic shared memory: one buffer, its size per launch checked by bl_launch.
static const size_t BL_DYNAMIC_WORDS = 1 << 20;
alignas(16) static unsigned bl_dynamic_smem[BL_DYNAMIC_WORDS];
#define BL_DYNAMIC_SHARED(name) unsigned* name = bl_dynamic_smem

template <class T> static inline T min(T a, T b) { return a < b ? a : b; }
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <class T> static inline T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <class T> static inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <class T> static inline T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <class T> static inline T atomicCAS(T* p, T expected, T v) { T o = *p; if (o == expected) *p = v; return o; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }

// ---- fibers ---------------------------------------------------------------------------------
struct BlFiber {
  ucontext_t ctx;
  std::vector<char> stack;
  unsigned tid = 0;
  bool done = false;
  int wait = 0;       // 0 runnable, 1 at __syncthreads, 2 at a warp collective
  unsigned gen = 0;   // the barrier generation it waits to pass
};
static std::vector<BlFiber> bl_fibers;
static ucontext_t bl_scheduler;
static BlFiber* bl_current = nullptr;
static const std::function<void()>* bl_body = nullptr;
static unsigned bl_cta_threads = 0;
static unsigned bl_cta_arrived = 0, bl_cta_gen = 0;
static unsigned bl_warp_arrived[32], bl_warp_gen[32];
static unsigned long long bl_warp_vals[32][32];

static unsigned bl_live(unsigned warp) {
  unsigned live = 0;
  for (unsigned t = warp * 32; t < warp * 32 + 32 && t < bl_cta_threads; t++) live += !bl_fibers[t].done;
  return live;
}
static unsigned bl_cta_live() {
  unsigned live = 0;
  for (unsigned t = 0; t < bl_cta_threads; t++) live += !bl_fibers[t].done;
  return live;
}
static void bl_yield(int wait, unsigned gen) {
  bl_current->wait = wait;
  bl_current->gen = gen;
  swapcontext(&bl_current->ctx, &bl_scheduler);
}
static inline void __syncthreads() {
  unsigned g = bl_cta_gen;
  if (++bl_cta_arrived == bl_cta_live()) { bl_cta_arrived = 0; bl_cta_gen++; return; }
  bl_yield(1, g);
}
static void bl_warp_barrier() {
  unsigned w = threadIdx.x / 32, g = bl_warp_gen[w];
  if (++bl_warp_arrived[w] == bl_live(w)) { bl_warp_arrived[w] = 0; bl_warp_gen[w]++; return; }
  bl_yield(2, g);
}
// Every live lane of the warp posts `v`, then reads what the others posted.
static unsigned long long* bl_exchange(unsigned long long v) {
  unsigned w = threadIdx.x / 32;
  bl_warp_vals[w][threadIdx.x & 31] = v;
  bl_warp_barrier();
  return bl_warp_vals[w];
}
// The warp's lanes that are live (their posted values are valid).
static unsigned bl_live_mask() {
  unsigned w = threadIdx.x / 32, m = 0;
  for (unsigned l = 0; l < 32 && w * 32 + l < bl_cta_threads; l++) m |= (unsigned)!bl_fibers[w * 32 + l].done << l;
  return m;
}
static inline void __syncwarp() { bl_warp_barrier(); }
static inline unsigned __ballot_sync(unsigned, bool r) {
  unsigned long long* v = bl_exchange(r);
  unsigned m = 0, live = bl_live_mask();
  for (unsigned l = 0; l < 32; l++) if ((live >> l) & 1u) m |= (unsigned)(v[l] != 0) << l;
  bl_warp_barrier();
  return m;
}
static inline unsigned __match_any_sync(unsigned, unsigned x) {
  unsigned long long* v = bl_exchange(x);
  unsigned m = 0, live = bl_live_mask();
  for (unsigned l = 0; l < 32; l++) if (((live >> l) & 1u) && v[l] == x) m |= 1u << l;
  bl_warp_barrier();
  return m;
}
template <class T> static inline T bl_shuffle(T x, unsigned src) {
  unsigned long long b = 0;
  memcpy(&b, &x, sizeof(T));
  unsigned long long* v = bl_exchange(b);
  T r = x;
  if (src < 32) memcpy(&r, &v[src], sizeof(T));
  bl_warp_barrier();
  return r;
}
template <class T> static inline T __shfl_sync(unsigned, T v, int src) { return bl_shuffle(v, (unsigned)src & 31u); }
template <class T> static inline T __shfl_up_sync(unsigned, T v, int off) {
  unsigned lane = threadIdx.x & 31;
  return bl_shuffle(v, lane >= (unsigned)off ? lane - off : 32u);
}

static void bl_fiber_main() {
  (*bl_body)();
  bl_current->done = true;
  bl_current->wait = 0;
  swapcontext(&bl_current->ctx, &bl_scheduler);
}

// Releases barriers that every live thread has reached (a thread that returns early no longer
// counts, as on the device).
static void bl_release() {
  if (bl_cta_arrived && bl_cta_arrived == bl_cta_live()) { bl_cta_arrived = 0; bl_cta_gen++; }
  for (unsigned w = 0; w * 32 < bl_cta_threads; w++)
    if (bl_warp_arrived[w] && bl_warp_arrived[w] == bl_live(w)) { bl_warp_arrived[w] = 0; bl_warp_gen[w]++; }
}

// Runs `body` as a kernel of `grid` CTAs of `threads` threads with `smem` bytes of dynamic shared
// memory. Exits with status 5 on a deadlock (threads waiting at different barriers).
static void bl_launch(unsigned grid, unsigned threads, size_t smem, const std::function<void()>& body) {
  if (smem > sizeof(bl_dynamic_smem) || threads == 0 || threads > 1024) { fprintf(stderr, "bad launch\n"); exit(6); }
  bl_body = &body;
  bl_cta_threads = threads;
  gridDim.x = grid;
  if (bl_fibers.size() < threads) bl_fibers.resize(threads);
  for (unsigned b = 0; b < grid; b++) {
    blockIdx.x = b;
    bl_cta_arrived = 0;
    memset(bl_warp_arrived, 0, sizeof(bl_warp_arrived));
    for (unsigned t = 0; t < threads; t++) {
      BlFiber& f = bl_fibers[t];
      f.stack.resize(1 << 16);
      f.tid = t; f.done = false; f.wait = 0;
      getcontext(&f.ctx);
      f.ctx.uc_stack.ss_sp = f.stack.data();
      f.ctx.uc_stack.ss_size = f.stack.size();
      f.ctx.uc_link = nullptr;
      makecontext(&f.ctx, bl_fiber_main, 0);
    }
    for (;;) {
      bool progress = false, all_done = true;
      for (unsigned t = 0; t < threads; t++) {
        BlFiber& f = bl_fibers[t];
        if (f.done) continue;
        all_done = false;
        if (f.wait == 1 && f.gen == bl_cta_gen) continue;
        if (f.wait == 2 && f.gen == bl_warp_gen[t / 32]) continue;
        f.wait = 0;
        bl_current = &f;
        threadIdx.x = t;
        swapcontext(&bl_scheduler, &f.ctx);
        progress = true;
      }
      if (all_done) break;
      if (!progress) {
        unsigned before = bl_cta_gen;
        unsigned warps[32];
        memcpy(warps, bl_warp_gen, sizeof(warps));
        bl_release();
        if (before == bl_cta_gen && !memcmp(warps, bl_warp_gen, sizeof(warps))) {
          fprintf(stderr, "deadlock: CTA %u, threads waiting at different barriers\n", b);
          exit(5);
        }
      }
    }
  }
  bl_body = nullptr;
}
