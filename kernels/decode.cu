// fused_decode: T <= 8 new tokens per sequence (T = 1 is the serving case) in one kernel, in place:
//   conv caches rolled, q, k = l2norm(SiLU(conv4(x))), v = SiLU(conv4(x_v)),
//   g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)        (kernels/frontend.cuh)
//   S' = exp(g) S;  u = beta (v - S'^T k);  S = S' + k u^T;  o = scale S^T q   per token
// The state and the conv caches live in pools addressed through slots[b] (continuous batching:
// a batch row names its sequence's slot in a larger pool); both are updated in place.
// Work split: the decode shape of kernels/recurrent.cu, whose per-token step it shares
// (kernels/decode_step.cuh): one block per (32 value columns, b, hv); lane = column j, warp w
// holds state rows [w R, w R + R) (W x R = 8 x 8, 8 x 16 or 16 x 16 by K) in registers for the
// steps.
// Version 1 (0.153 ms at B=64 H=HV=32 K=V=128 fp32 state, docs/perf-notes.md) loaded the state
// into registers at the top and computed the front end under a 64-register cap, so the state's
// 16 registers and the front end's competed for the cap; its norms were two warps looping over
// rows after a barrier, and its indices 64-bit divisions.
// Version 2, this one: the block's state slice (K x 32 columns) is copied into shared memory with
// 16-byte cp.async as soon as slots[b] is known, so the loads are in flight, holding no register,
// while the block computes its front end; only then does each thread move its R state values
// into registers. The front end: thread (tensor, i) = (tid / Kp, tid % Kp) with Kp = W R convolves
// q or k channel i of head h over the T tokens (all T loads issued together) into shared memory
// and sums the squares of its warp's 32 channels with shuffles, so the norm needs only the W R / 32
// per-warp partials; the last warp convolves the block's 32 v channels, the one before computes
// the gates. 32-bit index math; 64-bit only for the pool and batch-row base offsets. Every block
// of a (b, h) group (V/32 column blocks x HV/H value heads) computes the same q and k: that is
// 2K conv channels per block, one per thread, whose loads overlap the state's.
// In-place q/k conv caches: all those blocks read the old cache of head h, so none may overwrite
// it before all have read it. Each block counts itself in a per-(b, h) counter after its reads
// (an atomic issued right after the front end, its result used after the state is stored); the
// block that arrives last writes the new cache and resets the counter to 0 for the next launch.
// No block waits on another, so any scheduling order is safe. The v caches have one reader and
// writer per channel (lane j of the v warp of the one block of those columns) and are rolled in
// place directly.
// Budget (K <= 128: R = 16, W = 8, fp32 state): dynamic shared 128 x 32 x 4 B = 16 KiB of state
// + T x 2 x 128 x 4 B of q/k rows (1 KiB at T = 1, 8 KiB at T = 8) + 2 x 128 x 3 x 4 B = 3 KiB of
// new q/k caches; static ~4.4 KiB (v rows, step partials); 24-31 KiB per block. Registers capped
// at 64 (4 blocks of 8 warps per SM, kDecodeMinBlocks); the front end and the state no longer
// share the registers, so the step's R = 16 state values fit. K = 256 (W = 16): 32 + 16 + 6 KiB
// dynamic at T = 8 plus 7.8 KiB static, opted in whenever static + dynamic exceed 48 KiB (a
// float32 state from T = 2 on). Without 16-byte alignment (V not a multiple of 4 for a
// float32 pool, of 8 for bf16) each thread loads its own state values after the front end.
// Rounds: float32 everywhere in the kernel; o rounded to the dtype once; the state is rounded
// only when stored to a bf16 pool (fused_decode_bf16state), once per launch, not per token.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/decode_step.cuh"
#include "kernels/frontend.cuh"

namespace {

constexpr int64_t kMaxGridY = 65535;

__device__ __forceinline__ void dec_cp_async_16(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void dec_cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
}

// Resident blocks per SM the register cap is set for: 64 registers, 4 x 8 or 2 x 16 warps (half
// occupancy). 48 registers (5 x 8 warps) spill; the state copies are in shared memory, not in
// registers, so 4 blocks already have 64 KiB of state loads in flight per SM, twice what the
// memory latency needs at full bandwidth (4.27 TB/s x ~1 us / 132 SMs ~ 32 KiB).
template <int kWarps>
constexpr int kDecodeMinBlocks = 2048 / (kWarps * 32) / 2;

// Dynamic shared memory: the state slice [kKPad][32] of St, the q/k rows [T][2][kKPad] and the new
// q/k caches [2][kKPad][3] as float.
template <typename St, int kKPad>
size_t decode_dynamic_smem(int64_t T) {
  return size_t(kKPad) * 32 * sizeof(St) + size_t(T) * 2 * kKPad * 4 + size_t(2) * kKPad * kConvCache * 4;
}

template <typename T, typename St, int kRows, int kWarps, bool kAsync>
__global__ void __launch_bounds__(kWarps * 32, kDecodeMinBlocks<kWarps>)
gdn_decode_kernel(const GdnFrontEndParams p, unsigned* counters) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kKPad = kRows * kWarps;
  constexpr int kQKWarps = kKPad / 32;                  // warps per q (or k) row
  constexpr int kChunkElems = 16 / int(sizeof(St));     // state elements per 16-byte copy
  constexpr int kChunksPerRow = 32 / kChunkElems;
  static_assert(2 * kKPad <= kThreads, "one q or k channel per thread");
  static_assert(kKPad % 32 == 0, "q and k threads in separate warps");
  static_assert(kWarps >= 2, "the last two warps compute v and the gates");
  extern __shared__ __align__(16) unsigned char dyn_s[];
  St (*state_s)[32] = reinterpret_cast<St (*)[32]>(dyn_s);  // [kKPad][32]
  float (*qk_s)[2][kKPad] = reinterpret_cast<float (*)[2][kKPad]>(dyn_s + kKPad * 32 * sizeof(St));  // [T]
  __shared__ float ss_s[kDecodeMaxTokens][2][kQKWarps];  // per-warp sums of squares of the q/k rows
  __shared__ float inv_s[kDecodeMaxTokens][2];           // 1 / ||row||
  __shared__ float v_s[kDecodeMaxTokens][32];
  __shared__ float alpha_s[kDecodeMaxTokens], beta_s[kDecodeMaxTokens];
  __shared__ DecodeStepShared<kWarps> sh;
  __shared__ unsigned arrived_s;  // this block's place among the readers of the q/k caches

  const GdnShape s = p.shape;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int K = int(s.K), V = int(s.V), nt = int(s.T);
  // new q/k caches, after the q/k rows of the T tokens
  float (*cache_s)[kKPad][kConvCache] =
      reinterpret_cast<float (*)[kKPad][kConvCache]>(dyn_s + kKPad * 32 * sizeof(St) + nt * 2 * kKPad * 4);
  const uint32_t HV = uint32_t(s.HV), H = uint32_t(s.H);
  const uint32_t head = blockIdx.z * gridDim.y + blockIdx.y;  // b * HV + hv
  if (head >= uint32_t(s.B) * HV) return;  // the last z row of a grid split over y and z
  const uint32_t b = head / HV, hv = head - b * HV, group = HV / H, h = hv / group;
  const int j0 = int(blockIdx.x) * 32, j = j0 + lane;
  const bool col_ok = j < V;
  const int64_t slot = p.slots[b];
  St* const state = static_cast<St*>(p.state) + (slot * HV + hv) * int64_t(K) * V + j0;

  // The state slice first: in flight, in no register, during the front end.
  if constexpr (kAsync) {
    constexpr int kChunks = kKPad * kChunksPerRow;
#pragma unroll
    for (int c = tid; c < kChunks; c += kThreads) {
      const int r = c / kChunksPerRow, col = c % kChunksPerRow * kChunkElems;
      if (r < K && col < V - j0) dec_cp_async_16(&state_s[r][col], state + r * V + col);
    }
  }

  // Front end. q/k: thread (tensor, i); the loads of all T tokens go out together.
  const int64_t cqk = int64_t(H) * K, cv = int64_t(HV) * V;
  if (tid < 2 * kKPad) {  // whole warps
    const int tensor = tid / kKPad, i = tid % kKPad;
    const bool ok = i < K;  // channels past K compute zeros and take part in the shuffles
    const int64_t ch = int64_t(h) * K + i;
    const T* x = static_cast<const T*>(p.x[tensor]) + int64_t(b) * nt * cqk + ch;
    ConvChannel conv{};
    if (ok) {
      const T* bias = static_cast<const T*>(p.conv_bias[tensor]);
      conv.load<T>(static_cast<const T*>(p.conv_w[tensor]) + ch * kConvWidth, bias ? bias + ch : nullptr,
                   static_cast<const T*>(p.cache_in[tensor]) + (slot * cqk + ch) * kConvCache);
    }
    float xs[kDecodeMaxTokens];
#pragma unroll
    for (int t = 0; t < kDecodeMaxTokens; ++t) xs[t] = ok && t < nt ? to_float(x[t * cqk]) : 0.0f;
#pragma unroll
    for (int t = 0; t < kDecodeMaxTokens; ++t) {
      if (t < nt) {
        const float y = fe_silu(conv.step(xs[t]));
        if (ok) qk_s[t][tensor][i] = y;
        const float ss = group_sum<32>(y * y);
        if (lane == 0) ss_s[t][tensor][warp % kQKWarps] = ss;
      }
    }
    if (ok) {
#pragma unroll
      for (int c = 0; c < kConvCache; ++c) cache_s[tensor][i][c] = conv.hist[c];
    }
  }
  if (warp == kWarps - 1 && col_ok) {  // v: lane = column
    const int64_t ch = int64_t(hv) * V + j;
    const T* x = static_cast<const T*>(p.x[kFeV]) + int64_t(b) * nt * cv + ch;
    const T* bias = static_cast<const T*>(p.conv_bias[kFeV]);
    T* cache = static_cast<T*>(p.cache_out[kFeV]) + (slot * cv + ch) * kConvCache;
    ConvChannel conv;
    conv.load<T>(static_cast<const T*>(p.conv_w[kFeV]) + ch * kConvWidth, bias ? bias + ch : nullptr, cache);
    float xs[kDecodeMaxTokens];
#pragma unroll
    for (int t = 0; t < kDecodeMaxTokens; ++t) xs[t] = t < nt ? to_float(x[t * cv]) : 0.0f;
#pragma unroll
    for (int t = 0; t < kDecodeMaxTokens; ++t)
      if (t < nt) v_s[t][lane] = fe_silu(conv.step(xs[t]));
    conv.store_cache(cache);
  }
  if (warp == kWarps - 2 && lane < nt) {
    const int64_t gi = (int64_t(b) * nt + lane) * HV + hv;
    alpha_s[lane] = expf(fe_gate(to_float(static_cast<const T*>(p.a)[gi]), p.A_log[hv], p.dt_bias[hv]));
    beta_s[lane] = fe_beta(to_float(static_cast<const T*>(p.b)[gi]));
  }
  __syncthreads();  // every read of the old q/k caches by this block is done
  // Kept in a register of thread 0 until the end, so its latency stalls nothing before.
  unsigned arrived = 0;
  if (tid == 0) arrived = atomicAdd(&counters[b * H + h], 1u);
  if (tid < 2 * nt) {
    const int t = tid / 2, tensor = tid % 2;
    float ss = 0.0f;
#pragma unroll
    for (int w = 0; w < kQKWarps; ++w) ss += ss_s[t][tensor][w];
    inv_s[t][tensor] = fe_inv_l2(ss, p.l2_eps);
  }
  if constexpr (kAsync) dec_cp_async_wait_all();
  __syncthreads();  // the state slice (copied by other threads) and inv_s are complete

  float S[kRows];
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int i = warp * kRows + n;
    // Without 16-byte alignment the state is read here, after the front end: read at the top it
    // would hold kRows registers through it, which spills under the cap.
    S[n] = (col_ok && i < K) ? to_float(kAsync ? state_s[i][lane] : state[i * V + lane]) : 0.0f;
  }

  T* o = static_cast<T*>(p.o) + (int64_t(b) * nt * HV + hv) * V + j;
  for (int t = 0; t < nt; ++t) {
    decode_token_step<kRows, kWarps, false>(
        S, sh, p.scale,
        [&](int n, float& kv, float& qv) {
          const int i = warp * kRows + n;
          kv = i < K ? qk_s[t][kFeK][i] * inv_s[t][kFeK] : 0.0f;
          qv = i < K ? qk_s[t][kFeQ][i] * inv_s[t][kFeQ] : 0.0f;
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

  // The last of the group's readers (every block has read the old q/k caches by then) writes the
  // new ones.
  if (tid == 0) arrived_s = arrived;
  __syncthreads();
  if (arrived_s == gridDim.x * group - 1) {
    if (tid == 0) atomicExch(&counters[b * H + h], 0u);
    if (tid < 2 * kKPad) {
      const int tensor = tid / kKPad, i = tid % kKPad;
      if (i < K) {
        T* cache = static_cast<T*>(p.cache_out[tensor]) + (slot * cqk + int64_t(h) * K + i) * kConvCache;
#pragma unroll
        for (int c = 0; c < kConvCache; ++c) cache[c] = from_float<T>(cache_s[tensor][i][c]);
      }
    }
  }
}

// Static shared memory of a kernel in bytes, or -1 where the query fails.
template <typename Kernel>
int64_t decode_static_smem(Kernel kernel) {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, kernel) == cudaSuccess) return int64_t(attr.sharedSizeBytes);
  (void)cudaGetLastError();  // not the launch's error: the launch reports its own
  return -1;
}

template <typename T, typename St, int kRows, int kWarps>
cudaError_t launch_decode_shape(const GdnFrontEndParams& p, unsigned* counters, const dim3& grid,
                                cudaStream_t stream) {
  constexpr int kChunkElems = 16 / int(sizeof(St));
  const size_t smem = decode_dynamic_smem<St, kRows * kWarps>(p.shape.T);
  // 16-byte copies need every state row of the block on a 16-byte boundary.
  const bool async = p.shape.V % kChunkElems == 0 && reinterpret_cast<uintptr_t>(p.state) % 16 == 0;
  auto kernel = async ? gdn_decode_kernel<T, St, kRows, kWarps, true> : gdn_decode_kernel<T, St, kRows, kWarps, false>;
  // Without the opt-in a launch may use 48 KiB of shared memory in all, static included: the
  // default dynamic limit is 48 KiB minus the kernel's static part (7.8 KiB at W = 16), so K = 256
  // with a float32 state at T = 2..5 (43-48 KiB dynamic) needs the opt-in too. The static size
  // is a property of the compiled kernel; -1 (query failed) always opts in.
  static const int64_t static_smem[2] = {decode_static_smem(gdn_decode_kernel<T, St, kRows, kWarps, false>),
                                         decode_static_smem(gdn_decode_kernel<T, St, kRows, kWarps, true>)};
  const int64_t static_bytes = static_smem[async ? 1 : 0];
  if (static_bytes < 0 || int64_t(smem) + static_bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  kernel<<<grid, kWarps * 32, smem, stream>>>(p, counters);
  return cudaGetLastError();
}

template <typename T, typename St>
cudaError_t launch_decode_for_types(const GdnFrontEndParams& p, unsigned* counters, cudaStream_t stream) {
  const int64_t heads = p.shape.B * p.shape.HV, y = heads < kMaxGridY ? heads : kMaxGridY;
  const dim3 grid(unsigned((p.shape.V + 31) / 32), unsigned(y), unsigned((heads + y - 1) / y));
  if (p.shape.K <= 64) return launch_decode_shape<T, St, 8, 8>(p, counters, grid, stream);
  if (p.shape.K <= 128) return launch_decode_shape<T, St, 16, 8>(p, counters, grid, stream);
  return launch_decode_shape<T, St, 16, 16>(p, counters, grid, stream);
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
