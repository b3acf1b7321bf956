#include "reference/attention_backward_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#include "reference/gdn_reference.h"

namespace {

// Runs fn(i) for i in [0, n) on `threads` threads, i = w, w + threads, ... on worker w.
template <typename Fn>
void parallel_rows(int64_t n, int threads, Fn&& fn) {
  const int w_count = int(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  std::vector<std::thread> pool;
  for (int w = 0; w < w_count; ++w)
    pool.emplace_back([&, w] {
      for (int64_t i = w; i < n; i += w_count) {
        if (reference_cancel_requested()) return;
        fn(i);
      }
    });
  for (auto& t : pool) t.join();
}

struct Head {
  int64_t b, h, T, H, D, Dv;
  const double *q, *k, *v, *dout;
  double scale;
  bool causal;
  int64_t qk(int64_t t) const { return ((b * T + t) * H + h) * D; }
  int64_t vv(int64_t t) const { return ((b * T + t) * H + h) * Dv; }
  double logit(int64_t i, int64_t j) const {
    double s = 0.0;
    for (int64_t c = 0; c < D; ++c) s += q[qk(i) + c] * k[qk(j) + c];
    return scale * s;
  }
  double dp(int64_t i, int64_t j) const {  // dout_i . v_j
    double s = 0.0;
    for (int64_t c = 0; c < Dv; ++c) s += dout[vv(i) + c] * v[vv(j) + c];
    return s;
  }
  int64_t keys(int64_t i) const { return causal ? i + 1 : T; }
};

// One head in two passes, each over rows in parallel (FlashAttention's backward order):
// by query row i, the row's max m_i and sum l_i of the softmax, delta_i = sum_j p_ij dp_ij (=
// dout_i . o_i) and dq_i = scale sum_j ds_ij k_j with ds_ij = p_ij (dp_ij - delta_i); then by key
// row j, p_ij from m_i and l_i, dk_j = scale sum_i ds_ij q_i and dv_j = sum_i p_ij dout_i. Every sum
// runs in index order, so the result does not depend on the threads.
void head_backward(const Head& hd, int threads, double* dq, double* dk, double* dv) {
  const int64_t T = hd.T;
  std::vector<double> m(static_cast<size_t>(T)), l(static_cast<size_t>(T)), delta(static_cast<size_t>(T));
  parallel_rows(T, threads, [&](int64_t i) {
    const int64_t n = hd.keys(i);
    std::vector<double> p(static_cast<size_t>(n)), dpv(static_cast<size_t>(n));
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, p[size_t(j)] = hd.logit(i, j));
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
    double d = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      p[size_t(j)] /= sum;
      d += p[size_t(j)] * (dpv[size_t(j)] = hd.dp(i, j));
    }
    m[size_t(i)] = mx;
    l[size_t(i)] = sum;
    delta[size_t(i)] = d;
    double* dqi = dq + hd.qk(i);
    for (int64_t j = 0; j < n; ++j) {
      const double ds = p[size_t(j)] * (dpv[size_t(j)] - d);
      for (int64_t c = 0; c < hd.D; ++c) dqi[c] += hd.scale * ds * hd.k[hd.qk(j) + c];
    }
  });
  if (reference_cancel_requested()) return;
  parallel_rows(T, threads, [&](int64_t j) {
    double* dkj = dk + hd.qk(j);
    double* dvj = dv + hd.vv(j);
    for (int64_t i = hd.causal ? j : 0; i < T; ++i) {
      const double p = std::exp(hd.logit(i, j) - m[size_t(i)]) / l[size_t(i)];
      const double ds = p * (hd.dp(i, j) - delta[size_t(i)]);
      for (int64_t c = 0; c < hd.D; ++c) dkj[c] += hd.scale * ds * hd.q[hd.qk(i) + c];
      for (int64_t c = 0; c < hd.Dv; ++c) dvj[c] += p * hd.dout[hd.vv(i) + c];
    }
  });
}

}  // namespace

AttentionRefGradients attention_backward_ref(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Dv,
                                             const double* q, const double* k, const double* v,
                                             const double* dout, double scale, bool causal, int threads,
                                             const std::vector<int64_t>& heads) {
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(D));
  for (size_t i = 0; i < heads.size(); ++i)
    if (heads[i] < 0 || heads[i] >= B * H || (i > 0 && heads[i] <= heads[i - 1]))
      throw std::invalid_argument("attention_backward_ref: heads must be sorted, distinct and in [0, B H)");
  AttentionRefGradients g;
  g.heads = heads;
  const int64_t n = heads.empty() ? B * H : int64_t(heads.size());
  // Each head computed into full-layout scratch rows of its own (the full arrays themselves when
  // every head is asked for), then a subset's rows packed head-major.
  std::vector<double> dq(size_t(B * T * H * D)), dk(dq.size()), dv(size_t(B * T * H * Dv));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t flat = heads.empty() ? r : heads[size_t(r)];
    head_backward(Head{flat / H, flat % H, T, H, D, Dv, q, k, v, dout, scale, causal}, threads, dq.data(), dk.data(),
                  dv.data());
    if (reference_cancel_requested()) throw ReferenceCancelled();
  }
  if (heads.empty()) {
    g.dq = std::move(dq);
    g.dk = std::move(dk);
    g.dv = std::move(dv);
    return g;
  }
  for (int64_t flat : heads) {
    const int64_t b = flat / H, h = flat % H;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t at = (b * T + t) * H + h;
      g.dq.insert(g.dq.end(), dq.begin() + at * D, dq.begin() + (at + 1) * D);
      g.dk.insert(g.dk.end(), dk.begin() + at * D, dk.begin() + (at + 1) * D);
      g.dv.insert(g.dv.end(), dv.begin() + at * Dv, dv.begin() + (at + 1) * Dv);
    }
  }
  return g;
}
