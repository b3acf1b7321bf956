// chunked, stages 1-3 (the algorithm, constraints and rounding: kernels/chunked/chunked.cu). All chunks in
// parallel, nothing carried between chunks:
//   1 gamma: gamma_i = sum_{j<=i} g_j, one thread per chunk, a sequential float32 sum (the CPU's
//            order); no shared memory.
//   2 ut:    A = strictly_lower(diag(beta) K K^T .* D), Tm = (I + A)^-1 by forward substitution,
//            one block per chunk. At C = 64: K slab 64 x 33 x 4 B = 8448 B + A, Tm 2 x 64 x 65 x
//            4 B = 33280 B + gamma, beta 512 B = 42240 B; 16 A accumulators per thread.
//   3 wy:    W = Tm diag(beta exp(gamma)) K, U0 = Tm diag(beta) V, one block per chunk. At C = 64:
//            Tm 64 x 65 x 4 B = 16640 B + K/V slab 64 x 64 x 4 B = 16384 B + 512 B = 33536 B;
//            16 accumulators per thread.
// Padded rows (past the tail chunk's length) are written as zeros, Tm's diagonal included.
#include <cuda_runtime.h>

#include "kernels/chunked/chunked_common.cuh"
#include "kernels/chunked/chunked_stages.h"

using namespace gdn_chunked;

namespace {

constexpr int kWyCols = 64;  // output columns per slab in wy

// Stage 1: one thread per chunk, a sequential float32 sum (the CPU's order).
__global__ void __launch_bounds__(kThreads) gdn_chunked_gamma_kernel(const GdnParams p, float* gamma,
                                                                     int64_t N) {
  const GdnShape s = p.shape;
  const int C = p.chunk;
  const int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x;  // (b, hv, n) flattened
  if (idx >= s.B * s.HV * N) return;
  const int64_t n = idx % N, head = idx / N;
  const ChunkPos c = chunk_pos(s, C, head / s.HV, head % s.HV, n, N);
  float* out = gamma + idx * C;
  float acc = 0.0f;
  for (int i = 0; i < C; ++i) {
    if (i < c.L && p.g) acc += p.g[gate_idx(s, c.b, c.t0 + i, c.hv)];
    out[i] = i < c.L ? acc : 0.0f;
  }
}

// Stage 2: one block per chunk. K K^T over K slabs (thread (ty, tx) owns rows ty + 16a and
// columns tx + 16b), then Tm row by row: Tm_ij = -sum_{j<=m<i} A_im Tm_mj, kThreads / kC
// consecutive lanes splitting the sum of each column j.
template <typename T, int kC>
__global__ void __launch_bounds__(kThreads) gdn_chunked_ut_kernel(const GdnParams p, const float* gamma,
                                                                  float* t_inv) {
  constexpr int kR = kC / 16;
  constexpr int kParts = kThreads / kC;
  __shared__ float k_s[kC][kSlab + 1];
  __shared__ float a_s[kC][kC + 1];
  __shared__ float t_s[kC][kC + 1];
  __shared__ float g_s[kC], beta_s[kC];

  const GdnShape s = p.shape;
  const ChunkPos c = chunk_pos(s, kC, blockIdx.z, blockIdx.y, blockIdx.x, gridDim.x);
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const T* k = static_cast<const T*>(p.k);

  if (tid < kC) {
    g_s[tid] = gamma[c.chunk * kC + tid];
    beta_s[tid] = (tid < c.L && p.use_delta) ? p.beta[gate_idx(s, c.b, c.t0 + tid, c.hv)] : 0.0f;
  }
  for (int x = tid; x < kC * kC; x += kThreads) {
    const int i = x / kC, j = x % kC;
    t_s[i][j] = (i == j && i < c.L) ? 1.0f : 0.0f;  // padded rows stay zero, diagonal included
  }
  if (p.use_delta) {
    float acc[kR][kR] = {};
    for (int64_t k0 = 0; k0 < s.K; k0 += kSlab) {
      __syncthreads();  // the previous slab is consumed
      for (int x = tid; x < kC * kSlab; x += kThreads) {
        const int r = x / kSlab, col = x % kSlab;
        k_s[r][col] = (r < c.L && k0 + col < s.K) ? to_float(k[qk_row(s, c.b, c.t0 + r, c.h) + k0 + col]) : 0.0f;
      }
      __syncthreads();
#pragma unroll 8
      for (int col = 0; col < kSlab; ++col) {
        float ki[kR], kj[kR];
#pragma unroll
        for (int a = 0; a < kR; ++a) {
          ki[a] = k_s[ty + 16 * a][col];
          kj[a] = k_s[tx + 16 * a][col];
        }
#pragma unroll
        for (int a = 0; a < kR; ++a)
#pragma unroll
          for (int b = 0; b < kR; ++b) acc[a][b] += ki[a] * kj[b];
      }
    }
    __syncthreads();  // g_s, beta_s written
#pragma unroll
    for (int a = 0; a < kR; ++a)
#pragma unroll
      for (int b = 0; b < kR; ++b) {
        const int i = ty + 16 * a, j = tx + 16 * b;
        a_s[i][j] = (j < i && i < c.L) ? beta_s[i] * acc[a][b] * expf(g_s[i] - g_s[j]) : 0.0f;
      }
  }
  __syncthreads();
  if (p.use_delta) {
    const int j = tid / kParts, part = tid % kParts;
    for (int i = 1; i < c.L; ++i) {
      float sum = 0.0f;
      for (int m = j + part; m < i; m += kParts) sum += a_s[i][m] * t_s[m][j];
      sum = group_sum<kParts>(sum);
      if (part == 0 && j < i) t_s[i][j] = -sum;
      __syncthreads();  // row i is complete before row i + 1 reads it
    }
  }
  float* out = t_inv + c.chunk * kC * kC;
  for (int x = tid; x < kC * kC; x += kThreads) out[x] = t_s[x / kC][x % kC];
}

// Stage 3: one block per chunk; 64-column slabs of diag(beta exp(gamma)) K (for W) and then of
// diag(beta) V (for U0) are multiplied by Tm from shared memory (thread: rows ty + 16a, columns
// tx + 16b of the slab).
template <typename T, int kC>
__global__ void __launch_bounds__(kThreads) gdn_chunked_wy_kernel(const GdnParams p, const float* gamma,
                                                                  const float* t_inv, float* w, float* u0) {
  constexpr int kR = kC / 16;
  __shared__ float t_s[kC][kC + 1];
  __shared__ float x_s[kC][kWyCols];
  __shared__ float wk_s[kC], wv_s[kC];  // row factors beta exp(gamma) and beta (0 past the tail)

  const GdnShape s = p.shape;
  const ChunkPos c = chunk_pos(s, kC, blockIdx.z, blockIdx.y, blockIdx.x, gridDim.x);
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  float* w_out = w + c.chunk * kC * s.K;
  float* u0_out = u0 + c.chunk * kC * s.V;

  const float* t_in = t_inv + c.chunk * kC * kC;
  for (int x = tid; x < kC * kC; x += kThreads) t_s[x / kC][x % kC] = t_in[x];
  if (tid < kC) {
    const float beta = tid >= c.L ? 0.0f : p.use_delta ? p.beta[gate_idx(s, c.b, c.t0 + tid, c.hv)] : 1.0f;
    wv_s[tid] = beta;
    wk_s[tid] = beta * expf(gamma[c.chunk * kC + tid]);
  }
  if (!p.use_delta)
    for (int64_t x = tid; x < kC * s.K; x += kThreads) w_out[x] = 0.0f;

  const int64_t n_w = p.use_delta ? (s.K + kWyCols - 1) / kWyCols : 0;
  const int64_t n_slabs = n_w + (s.V + kWyCols - 1) / kWyCols;
  for (int64_t slab = 0; slab < n_slabs; ++slab) {
    const bool is_w = slab < n_w;
    const int64_t dim = is_w ? s.K : s.V;
    const int64_t col0 = (is_w ? slab : slab - n_w) * kWyCols;
    __syncthreads();  // t_s and the factors are written; the previous slab is consumed
    for (int x = tid; x < kC * kWyCols; x += kThreads) {
      const int r = x / kWyCols, col = x % kWyCols;
      float val = 0.0f;
      if (r < c.L && col0 + col < dim)
        val = is_w ? wk_s[r] * to_float(k[qk_row(s, c.b, c.t0 + r, c.h) + col0 + col])
                   : wv_s[r] * to_float(v[v_row(s, c.b, c.t0 + r, c.hv) + col0 + col]);
      x_s[r][col] = val;
    }
    __syncthreads();
    float acc[kR][4] = {};
#pragma unroll 4
    for (int m = 0; m < kC; ++m) {
      float tm[kR], xm[4];
#pragma unroll
      for (int a = 0; a < kR; ++a) tm[a] = t_s[ty + 16 * a][m];
#pragma unroll
      for (int b = 0; b < 4; ++b) xm[b] = x_s[m][tx + 16 * b];
#pragma unroll
      for (int a = 0; a < kR; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] += tm[a] * xm[b];
    }
    float* out = is_w ? w_out : u0_out;
#pragma unroll
    for (int a = 0; a < kR; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int64_t col = col0 + tx + 16 * b;
        if (col < dim) out[(ty + 16 * a) * dim + col] = acc[a][b];  // rows past L: Tm rows are 0
      }
  }
}

}  // namespace

int launch_chunked_gamma(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream) {
  if (!chunked_params_ok(p)) return int(cudaErrorInvalidValue);
  const int64_t N = chunked_num_chunks(p);
  const int64_t total = p.shape.B * p.shape.HV * N;
  gdn_chunked_gamma_kernel<<<unsigned((total + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p, ws.gamma, N);
  return int(cudaGetLastError());
}

int launch_chunked_ut_transform(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream) {
  if (!chunked_params_ok(p)) return int(cudaErrorInvalidValue);
  return int(dispatch_dtype(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid = chunk_grid(p);
    switch (p.chunk) {
      case 16: gdn_chunked_ut_kernel<T, 16><<<grid, kThreads, 0, stream>>>(p, ws.gamma, ws.T_inv); break;
      case 32: gdn_chunked_ut_kernel<T, 32><<<grid, kThreads, 0, stream>>>(p, ws.gamma, ws.T_inv); break;
      default: gdn_chunked_ut_kernel<T, 64><<<grid, kThreads, 0, stream>>>(p, ws.gamma, ws.T_inv); break;
    }
    return cudaGetLastError();
  }));
}

int launch_chunked_wy(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream) {
  if (!chunked_params_ok(p)) return int(cudaErrorInvalidValue);
  return int(dispatch_dtype(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid = chunk_grid(p);
    switch (p.chunk) {
      case 16: gdn_chunked_wy_kernel<T, 16><<<grid, kThreads, 0, stream>>>(p, ws.gamma, ws.T_inv, ws.W, ws.U0); break;
      case 32: gdn_chunked_wy_kernel<T, 32><<<grid, kThreads, 0, stream>>>(p, ws.gamma, ws.T_inv, ws.W, ws.U0); break;
      default: gdn_chunked_wy_kernel<T, 64><<<grid, kThreads, 0, stream>>>(p, ws.gamma, ws.T_inv, ws.W, ws.U0); break;
    }
    return cudaGetLastError();
  }));
}

