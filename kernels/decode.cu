// fused_decode: T <= 8 new tokens per sequence (T = 1 is the serving case), in place:
//   conv caches rolled, q, k = l2norm(SiLU(conv4(x))), v = SiLU(conv4(x_v)),
//   g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)        (kernels/frontend.cuh)
//   S' = exp(g) S;  u = beta (v - S'^T k);  S = S' + k u^T;  o = scale S^T q   per token
// The state and the conv caches live in pools addressed through slots[b] (continuous batching:
// a batch row names its sequence's slot in a larger pool); both are updated in place.
// Version 1 (0.153 ms at B=64 H=HV=32 K=V=128 fp32 state, docs/perf-notes.md) and version 2
// (0.144 ms: the state slice copied with cp.async before the front end) ran the front end inside
// the state-update blocks: every one of the V/32 column blocks of a (b, h) group convolved and
// normalised the same q and k channels, on the block's critical path, and the in-place q/k cache
// update needed a per-(b, h) arrival counter. ncu showed the block time set by that front end.
// Version 3: two kernels (0.121 ms). Version 4, this one: version 3 with front-end blocks of
// round_up(max(K, V), 32) threads instead of 256 (0.114 ms; 23.3 -> 15.7 us for the front end at
// B = 64). A state kernel that walked several slices per block through two cp.async stages was
// measured too: 4-5% faster with a float32 pool at B >= 64, 9-21% slower with a bf16 pool, 12%
// slower at B = 1 (docs/perf-notes.md, fused_decode version 4), so the state kernel stays one
// slice per block.
//   1 front end, grid (2H + HV, B), one thread per channel: each q, k or v channel is
//     convolved once per launch (not once per column block), its conv cache rolled in place by
//     its only reader and writer (no counter), q and k normalised with a block sum of squares per
//     token, the gates computed by the v blocks; the results (float32, [B][T] rows of q, k, v and
//     the gates: ~49 KiB per (b, t) at H = HV = 32, K = V = 128) go to the workspace and stay in
//     L2 for kernel 2.
//   2 state update: the decode shape of kernels/recurrent.cu, whose per-token step it shares
//     (kernels/decode_step.cuh): one block per (32 value columns, b, hv); lane = column j, warp w
//     holds state rows [w R, w R + R) (W x R = 8 x 8, 8 x 16 or 16 x 16 by K) in registers for the
//     steps. The block's state slice (K x 32 columns) is copied into shared memory with 16-byte
//     cp.async first, while the q, k, v rows and gates of its (b, h) come from L2; then each
//     thread moves its R state values into registers.
// Budget of kernel 2 (K <= 128: R = 16, W = 8, fp32 state): dynamic shared 128 x 32 x 4 B = 16 KiB
// of state + T x 2 x 128 x 4 B of q/k rows (1 KiB at T = 1, 8 KiB at T = 8); static 4.2 KiB
// (v rows, gates, step partials: 3 KiB of them). Registers capped at 64 (4 blocks of 8 warps per
// SM, kDecodeMinBlocks). K = 256 (W = 16): 32 + 16 KiB dynamic at T = 8 plus 7.2 KiB static,
// opted in whenever static + dynamic exceed 48 KiB (a float32 state from T = 5 on). Without
// 16-byte alignment (V not a multiple of 4 for a float32 pool, of 8 for bf16) each thread loads
// its own state values after the barrier.
// Rounds: float32 everywhere; o rounded to the dtype once; the state is rounded only when stored
// to a bf16 pool (fused_decode_bf16state), once per launch, not per token.
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

// Dynamic shared memory of the step kernel: the state slice [kKPad][32] of St and the q/k rows
// [T][2][kKPad] as float.
template <typename St, int kKPad>
size_t decode_dynamic_smem(int64_t T) {
  return size_t(kKPad) * 32 * sizeof(St) + size_t(T) * 2 * kKPad * 4;
}

// The front end of every (b, t) row, [B][T] of: q, k (normalised) [2][H][K], v [HV][V], then the
// gates (alpha = exp(g), beta) [HV][2]; float32, in the workspace, read by the step kernel from L2.
struct DecodeFeLayout {
  int64_t qk, v, row;  // floats: q or k part, v part, one (b, t) row with the gates
  __host__ __device__ DecodeFeLayout(const GdnShape& s)
      : qk(s.H * s.K), v(s.HV * s.V), row(2 * s.H * s.K + s.HV * s.V + 2 * s.HV) {}
};

constexpr int kFeMaxThreads = 256;  // one channel per thread: K, V <= 256

// Threads of a front-end block: one per channel of the widest head, in whole warps (128 at
// K = V = 128). Version 3 always ran 256, so at K = V = 128 half of every block idled while
// holding its registers: 48 registers x 256 threads let 5 blocks (640 working channels) reside
// per SM; 128-thread blocks make that 10 (1280), half the waves.
unsigned decode_fe_threads(const GdnShape& s) {
  const int64_t d = s.K > s.V ? s.K : s.V;
  return unsigned((d + 31) / 32 * 32);
}

// Kernel 1, grid (2H + HV, B), decode_fe_threads threads: block x < H convolves q head x, x < 2H
// k head x - H, else v head x - 2H; thread = channel. The conv cache of a channel has this one
// reader and writer, so it is rolled in place. q and k rows are normalised here (block sums of
// squares per token); the v blocks' first T threads compute the gates.
template <typename T>
__global__ void __launch_bounds__(kFeMaxThreads) gdn_decode_frontend_kernel(const GdnFrontEndParams p, float* fe) {
  constexpr int kMaxWarps = kFeMaxThreads / 32;
  __shared__ float ss_s[kDecodeMaxTokens][kMaxWarps];
  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, warps = int(blockDim.x) / 32, nt = int(s.T);
  const int H = int(s.H), head_block = int(blockIdx.x);
  const int b = int(blockIdx.y);
  const int tensor = head_block < H ? kFeQ : head_block < 2 * H ? kFeK : kFeV;
  const int head = tensor == kFeV ? head_block - 2 * H : head_block - tensor * H;
  const int D = int(tensor == kFeV ? s.V : s.K);
  const int64_t channels = tensor == kFeV ? lay.v : lay.qk;
  const bool ok = tid < D;
  const int64_t ch = int64_t(head) * D + tid;
  // Two dependent round trips, slots[b] then the conv cache at that slot; everything else (x,
  // taps, bias, the gate inputs) is requested while the first is in flight. The v blocks' gates
  // are stored first: their loads share the slot's round trip (and keeping them in registers to
  // the end would cost 4 registers, one resident block per SM).
  const int64_t slot = p.slots[b];
  float* row = fe + int64_t(b) * nt * lay.row;
  if (tensor == kFeV && tid < nt) {
    const int64_t gi = (int64_t(b) * nt + tid) * s.HV + head;
    float* gates = row + tid * lay.row + 2 * lay.qk + lay.v + 2 * head;
    gates[0] = expf(fe_gate(to_float(static_cast<const T*>(p.a)[gi]), p.A_log[head], p.dt_bias[head]));
    gates[1] = fe_beta(to_float(static_cast<const T*>(p.b)[gi]));
  }
  float y[kDecodeMaxTokens];
  if (ok) {
    const T* x = static_cast<const T*>(p.x[tensor]) + int64_t(b) * nt * channels + ch;
    const T* bias = static_cast<const T*>(p.conv_bias[tensor]);
    ConvChannel conv;
    conv.load<T>(static_cast<const T*>(p.conv_w[tensor]) + ch * kConvWidth, bias ? bias + ch : nullptr,
                 static_cast<const T*>(nullptr));
    float xs[kDecodeMaxTokens];
#pragma unroll
    for (int t = 0; t < kDecodeMaxTokens; ++t) xs[t] = t < nt ? to_float(x[t * channels]) : 0.0f;
    T* cache = static_cast<T*>(p.cache_out[tensor]) + (slot * channels + ch) * kConvCache;
    conv.load_cache<T>(cache);
#pragma unroll
    for (int t = 0; t < kDecodeMaxTokens; ++t) y[t] = t < nt ? fe_silu(conv.step(xs[t])) : 0.0f;
    conv.store_cache(cache);
  } else {
#pragma unroll
    for (int t = 0; t < kDecodeMaxTokens; ++t) y[t] = 0.0f;
  }
  if (tensor == kFeV) {
    if (ok)
      for (int t = 0; t < nt; ++t) row[t * lay.row + 2 * lay.qk + ch] = y[t];
    return;
  }
  // q or k: 1 / ||row|| per token from the block's sum of squares, the warps summed in order (as
  // in version 3, whose extra warps added zeros: the same bits).
#pragma unroll
  for (int t = 0; t < kDecodeMaxTokens; ++t) {
    if (t < nt) {
      const float ss = group_sum<32>(y[t] * y[t]);
      if (lane == 0) ss_s[t][warp] = ss;
    }
  }
  __syncthreads();
  if (!ok) return;
  for (int t = 0; t < nt; ++t) {
    float ss = 0.0f;
#pragma unroll
    for (int w = 0; w < kMaxWarps; ++w)
      if (w < warps) ss += ss_s[t][w];
    row[t * lay.row + (tensor == kFeK ? lay.qk : 0) + ch] = y[t] * fe_inv_l2(ss, p.l2_eps);
  }
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
      if (r < K && col < V - j0) dec_cp_async_16(&state_s[r][col], state + r * V + col);
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
  if constexpr (kAsync) dec_cp_async_wait_all();
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

// Static shared memory of a kernel in bytes, or -1 where the query fails.
template <typename Kernel>
int64_t decode_static_smem(Kernel kernel) {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, kernel) == cudaSuccess) return int64_t(attr.sharedSizeBytes);
  (void)cudaGetLastError();  // not the launch's error: the launch reports its own
  return -1;
}

template <typename T, typename St, int kRows, int kWarps>
cudaError_t launch_decode_shape(const GdnFrontEndParams& p, float* fe, const dim3& grid,
                                cudaStream_t stream) {
  constexpr int kChunkElems = 16 / int(sizeof(St));
  const size_t smem = decode_dynamic_smem<St, kRows * kWarps>(p.shape.T);
  // 16-byte copies need every state row of the block on a 16-byte boundary.
  const bool async = p.shape.V % kChunkElems == 0 && reinterpret_cast<uintptr_t>(p.state) % 16 == 0;
  auto kernel = async ? gdn_decode_kernel<T, St, kRows, kWarps, true> : gdn_decode_kernel<T, St, kRows, kWarps, false>;
  // Without the opt-in a launch may use 48 KiB of shared memory in all, static included: the
  // default dynamic limit is 48 KiB minus the kernel's static part (7.2 KiB at W = 16), so K = 256
  // with a float32 state at T = 5..7 (42-46 KiB dynamic) needs the opt-in too. The static size
  // is a property of the compiled kernel; -1 (query failed) always opts in.
  static const int64_t static_smem[2] = {decode_static_smem(gdn_decode_kernel<T, St, kRows, kWarps, false>),
                                         decode_static_smem(gdn_decode_kernel<T, St, kRows, kWarps, true>)};
  const int64_t static_bytes = static_smem[async ? 1 : 0];
  if (static_bytes < 0 || int64_t(smem) + static_bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  // The front end rolls the conv caches in place, so it is launched only once the state update
  // can be: an error before this point leaves the pools untouched.
  const dim3 fe_grid(unsigned(2 * p.shape.H + p.shape.HV), unsigned(p.shape.B));
  gdn_decode_frontend_kernel<T><<<fe_grid, decode_fe_threads(p.shape), 0, stream>>>(p, fe);
  if (const cudaError_t e = cudaGetLastError()) return e;
  kernel<<<grid, kWarps * 32, smem, stream>>>(p, fe);
  return cudaGetLastError();
}

template <typename T, typename St>
cudaError_t launch_decode_for_types(const GdnFrontEndParams& p, float* fe, cudaStream_t stream) {
  const int64_t heads = p.shape.B * p.shape.HV, y = heads < kMaxGridY ? heads : kMaxGridY;
  const dim3 grid(unsigned((p.shape.V + 31) / 32), unsigned(y), unsigned((heads + y - 1) / y));
  if (p.shape.K <= 64) return launch_decode_shape<T, St, 8, 8>(p, fe, grid, stream);
  if (p.shape.K <= 128) return launch_decode_shape<T, St, 16, 8>(p, fe, grid, stream);
  return launch_decode_shape<T, St, 16, 16>(p, fe, grid, stream);
}

template <typename T>
cudaError_t launch_decode_for_type(const GdnFrontEndParams& p, float* fe, cudaStream_t stream) {
  return p.state_bf16 ? launch_decode_for_types<T, __nv_bfloat16>(p, fe, stream)
                      : launch_decode_for_types<T, float>(p, fe, stream);
}

}  // namespace

const char* gdn_decode_shape_unsupported(const GdnShape& s) {
  if (s.T < 1 || s.T > kDecodeMaxTokens) return "decode takes 1 to 8 new tokens per sequence (T <= 8)";
  if (s.K > 256 || s.V > 256) return "K and V must be <= 256";
  if (s.H < 1 || s.HV % s.H != 0) return "HV must be a multiple of H";
  if (s.B * s.HV > kMaxGridY * kMaxGridY) return "B * HV too large for one grid";
  if (s.B > kMaxGridY) return "decode's front-end grid needs B <= 65535";
  return nullptr;
}

size_t gdn_decode_workspace_bytes(const GdnShape& s) {
  return size_t(s.B * s.T) * size_t(DecodeFeLayout(s).row) * sizeof(float);
}

int launch_gdn_decode(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream) {
  if (gdn_decode_shape_unsupported(p.shape) || !workspace) return int(cudaErrorInvalidValue);
  if (!p.state || !p.slots || !p.o || !p.a || !p.b || !p.A_log || !p.dt_bias) return int(cudaErrorInvalidValue);
  for (int t = 0; t < 3; ++t)
    if (!p.x[t] || !p.conv_w[t] || !p.cache_in[t] || p.cache_in[t] != p.cache_out[t])
      return int(cudaErrorInvalidValue);
  float* fe = static_cast<float*>(workspace);
  switch (p.dtype) {
    case DType::f32: return int(launch_decode_for_type<float>(p, fe, stream));
    case DType::bf16: return int(launch_decode_for_type<__nv_bfloat16>(p, fe, stream));
    case DType::f16: return int(launch_decode_for_type<__half>(p, fe, stream));
  }
  return int(cudaErrorInvalidValue);
}
