// Every variant's plans, by name (kernels/plans/launch_plans.h): its stages and options, and the one
// function that chooses a plan for a problem on a device, forced or not (Problem::plan). The
// runner records the choice in every row and hands it to the run (RunContext::plan); tests
// enumerate the table, which lists the CUDA variants in builds without CUDA too.
#pragma once
#include <string>
#include <vector>

#include "harness/problem.h"
#include "kernels/plans/launch_plans.h"

// What a plan sets in a variant's launch parameters.
struct PlanLaunch {
  RecurrentForm recurrent_form = RecurrentForm::automatic;
  int64_t scan_groups = 0;  // wy_ut's scan (wy_ut, unfused_conv, fused_conv)
  WyUtOutput wy_ut_output = WyUtOutput::automatic;  // wy_ut, unfused_conv
  FusedConvOutput fused_conv_output = FusedConvOutput::automatic;
  DecodePlan decode;
};

struct VariantPlans {
  const char* variant;
  std::vector<PlanStage> (*stages)();
  // The plan of p on a device with these facts; PlanChoice::unsupported says why a forced plan
  // (p.plan) cannot run p.
  PlanChoice (*choose)(const Problem& p, const PlanDevice& dev, PlanLaunch& launch);
};

const std::vector<VariantPlans>& variant_plans();
const VariantPlans* find_variant_plans(const std::string& variant);

// Whether a --plan request names an option of some stage of the variant (auto: always).
bool plan_request_applies(const VariantPlans& vp, const std::string& request);

// The device facts the plan of variant `variant` reads for p (harness/cuda_plans.cpp; without
// CUDA, or for variants that read none, zeros). Throws std::runtime_error when a query fails.
PlanDevice plan_device_for(const std::string& variant, const Problem& p);
