// cpu_recurrent: the step form of docs/DESIGN.md section 1 in float32, one (b, hv) head per task
// (of a packed batch: one (sequence, hv) head, from the sequence's own h0 over its own tokens).
//   S' = exp(g_t) S;  u = beta_t (v_t - S'^T k_t);  S = S' + k_t u^T;  o_t = S^T (scale q_t)
// Rounds: float32 arithmetic throughout, o rounded to params.dtype, hT kept in float32.
// Workspace per worker: the K x V state and a V-vector. The step itself lives in
// cpu_recurrent_step.h, shared with the backward.
// GDN_MUTATE / GDN_MUTANT_ONLY: planted bugs of the mutation check (kernels/cpu/cpu_mutation.h); in
// release builds they are the original expression and nothing.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_mutation.h"
#include "kernels/cpu/cpu_recurrent_step.h"

size_t cpu_recurrent_workspace_floats(const GdnParams& p) {
  return size_t(p.shape.K * p.shape.V + p.shape.V);
}

CpuStatus run_cpu_recurrent(const GdnParams& p, float* workspace, int threads) {
  const GdnShape s = p.shape;
  const auto* q = static_cast<const float*>(p.q);
  const auto* k = static_cast<const float*>(p.k);
  auto* o = static_cast<float*>(p.o);
  const size_t ws = cpu_recurrent_workspace_floats(p);
  // One task a (sequence, hv) head: a packed batch's sequences are independent like batch rows.
  cpu_parallel_for(s.sequences() * s.HV, threads, [&](int64_t head, int worker) {
    const GdnSequence seq = gdn_sequence(s, p.cu_seqlens, head / s.HV);
    const int64_t b = seq.b, hv = head % s.HV;
    const int64_t h = cpu_qk_head(s, hv);
    float* S = workspace + worker * ws;
    float* u = S + s.K * s.V;
    cpu_initial_state(p, head, S);
    for (int64_t t = GDN_MUTATE(state_carried_across_sequences, seq.begin, 0); t < seq.end; ++t) {
      const int64_t gate_idx = (b * s.T + t) * s.HV + hv;
      const float* kt = k + ((b * s.T + t) * s.H + h) * s.K;
      const float* qt = q + ((b * s.T + t) * s.H + h) * s.K;
      cpu_recurrent_step(p, b, t, hv, kt, S, u);
      if (GDN_MUTATE(state_carried_across_sequences, false, t < seq.begin)) continue;  // earlier sequences' tokens
      float* ot = o + gate_idx * s.V;
      std::fill_n(ot, s.V, 0.0f);
      for (int64_t i = 0; i < s.K; ++i) {
        const float qi = p.scale * qt[i];
        for (int64_t j = 0; j < s.V; ++j) ot[j] += S[i * s.V + j] * qi;
      }
      GDN_MUTANT_ONLY(readout_before_update, mutant_remove_own_update(p, ot, qt, kt, u));
      for (int64_t j = 0; j < s.V; ++j) ot[j] = round_to(p.dtype, ot[j]);
    }
    if (p.hT) std::copy_n(S, s.K * s.V, p.hT + head * s.K * s.V);
  });
  return CpuStatus::ok;
}
