// frontend: the GDN front end alone (DESIGN.md section 1, "Fused front end"), and unfused_conv,
// which runs it into a workspace and hands the result to wy_ut.
//   q, k = l2norm(SiLU(causal_conv4(x_q, x_k)))  per head, eps inside the square root
//   v    = SiLU(causal_conv4(x_v))
//   g    = -exp(A_log) softplus(a + dt_bias),  beta = sigmoid(b)
// Work split: one block of 128 threads per (32-token tile, role, b); the roles are the H q heads,
// the H k heads, the HV v heads and one gate block. A thread owns channels c = tid, tid + 128, ...
// of its head: it loads the 3 inputs before the tile (previous tokens, or the conv cache at the
// sequence start), rolls ConvChannel over the tile and stages SiLU(conv) in shared memory; a warp
// per token then reduces the row's sum of squares (q and k); the tile is written coalesced. The
// block holding the last token writes the final conv cache: the last 3 inputs, exactly.
// Differs from the fused decode (kernels/decode.cu) only in its work split: same device functions.
// unfused_conv writes q, k, v in the dtype (the rounding the tensor cores need anyway), g and
// beta in float32: 2 B T (H K + H K + HV V) dtype bytes and 16 B T HV bytes of traffic that a fused
// prologue saves.
// Budget: shared 32 x 256 x 4 B = 32 KiB for the tile + 128 B; registers: the tile's 32 inputs of
// a channel plus its conv state.
// Rounds: float32 throughout; q, k, v rounded to the dtype once when written.
#include <cuda_runtime.h>

#include "kernels/frontend.cuh"
#include "kernels/wy_ut.h"

namespace {

constexpr int kFeThreads = 128;
constexpr int kFeTile = 32;     // tokens per block
constexpr int kFeMaxDim = 256;  // K and V

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

template <typename T>
__global__ void __launch_bounds__(kFeThreads)
gdn_frontend_kernel(const GdnFrontEndParams p, T* q, T* k, T* v, float* g, float* beta) {
  __shared__ float y_s[kFeTile][kFeMaxDim];
  __shared__ float inv_s[kFeTile];
  const GdnShape s = p.shape;
  const int64_t b = blockIdx.z, t0 = int64_t(blockIdx.x) * kFeTile;
  const int steps = s.T - t0 < kFeTile ? int(s.T - t0) : kFeTile;
  const int64_t role = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  if (role == 2 * s.H + s.HV) {  // the gates of the tile's tokens
    const T* a = static_cast<const T*>(p.a);
    const T* bb = static_cast<const T*>(p.b);
    for (int64_t idx = threadIdx.x; idx < int64_t(steps) * s.HV; idx += kFeThreads) {
      const int64_t hv = idx % s.HV, gi = (b * s.T + t0) * s.HV + idx;
      g[gi] = fe_gate(to_float(a[gi]), p.A_log[hv], p.dt_bias[hv]);
      beta[gi] = fe_beta(to_float(bb[gi]));
    }
    return;
  }
  const int tensor = role < s.H ? kFeQ : role < 2 * s.H ? kFeK : kFeV;
  const int64_t head = role - (tensor == kFeQ ? 0 : tensor == kFeK ? s.H : 2 * s.H);
  const int64_t D = tensor == kFeV ? s.V : s.K, heads = tensor == kFeV ? s.HV : s.H;
  const int64_t channels = heads * D;
  const T* x = static_cast<const T*>(p.x[tensor]);
  const T* w = static_cast<const T*>(p.conv_w[tensor]);
  const T* bias = static_cast<const T*>(p.conv_bias[tensor]);
  const T* cache_in = static_cast<const T*>(p.cache_in[tensor]);
  T* cache_out = static_cast<T*>(p.cache_out[tensor]);
  T* out = tensor == kFeQ ? q : tensor == kFeK ? k : v;

  for (int64_t c = threadIdx.x; c < D; c += kFeThreads) {
    const int64_t ch = head * D + c;
    ConvChannel conv;
    conv.load<T>(w + ch * kConvWidth, bias ? bias + ch : nullptr, nullptr);
#pragma unroll
    for (int i = 0; i < kConvCache; ++i)
      conv.hist[i] = fe_conv_input(x, cache_in, b, t0 - kConvCache + i, ch, s.T, channels);
    // All of the tile's loads first, so they are in flight together (one at a time, a block
    // would wait out kFeTile memory latencies).
    float xs[kFeTile];
    const T* xp = x + (b * s.T + t0) * channels + ch;
#pragma unroll
    for (int tt = 0; tt < kFeTile; ++tt) {
      xs[tt] = tt < steps ? to_float(*xp) : 0.0f;
      xp += channels;
    }
#pragma unroll
    for (int tt = 0; tt < kFeTile; ++tt)
      if (tt < steps) y_s[tt][c] = fe_silu(conv.step(xs[tt]));
    if (t0 + steps == s.T && cache_out) conv.store_cache(cache_out + (b * channels + ch) * kConvCache);
  }
  __syncthreads();
  if (tensor != kFeV) {
    for (int tt = warp; tt < steps; tt += kFeThreads / 32) {
      const float ss = fe_warp_sum_sq(y_s[tt], int(D));
      if (lane == 0) inv_s[tt] = fe_inv_l2(ss, p.l2_eps);
    }
    __syncthreads();
  }
  for (int64_t idx = threadIdx.x; idx < int64_t(steps) * D; idx += kFeThreads) {
    const int tt = int(idx / D);
    const int64_t c = idx % D;
    const float y = tensor == kFeV ? y_s[tt][c] : y_s[tt][c] * inv_s[tt];
    out[((b * s.T + t0 + tt) * heads + head) * D + c] = from_float<T>(y);
  }
}

template <typename T>
cudaError_t launch_frontend_for_type(const GdnFrontEndParams& p, void* q, void* k, void* v, float* g,
                                     float* beta, cudaStream_t stream) {
  const GdnShape& s = p.shape;
  const dim3 grid(unsigned((s.T + kFeTile - 1) / kFeTile), unsigned(2 * s.H + s.HV + 1), unsigned(s.B));
  gdn_frontend_kernel<T><<<grid, kFeThreads, 0, stream>>>(p, static_cast<T*>(q), static_cast<T*>(k),
                                                         static_cast<T*>(v), g, beta);
  return cudaGetLastError();
}

GdnParams wy_ut_params(const GdnShape& shape, DType dtype) {
  GdnParams gp;
  gp.shape = shape;
  gp.dtype = dtype;
  gp.chunk = kWyUtChunk;
  return gp;
}

// The parts of the unfused workspace, in order.
struct UnfusedParts {
  size_t q = 0, k = 0, v = 0, g = 0, beta = 0, wy = 0, total = 0;
};
UnfusedParts unfused_parts(const GdnShape& s, DType dtype) {
  const size_t e = dtype_bytes(dtype);
  UnfusedParts u;
  u.k = u.q + align256(size_t(s.qk_elems()) * e);
  u.v = u.k + align256(size_t(s.qk_elems()) * e);
  u.g = u.v + align256(size_t(s.v_elems()) * e);
  u.beta = u.g + align256(size_t(s.gate_elems()) * 4);
  u.wy = u.beta + align256(size_t(s.gate_elems()) * 4);
  u.total = u.wy + gdn_wy_ut_workspace_bytes(wy_ut_params(s, dtype));
  return u;
}

}  // namespace

int launch_gdn_frontend(const GdnFrontEndParams& p, void* q, void* k, void* v, float* g, float* beta,
                        cudaStream_t stream) {
  const GdnShape& s = p.shape;
  if (s.K > kFeMaxDim || s.V > kFeMaxDim || s.K < 1 || s.V < 1 || s.T < 1) return int(cudaErrorInvalidValue);
  if (s.B > 65535 || 2 * s.H + s.HV + 1 > 65535 || (s.T + kFeTile - 1) / kFeTile > 2147483647)
    return int(cudaErrorInvalidValue);
  if (!q || !k || !v || !g || !beta || !p.a || !p.b || !p.A_log || !p.dt_bias) return int(cudaErrorInvalidValue);
  for (int t = 0; t < 3; ++t)
    if (!p.x[t] || !p.conv_w[t]) return int(cudaErrorInvalidValue);
  switch (p.dtype) {
    case DType::f32: return int(launch_frontend_for_type<float>(p, q, k, v, g, beta, stream));
    case DType::bf16: return int(launch_frontend_for_type<__nv_bfloat16>(p, q, k, v, g, beta, stream));
    case DType::f16: return int(launch_frontend_for_type<__half>(p, q, k, v, g, beta, stream));
  }
  return int(cudaErrorInvalidValue);
}

const char* gdn_frontend_unfused_shape_unsupported(const GdnShape& shape, DType dtype) {
  return gdn_wy_ut_shape_unsupported(wy_ut_params(shape, dtype));
}

size_t gdn_frontend_unfused_workspace_bytes(const GdnShape& shape, DType dtype) {
  return unfused_parts(shape, dtype).total;
}

int launch_gdn_frontend_unfused(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream) {
  if (gdn_frontend_unfused_shape_unsupported(p.shape, p.dtype) || !workspace) return int(cudaErrorInvalidValue);
  const UnfusedParts parts = unfused_parts(p.shape, p.dtype);
  char* ws = static_cast<char*>(workspace);
  GdnParams gp = wy_ut_params(p.shape, p.dtype);
  gp.q = ws + parts.q;
  gp.k = ws + parts.k;
  gp.v = ws + parts.v;
  gp.g = reinterpret_cast<const float*>(ws + parts.g);
  gp.beta = reinterpret_cast<const float*>(ws + parts.beta);
  gp.h0 = p.h0;
  gp.o = p.o;
  gp.hT = p.hT;
  gp.scale = p.scale;
  gp.use_delta = p.use_delta;
  const int fe = launch_gdn_frontend(p, ws + parts.q, ws + parts.k, ws + parts.v,
                                     reinterpret_cast<float*>(ws + parts.g),
                                     reinterpret_cast<float*>(ws + parts.beta), stream);
  if (fe != int(cudaSuccess)) return fe;
  return launch_gdn_wy_ut(gp, ws + parts.wy, stream);
}
