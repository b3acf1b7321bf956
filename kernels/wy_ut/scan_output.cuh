// wy_ut stages 2 and 3 in one warp-specialised kernel: the state scan and, beside it, the output.
// Per (b, hv) and 32 value columns, sequential over the chunks, 12 warps:
//   warps 0-3, the chain: U = U0 - W S0;  S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
//     (the plain scan's products in its order, scan.cuh), the state in float32 registers;
//   warps 4-11, the output of the same chunk: O = scale (diag(exp(gamma)) Q S0 + P U) (the
//     pipelined output's products in its order, output.cuh), P = (Q K^T) .* D .* causal built
//     once per (b, hv, chunk) by the kernel before it (gdn_wy_ut_qk_fragments_kernel), in
//     parallel, and read as split A fragments.
// Why: the three-kernel wy_ut writes every chunk's entering state and U to the workspace (K V + C V
// floats per chunk: 96 KiB at K = V = 128) for the output kernel to read back, and the scan's SMs
// sit ~70% idle in its dependent chain (docs/kernels/wy_ut.md). Here the state and U pass from
// the chain to the output warps in shared memory, and the output's products fill the chain's idle
// issue slots; the output never waits in the chain: it only reads what the chain has published.
// o and hT are bit for bit those of the three kernels (a [gpu] test compares the bytes).
//
// Hand-offs (named barriers; each id used by one producer and one consumer side per chunk, the
// chunk's parity picking one of two ids so that a side can run one chunk ahead of the other):
//   ready(n)     chain -> output  chunk n's S0 planes (set n % 2); the chain is done with chunk
//                                 n - 1's tiles, so the output copies n + 1's q, k, gamma there
//   qk_ready(n)  output -> chain  chunk n's q, k, gamma have landed (the output warps copy them
//                                 and publish them after chunk n - 1's P and Q S0)
//   u_ready(n)   chain -> output  U of chunk n (set n % 2)
//   set_free(n)  output -> chain  done with S0 and U of n: the chain writes chunk n + 2's there
// The chain copies W and U0 itself, so it never waits for the output's products of the chunk
// before (only set_free, two chunks back). set_free's consumer half runs for n + 2 < N only, so
// both sides arrive as often as the other waits and no barrier is left pending at exit.
// Budget at K = 128 (K = 64): two stages of k, q (64 x (K+8) x 2 B each), W (64 x (K+8) x 4 B), U0
// (64 x 36 x 4 B), gamma: 77.25 KiB (45.25) each; two sets of S0 hi/lo planes (K x 40 x 2 B x 2):
// 20 KiB (10) each; the chain's hi/lo planes of exp(gL - gamma) .* U: 10 KiB; two sets of U
// (64 x 36 x 4 B): 9 KiB each. 222.5 KiB (138.5) of the 227 KiB one block may have: one block
// per SM, so K = 256 (two stages of 150 KiB) keeps the three kernels. The two-level scan keeps
// them too (its pass 1 writes no o).
// Registers: the chain's as the plain scan's (~128); the output's Q fragments K / 4, P hi/lo 32,
// 8 accumulators; 384 threads at one block per SM leave each up to 168.
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/ptx.cuh"
#include "kernels/wy_ut/output.cuh"
#include "kernels/wy_ut/scan.cuh"
#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

constexpr int kScanOutputThreads = 3 * kThreads;  // the chain's 4 warps, then the output's 8

// Named barrier ids (0 is __syncthreads'); the hand-offs add the chunk's parity.
constexpr int kBarChain = 1, kBarReady = 2, kBarUReady = 4, kBarQkReady = 6, kBarSetFree = 8;

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

// P = (Q K^T) .* D .* causal of one chunk as the output warps' split A fragments, in memory:
// slot r (r + 1) / 2 + ks holds row block r's fragments of column block ks <= r, lane-major,
// each lane's 4 hi then 4 lo words (32 bytes), so a warp reads a slot as 1 KiB in a row.
constexpr int kQkSlots = 10;  // the lower block triangle of 4 x 4 row x column blocks
constexpr int kQkFragmentWords = kQkSlots * 32 * 8;
__device__ __forceinline__ int qk_slot(int row_block, int ks) { return row_block * (row_block + 1) / 2 + ks; }

// One block per (b, hv, chunk), warp w building row block w, the products, order and split of
// the output's causal_qk (output.cuh), so o stays the three kernels' bits. Why apart: the scan's
// blocks each own 32 value columns, so building P there took its products V / 32 times a chunk
// (and twice in each pair of output warps): ~45% of that kernel's time at K = V = 128.
template <typename T>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_qk_fragments_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GdnShape s = p.shape;
  const int K = int(s.K), ldk = K + 8;
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = q_s + kC * ldk;
  float* gamma_s = reinterpret_cast<float*>(k_s + kC * ldk);
  const int64_t n = blockIdx.x, hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t t0 = n * kC, chunk = (b * s.HV + hv) * ws.num_chunks + n;
  const int L = chunk_rows(s.T, n);
  const int warp = int(threadIdx.x >> 5);
  const int64_t rows = ((b * s.T + t0) * s.H + h) * K;
  load_rows(q_s, ldk, static_cast<const T*>(p.q) + rows, s.H * K, K, L);
  load_rows(k_s, ldk, static_cast<const T*>(p.k) + rows, s.H * K, K, L);
  if (threadIdx.x < kC) gamma_s[threadIdx.x] = ws.gamma[chunk * kC + threadIdx.x];
  __syncthreads();
  float acc[8][4];
  causal_qk<T>(acc, q_s, k_s, ldk, K, gamma_s, L, warp);
  uint4* out = reinterpret_cast<uint4*>(ws.qk_fragments + chunk * kQkFragmentWords) + 2 * lane_id();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    if (ks > warp) break;
    uint32_t hi[4], lo[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float* c = acc[2 * ks + (i >> 1)] + 2 * (i & 1);  // the lda_split element order
      split2<T>(c[0], c[1], hi[i], lo[i]);
    }
    out[qk_slot(warp, ks) * 64] = make_uint4(hi[0], hi[1], hi[2], hi[3]);
    out[qk_slot(warp, ks) * 64 + 1] = make_uint4(lo[0], lo[1], lo[2], lo[3]);
  }
}

// The chain: warps 0-3, warp w owning state rows [w K/4, (w+1) K/4) and U rows [16w, 16w + 16),
// as the plain scan (scan.cuh), which this follows step for step but for where S0 and U go.
template <typename T, int kK>
__device__ __forceinline__ void scan_output_chain(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                                  unsigned char* smem) {
  using Lay = ScanOutputLayout<kK>;
  constexpr int kMT = kK / 64, kLdw = Lay::kLdw, kLdp = Lay::kLdp;
  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, N = ws.num_chunks;
  const int64_t v0 = int64_t(blockIdx.x) * kBV, head = b * s.HV + hv;
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;
  const int row0 = warp * (kK / 4);
  auto stage = [&](int buf) { return smem + buf * Lay::kStage; };
  auto s_plane = [&](int set, int lo) { return reinterpret_cast<T*>(smem + Lay::kOffS + (2 * set + lo) * Lay::kSPlane); };
  T* Ud_hi = reinterpret_cast<T*>(smem + Lay::kOffUd);
  T* Ud_lo = Ud_hi + kC * kLdp;

  // A thread's copies have fixed offsets within a chunk (as in the scan): computed once.
  constexpr int kWVec = kK / 4, kWRows = kThreads / kWVec;
  constexpr int kUVec = kBV / 4, kURows = kThreads / kUVec;
  const int w_row = tid / kWVec, u_row = tid / kUVec;
  const float* w_src_thread = ws.W + head * N * kC * kK + w_row * kK + (tid % kWVec) * 4;
  const float* u_src_thread = ws.U + head * N * kC * V + v0 + u_row * V + (tid % kUVec) * 4;
  const uint32_t smem0 = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t w_dst_thread = smem0 + Lay::kOffW + 4 * (w_row * kLdw + (tid % kWVec) * 4);
  const uint32_t u_dst_thread = smem0 + Lay::kOffU0 + 4 * (u_row * kLdBV + (tid % kUVec) * 4);
  // W and U0 of chunk n (the output warps copy q, k and gamma).
  auto issue_copies = [&](int64_t n, int buf) {
    const uint32_t st = uint32_t(buf * Lay::kStage);
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
    const int L = chunk_rows(s.T, n);
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
    // Chunk n's W and U0 (each thread waited for its own copies) and S0 planes are visible to the
    // chain; every chain read of chunk n - 1's tiles and of the U planes is done, so the output
    // may copy chunk n + 1's q, k, gamma over n - 1's, and the chain n + 1's W, U0.
    ptx::named_sync(kBarChain, kThreads);
    ptx::named_arrive(kBarReady + buf, kScanOutputThreads);
    if (n + 1 < N) issue_copies(n + 1, buf ^ 1);

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
    if (p.use_delta) scan_subtract_ws<T, kK>(u, W_s, S_hi, S_lo, warp);
    ptx::named_sync(kBarQkReady + buf, kScanOutputThreads);  // chunk n's k and gamma have landed
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
    scan_update_state<T, kK>(S, g_last, k_s, Ud_hi, Ud_lo, row0);
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

// The output: warps 4-11, two per row block of a chunk, each taking 16 of the 32 columns: output
// warp w owns columns [16 c, 16 c + 16), c = w / 4, of rows [16 r, 16 r + 16), r = w % 4 for c = 0
// and 3 - w % 4 for c = 1, so that the two output warps beside chain warp s (warps 4 + s and 8 + s,
// one scheduler) hold row blocks s and 3 - s: P's lower blocks and P U cost 5 row-block units on
// every scheduler. Each reads P's fragments of its row block. The pipelined output's
// products (output.cuh) on the chain's S0 planes and U, per 16 x 8 tile of o in its order.
template <typename T, int kK>
__device__ __forceinline__ void scan_output_out(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                                unsigned char* smem) {
  using Lay = ScanOutputLayout<kK>;
  constexpr int kLdk = Lay::kLdk, kLdp = Lay::kLdp;
  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, N = ws.num_chunks;
  const int64_t v0 = int64_t(blockIdx.x) * kBV;
  const int w = int(threadIdx.x >> 5) - 4, half = w >> 2, warp = half ? 3 - (w & 3) : (w & 3);
  const int g = lane_id() >> 2;
  T* o_base = static_cast<T*>(p.o) + (b * s.T * s.HV + hv) * V + v0 + 16 * half;

  // q, k rows and gamma of chunk n into stage `buf` (rows past the end zero-filled, not read);
  // a thread's pieces have fixed offsets within a chunk.
  constexpr int kOutThreads = kScanOutputThreads - kThreads;
  constexpr int kVec = kK / 8, kRows = kOutThreads / kVec;  // 16-byte pieces per row, rows per pass
  static_assert(kC % kRows == 0, "whole passes");
  const int tid = int(threadIdx.x) - kThreads, row = tid / kVec;
  const int64_t h = hv / (s.HV / s.H), head = b * s.HV + hv, row_stride = s.H * kK;
  const int64_t qk_thread = (b * s.T * s.H + h) * kK + row * row_stride + (tid % kVec) * 8;
  const T* q_base = static_cast<const T*>(p.q);
  const T* k_base = static_cast<const T*>(p.k);
  const uint32_t dst_thread = uint32_t(__cvta_generic_to_shared(smem)) + 2 * (row * kLdk + (tid % kVec) * 8);
  auto issue_qk = [&](int64_t n, int buf) {
    const int64_t t0 = n * kC;
    const int L = chunk_rows(s.T, n);
    const uint32_t st = dst_thread + uint32_t(buf * Lay::kStage);
#pragma unroll
    for (int i = 0; i < kC / kRows; ++i) {
      const bool in = row + i * kRows < L;
      const int64_t off = qk_thread + (t0 + i * kRows) * row_stride;
      cp_async16(st + 2 * i * kRows * kLdk, in ? k_base + off : k_base, in);
      cp_async16(st + Lay::kOffQ + 2 * i * kRows * kLdk, in ? q_base + off : q_base, in);
    }
    if (tid < kC / 4)
      cp_async16(uint32_t(__cvta_generic_to_shared(smem)) + uint32_t(buf * Lay::kStage + Lay::kOffG) + 16 * tid,
                 ws.gamma + (head * N + n) * kC + 4 * tid, true);
    cp_async_commit();
  };

  issue_qk(0, 0);
  cp_async_wait<0>();
  ptx::named_arrive(kBarQkReady, kScanOutputThreads);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t0 = n * kC;
    const int L = chunk_rows(s.T, n);
    const int buf = int(n & 1);
    const unsigned char* st = smem + buf * Lay::kStage;
    const T* q_s = reinterpret_cast<const T*>(st + Lay::kOffQ);
    const float* gamma_s = reinterpret_cast<const float*>(st + Lay::kOffG);
    const T* S_hi = reinterpret_cast<const T*>(smem + Lay::kOffS + 2 * buf * Lay::kSPlane) + 16 * half;
    const T* S_lo = S_hi + kK * kLdp;
    const float* U_s = reinterpret_cast<const float*>(smem + Lay::kOffU + buf * Lay::kU) + 16 * half;

    // P's split fragments (gdn_wy_ut_qk_fragments_kernel), loaded before the wait for S0.
    uint32_t qa[kK / 16][4], ph[4][4], pl[4][4];
    {
      const uint4* frag = reinterpret_cast<const uint4*>(ws.qk_fragments + (head * N + n) * kQkFragmentWords) +
                          2 * lane_id();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        if (ks > warp) break;
        const uint4 hi = __ldg(frag + qk_slot(warp, ks) * 64), lo = __ldg(frag + qk_slot(warp, ks) * 64 + 1);
        ph[ks][0] = hi.x, ph[ks][1] = hi.y, ph[ks][2] = hi.z, ph[ks][3] = hi.w;
        pl[ks][0] = lo.x, pl[ks][1] = lo.y, pl[ks][2] = lo.z, pl[ks][3] = lo.w;
      }
    }
    // Every output thread's copies of chunk n are visible to all (each waited for its own
    // before its qk_ready), S0 is published, and the chain is done with chunk n - 1's k and
    // gamma: n + 1's go there.
    ptx::named_sync(kBarReady + buf, kScanOutputThreads);
    if (n + 1 < N) issue_qk(n + 1, buf ^ 1);
    // Q's fragments; the rows' decay. Then q and gamma are free.
#pragma unroll
    for (int ks = 0; ks < kK / 16; ++ks) ldsm_a(qa[ks], q_s + 16 * warp * kLdk + 16 * ks, kLdk);
    const float decay_lo = expf(gamma_s[16 * warp + g]), decay_hi = expf(gamma_s[16 * warp + g + 8]);

    // Q S0: Q exact, S0 split (two products); then the decay of each row.
    float acc[2][4] = {};
#pragma unroll
    for (int ks = 0; ks < kK / 16; ++ks) {
      uint32_t bh[2][2], bl[2][2];
      ldsm_b2_trans(bh, S_hi + 16 * ks * kLdp, kLdp);
      ldsm_b2_trans(bl, S_lo + 16 * ks * kLdp, kLdp);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        Mma<T>::run(acc[j], qa[ks], bl[j]);
        Mma<T>::run(acc[j], qa[ks], bh[j]);
      }
    }
    scale_rows<2>(acc, decay_lo, decay_hi);
    // Chunk n + 1's q, k, gamma have had P and Q S0 to land: the chain needs them in its next
    // step, so they are published now, not after this chunk's o.
    if (n + 1 < N) {
      cp_async_wait<0>();
      ptx::named_arrive(kBarQkReady + (buf ^ 1), kScanOutputThreads);
    }

    ptx::named_sync(kBarUReady + buf, kScanOutputThreads);
    // + P U: both float32, three products; P is zero past the diagonal block.
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if (ks > warp) break;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        uint32_t bh[2], bl[2];
        ldb_split<T>(bh, bl, U_s + 16 * ks * kLdBV + 8 * nt, kLdBV);
        Mma<T>::run(acc[nt], pl[ks], bh);
        Mma<T>::run(acc[nt], ph[ks], bl);
        Mma<T>::run(acc[nt], ph[ks], bh);
      }
    }
    store_o<T, 2>(o_base + t0 * s.HV * V, s.HV * V, p.scale, acc, L, warp);
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
