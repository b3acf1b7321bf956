// What the host-only harness needs from the CUDA runtime, without CUDA headers. Implemented in
// harness/cuda_runtime.cu when nvcc is found, and by harness/no_cuda.cpp otherwise.
#pragma once
#include <cstdint>
#include <string>

#include "harness/timing.h"
#include "kernels/common/dtype.h"

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
// Events on the run's stream, L2 flushed before each sample when asked (docs/DESIGN.md section 4).
TimingStats time_gpu_run(VariantRun& run, const TimingConfig& cfg);
// Fills `elems` elements of type dt at ptr with the poison bits (metrics.h), on the stream.
void poison_device_buffer(void* ptr, int64_t elems, DType dt, void* stream);

// Measured ceilings of the current device (`gdnbench ceilings`): device-to-device copy bandwidth
// (bytes read + written per second) and cuBLAS GEMM rates on random data, 8192^3 by default.
struct Ceilings {
  bool measured = false;
  double copy_gbps = 0;
  double bf16_gemm_tflops = 0;
  double fp32_gemm_tflops = 0;
  TimingStats copy, bf16_gemm, fp32_gemm;
  int64_t copy_bytes = 0, gemm_n = 0;
};
Ceilings measure_ceilings(const TimingConfig& cfg, int64_t gemm_n = 8192,
                          int64_t copy_bytes = int64_t(2) << 30);
