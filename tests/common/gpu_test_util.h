// Helpers of the [gpu] test files: skip with a warning where there is no GPU, and verify one
// registered variant on one problem through the runner (the same path as `gdnbench verify`).
#pragma once
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/runner.h"
#include "harness/variant.h"

#ifdef GDNBENCH_HAVE_CUDA
#include <cstdint>
#include <vector>

#include "harness/cuda_check.h"
#include "harness/device_buffer.h"
#include "harness/metrics.h"
#include "kernels/frontend/frontend.h"
#endif

namespace gputest {

#ifdef GDNBENCH_HAVE_CUDA
// x on the device as dtype dt (rounded to nearest).
inline DeviceBuffer to_device(const std::vector<float>& x, DType dt = DType::f32) {
  DeviceBuffer buf(x.size() * dtype_bytes(dt));
  if (x.empty()) return buf;
  if (dt == DType::f32) {
    CUDA_CHECK(cudaMemcpy(buf.get(), x.data(), buf.bytes(), cudaMemcpyHostToDevice));
    return buf;
  }
  std::vector<uint16_t> bits(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    bits[i] = dt == DType::bf16 ? float_to_bf16_bits(x[i]) : float_to_half_bits(x[i]);
  CUDA_CHECK(cudaMemcpy(buf.get(), bits.data(), buf.bytes(), cudaMemcpyHostToDevice));
  return buf;
}

// n elements of type dt as float; 16-bit poison comes back as the float32 poison.
inline std::vector<float> from_device(const void* ptr, int64_t n, DType dt = DType::f32) {
  std::vector<float> out(static_cast<size_t>(n));
  if (dt == DType::f32) {
    if (n > 0) CUDA_CHECK(cudaMemcpy(out.data(), ptr, size_t(n) * 4, cudaMemcpyDeviceToHost));
    return out;
  }
  std::vector<uint16_t> bits(static_cast<size_t>(n));
  if (n > 0) CUDA_CHECK(cudaMemcpy(bits.data(), ptr, size_t(n) * 2, cudaMemcpyDeviceToHost));
  const uint16_t poison = dt == DType::bf16 ? kPoisonBitsBf16 : kPoisonBitsF16;
  for (size_t i = 0; i < bits.size(); ++i)
    out[i] = bits[i] == poison ? poison_value_f32()
             : dt == DType::bf16 ? bf16_bits_to_float(bits[i])
                                 : half_bits_to_float(bits[i]);
  return out;
}
#endif

#ifdef GDNBENCH_HAVE_CUDA
// fused_decode's plan for a shape on the current device (the runner's and the launcher's, through
// kernels/plans/launch_plans.h), with aligned tensors: its state and front-end kernels by name.
inline DecodePlan decode_plan_on_device(const GdnShape& s, bool state_bf16, DType dtype) {
  PlanDevice dev;
  REQUIRE(gdn_decode_plan_device(s, dtype, state_bf16, dev) == 0);
  DecodePlan plan;
  const PlanChoice c = decode_plan_choice(DecodePlanInputs{s, dtype, state_bf16}, "auto", dev, plan);
  REQUIRE(c.unsupported.empty());
  return plan;
}
inline std::string decode_state_kernel_on_device(const GdnShape& s, bool state_bf16, DType dtype = DType::bf16) {
  return decode_state_kernel_name(decode_plan_on_device(s, state_bf16, dtype).state);
}
inline std::string decode_fe_kernel_on_device(const GdnShape& s, DType dtype) {
  return decode_fe_kernel_name(decode_plan_on_device(s, false, dtype).fe);
}
#else
// Built without CUDA there is no device (gpu_or_warn() is false): never reached.
inline std::string decode_state_kernel_on_device(const GdnShape&, bool, DType = DType::bf16) { return ""; }
inline std::string decode_fe_kernel_on_device(const GdnShape&, DType) { return ""; }
#endif

// True when a GPU is there; otherwise the test records why in a warning and checks nothing else.
inline bool gpu_or_warn() {
  static const GpuInfo gpu = query_gpu();
  if (!gpu.available) WARN("skipped: no GPU (" << gpu.why_not << ")");
  return gpu.available;
}

// False when the environment variable `name` is set and differs from `value`: splits a long
// generated test into passes that each finish under compute-sanitizer (e.g. GDNBENCH_TEST_K=256
// GDNBENCH_TEST_DTYPE=bf16).
inline bool selected_by_env(const char* name, const std::string& value) {
  const char* want = std::getenv(name);
  return want == nullptr || *want == '\0' || value == want;
}
inline bool selected_by_env(const char* name, int64_t value) { return selected_by_env(name, std::to_string(value)); }

inline ResultRow verify_on_gpu(const char* variant_name, const Problem& p, int cpu_threads = 4) {
  const VariantInfo* v = find_variant(variant_name);
  REQUIRE(v != nullptr);
  RunOptions opt;
  opt.gpu = query_gpu();
  opt.cpu_threads = cpu_threads;
  return verify_single_case(Case{p, v, true}, opt, make_inputs(p));
}

}  // namespace gputest
