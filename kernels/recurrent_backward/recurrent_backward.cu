// recurrent_backward: reverse mode through the step form on the GPU (docs/BACKWARD.md), the
// correctness baseline of backward kernels, as recurrent is of forward ones. Per token, from
// dS = dL/dS_t and the state before the step S_{t-1}:
//   S' = exp(g) S_{t-1};  w = v - S'^T k;  u = beta w (v without the delta term);  S_t = S' + k u^T
//   dq += scale S_t do;  dS += scale q do^T;  du = dS^T k;  dk += dS u
//   delta: dv = beta du;  dbeta = du . w;  dkS = -beta du;  dS += k dkS^T;  dk += S' dkS
//   no delta: dv = du;  then dg = sum(S' .* dS);  dS = exp(g) dS
// Work split: as the recurrent forward's long form, one block per (b, hv, 128/kSplit value
// columns), kSplit lanes per column j, lane r holding rows i = r + kSplit n (n < 16) of S and dS,
// so K <= 16 kSplit (kSplit 4, 8, 16 for K <= 64, 128, 256; ~200 registers, 2 blocks an SM:
// capped lower, ptxas spills). Columns of S and dS evolve independently: a block needs no other block's
// state. What mixes columns (dq and dk sum over j; dg and dbeta over j too) is summed within the
// block in a fixed order every token and written as one partial per block;
// gdn_recurrent_backward_reduce_kernel sums the partials over a head's blocks and over the value
// heads of each q/k head in a fixed order, so two launches give the same bits.
// States: a forward sweep stores the state entering every kCheckpoint-th token; the backward
// walks those intervals in reverse, recomputes the state entering each kSub-token sub-interval,
// then for each sub-interval (in reverse) the state before each of its steps, and steps back
// through them. Recomputation: 2 forward steps a token besides the sweep. Every thread stores and
// reloads only its own registers (a private, coalesced layout of the workspace), so no barrier
// guards them.
// Rounds: float32 arithmetic, states and sums; dq, dk, dv rounded to the input dtype once.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_kernels.h"
#include "kernels/plans/launch_plans.h"

namespace {

constexpr int kThreads = 128, kWarps = kThreads / 32, kRows = kRecurrentBackwardRowsPerLane;
constexpr int kCheckpoint = 64;                  // tokens between stored states
constexpr int kSub = 16;                         // tokens of a sub-interval
constexpr int kSubs = kCheckpoint / kSub;        // sub-interval states per interval
constexpr int64_t kStateFloats = int64_t(kRows) * kThreads;  // one block's state

struct BackwardLayout {
  int64_t blocks, col_blocks, intervals, tokens_heads;
  float* checkpoints;  // [blocks][intervals][kRows][kThreads]
  float* scratch;      // [blocks][kSubs + kSub][kRows][kThreads]
  float* part_dq;      // [col_blocks][B, T, HV, K]
  float* part_dk;
  float* part_dg;      // [col_blocks][B, T, HV]
  float* part_dbeta;
};

// One token's scalars for one value column.
struct Token {
  float alpha, beta, v;
};

// Lanes a column: the plan's backward stage (kernels/plans/launch_plans.h), K's bucket over the rows
// a lane holds; the CSV's plan column names the same instance.
int split_for(int64_t K) { return recurrent_backward_lanes(K); }

BackwardLayout backward_layout(const GdnParams& p, float* base) {
  const GdnShape& s = p.shape;
  const int cols = kThreads / split_for(s.K);
  BackwardLayout L{};
  L.col_blocks = (s.V + cols - 1) / cols;
  L.blocks = L.col_blocks * s.HV * s.B;
  L.intervals = (s.T + kCheckpoint - 1) / kCheckpoint;
  L.tokens_heads = s.B * s.T * s.HV;
  float* next = base;  // nullptr: sizes only
  auto take = [&](int64_t n) { float* r = next; next = next ? next + n : nullptr; return r; };
  L.checkpoints = take(L.blocks * L.intervals * kStateFloats);
  L.scratch = take(L.blocks * (kSubs + kSub) * kStateFloats);
  L.part_dq = take(L.col_blocks * L.tokens_heads * s.K);
  L.part_dk = take(L.col_blocks * L.tokens_heads * s.K);
  L.part_dg = take(L.col_blocks * L.tokens_heads);
  L.part_dbeta = take(L.col_blocks * L.tokens_heads);
  return L;
}

int64_t layout_floats(const GdnParams& p) {
  const GdnShape& s = p.shape;
  const BackwardLayout L = backward_layout(p, nullptr);
  return L.blocks * (L.intervals + kSubs + kSub) * kStateFloats + L.col_blocks * L.tokens_heads * (2 * s.K + 2);
}

template <typename T, int kSplit>
__global__ void __launch_bounds__(kThreads, 1)
gdn_recurrent_backward_kernel(const GdnParams p, const GdnGradParams gp, BackwardLayout L) {
  constexpr int kCols = kThreads / kSplit;
  __shared__ float red_qk[2][2][kWarps][kRows * kSplit];  // [token parity][dq, dk][warp][row]
  __shared__ float red_gb[2][2][kWarps];                  // [token parity][dg, dbeta][warp]
  const GdnShape s = p.shape;
  const int64_t b = blockIdx.z, hv = blockIdx.y, h = hv / (s.HV / s.H), cb = blockIdx.x;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, lane_r = tid % kSplit, col = tid / kSplit;
  const int64_t j = cb * kCols + col;
  const bool col_ok = j < s.V;
  const int64_t block = (b * s.HV + hv) * L.col_blocks + cb;
  float* checkpoints = L.checkpoints + block * L.intervals * kStateFloats;
  float* scratch = L.scratch + block * (kSubs + kSub) * kStateFloats;
  const int64_t state_base = (b * s.HV + hv) * s.K * s.V;
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const T* dout = static_cast<const T*>(gp.dout);

  auto store_state = [&](float* base, int64_t slot, const float (&S)[kRows]) {
#pragma unroll
    for (int n = 0; n < kRows; ++n) base[(slot * kRows + n) * kThreads + tid] = S[n];
  };
  auto load_state = [&](const float* base, int64_t slot, float (&S)[kRows]) {
#pragma unroll
    for (int n = 0; n < kRows; ++n) S[n] = base[(slot * kRows + n) * kThreads + tid];
  };
  // Token t's rows of a [B, T, H, K] tensor held by this lane (zero past K).
  auto rows_of = [&](const T* x, int64_t t, float (&r)[kRows]) {
    const T* row = x + ((b * s.T + t) * s.H + h) * s.K;
#pragma unroll
    for (int n = 0; n < kRows; ++n) {
      const int64_t i = lane_r + kSplit * n;
      r[n] = i < s.K ? to_float(row[i]) : 0.0f;
    }
  };
  auto token = [&](int64_t t) {
    const int64_t gi = (b * s.T + t) * s.HV + hv;
    Token x;
    x.alpha = p.g ? expf(p.g[gi]) : 1.0f;
    x.beta = p.use_delta ? p.beta[gi] : 1.0f;
    x.v = col_ok ? to_float(v[gi * s.V + j]) : 0.0f;
    return x;
  };
  // S' = alpha S in place; returns w = v - S'^T k (v without the delta term).
  auto decay_and_residual = [&](float (&S)[kRows], const float (&kk)[kRows], const Token& x) {
    float kS = 0.0f;
#pragma unroll
    for (int n = 0; n < kRows; ++n) {
      S[n] *= x.alpha;
      kS += S[n] * kk[n];
    }
    return p.use_delta ? x.v - group_sum<kSplit>(kS) : x.v;
  };
  auto forward_step = [&](float (&S)[kRows], int64_t t) {
    float kk[kRows];
    rows_of(k, t, kk);
    const Token x = token(t);
    const float u = x.beta * decay_and_residual(S, kk, x);
#pragma unroll
    for (int n = 0; n < kRows; ++n) S[n] += kk[n] * u;
  };
  // The sum of a per-row value over the warp's columns: every lane of a row class ends with it.
  auto warp_column_sum = [&](float x) {
#pragma unroll
    for (int offset = kSplit; offset < 32; offset *= 2) x += __shfl_xor_sync(0xFFFFFFFFu, x, offset);
    return x;
  };

  // The forward sweep: the state entering every interval.
  float S[kRows];
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int64_t i = lane_r + kSplit * n;
    S[n] = (p.h0 && col_ok && i < s.K) ? p.h0[state_base + i * s.V + j] : 0.0f;
  }
  for (int64_t t = 0; t < s.T; ++t) {
    if (t % kCheckpoint == 0) store_state(checkpoints, t / kCheckpoint, S);
    forward_step(S, t);
  }

  float dS[kRows];
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int64_t i = lane_r + kSplit * n;
    dS[n] = (gp.dhT && col_ok && i < s.K) ? gp.dhT[state_base + i * s.V + j] : 0.0f;
  }
  for (int64_t iv = L.intervals - 1; iv >= 0; --iv) {
    const int64_t c0 = iv * kCheckpoint, c1 = s.T < c0 + kCheckpoint ? s.T : c0 + kCheckpoint;
    load_state(checkpoints, iv, S);
    for (int64_t t = c0; t < c1; ++t) {
      if ((t - c0) % kSub == 0) store_state(scratch, (t - c0) / kSub, S);
      forward_step(S, t);
    }
    for (int64_t s0 = c0 + (c1 - 1 - c0) / kSub * kSub; s0 >= c0; s0 -= kSub) {
      const int64_t s1 = c1 < s0 + kSub ? c1 : s0 + kSub;
      load_state(scratch, (s0 - c0) / kSub, S);
      for (int64_t t = s0; t < s1; ++t) {
        store_state(scratch, kSubs + (t - s0), S);
        forward_step(S, t);
      }
      for (int64_t t = s1 - 1; t >= s0; --t) {
        const int buf = int(t & 1);
        float Sp[kRows], kk[kRows];
        load_state(scratch, kSubs + (t - s0), Sp);
        rows_of(k, t, kk);
        const Token x = token(t);
        const int64_t gi = (b * s.T + t) * s.HV + hv;
        const float dov = col_ok ? to_float(dout[gi * s.V + j]) : 0.0f;
        const float w = decay_and_residual(Sp, kk, x);  // Sp is S' from here on
        const float u = x.beta * w;
        {
          float qq[kRows];
          rows_of(q, t, qq);
#pragma unroll
          for (int n = 0; n < kRows; ++n) {
            const float dq = warp_column_sum(p.scale * (Sp[n] + kk[n] * u) * dov);
            if (lane < kSplit) red_qk[buf][0][warp][lane_r + kSplit * n] = dq;
            dS[n] += p.scale * qq[n] * dov;
          }
        }
        float du = 0.0f;
#pragma unroll
        for (int n = 0; n < kRows; ++n) du += dS[n] * kk[n];
        du = group_sum<kSplit>(du);
        const float dkS = p.use_delta ? -x.beta * du : 0.0f;
        float dg = 0.0f;
#pragma unroll
        for (int n = 0; n < kRows; ++n) {
          const float dk = warp_column_sum(dS[n] * u + Sp[n] * dkS);
          if (lane < kSplit) red_qk[buf][1][warp][lane_r + kSplit * n] = dk;
          dS[n] += kk[n] * dkS;
          dg += Sp[n] * dS[n];
        }
        dg = group_sum<kSplit>(dg);
#pragma unroll
        for (int n = 0; n < kRows; ++n) dS[n] *= x.alpha;
        const float dbeta = p.use_delta ? du * w : 0.0f;
        if (lane_r == 0 && col_ok) static_cast<T*>(gp.dv)[gi * s.V + j] = from_float<T>(p.use_delta ? x.beta * du : du);
        // dg and dbeta are the same in every lane of a column: lane 0 sums the warp's columns.
        const float dg_w = warp_column_sum(dg);
        const float db_w = warp_column_sum(dbeta);
        if (lane == 0) {
          red_gb[buf][0][warp] = dg_w;
          red_gb[buf][1][warp] = db_w;
        }
        __syncthreads();  // this token's warp sums are in red_*[buf]; the buffer written next token
                          // was last read before the previous token's barrier
        const int64_t part = cb * L.tokens_heads + gi;
        for (int i = tid; i < s.K; i += kThreads) {
          float sq = 0.0f, sk = 0.0f;
#pragma unroll
          for (int w2 = 0; w2 < kWarps; ++w2) {
            sq += red_qk[buf][0][w2][i];
            sk += red_qk[buf][1][w2][i];
          }
          L.part_dq[part * s.K + i] = sq;
          L.part_dk[part * s.K + i] = sk;
        }
        if (tid == 0) {
          float sg = 0.0f, sb = 0.0f;
#pragma unroll
          for (int w2 = 0; w2 < kWarps; ++w2) {
            sg += red_gb[buf][0][w2];
            sb += red_gb[buf][1][w2];
          }
          L.part_dg[part] = sg;
          L.part_dbeta[part] = sb;
        }
      }
    }
  }
  if (gp.dh0 && col_ok) {
#pragma unroll
    for (int n = 0; n < kRows; ++n) {
      const int64_t i = lane_r + kSplit * n;
      if (i < s.K) gp.dh0[state_base + i * s.V + j] = dS[n];
    }
  }
}

// dq, dk [B, T, H, K]: the partials of every column block of every value head of the group;
// dg, dbeta [B, T, HV]: of every column block. A thread per output element, a fixed order.
template <typename T>
__global__ void gdn_recurrent_backward_reduce_kernel(const GdnParams p, const GdnGradParams gp, BackwardLayout L) {
  const GdnShape s = p.shape;
  const int64_t group = s.HV / s.H, qk_elems = s.B * s.T * s.H * s.K;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < qk_elems + L.tokens_heads;
       e += int64_t(gridDim.x) * blockDim.x) {
    if (e < qk_elems) {
      const int64_t i = e % s.K, bth = e / s.K, h = bth % s.H, bt = bth / s.H;
      float sq = 0.0f, sk = 0.0f;
      for (int64_t gg = 0; gg < group; ++gg) {
        const int64_t gi = bt * s.HV + h * group + gg;
        for (int64_t cb = 0; cb < L.col_blocks; ++cb) {
          sq += L.part_dq[(cb * L.tokens_heads + gi) * s.K + i];
          sk += L.part_dk[(cb * L.tokens_heads + gi) * s.K + i];
        }
      }
      static_cast<T*>(gp.dq)[e] = from_float<T>(sq);
      static_cast<T*>(gp.dk)[e] = from_float<T>(sk);
    } else {
      const int64_t gi = e - qk_elems;
      float sg = 0.0f, sb = 0.0f;
      for (int64_t cb = 0; cb < L.col_blocks; ++cb) {
        sg += L.part_dg[cb * L.tokens_heads + gi];
        sb += L.part_dbeta[cb * L.tokens_heads + gi];
      }
      if (gp.dg) gp.dg[gi] = sg;
      gp.dbeta[gi] = sb;
    }
  }
}

template <typename T>
cudaError_t launch_for_type(const GdnParams& p, const GdnGradParams& gp, float* workspace, cudaStream_t stream) {
  const GdnShape& s = p.shape;
  const BackwardLayout L = backward_layout(p, workspace);
  const dim3 grid(unsigned(L.col_blocks), unsigned(s.HV), unsigned(s.B));
  switch (split_for(s.K)) {
    case 4: gdn_recurrent_backward_kernel<T, 4><<<grid, kThreads, 0, stream>>>(p, gp, L); break;
    case 8: gdn_recurrent_backward_kernel<T, 8><<<grid, kThreads, 0, stream>>>(p, gp, L); break;
    default: gdn_recurrent_backward_kernel<T, 16><<<grid, kThreads, 0, stream>>>(p, gp, L); break;
  }
  if (const cudaError_t e = cudaGetLastError()) return e;
  const int64_t elems = s.B * s.T * s.H * s.K + L.tokens_heads;
  const int64_t blocks = std::min<int64_t>((elems + 255) / 256, 65535);
  gdn_recurrent_backward_reduce_kernel<T><<<unsigned(blocks), 256, 0, stream>>>(p, gp, L);
  return cudaGetLastError();
}

}  // namespace

size_t gdn_recurrent_backward_workspace_bytes(const GdnParams& p) { return size_t(layout_floats(p)) * sizeof(float); }

int launch_gdn_recurrent_backward(const GdnParams& p, const GdnGradParams& gp, void* workspace, cudaStream_t stream) {
  const GdnShape& s = p.shape;
  if (s.K > kRecurrentMaxHeadDim || s.V > kRecurrentMaxHeadDim) return int(cudaErrorInvalidValue);
  if (s.HV > 65535 || s.B > 65535 || !gp.dout || !gp.dq || !gp.dk || !gp.dv || !gp.dbeta || !workspace)
    return int(cudaErrorInvalidValue);
  float* ws = static_cast<float*>(workspace);
  switch (p.dtype) {
    case DType::f32: return int(launch_for_type<float>(p, gp, ws, stream));
    case DType::bf16: return int(launch_for_type<__nv_bfloat16>(p, gp, ws, stream));
    case DType::f16: return int(launch_for_type<__half>(p, gp, ws, stream));
  }
  return int(cudaErrorInvalidValue);
}
