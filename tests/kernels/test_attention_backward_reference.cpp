// The float64 attention backward (reference/attention_backward_reference.h) against central
// finite differences of attention_ref, causal and not; and the check catching a backward that
// drops the softmax's row term.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "reference/attention_backward_reference.h"
#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"

namespace {

struct AttentionData {
  int64_t B = 2, T = 7, H = 2, D = 5, Dv = 3;
  std::vector<double> q, k, v, dout;
  explicit AttentionData(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    for (auto* x : {&q, &k}) for (int64_t i = 0; i < B * T * H * D; ++i) x->push_back(n(rng));
    for (auto* x : {&v, &dout}) for (int64_t i = 0; i < B * T * H * Dv; ++i) x->push_back(n(rng));
  }
  double loss(bool causal, double scale) const {
    const std::vector<double> o = attention_ref(B, T, H, D, Dv, q.data(), k.data(), v.data(), scale, causal);
    double l = 0.0;
    for (size_t i = 0; i < o.size(); ++i) l += dout[i] * o[i];
    return l;
  }
};

// Central differences of the loss in every element of x, as a gradient.
std::vector<double> numeric_gradient(AttentionData& d, std::vector<double>& x, bool causal, double scale) {
  const double h = 1e-5;
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = d.loss(causal, scale);
    x[i] = keep - h;
    const double down = d.loss(causal, scale);
    x[i] = keep;
    g[i] = (up - down) / (2.0 * h);
  }
  return g;
}

}  // namespace

TEST_CASE("attention backward equals central finite differences of the forward", "[reference][backward][attention]") {
  const uint64_t seed = testutil::fresh_seed();
  const bool causal = GENERATE(true, false);
  const double scale = GENERATE(0.0, 0.7);
  INFO("seed " << seed << " causal " << causal << " scale " << scale);
  AttentionData d(seed);
  const double resolved = scale == 0.0 ? 1.0 / std::sqrt(double(d.D)) : scale;
  const AttentionRefGradients g = attention_backward_ref(d.B, d.T, d.H, d.D, d.Dv, d.q.data(), d.k.data(),
                                                         d.v.data(), d.dout.data(), scale, causal, 3);
  // Differences of a smooth loss with h = 1e-5: truncation ~h^2, cancellation ~1e-16 / h.
  CHECK(testutil::rel_l2(g.dq, numeric_gradient(d, d.q, causal, resolved)) < 1e-8);
  CHECK(testutil::rel_l2(g.dk, numeric_gradient(d, d.k, causal, resolved)) < 1e-8);
  CHECK(testutil::rel_l2(g.dv, numeric_gradient(d, d.v, causal, resolved)) < 1e-8);
  // The thread count does not change a bit.
  const AttentionRefGradients one = attention_backward_ref(d.B, d.T, d.H, d.D, d.Dv, d.q.data(), d.k.data(),
                                                           d.v.data(), d.dout.data(), scale, causal, 1);
  CHECK(one.dq == g.dq);
  CHECK(one.dk == g.dk);
  CHECK(one.dv == g.dv);
}

TEST_CASE("the finite-difference check catches an attention backward without the softmax's row term",
          "[reference][backward][attention]") {
  // dS = P .* dP (delta left out) is what a backward that forgets rowsum(dout .* o) computes: with
  // dout = o's own direction the dropped term is large. Emulated by shifting dout by a constant
  // per row, which changes dP - delta not at all and P .* dP by P times the constant.
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  AttentionData d(seed);
  const AttentionRefGradients right = attention_backward_ref(d.B, d.T, d.H, d.D, d.Dv, d.q.data(), d.k.data(),
                                                             d.v.data(), d.dout.data(), 0.0, true);
  const double scale = 1.0 / std::sqrt(double(d.D));
  CHECK(testutil::rel_l2(right.dq, numeric_gradient(d, d.q, true, scale)) < 1e-8);
  // A wrong dq (each row's dS summed without delta) fails the same comparison.
  std::vector<double> wrong = right.dq;
  const std::vector<double> o = attention_ref(d.B, d.T, d.H, d.D, d.Dv, d.q.data(), d.k.data(), d.v.data(), 0.0, true);
  for (int64_t r = 0; r < d.B * d.T * d.H; ++r) {
    double delta = 0.0;
    for (int64_t c = 0; c < d.Dv; ++c) delta += d.dout[size_t(r * d.Dv + c)] * o[size_t(r * d.Dv + c)];
    for (int64_t c = 0; c < d.D; ++c) wrong[size_t(r * d.D + c)] += 0.1 * delta;
  }
  CHECK(testutil::rel_l2(wrong, numeric_gradient(d, d.q, true, scale)) > 1e-3);
}
