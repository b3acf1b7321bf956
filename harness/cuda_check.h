// Error checks for the CUDA runtime and cuBLAS: throw with file, line and the call's text.
#pragma once
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

[[noreturn]] inline void throw_cuda_error(const char* what, const char* text, const char* file,
                                          int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + text +
                           " failed: " + what);
}

#define CUDA_CHECK(expr)                                                        \
  do {                                                                          \
    const cudaError_t cuda_check_status_ = (expr);                              \
    if (cuda_check_status_ != cudaSuccess)                                      \
      throw_cuda_error(cudaGetErrorString(cuda_check_status_), #expr, __FILE__, \
                       __LINE__);                                               \
  } while (0)

// After every kernel launch: launch-configuration errors surface here.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(expr)                                                          \
  do {                                                                              \
    const auto cublas_check_status_ = (expr);                                       \
    if (cublas_check_status_ != 0)                                                  \
      throw_cuda_error(("cuBLAS status " + std::to_string(int(cublas_check_status_))).c_str(), \
                       #expr, __FILE__, __LINE__);                                  \
  } while (0)
