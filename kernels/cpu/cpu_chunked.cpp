// cpu_chunked: the chunked UT-transform form of docs/DESIGN.md section 1 in float32, one (b, hv) head
// per task, chunks in sequence (the state is carried from one chunk to the next).
//   A = strictly_lower(diag(beta) K K^T .* D); Tm = (I + A)^-1 by forward substitution
//   W = Tm diag(beta exp(gamma)) K; U = Tm diag(beta) V - W S0
//   O = scale (diag(exp(gamma)) Q S0 + (Q K^T .* D .* causal) U)
//   S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
// Differs from cpu_recurrent: matrix products per chunk instead of T rank-1 updates, so its
// rounding differs and it pins the chunk algebra apart from any GPU code. Without the delta term
// beta is 1 and A, W vanish. A tail chunk shorter than C is handled by its length L.
// Workspace per worker: gamma, beta (C each), A and Tm (C x C each), W (C x K), U (C x V), S (K x V).
// GDN_MUTATE / GDN_MUTANT_ONLY: planted bugs of the mutation check (kernels/cpu/cpu_mutation.h); in
// release builds they are the original expression and nothing.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_mutation.h"

size_t cpu_chunked_workspace_floats(const GdnParams& p) {
  const int64_t C = p.chunk, K = p.shape.K, V = p.shape.V;
  return size_t(2 * C + 2 * C * C + C * K + C * V + K * V);
}

CpuStatus run_cpu_chunked(const GdnParams& p, float* workspace, int threads) {
  const GdnShape s = p.shape;
  const int64_t C = p.chunk, K = s.K, V = s.V;
  if (C != 16 && C != 32 && C != 64) return CpuStatus::unsupported;
  const auto* q = static_cast<const float*>(p.q);
  const auto* k = static_cast<const float*>(p.k);
  const auto* v = static_cast<const float*>(p.v);
  auto* o = static_cast<float*>(p.o);
  const size_t ws = cpu_chunked_workspace_floats(p);
  cpu_parallel_for(s.B * s.HV, threads, [&](int64_t head, int worker) {
    const int64_t b = head / s.HV, hv = head % s.HV;
    const int64_t h = GDN_MUTATE(gva_head_interleaved, hv / s.group(), hv % s.H);
    float* gamma = workspace + worker * ws;
    float* beta = gamma + C;
    float* A = beta + C;
    float* Tm = A + C * C;
    float* W = Tm + C * C;
    float* U = W + C * K;
    float* S = U + C * V;
    auto krow = [&](int64_t t) { return k + ((b * s.T + t) * s.H + h) * K; };
    auto qrow = [&](int64_t t) { return q + ((b * s.T + t) * s.H + h) * K; };
    auto gidx = [&](int64_t t) { return (b * s.T + t) * s.HV + hv; };
    if (p.h0) std::copy_n(p.h0 + head * K * V, K * V, S);
    else std::fill_n(S, GDN_MUTATE(state_not_zeroed, K * V, 0), 0.0f);
    GDN_MUTANT_ONLY(h0_transposed, mutant_h0_transposed(p, head, S));
    for (int64_t t0 = 0; t0 < s.T; t0 += GDN_MUTATE(chunk_off_by_one, C, C - 1)) {
      const int64_t L = std::min(C, s.T - t0);
      float acc = 0.0f;
      for (int64_t i = 0; i < L; ++i) {
        const float g =
            p.g ? p.g[GDN_MUTATE(g_ignores_batch, gidx(t0 + i), (t0 + i) * s.HV + hv)] : 0.0f;
        acc += GDN_MUTATE(gate_sign, g, -g);
        gamma[i] = acc;
        beta[i] = p.use_delta ? GDN_MUTATE(no_beta, p.beta[gidx(t0 + i)], 1.0f) : 1.0f;
      }
      // Tm = (I + A)^-1, row by row: Tm_ij = -sum_{j<=m<i} A_im Tm_mj.
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t j = 0; j < GDN_MUTATE(drop_A_diagonal, i, i + 1); ++j) {
          float kk = 0.0f;
          if (p.use_delta)
            for (int64_t c = 0; c < K; ++c) kk += krow(t0 + i)[c] * krow(t0 + j)[c];
          A[i * C + j] = beta[i] * kk * std::exp(gamma[i] - gamma[j]);
          GDN_MUTANT_ONLY(A_rounded_bf16, A[i * C + j] = round_to(DType::bf16, A[i * C + j]));
        }
        for (int64_t j = 0; j < i; ++j) {
          float sum = 0.0f;
          for (int64_t m = j; m < i; ++m) sum += A[i * C + m] * Tm[m * C + j];
          Tm[i * C + j] = GDN_MUTATE(drop_A_diagonal, -sum, -sum / (1.0f + A[i * C + i]));
        }
        Tm[i * C + i] = GDN_MUTATE(drop_A_diagonal, 1.0f, 1.0f / (1.0f + A[i * C + i]));
      }
      // W = Tm diag(beta exp(gamma)) K;  U = Tm diag(beta) V - W S0.
      for (int64_t i = 0; i < L; ++i) {
        float* Wi = W + i * K;
        float* Ui = U + i * V;
        std::fill_n(Wi, K, 0.0f);
        std::fill_n(Ui, V, 0.0f);
        for (int64_t j = 0; j <= i; ++j) {
          const float tb = Tm[i * C + j] * beta[j];
          const float tw = tb * GDN_MUTATE(decay_after_delta, std::exp(gamma[j]), 1.0f);
          const float* kj = krow(t0 + j);
          const float* vj = v + gidx(t0 + j) * V;
          if (p.use_delta)
            for (int64_t c = 0; c < K; ++c) Wi[c] += tw * kj[c];
          for (int64_t c = 0; c < V; ++c) Ui[c] += tb * vj[c];
        }
        if (p.use_delta)
          for (int64_t r = 0; r < K; ++r) {
            const float w = Wi[r];
            for (int64_t c = 0; c < V; ++c) Ui[c] -= w * S[r * V + c];
          }
      }
      // O = scale (diag(exp(gamma)) Q S0 + (Q K^T .* D .* causal) U), from the entering state.
      for (int64_t i = 0; i < L; ++i) {
        const float* qi = qrow(t0 + i);
        float* oi = o + gidx(t0 + i) * V;
        std::fill_n(oi, V, 0.0f);
        const float decay = std::exp(gamma[i]);
        for (int64_t r = 0; r < K; ++r) {
          const float qr = decay * qi[r];
          for (int64_t c = 0; c < V; ++c) oi[c] += qr * S[r * V + c];
        }
        for (int64_t j = 0; j <= GDN_MUTATE(readout_before_update, i, i - 1); ++j) {
          float qk = 0.0f;
          const float* kj = krow(t0 + j);
          for (int64_t r = 0; r < K; ++r) qk += qi[r] * kj[r];
          const float w = qk * GDN_MUTATE(decay_ratio_underflow, std::exp(gamma[i] - gamma[j]),
                                          std::exp(gamma[i]) / std::exp(gamma[j]));
          for (int64_t c = 0; c < V; ++c) oi[c] += w * U[j * V + c];
        }
        for (int64_t c = 0; c < V; ++c) oi[c] = round_to(p.dtype, p.scale * oi[c]);
      }
      // S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U, in place.
      const float g_last = gamma[L - 1];
      const float decay_last = std::exp(GDN_MUTATE(skip_tail_decay, g_last, L < C ? 0.0f : g_last));
      for (int64_t x = 0; x < K * V; ++x) S[x] *= decay_last;
      for (int64_t j = 0; j < GDN_MUTATE(tail_rows_leak, L, t0 >= C ? C : L); ++j) {
        const float d = std::exp(g_last - gamma[j]);
        const float* kj = krow(GDN_MUTATE(tail_rows_leak, t0 + j, j < L ? t0 + j : t0 + j - C));
        for (int64_t r = 0; r < K; ++r) {
          const float kr = d * kj[r];
          for (int64_t c = 0; c < V; ++c) S[r * V + c] += kr * U[j * V + c];
        }
      }
      GDN_MUTANT_ONLY(state_in_dtype, mutant_round(S, K * V, p.dtype));
    }
    if (p.hT) std::copy_n(S, K * V, p.hT + head * K * V);
  });
  return CpuStatus::ok;
}
