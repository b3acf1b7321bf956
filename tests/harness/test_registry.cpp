// Problem keys and names, the tolerance table and the variant registry.
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


// ---- problem, tolerance table, registry ----

TEST_CASE("problem keys, names and scale", "[harness][problem]") {
  Problem a;
  a.shape = GdnShape{1, 64, 2, 2, 100, 64};
  a.seed = 5;
  CHECK(a.resolved_scale() == Approx(0.1));
  Problem b = a;
  b.chunk = 16;
  CHECK(a.input_key() == b.input_key());  // the chunk does not change inputs or reference
  for (auto change : {+[](Problem& p) { p.seed = 6; }, +[](Problem& p) { p.dtype = DType::bf16; },
                      +[](Problem& p) { p.use_h0 = true; }, +[](Problem& p) { p.use_delta = false; },
                      +[](Problem& p) { p.shape.T = 65; }, +[](Problem& p) { p.scale = 0.5; },
                      +[](Problem& p) { p.beta_dist = BetaDist::one; }}) {
    Problem c = a;
    change(c);
    CHECK(c.input_key() != a.input_key());
  }
  for (GateDist d : {GateDist::logsigmoid, GateDist::zero, GateDist::strong})
    CHECK(parse_gate_dist(gate_dist_name(d)) == d);
  for (BetaDist d : {BetaDist::sigmoid, BetaDist::zero, BetaDist::one})
    CHECK(parse_beta_dist(beta_dist_name(d)) == d);
  CHECK_FALSE(parse_gate_dist("weak").has_value());
  CHECK(status_name(Status::pass) == std::string("PASS"));
  CHECK(status_name(Status::fail) == std::string("FAIL"));
  CHECK(status_name(Status::skipped) == std::string("SKIPPED"));
}

TEST_CASE("every precision and dtype has a positive bound with a reason", "[harness][tolerance]") {
  for (Precision p : {Precision::fp32_math, Precision::tensor_core})
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      INFO(precision_name(p) << " " << dtype_name(t));
      const Tolerance tol = tolerance_for(p, t);
      CHECK(tol.o_rel_l2 > 0.0);
      CHECK(tol.ht_rel_l2 > 0.0);
      CHECK(tol.o_rel_l2 < 1e-2);
      CHECK(std::string(tol.reason).size() > 10);
    }
  // Narrower dtypes may not have tighter output bounds.
  CHECK(tolerance_for(Precision::fp32_math, DType::f32).o_rel_l2 <=
        tolerance_for(Precision::fp32_math, DType::f16).o_rel_l2);
  CHECK(tolerance_for(Precision::fp32_math, DType::f16).o_rel_l2 <=
        tolerance_for(Precision::fp32_math, DType::bf16).o_rel_l2);
}

TEST_CASE("the variant registry is one table of unique names", "[harness][registry]") {
  const auto& reg = variant_registry();
  REQUIRE(reg.size() >= 2);
  std::set<std::string> names;
  for (const VariantInfo& v : reg) {
    INFO("variant " << v.name);
    CHECK(names.insert(v.name).second);
    CHECK(find_variant(v.name) == &v);
    CHECK(v.create != nullptr);
    CHECK(v.unsupported != nullptr);
    CHECK(std::string(v.summary).size() > 0);
  }
  CHECK(find_variant("cpu_recurrent") != nullptr);
  CHECK(find_variant("cpu_chunked") != nullptr);
  CHECK(find_variant("cpu_chunked")->uses_chunk);
  CHECK_FALSE(find_variant("cpu_recurrent")->uses_chunk);
  CHECK(find_variant("no_such_variant") == nullptr);
}

#ifdef GDNBENCH_HAVE_CUDA
TEST_CASE("wy_ut's plans are judged by their own precision: the split plans by tensor_core_split, the chain by tensor_core",
          "[registry][tolerance]") {
  const VariantInfo* v = find_variant("wy_ut");
  REQUIRE(v);
  REQUIRE(v->plan_precision);
  // Every option of every stage, as the plan table enumerates them.
  int chain = 0, split = 0;
  for (const PlanStage& stage : wy_ut_plan_stages())
    for (const PlanOption& option : stage.options) {
      PlanChoice plan;
      plan.options = {option.name};
      const Precision p = v->plan_precision(plan);
      INFO(option.name);
      if (option.name.rfind("wgmma_chain", 0) == 0) {
        CHECK(p == Precision::tensor_core);
        ++chain;
      } else {
        CHECK(p == Precision::tensor_core_split);
        ++split;
      }
    }
  CHECK(chain == 2);  // wgmma_chain_k64, wgmma_chain_k128
  CHECK(split > 0);
  // A plan with the chain among its options is the chain's.
  PlanChoice mixed;
  mixed.options = {"plain_k128", "wgmma_chain_k128"};
  CHECK(v->plan_precision(mixed) == Precision::tensor_core);
  // The split class holds the state ~10x tighter than tensor_core, o as tightly.
  for (DType t : {DType::bf16, DType::f16}) {
    const Tolerance split_tol = tolerance_for(Precision::tensor_core_split, t);
    const Tolerance tc_tol = tolerance_for(Precision::tensor_core, t);
    CHECK(split_tol.o_rel_l2 == tc_tol.o_rel_l2);
    CHECK(split_tol.ht_rel_l2 * 10 <= tc_tol.ht_rel_l2);
  }
  // The front-end variants on wy_ut's kernels keep their class: the front end's rounding dominates.
  CHECK_FALSE(find_variant("unfused_conv")->plan_precision);
}
#endif
