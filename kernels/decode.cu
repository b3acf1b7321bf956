// fused_decode: T <= 8 new tokens per sequence (T = 1 is the serving case) in one kernel, in place:
//   conv caches rolled, q, k = l2norm(SiLU(conv4(x))), v = SiLU(conv4(x_v)),
//   g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)        (kernels/frontend.cuh)
//   S' = exp(g) S;  u = beta (v - S'^T k);  S = S' + k u^T;  o = scale S^T q   per token
// The state and the conv caches live in pools addressed through slots[b] (continuous batching:
// a batch row names its sequence's slot in a larger pool); both are updated in place.
// Work split: the decode shape of kernels/recurrent.cu, whose per-token step it shares
// (kernels/decode_step.cuh): one block per (32 value columns, b, hv); lane = column, warp w holds
// state rows [w R, w R + R) (W x R = 8 x 8, 8 x 16 or 16 x 16 by K), registers capped at 64 per
// thread (half occupancy), which is what made that kernel fast.
// Differs from recurrent's decode in its prologue: the state loads are issued first, and while
// they are in flight the block computes its front end: thread i < 2K convolves q/k channel i of
// head h over the T tokens into shared memory, warp 0 the block's 32 v channels, warp 1 the gates
// of the T tokens; then one warp per (token, q or k) reduces the row's sum of squares. Every block
// of a (b, h) group (V/32 column blocks x HV/H value heads) computes the same q and k: cheaper
// than another launch, and the state traffic dwarfs it.
// In-place q/k conv caches: all those blocks read the old cache of head h, so none may overwrite
// it before all have read it. Each block counts itself in a per-(b, h) counter after its reads
// (an atomic issued early, its result used at the end); the block that arrives last writes the
// new cache and resets the counter to 0 for the next launch. No block waits on another, so any
// scheduling order is safe. The v caches have one reader and writer per channel (lane j of warp 0
// of the one block of those columns) and are rolled in place directly.
// Budget (K <= 128: R = 16, W = 8): shared 8 x 2 x 128 x 4 B = 8 KiB of q/k rows + 3 KiB of new
// q/k caches + 1 KiB of v + 3 KiB of step partials ~ 15 KiB (K = 256: ~ 29 KiB, 2 blocks per SM).
// Rounds: float32 everywhere in the kernel; o rounded to the dtype once; the state is rounded
// only when stored to a bf16 pool (fused_decode_bf16state), once per launch, not per token.
#include <cuda_runtime.h>

#include "kernels/decode_step.cuh"
#include "kernels/frontend.cuh"

namespace {

constexpr int64_t kMaxGridY = 65535;

template <typename T, typename St, int kRows, int kWarps>
__global__ void __launch_bounds__(kWarps * 32, 2048 / (kWarps * 32) / 2)
gdn_decode_kernel(const GdnFrontEndParams p, unsigned* counters) {
  constexpr int kKPad = kRows * kWarps;
  static_assert(2 * kKPad <= kWarps * 32, "one q or k channel per thread");
  static_assert(kWarps >= 2, "warp 1 computes the gates");
  __shared__ float qk_s[kDecodeMaxTokens][2][kKPad];  // SiLU(conv) of q and k, before the norm
  __shared__ float inv_s[kDecodeMaxTokens][2];        // their 1 / ||row||
  __shared__ float cache_s[2][kKPad][kConvCache];     // the new q/k caches, for the last block
  __shared__ float v_s[kDecodeMaxTokens][32];
  __shared__ float alpha_s[kDecodeMaxTokens], beta_s[kDecodeMaxTokens];
  __shared__ DecodeStepShared<kWarps> sh;
  __shared__ unsigned arrived_s;  // this block's place among the readers of the q/k caches

  const GdnShape s = p.shape;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t head = int64_t(blockIdx.z) * gridDim.y + blockIdx.y;  // b * HV + hv
  if (head >= s.B * s.HV) return;  // the last z row of a grid split over y and z
  const int64_t b = head / s.HV, hv = head % s.HV, group = s.HV / s.H, h = hv / group;
  const int64_t j = int64_t(blockIdx.x) * 32 + lane;
  const bool col_ok = j < s.V;
  const int64_t row0 = int64_t(warp) * kRows;
  const int64_t slot = p.slots[b];
  St* state = static_cast<St*>(p.state) + (slot * s.HV + hv) * s.K * s.V;

  // The state first, read once: its loads are in flight during the front end.
  float S[kRows];
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int64_t i = row0 + n;
    S[n] = (col_ok && i < s.K) ? to_float(state[i * s.V + j]) : 0.0f;
  }

  // Front end.
  const int64_t cqk = s.H * s.K, cv = s.HV * s.V;
  if (tid < 2 * s.K) {
    const int tensor = tid < s.K ? kFeQ : kFeK;
    const int i = tensor == kFeQ ? tid : tid - int(s.K);
    const int64_t ch = h * s.K + i;
    const T* x = static_cast<const T*>(p.x[tensor]);
    const T* bias = static_cast<const T*>(p.conv_bias[tensor]);
    ConvChannel conv;
    conv.load<T>(static_cast<const T*>(p.conv_w[tensor]) + ch * kConvWidth, bias ? bias + ch : nullptr,
                 static_cast<const T*>(p.cache_in[tensor]) + (slot * cqk + ch) * kConvCache);
    for (int t = 0; t < s.T; ++t) qk_s[t][tensor][i] = fe_silu(conv.step(to_float(x[(b * s.T + t) * cqk + ch])));
#pragma unroll
    for (int c = 0; c < kConvCache; ++c) cache_s[tensor][i][c] = conv.hist[c];
  }
  if (warp == 0 && col_ok) {
    const int64_t ch = hv * s.V + j;
    const T* x = static_cast<const T*>(p.x[kFeV]);
    const T* bias = static_cast<const T*>(p.conv_bias[kFeV]);
    ConvChannel conv;
    conv.load<T>(static_cast<const T*>(p.conv_w[kFeV]) + ch * kConvWidth, bias ? bias + ch : nullptr,
                 static_cast<const T*>(p.cache_in[kFeV]) + (slot * cv + ch) * kConvCache);
    for (int t = 0; t < s.T; ++t) v_s[t][lane] = fe_silu(conv.step(to_float(x[(b * s.T + t) * cv + ch])));
    conv.store_cache(static_cast<T*>(p.cache_out[kFeV]) + (slot * cv + ch) * kConvCache);
  }
  if (warp == 1 && lane < s.T) {
    const int64_t gi = (b * s.T + lane) * s.HV + hv;
    alpha_s[lane] = expf(fe_gate(to_float(static_cast<const T*>(p.a)[gi]), p.A_log[hv], p.dt_bias[hv]));
    beta_s[lane] = fe_beta(to_float(static_cast<const T*>(p.b)[gi]));
  }
  __syncthreads();  // every read of the old q/k caches by this block is done
  // The atomic's latency overlaps the state loads that the first token waits for anyway.
  if (tid == 0) arrived_s = atomicAdd(&counters[b * s.H + h], 1u);
  for (int r = warp; r < 2 * s.T; r += kWarps) {
    const float ss = fe_warp_sum_sq(qk_s[r / 2][r % 2], int(s.K));
    if (lane == 0) inv_s[r / 2][r % 2] = fe_inv_l2(ss, p.l2_eps);
  }
  // decode_token_step opens with a barrier: inv_s is complete before any thread reads it.

  T* o = static_cast<T*>(p.o);
  for (int t = 0; t < s.T; ++t) {
    const int64_t gi = (b * s.T + t) * s.HV + hv;
    decode_token_step<kRows, kWarps, false>(
        S, sh, p.scale,
        [&](int n, float& kv, float& qv) {
          const int i = warp * kRows + n;
          kv = i < s.K ? qk_s[t][kFeK][i] * inv_s[t][kFeK] : 0.0f;
          qv = i < s.K ? qk_s[t][kFeQ][i] * inv_s[t][kFeQ] : 0.0f;
        },
        [&](float PS, float& alpha) {
          alpha = alpha_s[t];
          const float vj = col_ok ? v_s[t][lane] : 0.0f;
          return p.use_delta ? beta_s[t] * (vj - alpha * PS) : vj;
        },
        [&](float out) {
          if (col_ok) o[gi * s.V + j] = from_float<T>(out);
        });
  }
  // The compiler would otherwise keep the kRows load addresses alive across the tokens to reuse
  // them here (2 kRows registers, spilled under the cap); an opaque copy of the base makes it
  // recompute them.
  uint64_t base = reinterpret_cast<uint64_t>(state);
  asm volatile("" : "+l"(base));
  St* const out = reinterpret_cast<St*>(base);
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int64_t i = row0 + n;
    if (col_ok && i < s.K) out[i * s.V + j] = from_float<St>(S[n]);
  }

  // Every thread reads arrived_s after the steps' barriers; the last of the group's readers
  // (every block has read the old q/k caches by then) writes the new ones.
  if (arrived_s == gridDim.x * unsigned(group) - 1) {
    if (tid == 0) atomicExch(&counters[b * s.H + h], 0u);
    if (tid < 2 * s.K) {
      const int tensor = tid < s.K ? kFeQ : kFeK;
      const int i = tensor == kFeQ ? tid : tid - int(s.K);
      T* cache = static_cast<T*>(p.cache_out[tensor]) + (slot * cqk + h * s.K + i) * kConvCache;
#pragma unroll
      for (int c = 0; c < kConvCache; ++c) cache[c] = from_float<T>(cache_s[tensor][i][c]);
    }
  }
}

template <typename T, typename St>
cudaError_t launch_decode_for_types(const GdnFrontEndParams& p, unsigned* counters, cudaStream_t stream) {
  const int64_t heads = p.shape.B * p.shape.HV, y = heads < kMaxGridY ? heads : kMaxGridY;
  const dim3 grid(unsigned((p.shape.V + 31) / 32), unsigned(y), unsigned((heads + y - 1) / y));
  if (p.shape.K <= 64) gdn_decode_kernel<T, St, 8, 8><<<grid, 8 * 32, 0, stream>>>(p, counters);
  else if (p.shape.K <= 128) gdn_decode_kernel<T, St, 16, 8><<<grid, 8 * 32, 0, stream>>>(p, counters);
  else gdn_decode_kernel<T, St, 16, 16><<<grid, 16 * 32, 0, stream>>>(p, counters);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_decode_for_type(const GdnFrontEndParams& p, unsigned* counters, cudaStream_t stream) {
  return p.state_bf16 ? launch_decode_for_types<T, __nv_bfloat16>(p, counters, stream)
                      : launch_decode_for_types<T, float>(p, counters, stream);
}

}  // namespace

const char* gdn_decode_shape_unsupported(const GdnShape& s) {
  if (s.T < 1 || s.T > kDecodeMaxTokens) return "decode takes 1 to 8 new tokens per sequence (T <= 8)";
  if (s.K > 256 || s.V > 256) return "K and V must be <= 256";
  if (s.H < 1 || s.HV % s.H != 0) return "HV must be a multiple of H";
  if (s.B * s.HV > kMaxGridY * kMaxGridY) return "B * HV too large for one grid";
  return nullptr;
}

size_t gdn_decode_workspace_bytes(const GdnShape& s) { return size_t(s.B * s.H) * sizeof(unsigned); }

int launch_gdn_decode(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream) {
  if (gdn_decode_shape_unsupported(p.shape) || !workspace) return int(cudaErrorInvalidValue);
  if (!p.state || !p.slots || !p.o || !p.a || !p.b || !p.A_log || !p.dt_bias) return int(cudaErrorInvalidValue);
  for (int t = 0; t < 3; ++t)
    if (!p.x[t] || !p.conv_w[t] || !p.cache_in[t] || p.cache_in[t] != p.cache_out[t])
      return int(cudaErrorInvalidValue);
  unsigned* counters = static_cast<unsigned*>(workspace);
  switch (p.dtype) {
    case DType::f32: return int(launch_decode_for_type<float>(p, counters, stream));
    case DType::bf16: return int(launch_decode_for_type<__nv_bfloat16>(p, counters, stream));
    case DType::f16: return int(launch_decode_for_type<__half>(p, counters, stream));
  }
  return int(cudaErrorInvalidValue);
}
