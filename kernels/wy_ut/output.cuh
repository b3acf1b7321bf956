// wy_ut stage 3, the output: per (b, hv, chunk)
//   O = scale (diag(exp(gamma)) Q S0 + ((Q K^T) .* D .* causal_incl_diag) U)
// P = (Q K^T) .* D .* causal once per chunk, kept split in registers with Q's fragments, then per
// slice of value columns o = scale (exp(gamma) .* (Q S0) + P U), S0 and U from the workspace.
// Two kernels, the same products in the same order per 16 x 8 tile of o, so o is the same bits
// (a test compares the bytes):
//   gdn_wy_ut_output_kernel: one block per chunk, no pipeline; fused_conv's where K or V > 128
//     (with its front-end prologue, kFe) and the tests' reference (plain).
//   gdn_wy_ut_output_pipelined_kernel (and _fe_, fused_conv's where K, V <= 128): grid (G, HV, B),
//     block x taking chunks x, x + G, ... (G from the device's resident blocks: one wave); S0 and
//     U streamed through a ring of slice buffers (cp.async), the next chunk's q, k, gamma copied
//     over the current ones once they are in registers.
// Budget (pipelined): q, k tiles 2 x 64 x (K+8) x 2 B + gamma 256 B + kStages slice buffers of
// (K + 64) x (kSW + 4) x 4 B (S0 and U): K = 64: kSW 32, 2 stages, 18 KiB + 36 KiB = 54.25 KiB
// (4 blocks per SM); K = 128: kSW 16, 2 stages, 34.25 KiB + 30 KiB = 64.25 KiB (3 per SM);
// K = 256: kSW 8, 3 stages, 66.25 KiB + 45 KiB = 111.25 KiB (2 per SM). Registers: Q's fragments
// K/4 + P hi/lo 32 + kSW/2 accumulators + the copies' addresses; ptxas (bf16 / fp16): 123 / 123,
// 128 / 128, 164 / 164 at K = 64, 128, 256; the _fe_ kernel 158-160 at K = 128 (3 blocks per SM),
// 155-168 at 64 (3). Per-chunk kernel: q tile 33 KiB + (k tile | S0 slice) 36 KiB + P 17 KiB + U
// slice 9 KiB = 95 KiB at K = 256, 61.25 KiB at 128; ptxas 71 (120 / 119 with the prologue).
// Padding: float32 slices have rows of kSW + 4 floats (36, 20, 12 at K = 64, 128, 256), so the
// column-pair reads of a B fragment (rows 2t, 2t+1, column g) hit 32 distinct banks.
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/wy_ut/frontend_prologue.cuh"
#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

// ---------------------------------------------------------------------------------------------
// Helpers of the output stage.

// P = (Q K^T) .* D .* causal (diagonal included) for the rows [16 warp, 16 warp + 16) of a chunk
// (warp: the warp's index among the warps sharing the chunk),
// q and k tiles with rows of `ld` elements: exact operands, float32 result in the C fragments of
// eight 16x8 column tiles. Column tiles past the warp's diagonal block are zero. Rows past the end
// (i >= L, gamma 0) are zero, so exp is only taken of gamma_i - gamma_j with j <= i < L.
template <typename T>
__device__ __forceinline__ void causal_qk(float acc[8][4], const T* q_s, const T* k_s, int ld, int K,
                                          const float* gamma_s, int L, int warp) {
  const int g = lane_id() >> 2, t = (lane_id() & 3) * 2;
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
  lower_block_product<T>(acc, q_s, k_s, ld, K, warp);
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = 16 * warp + g + (e >> 1) * 8, j = 8 * nt + t + (e & 1);
      acc[nt][e] = j <= i && i < L ? acc[nt][e] * expf(gamma_s[i] - gamma_s[j]) : 0.0f;
    }
}

// Rows [16 warp, 16 warp + 16) of a 16 x 8 kNT accumulator block times exp(gamma) of each row.
template <int kNT>
__device__ __forceinline__ void scale_rows(float acc[kNT][4], float row_lo, float row_hi) {
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    acc[nt][0] *= row_lo;
    acc[nt][1] *= row_lo;
    acc[nt][2] *= row_hi;
    acc[nt][3] *= row_hi;
  }
}

// o rows [16 warp, 16 warp + 16) of a chunk (those < L), 8 kNT value columns: scale acc, rounded
// once to the dtype. o0: the chunk's row 0 at the first column; ld: elements from one row to the next.
template <typename T, int kNT>
__device__ __forceinline__ void store_o(T* o0, int64_t ld, float scale, const float acc[kNT][4], int L, int warp) {
  const int g = lane_id() >> 2, t = (lane_id() & 3) * 2;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = 16 * warp + g + 8 * hh;
    if (i >= L) continue;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
      *reinterpret_cast<uint32_t*>(o0 + i * ld + 8 * nt + t) =
          Mma<T>::pack(scale * acc[nt][2 * hh], scale * acc[nt][2 * hh + 1]);
  }
}

// ---------------------------------------------------------------------------------------------
// Stage 3: o for one (b, hv, chunk), 32 value columns at a time. Warp w owns rows [16w, 16w + 16).
// kFe (fused_conv): the q tile comes from the raw q projection in `fe` (conv, SiLU, L2 norm), not
// from p.q; k from p.k as always (there, the normalised k that prepare wrote).
template <typename T, bool kFe>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_output_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const GdnFrontEndParams fe) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GdnShape s = p.shape;
  const int K = int(s.K), ldk = K + 8;
  const int64_t V = s.V;
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = q_s + kC * ldk;
  float* S0_s = reinterpret_cast<float*>(k_s);  // [K][kLdBV], once P is built (k_s is dead)
  float* P_s = reinterpret_cast<float*>(smem + tile16_bytes(kC, K) + output_kS0_bytes(K));
  float* U_s = P_s + kC * kLdCC;
  float* gamma_s = U_s + kC * kLdBV;

  const int64_t n = blockIdx.x, hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t N = ws.num_chunks, t0 = n * kC, chunk = (b * s.HV + hv) * N + n;
  const int L = chunk_rows(s.T, n);
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;

  if constexpr (kFe) {
    fe_build_tile(q_s, ldk, static_cast<const T*>(fe.x[kFeQ]), static_cast<const T*>(fe.cache_in[kFeQ]),
                  static_cast<const T*>(fe.conv_w[kFeQ]), static_cast<const T*>(fe.conv_bias[kFeQ]), b, t0,
                  s.T, s.H * K, h * K, K, L, true, fe.l2_eps, static_cast<T*>(nullptr), 0);
  } else {
    load_rows(q_s, ldk, static_cast<const T*>(p.q) + ((b * s.T + t0) * s.H + h) * K, s.H * K, K, L);
  }
  load_rows(k_s, ldk, static_cast<const T*>(p.k) + ((b * s.T + t0) * s.H + h) * K, s.H * K, K, L);
  if (tid < kC) gamma_s[tid] = ws.gamma[chunk * kC + tid];
  __syncthreads();

  // P = (Q K^T) .* D .* causal, once for every value slice.
  {
    float acc[8][4];
    causal_qk<T>(acc, q_s, k_s, ldk, K, gamma_s, L, warp);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        *reinterpret_cast<float2*>(P_s + (16 * warp + g + 8 * hh) * kLdCC + 8 * nt + t) =
            make_float2(acc[nt][2 * hh], acc[nt][2 * hh + 1]);
  }
  const float decay_lo = expf(gamma_s[16 * warp + g]), decay_hi = expf(gamma_s[16 * warp + g + 8]);

  for (int64_t c0 = 0; c0 < V; c0 += kBV) {
    __syncthreads();  // P is built / the previous slice is consumed
    const float* st = ws.states + chunk * K * V + c0;
    for (int x = tid; x < K * (kBV / 4); x += kThreads) {
      const int r = x / (kBV / 4), c = (x % (kBV / 4)) * 4;
      *reinterpret_cast<float4*>(S0_s + r * kLdBV + c) = *reinterpret_cast<const float4*>(st + int64_t(r) * V + c);
    }
    const float* ub = ws.U + chunk * kC * V + c0;
    for (int x = tid; x < kC * (kBV / 4); x += kThreads) {
      const int r = x / (kBV / 4), c = (x % (kBV / 4)) * 4;
      *reinterpret_cast<float4*>(U_s + r * kLdBV + c) = *reinterpret_cast<const float4*>(ub + int64_t(r) * V + c);
    }
    __syncthreads();

    // Q S0: Q exact, S0 split (two products); then the decay of each row.
    float acc[4][4] = {};
    for (int ks = 0; ks < K / 16; ++ks) {
      uint32_t a[4];
      ldsm_a(a, q_s + 16 * warp * ldk + 16 * ks, ldk);
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        uint32_t bh[2], bl[2];
        ldb_split<T>(bh, bl, S0_s + 16 * ks * kLdBV + 8 * nt, kLdBV);
        Mma<T>::run(acc[nt], a, bl);
        Mma<T>::run(acc[nt], a, bh);
      }
    }
    scale_rows<4>(acc, decay_lo, decay_hi);
    // + P U: both float32, three products. P is zero past the diagonal block.
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if (ks > warp) break;
      uint32_t ah[4], al[4];
      lda_split<T>(ah, al, P_s + 16 * warp * kLdCC + 16 * ks, kLdCC);
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        uint32_t bh[2], bl[2];
        ldb_split<T>(bh, bl, U_s + 16 * ks * kLdBV + 8 * nt, kLdBV);
        Mma<T>::run(acc[nt], al, bh);
        Mma<T>::run(acc[nt], ah, bl);
        Mma<T>::run(acc[nt], ah, bh);
      }
    }
    store_o<T, 4>(static_cast<T*>(p.o) + ((b * s.T + t0) * s.HV + hv) * V + c0, s.HV * V, p.scale, acc, L, warp);
  }
}

// ---------------------------------------------------------------------------------------------
// Stage 3, pipelined: o for every chunk n = blockIdx.x, blockIdx.x + gridDim.x, ... of one
// (b, hv), the value columns in slices of kSW. The entering state and U reach shared memory one
// slice at a time through a ring of kStages slice buffers (cp.async): while slice m is computed,
// slices m + 1 .. m + kStages - 1 are in flight, across chunk boundaries. The q and k tiles have
// one buffer: once P is built, each warp holds its rows of Q (exact A fragments) and of P (split
// A fragments) in registers, so the next chunk's q, k and gamma are copied over them while this
// chunk's slices run. Same products in the same order as the per-chunk kernel above, per 16 x 8
// tile of o: o is bit for bit the same (the slice width only groups the n-tiles differently).
template <int kK>
struct OutputLayout {
  // Slice width and ring depth: 2 blocks per SM at K = 256, 3 at 128, 4 at 64 (227 KiB per SM
  // less 1 KiB per block).
  static constexpr int kSW = kK == 64 ? 32 : (kK == 128 ? 16 : 8);  // value columns per slice
  static constexpr int kStages = kK == 256 ? 3 : 2;
  static constexpr int kNT = kSW / 8;    // 16 x 8 tiles of o per warp and slice
  static constexpr int kLdS = kSW + 4;   // float32 slice rows: the B fragment reads hit 32 banks
  static constexpr int kLdk = kK + 8;    // 16-bit q, k rows
  static constexpr int kTile = kC * kLdk * 2;
  static constexpr int kOffK = kTile, kOffG = 2 * kTile, kOffSlices = kOffG + kC * 4;
  static constexpr int kS0 = kK * kLdS * 4, kU = kC * kLdS * 4, kSlice = kS0 + kU;
  static constexpr int kBytes = kOffSlices + kStages * kSlice;
  static_assert(kSW % 8 == 0 && kSW <= kBV && kBV % kSW == 0, "slices must tile every V that wy_ut takes");
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
  // The next chunk's q, k ride with the group of slice kStages - 1 of this chunk's first step;
  // the next chunk's first step waits for its own slice 0, so that group must not be later.
  static_assert(kStages - 1 <= kBV / kSW, "the q, k copy must land before the next chunk");
};

// kFe (fused_conv's pipelined output): the copies bring the raw q rows of the next chunk (and the 3 rows
// before into a halo buffer past the layout's bytes); fe_convert_tile turns them into the q tile
// (conv, SiLU, L2 norm) at the chunk's first slice. K <= 128.
template <typename T, int kK, bool kFe>
__device__ __forceinline__ void output_pipelined_body(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                               const GdnFrontEndParams& fe) {
  using Lay = OutputLayout<kK>;
  constexpr int kSW = Lay::kSW, kNT = Lay::kNT, kLdS = Lay::kLdS, kLdk = Lay::kLdk, kStages = Lay::kStages;
  extern __shared__ __align__(16) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = reinterpret_cast<T*>(smem + Lay::kOffK);
  float* gamma_s = reinterpret_cast<float*>(smem + Lay::kOffG);
  auto s0_tile = [&](int buf) { return reinterpret_cast<float*>(smem + Lay::kOffSlices + buf * Lay::kSlice); };
  auto u_tile = [&](int buf) { return s0_tile(buf) + kK * kLdS; };

  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t head = b * s.HV + hv, N = ws.num_chunks, stride = gridDim.x;
  const int slices = int(V / kSW);
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2;

  // A thread copies the same pieces of every chunk and slice (row and column fixed, the rows
  // kThreads / vectors-per-row apart), so its addresses are computed once here (as in the scan).
  constexpr int kQVec = kK / 8, kQRows = kThreads / kQVec;   // q, k: 16-byte pieces per row, rows per pass
  constexpr int kSVec = kSW / 4, kSRows = kThreads / kSVec;  // S0 and U slices (float32)
  static_assert(kC % kQRows == 0 && kK % kSRows == 0 && kC % kSRows == 0, "whole passes");
  const int q_row = tid / kQVec, s_row = tid / kSVec;
  const int64_t qk_row_stride = s.H * kK;  // elements between consecutive tokens' q or k rows
  const int64_t qk_thread = (b * s.T * s.H + h) * kK + q_row * qk_row_stride + (tid % kQVec) * 8;
  const float* st_thread = ws.states + head * N * kK * V + s_row * V + (tid % kSVec) * 4;
  const float* ub_thread = ws.U + head * N * kC * V + s_row * V + (tid % kSVec) * 4;
  const uint32_t smem0 = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t q_dst = smem0 + 2 * (q_row * kLdk + (tid % kQVec) * 8), k_dst = q_dst + Lay::kOffK;
  const uint32_t slice_dst = smem0 + Lay::kOffSlices + 4 * (s_row * kLdS + (tid % kSVec) * 4);

  // kFe: q's rows are the raw projection's (same layout), with the 3 rows before in q_halo.
  const T* q_base = kFe ? static_cast<const T*>(fe.x[kFeQ]) : static_cast<const T*>(p.q);
  T* q_halo = reinterpret_cast<T*>(smem + Lay::kBytes);
  // q and k rows of chunk n (zero-filled past the end, nothing read there) and its gamma.
  auto issue_qk = [&](int64_t n) {
    const int L = chunk_rows(s.T, n);
    if constexpr (kFe)
      fe_issue_halo(q_halo, kLdk, q_base, static_cast<const T*>(fe.cache_in[kFeQ]), b, n * kC, s.T, s.H * kK,
                    h * kK, kK);
    const T* q_src = q_base + qk_thread + n * kC * qk_row_stride;
    const T* k_src = static_cast<const T*>(p.k) + qk_thread + n * kC * qk_row_stride;
#pragma unroll
    for (int i = 0; i < kC / kQRows; ++i) {
      const bool in = q_row + i * kQRows < L;
      const int64_t off = i * kQRows * qk_row_stride;
      cp_async16(q_dst + 2 * i * kQRows * kLdk, in ? q_src + off : q_base, in);
      cp_async16(k_dst + 2 * i * kQRows * kLdk, in ? k_src + off : static_cast<const T*>(p.k), in);
    }
    if (tid < kC / 4) cp_async16(gamma_s + 4 * tid, ws.gamma + (head * N + n) * kC + 4 * tid, true);
  };
  // Columns [j kSW, (j + 1) kSW) of chunk n's entering state (K rows) and of its U (C rows; the
  // workspace pads every chunk to 64 rows with zeros) into ring buffer `buf`.
  auto issue_slice = [&](int64_t n, int j, int buf) {
    const float* st = st_thread + n * kK * V + j * kSW;
    const float* ub = ub_thread + n * kC * V + j * kSW;
    const uint32_t dst = slice_dst + uint32_t(buf * Lay::kSlice);
#pragma unroll
    for (int i = 0; i < kK / kSRows; ++i) cp_async16(dst + 4 * i * kSRows * kLdS, st + i * kSRows * V, true);
#pragma unroll
    for (int i = 0; i < kC / kSRows; ++i)
      cp_async16(dst + 4 * (kK + i * kSRows) * kLdS, ub + i * kSRows * V, true);
  };

  int64_t n = blockIdx.x;
  if (n >= N) return;
  // The issue cursor: the next slice (chunk in_n, columns in_j) to copy, slice number `issued`.
  int64_t in_n = n;
  int in_j = 0, issued = 0;
  auto issue_next = [&]() {  // one commit group per call, empty past the block's last slice
    if (in_n < N) {
      issue_slice(in_n, in_j, issued % kStages);
      if (++in_j == slices) {
        in_j = 0;
        in_n += stride;
      }
    }
    ++issued;
    cp_async_commit();
  };

  issue_qk(n);
#pragma unroll
  for (int i = 0; i + 1 < kStages; ++i) issue_next();  // q, k, gamma ride with the first group

  uint32_t qa[kK / 16][4];        // this warp's 16 rows of Q, exact
  uint32_t ph[4][4], pl[4][4];    // this warp's 16 rows of P, split (hi + lo); column blocks <= warp
  float decay_lo = 0.0f, decay_hi = 0.0f;
  int L = 0;
  for (int m = 0; n < N; n += stride) {
    for (int j = 0; j < slices; ++j, ++m) {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // slice m landed for every thread; slice m - 1's buffer is read
      if (j == 0) {
        // P = (Q K^T) .* D .* causal in registers, split once for every slice of the chunk; Q's
        // A fragments too. Then q, k and gamma are free for the next chunk.
        L = chunk_rows(s.T, n);
        if constexpr (kFe) {
          fe_convert_tile(q_s, q_halo, kLdk, static_cast<const T*>(fe.conv_w[kFeQ]),
                          static_cast<const T*>(fe.conv_bias[kFeQ]), b, n * kC, s.T, h * kK, int(kK), L, true,
                          fe.l2_eps, static_cast<T*>(nullptr), 0);
          __syncthreads();  // the q tile is converted
        }
        {
          float acc[8][4];
          causal_qk<T>(acc, q_s, k_s, kLdk, kK, gamma_s, L, warp);
#pragma unroll
          for (int ks = 0; ks < 4; ++ks) {
            if (ks > warp) break;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const float* c = acc[2 * ks + (i >> 1)] + 2 * (i & 1);  // the lda_split element order
              split2<T>(c[0], c[1], ph[ks][i], pl[ks][i]);
            }
          }
        }
#pragma unroll
        for (int ks = 0; ks < kK / 16; ++ks) ldsm_a(qa[ks], q_s + 16 * warp * kLdk + 16 * ks, kLdk);
        decay_lo = expf(gamma_s[16 * warp + g]);
        decay_hi = expf(gamma_s[16 * warp + g + 8]);
        __syncthreads();  // every warp holds its fragments
        if (n + stride < N) issue_qk(n + stride);  // joins the group issue_next commits below
      }
      issue_next();  // slice m + kStages - 1 into the buffer slice m - 1 used

      const int buf = m % kStages;
      const float* S0_s = s0_tile(buf);
      const float* U_s = u_tile(buf);
      // Q S0: Q exact, S0 split (two products); then the decay of each row.
      float acc[kNT][4] = {};
#pragma unroll
      for (int ks = 0; ks < kK / 16; ++ks)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          uint32_t bh[2], bl[2];
          ldb_split<T>(bh, bl, S0_s + 16 * ks * kLdS + 8 * nt, kLdS);
          Mma<T>::run(acc[nt], qa[ks], bl);
          Mma<T>::run(acc[nt], qa[ks], bh);
        }
      scale_rows<kNT>(acc, decay_lo, decay_hi);
      // + P U: both float32, three products. P is zero past the diagonal block.
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        if (ks > warp) break;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          uint32_t bh[2], bl[2];
          ldb_split<T>(bh, bl, U_s + 16 * ks * kLdS + 8 * nt, kLdS);
          Mma<T>::run(acc[nt], pl[ks], bh);
          Mma<T>::run(acc[nt], ph[ks], bl);
          Mma<T>::run(acc[nt], ph[ks], bh);
        }
      }
      store_o<T, kNT>(static_cast<T*>(p.o) + ((b * s.T + n * kC) * s.HV + hv) * V + int64_t(j) * kSW, s.HV * V,
                      p.scale, acc, L, warp);
    }
  }
  cp_async_wait<0>();  // nothing left in flight at exit (the groups past the last slice are empty)
}

template <typename T, int kK>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_output_pipelined_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  output_pipelined_body<T, kK, false>(p, ws, GdnFrontEndParams());
}

// fused_conv's pipelined output: capped for 3 blocks per SM, as the plain kernel runs at K = 128.
template <typename T, int kK>
__global__ void __launch_bounds__(kThreads, 3)
gdn_wy_ut_output_pipelined_fe_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const GdnFrontEndParams fe) {
  output_pipelined_body<T, kK, true>(p, ws, fe);
}

}  // namespace
