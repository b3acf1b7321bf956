// Built only when nvcc is not found: the harness runs on the CPU backend alone.
#include <stdexcept>

#include "harness/environment.h"
#include "harness/gpu_runtime.h"
#include "harness/plans.h"

bool cuda_compiled() { return false; }

GpuInfo query_gpu() {
  GpuInfo info;
  info.why_not = "built without CUDA (nvcc was not found at configure time)";
  return info;
}

TimingStats time_gpu_run(VariantRun&, const TimingConfig&) {
  throw std::runtime_error("built without CUDA: no GPU timing");
}

void poison_device_buffer(void*, int64_t, DType, void*) {
  throw std::runtime_error("built without CUDA: no device buffers");
}

Ceilings measure_ceilings(const TimingConfig&, int64_t, int64_t) {
  throw std::runtime_error("built without CUDA: no ceilings to measure");
}

// The CPU variants' plans read nothing of a device; no CUDA variant is registered here.
PlanDevice plan_device_for(const std::string&, const Problem&) { return PlanDevice{}; }

CudaVersions cuda_versions() { return CudaVersions{}; }
