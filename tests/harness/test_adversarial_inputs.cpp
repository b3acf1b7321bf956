// Adversarial input options: k rows of a chosen norm, h0 of a chosen scale; and the rule for
// outputs whose exact value lies past the dtype's range.
#include <catch2/catch.hpp>

#include <cmath>

#include "harness/io/cli.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/runner.h"

TEST_CASE("--k-norm sets the L2 norm of every k row and leaves q unit", "[harness][inputs]") {
  Problem p;
  p.shape = GdnShape{1, 7, 2, 2, 16, 8};
  p.seed = 11;
  p.k_norm = 2.0;
  const HostInputs in = make_inputs(p);
  for (int64_t r = 0; r < p.shape.B * p.shape.T * p.shape.H; ++r) {
    double kk = 0.0, qq = 0.0;
    for (int64_t c = 0; c < p.shape.K; ++c) {
      kk += double(in.k[r * p.shape.K + c]) * in.k[r * p.shape.K + c];
      qq += double(in.q[r * p.shape.K + c]) * in.q[r * p.shape.K + c];
    }
    CHECK(std::sqrt(kk) == Approx(2.0).epsilon(1e-6));
    CHECK(std::sqrt(qq) == Approx(1.0).epsilon(1e-6));
  }
  CHECK(p.distributions().find("k=2*l2norm(N)") != std::string::npos);
}

TEST_CASE("--h0-scale scales h0 and changes the inputs' identity", "[harness][inputs]") {
  Problem p;
  p.shape = GdnShape{1, 3, 1, 1, 8, 8};
  p.seed = 5;
  p.use_h0 = true;
  const HostInputs base = make_inputs(p);
  const std::string key = p.input_key();
  p.h0_scale = 1000.0;
  const HostInputs big = make_inputs(p);
  for (size_t i = 0; i < base.h0.size(); ++i) CHECK(big.h0[i] == Approx(1000.0 * base.h0[i]));
  CHECK(p.input_key() != key);
}

TEST_CASE("--k-norm and --h0-scale must be positive", "[cli]") {
  CHECK_THROWS_AS(parse_invocation({"verify", "--suite", "smoke", "--k-norm", "0"}, false), UsageError);
  CHECK_THROWS_AS(parse_invocation({"verify", "--suite", "smoke", "--h0-scale", "-1"}, false), UsageError);
  CHECK_THROWS_AS(parse_invocation({"verify", "--suite", "smoke", "--k-norm", "abc"}, false), UsageError);
}

// ---- outputs past the dtype's range (harness/metrics.h, docs/TOLERANCES.md) ----

TEST_CASE("overflow rule: past the range the kernel must write the matching inf", "[harness][metrics][overflow]") {
  // fp16: 65520 and above round to inf. The first two references fit, the last three do not.
  const std::vector<double> ref = {1.5, -2.0, 1e6, -3e5, 70000.0};
  const float inf = INFINITY;

  SECTION("inf of the reference's sign (or NaN) where it overflows passes; the rest is compared") {
    const TensorMetrics m = compare_to_reference({1.5f, -2.0f, inf, -inf, std::nanf("")}, ref, DType::f16);
    CHECK(m.finite_ok());
    CHECK(m.ref_overflow == 3);
    CHECK(m.overflow_mismatch == 0);
    CHECK(m.nan_count == 0);
    CHECK(m.rel_l2 == 0.0);  // over the two in-range elements, which are exact
    CHECK(m.floor_rel_l2 == 0.0);
  }
  SECTION("a finite value where the reference overflows fails") {
    const TensorMetrics m = compare_to_reference({1.5f, -2.0f, 65504.0f, -inf, inf}, ref, DType::f16);
    CHECK_FALSE(m.finite_ok());
    CHECK(m.overflow_mismatch == 1);
    CHECK(m.rel_l2 == INFINITY);
  }
  SECTION("the inf of the other sign fails") {
    const TensorMetrics m = compare_to_reference({1.5f, -2.0f, -inf, -inf, inf}, ref, DType::f16);
    CHECK_FALSE(m.finite_ok());
    CHECK(m.overflow_mismatch == 1);
  }
  SECTION("inf where the reference is representable fails") {
    const TensorMetrics m = compare_to_reference({inf, -2.0f, inf, -inf, inf}, ref, DType::f16);
    CHECK_FALSE(m.finite_ok());
    CHECK(m.nan_count == 1);
    CHECK(m.overflow_mismatch == 0);
    CHECK(m.rel_l2 == INFINITY);
  }
  SECTION("an unwritten element is unwritten wherever it lies") {
    const TensorMetrics m = compare_to_reference({1.5f, -2.0f, poison_value_f32(), -inf, inf}, ref, DType::f16);
    CHECK(m.unwritten == 1);
    CHECK_FALSE(m.finite_ok());
  }
  SECTION("the same values are in range for fp32 and bf16, so inf there fails") {
    for (DType t : {DType::f32, DType::bf16}) {
      INFO(dtype_name(t));
      const TensorMetrics m = compare_to_reference({1.5f, -2.0f, inf, -inf, inf}, ref, t);
      CHECK(m.ref_overflow == 0);
      CHECK(m.nan_count == 3);
      CHECK_FALSE(m.finite_ok());
    }
  }
}

TEST_CASE("overflow rule: at the edge of the range either side is right", "[harness][metrics][overflow]") {
  // 65519 rounds to 65504 and 65530 to inf, but a float32 kernel one rounding error away may land
  // on the other side of 65520: both answers pass there, and a finite one is compared.
  const std::vector<double> ref = {65519.0, 65530.0, 1.0};
  const TensorMetrics a = compare_to_reference({INFINITY, 65504.0f, 1.0f}, ref, DType::f16);
  CHECK(a.finite_ok());
  CHECK(a.ref_overflow == 1);
  CHECK(a.max_abs == Approx(26.0));
  CHECK(std::isfinite(a.floor_rel_l2));
  const TensorMetrics b = compare_to_reference({65504.0f, INFINITY, 1.0f}, ref, DType::f16);
  CHECK(b.finite_ok());
  CHECK(b.ref_overflow == 1);
  // Outside the band (1/64 of 65520 is ~1024) the rule is strict again.
  const TensorMetrics c = compare_to_reference({INFINITY}, {64000.0}, DType::f16);
  CHECK_FALSE(c.finite_ok());
  const TensorMetrics d = compare_to_reference({65504.0f}, {67000.0}, DType::f16);
  CHECK_FALSE(d.finite_ok());
  CHECK(d.overflow_mismatch == 1);
}

TEST_CASE("overflow rule: a non-finite float64 reference needs a non-finite output", "[harness][metrics][overflow]") {
  const TensorMetrics m = compare_to_reference({INFINITY, -INFINITY, std::nanf("")},
                                               {INFINITY, std::nan(""), -INFINITY}, DType::f32);
  CHECK(m.finite_ok());
  CHECK(m.ref_overflow == 3);
  const TensorMetrics n = compare_to_reference({1.0f}, {std::nan("")}, DType::f32);
  CHECK_FALSE(n.finite_ok());
}

TEST_CASE("overflow thresholds are the first values that round to inf", "[harness][metrics][overflow]") {
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    INFO(dtype_name(t));
    const double m = overflow_threshold(t);
    CHECK(std::isinf(round_to(t, float(m))));
    CHECK(std::isfinite(round_to(t, std::nextafter(float(m), 0.0f))));  // float(m) is inf for fp32
  }
  CHECK(overflow_threshold(DType::f16) == 65520.0);
}

TEST_CASE("the gate's growth line overflows fp16 and both CPU variants pass it", "[harness][overflow][gate]") {
  // The gate line with --k-norm 2 --gate-dist zero: if it stops overflowing (shorter T, another
  // distribution), the rule above goes unexercised by the gate and this test says so.
  const Invocation inv = parse_invocation(
      {"verify", "--suite", "gate", "--variants", "cpu_recurrent,cpu_chunked", "--dtypes", "fp16",
       "--threads", "2"}, false);
  std::vector<Case> growth;
  // Lines that force a GPU plan are skipped on these variants; the growth line is the one on auto.
  for (const Case& c : inv.cases)
    if (c.problem.k_norm > 1.5 && c.problem.gate_dist == GateDist::zero && c.problem.plan == "auto")
      growth.push_back(c);
  REQUIRE(!growth.empty());
  RunOptions opt;
  opt.cpu_threads = 2;
  const RunSummary sum = execute_cases(growth, opt, [](const ResultRow&) {});
  for (const ResultRow& r : sum.rows) {
    INFO(r.variant << " T=" << r.problem.shape.T << " seed " << r.problem.seed << ": " << r.reason);
    CHECK(r.status == Status::pass);
    CHECK(r.o.ref_overflow > 0);
    CHECK(r.o.ref_overflow < r.problem.shape.v_elems());  // some of o is still compared
    CHECK(r.ht.ref_overflow == 0);                       // the float32 state stays finite
  }
}

TEST_CASE("wy_ut fp16 skips a growing state, which its fp16 split operands cannot hold", "[harness][overflow]") {
  const VariantInfo* wy = find_variant("wy_ut");
  if (!wy) {
    WARN("skipped: this build has no CUDA variants");
    return;
  }
  Problem p;
  p.shape = GdnShape{1, 300, 2, 2, 64, 64};
  p.dtype = DType::f16;
  p.k_norm = 2.0;
  p.beta_dist = BetaDist::one;
  const auto why = wy->unsupported(p);
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("fp16") && Catch::Contains("bf16"));
  p.k_norm = 1.0;  // a unit k cannot expand the state: not refused for this reason
  p.shape.K = 100;  // (refused for its head size instead, before any device query)
  const auto other = wy->unsupported(p);
  REQUIRE(other.has_value());
  CHECK_THAT(*other, !Catch::Contains("growing state"));
}
