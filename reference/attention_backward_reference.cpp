#include "reference/attention_backward_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "reference/gdn_reference.h"

namespace {

// One head (b, h): for each query row t, its softmax row p over the keys it sees, then
// delta = sum_j p_j (dout_t . v_j) (= dout_t . o_t), ds_j = p_j (dout_t . v_j - delta); dq_t takes
// scale sum_j ds_j k_j, key j takes scale ds_j q_t into dk_j and p_j dout_t into dv_j.
void head_backward(int64_t b, int64_t h, int64_t T, int64_t H, int64_t D, int64_t Dv, const double* q,
                   const double* k, const double* v, const double* dout, double scale, bool causal,
                   AttentionRefGradients& g) {
  std::vector<double> p(static_cast<size_t>(T)), dp(static_cast<size_t>(T));
  const auto qk_at = [&](int64_t t) { return ((b * T + t) * H + h) * D; };
  const auto v_at = [&](int64_t t) { return ((b * T + t) * H + h) * Dv; };
  for (int64_t t = 0; t < T; ++t) {
    if (reference_cancel_requested()) return;
    const int64_t n = causal ? t + 1 : T;
    const double* qt = q + qk_at(t);
    const double* dot = dout + v_at(t);
    double row_max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t c = 0; c < D; ++c) s += qt[c] * k[qk_at(j) + c];
      p[size_t(j)] = scale * s;
      row_max = std::max(row_max, p[size_t(j)]);
    }
    double denom = 0.0;
    for (int64_t j = 0; j < n; ++j) denom += (p[size_t(j)] = std::exp(p[size_t(j)] - row_max));
    double delta = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      p[size_t(j)] /= denom;
      double s = 0.0;
      for (int64_t c = 0; c < Dv; ++c) s += dot[c] * v[v_at(j) + c];
      dp[size_t(j)] = s;
      delta += p[size_t(j)] * s;
    }
    double* dqt = g.dq.data() + qk_at(t);
    for (int64_t j = 0; j < n; ++j) {
      const double ds = p[size_t(j)] * (dp[size_t(j)] - delta);
      double* dkj = g.dk.data() + qk_at(j);
      const double* kj = k + qk_at(j);
      for (int64_t c = 0; c < D; ++c) {
        dqt[c] += scale * ds * kj[c];
        dkj[c] += scale * ds * qt[c];
      }
      double* dvj = g.dv.data() + v_at(j);
      for (int64_t c = 0; c < Dv; ++c) dvj[c] += p[size_t(j)] * dot[c];
    }
  }
}

}  // namespace

AttentionRefGradients attention_backward_ref(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Dv,
                                             const double* q, const double* k, const double* v,
                                             const double* dout, double scale, bool causal, int threads) {
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(D));
  AttentionRefGradients g;
  g.dq.assign(size_t(B * T * H * D), 0.0);
  g.dk.assign(g.dq.size(), 0.0);
  g.dv.assign(size_t(B * T * H * Dv), 0.0);
  // A head writes only its own rows of dq, dk, dv: heads need no lock.
  const int64_t heads = B * H;
  const int n = int(std::max<int64_t>(1, std::min<int64_t>(threads, heads)));
  std::vector<std::thread> pool;
  for (int w = 0; w < n; ++w)
    pool.emplace_back([&, w] {
      for (int64_t i = w; i < heads; i += n) head_backward(i / H, i % H, T, H, D, Dv, q, k, v, dout, scale, causal, g);
    });
  for (auto& th : pool) th.join();
  if (reference_cancel_requested()) throw ReferenceCancelled();
  return g;
}
