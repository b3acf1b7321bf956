// What the host-only harness needs from the CUDA runtime, without CUDA headers. Implemented in
// harness/cuda_runtime.cu when nvcc is found, and by harness/no_cuda.cpp otherwise.
#pragma once
#include <cstdint>
#include <string>

#include "harness/timing.h"
#include "kernels/dtype.h"

struct GpuInfo {
  bool available = false;
  std::string why_not;  // when unavailable: built without CUDA, no device, driver error
  std::string name;
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t smem_per_block_optin = 0;
  int64_t total_mem_bytes = 0;
  int sm_clock_khz = 0;
  int mem_clock_khz = 0;
  int mem_bus_bits = 0;
};

bool cuda_compiled();
GpuInfo query_gpu();
// Events on the run's stream, L2 flushed before each sample when asked (DESIGN.md section 4).
TimingStats time_gpu_run(VariantRun& run, const TimingConfig& cfg);
// Fills `elems` elements of type dt at ptr with the poison bits (metrics.h), on the stream.
void poison_device_buffer(void* ptr, int64_t elems, DType dt, void* stream);
