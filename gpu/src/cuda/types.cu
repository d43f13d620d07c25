// Integer types of every kernel file.
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;
typedef unsigned short u16;
// A kernel's dynamic shared memory as u32 words (the host sizes it at launch). Host emulation
// (tests/host_cuda/shim.h) defines it first.
#ifndef BL_DYNAMIC_SHARED
#define BL_DYNAMIC_SHARED(name) extern __shared__ __align__(16) u32 name[]
#endif
