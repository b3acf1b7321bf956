// Adversarial input options: k rows of a chosen norm, h0 of a chosen scale.
#include <catch2/catch.hpp>

#include <cmath>

#include "harness/cli.h"
#include "harness/inputs.h"

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
