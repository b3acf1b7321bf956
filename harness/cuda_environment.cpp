// The CUDA stack's versions for the results' context (harness/environment.h).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "harness/environment.h"

CudaVersions cuda_versions() {
  CudaVersions v;
  if (cudaRuntimeGetVersion(&v.runtime) != cudaSuccess) v.runtime = 0;
  if (cudaDriverGetVersion(&v.driver) != cudaSuccess) v.driver = 0;
  cudaGetLastError();
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    v.cublas = fmt::format("{}.{}.{}", major, minor, patch);
  return v;
}
