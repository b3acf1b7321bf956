// fused_conv's front end inside wy_ut's kernels: prepare builds its k tile (conv, SiLU, L2 norm)
// and v tile (conv, SiLU) from the raw rows of tokens [t0 - 3, t0 + 64) (the conv cache before
// t = 0) and g, beta from a, b; output builds its q tile the same way. The tile builder
// (fe_build_tile) is the front-end kernel's register roll (fe_roll, kernels/frontend/frontend.cuh):
// a thread owns 8 consecutive channels of a run of 64 x lanes / 128 consecutive rows (8 at
// D = 128), 16-byte loads of the run and its 3 rows before, conv and SiLU in registers, the
// per-row sum of squares by shuffles over the lanes of the row, 16-byte stores to the tile; so q,
// k, v are the front-end kernel's bits and o, hT equal unfused_conv's bit for bit.
// The pipelined output's variant (fe_convert_tile): its copies bring the next chunk's raw q rows
// into the q tile and the 3 rows before into a halo buffer past the layout's bytes (816 B at
// K = 128); at the chunk's first slice the tile is converted in place (fe_roll's mapping and
// operations; taps and rows kept packed: the chunk loop leaves few registers).
// Shared memory: as without the front end (the raw rows and taps stay in registers).
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/frontend/frontend.cuh"
#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

// ---------------------------------------------------------------------------------------------
// The front-end prologue of fused_conv: prepare and output build their 16-bit tiles straight from
// the raw projections (q, v, g and beta never exist in global memory; k once, in the workspace).

// Rows [0, 64) of one head's 16-bit tile (row stride ld) for the chunk at token t0 (L rows in the
// sequence, zeros past them), from the raw projection x [B, T, channels] at channels [ch0, ch0 + D):
// conv4 (the cache before t = 0), SiLU, and with `norm` the L2 norm of each row. The roll of the
// front-end kernel (fe_roll, kernels/frontend/frontend.cuh): thread tid owns kFeVec channels of a run of
// kC x lanes / kThreads consecutive rows (8 at D = 128; D >= 32 here, so at least 2) with the 3
// input rows before the run, so each row is, bit for bit, what gdn_frontend_kernel writes for
// that token. `copy` (nullptr: none) gets
// the rows < L as well, [B, T, .] with rows copy_stride elements apart at channel ch0.
// x, w and bias 16-byte aligned and D a multiple of 8 (the launcher checks).
template <typename T>
__device__ __forceinline__ void fe_build_tile(T* dst, int ld, const T* x, const T* cache, const T* w,
                                              const T* bias, int64_t b, int64_t t0, int64_t T_len,
                                              int64_t channels, int64_t ch0, int D, int L, bool norm,
                                              float eps, T* copy, int64_t copy_stride) {
  const int shift = fe_lanes_log2(D), lanes = 1 << shift;
  const int run = kC * lanes / kThreads;
  const int tid = int(threadIdx.x);
  const int r0 = (tid >> shift) * run, c0 = (tid & (lanes - 1)) * kFeVec, n = D - c0;
  const bool active = c0 < D;  // lanes past the head's channels compute zeros, write nothing
  const int valid = L - r0 < 0 ? 0 : (L - r0 < run ? L - r0 : run);
  const bool reads = active && valid > 0;  // the run's rows (and the 3 before) exist
  const int64_t ch = ch0 + c0;
  const T* xr = x + (b * T_len + t0 + r0) * channels + ch;
  ConvChannel conv[kFeVec];
  fe_load_taps<T, true>(conv, w, bias, ch, n, active);
  fe_load_history<T, true>(conv, xr, cache, b, t0 + r0, channels, ch, n, reads);
  T* cp = copy ? copy + (b * T_len + t0 + r0) * copy_stride + ch : nullptr;
  fe_roll<T, true>(conv, xr, channels, run, valid, n, reads, norm, lanes, eps,
                   [&](int i, const float (&y)[kFeVec], bool in_sequence) {
                     if (!active) return;
                     T* row = dst + (r0 + i) * ld + c0;
                     if (!in_sequence) {
                       *reinterpret_cast<uint4*>(row) = make_uint4(0, 0, 0, 0);
                       return;
                     }
                     fe_store<T, true>(row, y, n);
                     if (cp) fe_store<T, true>(cp + i * copy_stride, y, n);
                   });
}

// The pipelined kernels' front end (fused_conv's pipelined output): the raw rows of the next chunk are
// copied (cp.async) into the tile they will become, the 3 rows before them into a small halo
// buffer, while this chunk computes; at the chunk's start the tile is converted in place.
constexpr int kFeHaloRows = kConvCache;
__host__ __device__ constexpr int fe_halo_bytes(int D) { return kFeHaloRows * (D + 8) * 2; }

// The 3 raw rows before token t0 of channels [ch0, ch0 + D) into halo (rows of ld elements): x's
// rows by 16-byte cp.async (t0 >= 64 here: they exist), or at t0 = 0 the conv cache [B, channels, 3]
// (zeros without one) by plain loads and stores. Joins the caller's next commit group.
template <typename T>
__device__ __forceinline__ void fe_issue_halo(T* halo, int ld, const T* x, const T* cache, int64_t b, int64_t t0,
                                              int64_t T_len, int64_t channels, int64_t ch0, int D) {
  const int tid = int(threadIdx.x);
  if (t0 >= kFeHaloRows) {
    const int vecs = D / 8;
    for (int e = tid; e < kFeHaloRows * vecs; e += kThreads) {
      const int i = e / vecs, c = (e % vecs) * 8;
      cp_async16(halo + i * ld + c, x + (b * T_len + t0 - kFeHaloRows + i) * channels + ch0 + c, true);
    }
  } else {
    for (int e = tid; e < kFeHaloRows * D; e += kThreads) {
      const int c = e / kFeHaloRows, i = e % kFeHaloRows;
      halo[i * ld + c] = cache ? cache[(b * channels + ch0 + c) * kConvCache + i] : from_float<T>(0.0f);
    }
  }
}

// In place: tile rows [0, 64) (row stride ld) hold the raw rows of tokens [t0, t0 + 64) at channels
// [ch0, ch0 + D) (zeros from row L on), halo the 3 before; they become conv4, SiLU and with `norm`
// the L2-normalised rows in T, zeros from row L on. fe_roll's thread mapping, operations and order
// (kFeVec channels of a run of consecutive rows per thread, fe_conv's sum, the row's sum of squares
// over its lanes by fe_lane_group_sum), so each row is, bit for bit, gdn_frontend_kernel's for that
// token. A thread keeps the 3 rows before its run (raw bits), then after the block barrier inside
// touches only its own rows, last first, so that each raw row is read before its output replaces
// it. Taps and rows stay packed (16-bit) in registers and are widened at use: the caller's chunk
// loop keeps many registers live here. `copy` (nullptr: none): the rows < L also to [B, T, .] at
// channel ch0, rows copy_stride apart. D <= 128, a multiple of 8; T 16-bit.
template <typename T>
__device__ __forceinline__ float fe_half_word(uint32_t w, int e) {  // element e of a packed pair
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __uint_as_float(e ? w & 0xFFFF0000u : w << 16);
  else return __half2float(__ushort_as_half((unsigned short)(e ? w >> 16 : w & 0xFFFFu)));
}

template <typename T>
__device__ __forceinline__ void fe_convert_tile(T* tile, const T* halo, int ld, const T* w, const T* bias,
                                                int64_t b, int64_t t0, int64_t T_len, int64_t ch0, int D, int L,
                                                bool norm, float eps, T* copy, int64_t copy_stride) {
  static_assert(sizeof(T) == 2, "16-bit tiles");
  constexpr int kMaxRun = 8;
  const int shift = fe_lanes_log2(D), lanes = 1 << shift;
  const int run = kC * lanes / kThreads;
  const int tid = int(threadIdx.x);
  const int r0 = (tid >> shift) * run, c0 = (tid & (lanes - 1)) * kFeVec;
  const bool active = c0 < D;  // lanes past the head's channels compute zeros, write nothing
  // Taps of the 8 channels, channel-major (tap c * 4 + i), and their biases, as loaded by
  // fe_load_taps: 4 + 1 16-byte loads. Opaque pointers keep them from being hoisted out of the
  // caller's chunk loop.
  asm volatile("" : "+l"(w));
  asm volatile("" : "+l"(bias));
  uint4 taps[kConvWidth], bb = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int j = 0; j < kConvWidth; ++j)
    taps[j] = active ? __ldg(reinterpret_cast<const uint4*>(w + (ch0 + c0) * kConvWidth) + j) : make_uint4(0, 0, 0, 0);
  if (active && bias) bb = __ldg(reinterpret_cast<const uint4*>(bias + ch0 + c0));
  auto word = [](const uint4& u, int k) { return k == 0 ? u.x : k == 1 ? u.y : k == 2 ? u.z : u.w; };
  auto elem = [&](const uint4& u, int e) { return fe_half_word<T>(word(u, e / 2), e % 2); };
  auto load_row = [&](const T* p) { return active ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0); };
  uint4 before[kConvCache];  // raw rows r0 - 3 .. r0 - 1
#pragma unroll
  for (int i = 0; i < kConvCache; ++i) {
    const int r = r0 - kConvCache + i;
    before[i] = load_row(r >= 0 ? tile + r * ld + c0 : halo + (kFeHaloRows + r) * ld + c0);
  }
  __syncthreads();  // every thread holds the rows before its run: from here each touches its own rows
#pragma unroll
  for (int i = kMaxRun - 1; i >= 0; --i) {
    if (i >= run) continue;  // uniform: run depends on D only
    T* row = tile + (r0 + i) * ld + c0;
    uint4 x[kConvWidth];  // raw rows r0 + i - 3 .. r0 + i
#pragma unroll
    for (int j = 0; j < kConvWidth; ++j) {
      const int k = i - kConvCache + j;  // row r0 + k of this run, or one of the 3 before
      x[j] = k >= 0 ? load_row(tile + (r0 + k) * ld + c0) : before[kConvCache + k];
    }
    float y[kFeVec], ss = 0.0f;
#pragma unroll
    for (int c = 0; c < kFeVec; ++c) {
      const float wc[kConvWidth] = {elem(taps[(c * 4) / 8], (c * 4) % 8), elem(taps[(c * 4 + 1) / 8], (c * 4 + 1) % 8),
                                    elem(taps[(c * 4 + 2) / 8], (c * 4 + 2) % 8),
                                    elem(taps[(c * 4 + 3) / 8], (c * 4 + 3) % 8)};
      y[c] = fe_silu(fe_conv(wc, elem(bb, c), elem(x[0], c), elem(x[1], c), elem(x[2], c), elem(x[3], c)));
      ss = fmaf(y[c], y[c], ss);
    }
    if (norm) {
      const float inv = fe_inv_l2(fe_lane_group_sum(ss, lanes), eps);
#pragma unroll
      for (int c = 0; c < kFeVec; ++c) y[c] *= inv;
    }
    if (!active) continue;
    if (r0 + i >= L) {
      *reinterpret_cast<uint4*>(row) = make_uint4(0, 0, 0, 0);
      continue;
    }
    fe_store<T, true>(row, y, kFeVec);
    if (copy) fe_store<T, true>(copy + (b * T_len + t0 + r0 + i) * copy_stride + ch0 + c0, y, kFeVec);
  }
}

// The final conv cache of channels [ch0, ch0 + D): the last 3 inputs of the sequence, the initial
// cache shifted in when T < 3 (zeros without one). Copies of dtype values: exact.
template <typename T>
__device__ __forceinline__ void store_final_cache(T* out, const T* x, const T* cache, int64_t b, int64_t T_len,
                                                  int64_t channels, int64_t ch0, int D) {
  for (int e = threadIdx.x; e < D * kConvCache; e += kThreads) {
    const int c = e / kConvCache, i = e % kConvCache;
    const int64_t t = T_len - kConvCache + i, ch = ch0 + c;
    out[(b * channels + ch) * kConvCache + i] =
        t >= 0 ? x[(b * T_len + t) * channels + ch]
               : (cache ? cache[(b * channels + ch) * kConvCache + (kConvCache + t)] : from_float<T>(0.0f));
  }
}

// Shared-memory layouts (bytes), shared by the launchers and the kernels.
__host__ __device__ constexpr int tile16_bytes(int rows, int cols) { return rows * (cols + 8) * 2; }
__host__ __device__ constexpr int prepare_smem_bytes(int K, int V) {
  return tile16_bytes(kC, K) + tile16_bytes(kC, V) + kC * kLdCC * 4 + 3 * 256 * 4 + 4 * kC * 4;
}
__host__ __device__ constexpr int output_kS0_bytes(int K) {
  return tile16_bytes(kC, K) > K * kLdBV * 4 ? tile16_bytes(kC, K) : K * kLdBV * 4;
}
__host__ __device__ constexpr int output_smem_bytes(int K) {
  return tile16_bytes(kC, K) + output_kS0_bytes(K) + kC * kLdCC * 4 + kC * kLdBV * 4 + kC * 4;
}

}  // namespace
