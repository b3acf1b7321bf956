#include "reference/gdn_reference.h"

#include "reference/gdn_reference_internal.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

double gdn_default_scale(const GdnShape& shape) { return 1.0 / std::sqrt(double(shape.K)); }

namespace {
std::atomic<const std::atomic<bool>*> g_cancel_flag{nullptr};
}  // namespace

void set_reference_cancel_flag(const std::atomic<bool>* flag) { g_cancel_flag.store(flag); }

bool reference_cancel_requested() {
  const std::atomic<bool>* flag = g_cancel_flag.load(std::memory_order_relaxed);
  return flag && flag->load(std::memory_order_relaxed);
}

using namespace gdn_ref_internal;

GdnRefOutputs gdn_recurrent_ref(const GdnShape& s, const GdnRefInputs& in,
                                const GdnRefOptions& opt) {
  check_shape(s, in.cu_seqlens);
  if (s.num_seqs > 0) {
    if (!opt.heads.empty()) throw std::invalid_argument("gdn_recurrent_ref: a packed batch takes every head");
    return packed_forward_ref(s, in, opt.o_magnitude, [&](const GdnShape& one, const GdnRefInputs& one_in) {
      return gdn_recurrent_ref(one, one_in, opt);
    });
  }
  for (size_t r = 0; r < opt.heads.size(); ++r)
    if (opt.heads[r] < 0 || opt.heads[r] >= s.B * s.HV || (r > 0 && opt.heads[r] <= opt.heads[r - 1]))
      throw std::invalid_argument("gdn_recurrent_ref: heads must be sorted, distinct and in [0, B HV)");
  const double scale = resolve_scale(opt, s.K);
  const bool subset = !opt.heads.empty();
  GdnRefOutputs out;
  out.heads = opt.heads;
  const int64_t heads = subset ? int64_t(opt.heads.size()) : s.B * s.HV;
  out.o.assign(size_t(heads * s.T * s.V), 0.0);
  out.hT.assign(size_t(heads * s.K * s.V), 0.0);
  if (opt.o_magnitude) out.o_abs.assign(out.o.size(), 0.0);
  // A subset's o is [heads, T, V]: token t of the head in `slot` at (slot T + t) V.
  const int64_t o_token_stride = subset ? s.V : s.HV * s.V;
  for_each_head(s, opt.heads, opt.threads, [&](int64_t slot, int64_t b, int64_t hv) {
      std::vector<double> S(s.K * s.V), u(s.V);
      HeadView hd{s, in, b, hv};
      if (in.h0) std::copy_n(in.h0 + hd.state_offset(), S.size(), S.begin());
      else std::fill(S.begin(), S.end(), 0.0);
      const int64_t o_head_offset = subset ? slot * s.T * s.V : hd.o_offset(0);
      double* o_head = out.o.data() + o_head_offset;
      for (int64_t t = 0; t < s.T; ++t) {
        if (t % 64 == 0 && reference_cancel_requested()) return;  // thrown below, after the join
        recurrent_step(hd, t, opt.use_delta, S.data(), u.data());
        const double* q = hd.q(t);
        double* o = o_head + t * o_token_stride;
        for (int64_t j = 0; j < s.V; ++j) {
          double acc = 0.0;
          for (int64_t i = 0; i < s.K; ++i) acc += S[i * s.V + j] * q[i];
          o[j] = scale * acc;
        }
        if (opt.o_magnitude) {
          double* o_abs = out.o_abs.data() + o_head_offset + t * o_token_stride;
          for (int64_t j = 0; j < s.V; ++j) {
            double acc = 0.0;
            for (int64_t i = 0; i < s.K; ++i) acc += std::abs(S[i * s.V + j] * q[i]);
            o_abs[j] = std::abs(scale) * acc;
          }
        }
      }
      std::copy(S.begin(), S.end(), out.hT.begin() + (subset ? slot * s.K * s.V : hd.state_offset()));
  });
  if (reference_cancel_requested()) throw ReferenceCancelled();
  return out;
}

namespace gdn_ref_internal {

void compute_chunk_algebra(const HeadView& hd, int64_t t0, int64_t L, bool use_delta,
                           const double* S, ChunkAlgebra& c) {
  const int64_t C = c.C, K = c.K, V = c.V;
  std::vector<double>& gamma = c.gamma;
  std::vector<double>& beta = c.beta;
  std::vector<double>& A = c.A;
  std::vector<double>& Ti = c.T_inv;
  std::vector<double>& W = c.W;
  std::vector<double>& U0 = c.U0;
  std::vector<double>& U = c.U;
  std::fill(gamma.begin(), gamma.end(), 0.0);
  std::fill(A.begin(), A.end(), 0.0);
  std::fill(Ti.begin(), Ti.end(), 0.0);
  std::fill(W.begin(), W.end(), 0.0);
  std::fill(U0.begin(), U0.end(), 0.0);
  double acc = 0.0;
  for (int64_t i = 0; i < L; ++i) {
    acc += hd.g(t0 + i);
    gamma[i] = acc;
    // Without the delta term the update is S += k v^T: beta is 1 and A vanishes.
    beta[i] = use_delta ? hd.beta(t0 + i) : 1.0;
  }
  // A = strictly_lower(diag(beta) (K K^T) .* D), D_ij = exp(gamma_i - gamma_j).
  if (use_delta) {
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < i; ++j) {
        double kk = 0.0;
        for (int64_t r = 0; r < K; ++r) kk += hd.k(t0 + i)[r] * hd.k(t0 + j)[r];
        A[i * C + j] = beta[i] * kk * std::exp(gamma[i] - gamma[j]);
      }
  }
  // (I + A)^-1 by forward substitution: unit lower triangular.
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t j = 0; j < i; ++j) {
      double sum = 0.0;
      for (int64_t m = j; m < i; ++m) sum += A[i * C + m] * Ti[m * C + j];
      Ti[i * C + j] = -sum;
    }
    Ti[i * C + i] = 1.0;
  }
  // W = Tm diag(beta exp(gamma)) K;  U0 = Tm diag(beta) V.
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      const double t = Ti[i * C + j];
      if (t == 0.0) continue;
      const double wk = use_delta ? t * beta[j] * std::exp(gamma[j]) : 0.0;
      const double* kj = hd.k(t0 + j);
      const double* vj = hd.v(t0 + j);
      for (int64_t r = 0; r < K; ++r) W[i * K + r] += wk * kj[r];
      for (int64_t r = 0; r < V; ++r) U0[i * V + r] += t * beta[j] * vj[r];
    }
  // U = U0 - W S0.
  for (int64_t i = 0; i < L; ++i)
    for (int64_t x = 0; x < V; ++x) {
      double ws = 0.0;
      for (int64_t r = 0; r < K; ++r) ws += W[i * K + r] * S[r * V + x];
      U[i * V + x] = U0[i * V + x] - ws;
    }
  for (int64_t i = L; i < C; ++i)
    for (int64_t x = 0; x < V; ++x) U[i * V + x] = 0.0;
}

void chunk_next_state(const HeadView& hd, int64_t t0, int64_t L, const ChunkAlgebra& c,
                      const double* S, double* S_next) {
  const int64_t K = c.K, V = c.V;
  const double g_last = c.gamma[L - 1];
  const double decay_last = std::exp(g_last);
  for (int64_t x = 0; x < K * V; ++x) S_next[x] = decay_last * S[x];
  for (int64_t j = 0; j < L; ++j) {
    const double d = std::exp(g_last - c.gamma[j]);
    const double* kj = hd.k(t0 + j);
    for (int64_t r = 0; r < K; ++r) {
      const double kr = d * kj[r];
      for (int64_t x = 0; x < V; ++x) S_next[r * V + x] += kr * c.U[j * V + x];
    }
  }
}

}  // namespace gdn_ref_internal

GdnRefOutputs gdn_chunked_ref(const GdnShape& s, const GdnRefInputs& in, const GdnRefOptions& opt,
                              int64_t C, GdnChunkIntermediates* keep) {
  check_shape(s, in.cu_seqlens);
  if (C < 1) throw std::invalid_argument("gdn_chunked_ref: chunk must be positive");
  // Chunks restart at every sequence start: each sequence is chunked as a batch of its own.
  if (s.num_seqs > 0) {
    if (keep) throw std::invalid_argument("gdn_chunked_ref: a packed batch keeps no intermediates");
    return packed_forward_ref(s, in, false, [&](const GdnShape& one, const GdnRefInputs& one_in) {
      return gdn_chunked_ref(one, one_in, opt, C);
    });
  }
  const double scale = resolve_scale(opt, s.K);
  const int64_t N = (s.T + C - 1) / C;
  const int64_t K = s.K, V = s.V;
  GdnRefOutputs out;
  out.o.assign(s.v_elems(), 0.0);
  out.hT.assign(s.state_elems(), 0.0);
  if (keep) {
    const int64_t heads = s.B * s.HV * N;
    keep->chunk = C;
    keep->num_chunks = N;
    keep->gamma.assign(heads * C, 0.0);
    keep->A.assign(heads * C * C, 0.0);
    keep->T_inv.assign(heads * C * C, 0.0);
    keep->W.assign(heads * C * K, 0.0);
    keep->U0.assign(heads * C * V, 0.0);
    keep->U.assign(heads * C * V, 0.0);
    keep->chunk_states.assign(heads * K * V, 0.0);
  }
  ChunkAlgebra c(C, K, V);
  std::vector<double> S(K * V), S_next(K * V);
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t hv = 0; hv < s.HV; ++hv) {
      HeadView hd{s, in, b, hv};
      if (in.h0) std::copy_n(in.h0 + hd.state_offset(), S.size(), S.begin());
      else std::fill(S.begin(), S.end(), 0.0);
      for (int64_t n = 0; n < N; ++n) {
        const int64_t t0 = n * C, L = std::min(C, s.T - t0);
        compute_chunk_algebra(hd, t0, L, opt.use_delta, S.data(), c);
        const std::vector<double>& gamma = c.gamma;
        const std::vector<double>& U = c.U;
        // O = scale (diag(exp(gamma)) Q S0 + ((Q K^T) .* D .* causal) U).
        for (int64_t i = 0; i < L; ++i) {
          const double* qi = hd.q(t0 + i);
          double* o = out.o.data() + hd.o_offset(t0 + i);
          const double decay_i = std::exp(gamma[i]);
          for (int64_t x = 0; x < V; ++x) {
            double qs = 0.0;
            for (int64_t r = 0; r < K; ++r) qs += qi[r] * S[r * V + x];
            o[x] = decay_i * qs;
          }
          for (int64_t j = 0; j <= i; ++j) {
            double qk = 0.0;
            for (int64_t r = 0; r < K; ++r) qk += qi[r] * hd.k(t0 + j)[r];
            const double w = qk * std::exp(gamma[i] - gamma[j]);
            for (int64_t x = 0; x < V; ++x) o[x] += w * U[j * V + x];
          }
          for (int64_t x = 0; x < V; ++x) o[x] *= scale;
        }
        if (keep) {
          const int64_t head = (b * s.HV + hv) * N + n;
          std::copy(gamma.begin(), gamma.end(), keep->gamma.begin() + head * C);
          std::copy(c.A.begin(), c.A.end(), keep->A.begin() + head * C * C);
          std::copy(c.T_inv.begin(), c.T_inv.end(), keep->T_inv.begin() + head * C * C);
          std::copy(c.W.begin(), c.W.end(), keep->W.begin() + head * C * K);
          std::copy(c.U0.begin(), c.U0.end(), keep->U0.begin() + head * C * V);
          std::copy(U.begin(), U.end(), keep->U.begin() + head * C * V);
          std::copy(S.begin(), S.end(), keep->chunk_states.begin() + head * K * V);
        }
        chunk_next_state(hd, t0, L, c, S.data(), S_next.data());
        S.swap(S_next);
      }
      std::copy(S.begin(), S.end(), out.hT.begin() + hd.state_offset());
    }
  }
  return out;
}
