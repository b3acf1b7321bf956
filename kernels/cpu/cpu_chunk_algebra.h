// The chunk algebra of cpu_chunked, shared by its forward and by its backward, which recomputes
// each chunk's gamma, A, Tm, W and U from the state entering the chunk: one definition, so the
// backward differentiates exactly what the forward computes. The planted bugs of the mutation check
// (kernels/cpu/cpu_mutation.h) sit here once. Notation of docs/DESIGN.md section 1:
//   gamma = cumsum(g);  A = strictly_lower(diag(beta) K K^T .* D);  Tm = (I + A)^-1
//   W = Tm diag(beta exp(gamma)) K;  U = Tm diag(beta) V - W S0
//   S_C = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/common/gdn_params.h"
#include "kernels/cpu/cpu_mutation.h"

// Where the rows of one (b, hv) head live.
struct CpuChunkHead {
  const GdnParams* p;
  int64_t b, h, hv;
  const float* k(int64_t t) const { return static_cast<const float*>(p->k) + ((b * p->shape.T + t) * p->shape.H + h) * p->shape.K; }
  const float* q(int64_t t) const { return static_cast<const float*>(p->q) + ((b * p->shape.T + t) * p->shape.H + h) * p->shape.K; }
  int64_t gidx(int64_t t) const { return (b * p->shape.T + t) * p->shape.HV + hv; }
  const float* v(int64_t t) const { return static_cast<const float*>(p->v) + gidx(t) * p->shape.V; }
};

// head: sequence n HV + hv (a batch row, or a sequence of a packed batch, all in row 0).
inline CpuChunkHead cpu_chunk_head(const GdnParams& p, int64_t head) {
  const int64_t b = gdn_sequence(p.shape, p.cu_seqlens, head / p.shape.HV).b, hv = head % p.shape.HV;
  return {&p, b, GDN_MUTATE(gva_head_interleaved, hv / p.shape.group(), hv % p.shape.H), hv};
}

// One chunk's tiles: gamma, beta (C each), A and Tm (C x C, row stride C), W (C x K), U (C x V).
struct CpuChunkTiles {
  float *gamma, *beta, *A, *Tm, *W, *U;
};
inline size_t cpu_chunk_tiles_floats(int64_t C, int64_t K, int64_t V) { return size_t(2 * C + 2 * C * C + C * K + C * V); }
inline CpuChunkTiles cpu_chunk_tiles(float* at, int64_t C, int64_t K) {
  CpuChunkTiles c;
  c.gamma = at;
  c.beta = c.gamma + C;
  c.A = c.beta + C;
  c.Tm = c.A + C * C;
  c.W = c.Tm + C * C;
  c.U = c.W + C * K;
  return c;
}

// The state entering the first chunk: h0, or zero.
inline void cpu_chunk_initial_state(const GdnParams& p, int64_t head, float* S) {
  const int64_t KV = p.shape.K * p.shape.V;
  if (p.h0) std::copy_n(p.h0 + head * KV, KV, S);
  else std::fill_n(S, GDN_MUTATE(state_not_zeroed, KV, 0), 0.0f);
  GDN_MUTANT_ONLY(h0_transposed, mutant_h0_transposed(p, head, S));
}

// gamma, beta, A, Tm, W and U of the chunk of L rows from t0, entering with state S. Without the
// delta term beta is 1 and A, W vanish (Tm = I, U = V).
inline void cpu_chunk_algebra(const CpuChunkHead& hd, int64_t t0, int64_t L, const float* S, CpuChunkTiles& c) {
  const GdnParams& p = *hd.p;
  const int64_t C = p.chunk, K = p.shape.K, V = p.shape.V;
  float acc = 0.0f;
  for (int64_t i = 0; i < L; ++i) {
    const float g = p.g ? p.g[GDN_MUTATE(g_ignores_batch, hd.gidx(t0 + i), (t0 + i) * p.shape.HV + hd.hv)] : 0.0f;
    acc += GDN_MUTATE(gate_sign, g, -g);
    c.gamma[i] = acc;
    c.beta[i] = p.use_delta ? GDN_MUTATE(no_beta, p.beta[hd.gidx(t0 + i)], 1.0f) : 1.0f;
  }
  // Tm = (I + A)^-1, row by row: Tm_ij = -sum_{j<=m<i} A_im Tm_mj.
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t j = 0; j < GDN_MUTATE(drop_A_diagonal, i, i + 1); ++j) {
      float kk = 0.0f;
      if (p.use_delta)
        for (int64_t r = 0; r < K; ++r) kk += hd.k(t0 + i)[r] * hd.k(t0 + j)[r];
      c.A[i * C + j] = c.beta[i] * kk * std::exp(c.gamma[i] - c.gamma[j]);
      GDN_MUTANT_ONLY(A_rounded_bf16, c.A[i * C + j] = round_to(DType::bf16, c.A[i * C + j]));
    }
    for (int64_t j = 0; j < i; ++j) {
      float sum = 0.0f;
      for (int64_t m = j; m < i; ++m) sum += c.A[i * C + m] * c.Tm[m * C + j];
      c.Tm[i * C + j] = GDN_MUTATE(drop_A_diagonal, -sum, -sum / (1.0f + c.A[i * C + i]));
    }
    c.Tm[i * C + i] = GDN_MUTATE(drop_A_diagonal, 1.0f, 1.0f / (1.0f + c.A[i * C + i]));
  }
  // W = Tm diag(beta exp(gamma)) K;  U = Tm diag(beta) V - W S0.
  for (int64_t i = 0; i < L; ++i) {
    float* Wi = c.W + i * K;
    float* Ui = c.U + i * V;
    std::fill_n(Wi, K, 0.0f);
    std::fill_n(Ui, V, 0.0f);
    for (int64_t j = 0; j <= i; ++j) {
      const float tb = c.Tm[i * C + j] * c.beta[j];
      const float tw = tb * GDN_MUTATE(decay_after_delta, std::exp(c.gamma[j]), 1.0f);
      const float* kj = hd.k(t0 + j);
      const float* vj = hd.v(t0 + j);
      if (p.use_delta)
        for (int64_t r = 0; r < K; ++r) Wi[r] += tw * kj[r];
      for (int64_t r = 0; r < V; ++r) Ui[r] += tb * vj[r];
    }
    if (p.use_delta)
      for (int64_t r = 0; r < K; ++r) {
        const float w = Wi[r];
        for (int64_t x = 0; x < V; ++x) Ui[x] -= w * S[r * V + x];
      }
  }
}

// S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U, in place.
inline void cpu_chunk_state_update(const CpuChunkHead& hd, int64_t t0, int64_t L, const CpuChunkTiles& c, float* S) {
  const GdnParams& p = *hd.p;
  [[maybe_unused]] const int64_t C = p.chunk;  // read by the planted skip_tail_decay only
  const int64_t K = p.shape.K, V = p.shape.V;
  const float g_last = c.gamma[L - 1];
  const float decay_last = std::exp(GDN_MUTATE(skip_tail_decay, g_last, L < C ? 0.0f : g_last));
  for (int64_t x = 0; x < K * V; ++x) S[x] *= decay_last;
  for (int64_t j = 0; j < GDN_MUTATE(tail_rows_leak, L, t0 >= C ? C : L); ++j) {
    const float d = std::exp(g_last - c.gamma[j]);
    const float* kj = hd.k(GDN_MUTATE(tail_rows_leak, t0 + j, j < L ? t0 + j : t0 + j - C));
    for (int64_t r = 0; r < K; ++r) {
      const float kr = d * kj[r];
      for (int64_t x = 0; x < V; ++x) S[r * V + x] += kr * c.U[j * V + x];
    }
  }
  GDN_MUTANT_ONLY(state_in_dtype, mutant_round(S, K * V, p.dtype));
}
