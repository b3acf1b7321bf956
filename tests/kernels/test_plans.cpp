// The launch plans (kernels/plans/launch_plans.h, harness/plans.h): the pure choices the launchers make,
// forcing with --plan, and the gate's reach: every option of every stage of every variant's plan
// is run by at least one gate case for each input dtype the option takes, on the H200's facts.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "harness/gpu_runtime.h"
#include "harness/plans.h"
#include "harness/runner.h"
#include "harness/skip.h"
#include "harness/variant.h"
#include "kernels/common/cuda_kernels.h"
#include "tests/kernels/plan_test_util.h"

namespace {

using plan_test::gate_cases;
using plan_test::h200_facts;

struct Reach {
  std::string variant;
  size_t stage;
  std::string option;
  DType dtype;
  bool operator<(const Reach& o) const {
    return std::tie(variant, stage, option, dtype) < std::tie(o.variant, o.stage, o.option, o.dtype);
  }
};

// The stage of each option of a choice: a plan names one option of each stage that runs, in the
// order of the stages (a forward row names no backward option, a backward row no forward one).
std::vector<size_t> stages_of(const VariantPlans& vp, const PlanChoice& choice) {
  const std::vector<PlanStage> stages = vp.stages();
  std::vector<size_t> out;
  for (const std::string& name : choice.options) {
    size_t found = stages.size();
    for (size_t i = 0; i < stages.size(); ++i)
      for (const PlanOption& o : stages[i].options)
        if (o.name == name) found = i;
    INFO(vp.variant << " chose " << choice.name());
    REQUIRE(found < stages.size());                  // an option of the table
    REQUIRE((out.empty() || found > out.back()));  // one per stage, in their order
    out.push_back(found);
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

// Every (variant, stage, option, dtype) the cases of a suite run, with the facts of `dev`.
std::set<Reach> reached_by(const std::vector<Case>& cases, const PlanDevice& dev) {
  std::set<Reach> reached;
  for (const Case& c : cases) {
    GpuInfo as_if_gpu;  // the problem's reasons only: the plans are enumerated without a device
    as_if_gpu.available = true;
    if (skip_reason(*c.variant, c.problem, as_if_gpu)) continue;
    const VariantPlans* vp = find_variant_plans(c.variant->name);
    REQUIRE(vp != nullptr);
    PlanLaunch launch;
    const PlanChoice choice = vp->choose(c.problem, dev, launch);
    if (!choice.unsupported.empty()) continue;
    const std::vector<size_t> stages = stages_of(*vp, choice);
    for (size_t i = 0; i < choice.options.size(); ++i)
      reached.insert({c.variant->name, stages[i], choice.options[i], c.problem.dtype});
  }
  return reached;
}

PlanChoice plan_of(const std::string& variant, const Problem& p, const PlanDevice& dev, PlanLaunch& launch) {
  const VariantPlans* vp = find_variant_plans(variant);
  REQUIRE(vp != nullptr);
  return vp->choose(p, dev, launch);
}

Problem problem(GdnShape s, DType dt = DType::bf16, const std::string& plan = "auto") {
  Problem p;
  p.shape = s;
  p.dtype = dt;
  p.plan = plan;
  return p;
}

}  // namespace

TEST_CASE("every registered variant has a plan table entry with distinct option names", "[plans]") {
  for (const VariantInfo& v : variant_registry()) {
    INFO(v.name);
    CHECK(find_variant_plans(v.name) != nullptr);
  }
  for (const VariantPlans& vp : variant_plans()) {
    INFO(vp.variant);
    std::set<std::string> names;
    const std::vector<PlanStage> stages = vp.stages();
    REQUIRE_FALSE(stages.empty());
    for (const PlanStage& st : stages)
      for (const PlanOption& o : st.options) {
        CHECK(names.insert(o.name).second);
        CHECK_FALSE(o.dtypes.empty());
      }
  }
}

TEST_CASE("the gate reaches every plan option of every variant for every dtype it takes", "[plans][gate]") {
  if (!cuda_compiled()) {
    WARN("built without CUDA: the gate's CUDA cases are not expanded here (CI builds with nvcc)");
    return;
  }
  const std::vector<Case> cases = gate_cases();
  for (double factor : {1.0, 0.5, 2.0}) {
    INFO("the H200's device facts x " << factor);
    const std::set<Reach> reached = reached_by(cases, h200_facts(factor));
    std::ostringstream missing;
    int missed = 0;
    for (const VariantInfo& v : variant_registry()) {
      const VariantPlans* vp = find_variant_plans(v.name);
      REQUIRE(vp != nullptr);
      const std::vector<PlanStage> stages = vp->stages();
      for (size_t i = 0; i < stages.size(); ++i)
        for (const PlanOption& o : stages[i].options)
          for (DType dt : o.dtypes)
            if (!reached.count({v.name, i, o.name, dt})) {
              ++missed;
              missing << "  " << v.name << " " << stages[i].name << "=" << o.name << " " << dtype_name(dt) << "\n";
            }
    }
    INFO("options no gate case reaches:\n" << missing.str());
    CHECK(missed == 0);
  }
}

TEST_CASE("a plan's choice is the launcher's rule: recurrent's T forms and K buckets", "[plans]") {
  PlanLaunch l;
  CHECK(plan_of("recurrent", problem({1, 8, 2, 2, 64, 64}), {}, l).name() == "decode_k64");
  CHECK(l.recurrent_form == RecurrentForm::decode);
  CHECK(plan_of("recurrent", problem({1, 9, 2, 2, 100, 64}), {}, l).name() == "short_k128");
  CHECK(plan_of("recurrent", problem({1, 255, 2, 2, 256, 64}), {}, l).name() == "short_k256");
  CHECK(plan_of("recurrent", problem({1, 256, 2, 2, 256, 64}), {}, l).name() == "long_k256");
  CHECK(l.recurrent_form == RecurrentForm::long_seq);
  SECTION("forced") {
    CHECK(plan_of("recurrent", problem({1, 100, 2, 2, 64, 64}, DType::f32, "long"), {}, l).name() == "long_k64");
    CHECK(l.recurrent_form == RecurrentForm::long_seq);
    CHECK_THAT(plan_of("recurrent", problem({1, 100, 2, 2, 64, 64}, DType::f32, "decode"), {}, l).unsupported,
               Catch::Contains("T <= 8"));
    CHECK_THAT(plan_of("recurrent", problem({1, 100, 2, 2, 64, 64}, DType::f32, "long_k128"), {}, l).unsupported,
               Catch::Contains("k64"));
    CHECK_THAT(plan_of("recurrent", problem({1, 100, 2, 2, 64, 64}, DType::f32, "stream"), {}, l).unsupported,
               Catch::Contains("not one of this variant's plans"));
  }
}

TEST_CASE("recurrent's backward stage: the launcher's lanes by K bucket, only where the pass runs it", "[plans]") {
  const auto with_pass = [](Problem p, Pass pass) {
    p.pass = pass;
    return p;
  };
  SECTION("the option names the instance the launcher runs: K's bucket over 16 rows a lane") {
    for (int64_t K = 1; K <= kRecurrentMaxHeadDim; ++K) {
      INFO("K " << K);
      const int lanes = recurrent_backward_lanes(K);
      CHECK((lanes == 4 || lanes == 8 || lanes == 16));
      CHECK(lanes * kRecurrentBackwardRowsPerLane >= K);   // every row of a column held
      CHECK(lanes * kRecurrentBackwardRowsPerLane == recurrent_k_bucket(K));  // the forward's bucket
      CHECK(recurrent_backward_option(K) == "backward_k" + std::to_string(lanes * kRecurrentBackwardRowsPerLane));
    }
    CHECK(recurrent_backward_lanes(64) == 4);
    CHECK(recurrent_backward_lanes(65) == 8);
    CHECK(recurrent_backward_lanes(129) == 16);
  }
  SECTION("a row names the stages its pass runs") {
    PlanLaunch l;
    const Problem p = problem({1, 300, 2, 2, 100, 64});
    CHECK(plan_of("recurrent", p, {}, l).name() == "long_k128");
    CHECK(plan_of("recurrent", with_pass(p, Pass::bwd), {}, l).name() == "backward_k128");
    CHECK(plan_of("recurrent", with_pass(p, Pass::fwdbwd), {}, l).name() == "long_k128/backward_k128");
    CHECK(l.recurrent_form == RecurrentForm::long_seq);
    CHECK(plan_of("recurrent", with_pass(problem({1, 65, 2, 2, 64, 40}), Pass::bwd), {}, l).name() == "backward_k64");
    CHECK(plan_of("recurrent", with_pass(problem({1, 65, 2, 2, 256, 40}), Pass::fwdbwd), {}, l).name() ==
          "short_k256/backward_k256");
    // The CPU variants have one path whatever the pass.
    CHECK(plan_of("cpu_recurrent", with_pass(p, Pass::fwdbwd), {}, l).name() == "sequential");
  }
  SECTION("forced") {
    PlanLaunch l;
    const Problem p = problem({1, 300, 2, 2, 64, 64}, DType::f32, "backward");
    CHECK(plan_of("recurrent", with_pass(p, Pass::bwd), {}, l).name() == "backward_k64");
    CHECK_THAT(plan_of("recurrent", with_pass(problem({1, 300, 2, 2, 64, 64}, DType::f32, "backward_k128"), Pass::bwd),
                       {}, l)
                   .unsupported,
               Catch::Contains("takes backward_k64"));
    CHECK_THAT(plan_of("recurrent", p, {}, l).unsupported, Catch::Contains("--pass bwd or fwdbwd only"));
    CHECK_THAT(plan_of("recurrent", with_pass(problem({1, 300, 2, 2, 64, 64}, DType::f32, "long"), Pass::bwd), {}, l)
                   .unsupported,
               Catch::Contains("runs no forward kernel"));
    CHECK(plan_of("recurrent", with_pass(problem({1, 300, 2, 2, 64, 64}, DType::f32, "short/backward"), Pass::fwdbwd),
                  {}, l)
              .name() == "short_k64/backward_k64");
    CHECK(l.recurrent_form == RecurrentForm::short_seq);
  }
}

TEST_CASE("wy_ut's scan: the cost model's groups, and forced plain, pair and two-level scans", "[plans]") {
  PlanLaunch l;
  const PlanDevice dev = h200_facts();
  CHECK(plan_of("wy_ut", problem({1, 1000, 2, 2, 128, 128}), dev, l).name() == "plain_with_output_k128");
  CHECK(l.scan_groups == 1);
  CHECK(l.wy_ut_output == WyUtOutput::in_scan);
  // K = 64: the separate output is the faster; K = 256: the output beside the scan does not fit
  // one block's shared memory.
  CHECK(plan_of("wy_ut", problem({1, 1000, 2, 2, 64, 128}), dev, l).name() == "plain_k64");
  CHECK(l.wy_ut_output == WyUtOutput::separate);
  CHECK(plan_of("wy_ut", problem({1, 1000, 2, 2, 256, 128}), dev, l).name() == "plain_k256");
  CHECK(l.wy_ut_output == WyUtOutput::separate);
  // One head at T = 65536: 1024 chunks on one SM's worth of blocks; the model splits the chain.
  const PlanChoice two = plan_of("wy_ut", problem({1, 65536, 1, 1, 128, 128}), dev, l);
  CHECK(two.options[0] == "two_level_k128");
  CHECK(l.scan_groups == wy_ut_scan_groups_model(GdnShape{1, 65536, 1, 1, 128, 128}, 132));
  CHECK(l.scan_groups >= 3);
  CHECK(two.name() == "two_level_k128 (G=" + std::to_string(l.scan_groups) + ")");
  CHECK(l.wy_ut_output == WyUtOutput::separate);  // the two-level scan keeps its own output kernel
  SECTION("forced") {
    CHECK(plan_of("wy_ut", problem({1, 1000, 2, 2, 64, 64}, DType::bf16, "plain"), dev, l).name() == "plain_k64");
    CHECK(l.wy_ut_output == WyUtOutput::separate);
    CHECK(plan_of("wy_ut", problem({1, 65536, 1, 1, 128, 128}, DType::f16, "plain_with_output"), dev, l).name() ==
          "plain_with_output_k128");
    CHECK(l.scan_groups == 1);
    CHECK(l.wy_ut_output == WyUtOutput::in_scan);
    CHECK_THAT(plan_of("wy_ut", problem({1, 300, 1, 1, 256, 64}, DType::bf16, "plain_with_output"), dev, l).unsupported,
               Catch::Contains("K <= 128"));
    CHECK_THAT(plan_of("wy_ut", problem({1, 300, 1, 1, 128, 64}, DType::bf16, "plain_with_output_k64"), dev, l)
                   .unsupported,
               Catch::Contains("k128 instances"));
    // The chain on warpgroup products: forced only; K in {64, 128}, V a multiple of 64, sm_90a.
    CHECK(plan_of("wy_ut", problem({1, 65536, 1, 1, 128, 128}, DType::bf16, "wgmma_chain"), dev, l).name() ==
          "wgmma_chain_k128");
    CHECK(l.scan_groups == 1);
    CHECK(l.wy_ut_output == WyUtOutput::wgmma_chain);
    CHECK(plan_of("unfused_conv", problem({1, 300, 1, 1, 64, 192}, DType::f16, "wgmma_chain_k64"), dev, l).name() ==
          "wgmma_chain_k64");
    CHECK_THAT(plan_of("wy_ut", problem({1, 300, 1, 1, 256, 64}, DType::bf16, "wgmma_chain"), dev, l).unsupported,
               Catch::Contains("K in {64, 128}"));
    CHECK_THAT(plan_of("wy_ut", problem({1, 300, 1, 1, 128, 96}, DType::bf16, "wgmma_chain"), dev, l).unsupported,
               Catch::Contains("multiple of 64"));
    CHECK_THAT(plan_of("wy_ut", problem({1, 300, 1, 1, 64, 64}, DType::bf16, "wgmma_chain_k128"), dev, l).unsupported,
               Catch::Contains("k64 instances"));
    PlanDevice not_hopper = dev;
    not_hopper.sm90a = false;
    CHECK_THAT(plan_of("wy_ut", problem({1, 300, 1, 1, 64, 64}, DType::bf16, "wgmma_chain"), not_hopper, l).unsupported,
               Catch::Contains("sm_90"));
    // Not automatic: the same shape takes the scan with the output beside it.
    CHECK(plan_of("wy_ut", problem({1, 1000, 2, 2, 128, 128}), dev, l).name() == "plain_with_output_k128");
    // fused_conv's scan has no output beside it: the option is not one of its plans.
    CHECK_THAT(plan_of("fused_conv", problem({1, 300, 1, 1, 128, 64}, DType::bf16, "plain_with_output"), dev, l)
                   .unsupported,
               Catch::Contains("not one of this variant's plans"));
    CHECK(plan_of("wy_ut", problem({1, 130, 2, 2, 64, 64}, DType::bf16, "two_level_pair"), dev, l).name() ==
          "two_level_pair_k64 (G=2)");
    CHECK(l.scan_groups == 2);
    CHECK(plan_of("wy_ut", problem({1, 200, 2, 2, 256, 64}, DType::bf16, "two_level"), dev, l).name() ==
          "two_level_k256 (G=4)");
    CHECK(plan_of("wy_ut", problem({1, 65536, 1, 1, 128, 128}, DType::bf16, "plain"), dev, l).name() == "plain_k128");
    CHECK(l.scan_groups == 1);
    CHECK_THAT(plan_of("wy_ut", problem({1, 64, 2, 2, 64, 64}, DType::bf16, "two_level_pair"), dev, l).unsupported,
               Catch::Contains("too few"));
    CHECK(plan_of("wy_ut", problem({1, 130, 2, 2, 64, 64}, DType::bf16, "two_level"), dev, l).name() ==
          "two_level_k64 (G=3)");  // 3 chunks: a group each
    CHECK_THAT(plan_of("wy_ut", problem({1, 128, 2, 2, 64, 64}, DType::bf16, "two_level"), dev, l).unsupported,
               Catch::Contains("too few"));  // 2 chunks: 2 groups at most
  }
}

TEST_CASE("the memory checks' scan groups bound every scan plan's on any device", "[plans]") {
  // wy_ut_unsupported and the front-end checks size the workspace with wy_ut_largest_scan_groups
  // before a plan is chosen: a forced plan with more groups than that would allocate past the check.
  PlanLaunch l;
  for (int64_t B : {1, 3, 64})
    for (int64_t T : {1, 64, 130, 1000, 4096, 65536})
      for (int64_t HV : {1, 4, 32})
        for (double factor : {0.25, 1.0, 8.0})
          for (const char* plan : {"auto", "plain", "two_level_pair", "two_level"}) {
            const GdnShape s{B, T, HV, HV, 128, 128};
            const PlanChoice c = plan_of("wy_ut", problem(s, DType::bf16, plan), h200_facts(factor), l);
            if (!c.unsupported.empty()) continue;
            INFO("B " << B << " T " << T << " HV " << HV << " x" << factor << " " << plan);
            CHECK(l.scan_groups <= wy_ut_largest_scan_groups(s));
          }
}

TEST_CASE("fused_conv's output: pipelined at K, V <= 128, per chunk otherwise or when forced", "[plans]") {
  PlanLaunch l;
  const PlanDevice dev = h200_facts();
  CHECK(plan_of("fused_conv", problem({1, 130, 2, 2, 64, 64}), dev, l).name() == "pipelined_k64/plain_k64");
  CHECK(l.fused_conv_output == FusedConvOutput::pipelined);
  CHECK(plan_of("fused_conv", problem({1, 130, 2, 2, 128, 256}), dev, l).name() == "per_chunk/plain_k128");
  CHECK(plan_of("fused_conv", problem({1, 130, 2, 2, 64, 64}, DType::bf16, "per_chunk/two_level_pair"), dev, l).name() ==
        "per_chunk/two_level_pair_k64 (G=2)");
  CHECK(l.fused_conv_output == FusedConvOutput::per_chunk);
  CHECK_THAT(plan_of("fused_conv", problem({1, 130, 2, 2, 128, 256}, DType::bf16, "pipelined"), dev, l).unsupported,
             Catch::Contains("K, V <= 128"));
}

TEST_CASE("fused_decode's kernels: the rules of kernels/decode/ on the H200's facts", "[plans]") {
  const PlanDevice dev = h200_facts();
  struct Expect {
    GdnShape s;
    bool bf16_pool;
    DType dt;
    const char* plan;
  };
  const Expect cases[] = {
      {{300, 1, 2, 4, 128, 128}, true, DType::bf16, "stream/vector_t1"},
      {{300, 3, 2, 4, 128, 96}, true, DType::bf16, "stream/vector_t4"},
      {{3, 1, 2, 4, 128, 128}, true, DType::bf16, "split/row"},
      {{300, 2, 2, 4, 100, 72}, true, DType::f32, "split_partial/row"},
      {{5, 1, 1, 1, 256, 256}, true, DType::bf16, "block/row"},
      {{5, 1, 1, 1, 256, 98}, false, DType::bf16, "block_sync/row"},
      {{300, 2, 2, 4, 128, 70}, false, DType::f32, "lane_wide/row"},
      {{5, 2, 2, 4, 64, 64}, false, DType::bf16, "lane64/row"},
      {{5, 2, 2, 4, 48, 64}, false, DType::bf16, "lane64_partial/row"},
      {{5, 2, 2, 4, 128, 128}, false, DType::f32, "lane_one_wave/row"},
      {{3, 1, 2, 4, 100, 72}, false, DType::bf16, "lane_one_wave_partial/row"},
      {{300, 1, 2, 4, 128, 70}, false, DType::bf16, "lane_narrow/row"},
      {{300, 2, 2, 4, 128, 128}, false, DType::bf16, "quad/vector_t4"},
      {{300, 8, 2, 4, 100, 72}, false, DType::bf16, "quad_partial/row"},
      {{200, 1, 4, 4, 128, 128}, false, DType::bf16, "quad_fe/fused"},
      {{200, 1, 4, 4, 128, 128}, false, DType::f32, "quad/rows"},  // (2H + HV) B = 2400 > 2 x 1320? no: see below
  };
  for (const Expect& e : cases) {
    INFO(e.s.B << " " << e.s.T << " " << e.s.H << " " << e.s.HV << " " << e.s.K << " " << e.s.V << " "
               << dtype_name(e.dt) << (e.bf16_pool ? " bf16 pool" : " float pool"));
    DecodePlan plan;
    const PlanChoice c = decode_plan_choice(DecodePlanInputs{e.s, e.dt, e.bf16_pool}, "auto", dev, plan);
    REQUIRE(c.unsupported.empty());
    if (std::string(e.plan) == "quad/rows") {
      // The one-row front end needs more than two waves of its resident blocks to switch to rows.
      CHECK(c.name() == ((2 * e.s.H + e.s.HV) * e.s.B > 2 * dev.decode_fe_row_resident ? "quad/rows" : "quad/row"));
      continue;
    }
    CHECK(c.name() == e.plan);
  }
  SECTION("forced kernels, and the ones a pool or shape cannot take") {
    DecodePlan plan;
    const DecodePlanInputs small{GdnShape{3, 1, 2, 4, 128, 128}, DType::bf16, true};
    CHECK(decode_plan_choice(small, "stream/rows", dev, plan).name() == "stream/rows");
    CHECK(plan.state == DecodeStateKernel::stream);
    CHECK(plan.fe == DecodeFeKernel::rows);
    CHECK(decode_plan_choice(small, "vector", dev, plan).name() == "split/vector_t1");
    PlanDevice no_stream = dev;
    no_stream.decode_stream_per_sm = 0;
    CHECK_THAT(decode_plan_choice(small, "stream", no_stream, plan).unsupported, Catch::Contains("no block per SM"));
    const DecodePlanInputs float_pool{GdnShape{3, 1, 2, 4, 128, 128}, DType::bf16, false};
    CHECK_THAT(decode_plan_choice(float_pool, "stream", dev, plan).unsupported,
               Catch::Contains("not one of this variant's plans"));
    CHECK_THAT(decode_plan_choice(float_pool, "quad_fe", dev, plan).unsupported, Catch::Contains("H = HV"));
    CHECK_THAT(decode_plan_choice(DecodePlanInputs{GdnShape{3, 2, 2, 4, 128, 128}, DType::bf16, false}, "rows", dev, plan)
                   .unsupported,
               Catch::Contains("T = 1"));
  }
}

TEST_CASE("--plan: an axis of the grid; auto picks only the variants that have the plan", "[plans][cli]") {
  const auto cases = [](std::vector<std::string> args) {
    std::istringstream none;
    args.insert(args.begin(), "verify");
    return parse_invocation_with_suite(args, cuda_compiled(), none, "(none)").cases;
  };
  const std::vector<Case> forced = cases({"--T", "130", "--dtypes", "bf16", "--plan", "auto,two_level_pair"});
  std::map<std::string, int> per_plan;
  for (const Case& c : forced) {
    ++per_plan[c.problem.plan];
    if (c.problem.plan != "auto") {
      const std::string v = c.variant->name;
      CHECK((v == "wy_ut" || v == "unfused_conv" || v == "fused_conv"));
    }
  }
  if (cuda_compiled()) CHECK(per_plan["two_level_pair"] == 3);
  CHECK(per_plan["auto"] > 0);
  CHECK_THROWS_WITH(cases({"--plan", "no_such_plan"}), Catch::Contains("no variant has the plan 'no_such_plan'"));
  CHECK_THROWS_AS(cases({"--plan", ""}), UsageError);
  // Named explicitly, a variant without the plan gives a SKIPPED row (the runner), not a dropped case.
  CHECK(cases({"--variants", "cpu_recurrent", "--plan", "two_level"}).size() == 1);
}
