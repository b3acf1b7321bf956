// wy_ut's shared device pieces: the chunk and block constants, the split of a float32 operand into
// two dtype operands (x ~ hi + lo), and the warp-level tile products on mma.sync m16n8k16 that the
// three stages share. Rounding: hi = dtype(x), lo = dtype(x - hi): 16 significant bits in bf16, 22
// in fp16; products with exact dtype operands on one side (q, k, v) take two mma, float32 x
// float32 three (hi hi + lo hi + hi lo).
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/tensor_core.cuh"
#include "kernels/wy_ut/wy_ut.h"

namespace {

using tc::cp_async16;
using tc::cp_async_commit;
using tc::cp_async_wait;
using tc::ldsm_x4;
using tc::ldsm_x4_trans;
using tc::Mma;


constexpr int kC = kWyUtChunk;
constexpr int kThreads = 128;
constexpr int kBV = 32;          // value columns per state block and per output slice
constexpr int kLdCC = kC + 4;    // row stride (floats) of the C x C float32 tiles A, Tm, P
constexpr int kLdBV = kBV + 4;   // row stride (floats) of the float32 S and U slices

__device__ __forceinline__ int lane_id() { return int(threadIdx.x & 31); }
// Rows of chunk n of a sequence of T tokens: kC, or the tail's T - n kC.
__device__ __forceinline__ int chunk_rows(int64_t T, int64_t n) { return int(T - n * kC < kC ? T - n * kC : kC); }

// x ~ hi + lo with hi, lo in the dtype: a float32 operand as two tensor-core operands.
template <typename T>
__device__ __forceinline__ void split2(float x, float y, uint32_t& hi, uint32_t& lo) {
  hi = Mma<T>::pack(x, y);
  const float2 h = Mma<T>::unpack(hi);
  lo = Mma<T>::pack(x - h.x, y - h.y);
}

// 16-bit tiles in shared memory (rows 16-byte aligned); p points at the tile's (0, 0) element.
// A(r, c) = p[r * ld + c].
template <typename T>
__device__ __forceinline__ void ldsm_a(uint32_t a[4], const T* p, int ld) {
  const int l = lane_id();
  ldsm_x4(a, p + (l & 15) * ld + (l >> 4) * 8);
}
// A(r, c) = p[c * ld + r] (the transpose is stored).
template <typename T>
__device__ __forceinline__ void ldsm_a_trans(uint32_t a[4], const T* p, int ld) {
  const int l = lane_id(), m = l >> 3;
  ldsm_x4_trans(a, p + ((l & 7) + (m >> 1) * 8) * ld + (m & 1) * 8);
}
// Two n-tiles (16 columns) of B with B(k, n) = p[n * ld + k]: b[0] columns 0-7, b[1] 8-15.
template <typename T>
__device__ __forceinline__ void ldsm_b2(uint32_t b[2][2], const T* p, int ld) {
  const int l = lane_id(), m = l >> 3;
  uint32_t r[4];
  ldsm_x4(r, p + ((l & 7) + (m >> 1) * 8) * ld + (m & 1) * 8);
  b[0][0] = r[0]; b[0][1] = r[1]; b[1][0] = r[2]; b[1][1] = r[3];
}
// Two n-tiles of B with B(k, n) = p[k * ld + n].
template <typename T>
__device__ __forceinline__ void ldsm_b2_trans(uint32_t b[2][2], const T* p, int ld) {
  const int l = lane_id(), m = l >> 3;
  uint32_t r[4];
  ldsm_x4_trans(r, p + ((l & 7) + (m & 1) * 8) * ld + (m >> 1) * 8);
  b[0][0] = r[0]; b[0][1] = r[1]; b[1][0] = r[2]; b[1][1] = r[3];
}

// Float32 operands (shared or global memory), split into hi and lo fragments.
// A(r, c) = p[r * ld + c] * (col_scale ? col_scale[c] : 1).
template <typename T>
__device__ __forceinline__ void lda_split(uint32_t hi[4], uint32_t lo[4], const float* p, int64_t ld,
                                          const float* col_scale = nullptr) {
  const int l = lane_id(), g = l >> 2, t = (l & 3) * 2;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = g + (i & 1) * 8, c = t + (i >> 1) * 8;
    float2 x = *reinterpret_cast<const float2*>(p + r * ld + c);
    if (col_scale) {
      x.x *= col_scale[c];
      x.y *= col_scale[c + 1];
    }
    split2<T>(x.x, x.y, hi[i], lo[i]);
  }
}
// B(k, n) = p[k * ld + n].
template <typename T>
__device__ __forceinline__ void ldb_split(uint32_t hi[2], uint32_t lo[2], const float* p, int ld) {
  const int l = lane_id(), g = l >> 2, t = (l & 3) * 2;
  split2<T>(p[t * ld + g], p[(t + 1) * ld + g], hi[0], lo[0]);
  split2<T>(p[(t + 8) * ld + g], p[(t + 9) * ld + g], hi[1], lo[1]);
}

// acc = X Y^T on the 16 rows of warp `warp` and column blocks 0..warp only: the lower block
// triangle of a C x C product (K K^T for A, Q K^T for P). X and Y are C x K 16-bit tiles in shared
// memory with rows `ld` elements apart; acc[nt] holds columns 8 nt .. 8 nt + 7.
template <typename T>
__device__ __forceinline__ void lower_block_product(float acc[8][4], const T* x_s, const T* y_s, int ld, int K,
                                                    int warp) {
  for (int ks = 0; ks < K / 16; ++ks) {
    uint32_t a[4];
    ldsm_a(a, x_s + 16 * warp * ld + 16 * ks, ld);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      if (np > warp) break;
      uint32_t bb[2][2];
      ldsm_b2(bb, y_s + 16 * np * ld + 16 * ks, ld);
      Mma<T>::run(acc[2 * np], a, bb[0]);
      Mma<T>::run(acc[2 * np + 1], a, bb[1]);
    }
  }
}

// Element (r, c) of a 16-bit tile of `cols` columns in the K-major core-matrix layout of
// kernels/common/wgmma.cuh (c the product's K index): core matrix (r / 8, c / 8), row r % 8,
// element c % 8. W's layout for the wgmma chain (chain_wgmma.cuh), which prepare writes for it.
__device__ __forceinline__ int chain_core_offset(int r, int c, int cols) {
  return ((r >> 3) * (cols >> 3) + (c >> 3)) * 64 + (r & 7) * 8 + (c & 7);
}

// Rows [0, L) of a [rows, cols] 16-bit tensor with row stride `stride` (elements) into shared
// rows of `ld` elements; rows [L, C) are zero. cols is a multiple of 8 (16-byte vectors).
template <typename T>
__device__ __forceinline__ void load_rows(T* dst, int ld, const T* src, int64_t stride, int cols, int L) {
  const int vecs = cols / 8;
  for (int x = threadIdx.x; x < kC * vecs; x += kThreads) {
    const int r = x / vecs, c = (x % vecs) * 8;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < L) val = *reinterpret_cast<const uint4*>(src + r * stride + c);
    *reinterpret_cast<uint4*>(dst + r * ld + c) = val;
  }
}

}  // namespace
