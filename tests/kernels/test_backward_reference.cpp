// The float64 backward references: the recurrent one against central finite differences of the
// forward, the chunked one against the recurrent one, checkpointing and threads invisible, and
// a backward that is wrong by design caught by the same check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "reference/gdn_backward_reference.h"
#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"

using testutil::GdnData;
using testutil::rel_l2;

namespace {

// Central differences with step 1e-5 on inputs of order 1: truncation ~1e-10 and cancellation
// ~1e-16 |L| / 1e-5 relative. The calibration test at the end measured a worst rel_l2 of 1.4e-9
// over 560 problems (docs/BACKWARD.md); a wrong or missing term costs 1e-2 and more.
constexpr double kFiniteDifferenceStep = 1e-5;
constexpr double kFiniteDifferenceBound = 1e-7;

// The chunked algebra and the recurrence are the same function evaluated in a different order.
constexpr double kChunkedBound = 1e-12;

struct Features {
  bool gate, delta, h0, dhT;
};

std::string describe(const Features& f) {
  return std::string("gate ") + (f.gate ? "on" : "off") + ", delta " + (f.delta ? "on" : "off") +
         ", h0 " + (f.h0 ? "on" : "off") + ", dhT " + (f.dhT ? "on" : "off");
}

// Bit 0 gate, bit 1 delta, bit 2 h0, bit 3 dhT.
Features features_from_bits(int bits) {
  return {bool(bits & 1), bool(bits & 2), bool(bits & 4), bool(bits & 8)};
}

GdnRefOptions options(bool delta, int threads = 1) {
  GdnRefOptions o;
  o.use_delta = delta;
  o.threads = threads;
  return o;
}

// Upstream gradients ~ N(0, 1).
struct Upstream {
  std::vector<double> dout, dhT;
  GdnRefGradInputs view(bool use_dhT) const { return {dout.data(), use_dhT ? dhT.data() : nullptr}; }
};

Upstream random_upstream(const GdnShape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Upstream u;
  u.dout.resize(size_t(s.v_elems()));
  u.dhT.resize(size_t(s.state_elems()));
  for (double& x : u.dout) x = normal(rng);
  for (double& x : u.dhT) x = normal(rng);
  return u;
}

// The loss the backward references differentiate: sum(dout .* o) + sum(dhT .* hT).
double loss(const GdnShape& s, const GdnRefInputs& in, const GdnRefGradInputs& up, bool delta) {
  const GdnRefOutputs out = gdn_recurrent_ref(s, in, options(delta));
  double L = 0.0;
  for (size_t i = 0; i < out.o.size(); ++i) L += up.dout[i] * out.o[i];
  if (up.dhT)
    for (size_t i = 0; i < out.hT.size(); ++i) L += up.dhT[i] * out.hT[i];
  return L;
}

// rel_l2 of each gradient of `grads` against central differences of the loss; also checks the
// shapes (gradients of absent inputs are empty; dbeta is zero without the delta term).
struct FiniteDifferenceErrors {
  double dq = 0, dk = 0, dv = 0, dg = 0, dbeta = 0, dh0 = 0;
  double worst() const { return std::max({dq, dk, dv, dg, dbeta, dh0}); }
};

FiniteDifferenceErrors finite_difference_errors(GdnData& d, const Features& f, const Upstream& up,
                                                const GdnRefGradients& grads) {
  const GdnShape& s = d.shape;
  const GdnRefGradInputs up_view = up.view(f.dhT);
  auto error_of = [&](std::vector<double>& x, const std::vector<double>& grad) {
    std::vector<double> fd(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double x0 = x[i];
      x[i] = x0 + kFiniteDifferenceStep;
      const double plus = loss(s, d.view(f.gate, f.h0), up_view, f.delta);
      x[i] = x0 - kFiniteDifferenceStep;
      const double minus = loss(s, d.view(f.gate, f.h0), up_view, f.delta);
      x[i] = x0;
      fd[i] = (plus - minus) / (2 * kFiniteDifferenceStep);
    }
    return rel_l2(grad, fd);
  };
  FiniteDifferenceErrors e;
  e.dq = error_of(d.q, grads.dq);
  e.dk = error_of(d.k, grads.dk);
  e.dv = error_of(d.v, grads.dv);
  if (f.gate) e.dg = error_of(d.g, grads.dg);
  else CHECK(grads.dg.empty());
  if (f.delta) {
    e.dbeta = error_of(d.beta, grads.dbeta);
  } else {
    CHECK(grads.dbeta.size() == size_t(s.gate_elems()));
    CHECK(std::all_of(grads.dbeta.begin(), grads.dbeta.end(), [](double x) { return x == 0.0; }));
  }
  if (f.h0) e.dh0 = error_of(d.h0, grads.dh0);
  else CHECK(grads.dh0.empty());
  return e;
}

void check_same(const GdnRefGradients& a, const GdnRefGradients& b) {
  CHECK(a.dq == b.dq);
  CHECK(a.dk == b.dk);
  CHECK(a.dv == b.dv);
  CHECK(a.dg == b.dg);
  CHECK(a.dbeta == b.dbeta);
  CHECK(a.dh0 == b.dh0);
}

// Two heads of a q/k head's group and B = 2: dq, dk sum over value heads, heads stay apart.
constexpr int64_t kSmallB = 2, kSmallH = 1, kSmallHV = 2, kSmallK = 6, kSmallV = 4;

}  // namespace

TEST_CASE("recurrent backward equals central finite differences of the forward", "[reference][backward]") {
  const int64_t T = GENERATE(1, 5, 17, 70);
  const int bits = GENERATE(range(0, 16));
  // Every feature combination up to T = 17. T = 70 costs 4x as much (the check runs the forward
  // twice per input element), so there only three, which turn each feature on and off:
  // everything; delta and h0 alone; gate and dhT alone.
  if (T == 70 && bits != 0b1111 && bits != 0b0110 && bits != 0b1001) return;
  const Features f = features_from_bits(bits);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " T " << T << " " << describe(f));
  const GdnShape s{kSmallB, T, kSmallH, kSmallHV, kSmallK, kSmallV};
  GdnData d = testutil::random_gdn(s, seed);
  const Upstream up = random_upstream(s, seed + 1);
  // Interval 4: T = 5, 17 and 70 cross checkpoints, and 70 ends on a partial interval.
  const GdnRefGradients grads =
      gdn_recurrent_backward_ref(s, d.view(f.gate, f.h0), up.view(f.dhT), options(f.delta), 4);
  REQUIRE(grads.dq.size() == size_t(s.qk_elems()));
  REQUIRE(grads.dk.size() == size_t(s.qk_elems()));
  REQUIRE(grads.dv.size() == size_t(s.v_elems()));
  const FiniteDifferenceErrors e = finite_difference_errors(d, f, up, grads);
  CHECK(e.dq <= kFiniteDifferenceBound);
  CHECK(e.dk <= kFiniteDifferenceBound);
  CHECK(e.dv <= kFiniteDifferenceBound);
  CHECK(e.dg <= kFiniteDifferenceBound);
  CHECK(e.dbeta <= kFiniteDifferenceBound);
  CHECK(e.dh0 <= kFiniteDifferenceBound);
}

TEST_CASE("the finite-difference check catches a backward that drops the dhT term", "[reference][backward]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const GdnShape s{kSmallB, 9, kSmallH, kSmallHV, kSmallK, kSmallV};
  GdnData d = testutil::random_gdn(s, seed);
  const Upstream up = random_upstream(s, seed + 1);
  const Features f{true, true, true, true};
  // The loss reads hT, the backward is told it does not.
  const GdnRefGradients wrong = gdn_recurrent_backward_ref(s, d.view(), up.view(false), options(true));
  const FiniteDifferenceErrors e = finite_difference_errors(d, f, up, wrong);
  INFO("dq " << e.dq << " dk " << e.dk << " dv " << e.dv << " dg " << e.dg << " dbeta " << e.dbeta
             << " dh0 " << e.dh0);
  // o does not depend on hT, so only the state's path is missing: every input but q feeds hT.
  CHECK(e.dk > 1e-2);
  CHECK(e.dv > 1e-2);
  CHECK(e.dg > 1e-2);
  CHECK(e.dbeta > 1e-2);
  CHECK(e.dh0 > 1e-2);
  CHECK(e.dq <= kFiniteDifferenceBound);
}

TEST_CASE("recurrent backward gradients are linear in the upstream gradients", "[reference][backward]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const GdnShape s{kSmallB, 23, kSmallH, kSmallHV, kSmallK, kSmallV};
  const GdnData d = testutil::random_gdn(s, seed);
  const Upstream up = random_upstream(s, seed + 1);
  const GdnRefGradients base = gdn_recurrent_backward_ref(s, d.view(), up.view(true), options(true), 8);

  SECTION("doubling dout and dhT doubles every gradient exactly") {
    Upstream twice = up;
    for (double& x : twice.dout) x *= 2;
    for (double& x : twice.dhT) x *= 2;
    GdnRefGradients want = base;
    for (auto* g : {&want.dq, &want.dk, &want.dv, &want.dg, &want.dbeta, &want.dh0})
      for (double& x : *g) x *= 2;
    check_same(gdn_recurrent_backward_ref(s, d.view(), twice.view(true), options(true), 8), want);
  }
  SECTION("one element of dout moves the gradients of its token and the earlier ones only") {
    const int64_t t = 11;
    Upstream bumped = up;
    bumped.dout[size_t(((1 * s.T + t) * s.HV + 0) * s.V + 2)] += 1.0;  // b = 1, hv = 0, column 2
    const GdnRefGradients moved = gdn_recurrent_backward_ref(s, d.view(), bumped.view(true), options(true), 8);
    const auto tokens = [&](const std::vector<double>& x, int64_t per_token, int64_t t0, int64_t t1) {
      return testutil::slice_tokens(x, s.B, s.T, per_token, t0, t1);
    };
    CHECK(tokens(moved.dq, s.H * s.K, t, t + 1) != tokens(base.dq, s.H * s.K, t, t + 1));
    CHECK(tokens(moved.dv, s.HV * s.V, 0, t + 1) != tokens(base.dv, s.HV * s.V, 0, t + 1));
    CHECK(moved.dh0 != base.dh0);
    // Causality: o_t reads nothing after token t.
    CHECK(tokens(moved.dq, s.H * s.K, t + 1, s.T) == tokens(base.dq, s.H * s.K, t + 1, s.T));
    CHECK(tokens(moved.dk, s.H * s.K, t + 1, s.T) == tokens(base.dk, s.H * s.K, t + 1, s.T));
    CHECK(tokens(moved.dv, s.HV * s.V, t + 1, s.T) == tokens(base.dv, s.HV * s.V, t + 1, s.T));
  }
}

TEST_CASE("checkpoint interval and threads do not change the backward", "[reference][backward]") {
  const uint64_t seed = testutil::fresh_seed();
  const bool delta = GENERATE(true, false);
  INFO("seed " << seed << " delta " << delta);
  const GdnShape s{2, 70, 2, 4, 12, 10};
  const GdnData d = testutil::random_gdn(s, seed);
  const Upstream up = random_upstream(s, seed + 1);
  const GdnRefGradients every_64 = gdn_recurrent_backward_ref(s, d.view(), up.view(true), options(delta));
  for (int64_t interval : {1, 3, 16, 69, 70, 1000}) {
    INFO("interval " << interval);
    check_same(gdn_recurrent_backward_ref(s, d.view(), up.view(true), options(delta), interval), every_64);
  }
  check_same(gdn_recurrent_backward_ref(s, d.view(), up.view(true), options(delta, 3), 5), every_64);
  const GdnRefGradients chunked = gdn_chunked_backward_ref(s, d.view(), up.view(true), options(delta), 16);
  check_same(gdn_chunked_backward_ref(s, d.view(), up.view(true), options(delta, 3), 16), chunked);
}

namespace {

// Feature combinations of the chunked/recurrent comparison (testutil::kRefConfigs), each with and
// without dhT.
using testutil::kRefConfigs;
using testutil::RefConfig;

}  // namespace

TEST_CASE("chunked backward equals the recurrent backward to 1e-12", "[reference][backward]") {
  const int64_t C = GENERATE(16, 64);
  const int64_t T = GENERATE_COPY(1, C - 1, C, C + 1, 3 * C + 5);
  const auto kv = GENERATE(std::make_pair(16, 16), std::make_pair(64, 100));
  const RefConfig& cfg = kRefConfigs[GENERATE(range(0, 6))];
  const bool use_dhT = GENERATE(true, false);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " T " << T << " C " << C << " K " << kv.first << " V " << kv.second
               << " config " << cfg.name << " dhT " << use_dhT);
  const GdnShape s{cfg.B, T, cfg.H, cfg.HV, kv.first, kv.second};
  const GdnData d = testutil::random_gdn(s, seed);
  const Upstream up = random_upstream(s, seed + 1);
  const GdnRefInputs in = d.view(cfg.gate, cfg.h0);
  const GdnRefOptions opt = options(cfg.delta, 2);
  const GdnRefGradients rec = gdn_recurrent_backward_ref(s, in, up.view(use_dhT), opt);
  const GdnRefGradients chk = gdn_chunked_backward_ref(s, in, up.view(use_dhT), opt, C);
  REQUIRE(testutil::all_finite(chk.dq));
  CHECK(rel_l2(chk.dq, rec.dq) <= kChunkedBound);
  CHECK(rel_l2(chk.dk, rec.dk) <= kChunkedBound);
  CHECK(rel_l2(chk.dv, rec.dv) <= kChunkedBound);
  CHECK(chk.dg.size() == rec.dg.size());
  CHECK(rel_l2(chk.dg, rec.dg) <= kChunkedBound);
  CHECK(chk.dbeta.size() == rec.dbeta.size());
  // dbeta_t = du_t . (v_t - S'^T k_t) is one dot product a token whose terms may cancel (with few
  // tokens, nothing averages it out): relative to its own size, or to the size of its terms, du
  // (which dv = beta du carries) times the residual, of order |v|.
  double dv_max = 0.0, v_max = 0.0;
  for (double x : rec.dv) dv_max = std::max(dv_max, std::abs(x));
  for (double x : d.v) v_max = std::max(v_max, std::abs(x));
  CHECK((rel_l2(chk.dbeta, rec.dbeta) <= kChunkedBound ||
         testutil::max_abs_diff(chk.dbeta, rec.dbeta) <= kChunkedBound * double(s.V) * dv_max * v_max));
  CHECK(chk.dh0.size() == rec.dh0.size());
  CHECK(rel_l2(chk.dh0, rec.dh0) <= kChunkedBound);
}

TEST_CASE("backward references check their arguments and honour cancellation", "[reference][backward]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const GdnShape s{1, 5, 1, 2, 4, 4};
  const GdnData d = testutil::random_gdn(s, seed);
  const Upstream up = random_upstream(s, seed + 1);
  SECTION("bad arguments throw") {
    CHECK_THROWS_AS(gdn_recurrent_backward_ref(s, d.view(), GdnRefGradInputs{}, options(true)),
                    std::invalid_argument);
    CHECK_THROWS_AS(gdn_chunked_backward_ref(s, d.view(), GdnRefGradInputs{}, options(true), 16),
                    std::invalid_argument);
    CHECK_THROWS_AS(gdn_recurrent_backward_ref(s, d.view(), up.view(true), options(true), 0),
                    std::invalid_argument);
    CHECK_THROWS_AS(gdn_chunked_backward_ref(s, d.view(), up.view(true), options(true), 0),
                    std::invalid_argument);
    GdnRefOptions subset = options(true);
    subset.heads = {0};
    CHECK_THROWS_AS(gdn_recurrent_backward_ref(s, d.view(), up.view(true), subset), std::invalid_argument);
    GdnShape bad = s;
    bad.H = 2;
    bad.HV = 3;  // not a multiple of H
    CHECK_THROWS_AS(gdn_recurrent_backward_ref(bad, d.view(), up.view(true), options(true)),
                    std::invalid_argument);
  }
  SECTION("a raised cancel flag throws ReferenceCancelled") {
    std::atomic<bool> cancel{true};
    set_reference_cancel_flag(&cancel);
    CHECK_THROWS_AS(gdn_recurrent_backward_ref(s, d.view(), up.view(true), options(true)), ReferenceCancelled);
    CHECK_THROWS_AS(gdn_chunked_backward_ref(s, d.view(), up.view(true), options(true), 16), ReferenceCancelled);
    set_reference_cancel_flag(nullptr);
    CHECK_NOTHROW(gdn_recurrent_backward_ref(s, d.view(), up.view(true), options(true)));
  }
}

// Calibration, not part of the default run (tagged [.calibration] only, so "[backward]" skips it):
// `gdnbench_tests "calibration of the finite-difference bound of the backward"`. The worst
// finite-difference error of each gradient over 30 seeds of every feature combination at T = 17
// and 5 at T = 70 (about a minute); docs/BACKWARD.md records the result.
TEST_CASE("calibration of the finite-difference bound of the backward", "[.calibration]") {
  FiniteDifferenceErrors worst;
  for (int64_t T : {17, 70})
    for (int bits = 0; bits < 16; ++bits)
      for (int trial = 0; trial < (T == 70 ? 5 : 30); ++trial) {
        const Features f = features_from_bits(bits);
        const uint64_t seed = testutil::fresh_seed();
        const GdnShape s{kSmallB, T, kSmallH, kSmallHV, kSmallK, kSmallV};
        GdnData d = testutil::random_gdn(s, seed);
        const Upstream up = random_upstream(s, seed + 1);
        const GdnRefGradients grads =
            gdn_recurrent_backward_ref(s, d.view(f.gate, f.h0), up.view(f.dhT), options(f.delta), 4);
        const FiniteDifferenceErrors e = finite_difference_errors(d, f, up, grads);
        worst.dq = std::max(worst.dq, e.dq);
        worst.dk = std::max(worst.dk, e.dk);
        worst.dv = std::max(worst.dv, e.dv);
        worst.dg = std::max(worst.dg, e.dg);
        worst.dbeta = std::max(worst.dbeta, e.dbeta);
        worst.dh0 = std::max(worst.dh0, e.dh0);
      }
  std::printf("calibration: worst finite-difference rel_l2 dq %.2e dk %.2e dv %.2e dg %.2e dbeta %.2e dh0 %.2e\n",
              worst.dq, worst.dk, worst.dv, worst.dg, worst.dbeta, worst.dh0);
  CHECK(worst.worst() <= kFiniteDifferenceBound);
}
