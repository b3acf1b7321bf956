#include "harness/cpu_variants.h"
#include "harness/variant.h"
#ifdef GDNBENCH_HAVE_CUDA
#include "harness/cuda_frontend_variants.h"
#include "harness/cuda_variants.h"
#endif

const char* family_name(Family f) { return f == Family::gdn ? "gdn" : "attention"; }
const char* backend_name(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

namespace {
// An entry of a variant with a backward pass (VariantInfo::has_backward).
VariantInfo with_backward(VariantInfo v) {
  v.has_backward = true;
  return v;
}
// An entry whose backward computes in another precision class than its forward (VariantInfo::backward_precision).
[[maybe_unused]] VariantInfo backward_in(Precision precision, VariantInfo v) {
  v.backward_precision = precision;
  return v;
}
// An entry of a variant that runs a packed batch's forward in one launch (VariantInfo::packed_native).
VariantInfo packed_native(VariantInfo v) {
  v.packed_native = true;
  return v;
}
// An entry of a variant that takes a front-end problem's raw projections (Problem::frontend).
[[maybe_unused]] VariantInfo takes_frontend(VariantInfo v, double (*min_bytes)(const Problem&)) {
  v.frontend = true;
  v.min_bytes = min_bytes;
  return v;
}
#ifdef GDNBENCH_HAVE_CUDA
// wy_ut's plans: the fp16 chain (its S0, U and W one fp16 operand each) is judged as tensor_core;
// every other plan splits its float32 operands hi/lo and is held to tensor_core_split.
Precision wy_ut_plan_precision(const PlanChoice& plan) {
  for (const std::string& option : plan.options)
    if (plan_token_matches("wgmma_chain", option)) return Precision::tensor_core;
  return Precision::tensor_core_split;
}
VariantInfo with_plan_precision(Precision (*of_plan)(const PlanChoice&), VariantInfo v) {
  v.plan_precision = of_plan;
  return v;
}
#endif
}  // namespace

const std::vector<VariantInfo>& variant_registry() {
  static const std::vector<VariantInfo> table = {
      packed_native(with_backward({"cpu_recurrent", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0,
                     "fp32 bf16 fp16 (emulated)", "any K, V", cpu_recurrent_unsupported, create_cpu_recurrent,
                     "step-by-step recurrence in float32, threads over (B, HV); backward through checkpoints"})),
      packed_native(with_backward({"cpu_chunked", Family::gdn, Backend::cpu, Precision::fp32_math, true, 0,
                     "fp32 bf16 fp16 (emulated)", "any K, V; C in {16, 32, 64}", cpu_chunked_unsupported,
                     create_cpu_chunked, "chunked UT transform in float32, threads over (B, HV); chunked backward"})),
#ifdef GDNBENCH_HAVE_CUDA
      packed_native(with_backward({"recurrent", Family::gdn, Backend::cuda, Precision::fp32_math, false, 0, "fp32 bf16 fp16",
                     "K, V <= 256", recurrent_unsupported, create_recurrent,
                     "sequential over T, float32 state in registers, grid over (B, HV, V blocks); backward "
                     "through stored states"})),
      {"chunked", Family::gdn, Backend::cuda, Precision::fp32_math, true, 0, "fp32 bf16 fp16",
       "K, V <= 256; C in {16, 32, 64}", chunked_unsupported, create_chunked,
       "chunk-parallel UT transform in float32 SIMT, sequential scan over chunks only"},
      with_plan_precision(wy_ut_plan_precision,
                          {"wy_ut", Family::gdn, Backend::cuda, Precision::tensor_core, false, 64, "bf16 fp16",
                           "K in {64, 128, 256}; V a multiple of 32 <= 256; C = 64", wy_ut_unsupported, create_wy_ut,
                           "UT transform on tensor cores (mma.sync), split-precision products, fp32 state"}),
      takes_frontend({"unfused_conv", Family::gdn, Backend::cuda, Precision::tensor_core_frontend, false, 64,
                      "bf16 fp16", "wy_ut's: K in {64, 128, 256}; V a multiple of 32 <= 256",
                      unfused_conv_unsupported, create_unfused_conv,
                      "front-end kernel (conv, SiLU, L2 norm, gates) writes q, k, v, g, beta; then wy_ut"},
                     frontend_min_bytes_f32_state),
      takes_frontend({"fused_conv", Family::gdn, Backend::cuda, Precision::tensor_core_frontend, false, 64,
                      "bf16 fp16", "K in {64, 128}; V a multiple of 32 <= 256", fused_conv_unsupported,
                      create_fused_conv,
                      "wy_ut with the front end (conv, SiLU, L2 norm, gates) in prepare and output: "
                      "k once in memory"},
                     frontend_min_bytes_f32_state),
      takes_frontend({"fused_decode", Family::gdn, Backend::cuda, Precision::fp32_math, false, 0,
                      "fp32 bf16 fp16", "T <= 8 new tokens; K, V <= 256", fused_decode_unsupported,
                      create_fused_decode,
                      "in-place decode: front-end kernel (conv cache roll, q, k, v, gates), then state update, o; state pool by slot"},
                     frontend_min_bytes_f32_state),
      takes_frontend({"fused_decode_bf16state", Family::gdn, Backend::cuda, Precision::bf16_state, false, 0,
                      "fp32 bf16 fp16", "T <= 8 new tokens; K, V <= 256", fused_decode_unsupported,
                      create_fused_decode_bf16state, "fused_decode with the state pool in bf16 (float32 math)"},
                     frontend_min_bytes_bf16_state),
      // Deterministic (the default): cuBLAS documents bitwise-identical results run to run on one
      // GPU model when a handle's stream keeps one workspace (cublasSetWorkspace, as here) and
      // atomics stay off (its default); the softmax reduces in a fixed order.
      backward_in(Precision::fp32_math,
                  with_backward({"attn_naive", Family::attention, Backend::cuda, Precision::tensor_core, false, 0,
                                 "fp32 bf16 fp16", "any D; T x T scores must fit", attn_naive_unsupported,
                                 create_attn_naive,
                                 "causal softmax via cuBLAS GEMMs with T x T scores in memory (quadratic baseline); "
                                 "backward in float32 GEMMs"})),
      {"attn_flash", Family::attention, Backend::cuda, Precision::tensor_core, false, 0, "bf16 fp16",
       "K = V in {64, 128, 256}; any T; context 0", attn_flash_unsupported, create_attn_flash,
       "FlashAttention-2 forward: online softmax on mma.sync, K/V tiles streamed, no T x T memory"},
      // Deterministic: the split count depends only on the shape and the SM count, and splits and
      // groups are merged in a fixed order.
      {"attn_decode", Family::attention, Backend::cuda, Precision::tensor_core, false, 0, "bf16 fp16",
       "K = V in {64, 128, 256}; T = 1; any context", attn_decode_unsupported, create_attn_decode,
       "one token against a KV cache, split over the keys (flash-decoding) and combined"},
#endif
  };
  return table;
}

const VariantInfo* find_variant(const std::string& name) {
  for (const VariantInfo& v : variant_registry())
    if (name == v.name) return &v;
  return nullptr;
}
