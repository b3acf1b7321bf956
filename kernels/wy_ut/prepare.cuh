// wy_ut stage 1, prepare: per (b, hv, chunk) of C = 64 tokens
//   gamma = local cumsum of g;  A = strictly_lower(diag(beta) K K^T .* D), D_ij = exp(g_i - g_j)
//   Tm = (I + A)^-1;  W = Tm diag(beta exp(gamma)) K;  U0 = Tm diag(beta) V
// K K^T on tensor cores, A in float32; Tm from the inverses of the four 16x16 diagonal blocks of
// I + A (forward substitution, one column per lane) merged block by block,
// X_ij = -X_ii sum_{j<=m<i} A_im X_mj (float32 SIMT); U0 then W on tensor cores.
// Two kernels, one arithmetic (prepare_chunk), so gamma, W and U0 are the same bits (a test
// compares the bytes):
//   gdn_wy_ut_prepare_kernel: one block per chunk, loads then compute; fused_conv's, with its
//     front-end prologue (kFe), and the tests' reference (plain).
//   gdn_wy_ut_prepare_pipelined_kernel: wy_ut's; grid (G, HV, B), block x taking chunks x, x + G,
//     ...; the next chunk's tiles copied (cp.async) into space this chunk is done with: its k over
//     the triangles once W's Tm fragments are in registers (K = 128, where the two tiles are the
//     same 17 KiB; the regions then swap roles), its v over this v once U0 is stored (overlapping
//     W), g and beta in registers; at K = 64 and 256 its k only after W.
// A and Tm share one C x C float32 tile (the triangles): A is strictly lower and Tm lower, so A is
// kept transposed above the diagonal (A_ij at (j, i)) and Tm written on and below it; A's diagonal
// blocks are dead once Tm's are solved, so those are overwritten with Tm's zeros.
// Budget (128 threads): k, v tiles 64 x (K+8) x 2 B + 64 x (V+8) x 2 B (34 KiB each at 256) +
// triangles 64 x 68 x 4 B = 17 KiB + merge scratch 3 x 16 x 16 x 4 B = 3 KiB + 4 x 64 x 4 B
// = 87 KiB at K = V = 256 (2 blocks per SM), 55 KiB at 128 (4), 39 KiB at 64 (registers: 4); the
// pipelined kernel the same bytes in another order (k, triangles, v, scratch). Registers: 8
// accumulator tiles (32) + split Tm fragments (32).
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/wy_ut/frontend_prologue.cuh"
#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

// ---------------------------------------------------------------------------------------------
// Stage 1: gamma, A, Tm, W, U0 for one (b, hv, chunk). Warp w owns rows [16w, 16w + 16).

// The shared-memory tiles of stage 1 (both kernels; the pipelined kernel swaps k_s and tri_s from one
// chunk to the next at K = 128).
template <typename T>
struct PrepareTiles {
  T* k_s;          // C x (K + 8): k rows, zero past the end
  T* v_s;          // C x (V + 8): v rows, zero past the end
  float* tri_s;    // C x kLdCC: A transposed above the diagonal, Tm on and below it
  float* Y_s;      // raw g in [0, C) on entry, then the merge scratch (3 x 256)
  float* gamma_s;  // C
  float* beta_s;   // C: beta on entry (0 past the end, 1 without the delta term)
  float* cw_s;     // C: beta exp(gamma), the column factors of W
  float* cu_s;     // C: beta, the column factors of U0
};

// Stage 1's arithmetic for one chunk, the same in both prepare kernels (so their outputs are the
// same bits): from the tiles (visible to every thread) to gamma, A, Tm and the workspace's W and U0.
// after_u0(): every thread, after U0's products (its caller must sync before it overwrites the v
// tile); after_tm_read(): every thread, once its warp holds W's Tm fragments (its caller must sync
// before it overwrites the triangles).
template <typename T, typename AfterU0, typename AfterTmRead>
__device__ __forceinline__ void prepare_chunk(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                              const PrepareTiles<T>& tl, int64_t chunk, int L, AfterU0 after_u0,
                                              AfterTmRead after_tm_read) {
  const int K = int(p.shape.K), V = int(p.shape.V), ldk = K + 8, ldv = V + 8;
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;
  const T* k_s = tl.k_s;
  const T* v_s = tl.v_s;
  float* tri_s = tl.tri_s;
  float* Y_s = tl.Y_s;
  float* gamma_s = tl.gamma_s;
  const float* beta_s = tl.beta_s;
  float* cw_s = tl.cw_s;
  float* cu_s = tl.cu_s;

  if (tid < kC) {
    float acc = 0.0f;  // sequential, in the order of the reference; rows past the end stay 0
    for (int j = 0; j <= tid; ++j) acc += Y_s[j];
    if (tid >= L) acc = 0.0f;
    gamma_s[tid] = acc;
    cw_s[tid] = p.use_delta ? beta_s[tid] * expf(acc) : 0.0f;
    cu_s[tid] = beta_s[tid];
    ws.gamma[chunk * kC + tid] = acc;
  }
  __syncthreads();

  // A = strictly_lower(diag(beta) K K^T .* D), A_ij stored at (j, i). Row block w needs column
  // blocks 0..w only.
  {
    float acc[8][4] = {};
    if (p.use_delta) lower_block_product<T>(acc, k_s, k_s, ldk, K, warp);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = 16 * warp + g + (e >> 1) * 8, j = 8 * nt + t + (e & 1);
        // Rows past the end have gamma 0, so exp(gamma_i - gamma_j) may overflow there: skip them.
        const float a = j < i && i < L ? beta_s[i] * acc[nt][e] * expf(gamma_s[i] - gamma_s[j]) : 0.0f;
        if (ws.A) ws.A[chunk * kC * kC + i * kC + j] = a;  // test hook: the whole C x C
        if (j < i) tri_s[j * kLdCC + i] = a;
      }
  }
  __syncthreads();

  // Tm: the diagonal blocks, one column per lane (x_i = -sum_{m<i} A_im x_m below the diagonal);
  // each warp's block of A is read by that warp only, so it is overwritten after a warp barrier.
  if ((tid & 31) < 16) {
    const int j = tid & 15, base = 16 * warp;
    const float* Ab = tri_s + base * kLdCC + base;  // A_(base+i)(base+m) at Ab[m * kLdCC + i]
    float x[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float sum = 0.0f;
#pragma unroll
      for (int m = 0; m < i; ++m) sum += Ab[m * kLdCC + i] * x[m];
      x[i] = i == j ? 1.0f : (i < j ? 0.0f : -sum);
    }
    __syncwarp(0xffffu);
#pragma unroll
    for (int i = 0; i < 16; ++i) tri_s[(base + i) * kLdCC + base + j] = x[i];
  }
  // Off-diagonal blocks by distance d from the diagonal: X_ij = -X_ii (sum_{j<=m<i} A_im X_mj).
  // A thread takes two adjacent columns of a row (float2 operands), so a warp's loads of A and of
  // X each touch one shared-memory wavefront per m (4 rows x 8 column pairs); every element's sum
  // runs over m in the same order as one column per thread would.
  for (int d = 1; d < 4; ++d) {
    __syncthreads();
    const int blocks = 4 - d;
    for (int e = tid; e < blocks * 128; e += kThreads) {
      const int bj = e / 128, r = (e / 8) % 16, c = 2 * (e % 8), bi = bj + d;
      const float* Ar = tri_s + 16 * bi + r;  // A_(16bi+r)m at Ar[m * kLdCC]
      float2 sum = make_float2(0.0f, 0.0f);
      for (int m = 16 * bj; m < 16 * bi; ++m) {
        const float a = Ar[m * kLdCC];
        const float2 x = *reinterpret_cast<const float2*>(tri_s + m * kLdCC + 16 * bj + c);
        sum.x += a * x.x;
        sum.y += a * x.y;
      }
      *reinterpret_cast<float2*>(Y_s + bj * 256 + r * 16 + c) = sum;
    }
    __syncthreads();
    for (int e = tid; e < blocks * 128; e += kThreads) {
      const int bj = e / 128, r = (e / 8) % 16, c = 2 * (e % 8), bi = bj + d;
      const float4* Xr = reinterpret_cast<const float4*>(tri_s + (16 * bi + r) * kLdCC + 16 * bi);
      const float* Yc = Y_s + bj * 256 + c;
      float2 sum = make_float2(0.0f, 0.0f);
#pragma unroll
      for (int m4 = 0; m4 < 4; ++m4) {
        const float4 x4 = Xr[m4];
        const float xs[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const float2 y = *reinterpret_cast<const float2*>(Yc + (4 * m4 + u) * 16);
          sum.x += xs[u] * y.x;
          sum.y += xs[u] * y.y;
        }
      }
      *reinterpret_cast<float2*>(tri_s + (16 * bi + r) * kLdCC + 16 * bj + c) = make_float2(-sum.x, -sum.y);
    }
  }
  __syncthreads();
  if (ws.Tm)  // test hook: rows past the sequence end are zero, as in the reference
    for (int e = tid; e < kC * kC; e += kThreads) {
      const int i = e / kC, j = e % kC;
      ws.Tm[chunk * kC * kC + e] = i < L && j <= i ? tri_s[i * kLdCC + j] : 0.0f;
    }

  // U0 = (Tm diag(cu)) V, then W = (Tm diag(cw)) K: Tm split (hi + lo), K and V exact. Row block w
  // of Tm is zero past column block w. U0 first, so the v tile is free before W runs.
  const bool w_half = p.wy_ut_output == WyUtOutput::wgmma_chain;
  for (int which = 1; which >= (p.use_delta ? 0 : 1); --which) {
    const float* cs = which == 0 ? cw_s : cu_s;
    const T* src = which == 0 ? k_s : v_s;
    const int ld = which == 0 ? ldk : ldv, cols = which == 0 ? K : V;
    float* dst = which == 0 ? ws.W + chunk * kC * K : ws.U + chunk * kC * V;
    uint32_t ahi[4][4], alo[4][4];
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      if (ks <= warp) lda_split<T>(ahi[ks], alo[ks], tri_s + 16 * warp * kLdCC + 16 * ks, kLdCC, cs + 16 * ks);
    if (which == 0) after_tm_read();
    for (int c0 = 0; c0 < cols; c0 += 16) {
      float acc[2][4] = {};
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        if (ks > warp) break;
        uint32_t bb[2][2];
        ldsm_b2_trans(bb, src + 16 * ks * ld + c0, ld);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          Mma<T>::run(acc[j], alo[ks], bb[j]);
          Mma<T>::run(acc[j], ahi[ks], bb[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int r = 16 * warp + g, c = c0 + 8 * j + t;
        if (which == 0 && w_half) {  // the wgmma chain's fp16 W in its core layout, in W's first half
          __half* w16 = reinterpret_cast<__half*>(dst);
          *reinterpret_cast<__half2*>(w16 + chain_core_offset(r, c, cols)) = __floats2half2_rn(acc[j][0], acc[j][1]);
          *reinterpret_cast<__half2*>(w16 + chain_core_offset(r + 8, c, cols)) = __floats2half2_rn(acc[j][2], acc[j][3]);
          continue;
        }
        *reinterpret_cast<float2*>(dst + int64_t(r) * cols + c) = make_float2(acc[j][0], acc[j][1]);
        *reinterpret_cast<float2*>(dst + int64_t(r + 8) * cols + c) = make_float2(acc[j][2], acc[j][3]);
      }
    }
    if (which == 1) after_u0();
  }
}

// The per-chunk kernel: one block per chunk, loads then compute. The plain one is the tests'
// bit-identity reference for the pipelined kernel; kFe (fused_conv): k, v, g and beta come from the raw
// projections in `fe` instead of p.k, p.v, p.g, p.beta; the normalised k tile also goes to k_out
// ([B, T, H, K], for the scan and output), written by one value head of each q/k head group; the
// blocks of the last chunk write the final conv caches.
template <typename T, bool kFe>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_prepare_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const GdnFrontEndParams fe, T* k_out) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GdnShape s = p.shape;
  const int K = int(s.K), V = int(s.V), ldk = K + 8, ldv = V + 8;
  T* k_s = reinterpret_cast<T*>(smem);
  T* v_s = k_s + kC * ldk;
  float* tri_s = reinterpret_cast<float*>(v_s + kC * ldv);  // A and Tm
  float* Y_s = tri_s + kC * kLdCC;  // raw g, then the merge scratch
  float* gamma_s = Y_s + 3 * 256;
  float* beta_s = gamma_s + kC;
  float* cw_s = beta_s + kC;  // beta exp(gamma): column factors of W
  float* cu_s = cw_s + kC;    // beta: column factors of U0

  const int64_t n = blockIdx.x, hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t N = ws.num_chunks, t0 = n * kC, chunk = (b * s.HV + hv) * N + n;
  const int L = chunk_rows(s.T, n);
  const int tid = threadIdx.x;

  if constexpr (kFe) {
    // k (conv, SiLU, L2 norm) and v (conv, SiLU) tiles from the raw rows; g and beta per row.
    const T* const* x = reinterpret_cast<const T* const*>(fe.x);
    const T* const* cw = reinterpret_cast<const T* const*>(fe.conv_w);
    const T* const* cb = reinterpret_cast<const T* const*>(fe.conv_bias);
    const T* const* cin = reinterpret_cast<const T* const*>(fe.cache_in);
    // One writer per q/k head: the rule of the final q/k conv caches below.
    const bool group_writer = hv % (s.HV / s.H) == 0;
    fe_build_tile(k_s, ldk, x[kFeK], cin[kFeK], cw[kFeK], cb[kFeK], b, t0, s.T, s.H * K, h * K, K, L, true,
                  fe.l2_eps, group_writer ? k_out : nullptr, s.H * K);
    fe_build_tile(v_s, ldv, x[kFeV], cin[kFeV], cw[kFeV], cb[kFeV], b, t0, s.T, s.HV * V, hv * V, V, L, false,
                  fe.l2_eps, static_cast<T*>(nullptr), 0);
    if (tid < kC) {
      const int64_t gi = (b * s.T + t0 + tid) * s.HV + hv;
      Y_s[tid] = tid < L ? fe_gate(to_float(static_cast<const T*>(fe.a)[gi]), fe.A_log[hv], fe.dt_bias[hv]) : 0.0f;
      beta_s[tid] = tid < L ? (p.use_delta ? fe_beta(to_float(static_cast<const T*>(fe.b)[gi])) : 1.0f) : 0.0f;
    }
    // Final conv caches, each channel by one block: v by every (last chunk, hv); q and k, which
    // HV / H value heads share, by the first value head of the group only.
    if (n == N - 1) {
      T* const* cout = reinterpret_cast<T* const*>(fe.cache_out);
      if (cout[kFeV]) store_final_cache(cout[kFeV], x[kFeV], cin[kFeV], b, s.T, s.HV * V, hv * V, V);
      if (group_writer)
#pragma unroll
        for (int tsr = kFeQ; tsr <= kFeK; ++tsr)
          if (cout[tsr]) store_final_cache(cout[tsr], x[tsr], cin[tsr], b, s.T, s.H * K, h * K, K);
    }
  } else {
    load_rows(k_s, ldk, static_cast<const T*>(p.k) + ((b * s.T + t0) * s.H + h) * K, s.H * K, K, L);
    load_rows(v_s, ldv, static_cast<const T*>(p.v) + ((b * s.T + t0) * s.HV + hv) * V, s.HV * V, V, L);
    if (tid < kC) {
      const int64_t gi = (b * s.T + t0 + tid) * s.HV + hv;
      Y_s[tid] = (tid < L && p.g) ? p.g[gi] : 0.0f;
      beta_s[tid] = tid < L ? (p.use_delta ? p.beta[gi] : 1.0f) : 0.0f;
    }
  }
  __syncthreads();
  prepare_chunk<T>(p, ws, PrepareTiles<T>{k_s, v_s, tri_s, Y_s, gamma_s, beta_s, cw_s, cu_s}, chunk, L,
                   [] {}, [] {});
}

// The pipelined kernel: every chunk n = blockIdx.x, blockIdx.x + gridDim.x, ... of one (b, hv), the next
// chunk's tiles copied (cp.async) into the space this chunk has done with, while it computes. The
// layout is the per-chunk kernel's bytes (so as many blocks per SM): region 0 (a k tile), region 1 (the
// triangles), v, scratch. g and beta of the next chunk wait in registers (threads < C). Per chunk:
//   wait, g and beta to shared memory, barrier, gamma, A, Tm;
//   U0, barrier, the next v into the v tile (overlaps W);
//   K = 128, where a k tile and the triangles are both 17 KiB: W's Tm fragments, barrier, the next
//     k into the triangles' region (overlaps W's products), and the two regions swap roles (the next
//     triangles go where this k is, dead after W); W;
//   K = 64, 256: W, barrier, the next k into the k tile (nothing left to overlap it: the k tile is
//     smaller than the triangles at 64, larger at 256, and a separate buffer would cost a block per
//     SM).
// The arithmetic is prepare_chunk's, as in the per-chunk kernel: gamma, W and U0 are its bits.
template <typename T>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_prepare_pipelined_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GdnShape s = p.shape;
  const int K = int(s.K), V = int(s.V), ldk = K + 8, ldv = V + 8;
  static_assert(tile16_bytes(kC, 128) == kC * kLdCC * 4, "the k tile and the triangles swap at K = 128");
  const bool swap = K == 128;
  unsigned char* region0 = smem;
  unsigned char* region1 = smem + tile16_bytes(kC, K);
  T* v_s = reinterpret_cast<T*>(region1 + kC * kLdCC * 4);
  float* Y_s = reinterpret_cast<float*>(v_s + kC * ldv);  // raw g, then the merge scratch
  float* gamma_s = Y_s + 3 * 256;
  float* beta_s = gamma_s + kC;
  float* cw_s = beta_s + kC;
  float* cu_s = cw_s + kC;

  const int64_t hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t head = b * s.HV + hv, N = ws.num_chunks, stride = gridDim.x;
  const int tid = threadIdx.x;

  // Rows [0, L) of chunk n of a [B, T, heads, cols] tensor into shared rows of ld elements; rows
  // [L, C) zero-filled (nothing read there).
  auto issue_rows = [&](void* dst, int ld, const void* base, int64_t heads, int64_t head_idx, int cols, int64_t n) {
    const int L = chunk_rows(s.T, n);
    const T* src = static_cast<const T*>(base) + ((b * s.T + n * kC) * heads + head_idx) * cols;
    T* d = static_cast<T*>(dst);
    const int vecs = cols / 8;
    for (int x = tid; x < kC * vecs; x += kThreads) {
      const int r = x / vecs, c = (x % vecs) * 8;
      cp_async16(d + r * ld + c, r < L ? src + int64_t(r) * heads * cols + c : src, r < L);
    }
  };
  float g_next = 0.0f, beta_next = 0.0f;  // chunk n's g and beta of row tid, as the per-chunk kernel reads them
  auto load_gates = [&](int64_t n) {
    if (tid < kC) {
      const int L = chunk_rows(s.T, n);
      const int64_t gi = (b * s.T + n * kC + tid) * s.HV + hv;
      g_next = (tid < L && p.g) ? p.g[gi] : 0.0f;
      beta_next = tid < L ? (p.use_delta ? p.beta[gi] : 1.0f) : 0.0f;
    }
  };

  int64_t n = blockIdx.x;
  if (n >= N) return;
  issue_rows(region0, ldk, p.k, s.H, h, K, n);
  issue_rows(v_s, ldv, p.v, s.HV, hv, V, n);
  cp_async_commit();
  load_gates(n);
  for (int i = 0; n < N; n += stride, ++i) {
    const int64_t next = n + stride;
    const bool has_next = next < N;
    const bool odd = swap && (i & 1);
    T* k_s = reinterpret_cast<T*>(odd ? region1 : region0);
    float* tri_s = reinterpret_cast<float*>(odd ? region0 : region1);
    cp_async_wait<0>();
    if (tid < kC) {
      Y_s[tid] = g_next;
      beta_s[tid] = beta_next;
    }
    __syncthreads();  // chunk n's tiles are visible; every read of chunk n - stride's is done
    if (has_next) load_gates(next);
    prepare_chunk<T>(
        p, ws, PrepareTiles<T>{k_s, v_s, tri_s, Y_s, gamma_s, beta_s, cw_s, cu_s}, head * N + n, chunk_rows(s.T, n),
        [&] {
          if (has_next) {
            __syncthreads();  // every warp's U0 products (the v tile's reads) are done
            issue_rows(v_s, ldv, p.v, s.HV, hv, V, next);
            cp_async_commit();
          }
        },
        [&] {
          if (swap && has_next) {
            __syncthreads();  // every warp holds W's Tm fragments: the triangles are dead
            issue_rows(tri_s, ldk, p.k, s.H, h, K, next);
            cp_async_commit();
          }
        });
    if (!swap && has_next) {
      __syncthreads();  // every warp's W products (the k tile's reads) are done
      issue_rows(k_s, ldk, p.k, s.H, h, K, next);
      cp_async_commit();
    }
  }
}

}  // namespace
