// Sliding-window filters (bloomlanes_core::window): gens = g + 1 generations of the image,
// interleaved by block (BlGens in block.cu). Inserts and lookups are the key kernels' _window
// entry points; the host splits batches at generation boundaries and clears generations itself.
// Clears generation `gen`: one thread per u32 word of it (blocks * BL_BLOCK_U32S words).
extern "C" __global__ void __launch_bounds__(BL_THREADS) bl_window_clear(u32* words, u64 blocks, u32 gens, u32 gen) {
  u64 i = bl_thread_index();
  if (i < blocks * BL_BLOCK_U32S) {
    u64 b = i / BL_BLOCK_U32S, w = i % BL_BLOCK_U32S;
    words[(b * gens + gen) * BL_BLOCK_U32S + w] = 0;
  }
}
