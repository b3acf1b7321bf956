// fused_decode's block state kernel (kernel 2), the one for K = 256 (and any K, V <= 256 when
// forced): the decode shape of kernels/recurrent/recurrent.cu, whose per-token step it shares
// (kernels/common/decode_step.cuh). Per token, on one (b, hv) state S [K][V] in float32:
//   S' = alpha S;  u = beta (v - S'^T k);  S = S' + k u^T;  o = scale S^T q
// One block per (32 value columns, b, hv); lane = column j, warp w holds state rows [w R, w R + R)
// (W x R = 16 x 16). The block's state slice (K x 32 columns) is copied into shared memory with
// 16-byte cp.async first, while the q, k, v rows and gates of its (b, h) come from L2; then each
// thread moves its R state values into registers. Without 16-byte alignment (V not a multiple of
// 4 for a float32 pool, of 8 for bf16) each thread loads its own state values after the barrier.
// Rounds: float32; o to the dtype once; the state only where the pool is bf16, once per launch.
// Budget (K = 256, W = 16): the slice 256 x 32 x 4 B = 32 KiB + the q/k rows T x 2 x 256 x 4 B
// (16 KiB at T = 8) dynamic, 7.2 KiB static; opted in whenever static + dynamic exceed 48 KiB
// (a float32 state from T = 5 on). 64 registers (kDecodeMinBlocks).
// Included only by decode/launch.cu: fused_decode is one translation unit, its kernels and launchers
// in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/decode_step.cuh"
#include "kernels/common/tensor_core.cuh"
#include "kernels/decode/decode_common.cuh"

namespace {

// Resident blocks per SM the register cap is set for: 64 registers, 4 x 8 or 2 x 16 warps (half
// occupancy). 48 registers (5 x 8 warps) spill; the state copies are in shared memory, not in
// registers, so 4 blocks already have 64 KiB of state loads in flight per SM, twice what the
// memory latency needs at full bandwidth (4.27 TB/s x ~1 us / 132 SMs ~ 32 KiB).
template <int kWarps>
constexpr int kDecodeMinBlocks = 2048 / (kWarps * 32) / 2;

// Dynamic shared memory of the step kernel: the state slice [kKPad][32] of St and the q/k rows
// [T][2][kKPad] as float.
template <typename St, int kKPad>
size_t decode_dynamic_smem(int64_t T) {
  return size_t(kKPad) * 32 * sizeof(St) + size_t(T) * 2 * kKPad * 4;
}

// Kernel 2, the state update: one block per (32 value columns, b, hv) as in recurrent's decode.
template <typename T, typename St, int kRows, int kWarps, bool kAsync>
__global__ void __launch_bounds__(kWarps * 32, kDecodeMinBlocks<kWarps>)
gdn_decode_kernel(const GdnFrontEndParams p, const float* fe) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kKPad = kRows * kWarps;
  constexpr int kChunkElems = 16 / int(sizeof(St));     // state elements per 16-byte copy
  constexpr int kChunksPerRow = 32 / kChunkElems;
  static_assert(kWarps >= 2, "the last two warps load v and the gates");
  extern __shared__ __align__(16) unsigned char dyn_s[];
  St (*state_s)[32] = reinterpret_cast<St (*)[32]>(dyn_s);  // [kKPad][32]
  float (*qk_s)[2][kKPad] = reinterpret_cast<float (*)[2][kKPad]>(dyn_s + kKPad * 32 * sizeof(St));  // [T]
  __shared__ float v_s[kDecodeMaxTokens][32];
  __shared__ float alpha_s[kDecodeMaxTokens], beta_s[kDecodeMaxTokens];
  __shared__ DecodeStepShared<kWarps> sh;

  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int K = int(s.K), V = int(s.V), nt = int(s.T);
  const uint32_t HV = uint32_t(s.HV), H = uint32_t(s.H);
  const uint32_t head = blockIdx.z * gridDim.y + blockIdx.y;  // b * HV + hv
  if (head >= uint32_t(s.B) * HV) return;  // the last z row of a grid split over y and z
  const uint32_t b = head / HV, hv = head - b * HV, h = hv / (HV / H);
  const int j0 = int(blockIdx.x) * 32, j = j0 + lane;
  const bool col_ok = j < V;
  const int64_t slot = p.slots[b];
  St* const state = static_cast<St*>(p.state) + (slot * HV + hv) * int64_t(K) * V + j0;

  // The state slice first: in flight, in no register, while the front end's rows come from L2.
  if constexpr (kAsync) {
    constexpr int kChunks = kKPad * kChunksPerRow;
#pragma unroll
    for (int c = tid; c < kChunks; c += kThreads) {
      const int r = c / kChunksPerRow, col = c % kChunksPerRow * kChunkElems;
      if (r < K && col < V - j0) tc::cp_async16(&state_s[r][col], state + r * V + col);
    }
  }
  const float* row = fe + int64_t(b) * nt * lay.row;
  for (int x = tid; x < nt * 2 * kKPad; x += kThreads) {
    const int t = x / (2 * kKPad), tensor = x / kKPad % 2, i = x % kKPad;
    qk_s[t][tensor][i] = i < K ? row[t * lay.row + tensor * lay.qk + int64_t(h) * K + i] : 0.0f;
  }
  if (warp == kWarps - 1)
    for (int t = 0; t < nt; ++t) v_s[t][lane] = col_ok ? row[t * lay.row + 2 * lay.qk + int64_t(hv) * V + j] : 0.0f;
  if (warp == kWarps - 2 && lane < nt) {
    const float* gates = row + lane * lay.row + 2 * lay.qk + lay.v + 2 * hv;
    alpha_s[lane] = gates[0];
    beta_s[lane] = gates[1];
  }
  if constexpr (kAsync) tc::cp_async_commit_wait_all();
  __syncthreads();  // the state slice (copied by other threads) and the front-end rows are in place

  float S[kRows];
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int i = warp * kRows + n;
    S[n] = (col_ok && i < K) ? to_float(kAsync ? state_s[i][lane] : state[i * V + lane]) : 0.0f;
  }

  T* o = static_cast<T*>(p.o) + (int64_t(b) * nt * HV + hv) * V + j;
  for (int t = 0; t < nt; ++t) {
    decode_token_step<kRows, kWarps, false>(
        S, sh, p.scale,
        [&](int n, float& kv, float& qv) {
          const int i = warp * kRows + n;
          kv = qk_s[t][kFeK][i];
          qv = qk_s[t][kFeQ][i];
        },
        [&](float PS, float& alpha) {
          alpha = alpha_s[t];
          const float vj = col_ok ? v_s[t][lane] : 0.0f;
          return p.use_delta ? beta_s[t] * (vj - alpha * PS) : vj;
        },
        [&](float out) {
          if (col_ok) o[int64_t(t) * HV * V] = from_float<T>(out);
        });
  }
  // The compiler would otherwise keep the kRows load addresses of the fallback alive across the
  // tokens to reuse them here (2 kRows registers, spilled under the cap); an opaque copy of the
  // base makes it recompute them.
  uint64_t base = reinterpret_cast<uint64_t>(state);
  asm volatile("" : "+l"(base));
  St* const out = reinterpret_cast<St*>(base);
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int i = warp * kRows + n;
    if (col_ok && i < K) out[i * V + lane] = from_float<St>(S[n]);
  }
}

}  // namespace
