// fused_decode's per-token arithmetic, one copy for the state kernels that hold a state column
// (or a quad of columns) in registers, so that they agree bit for bit:
//   PS = S^T k, PQ = S^T q, KQ = k^T q (partial sums in a fixed grouping, then an xor butterfly
//   over the lanes that share a column);  u = beta (v - alpha PS);  o = scale (alpha PQ + u KQ);
//   S = alpha S + k u^T
// (o = scale S_new^T q expanded, so o needs no second pass over S). Also the staging of the front
// end's rows with a 4-float skew per row group (16-byte reads of distinct row groups fall in
// distinct banks) and the quad kernels' store.
// Rounds: float32; o to the dtype once per token.
// Included only by decode/launch.cu: fused_decode is one translation unit, its kernels and launchers
// in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/ptx.cuh"
#include "kernels/decode/decode_common.cuh"

namespace {

// The tokens of one state column (the lane, stream and split-column kernels).
// The column's rows are held by kLanes consecutive-by-xor lanes (1: one lane holds all; the split
// kernel's 2 or 4), kRows each in S (rows past K zero); q0 and k0 point at token 0's q and k rows
// for this lane's rows (zero past K, token t at t * qk_stride), v_t[t * v_stride] is v_j of token t,
// gates_s[t] its alpha = exp(g) and beta; o[t * o_stride] receives o_j of token t where writes_o.
// Sums in the grouping of the block kernel's step (partials of kGroupRows rows, then those in order), then
// across the column's lanes by an xor butterfly (every lane ends with the same bits); its
// expressions for u, o and the update: the same float32 operations in every kernel that calls this.
template <typename T, int kRows, int kGroupRows, int kLanes>
__device__ __forceinline__ void decode_column_tokens(float (&S)[kRows], const float* q0, const float* k0,
                                                     int qk_stride, const float* v_t, int v_stride,
                                                     const float (*gates_s)[2], int nt, bool writes_o, T* o,
                                                     int64_t o_stride, const GdnFrontEndParams& p) {
  constexpr int kGroups = kRows / kGroupRows;
  for (int t = 0; t < nt; ++t) {
    const float* kr = k0 + t * qk_stride;
    const float* qr = q0 + t * qk_stride;
    float PS = 0.0f, PQ = 0.0f, KQ = 0.0f;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      float ps = 0.0f, pq = 0.0f, kq = 0.0f;
#pragma unroll
      for (int n = 0; n < kGroupRows; ++n) {
        const int i = g * kGroupRows + n;
        ps += S[i] * kr[i];
        pq += S[i] * qr[i];
        kq += kr[i] * qr[i];
      }
      PS += ps;
      PQ += pq;
      KQ += kq;
    }
#pragma unroll
    for (int m = 32 / kLanes; m < 32; m <<= 1) {
      PS += __shfl_xor_sync(0xffffffffu, PS, m);
      PQ += __shfl_xor_sync(0xffffffffu, PQ, m);
      KQ += __shfl_xor_sync(0xffffffffu, KQ, m);
    }
    const float alpha = gates_s[t][0];
    const float vj = v_t[t * v_stride];
    const float u = p.use_delta ? gates_s[t][1] * (vj - alpha * PS) : vj;
    if (writes_o) o[int64_t(t) * o_stride] = from_float<T>(p.scale * (alpha * PQ + u * KQ));
    // k is read from shared memory again for the update (volatile loads, which ptxas does not
    // merge with the ones of the sums): kept from the sums, its kRows values would live next to
    // the kRows of S (twice the registers, spilled at the cap).
#pragma unroll
    for (int i = 0; i < kRows; i += 4) {
      const float4 k4 = ptx::lds_volatile_v4(kr + i);
      S[i] = alpha * S[i] + k4.x * u;
      S[i + 1] = alpha * S[i + 1] + k4.y * u;
      S[i + 2] = alpha * S[i + 2] + k4.z * u;
      S[i + 3] = alpha * S[i + 3] + k4.w * u;
    }
  }
}

// decode_column_tokens for one lane per column: the lane and stream kernels' qk_s[t][q or k][i].
template <typename T, int kK>
__device__ __forceinline__ void decode_lane_tokens(float (&S)[kK], const float (*qk_s)[2][kK], const float* v_t,
                                                   int v_stride, const float (*gates_s)[2], int nt, bool col_ok,
                                                   T* o, int64_t o_stride, const GdnFrontEndParams& p) {
  decode_column_tokens<T, kK, kK / 8, 1>(S, qk_s[0][kFeQ], qk_s[0][kFeK], 2 * kK, v_t, v_stride, gates_s, nt, col_ok,
                                          o, o_stride, p);
}


// The front end's rows of one (b, hv) into shared memory for the split-column and quad kernels:
// q and k [t][tensor][i] with a 4-float skew after every kRows rows (the row groups' 16-byte reads
// then use distinct banks; zeros past K), v of the block's kBlockCols columns from j0 (zeros past
// V), and each token's gates (alpha = exp(g), beta).
template <int kK, int kRows, int kBlockCols>
__device__ __forceinline__ void decode_stage_rows_skewed(const float* row, const DecodeFeLayout& lay, uint32_t h,
                                                         uint32_t hv, int j0, int K, int V, int nt,
                                                         float (*qk_s)[2][kK / kRows * (kRows + 4)],
                                                         float (*v_s)[kBlockCols], float (*gates_s)[2]) {
  const int tid = int(threadIdx.x);
  for (int x = tid; x < nt * 2 * kK; x += int(blockDim.x)) {
    const int t = x / (2 * kK), tensor = x / kK % 2, i = x % kK;
    qk_s[t][tensor][i + i / kRows * 4] = i < K ? row[t * lay.row + tensor * lay.qk + int64_t(h) * K + i] : 0.0f;
  }
  for (int x = tid; x < nt * kBlockCols; x += int(blockDim.x)) {
    const int t = x / kBlockCols, c = x % kBlockCols;
    v_s[t][c] = j0 + c < V ? row[t * lay.row + 2 * lay.qk + int64_t(hv) * V + j0 + c] : 0.0f;
  }
  if (tid < nt) {
    const float* gates = row + tid * lay.row + 2 * lay.qk + lay.v + 2 * hv;
    gates_s[tid][0] = gates[0];
    gates_s[tid][1] = gates[1];
  }
}

// One token of the quad update of a lane's 4 columns x kRows rows, S updated in place: S^T k and
// S^T q over the lane's rows (groups of 16, in order), k^T q, each summed across the four row
// groups by an xor butterfly (lanes 8 and 16 apart), then o (where write_o) and the state. kr, qr:
// the token's k and q rows of the lane's row group in shared memory; v4: its values of the 4
// columns; alpha = exp(g). The quad kernels' one copy of the arithmetic, so they agree bit for bit.
template <typename T, int kRows>
__device__ __forceinline__ void decode_quad_token(float4 (&S)[kRows], const float* kr, const float* qr, float4 v4,
                                                  float alpha, float beta, const GdnFrontEndParams& p, T* o,
                                                  bool write_o) {
  constexpr int kGroupRows = 16;
  float PS[4] = {0.f, 0.f, 0.f, 0.f}, PQ[4] = {0.f, 0.f, 0.f, 0.f}, KQ = 0.f;
#pragma unroll
  for (int g = 0; g < kRows / kGroupRows; ++g) {
    float ps[4] = {0.f, 0.f, 0.f, 0.f}, pq[4] = {0.f, 0.f, 0.f, 0.f}, kq = 0.f;
#pragma unroll
    for (int n = 0; n < kGroupRows; n += 4) {
      const float4 k4 = *reinterpret_cast<const float4*>(kr + g * kGroupRows + n);
      const float4 q4 = *reinterpret_cast<const float4*>(qr + g * kGroupRows + n);
      const float kk[4] = {k4.x, k4.y, k4.z, k4.w}, qq[4] = {q4.x, q4.y, q4.z, q4.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float4 sr = S[g * kGroupRows + n + e];
        ps[0] += sr.x * kk[e]; ps[1] += sr.y * kk[e]; ps[2] += sr.z * kk[e]; ps[3] += sr.w * kk[e];
        pq[0] += sr.x * qq[e]; pq[1] += sr.y * qq[e]; pq[2] += sr.z * qq[e]; pq[3] += sr.w * qq[e];
        kq += kk[e] * qq[e];
      }
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) { PS[c] += ps[c]; PQ[c] += pq[c]; }
    KQ += kq;
  }
#pragma unroll
  for (int m = 8; m < 32; m <<= 1) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      PS[c] += __shfl_xor_sync(0xffffffffu, PS[c], m);
      PQ[c] += __shfl_xor_sync(0xffffffffu, PQ[c], m);
    }
    KQ += __shfl_xor_sync(0xffffffffu, KQ, m);
  }
  const float vv[4] = {v4.x, v4.y, v4.z, v4.w};
  float u[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) u[c] = p.use_delta ? beta * (vv[c] - alpha * PS[c]) : vv[c];
  if (write_o)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[c] = from_float<T>(p.scale * (alpha * PQ[c] + u[c] * KQ));
#pragma unroll
  for (int r = 0; r < kRows; r += 4) {
    const float4 k4 = ptx::lds_volatile_v4(kr + r);
    const float kk[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float4& sr = S[r + e];
      sr.x = alpha * sr.x + kk[e] * u[0];
      sr.y = alpha * sr.y + kk[e] * u[1];
      sr.z = alpha * sr.z + kk[e] * u[2];
      sr.w = alpha * sr.w + kk[e] * u[3];
    }
  }
}

// A lane's kRows state rows (4 columns each) back to the pool from dst (its first row; rows V
// apart); with !kFull only the rows_left < kRows that exist.
template <bool kFull, int kRows>
__device__ __forceinline__ void decode_quad_store(const float4 (&S)[kRows], float* dst, int rows_left, int V) {
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (kFull || r < rows_left) *reinterpret_cast<float4*>(dst + int64_t(r) * V) = S[r];
}

}  // namespace
