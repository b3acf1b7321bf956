// wy_ut stage 2, the state scan: per (b, hv) and 32 value columns, sequential over the chunks,
//   U = U0 - W S0;  S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
// the state slice S (K x 32) in float32 mma accumulators; it saves the entering state and U to
// the workspace for stage 3, and hT at the end. Grid (V/32, HV, B), one block per SM, so its
// registers cost no occupancy. The next chunk's k, W, U0 and gamma are prefetched (cp.async
// double buffer), S and U split once per step into shared hi/lo planes; a thread's copies of each
// chunk's tiles have fixed offsets, computed once.
// Two-level scan (kSeg), where the plain scan's V/32 x HV x B blocks leave most SMs idle
// (wy_ut_scan_groups in kernels/plans/launch_plans.h decides): the chunks in G groups,
// S_end = M S_enter + R per group (M = the product of the chunks' exp(gL) I - K~^T W, K x K; R the
// end from a zero state). Pass 1: group 0 from h0 as the plain scan does, groups 1 .. G-2 from a
// zero state (R) and, in K/32 more blocks, from the identity with U0 = 0 (M's columns), writing
// only their ends. The combine (gdn_wy_ut_group_combine_kernel): E_g = M_{g-1} E_{g-1} + R_{g-1}
// for g = 2 .. G-1 (float32 FMAs, 8 value columns a block, M streamed through two cp.async
// stages). Pass 3: groups 1 .. G-1 from E_g, writing U, states and hT. ~2N/G sequential steps
// instead of N, for about three times the scan's products.
// Budget, one stage: k 64 x (K+8) x 2 B (17 KiB at 128) + W 64 x (K+8) x 4 B (34 KiB) + U0
// 64 x 36 x 4 B (9 KiB) + gamma 256 B; planes (K+64) x 40 x 2 B x 2 for S0 and
// exp(gL - gamma) .* U (30 KiB at 128). 2 stages + planes = 150.5 KiB at K = 128, 1 stage +
// planes = 158.3 KiB at 256. Registers: state K x 32 / 128 threads (32 floats at K = 128) + U 16
// + W S partial sums 32 + the copies' per-thread addresses; ptxas (bf16 / fp16): 127 / 128,
// 127 / 127, 166 / 170 at K = 64, 128, 256; kSeg 128 / 130, 128 / 128, 168 / 170 (24 bytes
// spilled by the bf16 K = 256 instance only). The combine: E's slice K x 12 floats + 2 stages of
// (M's slab K x 68 + R's slice K x 12) floats = 43 / 86 / 172 KiB at K = 64 / 128 / 256; 56 / 64
// / 75 registers.
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

// ---------------------------------------------------------------------------------------------
// Stage 2: the state of one (b, hv) and 32 value columns, carried through the chunks in order.
// Warp w owns state rows [w K/4, (w+1) K/4) (kMT m-tiles of 16 x 32) and U rows [16w, 16w + 16).
// Only the products depend on the previous chunk, so the next chunk's k, W, U0 and gamma are
// copied into the other half of a double buffer (cp.async) while this chunk is computed; the
// sequential chain is then shared-memory and tensor-core work only. At K = 256 two buffers do not
// fit, and the copy is issued at the top of the step instead (no overlap).
template <int kK>
struct StateLayout {
  static constexpr int kStages = kK == 256 ? 1 : 2;
  static constexpr int kLdk = kK + 8;    // 16-bit k rows
  static constexpr int kLdw = kK + 8;    // float32 W rows (8 floats apart mod 32 banks)
  static constexpr int kLdp = kBV + 8;   // 16-bit hi/lo planes of S and U: 80-byte rows
  static constexpr int kK16 = kC * kLdk * 2, kW = kC * kLdw * 4, kU0 = kC * kLdBV * 4, kG = kC * 4;
  // One stage: k, W, U0, gamma; every part a multiple of 16 bytes.
  static constexpr int kOffW = kK16, kOffU0 = kOffW + kW, kOffG = kOffU0 + kU0;
  static constexpr int kStage = kOffG + kG;
  static constexpr int kOffPlanes = kStages * kStage;
  static constexpr int kSPlane = kK * kLdp * 2, kUPlane = kC * kLdp * 2;
  static constexpr int kBytes = kOffPlanes + 2 * kSPlane + 2 * kUPlane;
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
};

// The two-level scan (kSeg): which groups of chunks a launch's blocks take and how (launcher
// `states_for_k` below; the layout of the group buffers is GdnWyUtWorkspace's).
struct ScanPass {
  int64_t chunks_per_group = 0;  // every group but the last has this many chunks
  int64_t first_group = 0;       // group of blockIdx.z % grid_groups == 0
  int64_t grid_groups = 1;       // groups in this launch: gridDim.z = B x grid_groups
  bool local = false;            // pass 1: groups >= 1 from a zero entering state, plus their transition
};

// The scan's two products, shared with the scan beside the output (scan_output.cuh) so both give
// the same bits. Warp w: U rows [16w, 16w + 16) of 32 columns; state rows row0 + [0, K/4).
// u -= W S0: W float32 (rows of kK + 8), S0 as hi/lo planes (rows of kBV + 8), three products,
// even and odd k steps in two partial sums (half the dependent chain of mma instructions).
template <typename T, int kK>
__device__ __forceinline__ void scan_subtract_ws(float (&u)[4][4], const float* W_s, const T* S_hi, const T* S_lo,
                                                 int warp) {
  constexpr int kLdw = kK + 8, kLdp = kBV + 8;
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

// S = exp(gL) S + K^T Ud: K exact (k rows of kK + 8), Ud = exp(gL - gamma) .* U as hi/lo planes,
// two products.
template <typename T, int kK>
__device__ __forceinline__ void scan_update_state(float (&S)[kK / 64][4][4], float g_last, const T* k_s,
                                                  const T* U_hi, const T* U_lo, int row0) {
  constexpr int kMT = kK / 64, kLdk = kK + 8, kLdp = kBV + 8;
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
      ldsm_b2_trans(&bh[2 * np], U_hi + 16 * ks * kLdp + 16 * np, kLdp);
      ldsm_b2_trans(&bl[2 * np], U_lo + 16 * ks * kLdp + 16 * np, kLdp);
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

template <typename T, int kK, bool kSeg>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_state_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const ScanPass pass) {
  using Lay = StateLayout<kK>;
  constexpr int kMT = kK / 64, kLdk = Lay::kLdk, kLdw = Lay::kLdw, kLdp = Lay::kLdp;
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* planes = smem + Lay::kOffPlanes;
  T* S_hi = reinterpret_cast<T*>(planes);  // [K][kLdp] entering state, split
  T* S_lo = S_hi + kK * kLdp;
  T* U_hi = S_lo + kK * kLdp;              // [C][kLdp] exp(gL - gamma) .* U, split
  T* U_lo = U_hi + kC * kLdp;

  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, N = ws.num_chunks, G = ws.scan_groups;
  const int64_t b = kSeg ? blockIdx.z / pass.grid_groups : blockIdx.z;
  const int64_t group = kSeg ? pass.first_group + blockIdx.z % pass.grid_groups : 0;
  // Pass 1's groups >= 1 scan from a zero state (their R) and, in the blocks past the value
  // slices, the identity's columns with U0 = 0 (their transition M): S_end = M S_enter + R.
  const bool local = kSeg && pass.local && group > 0;
  const bool transition = kSeg && int64_t(blockIdx.x) >= V / kBV;
  if (transition && !local) return;  // group 0 starts from h0: no transition wanted
  const int64_t v0 = (transition ? int64_t(blockIdx.x) - V / kBV : int64_t(blockIdx.x)) * kBV;
  const int64_t h = hv / (s.HV / s.H), head = b * s.HV + hv;
  const int64_t n_begin = kSeg ? group * pass.chunks_per_group : 0;
  const int64_t n_end = kSeg && n_begin + pass.chunks_per_group < N ? n_begin + pass.chunks_per_group : N;
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;
  const int row0 = warp * (kK / 4);

  // The tiles of chunk n in buffer `buf`: k rows, zero past the end; W, U0 and gamma (the
  // workspace pads every chunk to 64 rows with zeros).
  auto k_tile = [&](int buf) { return reinterpret_cast<T*>(smem + buf * Lay::kStage); };
  auto w_tile = [&](int buf) { return reinterpret_cast<float*>(smem + buf * Lay::kStage + Lay::kOffW); };
  auto u_tile = [&](int buf) { return reinterpret_cast<float*>(smem + buf * Lay::kStage + Lay::kOffU0); };
  auto g_tile = [&](int buf) { return reinterpret_cast<float*>(smem + buf * Lay::kStage + Lay::kOffG); };
  // Each thread copies the same 16-byte pieces of every chunk (its row and column fixed, the rows
  // kThreads / vectors-per-row apart), so the addresses are computed once here and a copy is one
  // add from a chunk's base: the per-chunk issue is a few instructions per copy, not a division.
  constexpr int kKVec = kK / 8, kKRows = kThreads / kKVec;  // k: 16-byte pieces per row, rows per pass
  constexpr int kWVec = kK / 4, kWRows = kThreads / kWVec;  // W (float32)
  constexpr int kUVec = kBV / 4, kURows = kThreads / kUVec; // U0 (float32, 32 columns)
  static_assert(kThreads % kKVec == 0 && kThreads % kWVec == 0 && kC % kKRows == 0 && kC % kWRows == 0,
                "a thread's pieces repeat every kThreads");
  const int k_row = tid / kKVec, w_row = tid / kWVec, u_row = tid / kUVec;
  const int64_t k_row_stride = s.H * kK;  // elements between consecutive tokens' k rows
  const T* k_head = static_cast<const T*>(p.k) + (b * s.T * s.H + h) * kK;
  const T* k_src_thread = k_head + k_row * k_row_stride + (tid % kKVec) * 8;
  const float* w_src_thread = ws.W + head * N * kC * kK + w_row * kK + (tid % kWVec) * 4;
  const float* u_src_thread = ws.U + head * N * kC * V + v0 + u_row * V + (tid % kUVec) * 4;
  const uint32_t smem0 = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t k_dst_thread = smem0 + 2 * (k_row * kLdk + (tid % kKVec) * 8);
  const uint32_t w_dst_thread = smem0 + Lay::kOffW + 4 * (w_row * kLdw + (tid % kWVec) * 4);
  const uint32_t u_dst_thread = smem0 + Lay::kOffU0 + 4 * (u_row * kLdBV + (tid % kUVec) * 4);
  auto issue_copies = [&](int64_t n, int buf) {
    const int64_t t0 = n * kC;
    const int L = chunk_rows(s.T, n);
    const uint32_t stage = uint32_t(buf * Lay::kStage);
    const T* k_src = k_src_thread + t0 * k_row_stride;
#pragma unroll
    for (int i = 0; i < kC / kKRows; ++i) {  // rows past the end: zero-filled, not read
      const bool in = k_row + i * kKRows < L;
      cp_async16(k_dst_thread + stage + 2 * i * kKRows * kLdk, in ? k_src + i * kKRows * k_row_stride : k_head, in);
    }
    if (p.use_delta) {
      const float* w_src = w_src_thread + n * kC * kK;
#pragma unroll
      for (int i = 0; i < kC / kWRows; ++i)
        cp_async16(w_dst_thread + stage + 4 * i * kWRows * kLdw, w_src + i * kWRows * kK, true);
    }
    if (!transition) {  // the transition's U0 is zero
      const float* u_src = u_src_thread + n * kC * V;
#pragma unroll
      for (int i = 0; i < kC / kURows; ++i)
        cp_async16(u_dst_thread + stage + 4 * i * kURows * kLdBV, u_src + i * kURows * V, true);
    }
    if (tid < kC / 4) cp_async16(g_tile(buf) + 4 * tid, ws.gamma + (head * N + n) * kC + 4 * tid, true);
    cp_async_commit();
  };

  float S[kMT][4][4];
  {
    // The entering state (row stride V): h0 for group 0, the combined state for a later group of
    // pass 3, zero for pass 1's local value columns; the transition's starts as the identity.
    const float* enter = nullptr;
    if (group == 0) enter = p.h0 ? p.h0 + head * kK * V + v0 : nullptr;
    else if (!local) enter = ws.group_enters + (head * G + group) * kK * V + v0;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int64_t r = row0 + 16 * mt + g + 8 * hh, c = 8 * nt + t;
          float2 x = enter ? *reinterpret_cast<const float2*>(enter + r * V + c) : make_float2(0.f, 0.f);
          if (transition) x = make_float2(r == v0 + c ? 1.f : 0.f, r == v0 + c + 1 ? 1.f : 0.f);
          S[mt][nt][2 * hh] = x.x;
          S[mt][nt][2 * hh + 1] = x.y;
        }
  }

  if (Lay::kStages == 2) issue_copies(n_begin, 0);
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int64_t chunk = head * N + n;
    const int L = chunk_rows(s.T, n);
    const int buf = Lay::kStages == 2 ? int((n - n_begin) & 1) : 0;
    if (Lay::kStages == 1) {
      __syncthreads();  // every read of the previous chunk's tiles is done
      issue_copies(n, 0);
    }
    cp_async_wait<0>();
    __syncthreads();  // chunk n's tiles are visible; the previous step's reads are done
    if (Lay::kStages == 2 && n + 1 < n_end) issue_copies(n + 1, buf ^ 1);
    const T* k_s = k_tile(buf);
    const float* W_s = w_tile(buf);
    const float* U0_s = u_tile(buf);
    const float* gamma_s = g_tile(buf);

    {  // the entering state: split into the B operand planes of W S; to the workspace for stage 3
      float* st = ws.states + chunk * kK * V + v0;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            const int r = row0 + 16 * mt + g + 8 * hh, c = 8 * nt + t;
            const float2 x = make_float2(S[mt][nt][2 * hh], S[mt][nt][2 * hh + 1]);
            uint32_t hi, lo;
            split2<T>(x.x, x.y, hi, lo);
            *reinterpret_cast<uint32_t*>(S_hi + r * kLdp + c) = hi;
            *reinterpret_cast<uint32_t*>(S_lo + r * kLdp + c) = lo;
            if (!local) *reinterpret_cast<float2*>(st + int64_t(r) * V + c) = x;
          }
    }
    __syncthreads();

    // U = U0 - W S: W and S both float32, three products (Wh Sh + Wl Sh + Wh Sl). Two partial sums
    // (even and odd k steps) halve the dependent chain of mma instructions.
    float u[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float* u0 = U0_s + (16 * warp + g + 8 * hh) * kLdBV + 8 * nt + t;
        const float2 x = transition ? make_float2(0.f, 0.f) : *reinterpret_cast<const float2*>(u0);
        u[nt][2 * hh] = x.x;
        u[nt][2 * hh + 1] = x.y;
      }
    if (p.use_delta) scan_subtract_ws<T, kK>(u, W_s, S_hi, S_lo, warp);
    const float g_last = gamma_s[L - 1];
    float* Ub = ws.U + chunk * kC * V + v0;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int r = 16 * warp + g + 8 * hh;
      const float d = expf(g_last - gamma_s[r]);  // rows past the end: gamma 0, U 0
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int c = 8 * nt + t;
        const float u0 = u[nt][2 * hh], u1 = u[nt][2 * hh + 1];
        if (!local) *reinterpret_cast<float2*>(Ub + int64_t(r) * V + c) = make_float2(u0, u1);
        uint32_t hi, lo;
        split2<T>(d * u0, d * u1, hi, lo);
        *reinterpret_cast<uint32_t*>(U_hi + r * kLdp + c) = hi;
        *reinterpret_cast<uint32_t*>(U_lo + r * kLdp + c) = lo;
      }
    }
    __syncthreads();

    // S = exp(gL) S + K^T (exp(gL - gamma) .* U): K exact, U split (two products).
    scan_update_state<T, kK>(S, g_last, k_s, U_hi, U_lo, row0);
  }

  // Where the final state goes: hT after the last chunk; else (two-level scan) pass 1's local
  // group to its R or M columns of group_ends, pass 1's group 0 to the state entering group 1.
  float* end = nullptr;
  int64_t ld = V;
  if (n_end == N) end = p.hT ? p.hT + head * kK * V + v0 : nullptr;
  else if (local) {
    ld = V + kK;
    end = ws.group_ends + (head * G + group) * kK * ld + (transition ? V : 0) + v0;
  } else if (kSeg && pass.local) end = ws.group_enters + ((head * G + group + 1) * kK) * V + v0;
  if (end) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int64_t r = row0 + 16 * mt + g + 8 * hh;
          *reinterpret_cast<float2*>(end + r * ld + 8 * nt + t) = make_float2(S[mt][nt][2 * hh], S[mt][nt][2 * hh + 1]);
        }
  }
}

// The two-level scan's middle pass: the state entering each group g >= 2, from the one entering
// g - 1 and that group's local end: E_g = M_{g-1} E_{g-1} + R_{g-1} (float32 FMAs, a fixed order).
// One block per (b, hv, kCombineCols value columns), sequential over the groups: narrow slices, so
// that the chain's work per group is spread over many SMs. M and R do not depend on the chain, so
// they stream through two cp.async stages (M in slabs of 64 columns, R's slice with a group's first
// slab) while the chain computes; E_{g-1}'s slice stays in shared memory. Thread i holds rows
// i / 2 + 64 m of columns [4 (i % 2), 4 (i % 2) + 4). (Wider blocks, 32 columns with one dependent
// round trip per 16 of M's columns, took 23 us a group at K = 128.)
constexpr int kCombineCols = 8;

template <int kK>
struct CombineLayout {
  static constexpr int kJ = 64, kSlabs = kK / kJ;  // M's columns per slab
  static constexpr int kLdE = kCombineCols + 4, kLdM = kJ + 4;  // rows 16-byte aligned
  static constexpr int kE = kK * kLdE * 4, kM = kK * kLdM * 4;
  static constexpr int kStage = kM + kE;  // M's slab, then R's slice (E's layout)
  static constexpr int kBytes = kE + 2 * kStage;
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
};

template <int kK>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_group_combine_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  using Lay = CombineLayout<kK>;
  constexpr int kRows = kK / 64, kJ = Lay::kJ, kLdE = Lay::kLdE, kLdM = Lay::kLdM, kVec = kCombineCols / 4;
  extern __shared__ __align__(16) unsigned char smem[];
  float* E_s = reinterpret_cast<float*>(smem);  // [K][kLdE]
  auto M_s = [&](int buf) { return reinterpret_cast<float*>(smem + Lay::kE + buf * Lay::kStage); };
  auto R_s = [&](int buf) { return reinterpret_cast<float*>(smem + Lay::kE + buf * Lay::kStage + Lay::kM); };
  const int64_t V = p.shape.V, G = ws.scan_groups, ld_end = V + kK;
  const int64_t head = int64_t(blockIdx.z) * p.shape.HV + blockIdx.y, v0 = int64_t(blockIdx.x) * kCombineCols;
  const int tid = threadIdx.x, r0 = tid / kVec, c0 = (tid % kVec) * 4;
  const int64_t items = (G - 2) * Lay::kSlabs;  // (group, slab) in order
  // Item q: slab q % kSlabs of M_{g-1}, g = 2 + q / kSlabs, and with its first slab R_{g-1}.
  auto issue = [&](int64_t q, int buf) {
    const float* ends = ws.group_ends + (head * G + 1 + q / Lay::kSlabs) * kK * ld_end;
    const int j0 = int(q % Lay::kSlabs) * kJ;
    for (int i = tid; i < kK * (kJ / 4); i += kThreads) {
      const int r = i / (kJ / 4), c = (i % (kJ / 4)) * 4;
      cp_async16(M_s(buf) + r * kLdM + c, ends + int64_t(r) * ld_end + V + j0 + c, true);
    }
    if (j0 == 0)
      for (int i = tid; i < kK * kVec; i += kThreads) {
        const int r = i / kVec, c = (i % kVec) * 4;
        cp_async16(R_s(buf) + r * kLdE + c, ends + int64_t(r) * ld_end + v0 + c, true);
      }
    cp_async_commit();
  };
  if (items > 0) issue(0, 0);
  const float* enter1 = ws.group_enters + (head * G + 1) * kK * V + v0;
  for (int i = tid; i < kK * kVec; i += kThreads)
    *reinterpret_cast<float4*>(E_s + (i / kVec) * kLdE + (i % kVec) * 4) =
        *reinterpret_cast<const float4*>(enter1 + int64_t(i / kVec) * V + (i % kVec) * 4);
  float acc[kRows][4];
  for (int64_t q = 0; q < items; ++q) {
    const int buf = int(q & 1), j0 = int(q % Lay::kSlabs) * kJ;
    cp_async_wait<0>();
    __syncthreads();  // item q visible; E_s written; every read of the other stage done
    if (q + 1 < items) issue(q + 1, buf ^ 1);
    if (j0 == 0) {
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        const float4 x = *reinterpret_cast<const float4*>(R_s(buf) + (r0 + 64 * m) * kLdE + c0);
        acc[m][0] = x.x, acc[m][1] = x.y, acc[m][2] = x.z, acc[m][3] = x.w;
      }
    }
    const float* M = M_s(buf);
#pragma unroll 8
    for (int j = 0; j < kJ; ++j) {
      const float4 e = *reinterpret_cast<const float4*>(E_s + (j0 + j) * kLdE + c0);
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        const float w = M[(r0 + 64 * m) * kLdM + j];
        acc[m][0] = fmaf(w, e.x, acc[m][0]);
        acc[m][1] = fmaf(w, e.y, acc[m][1]);
        acc[m][2] = fmaf(w, e.z, acc[m][2]);
        acc[m][3] = fmaf(w, e.w, acc[m][3]);
      }
    }
    if (j0 + kJ == kK) {  // group g done: E_g replaces E_{g-1}
      __syncthreads();    // every read of E_{g-1} is done
      float* enter = ws.group_enters + (head * G + 2 + q / Lay::kSlabs) * kK * V + v0;
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        const float4 x = make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
        *reinterpret_cast<float4*>(E_s + (r0 + 64 * m) * kLdE + c0) = x;
        *reinterpret_cast<float4*>(enter + int64_t(r0 + 64 * m) * V + c0) = x;
      }
    }
  }
}

}  // namespace
