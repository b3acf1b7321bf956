// The float64 front end: causal depthwise conv (width W, cache of the last W-1 inputs), SiLU,
// per-head L2 norm, gates; then the recurrence.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "reference/frontend_reference.h"

namespace {

std::vector<double> random_vec(std::mt19937_64& rng, size_t n, double scale = 1.0) {
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> x(n);
  for (double& e : x) e = d(rng);
  return x;
}

// Tokens [t0, t1) of a [B, T, per_token] tensor.
std::vector<double> tokens(const std::vector<double>& x, int64_t B, int64_t T, int64_t per, int64_t t0, int64_t t1) {
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    out.insert(out.end(), x.begin() + (b * T + t0) * per, x.begin() + (b * T + t1) * per);
  return out;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST_CASE("causal conv: a hand-worked width-3 case, with and without a cache", "[reference][frontend]") {
  const std::vector<double> x = {1, 2, 3}, w = {0.5, -1, 2}, bias = {0.1};
  std::vector<double> cache_out;
  // y_t = 0.1 + 0.5 x_{t-2} - x_{t-1} + 2 x_t:  y0 = 0.1 + 2 = 2.1;  y1 = 0.1 - 1 + 4 = 3.1;
  // y2 = 0.1 + 0.5 - 2 + 6 = 4.6. The final cache holds x_1, x_2.
  auto y = causal_conv_ref(1, 3, 1, 3, x.data(), w.data(), bias.data(), nullptr, &cache_out);
  CHECK(y[0] == Approx(2.1));
  CHECK(y[1] == Approx(3.1));
  CHECK(y[2] == Approx(4.6));
  CHECK(cache_out == std::vector<double>{2, 3});
  // Cache (x_{-2}, x_{-1}) = (7, 8): y0 = 0.1 + 3.5 - 8 + 2 = -2.4; y1 = 0.1 + 4 - 1 + 4 = 7.1.
  const std::vector<double> cache = {7, 8};
  y = causal_conv_ref(1, 3, 1, 3, x.data(), w.data(), bias.data(), cache.data(), &cache_out);
  CHECK(y[0] == Approx(-2.4));
  CHECK(y[1] == Approx(7.1));
  CHECK(y[2] == Approx(4.6));
  // T = 1 < W - 1: the final cache keeps the newest old input and the new one: (8, 1).
  y = causal_conv_ref(1, 1, 1, 3, x.data(), w.data(), bias.data(), cache.data(), &cache_out);
  CHECK(cache_out == std::vector<double>{8, 1});
}

TEST_CASE("front end: a one-token case computed by hand", "[reference][frontend]") {
  // H = HV = 1, K = V = 2, width 4 with only the current tap set (weight 1): the conv is the
  // identity, so q = silu(qp) / |silu(qp)| etc. A_log = ln 2, dt_bias = 0, a = 0:
  // g = -2 softplus(0) = -2 ln 2, exp(g) = 1/4; b = 0: beta = 1/2.
  const GdnShape s{1, 1, 1, 1, 2, 2};
  const std::vector<double> qp = {1.0, -1.0}, kp = {2.0, 0.5}, vp = {0.3, -0.7};
  const std::vector<double> w = {0, 0, 0, 1, 0, 0, 0, 1};
  const std::vector<double> a = {0.0}, b = {0.0}, A_log = {std::log(2.0)}, dt_bias = {0.0};
  const std::vector<double> h0 = {1.0, 2.0, 3.0, 4.0};
  FrontEndInputs in;
  in.q_proj = qp.data();
  in.k_proj = kp.data();
  in.v_proj = vp.data();
  in.q_conv_w = in.k_conv_w = in.v_conv_w = w.data();
  in.a = a.data();
  in.b = b.data();
  in.A_log = A_log.data();
  in.dt_bias = dt_bias.data();
  in.h0 = h0.data();
  FrontEndOptions opt;
  opt.l2_eps = 0.0;
  const FrontEndOutputs out = gdn_frontend_ref(s, in, opt);
  CHECK(out.g[0] == Approx(-2.0 * std::log(2.0)));
  CHECK(out.beta[0] == Approx(0.5));
  auto silu = [](double x) { return x / (1 + std::exp(-x)); };
  const double q0 = silu(1.0), q1 = silu(-1.0), nq = std::sqrt(q0 * q0 + q1 * q1);
  CHECK(out.q[0] == Approx(q0 / nq));
  CHECK(out.q[1] == Approx(q1 / nq));
  CHECK(out.v[0] == Approx(silu(0.3)));
  // The recurrence by hand on the front end's outputs: S' = S/4; u = beta (v - S'^T k);
  // S = S' + k u^T; o = S^T q / sqrt(2).
  const double k0 = out.k[0], k1 = out.k[1];
  double S[2][2] = {{0.25, 0.5}, {0.75, 1.0}};
  double u[2];
  for (int j = 0; j < 2; ++j) u[j] = 0.5 * (out.v[j] - (S[0][j] * k0 + S[1][j] * k1));
  for (int j = 0; j < 2; ++j) {
    S[0][j] += k0 * u[j];
    S[1][j] += k1 * u[j];
  }
  for (int j = 0; j < 2; ++j) {
    CHECK(out.gdn.o[j] == Approx((S[0][j] * out.q[0] + S[1][j] * out.q[1]) / std::sqrt(2.0)));
    CHECK(out.gdn.hT[0 * 2 + j] == Approx(S[0][j]));
    CHECK(out.gdn.hT[1 * 2 + j] == Approx(S[1][j]));
  }
}

TEST_CASE("front end: running [0, T) equals [0, t) then [t, T) with caches and state carried",
          "[reference][frontend]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const int64_t T = GENERATE(5, 17), t_split = GENERATE(1, 2, 4);
  const GdnShape s{2, T, 2, 4, 8, 6};
  const int64_t cqk = s.H * s.K, cv = s.HV * s.V, W = 4;
  const auto qp = random_vec(rng, size_t(s.B * T * cqk)), kp = random_vec(rng, size_t(s.B * T * cqk));
  const auto vp = random_vec(rng, size_t(s.B * T * cv));
  const auto wq = random_vec(rng, size_t(cqk * W), 0.5), wk = random_vec(rng, size_t(cqk * W), 0.5);
  const auto wv = random_vec(rng, size_t(cv * W), 0.5);
  const auto bq = random_vec(rng, size_t(cqk), 0.1), bk = random_vec(rng, size_t(cqk), 0.1);
  const auto bv = random_vec(rng, size_t(cv), 0.1);
  const auto cache_q = random_vec(rng, size_t(s.B * cqk * (W - 1)));
  const auto cache_k = random_vec(rng, size_t(s.B * cqk * (W - 1)));
  const auto cache_v = random_vec(rng, size_t(s.B * cv * (W - 1)));
  const auto a = random_vec(rng, size_t(s.B * T * s.HV)), b = random_vec(rng, size_t(s.B * T * s.HV));
  const auto A_log = random_vec(rng, size_t(s.HV), 0.5), dt_bias = random_vec(rng, size_t(s.HV), 0.5);
  const auto h0 = random_vec(rng, size_t(s.state_elems()));

  auto run = [&](int64_t t0, int64_t t1, const double* cq, const double* ck, const double* cvv,
                 const double* state) {
    GdnShape part = s;
    part.T = t1 - t0;
    const auto pq = tokens(qp, s.B, T, cqk, t0, t1), pk = tokens(kp, s.B, T, cqk, t0, t1);
    const auto pv = tokens(vp, s.B, T, cv, t0, t1);
    const auto pa = tokens(a, s.B, T, s.HV, t0, t1), pb = tokens(b, s.B, T, s.HV, t0, t1);
    FrontEndInputs in;
    in.q_proj = pq.data();
    in.k_proj = pk.data();
    in.v_proj = pv.data();
    in.q_conv_w = wq.data();
    in.k_conv_w = wk.data();
    in.v_conv_w = wv.data();
    in.q_conv_bias = bq.data();
    in.k_conv_bias = bk.data();
    in.v_conv_bias = bv.data();
    in.q_conv_cache = cq;
    in.k_conv_cache = ck;
    in.v_conv_cache = cvv;
    in.a = pa.data();
    in.b = pb.data();
    in.A_log = A_log.data();
    in.dt_bias = dt_bias.data();
    in.h0 = state;
    return gdn_frontend_ref(part, in, FrontEndOptions{});
  };
  const FrontEndOutputs whole = run(0, T, cache_q.data(), cache_k.data(), cache_v.data(), h0.data());
  const FrontEndOutputs first = run(0, t_split, cache_q.data(), cache_k.data(), cache_v.data(), h0.data());
  const FrontEndOutputs second = run(t_split, T, first.q_conv_cache.data(), first.k_conv_cache.data(),
                                     first.v_conv_cache.data(), first.gdn.hT.data());
  CHECK(max_diff(tokens(whole.gdn.o, s.B, T, cv, 0, t_split), first.gdn.o) < 1e-12);
  CHECK(max_diff(tokens(whole.gdn.o, s.B, T, cv, t_split, T), second.gdn.o) < 1e-12);
  CHECK(max_diff(whole.gdn.hT, second.gdn.hT) < 1e-12);
  CHECK(max_diff(whole.q_conv_cache, second.q_conv_cache) == 0.0);
  CHECK(max_diff(whole.v_conv_cache, second.v_conv_cache) == 0.0);
}
