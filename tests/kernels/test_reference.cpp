// The float64 references: the chunked algebra against the recurrence, its intermediates, tiny
// cases worked by hand, properties of the recurrence, and softmax attention.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"

using testutil::GdnData;
using testutil::rel_l2;

namespace {

using testutil::kRefConfigs;
using testutil::RefConfig;

GdnRefOptions options(bool delta, double scale = 0.0) {
  GdnRefOptions o;
  o.use_delta = delta;
  o.scale = scale;
  return o;
}

// The K x V state of head (b, hv) from a [B, HV, K, V] tensor.
std::vector<double> head_state(const std::vector<double>& states, const GdnShape& s, int64_t b,
                               int64_t hv) {
  const auto first = states.begin() + (b * s.HV + hv) * s.K * s.V;
  return std::vector<double>(first, first + s.K * s.V);
}

}  // namespace

TEST_CASE("chunked float64 reference equals the recurrent reference to 1e-12", "[reference]") {
  const int64_t T = GENERATE(1, 15, 16, 17, 63, 64, 65, 200);
  const int64_t C = GENERATE(16, 32, 64);
  const auto kv = GENERATE(std::make_pair(16, 16), std::make_pair(64, 100), std::make_pair(100, 64));
  const RefConfig& cfg = kRefConfigs[GENERATE(range(0, 6))];
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " T " << T << " C " << C << " K " << kv.first << " V " << kv.second
               << " config " << cfg.name);

  const GdnShape s{cfg.B, T, cfg.H, cfg.HV, kv.first, kv.second};
  const GdnData d = testutil::random_gdn(s, seed);
  const GdnRefInputs in = d.view(cfg.gate, cfg.h0);
  const GdnRefOutputs rec = gdn_recurrent_ref(s, in, options(cfg.delta));
  const GdnRefOutputs chk = gdn_chunked_ref(s, in, options(cfg.delta), C);

  REQUIRE(rec.o.size() == size_t(s.v_elems()));
  REQUIRE(rec.hT.size() == size_t(s.state_elems()));
  REQUIRE(testutil::all_finite(chk.o));
  CHECK(rel_l2(chk.o, rec.o) <= 1e-12);
  CHECK(rel_l2(chk.hT, rec.hT) <= 1e-12);
}

TEST_CASE("chunked reference intermediates satisfy their definitions", "[reference]") {
  const int64_t T = GENERATE(17, 64, 65, 200);
  const int64_t C = GENERATE(16, 32, 64);
  const bool use_h0 = GENERATE(false, true);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " T " << T << " C " << C << " h0 " << use_h0);

  const GdnShape s{2, T, 1, 2, 24, 20};  // B = 2, GVA with group 2
  const int64_t K = s.K, V = s.V;
  const GdnData d = testutil::random_gdn(s, seed);
  GdnChunkIntermediates im;
  gdn_chunked_ref(s, d.view(true, use_h0), options(true), C, &im);
  const int64_t N = (T + C - 1) / C;
  REQUIRE(im.chunk == C);
  REQUIRE(im.num_chunks == N);
  REQUIRE(im.T_inv.size() == size_t(s.B * s.HV * N * C * C));
  REQUIRE(im.chunk_states.size() == size_t(s.B * s.HV * N * K * V));

  // The recurrent state after every whole chunk, from the recurrence run on the prefix.
  std::vector<std::vector<double>> prefix_states(static_cast<size_t>(N));
  for (int64_t n = 1; n < N; ++n) {
    const GdnData pre = testutil::slice_gdn(d, 0, n * C);
    prefix_states[size_t(n)] = gdn_recurrent_ref(pre.shape, pre.view(true, use_h0), options(true)).hT;
  }

  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t hv = 0; hv < s.HV; ++hv)
      for (int64_t n = 0; n < N; ++n) {
        INFO("b " << b << " hv " << hv << " chunk " << n);
        const int64_t head = (b * s.HV + hv) * N + n, t0 = n * C, L = std::min(C, T - t0);
        const double* gamma = im.gamma.data() + head * C;
        const double* A = im.A.data() + head * C * C;
        const double* Ti = im.T_inv.data() + head * C * C;
        const double* W = im.W.data() + head * C * K;
        const double* U0 = im.U0.data() + head * C * V;
        const double* U = im.U.data() + head * C * V;
        const double* S0 = im.chunk_states.data() + head * K * V;
        auto gidx = [&](int64_t i) { return (b * T + t0 + i) * s.HV + hv; };
        auto krow = [&](int64_t i) { return d.k.data() + ((b * T + t0 + i) * s.H + hv / s.group()) * K; };
        auto vrow = [&](int64_t i) { return d.v.data() + gidx(i) * V; };

        // gamma: local cumulative sum of g.
        double acc = 0.0;
        for (int64_t i = 0; i < L; ++i) {
          acc += d.g[size_t(gidx(i))];
          CHECK(gamma[i] == Approx(acc).margin(1e-14));
        }
        // A = strictly_lower(diag(beta) K K^T .* D), recomputed from the inputs.
        double a_err = 0.0;
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < C; ++j) {
            double want = 0.0;
            if (j < i) {
              double kk = 0.0;
              for (int64_t c = 0; c < K; ++c) kk += krow(i)[c] * krow(j)[c];
              want = d.beta[size_t(gidx(i))] * kk * std::exp(gamma[i] - gamma[j]);
            }
            a_err = std::max(a_err, std::fabs(A[i * C + j] - want));
          }
        CHECK(a_err <= 1e-13);
        // T_inv (I + A) == I on the L rows of the chunk.
        double inv_err = 0.0;
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < L; ++j) {
            double p = Ti[i * C + j];  // the I term
            for (int64_t m = 0; m < L; ++m) p += Ti[i * C + m] * A[m * C + j];
            inv_err = std::max(inv_err, std::fabs(p - (i == j ? 1.0 : 0.0)));
          }
        CHECK(inv_err <= 1e-12);
        // W = T_inv diag(beta exp(gamma)) K and U0 = T_inv diag(beta) V.
        double w_err = 0.0, u0_err = 0.0;
        for (int64_t i = 0; i < L; ++i) {
          for (int64_t c = 0; c < K; ++c) {
            double w = 0.0;
            for (int64_t j = 0; j < L; ++j)
              w += Ti[i * C + j] * d.beta[size_t(gidx(j))] * std::exp(gamma[j]) * krow(j)[c];
            w_err = std::max(w_err, std::fabs(W[i * K + c] - w));
          }
          for (int64_t c = 0; c < V; ++c) {
            double u = 0.0;
            for (int64_t j = 0; j < L; ++j) u += Ti[i * C + j] * d.beta[size_t(gidx(j))] * vrow(j)[c];
            u0_err = std::max(u0_err, std::fabs(U0[i * V + c] - u));
          }
        }
        CHECK(w_err <= 1e-12);
        CHECK(u0_err <= 1e-12);
        // U = U0 - W S0, with S0 the state entering the chunk.
        double u_err = 0.0;
        for (int64_t i = 0; i < L; ++i)
          for (int64_t c = 0; c < V; ++c) {
            double ws = 0.0;
            for (int64_t r = 0; r < K; ++r) ws += W[i * K + r] * S0[r * V + c];
            u_err = std::max(u_err, std::fabs(U[i * V + c] - (U0[i * V + c] - ws)));
          }
        CHECK(u_err <= 1e-12);
        // Rows past the end of the sequence are zero padding.
        double pad = 0.0;
        for (int64_t i = L; i < C; ++i) {
          for (int64_t j = 0; j < C; ++j) pad = std::max({pad, std::fabs(A[i * C + j]), std::fabs(Ti[i * C + j])});
          for (int64_t c = 0; c < K; ++c) pad = std::max(pad, std::fabs(W[i * K + c]));
          for (int64_t c = 0; c < V; ++c) pad = std::max({pad, std::fabs(U0[i * V + c]), std::fabs(U[i * V + c])});
        }
        CHECK(pad == 0.0);
        // The state entering chunk n is h0 (n = 0) or the recurrent state after n chunks.
        const std::vector<double> entering(S0, S0 + K * V);
        if (n == 0) {
          const std::vector<double> want = use_h0 ? head_state(d.h0, s, b, hv) : std::vector<double>(K * V, 0.0);
          CHECK(entering == want);
        } else {
          const std::vector<double> want = head_state(prefix_states[size_t(n)], s, b, hv);
          CHECK(rel_l2(entering, want) <= 1e-12);
        }
      }
}

// Hand-worked cases: K = V = 2, states written as K x V matrices [[S00, S01], [S10, S11]], row i
// belongs to key component i. o_t = scale * S_t^T q_t = scale * sum_i q_i * (row i of S_t).
namespace {

struct HandCase {
  GdnShape shape;
  std::vector<double> q, k, v, g, beta, h0;
  bool gate, delta;
  double scale;
  std::vector<double> want_o, want_hT;
};

void check_hand_case(const HandCase& hc) {
  GdnRefInputs in;
  in.q = hc.q.data();
  in.k = hc.k.data();
  in.v = hc.v.data();
  in.g = hc.gate ? hc.g.data() : nullptr;
  in.beta = hc.beta.data();
  in.h0 = hc.h0.empty() ? nullptr : hc.h0.data();
  const GdnRefOptions opt = options(hc.delta, hc.scale);
  SECTION("recurrent") {
    const GdnRefOutputs r = gdn_recurrent_ref(hc.shape, in, opt);
    REQUIRE(r.o.size() == hc.want_o.size());
    for (size_t i = 0; i < r.o.size(); ++i) CHECK(r.o[i] == Approx(hc.want_o[i]).margin(1e-12));
    for (size_t i = 0; i < r.hT.size(); ++i) CHECK(r.hT[i] == Approx(hc.want_hT[i]).margin(1e-12));
  }
  SECTION("chunked") {
    const int64_t C = GENERATE(1, 2, 3, 16);
    INFO("chunk " << C);
    const GdnRefOutputs r = gdn_chunked_ref(hc.shape, in, opt, C);
    REQUIRE(r.o.size() == hc.want_o.size());
    for (size_t i = 0; i < r.o.size(); ++i) CHECK(r.o[i] == Approx(hc.want_o[i]).margin(1e-12));
    for (size_t i = 0; i < r.hT.size(); ++i) CHECK(r.hT[i] == Approx(hc.want_hT[i]).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("hand-worked GDN with gate, delta and h0", "[reference][hand]") {
  HandCase hc;
  hc.shape = GdnShape{1, 3, 1, 1, 2, 2};
  hc.gate = hc.delta = true;
  hc.scale = 1.0;
  hc.h0 = {1, 2, 3, 4};  // [[1, 2], [3, 4]]
  // t=1: k=(1,0) v=(1,1) q=(0,1) alpha=1/2 beta=1/2
  //   S' = [[0.5, 1], [1.5, 2]];  S'^T k = row 0 = (0.5, 1)
  //   u = 0.5 ((1,1) - (0.5,1)) = (0.25, 0);  S = S' + k u^T = [[0.75, 1], [1.5, 2]]
  //   o = row 1 = (1.5, 2)
  // t=2: k=(0.6,0.8) v=(2,-1) q=(1,0) alpha=1 beta=1
  //   S^T k = 0.6 (0.75, 1) + 0.8 (1.5, 2) = (1.65, 2.2);  u = (2 - 1.65, -1 - 2.2) = (0.35, -3.2)
  //   row 0 += 0.6 u = (0.21, -1.92) -> (0.96, -0.92);  row 1 += 0.8 u = (0.28, -2.56) -> (1.78, -0.56)
  //   o = row 0 = (0.96, -0.92)      [recall check: S^T k = (0.576 + 1.424, -0.552 - 0.448) = v]
  // t=3: k=(0,1) v=(4,0) q=(1,1) alpha=1/4 beta=1/4
  //   S' = [[0.24, -0.23], [0.445, -0.14]];  S'^T k = row 1 = (0.445, -0.14)
  //   u = 0.25 ((4, 0) - (0.445, -0.14)) = 0.25 (3.555, 0.14) = (0.88875, 0.035)
  //   row 1 += u -> (1.33375, -0.105);  S = [[0.24, -0.23], [1.33375, -0.105]]
  //   o = row 0 + row 1 = (1.57375, -0.335)
  hc.k = {1, 0, 0.6, 0.8, 0, 1};
  hc.v = {1, 1, 2, -1, 4, 0};
  hc.q = {0, 1, 1, 0, 1, 1};
  hc.g = {std::log(0.5), 0.0, std::log(0.25)};
  hc.beta = {0.5, 1.0, 0.25};
  hc.want_o = {1.5, 2, 0.96, -0.92, 1.57375, -0.335};
  hc.want_hT = {0.24, -0.23, 1.33375, -0.105};
  check_hand_case(hc);
}

TEST_CASE("hand-worked DeltaNet (no gate) with h0 and the default scale", "[reference][hand]") {
  HandCase hc;
  hc.shape = GdnShape{1, 2, 1, 1, 2, 2};
  hc.gate = false;
  hc.delta = true;
  hc.scale = 0.0;  // K^-1/2 = 1/sqrt(2)
  hc.h0 = {1, 0, 0, 1};  // identity
  // t=1: k=(1,0) v=(3,1) q=(1,0) beta=1/2 (no gate: alpha = 1)
  //   S^T k = row 0 = (1, 0);  u = 0.5 ((3,1) - (1,0)) = (1, 0.5);  row 0 -> (2, 0.5)
  //   S = [[2, 0.5], [0, 1]];  o = row 0 / sqrt(2) = (2, 0.5) / sqrt(2)
  // t=2: k=(0,1) v=(-1,2) q=(1,1) beta=1/2
  //   S^T k = row 1 = (0, 1);  u = 0.5 ((-1,2) - (0,1)) = (-0.5, 0.5);  row 1 -> (-0.5, 1.5)
  //   S = [[2, 0.5], [-0.5, 1.5]];  o = (row 0 + row 1) / sqrt(2) = (1.5, 2) / sqrt(2)
  hc.k = {1, 0, 0, 1};
  hc.v = {3, 1, -1, 2};
  hc.q = {1, 0, 1, 1};
  hc.g = {-5.0, -5.0};  // must be ignored: the gate is off
  hc.beta = {0.5, 0.5};
  const double r2 = std::sqrt(2.0);
  hc.want_o = {2 / r2, 0.5 / r2, 1.5 / r2, 2 / r2};
  hc.want_hT = {2, 0.5, -0.5, 1.5};
  check_hand_case(hc);
}

TEST_CASE("hand-worked gated linear attention (delta off) with h0", "[reference][hand]") {
  HandCase hc;
  hc.shape = GdnShape{1, 2, 1, 1, 2, 2};
  hc.gate = true;
  hc.delta = false;
  hc.scale = 1.0;
  hc.h0 = {2, 0, 0, -2};  // [[2, 0], [0, -2]]
  // S = alpha S + k v^T, beta unused.
  // t=1: alpha=1/2 k=(1,1) v=(1,2) q=(1,0)
  //   S = [[1, 0], [0, -1]] + [[1, 2], [1, 2]] = [[2, 2], [1, 1]];  o = row 0 = (2, 2)
  // t=2: alpha=1/2 k=(0,2) v=(1,-1) q=(1,-1)
  //   S = [[1, 1], [0.5, 0.5]] + [[0, 0], [2, -2]] = [[1, 1], [2.5, -1.5]]
  //   o = row 0 - row 1 = (-1.5, 2.5)
  hc.k = {1, 1, 0, 2};
  hc.v = {1, 2, 1, -1};
  hc.q = {1, 0, 1, -1};
  hc.g = {std::log(0.5), std::log(0.5)};
  hc.beta = {0.3, 0.7};  // must be ignored: no delta term
  hc.want_o = {2, 2, -1.5, 2.5};
  hc.want_hT = {1, 1, 2.5, -1.5};
  check_hand_case(hc);
}

TEST_CASE("g = 0 and beta = 0 keep the state", "[reference][property]") {
  const bool gate_tensor = GENERATE(true, false);  // g = 0 given explicitly, or no gate at all
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " gate tensor " << gate_tensor);
  const GdnShape s{2, 23, 1, 2, 8, 12};
  GdnData d = testutil::random_gdn(s, seed);
  std::fill(d.g.begin(), d.g.end(), 0.0);
  std::fill(d.beta.begin(), d.beta.end(), 0.0);
  const GdnRefOutputs rec = gdn_recurrent_ref(s, d.view(gate_tensor, true), options(true));
  const GdnRefOutputs chk = gdn_chunked_ref(s, d.view(gate_tensor, true), options(true), 16);
  CHECK(rec.hT == d.h0);
  CHECK(chk.hT == d.h0);
  // Every output reads the unchanged h0: o_t = scale h0^T q_t.
  const double scale = 1.0 / std::sqrt(double(s.K));
  std::vector<double> want(rec.o.size());
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t hv = 0; hv < s.HV; ++hv)
        for (int64_t j = 0; j < s.V; ++j) {
          double acc = 0.0;
          for (int64_t i = 0; i < s.K; ++i)
            acc += d.h0[size_t(((b * s.HV + hv) * s.K + i) * s.V + j)] *
                   d.q[size_t(((b * s.T + t) * s.H + hv / s.group()) * s.K + i)];
          want[size_t(((b * s.T + t) * s.HV + hv) * s.V + j)] = scale * acc;
        }
  CHECK(rel_l2(rec.o, want) <= 1e-14);
  CHECK(rel_l2(chk.o, want) <= 1e-14);
}

TEST_CASE("a very negative gate clears the state: only the last token matters", "[reference][property]") {
  const uint64_t seed = testutil::fresh_seed();
  const int64_t T = GENERATE(1, 5, 33);
  INFO("seed " << seed << " T " << T);
  const GdnShape s{1, T, 1, 1, 16, 8};
  GdnData a = testutil::random_gdn(s, seed);
  GdnData b = testutil::random_gdn(s, seed + 1);  // different history and h0
  for (GdnData* d : {&a, &b}) std::fill(d->g.begin(), d->g.end(), -200.0);
  // Same last token in both.
  const int64_t last = T - 1;
  std::copy_n(a.q.begin() + last * s.K, s.K, b.q.begin() + last * s.K);
  std::copy_n(a.k.begin() + last * s.K, s.K, b.k.begin() + last * s.K);
  std::copy_n(a.v.begin() + last * s.V, s.V, b.v.begin() + last * s.V);
  b.beta[size_t(last)] = a.beta[size_t(last)];

  // After the step S = beta k v^T and o = scale beta (k . q) v.
  const double beta = a.beta[size_t(last)];
  const double* k = a.k.data() + last * s.K;
  const double* q = a.q.data() + last * s.K;
  const double* v = a.v.data() + last * s.V;
  std::vector<double> want_hT(s.K * s.V), want_o(s.V);
  double kq = 0.0;
  for (int64_t i = 0; i < s.K; ++i) kq += k[i] * q[i];
  for (int64_t i = 0; i < s.K; ++i)
    for (int64_t j = 0; j < s.V; ++j) want_hT[size_t(i * s.V + j)] = beta * k[i] * v[j];
  for (int64_t j = 0; j < s.V; ++j) want_o[size_t(j)] = beta * kq * v[j] / std::sqrt(double(s.K));

  for (const GdnData* d : {&a, &b}) {
    const GdnRefOutputs rec = gdn_recurrent_ref(s, d->view(true, true), options(true));
    const GdnRefOutputs chk = gdn_chunked_ref(s, d->view(true, true), options(true), 16);
    const std::vector<double> rec_o(rec.o.end() - s.V, rec.o.end()), chk_o(chk.o.end() - s.V, chk.o.end());
    CHECK(rel_l2(rec.hT, want_hT) <= 1e-12);
    CHECK(rel_l2(rec_o, want_o) <= 1e-12);
    REQUIRE(testutil::all_finite(chk.o));
    REQUIRE(testutil::all_finite(chk.hT));
    CHECK(rel_l2(chk.hT, want_hT) <= 1e-12);
    CHECK(rel_l2(chk_o, want_o) <= 1e-12);
  }
}

TEST_CASE("unit-norm k with beta = 1 recalls v exactly", "[reference][property]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const GdnShape s{1, 9, 1, 1, 12, 7};
  GdnData d = testutil::random_gdn(s, seed);
  std::fill(d.beta.begin(), d.beta.end(), 1.0);
  for (int64_t t = 1; t <= s.T; ++t) {
    INFO("after token " << t);
    GdnData pre = testutil::slice_gdn(d, 0, t);
    // Read out with q = k at the last token: o = scale S^T k.
    std::copy_n(pre.k.begin() + (t - 1) * s.K, s.K, pre.q.begin() + (t - 1) * s.K);
    const GdnRefOutputs r = gdn_recurrent_ref(pre.shape, pre.view(true, true), options(true, 1.0));
    const std::vector<double> recalled(r.o.end() - s.V, r.o.end());
    const std::vector<double> v(d.v.begin() + (t - 1) * s.V, d.v.begin() + t * s.V);
    CHECK(rel_l2(recalled, v) <= 1e-13);
    // The same through the state: hT^T k = v.
    std::vector<double> stk(s.V, 0.0);
    for (int64_t i = 0; i < s.K; ++i)
      for (int64_t j = 0; j < s.V; ++j) stk[size_t(j)] += r.hT[size_t(i * s.V + j)] * d.k[size_t((t - 1) * s.K + i)];
    CHECK(rel_l2(stk, v) <= 1e-13);
  }
}

TEST_CASE("running [0, T) equals [0, t) then [t, T) from the carried state", "[reference][property]") {
  const int64_t T = 70;
  const int64_t split = GENERATE(1, 16, 33, 64, 69);
  const bool delta = GENERATE(true, false);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " split " << split << " delta " << delta);
  const GdnShape s{2, T, 1, 2, 16, 12};
  const GdnData d = testutil::random_gdn(s, seed);
  const GdnData first = testutil::slice_gdn(d, 0, split);
  GdnData second = testutil::slice_gdn(d, split, T);

  SECTION("recurrent") {
    const GdnRefOutputs full = gdn_recurrent_ref(s, d.view(true, true), options(delta));
    const GdnRefOutputs a = gdn_recurrent_ref(first.shape, first.view(true, true), options(delta));
    second.h0 = a.hT;
    const GdnRefOutputs b = gdn_recurrent_ref(second.shape, second.view(true, true), options(delta));
    CHECK(rel_l2(a.o, testutil::slice_tokens(full.o, s.B, T, s.HV * s.V, 0, split)) <= 1e-14);
    CHECK(rel_l2(b.o, testutil::slice_tokens(full.o, s.B, T, s.HV * s.V, split, T)) <= 1e-14);
    CHECK(rel_l2(b.hT, full.hT) <= 1e-14);
  }
  SECTION("chunked") {
    const GdnRefOutputs full = gdn_chunked_ref(s, d.view(true, true), options(delta), 16);
    const GdnRefOutputs a = gdn_chunked_ref(first.shape, first.view(true, true), options(delta), 16);
    second.h0 = a.hT;
    const GdnRefOutputs b = gdn_chunked_ref(second.shape, second.view(true, true), options(delta), 16);
    CHECK(rel_l2(a.o, testutil::slice_tokens(full.o, s.B, T, s.HV * s.V, 0, split)) <= 1e-12);
    CHECK(rel_l2(b.o, testutil::slice_tokens(full.o, s.B, T, s.HV * s.V, split, T)) <= 1e-12);
    CHECK(rel_l2(b.hT, full.hT) <= 1e-12);
  }
}

TEST_CASE("grouped value heads equal q and k repeated per value head", "[reference][property]") {
  const int64_t group = GENERATE(2, 3);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " group " << group);
  const GdnShape s{2, 19, 2, 2 * group, 8, 6};
  const GdnData d = testutil::random_gdn(s, seed);
  GdnData flat = d;
  flat.shape.H = s.HV;
  flat.q = testutil::repeat_heads(d.q, s);
  flat.k = testutil::repeat_heads(d.k, s);
  const GdnRefOutputs gva = gdn_recurrent_ref(s, d.view(true, true), options(true));
  const GdnRefOutputs rep = gdn_recurrent_ref(flat.shape, flat.view(true, true), options(true));
  CHECK(gva.o == rep.o);
  CHECK(gva.hT == rep.hT);
  const GdnRefOutputs gva_c = gdn_chunked_ref(s, d.view(true, true), options(true), 16);
  const GdnRefOutputs rep_c = gdn_chunked_ref(flat.shape, flat.view(true, true), options(true), 16);
  CHECK(gva_c.o == rep_c.o);
  CHECK(gva_c.hT == rep_c.hT);
  // Heads really differ: value heads that share a q/k head still have their own outputs.
  CHECK(rel_l2(std::vector<double>(gva.o.begin(), gva.o.begin() + s.V),
               std::vector<double>(gva.o.begin() + s.V, gva.o.begin() + 2 * s.V)) > 1e-3);
}

TEST_CASE("reference scale, threads and argument checks", "[reference]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const GdnShape s{2, 13, 2, 4, 9, 5};
  const GdnData d = testutil::random_gdn(s, seed);
  SECTION("scale 0 means K^-1/2, and o is linear in the scale while hT ignores it") {
    CHECK(gdn_default_scale(s) == 1.0 / 3.0);
    const GdnRefOutputs def = gdn_recurrent_ref(s, d.view(), options(true, 0.0));
    const GdnRefOutputs third = gdn_recurrent_ref(s, d.view(), options(true, 1.0 / 3.0));
    const GdnRefOutputs two = gdn_recurrent_ref(s, d.view(), options(true, 2.0));
    CHECK(def.o == third.o);
    std::vector<double> scaled(def.o);
    for (double& x : scaled) x *= 6.0;
    CHECK(rel_l2(two.o, scaled) <= 1e-14);
    CHECK(two.hT == def.hT);
  }
  SECTION("threads do not change the recurrent result") {
    GdnRefOptions one = options(true), many = options(true);
    many.threads = 3;
    const GdnRefOutputs a = gdn_recurrent_ref(s, d.view(), one);
    const GdnRefOutputs b = gdn_recurrent_ref(s, d.view(), many);
    CHECK(a.o == b.o);
    CHECK(a.hT == b.hT);
  }
  SECTION("bad shapes and chunk sizes throw") {
    GdnShape bad = s;
    bad.HV = 3;  // not a multiple of H = 2
    CHECK_THROWS_AS(gdn_recurrent_ref(bad, d.view(), options(true)), std::invalid_argument);
    CHECK_THROWS_AS(gdn_chunked_ref(bad, d.view(), options(true), 16), std::invalid_argument);
    CHECK_THROWS_AS(gdn_chunked_ref(s, d.view(), options(true), 0), std::invalid_argument);
  }
}

// ---- softmax attention ----

TEST_CASE("attention on one token returns v", "[reference][attention]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const GdnShape s{2, 1, 3, 3, 8, 5};
  const GdnData d = testutil::random_gdn(s, seed);  // q, k: [B, 1, H, 8]; v: [B, 1, H, 5]
  for (bool causal : {true, false}) {
    const std::vector<double> o = attention_ref(s.B, 1, s.H, s.K, s.V, d.q.data(), d.k.data(), d.v.data(), 0.0, causal);
    REQUIRE(o.size() == d.v.size());
    for (size_t i = 0; i < o.size(); ++i) CHECK(o[i] == Approx(d.v[i]).margin(1e-15));
  }
}

TEST_CASE("attention on two tokens, worked by hand", "[reference][attention][hand]") {
  // D = Dv = 2, scale 1. q1 = (1, 0), q2 = (1, 1); k1 = (0, 0), k2 = (ln 3, 0); v1 = (4, 0), v2 = (0, 8).
  // Causal row 1 sees k1 only: o1 = v1 = (4, 0).
  // Row 2 logits: q2.k1 = 0, q2.k2 = ln 3 -> weights (1/4, 3/4): o2 = (1, 6).
  // Non-causal row 1 logits: q1.k1 = 0, q1.k2 = ln 3 -> also (1/4, 3/4): o1 = (1, 6).
  const std::vector<double> q = {1, 0, 1, 1}, k = {0, 0, std::log(3.0), 0}, v = {4, 0, 0, 8};
  const std::vector<double> causal = attention_ref(1, 2, 1, 2, 2, q.data(), k.data(), v.data(), 1.0, true);
  const std::vector<double> full = attention_ref(1, 2, 1, 2, 2, q.data(), k.data(), v.data(), 1.0, false);
  const std::vector<double> want_causal = {4, 0, 1, 6}, want_full = {1, 6, 1, 6};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(causal[i] == Approx(want_causal[i]).margin(1e-14));
    CHECK(full[i] == Approx(want_full[i]).margin(1e-14));
  }
  // scale 0 means D^-1/2: with q2 scaled by sqrt(2) the default reproduces the scale-1 result.
  const double r2 = std::sqrt(2.0);
  const std::vector<double> q_scaled = {r2, 0, r2, r2};
  const std::vector<double> def = attention_ref(1, 2, 1, 2, 2, q_scaled.data(), k.data(), v.data(), 0.0, true);
  for (size_t i = 0; i < 4; ++i) CHECK(def[i] == Approx(want_causal[i]).margin(1e-13));
}

TEST_CASE("causal and non-causal attention agree on the last row; decode equals it", "[reference][attention]") {
  const int64_t T = GENERATE(1, 2, 17, 64);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " T " << T);
  const int64_t B = 2, H = 3, D = 16, Dv = 12;
  const GdnShape s{B, T, H, H, D, Dv};
  const GdnData d = testutil::random_gdn(s, seed);
  // Large logits so a wrong mask or a missing max-subtraction shows.
  std::vector<double> q = d.q;
  for (double& x : q) x *= 20.0;
  const std::vector<double> causal = attention_ref(B, T, H, D, Dv, q.data(), d.k.data(), d.v.data(), 0.0, true);
  const std::vector<double> full = attention_ref(B, T, H, D, Dv, q.data(), d.k.data(), d.v.data(), 0.0, false);
  REQUIRE(testutil::all_finite(causal));
  const std::vector<double> causal_last = testutil::slice_tokens(causal, B, T, H * Dv, T - 1, T);
  const std::vector<double> full_last = testutil::slice_tokens(full, B, T, H * Dv, T - 1, T);
  CHECK(rel_l2(causal_last, full_last) <= 1e-14);
  if (T > 1) CHECK(rel_l2(causal, full) > 1e-6);  // the mask matters on earlier rows

  const std::vector<double> q_last = testutil::slice_tokens(q, B, T, H * D, T - 1, T);  // [B, H, D]
  const std::vector<double> dec = attention_decode_ref(B, T, H, D, Dv, q_last.data(), d.k.data(), d.v.data(), 0.0);
  CHECK(rel_l2(dec, causal_last) <= 1e-14);

  // Threads split the query rows; the result does not change.
  const std::vector<double> threaded = attention_ref(B, T, H, D, Dv, q.data(), d.k.data(), d.v.data(), 0.0, true, 3);
  CHECK(threaded == causal);

  // Each causal row t equals attention over the prefix [0, t] alone.
  const int64_t t = T / 2;
  const std::vector<double> qp = testutil::slice_tokens(q, B, T, H * D, 0, t + 1);
  const std::vector<double> kp = testutil::slice_tokens(d.k, B, T, H * D, 0, t + 1);
  const std::vector<double> vp = testutil::slice_tokens(d.v, B, T, H * Dv, 0, t + 1);
  const std::vector<double> pre = attention_ref(B, t + 1, H, D, Dv, qp.data(), kp.data(), vp.data(), 0.0, false);
  CHECK(rel_l2(testutil::slice_tokens(pre, B, t + 1, H * Dv, t, t + 1),
               testutil::slice_tokens(causal, B, T, H * Dv, t, t + 1)) <= 1e-14);
}
