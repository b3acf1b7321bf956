// The float64 layers (reference/layer_reference.h): decode equals prefill for both blocks (the
// state and conv caches, the KV cache carried between calls), the residual paths, the norms by
// hand, and the GDN block's mixer is the front end and recurrence of reference/ it is built on.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "reference/frontend_reference.h"
#include "reference/layer_reference.h"
#include "tests/common/test_util.h"

namespace {

std::vector<double> normal(std::mt19937_64& rng, int64_t n, double sd) {
  std::normal_distribution<double> dist(0.0, sd);
  std::vector<double> x(static_cast<size_t>(n));
  for (double& e : x) e = dist(rng);
  return x;
}

struct Mlp {
  std::vector<double> norm, gate, up, down;
  Mlp(std::mt19937_64& rng, int64_t d, int64_t ff)
      : norm(normal(rng, d, 0.1)), gate(normal(rng, d * ff, 0.2)), up(normal(rng, d * ff, 0.2)),
        down(normal(rng, ff * d, 0.2)) {
    for (double& e : norm) e += 1.0;
  }
  MlpWeights view(int64_t ff) const { return {ff, norm.data(), gate.data(), up.data(), down.data()}; }
};

struct GdnWeights {
  int64_t d = 24, H = 2, HV = 4, K = 8, V = 6, ff = 32;
  std::vector<double> in_norm, q, k, v, a, b, z, cq, ck, cv, A_log, dt_bias, o_norm, o;
  Mlp mlp;
  explicit GdnWeights(std::mt19937_64& rng)
      : in_norm(normal(rng, d, 0.1)), q(normal(rng, d * H * K, 0.3)), k(normal(rng, d * H * K, 0.3)),
        v(normal(rng, d * HV * V, 0.3)), a(normal(rng, d * HV, 0.3)), b(normal(rng, d * HV, 0.3)),
        z(normal(rng, d * HV * V, 0.3)), cq(normal(rng, H * K * 4, 0.5)), ck(normal(rng, H * K * 4, 0.5)),
        cv(normal(rng, HV * V * 4, 0.5)), A_log(normal(rng, HV, 0.5)), dt_bias(normal(rng, HV, 0.5)),
        o_norm(normal(rng, V, 0.1)), o(normal(rng, HV * V * d, 0.2)), mlp(rng, d, ff) {
    for (double& e : in_norm) e += 1.0;
    for (double& e : o_norm) e += 1.0;
  }
  GdnLayerWeights view() const {
    GdnLayerWeights w;
    w.d_model = d, w.H = H, w.HV = HV, w.K = K, w.V = V;
    w.w_in_norm = in_norm.data(), w.w_q = q.data(), w.w_k = k.data(), w.w_v = v.data();
    w.w_a = a.data(), w.w_b = b.data(), w.w_z = z.data();
    w.conv_q = cq.data(), w.conv_k = ck.data(), w.conv_v = cv.data();
    w.A_log = A_log.data(), w.dt_bias = dt_bias.data(), w.w_o_norm = o_norm.data(), w.w_o = o.data();
    w.mlp = mlp.view(ff);
    return w;
  }
};

struct AttnWeights {
  int64_t d = 24, H = 3, D = 8, ff = 32;
  std::vector<double> in_norm, q, k, v, o;
  Mlp mlp;
  explicit AttnWeights(std::mt19937_64& rng)
      : in_norm(normal(rng, d, 0.1)), q(normal(rng, d * H * D, 0.3)), k(normal(rng, d * H * D, 0.3)),
        v(normal(rng, d * H * D, 0.3)), o(normal(rng, H * D * d, 0.2)), mlp(rng, d, ff) {
    for (double& e : in_norm) e += 1.0;
  }
  AttentionLayerWeights view() const {
    AttentionLayerWeights w;
    w.d_model = d, w.H = H, w.D = D;
    w.w_in_norm = in_norm.data(), w.w_q = q.data(), w.w_k = k.data(), w.w_v = v.data(), w.w_o = o.data();
    w.mlp = mlp.view(ff);
    return w;
  }
};

// Rows [t0, t0 + n) of every batch row of x [B, T, d].
std::vector<double> tokens(const std::vector<double>& x, int64_t B, int64_t T, int64_t d, int64_t t0, int64_t n) {
  std::vector<double> y;
  for (int64_t b = 0; b < B; ++b)
    y.insert(y.end(), x.begin() + (b * T + t0) * d, x.begin() + (b * T + t0 + n) * d);
  return y;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST_CASE("layer reference: a GDN block over a sequence equals its pieces with the state and caches carried",
          "[reference][layer]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const GdnWeights gw(rng);
  const GdnLayerWeights w = gw.view();
  const int64_t B = 2, T = 11;
  const std::vector<double> x = normal(rng, B * T * w.d_model, 1.0);
  GdnLayerState whole;
  const std::vector<double> all = gdn_layer_ref(B, T, w, x, whole);
  // Prefill 6 tokens, then 1 (a decode step), then 4, each from the state the one before left.
  GdnLayerState carried;
  std::vector<std::vector<double>> pieces;
  for (auto [t0, n] : {std::pair<int64_t, int64_t>{0, 6}, {6, 1}, {7, 4}})
    pieces.push_back(gdn_layer_ref(B, n, w, tokens(x, B, T, w.d_model, t0, n), carried));
  std::vector<double> joined(all.size());
  for (int64_t b = 0; b < B; ++b) {
    int64_t t = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const int64_t n = int64_t(pieces[i].size()) / (B * w.d_model);
      std::copy(pieces[i].begin() + b * n * w.d_model, pieces[i].begin() + (b + 1) * n * w.d_model,
                joined.begin() + (b * T + t) * w.d_model);
      t += n;
    }
  }
  CHECK(max_abs_diff(all, joined) < 1e-12);
  CHECK(max_abs_diff(whole.S, carried.S) < 1e-12);
  CHECK(max_abs_diff(whole.cache_v, carried.cache_v) < 1e-15);
  // Forgetting the conv caches between pieces changes the answer: the test can see them.
  GdnLayerState no_cache = GdnLayerState{};
  (void)gdn_layer_ref(B, 6, w, tokens(x, B, T, w.d_model, 0, 6), no_cache);
  no_cache.cache_q.clear(), no_cache.cache_k.clear(), no_cache.cache_v.clear();
  const std::vector<double> wrong = gdn_layer_ref(B, 5, w, tokens(x, B, T, w.d_model, 6, 5), no_cache);
  CHECK(max_abs_diff(wrong, tokens(all, B, T, w.d_model, 6, 5)) > 1e-3);
}

TEST_CASE("layer reference: an attention block decoding over its KV cache equals its prefill", "[reference][layer]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const AttnWeights aw(rng);
  const AttentionLayerWeights w = aw.view();
  const int64_t B = 2, T = 9;
  const std::vector<double> x = normal(rng, B * T * w.d_model, 1.0);
  AttentionLayerCache whole;
  const std::vector<double> all = attention_layer_ref(B, T, w, x, whole);
  CHECK(whole.L == T);
  AttentionLayerCache cache;
  (void)attention_layer_ref(B, 7, w, tokens(x, B, T, w.d_model, 0, 7), cache);
  const std::vector<double> step8 = attention_layer_ref(B, 1, w, tokens(x, B, T, w.d_model, 7, 1), cache);
  const std::vector<double> step9 = attention_layer_ref(B, 1, w, tokens(x, B, T, w.d_model, 8, 1), cache);
  CHECK(max_abs_diff(step8, tokens(all, B, T, w.d_model, 7, 1)) < 1e-12);
  CHECK(max_abs_diff(step9, tokens(all, B, T, w.d_model, 8, 1)) < 1e-12);
  CHECK(max_abs_diff(cache.k, whole.k) < 1e-15);
  // The first token attends to itself alone: o is its own v.
  AttentionLayerCache empty;
  const std::vector<double> first = attention_layer_ref(B, 1, w, tokens(x, B, T, w.d_model, 0, 1), empty);
  CHECK(max_abs_diff(first, tokens(all, B, T, w.d_model, 0, 1)) < 1e-12);
}

TEST_CASE("layer reference: residuals, norms and the mixer by hand", "[reference][layer]") {
  std::mt19937_64 rng(testutil::fresh_seed());
  GdnWeights gw(rng);
  const int64_t B = 1, T = 5, d = gw.d;
  const std::vector<double> x = normal(rng, B * T * d, 1.0);
  // rmsnorm of (3, 4): rms = sqrt(12.5), times the weight.
  const double wt[2] = {2.0, 1.0};
  const std::vector<double> n = rmsnorm_ref({3.0, 4.0}, 2, wt, 0.0);
  CHECK(n[0] == Approx(6.0 / std::sqrt(12.5)));
  CHECK(n[1] == Approx(4.0 / std::sqrt(12.5)));
  // With W_o and W_down zero, the block is the identity (both residuals).
  std::fill(gw.o.begin(), gw.o.end(), 0.0);
  std::fill(gw.mlp.down.begin(), gw.mlp.down.end(), 0.0);
  GdnLayerState st;
  CHECK(max_abs_diff(gdn_layer_ref(B, T, gw.view(), x, st), x) == 0.0);
  // With W_o the identity (HV V = d) and the MLP off, out - x is the gated norm of the front end's o.
  GdnWeights sq(rng);
  sq.HV = 4, sq.V = 6;  // HV V = 24 = d
  sq.o.assign(size_t(d * d), 0.0);
  for (int64_t i = 0; i < d; ++i) sq.o[size_t(i * d + i)] = 1.0;
  std::fill(sq.mlp.down.begin(), sq.mlp.down.end(), 0.0);
  const GdnLayerWeights w = sq.view();
  GdnLayerState s2;
  const std::vector<double> out = gdn_layer_ref(B, T, w, x, s2);
  const std::vector<double> u = rmsnorm_ref(x, d, w.w_in_norm, kLayerRmsEps);
  GdnShape shape;
  shape.B = B, shape.T = T, shape.H = w.H, shape.HV = w.HV, shape.K = w.K, shape.V = w.V;
  const std::vector<double> xq = matmul_ref(B * T, d, w.H * w.K, u.data(), w.w_q);
  const std::vector<double> xk = matmul_ref(B * T, d, w.H * w.K, u.data(), w.w_k);
  const std::vector<double> xv = matmul_ref(B * T, d, w.HV * w.V, u.data(), w.w_v);
  const std::vector<double> a = matmul_ref(B * T, d, w.HV, u.data(), w.w_a);
  const std::vector<double> b = matmul_ref(B * T, d, w.HV, u.data(), w.w_b);
  const std::vector<double> z = matmul_ref(B * T, d, w.HV * w.V, u.data(), w.w_z);
  FrontEndInputs fi;
  fi.q_proj = xq.data(), fi.k_proj = xk.data(), fi.v_proj = xv.data();
  fi.q_conv_w = w.conv_q, fi.k_conv_w = w.conv_k, fi.v_conv_w = w.conv_v;
  fi.a = a.data(), fi.b = b.data(), fi.A_log = w.A_log, fi.dt_bias = w.dt_bias;
  const FrontEndOutputs fe = gdn_frontend_ref(shape, fi, FrontEndOptions{});
  for (int64_t i = 0; i < B * T * d; ++i) {
    const int64_t head = i / w.V;
    double ss = 0.0;
    for (int64_t j = 0; j < w.V; ++j) ss += fe.gdn.o[head * w.V + j] * fe.gdn.o[head * w.V + j];
    const double zi = z[size_t(i)];
    const double want = fe.gdn.o[size_t(i)] / std::sqrt(ss / double(w.V) + kLayerRmsEps) * w.w_o_norm[i % w.V] *
                        zi / (1.0 + std::exp(-zi));
    CHECK(out[size_t(i)] - x[size_t(i)] == Approx(want).margin(1e-12));
  }
}
