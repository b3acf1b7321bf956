#include "harness/plans.h"

namespace {

std::vector<PlanStage> single(const char* stage, const char* option) {
  return {PlanStage{stage, {{option, {DType::f32, DType::bf16, DType::f16}}}}};
}

// A variant with one path: its only option, or the reason a request names another.
PlanChoice one_path(const Problem& p, const std::vector<PlanStage>& stages) {
  PlanChoice c;
  const std::string& option = stages[0].options[0].name;
  for (const std::string& t : split_plan_request(p.plan))
    if (!plan_token_matches(t, option)) c.unsupported = "--plan " + t + ": this variant has one plan (" + option + ")";
  if (c.unsupported.empty()) c.options = {option};
  return c;
}

std::vector<PlanStage> cpu_recurrent_stages() { return single("order", "sequential"); }
std::vector<PlanStage> cpu_chunked_stages() { return single("order", "chunk_by_chunk"); }

const std::vector<VariantPlans> kPlans = {
    {"cpu_recurrent", cpu_recurrent_stages,
     [](const Problem& p, const PlanDevice&, PlanLaunch&) { return one_path(p, cpu_recurrent_stages()); }},
    {"cpu_chunked", cpu_chunked_stages,
     [](const Problem& p, const PlanDevice&, PlanLaunch&) { return one_path(p, cpu_chunked_stages()); }},
    {"recurrent", recurrent_plan_stages,
     [](const Problem& p, const PlanDevice&, PlanLaunch& l) {
       const PlanPasses passes{pass_has_forward(p.pass), pass_has_backward(p.pass)};
       PlanChoice c = recurrent_plan(p.shape, p.plan, passes);
       if (c.unsupported.empty() && passes.forward) {
         const std::string& o = c.options[0];  // the form: the first stage
         l.recurrent_form = o.rfind("decode", 0) == 0  ? RecurrentForm::decode
                            : o.rfind("long", 0) == 0 ? RecurrentForm::long_seq
                                                      : RecurrentForm::short_seq;
       }
       return c;
     }},
    {"chunked", chunked_plan_stages,
     [](const Problem& p, const PlanDevice&, PlanLaunch&) { return chunked_plan(p.shape, p.chunk, p.plan); }},
    {"wy_ut", wy_ut_plan_stages,
     [](const Problem& p, const PlanDevice& dev, PlanLaunch& l) {
       return wy_ut_plan(p.shape, p.plan, dev, l.scan_groups, l.wy_ut_output);
     }},
    {"unfused_conv", wy_ut_plan_stages,
     [](const Problem& p, const PlanDevice& dev, PlanLaunch& l) {
       return wy_ut_plan(p.shape, p.plan, dev, l.scan_groups, l.wy_ut_output);
     }},
    {"fused_conv", fused_conv_plan_stages,
     [](const Problem& p, const PlanDevice& dev, PlanLaunch& l) {
       return fused_conv_plan(p.shape, p.plan, dev, l.scan_groups, l.fused_conv_output);
     }},
    {"fused_decode", [] { return decode_plan_stages(false); },
     [](const Problem& p, const PlanDevice& dev, PlanLaunch& l) {
       return decode_plan_choice(DecodePlanInputs{p.shape, p.dtype, false}, p.plan, dev, l.decode);
     }},
    {"fused_decode_bf16state", [] { return decode_plan_stages(true); },
     [](const Problem& p, const PlanDevice& dev, PlanLaunch& l) {
       return decode_plan_choice(DecodePlanInputs{p.shape, p.dtype, true}, p.plan, dev, l.decode);
     }},
    {"attn_naive", attn_naive_plan_stages,
     [](const Problem& p, const PlanDevice&, PlanLaunch&) { return attn_naive_plan(p.plan); }},
    {"attn_flash", attn_flash_plan_stages,
     [](const Problem& p, const PlanDevice&, PlanLaunch&) { return attn_flash_plan(p.shape, p.plan); }},
    {"attn_decode", attn_decode_plan_stages,
     [](const Problem& p, const PlanDevice& dev, PlanLaunch&) {
       return attn_decode_plan(p.shape, p.context, p.plan, dev);
     }},
};

}  // namespace

const std::vector<VariantPlans>& variant_plans() { return kPlans; }

const VariantPlans* find_variant_plans(const std::string& variant) {
  for (const VariantPlans& vp : kPlans)
    if (variant == vp.variant) return &vp;
  return nullptr;
}

bool plan_request_applies(const VariantPlans& vp, const std::string& request) {
  for (const std::string& t : split_plan_request(request)) {
    bool known = false;
    for (const PlanStage& st : vp.stages())
      for (const PlanOption& o : st.options) known = known || plan_token_matches(t, o.name);
    if (!known) return false;
  }
  return true;
}
