// fused_decode's shared pieces: the grid over (b, hv) heads, the front end's rows in the
// workspace (DecodeFeLayout) and the gates of one token.
//   alpha = exp(g), g = -exp(A_log) softplus(a + dt_bias);  beta = sigmoid(b)
// Workspace layout, float32, [B][T] rows of: q, k (normalised) [2][H][K], v [HV][V], then the
// gates (alpha, beta) [HV][2]: ~49 KiB per (b, t) at H = HV = 32, K = V = 128, written by the
// front-end kernel and read by the state kernel from L2.
// Included only by decode/launch.cu: fused_decode is one translation unit, its kernels and launchers
// in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/cuda_common.cuh"
#include "kernels/frontend/frontend.cuh"

namespace {

constexpr int64_t kMaxGridY = 65535;

// A grid of x blocks per (b, hv) head, the B x HV heads over y and, past kMaxGridY, z.
dim3 decode_heads_grid(const GdnShape& s, int64_t x) {
  const int64_t heads = s.B * s.HV, y = heads < kMaxGridY ? heads : kMaxGridY;
  return dim3(unsigned(x), unsigned(y), unsigned((heads + y - 1) / y));
}


// Programmatic Dependent Launch of the state kernel: its state loads are issued while the front
// end still runs. The kernels are correct without it too (griddepcontrol.wait returns at once in a
// grid launched without the attribute); false launches every state kernel plainly.
constexpr bool kDecodePdl = true;


// The front end of every (b, t) row, [B][T] of: q, k (normalised) [2][H][K], v [HV][V], then the
// gates (alpha = exp(g), beta) [HV][2]; float32, in the workspace, read by the step kernel from L2.
struct DecodeFeLayout {
  int64_t qk, v, row;  // floats: q or k part, v part, one (b, t) row with the gates
  __host__ __device__ DecodeFeLayout(const GdnShape& s)
      : qk(s.H * s.K), v(s.HV * s.V), row(2 * s.H * s.K + s.HV * s.V + 2 * s.HV) {}
};

constexpr int kFeMaxThreads = 256;  // one channel per thread: K, V <= 256

// (alpha = exp(g), beta) of token t of row b, value head hv.
template <typename T>
__device__ __forceinline__ float2 decode_gate_values(const GdnFrontEndParams& p, int64_t b, int t, int hv) {
  const int64_t gi = (b * p.shape.T + t) * p.shape.HV + hv;
  return make_float2(expf(fe_gate(to_float(static_cast<const T*>(p.a)[gi]), p.A_log[hv], p.dt_bias[hv])),
                     fe_beta(to_float(static_cast<const T*>(p.b)[gi])));
}
// The gates of row (b, t) and value head hv into the front end's row.
template <typename T>
__device__ __forceinline__ void decode_fe_gates(const GdnFrontEndParams& p, float* fe, const DecodeFeLayout& lay,
                                                int64_t b, int t, int hv) {
  float* gates = fe + (b * p.shape.T + t) * lay.row + 2 * lay.qk + lay.v + 2 * hv;
  const float2 g = decode_gate_values<T>(p, b, t, hv);
  gates[0] = g.x;
  gates[1] = g.y;
}

}  // namespace
