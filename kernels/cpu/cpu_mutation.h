// Planted bugs for the mutation check (tests/mutation/): each CpuMutation is a known-wrong version
// of one step of a CPU kernel, and the gate suite must fail every one of them. The kernels mark
// each plant with a one-line hook:
//   GDN_MUTATE(m, original, mutant)   the expression `original`, or `mutant` while m is selected
//   GDN_MUTANT_ONLY(m, statement...)  a statement that runs only while m is selected
// Only the gdn_kernels_cpu_mutable library (tests) defines GDNBENCH_MUTATION_HOOKS. Without it
// GDN_MUTATE expands to `(original)` and GDN_MUTANT_ONLY to an empty statement, so release kernels
// hold no selector, no branch and no extra code, and nothing below exists to be called.
#pragma once

#ifdef GDNBENCH_MUTATION_HOOKS
#include <cstdint>

#include "kernels/common/dtype.h"
#include "kernels/common/gdn_params.h"

enum class CpuMutation {
  none,
  // Both kernels.
  decay_after_delta,    // recurrent: S = e^g (S + k u^T), u read from the undecayed S;
                        // chunked: W = Tm diag(beta) K, the delta step reads S0 undecayed
  h0_transposed,        // h0 read as [V, K]
  no_beta,              // beta taken as 1 (delta rule at full strength)
  gate_sign,            // exp(-g) instead of exp(g)
  readout_before_update,  // o_t read before token t's own update (chunked: causal mask j < i;
                          // recurrent: the update's term subtracted from o again)
  gva_head_interleaved,   // value head hv reads q/k head hv % H instead of hv / (HV / H)
  g_ignores_batch,      // g read at batch 0 for every batch
  // Packed batches (cu_seqlens): only the gate's packed lines can catch these.
  state_carried_across_sequences,  // cpu_recurrent: a sequence's state runs over every earlier
                                   // sequence's tokens first, as if the batch were one sequence
  chunks_on_packed_grid,  // cpu_chunked: chunks at multiples of C of the packed layout, so the
                          // chunk a sequence starts in takes the previous sequence's last tokens
  state_in_dtype,       // the state rounded to the problem dtype after every update
  state_not_zeroed,     // h0 off: the state starts from whatever the worker's scratch holds
  // cpu_chunked only.
  skip_tail_decay,      // a tail chunk (L < C) carries its entering state without e^gamma_last
  drop_A_diagonal,      // A keeps its diagonal beta_i k_i.k_i (it must be 0), and the inverse
                        // honours it: Tm = (I + lower(A))^-1
  chunk_off_by_one,     // chunks start every C - 1 tokens: each boundary token applied twice
  tail_rows_leak,       // the tail chunk's state update runs over all C rows; rows past L still
                        // hold the previous chunk's k, U, gamma (an unzeroed tile)
  decay_ratio_underflow,  // e^(gi - gj) computed as e^gi / e^gj: 0/0 once e^gamma underflows
  A_rounded_bf16,       // A rounded to bf16 (a low-precision operand in the UT transform)
  // The backward passes, both kernels.
  bwd_decay_index,      // recurrent: dS carried back through token t by exp(g_{t-1}), not exp(g_t);
                        // chunked: dS0 += exp(gamma_{L-2}) dS_C, the last row's decay left out
  bwd_drop_dht,         // dS starts from zero: the dhT term of the loss dropped
  bwd_dbeta_no_residual,  // dbeta = du . v, without the - S'^T k of the residual v - S'^T k
                          // (chunked: dbeta without its W = Tm diag(beta E) K term)
  bwd_dh0_not_propagated,  // dh0 = dL/dS after token 0 (chunked: after chunk 0), not carried
                           // through its step
  // The cpu_chunked backward only.
  bwd_tail_cumsum_off_by_one,  // in a tail chunk (L < C) dg's reverse cumsum starts a row early:
                               // the last row's dgamma reaches no row above it
};

// The selected mutation. The kernels read it from their worker threads, which each kernel call
// starts after the caller set it: set it between kernel calls only.
inline CpuMutation g_cpu_mutation = CpuMutation::none;
inline void set_cpu_mutation(CpuMutation m) { g_cpu_mutation = m; }
inline CpuMutation cpu_mutation() { return g_cpu_mutation; }

#define GDN_MUTATE(m, original, mutant) (cpu_mutation() == CpuMutation::m ? (mutant) : (original))
#define GDN_MUTANT_ONLY(m, ...)                            \
  do {                                                     \
    if (cpu_mutation() == CpuMutation::m) { __VA_ARGS__; } \
  } while (0)

// Mutant steps too long for a one-line hook.
// h0_transposed: the state of `head` read from h0 as [V, K] (no-op without h0).
inline void mutant_h0_transposed(const GdnParams& p, int64_t head, float* S) {
  const int64_t K = p.shape.K, V = p.shape.V;
  if (!p.h0) return;
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < V; ++j) S[i * V + j] = p.h0[head * K * V + j * K + i];
}
inline void mutant_scale(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}
inline void mutant_round(float* x, int64_t n, DType dtype) {
  for (int64_t i = 0; i < n; ++i) x[i] = round_to(dtype, x[i]);
}
// readout_before_update in the step form: o -= scale (q.k) u takes the token's own rank-1 update
// back out of o = S^T (scale q).
inline void mutant_remove_own_update(const GdnParams& p, float* o, const float* q, const float* k,
                                     const float* u) {
  float qk = 0.0f;
  for (int64_t i = 0; i < p.shape.K; ++i) qk += q[i] * k[i];
  for (int64_t j = 0; j < p.shape.V; ++j) o[j] -= p.scale * qk * u[j];
}

#else
#define GDN_MUTATE(m, original, mutant) (original)
#define GDN_MUTANT_ONLY(m, ...) do { } while (0)
#endif
