// `gdnbench ceilings`: what this device can do at best, measured with the same timing engine as
// the kernels, so every row's TFLOP/s and GB/s can be read as a fraction of it.
#include <cublas_v2.h>

#include "harness/cuda_run.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/rng.h"

namespace {

// Random data, not zeros: a GEMM on zeros runs faster than on real data.
std::vector<float> random_host(int64_t n, uint64_t seed) {
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = float(counter_normal(seed, 99, uint64_t(i)));
  return x;
}

class CopyRun : public CudaRunBase {
 public:
  explicit CopyRun(int64_t bytes) : src_(allocate(size_t(bytes))), dst_(allocate(size_t(bytes))) {
    CUDA_CHECK(cudaMemsetAsync(src_.get(), 0x3C, src_.bytes(), stream_));  // on the run's stream, as its copies
  }
  void poison_outputs() override {}
  void launch() override {
    CUDA_CHECK(cudaMemcpyAsync(dst_.get(), src_.get(), src_.bytes(), cudaMemcpyDeviceToDevice, stream_));
  }
  RunOutputs read_outputs() override { return {}; }

 private:
  DeviceBuffer src_, dst_;
};

class GemmRun : public CudaRunBase {
 public:
  GemmRun(int64_t n, DType dt) : n_(n), dt_(dt) {
    a_ = upload(random_host(n * n, 7), dt);
    b_ = upload(random_host(n * n, 8), dt);
    c_ = allocate(size_t(n * n) * dtype_bytes(dt));
    CUBLAS_CHECK(cublasCreate(&handle_));
    CUBLAS_CHECK(cublasSetStream(handle_, stream_));
  }
  ~GemmRun() override { cublasDestroy(handle_); }
  void poison_outputs() override {}
  void launch() override {
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t t = dt_ == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
    CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(n_), int(n_), int(n_), &one,
                              a_.get(), t, int(n_), b_.get(), t, int(n_), &zero, c_.get(), t, int(n_),
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  RunOutputs read_outputs() override { return {}; }

 private:
  int64_t n_;
  DType dt_;
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer a_, b_, c_;
};

}  // namespace

Ceilings measure_ceilings(const TimingConfig& cfg, int64_t gemm_n, int64_t copy_bytes) {
  Ceilings c;
  c.copy_bytes = copy_bytes;
  c.gemm_n = gemm_n;
  {
    CopyRun run(copy_bytes);
    c.copy = time_gpu_run(run, cfg);
    c.copy_gbps = 2.0 * double(copy_bytes) / (c.copy.median_ms * 1e6);
  }
  const double flops = 2.0 * double(gemm_n) * double(gemm_n) * double(gemm_n);
  {
    GemmRun run(gemm_n, DType::bf16);
    c.bf16_gemm = time_gpu_run(run, cfg);
    c.bf16_gemm_tflops = flops / (c.bf16_gemm.median_ms * 1e9);
  }
  {
    GemmRun run(gemm_n, DType::f32);
    c.fp32_gemm = time_gpu_run(run, cfg);
    c.fp32_gemm_tflops = flops / (c.fp32_gemm.median_ms * 1e9);
  }
  c.measured = true;
  return c;
}
