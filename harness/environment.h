// What a result was measured on, for --json's context block: the build, the CUDA stack, the GPU,
// the CPU and its load, the command. Each entry is a name and a value (a number where it is one).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "harness/gpu_runtime.h"

struct CudaVersions {
  int runtime = 0, driver = 0;  // 1000 * major + 10 * minor, as CUDA reports them; 0: none
  std::string cublas;           // "major.minor.patch"; empty without CUDA
};
CudaVersions cuda_versions();  // harness/cuda_environment.cpp, or no_cuda.cpp

using Environment = std::vector<std::pair<std::string, std::string>>;

// Load averages (1, 5, 15 min) as text, or "" where getloadavg fails.
std::string load_average();
// The build, the CUDA stack, the GPU and the CPU (the git sha and the command are the RunMeta's).
Environment collect_environment(const GpuInfo& gpu, const std::string& cpu_name);
