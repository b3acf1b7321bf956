// recurrent: the step form of DESIGN.md section 1 on the GPU, sequential over T.
//   S' = exp(g_t) S;  u = beta_t (v_t - S'^T k_t);  S = S' + k_t u^T;  o_t = S^T (scale q_t)
// Work split: one block per (b, hv, 128/kSplit value columns). A group of kSplit consecutive lanes
// owns one value column j: lane r holds state rows i = r + kSplit * n, n < kRows, in registers
// (float32), so K <= kRows * kSplit; rows past K stay zero. Both reductions over K (S^T k and
// S^T q) are kRows in-register FMAs plus log2(kSplit) shuffles.
// Two shapes of the same kernel: long sequences take kRows = 16 (twice the lanes per column:
// shorter dependent chains per step, twice the warps in flight); short ones (decode) take
// kRows = 32, so a warp reads 8 consecutive state columns (full 32-byte sectors) of each row.
// Tokens are staged through shared memory kTile at a time: q and k (float, [kTile][kSplit*kRows])
// shared by all columns of the block, v for the block's columns, g and beta.
// Registers: 80 (kRows = 16, 6 blocks per SM) and 96-128 (kRows = 32, 4 blocks per SM), no spills.
// Budget: K <= 256: 2 * 16 * 256 * 4 B = 32 KiB for q, k + at most 16 * 32 * 4 B for v = 34 KiB.
// Rounds: float32 arithmetic and state; o rounded to the input dtype once; hT float32.
// Differs from the CPU recurrent only in summation order.
#include <cuda_runtime.h>

#include "kernels/cuda_common.cuh"
#include "kernels/cuda_kernels.h"

namespace {

constexpr int kThreads = 128;
// From this T on the kRows = 16 shape is used (overridable at build time for experiments).
#ifndef GDN_RECURRENT_LONG_FROM
#define GDN_RECURRENT_LONG_FROM 256
#endif
constexpr int64_t kLongSequence = GDN_RECURRENT_LONG_FROM;
constexpr int kTile = 16;

template <typename T, int kSplit, int kRowsPerLane>
__global__ void __launch_bounds__(kThreads, kRowsPerLane == 16 ? 6 : 4)
gdn_recurrent_kernel(const GdnParams p) {
  constexpr int kCols = kThreads / kSplit;  // value columns per block
  constexpr int kKPad = kSplit * kRowsPerLane;
  __shared__ float q_s[kTile][kKPad];
  __shared__ float k_s[kTile][kKPad];
  __shared__ float v_s[kTile][kCols];
  __shared__ float g_s[kTile], beta_s[kTile];

  const GdnShape s = p.shape;
  const int64_t b = blockIdx.z, hv = blockIdx.y, h = hv / (s.HV / s.H);
  const int lane_r = threadIdx.x % kSplit;
  const int col = threadIdx.x / kSplit;
  const int64_t j = int64_t(blockIdx.x) * kCols + col;
  const bool col_ok = j < s.V;
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  T* o = static_cast<T*>(p.o);

  float S[kRowsPerLane];
  const int64_t state_base = (b * s.HV + hv) * s.K * s.V;
#pragma unroll
  for (int n = 0; n < kRowsPerLane; ++n) {
    const int64_t i = lane_r + kSplit * n;
    S[n] = (p.h0 && col_ok && i < s.K) ? p.h0[state_base + i * s.V + j] : 0.0f;
  }

  for (int64_t t0 = 0; t0 < s.T; t0 += kTile) {
    const int steps = s.T - t0 < kTile ? int(s.T - t0) : kTile;
    __syncthreads();  // the previous tile is fully consumed
    for (int x = threadIdx.x; x < kTile * kKPad; x += kThreads) {
      const int tt = x / kKPad, i = x % kKPad;
      float qv = 0.0f, kv = 0.0f;
      if (tt < steps && i < s.K) {
        const int64_t row = ((b * s.T + t0 + tt) * s.H + h) * s.K + i;
        qv = to_float(q[row]);
        kv = to_float(k[row]);
      }
      q_s[tt][i] = qv;
      k_s[tt][i] = kv;
    }
    for (int x = threadIdx.x; x < kTile * kCols; x += kThreads) {
      const int tt = x / kCols, c = x % kCols;
      const int64_t jj = int64_t(blockIdx.x) * kCols + c;
      v_s[tt][c] = (tt < steps && jj < s.V) ? to_float(v[((b * s.T + t0 + tt) * s.HV + hv) * s.V + jj]) : 0.0f;
    }
    if (threadIdx.x < kTile) {
      const int tt = threadIdx.x;
      const int64_t gi = (b * s.T + t0 + tt) * s.HV + hv;
      g_s[tt] = (tt < steps && p.g) ? p.g[gi] : 0.0f;
      beta_s[tt] = (tt < steps && p.use_delta) ? p.beta[gi] : 1.0f;
    }
    __syncthreads();

    for (int tt = 0; tt < steps; ++tt) {
      const float alpha = expf(g_s[tt]);
      float u = v_s[tt][col];
      if (p.use_delta) {
        float kS = 0.0f;
#pragma unroll
        for (int n = 0; n < kRowsPerLane; ++n) {
          S[n] *= alpha;
          kS += S[n] * k_s[tt][lane_r + kSplit * n];
        }
        kS = group_sum<kSplit>(kS);
        u = beta_s[tt] * (u - kS);
      } else {
#pragma unroll
        for (int n = 0; n < kRowsPerLane; ++n) S[n] *= alpha;
      }
      float oq = 0.0f;
#pragma unroll
      for (int n = 0; n < kRowsPerLane; ++n) {
        S[n] += k_s[tt][lane_r + kSplit * n] * u;
        oq += S[n] * q_s[tt][lane_r + kSplit * n];
      }
      oq = group_sum<kSplit>(oq);
      if (lane_r == 0 && col_ok) o[((b * s.T + t0 + tt) * s.HV + hv) * s.V + j] = from_float<T>(p.scale * oq);
    }
  }

  if (p.hT && col_ok) {
#pragma unroll
    for (int n = 0; n < kRowsPerLane; ++n) {
      const int64_t i = lane_r + kSplit * n;
      if (i < s.K) p.hT[state_base + i * s.V + j] = S[n];
    }
  }
}

template <typename T>
cudaError_t launch_for_type(const GdnParams& p, cudaStream_t stream) {
  const int64_t K = p.shape.K;
  auto grid_for = [&](int split) {
    const int cols = kThreads / split;
    return dim3(unsigned((p.shape.V + cols - 1) / cols), unsigned(p.shape.HV), unsigned(p.shape.B));
  };
  if (p.shape.T >= kLongSequence) {
    if (K <= 64) gdn_recurrent_kernel<T, 4, 16><<<grid_for(4), kThreads, 0, stream>>>(p);
    else if (K <= 128) gdn_recurrent_kernel<T, 8, 16><<<grid_for(8), kThreads, 0, stream>>>(p);
    else gdn_recurrent_kernel<T, 16, 16><<<grid_for(16), kThreads, 0, stream>>>(p);
  } else {
    if (K <= 64) gdn_recurrent_kernel<T, 2, 32><<<grid_for(2), kThreads, 0, stream>>>(p);
    else if (K <= 128) gdn_recurrent_kernel<T, 4, 32><<<grid_for(4), kThreads, 0, stream>>>(p);
    else gdn_recurrent_kernel<T, 8, 32><<<grid_for(8), kThreads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace

int launch_gdn_recurrent(const GdnParams& p, void* /*workspace*/, cudaStream_t stream) {
  if (p.shape.K > kRecurrentMaxHeadDim || p.shape.V > kRecurrentMaxHeadDim) return int(cudaErrorInvalidValue);
  if (p.shape.HV > 65535 || p.shape.B > 65535) return int(cudaErrorInvalidValue);
  switch (p.dtype) {
    case DType::f32: return int(launch_for_type<float>(p, stream));
    case DType::bf16: return int(launch_for_type<__nv_bfloat16>(p, stream));
    case DType::f16: return int(launch_for_type<__half>(p, stream));
  }
  return int(cudaErrorInvalidValue);
}
