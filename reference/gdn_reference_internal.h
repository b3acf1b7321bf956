// Pieces the float64 GDN references share (gdn_reference.cpp, gdn_backward_reference.cpp): the
// head view, the head loop, one recurrent step and one chunk of the UT-transform algebra. Each is
// written once so the forward and backward references differentiate exactly the same arithmetic.
// Not part of the reference API.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "reference/gdn_reference.h"

namespace gdn_ref_internal {

inline double resolve_scale(const GdnRefOptions& opt, int64_t K) {
  return opt.scale != 0.0 ? opt.scale : 1.0 / std::sqrt(double(K));
}

// A packed batch (s.num_seqs > 0) needs B = 1 and offsets from 0 to T, every sequence non-empty.
inline void check_shape(const GdnShape& s, const int32_t* cu_seqlens = nullptr) {
  if (s.B < 1 || s.T < 1 || s.H < 1 || s.HV < 1 || s.K < 1 || s.V < 1 || s.HV % s.H != 0 || s.num_seqs < 0)
    throw std::invalid_argument("gdn reference: sizes must be positive and HV a multiple of H");
  if (s.num_seqs == 0) return;
  bool ok = s.B == 1 && cu_seqlens && cu_seqlens[0] == 0 && cu_seqlens[s.num_seqs] == s.T;
  for (int64_t n = 0; ok && n < s.num_seqs; ++n) ok = cu_seqlens[n + 1] > cu_seqlens[n];
  if (!ok)
    throw std::invalid_argument("gdn reference: a packed batch needs B = 1 and cu_seqlens rising from 0 to T");
}

// The inputs of one sequence of a packed batch (gdn_sequence_view), as a batch of its own.
inline GdnRefInputs sequence_inputs(const GdnRefInputs& in, const GdnSequenceView& view) {
  GdnRefInputs out;
  out.q = in.q + view.qk;
  out.k = in.k + view.qk;
  out.v = in.v + view.v;
  out.g = in.g ? in.g + view.gate : nullptr;
  out.beta = in.beta + view.gate;
  out.h0 = in.h0 ? in.h0 + view.state : nullptr;
  return out;
}

// A packed batch's reference: `one(shape, inputs)` on every sequence in turn, each a batch of its
// own from its own h0 (no state crosses a boundary), its o and hT placed at the sequence's offsets.
// The same code runs a sequence packed or alone, so the results agree bit for bit.
template <typename Fn>
GdnRefOutputs packed_forward_ref(const GdnShape& s, const GdnRefInputs& in, bool o_magnitude, Fn&& one) {
  GdnRefOutputs out;
  out.o.assign(size_t(s.v_elems()), 0.0);
  out.hT.assign(size_t(s.state_elems()), 0.0);
  if (o_magnitude) out.o_abs.assign(out.o.size(), 0.0);
  for (int64_t n = 0; n < s.num_seqs; ++n) {
    const GdnSequenceView view = gdn_sequence_view(s, in.cu_seqlens, n);
    const GdnRefOutputs r = one(view.shape, sequence_inputs(in, view));
    std::copy(r.o.begin(), r.o.end(), out.o.begin() + view.v);
    std::copy(r.hT.begin(), r.hT.end(), out.hT.begin() + view.state);
    if (o_magnitude) std::copy(r.o_abs.begin(), r.o_abs.end(), out.o_abs.begin() + view.v);
  }
  return out;
}

// Row pointers for token t of sequence b; q/k head h serves value heads [h*group, (h+1)*group).
struct HeadView {
  const GdnShape& s;
  const GdnRefInputs& in;
  int64_t b, hv;
  int64_t h() const { return hv / s.group(); }
  const double* q(int64_t t) const { return in.q + ((b * s.T + t) * s.H + h()) * s.K; }
  const double* k(int64_t t) const { return in.k + ((b * s.T + t) * s.H + h()) * s.K; }
  const double* v(int64_t t) const { return in.v + ((b * s.T + t) * s.HV + hv) * s.V; }
  double g(int64_t t) const { return in.g ? in.g[(b * s.T + t) * s.HV + hv] : 0.0; }
  double beta(int64_t t) const { return in.beta[(b * s.T + t) * s.HV + hv]; }
  int64_t o_offset(int64_t t) const { return ((b * s.T + t) * s.HV + hv) * s.V; }
  int64_t gate_offset(int64_t t) const { return (b * s.T + t) * s.HV + hv; }
  int64_t state_offset() const { return (b * s.HV + hv) * s.K * s.V; }
};

// Runs head_fn(slot, b, hv) for every head, or for the flat heads b HV + hv of `subset` (slot: the
// head's position there), on `threads` threads.
template <typename Fn>
void for_each_head(const GdnShape& s, const std::vector<int64_t>& subset, int threads, Fn&& head_fn) {
  const int64_t heads = subset.empty() ? s.B * s.HV : int64_t(subset.size());
  const int n = int(std::max<int64_t>(1, std::min<int64_t>(threads, heads)));
  std::vector<std::thread> pool;
  for (int w = 0; w < n; ++w)
    pool.emplace_back([&, w] {
      for (int64_t i = w; i < heads; i += n) {
        const int64_t flat = subset.empty() ? i : subset[size_t(i)];
        head_fn(i, flat / s.HV, flat % s.HV);
      }
    });
  for (auto& t : pool) t.join();
}

// Token t of the recurrence on the K x V state S (row-major): S = exp(g) S; u = beta (v - S^T k)
// (u = v without the delta term); S += k u^T. With `residual`, also v - S^T k (of the decayed S),
// which the backward needs for dbeta; it is left alone without the delta term.
inline void recurrent_step(const HeadView& hd, int64_t t, bool use_delta, double* S, double* u,
                           double* residual = nullptr) {
  const int64_t K = hd.s.K, V = hd.s.V;
  const double alpha = std::exp(hd.g(t));
  for (int64_t x = 0; x < K * V; ++x) S[x] *= alpha;
  const double* k = hd.k(t);
  const double* v = hd.v(t);
  if (use_delta) {
    const double beta = hd.beta(t);
    for (int64_t j = 0; j < V; ++j) {
      double kS = 0.0;
      for (int64_t i = 0; i < K; ++i) kS += S[i * V + j] * k[i];
      if (residual) residual[j] = v[j] - kS;
      u[j] = beta * (v[j] - kS);
    }
  } else {
    std::copy_n(v, V, u);
  }
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < V; ++j) S[i * V + j] += k[i] * u[j];
}

// One chunk of the UT-transform algebra (docs/DESIGN.md section 1): rows [0, L) of a C-row chunk
// starting at token t0; rows past L stay zero. Without the delta term beta is 1 and A, W vanish.
struct ChunkAlgebra {
  int64_t C, K, V;
  std::vector<double> gamma, beta;  // [C]     local cumulative gate sums; beta (1 without delta)
  std::vector<double> A, T_inv;     // [C, C]  strictly lower diag(beta)(K K^T) .* D; (I + A)^-1
  std::vector<double> W;            // [C, K]  T_inv diag(beta exp(gamma)) K
  std::vector<double> U0, U;        // [C, V]  T_inv diag(beta) V;  U0 - W S0
  ChunkAlgebra(int64_t C, int64_t K, int64_t V)
      : C(C), K(K), V(V), gamma(C), beta(C), A(C * C), T_inv(C * C), W(C * K), U0(C * V), U(C * V) {}
};

// Fills `c` for the chunk [t0, t0 + L) entered with state S0 (K x V).
void compute_chunk_algebra(const HeadView& hd, int64_t t0, int64_t L, bool use_delta,
                           const double* S0, ChunkAlgebra& c);

// S_next = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U: the state leaving the chunk.
void chunk_next_state(const HeadView& hd, int64_t t0, int64_t L, const ChunkAlgebra& c,
                      const double* S0, double* S_next);

}  // namespace gdn_ref_internal
