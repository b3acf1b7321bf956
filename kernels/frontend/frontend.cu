// frontend: the GDN front end alone (docs/DESIGN.md section 1, "Fused front end"), and unfused_conv,
// which runs it into a workspace and hands the result to wy_ut.
//   q, k = l2norm(SiLU(causal_conv4(x_q, x_k)))  per head, eps inside the square root
//   v    = SiLU(causal_conv4(x_v))
//   g    = -exp(A_log) softplus(a + dt_bias),  beta = sigmoid(b)
// Why not a thread per channel with the tile staged in shared memory and a warp per token for the
// norm: that form is instruction bound (at B=1 T=16384 H=HV=32 K=V=128 bf16, DRAM 15%, SM 65%).
// Here a thread owns kFeVec = 8 consecutive channels of one head and rolls their
// convolutions over the kFeTile tokens of its block, so a token's row of a head sits in the
// registers of `lanes` = next_pow2(ceil(D / 8)) adjacent lanes (16 at D = 128): the sum of
// squares is a shuffle reduction over those lanes, the outputs go straight from registers to
// global memory, and nothing is staged in shared memory. Loads and stores move 8 channels at a
// time (16 bytes in bf16/fp16, two 16-byte accesses in fp32) when K and V are multiples of 8 and
// the buffers 16-byte aligned (else the same code one element at a time). The loads of the next
// kFeStep tokens are in flight while a token is computed. Index math: 64-bit only for the row
// base of the block and the per-token pointer step; everything else is 32-bit.
// The per-thread roll (taps, the 3 inputs before the run, conv + SiLU + norm over the run) is
// fe_roll in kernels/frontend/frontend.cuh, which fused_conv's tile builders (kernels/wy_ut/) run too:
// one implementation, so q, k, v come out bit for bit the same in unfused_conv and fused_conv.
// Work split: one block of kFeThreads = 128 threads per (32-token tile, head group, b); a head
// group is 128 / lanes heads of one tensor (8 q heads at K = 128), then one gate block per tile.
// The 3 inputs before the tile come from the previous tokens or, at the sequence start, from the
// conv cache; the block holding the last token writes the final conv cache (the last 3 inputs,
// reloaded, so exact whatever the tile length).
// Constraints: K, V <= 256 (lanes <= 32, one warp); grid B <= 65535, head groups + 1 <= 65535.
// Budget: no shared memory; registers: 8 conv channels (4 taps, bias, 3 inputs: 64 floats),
// kFeStep tokens of raw inputs in flight (16 registers), a token's 8 outputs; capped at 128 for
// 4 blocks (16 warps) per SM. ptxas (vector / element-wise path): bf16 125 / 117, fp16 126 / 119,
// fp32 120 / 123 registers; no spills, no stack frame.
// Rounds: float32 throughout; q, k, v rounded to the dtype once when written.
// unfused_conv writes q, k, v in the dtype (the rounding the tensor cores need anyway), g and
// beta in float32: 2 B T (H K + H K + HV V) dtype bytes and 16 B T HV bytes of traffic that a fused
// prologue saves.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/frontend/frontend.cuh"
#include "kernels/wy_ut/wy_ut.h"

namespace {

constexpr int kFeThreads = 128;
constexpr int kFeTile = 32;     // tokens per block
constexpr int kFeMaxDim = 256;  // K and V

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

// How the heads of a tensor with D channels per head map onto a block: `lanes` adjacent lanes per
// head (a power of two, lanes * kFeVec >= D), kFeThreads / lanes heads per block.
struct FeHeadMap {
  int shift = 0;   // log2(lanes)
  int groups = 0;  // blocks per tile for the tensor
};
FeHeadMap fe_head_map(int64_t D, int64_t heads) {
  FeHeadMap m;
  m.shift = fe_lanes_log2(int(D));
  const int64_t per_block = kFeThreads >> m.shift;
  m.groups = int((heads + per_block - 1) / per_block);
  return m;
}

// What the kernel needs beyond the params: the head maps and the block rows where k, v and the
// gates start (q starts at 0).
struct FeGrid {
  FeHeadMap qk, v;
  int k_row = 0, v_row = 0, gate_row = 0;
};

template <typename T, bool kVector>
__global__ void __launch_bounds__(kFeThreads, 4)
gdn_frontend_kernel(const GdnFrontEndParams p, const FeGrid fg, T* q, T* k, T* v, float* g, float* beta) {
  static_assert(kFeTile % kFeStep<T, kVector> == 0, "whole steps per tile");
  const GdnShape s = p.shape;
  const int64_t b = blockIdx.z, t0 = int64_t(blockIdx.x) * kFeTile;
  const int steps = s.T - t0 < kFeTile ? int(s.T - t0) : kFeTile;
  const int row = int(blockIdx.y), tid = int(threadIdx.x);

  if (row == fg.gate_row) {  // the gates of the tile's tokens
    const T* a = static_cast<const T*>(p.a);
    const T* bb = static_cast<const T*>(p.b);
    const int HV = int(s.HV), n = steps * HV;
    const int64_t base = (b * s.T + t0) * s.HV;
    for (int idx = tid; idx < n; idx += kFeThreads) {
      const int hv = idx % HV;
      const int64_t gi = base + idx;
      g[gi] = fe_gate(to_float(a[gi]), p.A_log[hv], p.dt_bias[hv]);
      beta[gi] = fe_beta(to_float(bb[gi]));
    }
    return;
  }
  const int tensor = row < fg.k_row ? kFeQ : row < fg.v_row ? kFeK : kFeV;
  const FeHeadMap map = tensor == kFeV ? fg.v : fg.qk;
  const int group = row - (tensor == kFeQ ? 0 : tensor == kFeK ? fg.k_row : fg.v_row);
  const int D = int(tensor == kFeV ? s.V : s.K), heads = int(tensor == kFeV ? s.HV : s.H);
  const int64_t channels = int64_t(heads) * D;
  const int lanes = 1 << map.shift;
  const int head = group * (kFeThreads >> map.shift) + (tid >> map.shift);
  const int c0 = (tid & (lanes - 1)) * kFeVec;
  // Lanes past the head's channels, or heads past the tensor's, compute zeros and take part in
  // the shuffles (their group's lanes are all idle or all in the same head).
  const bool active = head < heads && c0 < D;
  const int n = D - c0;  // channels of this thread's head from c0 on
  const int ch = head * D + c0;
  const T* x = static_cast<const T*>(p.x[tensor]);
  const T* w = static_cast<const T*>(p.conv_w[tensor]);
  const T* bias = static_cast<const T*>(p.conv_bias[tensor]);
  const T* cache_in = static_cast<const T*>(p.cache_in[tensor]);
  T* cache_out = static_cast<T*>(p.cache_out[tensor]);
  T* out = tensor == kFeQ ? q : tensor == kFeK ? k : v;

  ConvChannel conv[kFeVec];
  fe_load_taps<T, kVector>(conv, w, bias, ch, n, active);
  const T* xp = x + (b * s.T + t0) * channels + ch;
  fe_load_history<T, kVector>(conv, xp, cache_in, b, t0, channels, ch, n, active);
  T* op = out + (b * s.T + t0) * channels + ch;
  fe_roll<T, kVector>(conv, xp, channels, steps, steps, n, active, tensor != kFeV, lanes, p.l2_eps,
                      [&](int i, const float (&y)[kFeVec], bool) {
                        if (active) fe_store<T, kVector>(op + i * channels, y, n);
                      });
  // The final cache: the sequence's last 3 inputs, exactly as read.
  if (t0 + steps == s.T && cache_out && active) {
    for (int c = 0; c < kFeVec && c < n; ++c)
#pragma unroll
      for (int i = 0; i < kConvCache; ++i)
        cache_out[(b * channels + ch + c) * kConvCache + i] =
            from_float<T>(fe_conv_input(x, cache_in, b, s.T - kConvCache + i, int64_t(ch + c), s.T, channels));
  }
}

template <typename T>
cudaError_t launch_frontend_for_type(const GdnFrontEndParams& p, const FeGrid& fg, void* q, void* k, void* v,
                                     float* g, float* beta, cudaStream_t stream) {
  const GdnShape& s = p.shape;
  const dim3 grid(unsigned((s.T + kFeTile - 1) / kFeTile), unsigned(fg.gate_row + 1), unsigned(s.B));
  // 16-byte accesses need every row of 8 channels on a 16-byte boundary.
  bool vector = s.K % kFeVec == 0 && s.V % kFeVec == 0 && aligned16(q) && aligned16(k) && aligned16(v);
  for (int t = 0; t < 3; ++t)
    vector = vector && aligned16(p.x[t]) && aligned16(p.conv_w[t]) && aligned16(p.conv_bias[t]);
  if (vector)
    gdn_frontend_kernel<T, true><<<grid, kFeThreads, 0, stream>>>(p, fg, static_cast<T*>(q), static_cast<T*>(k),
                                                                 static_cast<T*>(v), g, beta);
  else
    gdn_frontend_kernel<T, false><<<grid, kFeThreads, 0, stream>>>(p, fg, static_cast<T*>(q), static_cast<T*>(k),
                                                                  static_cast<T*>(v), g, beta);
  return cudaGetLastError();
}

// The parts of the unfused workspace, in order.
struct UnfusedParts {
  size_t q = 0, k = 0, v = 0, g = 0, beta = 0, wy = 0, total = 0;
};
UnfusedParts unfused_parts(const GdnShape& s, DType dtype, int64_t scan_groups) {
  const size_t e = dtype_bytes(dtype);
  UnfusedParts u;
  u.k = u.q + align256(size_t(s.qk_elems()) * e);
  u.v = u.k + align256(size_t(s.qk_elems()) * e);
  u.g = u.v + align256(size_t(s.v_elems()) * e);
  u.beta = u.g + align256(size_t(s.gate_elems()) * 4);
  u.wy = u.beta + align256(size_t(s.gate_elems()) * 4);
  GdnParams gp = gdn_wy_ut_shape_params(s, dtype);
  gp.scan_groups = scan_groups;
  u.total = u.wy + gdn_wy_ut_workspace_bytes(gp);
  return u;
}

}  // namespace

int launch_gdn_frontend(const GdnFrontEndParams& p, void* q, void* k, void* v, float* g, float* beta,
                        cudaStream_t stream) {
  const GdnShape& s = p.shape;
  if (s.K > kFeMaxDim || s.V > kFeMaxDim || s.K < 1 || s.V < 1 || s.T < 1) return int(cudaErrorInvalidValue);
  if (s.H < 1 || s.HV < 1 || s.H * s.K > INT32_MAX || s.HV * s.V > INT32_MAX) return int(cudaErrorInvalidValue);
  FeGrid fg;
  fg.qk = fe_head_map(s.K, s.H);
  fg.v = fe_head_map(s.V, s.HV);
  fg.k_row = fg.qk.groups;
  fg.v_row = 2 * fg.qk.groups;
  fg.gate_row = 2 * fg.qk.groups + fg.v.groups;
  if (s.B > 65535 || fg.gate_row + 1 > 65535 || (s.T + kFeTile - 1) / kFeTile > 2147483647 ||
      kFeTile * s.HV > INT32_MAX)
    return int(cudaErrorInvalidValue);
  if (!q || !k || !v || !g || !beta || !p.a || !p.b || !p.A_log || !p.dt_bias) return int(cudaErrorInvalidValue);
  for (int t = 0; t < 3; ++t)
    if (!p.x[t] || !p.conv_w[t]) return int(cudaErrorInvalidValue);
  switch (p.dtype) {
    case DType::f32: return int(launch_frontend_for_type<float>(p, fg, q, k, v, g, beta, stream));
    case DType::bf16: return int(launch_frontend_for_type<__nv_bfloat16>(p, fg, q, k, v, g, beta, stream));
    case DType::f16: return int(launch_frontend_for_type<__half>(p, fg, q, k, v, g, beta, stream));
  }
  return int(cudaErrorInvalidValue);
}

const char* gdn_frontend_unfused_shape_unsupported(const GdnShape& shape, DType dtype) {
  return gdn_wy_ut_shape_unsupported(gdn_wy_ut_shape_params(shape, dtype));
}

size_t gdn_frontend_unfused_workspace_bytes(const GdnShape& shape, DType dtype, int64_t scan_groups) {
  return unfused_parts(shape, dtype, scan_groups).total;
}

int launch_gdn_frontend_unfused(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream) {
  if (gdn_frontend_unfused_shape_unsupported(p.shape, p.dtype) || !workspace) return int(cudaErrorInvalidValue);
  const UnfusedParts parts = unfused_parts(p.shape, p.dtype, p.scan_groups);
  char* ws = static_cast<char*>(workspace);
  GdnParams gp = gdn_wy_ut_shape_params(p.shape, p.dtype);
  gp.scan_groups = p.scan_groups;
  gp.wy_ut_output = p.wy_ut_output;
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
