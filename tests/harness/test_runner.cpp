// The runner (harness/runner.h): a wrong kernel fails and is never timed; execute_cases writes
// one row per case, computes references once per problem and skips what cannot run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/rng.h"
#include "harness/runner.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "kernels/common/dtype.h"
#include "tests/common/test_util.h"


// ---- runner ----

namespace {

// A deliberately broken kernel, to see the runner fail it.
enum class Broken { silent, zeros, throws };
Broken g_broken_mode = Broken::zeros;

class BrokenRun final : public VariantRun {
 public:
  explicit BrokenRun(const Problem& p) : o_(p.shape.v_elems()), hT_(p.shape.state_elems()) {}
  void poison_outputs() override {
    std::fill(o_.begin(), o_.end(), poison_value_f32());
    std::fill(hT_.begin(), hT_.end(), poison_value_f32());
  }
  void launch() override {
    if (g_broken_mode == Broken::throws) throw std::runtime_error("kernel exploded");
    if (g_broken_mode == Broken::zeros) {
      std::fill(o_.begin(), o_.end(), 0.0f);
      std::fill(hT_.begin(), hT_.end(), 0.0f);
    }
  }
  RunOutputs read_outputs() override { return {o_, hT_}; }

 private:
  std::vector<float> o_, hT_;
};

std::optional<std::string> never_unsupported(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_broken(const Problem& p, const HostInputs&, const RunContext&) {
  return std::make_unique<BrokenRun>(p);
}
const VariantInfo kBroken = {"broken", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0,
                             "fp32", "any", never_unsupported, create_broken, "test double"};

}  // namespace

TEST_CASE("the runner fails a wrong kernel and never times it", "[harness][runner]") {
  Problem p;
  p.shape = GdnShape{1, 12, 1, 1, 16, 16};
  p.use_h0 = true;
  p.seed = testutil::fresh_seed();
  INFO("seed " << p.seed);
  const HostInputs in = make_inputs(p);
  const GdnRefOutputs ref = gdn_reference_for(p, to_f64(in), 1);
  RunOptions opt;
  opt.timed = true;
  opt.timing.min_samples = 2;
  opt.timing.max_samples = 3;
  opt.timing.warmup = 0;

  SECTION("wrong values") {
    g_broken_mode = Broken::zeros;
    const ResultRow r = run_case(Case{p, &kBroken, true}, in, ref, {}, opt);
    CHECK(r.status == Status::fail);
    CHECK(r.o.rel_l2 == Approx(1.0));
    CHECK(r.reason.find("rel_l2") != std::string::npos);
    CHECK_FALSE(r.timing.has_value());
  }
  SECTION("outputs never written") {
    g_broken_mode = Broken::silent;
    const ResultRow r = run_case(Case{p, &kBroken, true}, in, ref, {}, opt);
    CHECK(r.status == Status::fail);
    CHECK(r.o.unwritten == p.shape.v_elems());
    CHECK(r.ht.unwritten == p.shape.state_elems());
    CHECK(r.reason.find("unwritten") != std::string::npos);
    CHECK_FALSE(r.timing.has_value());
  }
  SECTION("a kernel that throws is a FAIL row, not a crash") {
    g_broken_mode = Broken::throws;
    const ResultRow r = run_case(Case{p, &kBroken, true}, in, ref, {}, opt);
    CHECK(r.status == Status::fail);
    CHECK(r.reason.find("kernel exploded") != std::string::npos);
  }
  SECTION("a correct kernel passes and is timed") {
    const ResultRow r = run_case(Case{p, find_variant("cpu_recurrent"), true}, in, ref, {}, opt);
    CHECK(r.status == Status::pass);
    CHECK(r.reason.empty());
    REQUIRE(r.timing.has_value());
    CHECK(r.timing->samples >= 2);
    CHECK(r.flops == gdn_flops(p));
  }
}

TEST_CASE("execute_cases: one row per case, references per problem, unsupported skipped", "[harness][runner]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::vector<Case> cases;
  for (uint64_t s : {seed, seed + 1})
    for (int chunk : {16, 48})
      for (const char* name : {"cpu_recurrent", "cpu_chunked"}) {
        Problem p;
        p.shape = GdnShape{1, 33, 1, 2, 16, 16};
        p.chunk = chunk;
        p.seed = s;
        p.use_h0 = s != seed;  // the second problem has other inputs and another reference
        cases.push_back({p, find_variant(name), true});
      }
  RunOptions opt;
  opt.cpu_threads = 2;
  std::vector<std::string> seen;
  const RunSummary sum = execute_cases(cases, opt, [&](const ResultRow& r) { seen.push_back(r.variant); });
  REQUIRE(sum.rows.size() == cases.size());
  CHECK(seen.size() == cases.size());
  CHECK(sum.passed == 6);   // recurrent at both chunks, chunked at 16, for both seeds
  CHECK(sum.skipped == 2);  // chunked at 48
  CHECK(sum.failed == 0);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(sum.rows[i].variant == cases[i].variant->name);
    CHECK(sum.rows[i].problem.seed == cases[i].problem.seed);
    if (sum.rows[i].status == Status::skipped) {
      CHECK(sum.rows[i].reason.find("48") != std::string::npos);
      CHECK_FALSE(sum.rows[i].o.present);
    } else {
      CHECK(sum.rows[i].o.present);
      CHECK(sum.rows[i].ht.present);
      CHECK_FALSE(sum.rows[i].timing.has_value());  // verify only
    }
  }
}
