// chunked: the chunked UT-transform form of docs/DESIGN.md section 1 on the GPU, SIMT float32 math.
// Per chunk of C tokens (S0 the state entering it, D_ij = exp(gamma_i - gamma_j), i >= j only):
//   1 gamma:  gamma_i = sum_{j<=i} g_j                                     [B, HV, N, C]
//   2 ut:     A = strictly_lower(diag(beta) K K^T .* D); Tm = (I + A)^-1    [B, HV, N, C, C]
//   3 wy:     W = Tm diag(beta exp(gamma)) K;  U0 = Tm diag(beta) V         [.., C, K], [.., C, V]
//   4 scan:   U = U0 - W S0;  S_next = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
//   5 output: O = scale (diag(exp(gamma)) Q S0 + (Q K^T .* D .* causal_incl_diag) U)
// Stages 1, 2, 3 and 5 run over all chunks in parallel; only stage 4 walks the chunks in order,
// carrying a K x 32 slice of the state. Differs from recurrent: T rank-1 steps become per-chunk
// matrix products, the sequential part shrinks from T steps to N = ceil(T / C) chunk steps, and
// the intermediates live in a float32 workspace (kernels/chunked/chunked_stages.h) that tests read.
// Without the delta term beta = 1, A = 0, Tm = I and W = 0, so U = U0 = V.
// Constraints: K, V <= 256 (any value), C in {16, 32, 64}, B and HV <= 65535, any T: the tail
// chunk has L = T - (N-1) C rows; rows past L are zero in every intermediate and gamma_last is
// gamma[L-1]. Exponentials are only ever taken of gamma_i - gamma_j with i >= j (<= 0 for g <= 0):
// strong decay underflows to 0, never inf. Every global offset is 64-bit.
// Rounds: q, k, v converted to float on load; all arithmetic, the workspace and hT in float32;
// o rounded to the input dtype once. Forward substitution for Tm (row by row).
// Files: stages 1-3 in kernels/chunked/chunked_prep.cu, stages 4-5 and the launcher here, shared helpers
// in kernels/chunked/chunked_common.cuh. Blocks of 256 threads; static shared memory, never past 48 KiB
// (ut 42240 B, wy 33536 B at C = 64: see chunked_prep.cu). At C = 64, K = 256:
//   scan:   S copy 256 x 32 x 4 B = 32768 B (aliased by U, 64 x 32 x 4 B) + staging of W (64 x 33)
//           or K rows (8 x 256) 8448 B + gamma 256 B = 41472 B; state 2 x 16 = 32 floats and
//           U 2 x 4 = 8 floats in registers per thread.
//   output: Q, K slabs 2 x 64 x 33 x 4 B + S0 slab 32 x 64 x 4 B = 25088 B, then reused for
//           P 64 x 65 x 4 B + U 64 x 64 x 4 B = 33024 B; + gamma 256 B = 33280 B;
//           16 P and 16 O accumulators per thread.
// Registers (ptxas, CUDA 13, sm_90a): gamma 32, ut 32-48, wy 38-48, scan 107-148 (one block per
// SM), output 57-128; no spills. Workspace: 4 B x B HV N (C + C^2 + C K + 2 C V + K V), each
// tensor 256-byte aligned: at C = 64, K = V = 128 that is 705 floats per token and value head,
// 5.5x the bytes of v in float32.
#include <cuda_runtime.h>

#include "kernels/chunked/chunked_common.cuh"
#include "kernels/chunked/chunked_stages.h"
#include "kernels/common/cuda_kernels.h"

using namespace gdn_chunked;

namespace {

constexpr int kScanBV = 32;       // value columns per scan block
constexpr int kScanStage = 2048;  // floats of staged K rows per scan step (8 x 256, 16 x 128, ...)
constexpr int kOutBV = 64;        // value columns per output block

// Stage 4: one block per (b, hv, 32 value columns), chunks in order. Thread (ty, tx) holds state
// rows ty + 16i (i < kRows) of columns tx and tx + 16 in registers; a shared copy feeds U = U0 -
// W S0 (thread: U rows ty + 16a, a < C/16, same two columns), then S = exp(gamma_last) S +
// K^T (exp(gamma_last - gamma) .* U) from staged K rows.
// One block per SM is plenty (the grid is B * HV * V/32 blocks); min blocks 1 lets ptxas keep the
// unrolled state addressing in registers instead of spilling.
template <typename T, int kRows>
__global__ void __launch_bounds__(kThreads, 1) gdn_chunked_scan_kernel(const GdnParams p,
                                                                    const ChunkedWorkspaceView ws) {
  constexpr int kKPad = 16 * kRows;             // K rounded up to the thread tile
  constexpr int kStageRows = kScanStage / kKPad;  // K rows staged per step (8, 16 or 32)
  constexpr int kStageFloats = kScanStage > 64 * (kSlab + 1) ? kScanStage : 64 * (kSlab + 1);
  // S copy [kKPad][32] for U = U0 - W S0; after that the same floats hold d .* U [C][32].
  __shared__ float su_s[kKPad * kScanBV > 64 * kScanBV ? kKPad * kScanBV : 64 * kScanBV];
  __shared__ float stage_s[kStageFloats];  // W slab [C][33] or K rows [kStageRows][kKPad]
  __shared__ float g_s[64];

  const GdnShape s = p.shape;
  const int C = p.chunk;
  const int64_t N = (s.T + C - 1) / C;
  const int64_t b = blockIdx.z, hv = blockIdx.y, v0 = int64_t(blockIdx.x) * kScanBV;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row_tiles = C / 16;
  const T* k = static_cast<const T*>(p.k);
  bool col_ok[2];
  col_ok[0] = v0 + tx < s.V;
  col_ok[1] = v0 + tx + 16 < s.V;

  float S[kRows][2];
  const int64_t state_base = (b * s.HV + hv) * s.K * s.V;
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int cc = 0; cc < 2; ++cc) {
      const int64_t row = ty + 16 * i;
      S[i][cc] = (p.h0 && row < s.K && col_ok[cc]) ? p.h0[state_base + row * s.V + v0 + tx + 16 * cc] : 0.0f;
    }

  for (int64_t n = 0; n < N; ++n) {
    const ChunkPos c = chunk_pos(s, C, b, hv, n, N);
    // The entering state: to the workspace and to the shared copy.
    float* states = ws.states + c.chunk * s.K * s.V;
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int cc = 0; cc < 2; ++cc) {
        const int64_t row = ty + 16 * i;
        if (row < s.K && col_ok[cc]) states[row * s.V + v0 + tx + 16 * cc] = S[i][cc];
        su_s[(ty + 16 * i) * kScanBV + tx + 16 * cc] = S[i][cc];
      }
    if (tid < C) g_s[tid] = ws.gamma[c.chunk * C + tid];
    __syncthreads();

    // acc = W S0 over K slabs.
    float acc[4][2] = {};
    if (p.use_delta) {
      const float* w = ws.W + c.chunk * C * s.K;
      for (int64_t k0 = 0; k0 < s.K; k0 += kSlab) {
        for (int x = tid; x < C * kSlab; x += kThreads) {
          const int r = x / kSlab, col = x % kSlab;
          stage_s[r * (kSlab + 1) + col] = k0 + col < s.K ? w[r * s.K + k0 + col] : 0.0f;
        }
        __syncthreads();
        const int kn = int(min(int64_t(kSlab), s.K - k0));
        for (int kk = 0; kk < kn; ++kk) {
          const float s0 = su_s[(k0 + kk) * kScanBV + tx], s1 = su_s[(k0 + kk) * kScanBV + tx + 16];
#pragma unroll
          for (int a = 0; a < 4; ++a)
            if (a < row_tiles) {
              const float wv = stage_s[(ty + 16 * a) * (kSlab + 1) + kk];
              acc[a][0] += wv * s0;
              acc[a][1] += wv * s1;
            }
        }
        __syncthreads();  // stage_s and the S copy are consumed
      }
    }

    // U = U0 - W S0 to the workspace; d .* U (d_r = exp(gamma_last - gamma_r), 0 past L) to shared.
    const float g_last = g_s[c.L - 1];
    {
      const float* u0 = ws.U0 + c.chunk * C * s.V;
      float* u = ws.U + c.chunk * C * s.V;
#pragma unroll
      for (int a = 0; a < 4; ++a)
        if (a < row_tiles) {
          const int r = ty + 16 * a;
          const float d = r < c.L ? expf(g_last - g_s[r]) : 0.0f;
#pragma unroll
          for (int cc = 0; cc < 2; ++cc) {
            float val = 0.0f;
            if (col_ok[cc]) {
              const int64_t off = int64_t(r) * s.V + v0 + tx + 16 * cc;
              val = u0[off] - acc[a][cc];
              u[off] = val;
            }
            su_s[r * kScanBV + tx + 16 * cc] = d * val;
          }
        }
    }
    const float decay = expf(g_last);
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      S[i][0] *= decay;
      S[i][1] *= decay;
    }
    __syncthreads();

    // S += K^T (d .* U), kStageRows tokens at a time.
    for (int j0 = 0; j0 < c.L; j0 += kStageRows) {
      const int jn = min(kStageRows, c.L - j0);
      for (int x = tid; x < kStageRows * kKPad; x += kThreads) {
        const int jj = x / kKPad, col = x % kKPad;
        stage_s[x] = (jj < jn && col < s.K) ? to_float(k[qk_row(s, b, c.t0 + j0 + jj, c.h) + col]) : 0.0f;
      }
      __syncthreads();
      for (int jj = 0; jj < jn; ++jj) {
        const float u0v = su_s[(j0 + jj) * kScanBV + tx], u1v = su_s[(j0 + jj) * kScanBV + tx + 16];
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          const float kv = stage_s[jj * kKPad + ty + 16 * i];
          S[i][0] += kv * u0v;
          S[i][1] += kv * u1v;
        }
      }
      __syncthreads();  // stage_s, su_s and g_s are consumed before the next chunk rewrites them
    }
  }

  if (p.hT) {
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int cc = 0; cc < 2; ++cc) {
        const int64_t row = ty + 16 * i;
        if (row < s.K && col_ok[cc]) p.hT[state_base + row * s.V + v0 + tx + 16 * cc] = S[i][cc];
      }
  }
}

// Stage 5: one block per (b, hv, chunk, 64 value columns). Q K^T and Q S0 accumulate together
// over K slabs (thread: rows ty + 16a, key columns tx + 16b, value columns tx + 16b); then the
// masked, decayed P = (Q K^T .* D) meets U from shared memory.
template <typename T, int kC>
__global__ void __launch_bounds__(kThreads) gdn_chunked_output_kernel(const GdnParams p,
                                                                      const ChunkedWorkspaceView ws) {
  constexpr int kR = kC / 16;
  constexpr int kQ = 0, kK = kC * (kSlab + 1), kS = 2 * kC * (kSlab + 1);  // phase 1 offsets
  constexpr int kP = 0, kU = kC * (kC + 1);                              // phase 2 offsets
  constexpr int kPhase1 = kS + kSlab * kOutBV, kPhase2 = kU + kC * kOutBV;
  __shared__ float smem[kPhase1 > kPhase2 ? kPhase1 : kPhase2];
  __shared__ float g_s[kC];

  const GdnShape s = p.shape;
  const int64_t N = (s.T + kC - 1) / kC;
  const int64_t n_vb = (s.V + kOutBV - 1) / kOutBV;
  const ChunkPos c = chunk_pos(s, kC, blockIdx.z, blockIdx.y, blockIdx.x / n_vb, N);
  const int64_t v0 = (blockIdx.x % n_vb) * kOutBV;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const float* states = ws.states + c.chunk * s.K * s.V;

  if (tid < kC) g_s[tid] = ws.gamma[c.chunk * kC + tid];
  float acc_p[kR][kR] = {}, acc_o[kR][4] = {};
  for (int64_t k0 = 0; k0 < s.K; k0 += kSlab) {
    __syncthreads();  // the previous slab is consumed
    for (int x = tid; x < kC * kSlab; x += kThreads) {
      const int r = x / kSlab, col = x % kSlab;
      const bool ok = r < c.L && k0 + col < s.K;
      const int64_t off = qk_row(s, c.b, c.t0 + r, c.h) + k0 + col;
      smem[kQ + r * (kSlab + 1) + col] = ok ? to_float(q[off]) : 0.0f;
      smem[kK + r * (kSlab + 1) + col] = ok ? to_float(k[off]) : 0.0f;
    }
    for (int x = tid; x < kSlab * kOutBV; x += kThreads) {
      const int r = x / kOutBV, col = x % kOutBV;
      smem[kS + x] = (k0 + r < s.K && v0 + col < s.V) ? states[(k0 + r) * s.V + v0 + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < kSlab; ++kk) {
      float qa[kR], kb[kR], sb[4];
#pragma unroll
      for (int a = 0; a < kR; ++a) {
        qa[a] = smem[kQ + (ty + 16 * a) * (kSlab + 1) + kk];
        kb[a] = smem[kK + (tx + 16 * a) * (kSlab + 1) + kk];
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) sb[b] = smem[kS + kk * kOutBV + tx + 16 * b];
#pragma unroll
      for (int a = 0; a < kR; ++a) {
#pragma unroll
        for (int b = 0; b < kR; ++b) acc_p[a][b] += qa[a] * kb[b];
#pragma unroll
        for (int b = 0; b < 4; ++b) acc_o[a][b] += qa[a] * sb[b];
      }
    }
  }
  __syncthreads();  // phase 1 buffers are consumed; g_s is written

  const float* u = ws.U + c.chunk * kC * s.V;
#pragma unroll
  for (int a = 0; a < kR; ++a) {
    const int i = ty + 16 * a;
#pragma unroll
    for (int b = 0; b < kR; ++b) {
      const int j = tx + 16 * b;
      smem[kP + i * (kC + 1) + j] = (j <= i && i < c.L) ? acc_p[a][b] * expf(g_s[i] - g_s[j]) : 0.0f;
    }
    const float decay = i < c.L ? expf(g_s[i]) : 0.0f;
#pragma unroll
    for (int b = 0; b < 4; ++b) acc_o[a][b] *= decay;
  }
  for (int x = tid; x < kC * kOutBV; x += kThreads) {
    const int r = x / kOutBV, col = x % kOutBV;
    smem[kU + x] = (r < c.L && v0 + col < s.V) ? u[int64_t(r) * s.V + v0 + col] : 0.0f;
  }
  __syncthreads();
#pragma unroll 4
  for (int j = 0; j < kC; ++j) {
    float pa[kR], ub[4];
#pragma unroll
    for (int a = 0; a < kR; ++a) pa[a] = smem[kP + (ty + 16 * a) * (kC + 1) + j];
#pragma unroll
    for (int b = 0; b < 4; ++b) ub[b] = smem[kU + j * kOutBV + tx + 16 * b];
#pragma unroll
    for (int a = 0; a < kR; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) acc_o[a][b] += pa[a] * ub[b];
  }

  T* o = static_cast<T*>(p.o);
#pragma unroll
  for (int a = 0; a < kR; ++a) {
    const int i = ty + 16 * a;
    if (i >= c.L) continue;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int64_t col = v0 + tx + 16 * b;
      if (col < s.V) o[v_row(s, c.b, c.t0 + i, c.hv) + col] = from_float<T>(p.scale * acc_o[a][b]);
    }
  }
}

size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t(255); }

// Byte offsets of the workspace tensors; the last entry is the total.
struct WorkspaceLayout {
  size_t gamma, t_inv, w, u0, u, states, total;
};

WorkspaceLayout workspace_layout(const GdnParams& p) {
  const GdnShape& s = p.shape;
  const size_t chunks = size_t(s.B * s.HV * chunked_num_chunks(p)), C = size_t(p.chunk);
  const size_t K = size_t(s.K), V = size_t(s.V);
  WorkspaceLayout l{};
  l.gamma = 0;
  l.t_inv = l.gamma + align_up(chunks * C * 4);
  l.w = l.t_inv + align_up(chunks * C * C * 4);
  l.u0 = l.w + align_up(chunks * C * K * 4);
  l.u = l.u0 + align_up(chunks * C * V * 4);
  l.states = l.u + align_up(chunks * C * V * 4);
  l.total = l.states + align_up(chunks * K * V * 4);
  return l;
}

}  // namespace

int64_t chunked_num_chunks(const GdnParams& p) { return (p.shape.T + p.chunk - 1) / p.chunk; }

bool chunked_params_ok(const GdnParams& p) {
  const GdnShape& s = p.shape;
  if (p.chunk != 16 && p.chunk != 32 && p.chunk != 64) return false;
  if (s.K < 1 || s.V < 1 || s.K > kChunkedMaxHeadDim || s.V > kChunkedMaxHeadDim) return false;
  if (s.B < 1 || s.T < 1 || s.H < 1 || s.HV < s.H || s.HV % s.H != 0) return false;
  if (s.B > 65535 || s.HV > 65535) return false;
  const int64_t out_blocks = chunked_num_chunks(p) * ((s.V + kOutBV - 1) / kOutBV);
  return out_blocks <= 0x7FFFFFFF && s.B * s.HV * chunked_num_chunks(p) / kThreads < 0x7FFFFFFF;
}

ChunkedWorkspaceView chunked_workspace_view(const GdnParams& p, void* workspace) {
  const WorkspaceLayout l = workspace_layout(p);
  char* base = static_cast<char*>(workspace);
  ChunkedWorkspaceView v;
  v.gamma = reinterpret_cast<float*>(base + l.gamma);
  v.T_inv = reinterpret_cast<float*>(base + l.t_inv);
  v.W = reinterpret_cast<float*>(base + l.w);
  v.U0 = reinterpret_cast<float*>(base + l.u0);
  v.U = reinterpret_cast<float*>(base + l.u);
  v.states = reinterpret_cast<float*>(base + l.states);
  return v;
}

size_t gdn_chunked_workspace_bytes(const GdnParams& p) { return workspace_layout(p).total; }

int launch_chunked_scan(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream) {
  if (!chunked_params_ok(p)) return int(cudaErrorInvalidValue);
  return int(dispatch_dtype(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(unsigned((p.shape.V + kScanBV - 1) / kScanBV), unsigned(p.shape.HV), unsigned(p.shape.B));
    if (p.shape.K <= 64) gdn_chunked_scan_kernel<T, 4><<<grid, kThreads, 0, stream>>>(p, ws);
    else if (p.shape.K <= 128) gdn_chunked_scan_kernel<T, 8><<<grid, kThreads, 0, stream>>>(p, ws);
    else gdn_chunked_scan_kernel<T, 16><<<grid, kThreads, 0, stream>>>(p, ws);
    return cudaGetLastError();
  }));
}

int launch_chunked_output(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream) {
  if (!chunked_params_ok(p)) return int(cudaErrorInvalidValue);
  return int(dispatch_dtype(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n_vb = (p.shape.V + kOutBV - 1) / kOutBV;
    const dim3 grid(unsigned(chunked_num_chunks(p) * n_vb), unsigned(p.shape.HV), unsigned(p.shape.B));
    switch (p.chunk) {
      case 16: gdn_chunked_output_kernel<T, 16><<<grid, kThreads, 0, stream>>>(p, ws); break;
      case 32: gdn_chunked_output_kernel<T, 32><<<grid, kThreads, 0, stream>>>(p, ws); break;
      default: gdn_chunked_output_kernel<T, 64><<<grid, kThreads, 0, stream>>>(p, ws); break;
    }
    return cudaGetLastError();
  }));
}

int launch_gdn_chunked(const GdnParams& p, void* workspace, cudaStream_t stream) {
  if (!chunked_params_ok(p) || !workspace) return int(cudaErrorInvalidValue);
  const ChunkedWorkspaceView ws = chunked_workspace_view(p, workspace);
  using Stage = int (*)(const GdnParams&, const ChunkedWorkspaceView&, cudaStream_t);
  const Stage stages[] = {launch_chunked_gamma, launch_chunked_ut_transform, launch_chunked_wy,
                          launch_chunked_scan, launch_chunked_output};
  for (Stage stage : stages)
    if (const int err = stage(p, ws, stream)) return err;
  return int(cudaSuccess);
}
