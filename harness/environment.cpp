#include "harness/environment.h"

#include <cstdlib>
#include <thread>

#include <fmt/format.h>

std::string load_average() {
  double l[3];
  if (getloadavg(l, 3) != 3) return "";
  return fmt::format("{:.2f} {:.2f} {:.2f}", l[0], l[1], l[2]);
}

Environment collect_environment(const GpuInfo& gpu, const std::string& cpu_name) {
  Environment e;
#if defined(__clang__)
  e.emplace_back("compiler", std::string("clang ") + __VERSION__);
#elif defined(__GNUC__)
  e.emplace_back("compiler", std::string("gcc ") + __VERSION__);
#endif
#ifdef NDEBUG
  e.emplace_back("build", "release (NDEBUG)");
#else
  e.emplace_back("build", "debug (asserts on)");
#endif
  e.emplace_back("cuda_compiled", cuda_compiled() ? "yes" : "no");
  const CudaVersions v = cuda_versions();
  e.emplace_back("cuda_runtime_version", std::to_string(v.runtime));
  e.emplace_back("cuda_driver_version", std::to_string(v.driver));
  e.emplace_back("cublas_version", v.cublas);
  e.emplace_back("gpu", gpu.available ? gpu.name : "none (" + gpu.why_not + ")");
  if (gpu.available) {
    e.emplace_back("gpu_compute_capability", fmt::format("{}.{}", gpu.cc_major, gpu.cc_minor));
    e.emplace_back("gpu_sm_count", std::to_string(gpu.sm_count));
    e.emplace_back("gpu_memory_bytes", std::to_string(gpu.total_mem_bytes));
    e.emplace_back("gpu_l2_bytes", std::to_string(gpu.l2_bytes));
    e.emplace_back("gpu_max_sm_clock_khz", std::to_string(gpu.sm_clock_khz));
    e.emplace_back("gpu_max_mem_clock_khz", std::to_string(gpu.mem_clock_khz));
  }
  // Current clocks and temperature need NVML, which gdnbench does not link: say so, not guess.
  e.emplace_back("gpu_current_clocks_and_temperature", "not recorded (NVML not linked)");
  e.emplace_back("cpu", cpu_name);
  e.emplace_back("cpu_threads", std::to_string(std::thread::hardware_concurrency()));
  return e;
}
