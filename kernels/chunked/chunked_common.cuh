// Shared by the `chunked` stage files (kernels/chunked/chunked.cu, kernels/chunked/chunked_prep.cu): the thread
// and tile constants, where a chunk starts, row offsets and the dtype switch. Device code.
#pragma once
#include <cuda_runtime.h>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/gdn_params.h"

namespace gdn_chunked {

constexpr int kThreads = 256;  // every stage; 16 x 16 thread tiles (tx = tid % 16, ty = tid / 16)
constexpr int kSlab = 32;      // K columns per staged slab (ut, scan, output)

// Where chunk n of head (b, hv) starts in the inputs and the workspace.
struct ChunkPos {
  int64_t b, hv, h, n;
  int64_t chunk;  // (b * HV + hv) * N + n: index of the chunk in the workspace
  int64_t t0;     // first token
  int L;          // rows in this chunk (C except for the tail)
};

__device__ __forceinline__ ChunkPos chunk_pos(const GdnShape& s, int C, int64_t b, int64_t hv,
                                              int64_t n, int64_t N) {
  ChunkPos c;
  c.b = b;
  c.hv = hv;
  c.h = hv / (s.HV / s.H);
  c.n = n;
  c.chunk = (b * s.HV + hv) * N + n;
  c.t0 = n * C;
  c.L = int(min(int64_t(C), s.T - c.t0));
  return c;
}

// Offsets of token t's row of q/k, v/o and g/beta.
__device__ __forceinline__ int64_t qk_row(const GdnShape& s, int64_t b, int64_t t, int64_t h) {
  return ((b * s.T + t) * s.H + h) * s.K;
}
__device__ __forceinline__ int64_t v_row(const GdnShape& s, int64_t b, int64_t t, int64_t hv) {
  return ((b * s.T + t) * s.HV + hv) * s.V;
}
__device__ __forceinline__ int64_t gate_idx(const GdnShape& s, int64_t b, int64_t t, int64_t hv) {
  return (b * s.T + t) * s.HV + hv;
}

// One block per (chunk, value head, batch entry).
inline dim3 chunk_grid(const GdnParams& p) {
  const int64_t N = (p.shape.T + p.chunk - 1) / p.chunk;
  return dim3(unsigned(N), unsigned(p.shape.HV), unsigned(p.shape.B));
}

}  // namespace gdn_chunked
