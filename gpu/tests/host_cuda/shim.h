// Host stand-ins for the CUDA built-ins the kernel source uses, so that the generated source
// compiles as C++17 and its kernels run on the CPU one thread after another (tests/emulated.rs).
// Only kernels without warp collectives may be run this way: the collectives below make the
// rest of the source compile, they do not emulate a warp.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__
#define __align__(n) __attribute__((aligned(n)))

struct Dim3 { unsigned x, y, z; };
static Dim3 threadIdx, blockIdx, gridDim;
struct uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
unsigned bl_slice_smem[1 << 16];

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
static inline unsigned __ballot_sync(unsigned, bool r) { return r ? 1u : 0u; }
static inline unsigned __match_any_sync(unsigned, unsigned) { return 1u; }
template <class T> static inline T __shfl_sync(unsigned, T v, int) { return v; }
template <class T> static inline T __shfl_up_sync(unsigned, T v, int) { return v; }
static inline void __syncthreads() {}
static inline void __syncwarp() {}
