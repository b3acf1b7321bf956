// One token of cpu_recurrent's step form, shared by its forward and by the backward that
// recomputes the forward's states from checkpoints, so the recomputed states are the forward's bit
// for bit. The planted bugs of the mutation check (kernels/cpu/cpu_mutation.h) sit here once.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/common/gdn_params.h"
#include "kernels/cpu/cpu_mutation.h"

// The q/k head that value head hv reads (grouped value heads: HV / H value heads a q/k head).
inline int64_t cpu_qk_head(const GdnShape& s, int64_t hv) {
  return GDN_MUTATE(gva_head_interleaved, hv / s.group(), hv % s.H);
}

// Token t of head (b, hv) on the K x V state S, in place:
//   S' = exp(g_t) S;  u = beta_t (v_t - S'^T k_t);  S = S' + k_t u^T   (u = v_t without the delta term)
// u receives the token's new value (V floats).
inline void cpu_recurrent_step(const GdnParams& p, int64_t b, int64_t t, int64_t hv, const float* kt, float* S,
                               float* u) {
  const GdnShape& s = p.shape;
  const int64_t gate_idx = (b * s.T + t) * s.HV + hv;
  const float* vt = static_cast<const float*>(p.v) + gate_idx * s.V;
  if (GDN_MUTATE(decay_after_delta, p.g, nullptr)) {
    const float g_t = p.g[GDN_MUTATE(g_ignores_batch, gate_idx, t * s.HV + hv)];
    const float alpha = std::exp(GDN_MUTATE(gate_sign, g_t, -g_t));
    for (int64_t x = 0; x < s.K * s.V; ++x) S[x] *= alpha;
  }
  if (p.use_delta) {
    const float beta = GDN_MUTATE(no_beta, p.beta[gate_idx], 1.0f);
    std::fill_n(u, s.V, 0.0f);
    for (int64_t i = 0; i < s.K; ++i)
      for (int64_t j = 0; j < s.V; ++j) u[j] += S[i * s.V + j] * kt[i];
    for (int64_t j = 0; j < s.V; ++j) u[j] = beta * (vt[j] - u[j]);
  } else {
    std::copy_n(vt, s.V, u);
  }
  for (int64_t i = 0; i < s.K; ++i)
    for (int64_t j = 0; j < s.V; ++j) S[i * s.V + j] += kt[i] * u[j];
  GDN_MUTANT_ONLY(decay_after_delta, if (p.g) mutant_scale(S, s.K * s.V, std::exp(p.g[gate_idx])));
  GDN_MUTANT_ONLY(state_in_dtype, mutant_round(S, s.K * s.V, p.dtype));
}

// The state entering token 0 of head (b, hv): h0, or zero.
inline void cpu_initial_state(const GdnParams& p, int64_t head, float* S) {
  const int64_t KV = p.shape.K * p.shape.V;
  if (p.h0) std::copy_n(p.h0 + head * KV, KV, S);
  else std::fill_n(S, GDN_MUTATE(state_not_zeroed, KV, 0), 0.0f);
  GDN_MUTANT_ONLY(h0_transposed, mutant_h0_transposed(p, head, S));
}
