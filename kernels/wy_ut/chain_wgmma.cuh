// wy_ut stages 2 and 3 on Hopper's warpgroup products (sm_90a), after prepare, in two launches:
//   the operands kernel, per (b, hv, chunk) in parallel: the chain's fp16 operands q,
//     K~^T = (K .* exp(gL - gamma))^T and P = (Q K^T) .* D .* causal (its own wgmma) into the
//     workspace, beside prepare's W (fp16 in the same core layout for this plan), and exp(gamma)
//     over gamma in place (the chain's only use of it);
//   the chain kernel, per (b, hv, 64 value columns), sequential over the chunks, two warpgroups:
//     the producer (warps 0-3) only copies (cp.async) each chunk's operands and U0 into a stage a
//       chunk ahead, and stores each chunk's o as whole rows once the chain has left it there;
//     the chain (warps 4-7) holds the transposed state S^T (64 value rows x K) in float32 registers
//       and per chunk runs, each a wgmma whose A operand is registers:
//         U^T = U0^T - S0^T W^T            (64 x 64, k = K)
//         O^T = S0^T Q^T                   (64 x 64, k = K, beside the next)
//         S^T = exp(gL) S0^T + U^T K~      (64 x K, k = 64)
//         O^T = diag(exp(gamma)) O^T + U^T P^T   (k = 64)
//       then o = scale O into the stage (stmatrix, transposed), rows past the sequence end never
//       stored.
// Why: the three-kernel scan hands S0 and U between warps through shared hi/lo planes and spends
// ~2.5 us a chunk in barriers and shared-memory round trips (docs/kernels/wy_ut.md). Here the
// chain's only hand-offs are register conversions: an accumulator's columns, converted in pairs,
// are the next product's A operand, so S and U never leave the chain's registers, and its products
// run on all four tensor cores of the SM at once. The operands are built apart because building
// them beside the chain made one producer warp a scheduler the bound (docs/log/runs-112-.md, runs
// 130-132), and they depend on no state.
// Precision: every operand is fp16 (11 significant bits, 3 more than bf16 at the same rate). The
// two that are not bounded by the inputs, S0 and U, are scaled per value row by a power of two
// that puts the row's largest magnitude in [2^14, 2^15) (exact: the accumulators are unscaled by
// the inverse power), so their range is float32's; q, K~, W and P are bounded by |q| |k| and are
// taken as they are (|x| < 65504 is required of them, as of the fp16 splits of the other
// kernels). bf16 inputs convert to fp16 exactly within that range.
// Hand-offs (named barriers, one id a stage each; chunk n in stage n % stages): full (producer ->
// chain: the stage's copies landed and are fenced for the async proxy), empty (chain -> producer:
// every product reading the stage has completed; only for n + stages < N, so each side arrives as
// often as the other waits) and out (chain -> producer: the stage's o rows are written).
// Budget at K = 128 (K = 64): a stage holds W, q (64 x K fp16 each), K~^T (K x 64 fp16), P (64 x 64
// fp16), U0 (64 x 68 float32), exp(gamma) (64 floats), o (64 x 72 16-bit):
// 82.3 KiB (58.3): two stages, 165 KiB (three, 175 KiB): one block per SM.
// Registers (K = 128): the chain's S^T 64, its fp16 A operand 32, U^T 32 and its operand 16, O^T
// 32; 256 threads at one block per SM allow 255 each.
// Included only by wy_ut/launch.cu: wy_ut and fused_conv are one translation unit, the kernels and
// their launchers in one anonymous namespace.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/ptx.cuh"
#include "kernels/common/wgmma.cuh"
#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

constexpr int kChainThreads = 2 * kThreads;  // the producer's warpgroup, then the chain's
constexpr int kChainValues = 64;             // value columns a block: the M of every chain product
constexpr int kChainMaxStages = 3;
// Named barriers, one id a stage for each hand-off.
constexpr int kChainBarFull = 1, kChainBarEmpty = 1 + kChainMaxStages, kChainBarOut = 1 + 2 * kChainMaxStages,
              kChainBarProducer = 1 + 3 * kChainMaxStages;

// The chain's fp16 operands of one chunk, as the operands kernel writes them to the workspace and
// the chain kernel copies them, byte for byte, into a stage: W and q in W's float32 part of the
// chunk (prepare writes W there), K~^T and P in the part of the entering states (not written by
// this plan: K V x 4 bytes a chunk hold K x 64 x 2 + 64 x 64 x 2 for K <= 2V, V >= 64).
template <int kK>
struct ChainOperands {
  static constexpr int kW = kC * kK * 2, kQ = kC * kK * 2, kKt = kK * kC * 2, kP = kC * kC * 2;
  static constexpr int kOffW = 0, kOffQ = kW;  // in the chunk's W part
  static constexpr int kOffKt = 0, kOffP = kKt, kStatesPart = kKt + kP;  // in the states part
};

template <int kK>
struct ChainWgmmaLayout {
  using Ops = ChainOperands<kK>;
  // U0 rows (floats): the chain's reads of (8 j + tq, 16 w + g) fall in 32 distinct banks.
  static constexpr int kLdU = kChainValues + 4;
  static constexpr int kLdO = kChainValues + 8;  // o rows (16-bit): stmatrix rows 16 bytes a bank group apart
  static constexpr int kU0 = kC * kLdU * 4, kExpG = kC * 4, kO = kC * kLdO * 2;
  // A stage: W, q, K~^T, P (the workspace's two parts in order), U0, exp(gamma),
  // and the chunk's o for the producer to store.
  static constexpr int kOffW = 0, kOffQ = Ops::kW, kOffKt = kOffQ + Ops::kQ, kOffP = kOffKt + Ops::kKt;
  static constexpr int kOffU0 = kOffP + Ops::kP, kOffExpG = kOffU0 + kU0, kOffO = kOffExpG + kExpG;
  static constexpr int kStage = (kOffO + kO + 127) / 128 * 128;
  static constexpr int kStages = 3 * kStage <= 227 * 1024 ? 3 : 2;  // 2 at K = 128, 3 at K = 64
  static constexpr int kBytes = kStages * kStage;
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
};

// Element (r, c) of a 16-bit tile of `cols` columns in the K-major core-matrix layout of
// wgmma.cuh (c the product's K index): core matrix (r / 8, c / 8), row r % 8, element c % 8.
template <int kCols>
__device__ __forceinline__ int core_offset(int r, int c) {
  return chain_core_offset(r, c, kCols);
}
// The descriptor of k-slice ks (16 columns) of such a tile.
template <int kCols>
__device__ __forceinline__ uint64_t core_slice(const __half* tile, int ks) {
  return wg::desc_kmajor(tile + 16 * ks * 8, 128, (kCols / 8) * 128);
}

// The power of two that puts m (a row's largest magnitude) in [2^14, 2^15), kept within
// [2^-60, 2^40] so that a product of two and its inverse stay normal float32; 2^40 for m = 0.
__device__ __forceinline__ float row_scale(float m) {
  const int e = int((__float_as_uint(m) >> 23) & 0xFF);
  const int s = min(max(268 - e, 127 - 60), 127 + 40);
  return __uint_as_float(uint32_t(s) << 23);
}
// The largest of a value row's magnitudes across the four lanes that hold it.
__device__ __forceinline__ float quad_max(float m) {
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
  return fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
}
// Four 8 x 8 16-bit tiles from mma fragments (r[i]: row g, columns 2 (lane % 4) .. of tile i) to
// shared memory transposed: lane 8 i + k gives the address of row k of tile i's transpose.
__device__ __forceinline__ void stmatrix_x4_trans(void* row, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(
                   uint32_t(__cvta_generic_to_shared(row))),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}
__device__ __forceinline__ uint32_t pack_half(float x, float y) {
  __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <typename T>
__device__ __forceinline__ uint4 to_half8(uint4 x, float scale) {
  const uint32_t w[4] = {x.x, x.y, x.z, x.w};
  uint32_t r[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = Mma<T>::unpack(w[i]);
    r[i] = pack_half(f.x * scale, f.y * scale);
  }
  return make_uint4(r[0], r[1], r[2], r[3]);
}

// The operands of one chunk (grid N x HV x B, one warpgroup), in parallel before the chain: q and
// K~^T = (K .* exp(gL - gamma))^T converted to fp16, P = (Q K^T) .* exp(gamma_t - gamma_s) for s <= t
// (else 0) by wgmma; built in shared memory, then written out whole. Lane l converts rows 2l and
// 2l + 1 (so K~^T's column pairs are single 4-byte stores), warp w every fourth 8-column piece.
template <typename T, int kK>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_chain_operands_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Ops = ChainOperands<kK>;
  extern __shared__ __align__(128) unsigned char smem[];
  __half* q_s = reinterpret_cast<__half*>(smem);
  __half* kt_s = reinterpret_cast<__half*>(smem + Ops::kQ);
  __half* p_s = reinterpret_cast<__half*>(smem + Ops::kQ + Ops::kKt);
  __half* k_s = reinterpret_cast<__half*>(smem + Ops::kQ + Ops::kKt + Ops::kP);
  float* g_s = reinterpret_cast<float*>(smem + Ops::kQ + Ops::kKt + Ops::kP + Ops::kQ);
  const GdnShape s = p.shape;
  const int64_t n = blockIdx.x, hv = blockIdx.y, b = blockIdx.z, N = ws.num_chunks, h = hv / (s.HV / s.H);
  const int64_t t0 = n * kC, chunk = (b * s.HV + hv) * N + n, row_stride = s.H * kK;
  const int L = chunk_rows(s.T, n);
  const int tid = int(threadIdx.x), warp = tid >> 5, lane = tid & 31, c0 = 2 * lane;
  const T* q_base = static_cast<const T*>(p.q) + ((b * s.T + t0) * s.H + h) * kK;
  const T* k_base = static_cast<const T*>(p.k) + ((b * s.T + t0) * s.H + h) * kK;
  const float* gamma = ws.gamma + chunk * kC;
  if (tid < kC) g_s[tid] = gamma[tid];
  const float g_last = gamma[L - 1];
  const float d0 = expf(g_last - gamma[c0]), d1 = expf(g_last - gamma[c0 + 1]);  // rows past the end: k is 0
#pragma unroll
  for (int i = 0; i < kK / 32; ++i) {
    const int c = 8 * (warp + 4 * i);
    uint4 k[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const bool in = c0 + r < L;
      const int64_t off = (c0 + r) * row_stride + c;
      const uint4 q = in ? *reinterpret_cast<const uint4*>(q_base + off) : make_uint4(0, 0, 0, 0);
      k[r] = in ? *reinterpret_cast<const uint4*>(k_base + off) : make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(q_s + core_offset<kK>(c0 + r, c)) = to_half8<T>(q, 1.f);
      *reinterpret_cast<uint4*>(k_s + core_offset<kK>(c0 + r, c)) = to_half8<T>(k[r], 1.f);
    }
    const uint32_t k0[4] = {k[0].x, k[0].y, k[0].z, k[0].w}, k1[4] = {k[1].x, k[1].y, k[1].z, k[1].w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 x0 = Mma<T>::unpack(k0[e]), x1 = Mma<T>::unpack(k1[e]);
      *reinterpret_cast<uint32_t*>(kt_s + core_offset<kC>(c + 2 * e, c0)) = pack_half(x0.x * d0, x1.x * d1);
      *reinterpret_cast<uint32_t*>(kt_s + core_offset<kC>(c + 2 * e + 1, c0)) = pack_half(x0.y * d0, x1.y * d1);
    }
  }
  wg::fence_async_shared();
  __syncthreads();

  float pacc[32];
  wg::fence();
#pragma unroll
  for (int ks = 0; ks < kK / 16; ++ks)
    wg::wgmma_ss_m64n64k16_f16(pacc, core_slice<kK>(q_s, ks), core_slice<kK>(k_s, ks), ks > 0);
  wg::commit();
  wg::wait<0>();
  wg::keep_live(pacc);
  const int g = lane >> 2, tq = (lane & 3) * 2;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int t = 16 * warp + g + 8 * hh;
    const float gt = g_s[t];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int sc = 8 * j + tq;
      const float x = sc <= t ? pacc[4 * j + 2 * hh] * expf(gt - g_s[sc]) : 0.f;
      const float y = sc + 1 <= t ? pacc[4 * j + 2 * hh + 1] * expf(gt - g_s[sc + 1]) : 0.f;
      *reinterpret_cast<uint32_t*>(p_s + core_offset<kC>(t, sc)) = pack_half(x, y);
    }
  }
  __syncthreads();
  // q after W in the chunk's W part; K~^T then P in its states part: 16-byte pieces in order.
  uint4* q_out = reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(ws.W + chunk * kC * kK) + Ops::kOffQ);
  uint4* kp_out = reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(ws.states) + chunk * Ops::kStatesPart);
  const uint4* q_in = reinterpret_cast<const uint4*>(q_s);
  const uint4* kp_in = reinterpret_cast<const uint4*>(kt_s);
  for (int i = tid; i < Ops::kQ / 16; i += kThreads) q_out[i] = q_in[i];
  for (int i = tid; i < Ops::kStatesPart / 16; i += kThreads) kp_out[i] = kp_in[i];
  // exp(gamma) over this chunk's gamma (every read of it is behind the barrier above): the chain
  // takes exp(gamma_t) and exp(gL) = exp(gamma_{L-1}) as they are, its producer only copies.
  if (tid < kC) ws.gamma[chunk * kC + tid] = expf(g_s[tid]);
#else
  __trap();  // wgmma needs sm_90a: the plan never picks this kernel elsewhere
#endif
}

// The chain kernel's producer (warps 0-3): copies only. Chunk n's operands (the workspace's W and
// q, K~^T and P, U0's 64 columns, exp(gamma)) into its stage once the chain has released it; then it
// publishes chunk n - 1 (its copies landed a chunk earlier), and
// stores chunk n - 2's o, which the chain left in its stage, as whole rows.
template <typename T, int kK>
__device__ __forceinline__ void chain_producer(const GdnParams& p, const GdnWyUtWorkspace& ws, unsigned char* smem) {
  using Lay = ChainWgmmaLayout<kK>;
  using Ops = ChainOperands<kK>;
  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, N = ws.num_chunks;
  const int64_t v0 = int64_t(blockIdx.x) * kChainValues, head = b * s.HV + hv;
  const int tid = int(threadIdx.x);

  auto issue = [&](int64_t n) {
    unsigned char* st = smem + int(n % Lay::kStages) * Lay::kStage;
    const int64_t chunk = head * N + n;
    const unsigned char* wq = reinterpret_cast<const unsigned char*>(ws.W + chunk * kC * kK);
    const unsigned char* kp = reinterpret_cast<const unsigned char*>(ws.states) + chunk * Ops::kStatesPart;
    // W only with the delta term (prepare writes no W without it).
    for (int i = tid + (p.use_delta ? 0 : Ops::kW / 16); i < (Ops::kW + Ops::kQ) / 16; i += kThreads)
      tc::cp_async16(st + Lay::kOffW + 16 * i, wq + 16 * i);
#pragma unroll
    for (int i = tid; i < Ops::kStatesPart / 16; i += kThreads) tc::cp_async16(st + Lay::kOffKt + 16 * i, kp + 16 * i);
    const float* u = ws.U + chunk * kC * V + v0;
#pragma unroll
    for (int i = 0; i < kC * 16 / kThreads; ++i) {
      const int x = tid + i * kThreads, r = x / 16, c = 4 * (x % 16);
      tc::cp_async16(st + Lay::kOffU0 + 4 * (r * Lay::kLdU + c), u + int64_t(r) * V + c);
    }
    if (tid < kC / 4) tc::cp_async16(st + Lay::kOffExpG + 16 * tid, ws.gamma + chunk * kC + 4 * tid);
    tc::cp_async_commit();
  };
  auto publish = [&](int64_t n) {
    const int buf = int(n % Lay::kStages);
    ptx::named_sync(kChainBarProducer, kThreads);  // every producer thread's copies of n landed
    wg::fence_async_shared();
    ptx::named_arrive(kChainBarFull + buf, kChainThreads);
  };

  T* o_base = static_cast<T*>(p.o) + (b * s.T * s.HV + hv) * V + v0;
  auto store_o = [&](int64_t n) {
    const int buf = int(n % Lay::kStages);
    const T* o_s = reinterpret_cast<const T*>(smem + buf * Lay::kStage + Lay::kOffO);
    const int L = chunk_rows(s.T, n);
    ptx::named_sync(kChainBarOut + buf, kChainThreads);  // the chain has written chunk n's o
#pragma unroll
    for (int i = 0; i < kC * 8 / kThreads; ++i) {
      const int x = tid + i * kThreads, r = x / 8, c = 8 * (x % 8);
      if (r < L)
        *reinterpret_cast<uint4*>(o_base + (n * kC + r) * s.HV * V + c) =
            *reinterpret_cast<const uint4*>(o_s + r * Lay::kLdO + c);
    }
  };

  for (int64_t n = 0; n < N; ++n) {
    if (n >= Lay::kStages) ptx::named_sync(kChainBarEmpty + int(n % Lay::kStages), kChainThreads);
    issue(n);
    if (n >= 1) {
      tc::cp_async_wait<1>();  // this thread's copies of n - 1
      publish(n - 1);
    }
    if (n >= 2) store_o(n - 2);
  }
  tc::cp_async_wait<0>();
  publish(N - 1);
  for (int64_t n = N >= 2 ? N - 2 : 0; n < N; ++n) store_o(n);
}

// The chain: warps 4-7; warp w of the warpgroup holds value rows 16 w + g and 16 w + g + 8 of S^T,
// U^T and O^T (wgmma.cuh's D layout), K / 8, 8 and 8 column tiles of them.
template <typename T, int kK>
__device__ __forceinline__ void chain_state(const GdnParams& p, const GdnWyUtWorkspace& ws, unsigned char* smem) {
  using Lay = ChainWgmmaLayout<kK>;
  constexpr int kKs = kK / 16, kCs = kC / 16;
  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, N = ws.num_chunks;
  const int64_t v0 = int64_t(blockIdx.x) * kChainValues, head = b * s.HV + hv;
  const int tid = int(threadIdx.x) - kThreads, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, tq = (lane & 3) * 2, vr[2] = {16 * warp + g, 16 * warp + g + 8};

  float S[kK / 2];  // S^T (vr[hh], 8 j + tq + e) at S[4 j + 2 hh + e]
  {
    const float* enter = p.h0 ? p.h0 + head * kK * V + v0 : nullptr;
#pragma unroll
    for (int j = 0; j < kK / 8; ++j)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          S[4 * j + 2 * hh + e] = enter ? enter[int64_t(8 * j + tq + e) * V + vr[hh]] : 0.f;
  }

  for (int64_t n = 0; n < N; ++n) {
    const int buf = int(n % Lay::kStages);
    const unsigned char* st = smem + buf * Lay::kStage;
    const __half* q_s = reinterpret_cast<const __half*>(st + Lay::kOffQ);
    const __half* w_s = reinterpret_cast<const __half*>(st + Lay::kOffW);
    const __half* kt_s = reinterpret_cast<const __half*>(st + Lay::kOffKt);
    const __half* p_s = reinterpret_cast<const __half*>(st + Lay::kOffP);
    const float* u0_s = reinterpret_cast<const float*>(st + Lay::kOffU0);
    const float* expg_s = reinterpret_cast<const float*>(st + Lay::kOffExpG);  // exp(gamma)

    // Row scales of S0^T (sig) and its fp16 A operand, before the wait: S is this thread's own.
    float sig[2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float m = 0.f;
#pragma unroll
      for (int j = 0; j < kK / 8; ++j) m = fmaxf(m, fmaxf(fabsf(S[4 * j + 2 * hh]), fabsf(S[4 * j + 2 * hh + 1])));
      sig[hh] = row_scale(quad_max(m));
    }
    uint32_t sa[kKs][4];
#pragma unroll
    for (int ks = 0; ks < kKs; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float* x = S + 8 * ks + 4 * (i >> 1) + 2 * (i & 1);
        sa[ks][i] = pack_half(x[0] * sig[i & 1], x[1] * sig[i & 1]);
      }
    ptx::named_sync(kChainBarFull + buf, kChainThreads);  // chunk n's operands are in the stage

    // U^T = sig (U0^T - S0^T W^T), O^T = sig S0^T Q^T.
    float u[32], o[32];
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        u[4 * j + 2 * hh] = u0_s[(8 * j + tq) * Lay::kLdU + vr[hh]] * sig[hh];
        u[4 * j + 2 * hh + 1] = u0_s[(8 * j + tq + 1) * Lay::kLdU + vr[hh]] * sig[hh];
      }
    wg::fence();
    if (p.use_delta)
#pragma unroll
      for (int ks = 0; ks < kKs; ++ks) wg::wgmma_rs_m64n64k16_f16<-1>(u, sa[ks], core_slice<kK>(w_s, ks), true);
    wg::commit();
#pragma unroll
    for (int ks = 0; ks < kKs; ++ks) wg::wgmma_rs_m64n64k16_f16<1>(o, sa[ks], core_slice<kK>(q_s, ks), ks > 0);
    wg::commit();
    wg::wait<1>();
    wg::keep_live(u);

    // U's row scales relative to sig (tau), its fp16 operand; S0 scaled for the update.
    float tau[2], inv[2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float m = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) m = fmaxf(m, fmaxf(fabsf(u[4 * j + 2 * hh]), fabsf(u[4 * j + 2 * hh + 1])));
      tau[hh] = row_scale(quad_max(m));
      inv[hh] = 1.f / (sig[hh] * tau[hh]);  // exact: a power of two
    }
    uint32_t ua[kCs][4];
#pragma unroll
    for (int ks = 0; ks < kCs; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float* x = u + 8 * ks + 4 * (i >> 1) + 2 * (i & 1);
        ua[ks][i] = pack_half(x[0] * tau[i & 1], x[1] * tau[i & 1]);
      }
    const float e_last = expg_s[chunk_rows(s.T, n) - 1];  // exp(gL)
    const float f[2] = {e_last * sig[0] * tau[0], e_last * sig[1] * tau[1]};
#pragma unroll
    for (int j = 0; j < kK / 8; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) S[4 * j + i] *= f[i >> 1];
    // S^T = (sig tau) (exp(gL) S0^T + U^T K~).
    wg::fence();
#pragma unroll
    for (int ks = 0; ks < kCs; ++ks) {
      if constexpr (kK == 128) wg::wgmma_rs_m64n128k16_f16<1>(S, ua[ks], core_slice<kC>(kt_s + 0, ks), true);
      else wg::wgmma_rs_m64n64k16_f16<1>(S, ua[ks], core_slice<kC>(kt_s, ks), true);
    }
    wg::commit();
    wg::wait<1>();  // O^T = sig S0^T Q^T has completed
    wg::keep_live(o);
    wg::keep_live(sa);
    // O^T = (sig tau) (diag(exp(gamma)) S0^T Q^T + U^T P^T), columns t.
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float eg = expg_s[8 * j + tq + e];
        o[4 * j + e] *= tau[0] * eg;
        o[4 * j + 2 + e] *= tau[1] * eg;
      }
    wg::fence();
#pragma unroll
    for (int ks = 0; ks < kCs; ++ks) wg::wgmma_rs_m64n64k16_f16<1>(o, ua[ks], core_slice<kC>(p_s, ks), true);
    wg::commit();
    wg::wait<1>();
    wg::keep_live(S);
#pragma unroll
    for (int j = 0; j < kK / 8; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) S[4 * j + i] *= inv[i >> 1];
    wg::wait<0>();
    wg::keep_live(o);
    wg::keep_live(ua);
    if (n + Lay::kStages < N) ptx::named_arrive(kChainBarEmpty + buf, kChainThreads);

    // o = scale O into the stage's o rows (t, v) by stmatrix .trans: matrix i of call jj is the 8 x 8
    // tile (v rows 16 w + 8 (i & 1) .., t columns 8 (2 jj + (i >> 1)) ..); the producer stores it.
    T* o_s = reinterpret_cast<T*>(smem + buf * Lay::kStage + Lay::kOffO);
    const float os[2] = {p.scale * inv[0], p.scale * inv[1]};
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      uint32_t r[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int j = 2 * jj + (i >> 1), hh = i & 1;
        r[i] = Mma<T>::pack(o[4 * j + 2 * hh] * os[hh], o[4 * j + 2 * hh + 1] * os[hh]);
      }
      const int i = lane >> 3, row = 8 * (2 * jj + (i >> 1)) + (lane & 7);
      stmatrix_x4_trans(o_s + row * Lay::kLdO + 16 * warp + 8 * (i & 1), r);
    }
    ptx::named_arrive(kChainBarOut + buf, kChainThreads);
  }

  if (float* end = p.hT ? p.hT + head * kK * V + v0 : nullptr) {
#pragma unroll
    for (int j = 0; j < kK / 8; ++j)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
#pragma unroll
        for (int e = 0; e < 2; ++e) end[int64_t(8 * j + tq + e) * V + vr[hh]] = S[4 * j + 2 * hh + e];
  }
}

template <typename T, int kK>
__global__ void __launch_bounds__(kChainThreads, 1)
gdn_wy_ut_chain_wgmma_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char smem[];
  if (threadIdx.x < kThreads) chain_producer<T, kK>(p, ws, smem);
  else chain_state<T, kK>(p, ws, smem);
#else
  __trap();  // wgmma needs sm_90a: the plan never picks this kernel elsewhere
#endif
}

}  // namespace
