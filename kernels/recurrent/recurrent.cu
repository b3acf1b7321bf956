// recurrent: the step form of docs/DESIGN.md section 1 on the GPU, sequential over T.
//   S' = exp(g_t) S;  u = beta_t (v_t - S'^T k_t);  S = S' + k_t u^T;  o_t = S^T (scale q_t)
// Work split: one block per (sequence, hv, 128/kSplit value columns); a sequence is a batch row, or
// of a packed batch (cu_seqlens) tokens [cu[n], cu[n+1]) of row 0 with state n. A group of kSplit consecutive lanes
// owns one value column j: lane r holds state rows i = r + kSplit * n, n < kRows, in registers
// (float32), so K <= kRows * kSplit; rows past K stay zero. Both reductions over K (S^T k and
// S^T q) are kRows in-register FMAs plus log2(kSplit) shuffles.
// Two shapes of the same kernel: long sequences take kRows = 16 (twice the lanes per column:
// shorter dependent chains per step, twice the warps in flight); short ones (decode) take
// kRows = 32, so a warp reads 8 consecutive state columns (full 32-byte sectors) of each row.
// Tokens are staged through shared memory kTile at a time: q and k (float, [kTile][kSplit*kRows])
// shared by all columns of the block, v for the block's columns, g and beta. The next tile is
// loaded into registers (TileFetch) while the current one is computed.
// Budget: K <= 256: 2 * 8 * 256 * 4 B = 16 KiB for q, k + at most 8 * 64 * 4 B for v = 18 KiB.
// Registers: up to 128 (3 blocks per SM) for K <= 128, up to 233 (2 blocks per SM) for K <= 256.
// Rounds: float32 arithmetic and state; o rounded to the input dtype once; hT float32.
// Differs from the CPU recurrent only in summation order.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_kernels.h"
#include "kernels/common/decode_step.cuh"

namespace {

constexpr int kThreads = 128;
constexpr int kTile = 8;

// Next tile's q, k, v, g, beta, held in registers while the current tile is computed, so the
// global-load latency of a tile overlaps the previous tile's arithmetic.
template <typename T, int kSplit, int kRowsPerLane>
struct TileFetch {
  static constexpr int kCols = kThreads / kSplit;
  static constexpr int kKPad = kSplit * kRowsPerLane;
  static constexpr int kQK = kTile * kKPad / kThreads;  // q (and k) elements per thread
  static constexpr int kV = (kTile * kCols + kThreads - 1) / kThreads;
  float q[kQK], k[kQK], v[kV], g, beta;

  // Tokens t0 .. t0 + kTile - 1 of batch row b, those before `end` (the sequence's end).
  __device__ void load(const GdnParams& p, int64_t b, int64_t hv, int64_t h, int64_t t0, int64_t end) {
    const GdnShape& s = p.shape;
    const T* qp = static_cast<const T*>(p.q);
    const T* kp = static_cast<const T*>(p.k);
    const T* vp = static_cast<const T*>(p.v);
#pragma unroll
    for (int e = 0; e < kQK; ++e) {
      const int x = threadIdx.x + e * kThreads, tt = x / kKPad, i = x % kKPad;
      const bool ok = t0 + tt < end && i < s.K;
      const int64_t row = ((b * s.T + t0 + tt) * s.H + h) * s.K + i;
      q[e] = ok ? to_float(qp[row]) : 0.0f;
      k[e] = ok ? to_float(kp[row]) : 0.0f;
    }
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      const int x = threadIdx.x + e * kThreads, tt = x / kCols, c = x % kCols;
      const int64_t jj = int64_t(blockIdx.x) * kCols + c;
      const bool ok = x < kTile * kCols && t0 + tt < end && jj < s.V;
      v[e] = ok ? to_float(vp[((b * s.T + t0 + tt) * s.HV + hv) * s.V + jj]) : 0.0f;
    }
    const int64_t tt = threadIdx.x;
    const bool ok = tt < kTile && t0 + tt < end;
    const int64_t gi = (b * s.T + t0 + tt) * s.HV + hv;
    g = (ok && p.g) ? p.g[gi] : 0.0f;
    beta = (ok && p.use_delta) ? p.beta[gi] : 1.0f;
  }

  __device__ void store(float (*q_s)[kKPad], float (*k_s)[kKPad], float (*v_s)[kCols], float* g_s,
                        float* beta_s) const {
#pragma unroll
    for (int e = 0; e < kQK; ++e) {
      const int x = threadIdx.x + e * kThreads;
      q_s[x / kKPad][x % kKPad] = q[e];
      k_s[x / kKPad][x % kKPad] = k[e];
    }
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      const int x = threadIdx.x + e * kThreads;
      if (x < kTile * kCols) v_s[x / kCols][x % kCols] = v[e];
    }
    if (threadIdx.x < kTile) {
      g_s[threadIdx.x] = g;
      beta_s[threadIdx.x] = beta;
    }
  }
};

template <typename T, int kSplit, int kRowsPerLane>
__global__ void __launch_bounds__(kThreads, kSplit * kRowsPerLane == 256 ? 2 : 3)
gdn_recurrent_kernel(const GdnParams p) {
  using Fetch = TileFetch<T, kSplit, kRowsPerLane>;
  constexpr int kCols = Fetch::kCols;  // value columns per block
  constexpr int kKPad = Fetch::kKPad;
  __shared__ float q_s[kTile][kKPad];
  __shared__ float k_s[kTile][kKPad];
  __shared__ float v_s[kTile][kCols];
  __shared__ float g_s[kTile], beta_s[kTile];

  const GdnShape s = p.shape;
  const GdnSequence seq = gdn_sequence(s, p.cu_seqlens, blockIdx.z);
  const int64_t b = seq.b, hv = blockIdx.y, h = hv / (s.HV / s.H);
  const int lane_r = threadIdx.x % kSplit;
  const int col = threadIdx.x / kSplit;
  const int64_t j = int64_t(blockIdx.x) * kCols + col;
  const bool col_ok = j < s.V;
  T* o = static_cast<T*>(p.o);

  float S[kRowsPerLane];
  const int64_t state_base = (int64_t(blockIdx.z) * s.HV + hv) * s.K * s.V;
#pragma unroll
  for (int n = 0; n < kRowsPerLane; ++n) {
    const int64_t i = lane_r + kSplit * n;
    S[n] = (p.h0 && col_ok && i < s.K) ? p.h0[state_base + i * s.V + j] : 0.0f;
  }

  Fetch next;
  next.load(p, b, hv, h, seq.begin, seq.end);
  for (int64_t t0 = seq.begin; t0 < seq.end; t0 += kTile) {
    const int steps = seq.end - t0 < kTile ? int(seq.end - t0) : kTile;
    __syncthreads();  // the previous tile is fully consumed
    next.store(q_s, k_s, v_s, g_s, beta_s);
    __syncthreads();
    if (t0 + kTile < seq.end) next.load(p, b, hv, h, t0 + kTile, seq.end);  // in flight during this tile

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

// Decode shape (T <= kRecurrentDecodeMaxT, e.g. one new token against a carried state): blocks of W warps
// over 32 value columns; lane = column, warp w holds state rows [w R, w R + R) (W x R = 64, 128
// or 256 = 8 x 8, 8 x 16, 16 x 16 by K), so every state row is read and written as 128
// contiguous bytes per warp and a thread holds only R floats (occupancy decides decode). Registers
// are capped at half occupancy (64 per thread), which the state fits without spills.
// One pass over the registers gives the partial dot products S^T k, S^T q and k.q; the output
// uses S_new^T q = alpha S^T q + u (k.q), so it needs no second reduction after the update.
// What decides its speed is registers: capped at 64 per thread (half occupancy) it runs B=64,
// H=32, K=V=128 in 0.087 ms against 0.108 ms uncapped (48-64 registers were enough, but without
// the cap the compiler took up to 100 once the kernel looped). Blocks that loop over heads
// measured slower at the same cap (0.096 ms), so a block takes one head.
// Shared memory: 3 x W x 32 partials + 32 u values <= 6.3 KiB. The per-token step is
// kernels/common/decode_step.cuh, shared with the fused decode (kernels/decode/).

template <typename T, int kRows, int kWarps>
__global__ void __launch_bounds__(kWarps * 32, 2048 / (kWarps * 32) / 2)
gdn_recurrent_decode_kernel(const GdnParams p) {
  __shared__ DecodeStepShared<kWarps> sh;
  const GdnShape s = p.shape;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t j = int64_t(blockIdx.x) * 32 + lane;
  const bool col_ok = j < s.V;
  const int64_t row0 = int64_t(warp) * kRows;
  // Heads past 65535 continue on grid.z (the launcher splits sequences * HV over y and z).
  const int64_t head = int64_t(blockIdx.z) * gridDim.y + blockIdx.y;
  if (head >= s.sequences() * s.HV) return;  // the last z row of that split is partly empty
  const GdnSequence seq = gdn_sequence(s, p.cu_seqlens, head / s.HV);
  const int64_t b = seq.b, hv = head % s.HV, h = hv / (s.HV / s.H);
  const int64_t state_base = head * s.K * s.V;
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  T* o = static_cast<T*>(p.o);

  float S[kRows];
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int64_t i = row0 + n;
    S[n] = (p.h0 && col_ok && i < s.K) ? p.h0[state_base + i * s.V + j] : 0.0f;
  }
  for (int64_t t = seq.begin; t < seq.end; ++t) {
    const int64_t tok = b * s.T + t;
    const T* kt = k + (tok * s.H + h) * s.K;
    const T* qt = q + (tok * s.H + h) * s.K;
    const int64_t gi = tok * s.HV + hv;
    decode_token_step<kRows, kWarps>(
        S, sh, p.scale,
        [&](int n, float& kv, float& qv) {
          const int64_t i = row0 + n;
          kv = i < s.K ? to_float(kt[i]) : 0.0f;
          qv = i < s.K ? to_float(qt[i]) : 0.0f;
        },
        [&](float PS, float& alpha) {
          alpha = p.g ? expf(p.g[gi]) : 1.0f;
          const float vj = col_ok ? to_float(v[gi * s.V + j]) : 0.0f;
          return p.use_delta ? p.beta[gi] * (vj - alpha * PS) : vj;
        },
        [&](float out) {
          if (col_ok) o[gi * s.V + j] = from_float<T>(out);
        });
  }
  if (p.hT && col_ok) {
#pragma unroll
    for (int n = 0; n < kRows; ++n) {
      const int64_t i = row0 + n;
      if (i < s.K) p.hT[state_base + i * s.V + j] = S[n];
    }
  }
}

template <typename T>
cudaError_t launch_for_type(const GdnParams& p, cudaStream_t stream) {
  const int64_t K = p.shape.K;
  auto grid_for = [&](int split) {
    const int cols = kThreads / split;
    return dim3(unsigned((p.shape.V + cols - 1) / cols), unsigned(p.shape.HV), unsigned(p.shape.sequences()));
  };
  // The plan (kernels/plans/launch_plans.h): the T form, forced or by T; the K bucket of the tiles.
  const RecurrentForm form = recurrent_form(p.shape, p.recurrent_form);
  if (form == RecurrentForm::decode) {
    // One block per (column group, head); heads over grid y and z.
    const int64_t heads = p.shape.sequences() * p.shape.HV, col_blocks = (p.shape.V + 31) / 32;
    constexpr int64_t kMaxGridY = 65535;
    const int64_t y = std::min(heads, kMaxGridY), z = (heads + y - 1) / y;
    const dim3 grid{unsigned(col_blocks), unsigned(y), unsigned(z)};
    if (K <= 64) gdn_recurrent_decode_kernel<T, 8, 8><<<grid, 8 * 32, 0, stream>>>(p);
    else if (K <= 128) gdn_recurrent_decode_kernel<T, 16, 8><<<grid, 8 * 32, 0, stream>>>(p);
    else gdn_recurrent_decode_kernel<T, 16, 16><<<grid, 16 * 32, 0, stream>>>(p);
  } else if (form == RecurrentForm::long_seq) {
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
  if (p.recurrent_form == RecurrentForm::decode && p.shape.T > kRecurrentDecodeMaxT) return int(cudaErrorInvalidValue);
  if (p.shape.K > kRecurrentMaxHeadDim || p.shape.V > kRecurrentMaxHeadDim) return int(cudaErrorInvalidValue);
  if (p.shape.HV > 65535 || p.shape.sequences() > 65535) return int(cudaErrorInvalidValue);
  if (p.shape.num_seqs > 0 && (p.shape.B != 1 || !p.cu_seqlens)) return int(cudaErrorInvalidValue);
  switch (p.dtype) {
    case DType::f32: return int(launch_for_type<float>(p, stream));
    case DType::bf16: return int(launch_for_type<__nv_bfloat16>(p, stream));
    case DType::f16: return int(launch_for_type<__half>(p, stream));
  }
  return int(cudaErrorInvalidValue);
}
