#include "harness/cpu_variants.h"
#include "harness/variant.h"
#ifdef GDNBENCH_HAVE_CUDA
#include "harness/cuda_variants.h"
#endif

const char* family_name(Family f) { return f == Family::gdn ? "gdn" : "attention"; }
const char* backend_name(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

const std::vector<VariantInfo>& variant_registry() {
  static const std::vector<VariantInfo> table = {
      {"cpu_recurrent", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0,
       "fp32 bf16 fp16 (emulated)", "any K, V", cpu_recurrent_unsupported, create_cpu_recurrent,
       "step-by-step recurrence in float32, threads over (B, HV)"},
      {"cpu_chunked", Family::gdn, Backend::cpu, Precision::fp32_math, true, 0,
       "fp32 bf16 fp16 (emulated)", "any K, V; C in {16, 32, 64}", cpu_chunked_unsupported,
       create_cpu_chunked, "chunked UT transform in float32, threads over (B, HV)"},
#ifdef GDNBENCH_HAVE_CUDA
      {"recurrent", Family::gdn, Backend::cuda, Precision::fp32_math, false, 0, "fp32 bf16 fp16",
       "K, V <= 256", recurrent_unsupported, create_recurrent,
       "sequential over T, float32 state in registers, grid over (B, HV, V blocks)"},
      {"chunked", Family::gdn, Backend::cuda, Precision::fp32_math, true, 0, "fp32 bf16 fp16",
       "K, V <= 256; C in {16, 32, 64}", chunked_unsupported, create_chunked,
       "chunk-parallel UT transform in float32 SIMT, sequential scan over chunks only"},
      {"wy_ut", Family::gdn, Backend::cuda, Precision::tensor_core, false, 64, "bf16 fp16",
       "K in {64, 128, 256}; V a multiple of 32 <= 256; C = 64", wy_ut_unsupported, create_wy_ut,
       "UT transform on tensor cores (mma.sync), split-precision products, fp32 state"},
      {"attn_naive", Family::attention, Backend::cuda, Precision::tensor_core, false, 0,
       "fp32 bf16 fp16", "any D; T x T scores must fit", attn_naive_unsupported, create_attn_naive,
       "causal softmax via cuBLAS GEMMs with T x T scores in memory (quadratic baseline)"},
#endif
  };
  return table;
}

const VariantInfo* find_variant(const std::string& name) {
  for (const VariantInfo& v : variant_registry())
    if (name == v.name) return &v;
  return nullptr;
}
