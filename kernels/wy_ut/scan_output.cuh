// wy_ut stages 2 and 3 in one warp-specialised kernel: the state scan and, beside it, the output.
// Per (b, hv) and 32 value columns, sequential over the chunks, 8 warps:
//   warps 0-3, the chain: U = U0 - W S0;  S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
//     (the plain scan's products in its order, scan.cuh), the state in float32 registers;
//   warps 4-7, the output of the same chunk: O = scale (diag(exp(gamma)) Q S0 + P U),
//     P = (Q K^T) .* D .* causal (the pipelined output's products in its order, output.cuh).
// Why: the three-kernel wy_ut writes every chunk's entering state and U to the workspace (K V + C V
// floats per chunk: 96 KiB at K = V = 128) for the output kernel to read back, and the scan's SMs
// sit ~70% idle in its dependent chain (docs/kernels/wy_ut.md). Here the state and U pass from
// the chain to the output warps in shared memory, and the output's products fill the chain's idle
// issue slots; the output never waits in the chain: it only reads what the chain has published.
// o and hT are bit for bit those of the three kernels (a [gpu] test compares the bytes).
//
// Hand-offs (named barriers; each id used by one producer and one consumer side per chunk, the
// chunk's parity picking one of two ids so that a side can run one chunk ahead of the other):
//   ready(n)      chain -> output  chunk n's q, k, gamma (stage n % 2) and S0 planes (set n % 2)
//   u_ready(n)    chain -> output  U of chunk n (set n % 2)
//   stage_free(n) output -> chain  done with q, k, gamma of n: the chain copies chunk n + 2 there
//   set_free(n)   output -> chain  done with S0 and U of n: the chain writes chunk n + 2's there
// The consumer halves of stage_free and set_free run for n + 2 < N only, so both sides arrive as
// often as the other waits and no barrier is left pending at exit.
// Budget at K = 128 (K = 64): two stages of k, q (64 x (K+8) x 2 B each), W (64 x (K+8) x 4 B), U0
// (64 x 36 x 4 B), gamma: 77.25 KiB (45.25) each; two sets of S0 hi/lo planes (K x 40 x 2 B x 2):
// 20 KiB (10) each; the chain's hi/lo planes of exp(gL - gamma) .* U: 10 KiB; two sets of U
// (64 x 36 x 4 B): 9 KiB each. 222.5 KiB (138.5) of the 227 KiB one block may have: one block
// per SM, so K = 256 (two stages of 150 KiB) keeps the three kernels. The two-level scan keeps
// them too (its pass 1 writes no o).
// Registers: the chain's as the plain scan's (~128); the output's Q fragments K / 4, P hi/lo 32,
// 16 accumulators; 256 threads at one block per SM leave each up to 255.
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/ptx.cuh"
#include "kernels/wy_ut/output.cuh"
#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

constexpr int kScanOutputThreads = 2 * kThreads;  // the chain's 4 warps, then the output's 4

// Named barrier ids (0 is __syncthreads'); the hand-offs add the chunk's parity.
constexpr int kBarChain = 1, kBarReady = 2, kBarUReady = 4, kBarStageFree = 6, kBarSetFree = 8;

template <int kK>
struct ScanOutputLayout {
  static constexpr int kLdk = kK + 8;   // 16-bit k and q rows
  static constexpr int kLdw = kK + 8;   // float32 W rows
  static constexpr int kLdp = kBV + 8;  // 16-bit hi/lo planes: 80-byte rows
  static constexpr int kTile16 = kC * kLdk * 2, kW = kC * kLdw * 4, kU = kC * kLdBV * 4, kG = kC * 4;
  // One stage: k, q, W, U0, gamma.
  static constexpr int kOffQ = kTile16, kOffW = 2 * kTile16, kOffU0 = kOffW + kW, kOffG = kOffU0 + kU;
  static constexpr int kStage = kOffG + kG;
  static constexpr int kSPlane = kK * kLdp * 2, kUPlane = kC * kLdp * 2;
  static constexpr int kOffS = 2 * kStage;                // two sets of S0 hi, lo
  static constexpr int kOffUd = kOffS + 4 * kSPlane;      // hi, lo of exp(gL - gamma) .* U
  static constexpr int kOffU = kOffUd + 2 * kUPlane;      // two sets of U (float32)
  static constexpr int kBytes = kOffU + 2 * kU;
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
};

// The chain: warps 0-3, warp w owning state rows [w K/4, (w+1) K/4) and U rows [16w, 16w + 16),
// as the plain scan (scan.cuh), which this follows step for step but for where S0 and U go.
template <typename T, int kK>
__device__ __forceinline__ void scan_output_chain(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                                  unsigned char* smem) {
  using Lay = ScanOutputLayout<kK>;
  constexpr int kMT = kK / 64, kLdk = Lay::kLdk, kLdw = Lay::kLdw, kLdp = Lay::kLdp;
  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, N = ws.num_chunks;
  const int64_t v0 = int64_t(blockIdx.x) * kBV, h = hv / (s.HV / s.H), head = b * s.HV + hv;
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;
  const int row0 = warp * (kK / 4);
  auto stage = [&](int buf) { return smem + buf * Lay::kStage; };
  auto s_plane = [&](int set, int lo) { return reinterpret_cast<T*>(smem + Lay::kOffS + (2 * set + lo) * Lay::kSPlane); };
  T* Ud_hi = reinterpret_cast<T*>(smem + Lay::kOffUd);
  T* Ud_lo = Ud_hi + kC * kLdp;

  // A thread's copies have fixed offsets within a chunk (as in the scan): computed once.
  constexpr int kKVec = kK / 8, kKRows = kThreads / kKVec;
  constexpr int kWVec = kK / 4, kWRows = kThreads / kWVec;
  constexpr int kUVec = kBV / 4, kURows = kThreads / kUVec;
  const int k_row = tid / kKVec, w_row = tid / kWVec, u_row = tid / kUVec;
  const int64_t row_stride = s.H * kK;  // elements between consecutive tokens' q or k rows
  const int64_t qk_thread = (b * s.T * s.H + h) * kK + k_row * row_stride + (tid % kKVec) * 8;
  const T* q_base = static_cast<const T*>(p.q);
  const T* k_base = static_cast<const T*>(p.k);
  const float* w_src_thread = ws.W + head * N * kC * kK + w_row * kK + (tid % kWVec) * 4;
  const float* u_src_thread = ws.U + head * N * kC * V + v0 + u_row * V + (tid % kUVec) * 4;
  const uint32_t smem0 = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t k_dst_thread = smem0 + 2 * (k_row * kLdk + (tid % kKVec) * 8);
  const uint32_t w_dst_thread = smem0 + Lay::kOffW + 4 * (w_row * kLdw + (tid % kWVec) * 4);
  const uint32_t u_dst_thread = smem0 + Lay::kOffU0 + 4 * (u_row * kLdBV + (tid % kUVec) * 4);
  auto issue_copies = [&](int64_t n, int buf) {
    const int64_t t0 = n * kC;
    const int L = int(s.T - t0 < kC ? s.T - t0 : kC);
    const uint32_t st = uint32_t(buf * Lay::kStage);
#pragma unroll
    for (int i = 0; i < kC / kKRows; ++i) {  // rows past the end: zero-filled, not read
      const bool in = k_row + i * kKRows < L;
      const int64_t off = qk_thread + (t0 + i * kKRows) * row_stride;
      const uint32_t dst = k_dst_thread + st + 2 * i * kKRows * kLdk;
      cp_async16(dst, in ? k_base + off : k_base, in);
      cp_async16(dst + Lay::kOffQ, in ? q_base + off : q_base, in);
    }
    if (p.use_delta) {
      const float* w_src = w_src_thread + n * kC * kK;
#pragma unroll
      for (int i = 0; i < kC / kWRows; ++i)
        cp_async16(w_dst_thread + st + 4 * i * kWRows * kLdw, w_src + i * kWRows * kK, true);
    }
    const float* u_src = u_src_thread + n * kC * V;
#pragma unroll
    for (int i = 0; i < kC / kURows; ++i)
      cp_async16(u_dst_thread + st + 4 * i * kURows * kLdBV, u_src + i * kURows * V, true);
    if (tid < kC / 4)
      cp_async16(smem0 + st + Lay::kOffG + 16 * tid, ws.gamma + (head * N + n) * kC + 4 * tid, true);
    cp_async_commit();
  };

  float S[kMT][4][4];
  {
    const float* enter = p.h0 ? p.h0 + head * kK * V + v0 : nullptr;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int64_t r = row0 + 16 * mt + g + 8 * hh, c = 8 * nt + t;
          const float2 x = enter ? *reinterpret_cast<const float2*>(enter + r * V + c) : make_float2(0.f, 0.f);
          S[mt][nt][2 * hh] = x.x;
          S[mt][nt][2 * hh + 1] = x.y;
        }
  }

  issue_copies(0, 0);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t0 = n * kC;
    const int L = int(s.T - t0 < kC ? s.T - t0 : kC);
    const int buf = int(n & 1);
    const T* k_s = reinterpret_cast<const T*>(stage(buf));
    const float* W_s = reinterpret_cast<const float*>(stage(buf) + Lay::kOffW);
    const float* U0_s = reinterpret_cast<const float*>(stage(buf) + Lay::kOffU0);
    const float* gamma_s = reinterpret_cast<const float*>(stage(buf) + Lay::kOffG);
    T* S_hi = s_plane(buf, 0);
    T* S_lo = s_plane(buf, 1);
    float* U_s = reinterpret_cast<float*>(smem + Lay::kOffU + buf * Lay::kU);

    cp_async_wait<0>();
    if (n >= 2) ptx::named_sync(kBarSetFree + buf, kScanOutputThreads);  // the output is done with n - 2's sets
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int r = row0 + 16 * mt + g + 8 * hh, c = 8 * nt + t;
          uint32_t hi, lo;
          split2<T>(S[mt][nt][2 * hh], S[mt][nt][2 * hh + 1], hi, lo);
          *reinterpret_cast<uint32_t*>(S_hi + r * kLdp + c) = hi;
          *reinterpret_cast<uint32_t*>(S_lo + r * kLdp + c) = lo;
        }
    // Chunk n's tiles (each thread waited for its own copies) and S0 planes are visible to the
    // chain; every chain read of chunk n - 1's tiles and of the U planes is done.
    ptx::named_sync(kBarChain, kThreads);
    ptx::named_arrive(kBarReady + buf, kScanOutputThreads);
    if (n + 1 < N) {
      if (n >= 1) ptx::named_sync(kBarStageFree + (buf ^ 1), kScanOutputThreads);  // output done with n - 1's q, k
      issue_copies(n + 1, buf ^ 1);
    }

    // U = U0 - W S0: three products, two partial sums (the scan's order).
    float u[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float2 x = *reinterpret_cast<const float2*>(U0_s + (16 * warp + g + 8 * hh) * kLdBV + 8 * nt + t);
        u[nt][2 * hh] = x.x;
        u[nt][2 * hh + 1] = x.y;
      }
    if (p.use_delta) {
      float ws_acc[2][4][4] = {};
#pragma unroll
      for (int ks = 0; ks < kK / 16; ++ks) {
        uint32_t ah[4], al[4];
        lda_split<T>(ah, al, W_s + 16 * warp * kLdw + 16 * ks, kLdw);
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          uint32_t bh[2][2], bl[2][2];
          ldsm_b2_trans(bh, S_hi + 16 * ks * kLdp + 16 * np, kLdp);
          ldsm_b2_trans(bl, S_lo + 16 * ks * kLdp + 16 * np, kLdp);
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            float* acc = ws_acc[ks & 1][2 * np + j];
            Mma<T>::run(acc, al, bh[j]);
            Mma<T>::run(acc, ah, bl[j]);
            Mma<T>::run(acc, ah, bh[j]);
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) u[nt][e] -= ws_acc[0][nt][e] + ws_acc[1][nt][e];
    }
    const float g_last = gamma_s[L - 1];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int r = 16 * warp + g + 8 * hh;
      const float d = expf(g_last - gamma_s[r]);  // rows past the end: gamma 0, U 0
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int c = 8 * nt + t;
        const float u0 = u[nt][2 * hh], u1 = u[nt][2 * hh + 1];
        *reinterpret_cast<float2*>(U_s + r * kLdBV + c) = make_float2(u0, u1);
        uint32_t hi, lo;
        split2<T>(d * u0, d * u1, hi, lo);
        *reinterpret_cast<uint32_t*>(Ud_hi + r * kLdp + c) = hi;
        *reinterpret_cast<uint32_t*>(Ud_lo + r * kLdp + c) = lo;
      }
    }
    ptx::named_sync(kBarChain, kThreads);
    ptx::named_arrive(kBarUReady + buf, kScanOutputThreads);

    // S = exp(gL) S + K^T (exp(gL - gamma) .* U): K exact, U split (two products).
    const float decay = expf(g_last);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) S[mt][nt][e] *= decay;
#pragma unroll
    for (int ks = 0; ks < kC / 16; ++ks) {
      uint32_t bh[4][2], bl[4][2];
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        ldsm_b2_trans(&bh[2 * np], Ud_hi + 16 * ks * kLdp + 16 * np, kLdp);
        ldsm_b2_trans(&bl[2 * np], Ud_lo + 16 * ks * kLdp + 16 * np, kLdp);
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        uint32_t a[4];
        ldsm_a_trans(a, k_s + 16 * ks * kLdk + row0 + 16 * mt, kLdk);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          Mma<T>::run(S[mt][nt], a, bl[nt]);
          Mma<T>::run(S[mt][nt], a, bh[nt]);
        }
      }
    }
  }

  if (float* end = p.hT ? p.hT + head * kK * V + v0 : nullptr) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int64_t r = row0 + 16 * mt + g + 8 * hh;
          *reinterpret_cast<float2*>(end + r * V + 8 * nt + t) = make_float2(S[mt][nt][2 * hh], S[mt][nt][2 * hh + 1]);
        }
  }
}

// The output: warps 4-7, output warp w owning rows [16w, 16w + 16) of each chunk, the pipelined
// output's products (output.cuh) on the chain's S0 planes and U.
template <typename T, int kK>
__device__ __forceinline__ void scan_output_out(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                                unsigned char* smem) {
  using Lay = ScanOutputLayout<kK>;
  constexpr int kLdk = Lay::kLdk, kLdp = Lay::kLdp;
  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, N = ws.num_chunks;
  const int64_t v0 = int64_t(blockIdx.x) * kBV;
  const int warp = int(threadIdx.x >> 5) - 4, g = lane_id() >> 2;
  T* o_base = static_cast<T*>(p.o) + (b * s.T * s.HV + hv) * V + v0;

  for (int64_t n = 0; n < N; ++n) {
    const int64_t t0 = n * kC;
    const int L = int(s.T - t0 < kC ? s.T - t0 : kC);
    const int buf = int(n & 1);
    const unsigned char* st = smem + buf * Lay::kStage;
    const T* k_s = reinterpret_cast<const T*>(st);
    const T* q_s = reinterpret_cast<const T*>(st + Lay::kOffQ);
    const float* gamma_s = reinterpret_cast<const float*>(st + Lay::kOffG);
    const T* S_hi = reinterpret_cast<const T*>(smem + Lay::kOffS + 2 * buf * Lay::kSPlane);
    const T* S_lo = S_hi + kK * kLdp;
    const float* U_s = reinterpret_cast<const float*>(smem + Lay::kOffU + buf * Lay::kU);

    ptx::named_sync(kBarReady + buf, kScanOutputThreads);
    // P in registers, split; Q's fragments; the rows' decay. Then q, k, gamma are free.
    uint32_t qa[kK / 16][4], ph[4][4], pl[4][4];
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
    const float decay_lo = expf(gamma_s[16 * warp + g]), decay_hi = expf(gamma_s[16 * warp + g + 8]);
    if (n + 2 < N) ptx::named_arrive(kBarStageFree + buf, kScanOutputThreads);

    // Q S0: Q exact, S0 split (two products); then the decay of each row.
    float acc[4][4] = {};
#pragma unroll
    for (int ks = 0; ks < kK / 16; ++ks)
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        uint32_t bh[2][2], bl[2][2];
        ldsm_b2_trans(bh, S_hi + 16 * ks * kLdp + 16 * np, kLdp);
        ldsm_b2_trans(bl, S_lo + 16 * ks * kLdp + 16 * np, kLdp);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          Mma<T>::run(acc[2 * np + j], qa[ks], bl[j]);
          Mma<T>::run(acc[2 * np + j], qa[ks], bh[j]);
        }
      }
    scale_rows<4>(acc, decay_lo, decay_hi);

    ptx::named_sync(kBarUReady + buf, kScanOutputThreads);
    // + P U: both float32, three products; P is zero past the diagonal block.
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if (ks > warp) break;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        uint32_t bh[2], bl[2];
        ldb_split<T>(bh, bl, U_s + 16 * ks * kLdBV + 8 * nt, kLdBV);
        Mma<T>::run(acc[nt], pl[ks], bh);
        Mma<T>::run(acc[nt], ph[ks], bl);
        Mma<T>::run(acc[nt], ph[ks], bh);
      }
    }
    store_o<T, 4>(o_base + t0 * s.HV * V, s.HV * V, p.scale, acc, L, warp);
    if (n + 2 < N) ptx::named_arrive(kBarSetFree + buf, kScanOutputThreads);
  }
}

template <typename T, int kK>
__global__ void __launch_bounds__(kScanOutputThreads, 1)
gdn_wy_ut_scan_output_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  extern __shared__ __align__(16) unsigned char smem[];
  if (threadIdx.x < kThreads) scan_output_chain<T, kK>(p, ws, smem);
  else scan_output_out<T, kK>(p, ws, smem);
}

}  // namespace
