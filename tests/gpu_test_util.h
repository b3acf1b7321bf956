// Helpers of the [gpu] test files: skip with a warning where there is no GPU, and verify one
// registered variant on one problem through the runner (the same path as `gdnbench verify`).
#pragma once
#include <catch2/catch.hpp>

#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/runner.h"
#include "harness/variant.h"

namespace gputest {

// True when a GPU is there; otherwise the test records why in a warning and checks nothing else.
inline bool gpu_or_warn() {
  static const GpuInfo gpu = query_gpu();
  if (!gpu.available) WARN("skipped: no GPU (" << gpu.why_not << ")");
  return gpu.available;
}

inline ResultRow verify_on_gpu(const char* variant_name, const Problem& p, int cpu_threads = 4) {
  const VariantInfo* v = find_variant(variant_name);
  REQUIRE(v != nullptr);
  RunOptions opt;
  opt.gpu = query_gpu();
  opt.cpu_threads = cpu_threads;
  return verify_single_case(Case{p, v, true}, opt, make_inputs(p));
}

}  // namespace gputest
