#include "harness/cuda_run.h"

#include <cstring>

#include <fmt/format.h>

#include "harness/gpu_runtime.h"
#include "harness/metrics.h"

CudaRunBase::CudaRunBase() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

CudaRunBase::~CudaRunBase() {
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void CudaRunBase::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

DeviceBuffer CudaRunBase::allocate(size_t bytes) {
  allocated_bytes_ += int64_t(bytes);
  return DeviceBuffer(bytes);
}

void CudaRunBase::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // src may be a temporary of the caller
}

DeviceBuffer CudaRunBase::zeros(size_t bytes) {
  DeviceBuffer buf = allocate(bytes);
  if (bytes) CUDA_CHECK(cudaMemsetAsync(buf.get(), 0, bytes, stream_));
  return buf;
}

DeviceBuffer CudaRunBase::upload(const std::vector<float>& host, DType dt) {
  DeviceBuffer buf = allocate(host.size() * dtype_bytes(dt));
  if (host.empty()) return buf;
  if (dt == DType::f32) {
    copy_to_device(buf.get(), host.data(), buf.bytes());
  } else {
    std::vector<uint16_t> bits(host.size());
    for (size_t i = 0; i < host.size(); ++i)
      bits[i] = dt == DType::bf16 ? float_to_bf16_bits(host[i]) : float_to_half_bits(host[i]);
    copy_to_device(buf.get(), bits.data(), buf.bytes());
  }
  return buf;
}

std::vector<float> CudaRunBase::download(const DeviceBuffer& buf, int64_t n, DType dt) const {
  std::vector<float> out(n);
  if (n == 0) return out;
  if (dt == DType::f32) {
    CUDA_CHECK(cudaMemcpy(out.data(), buf.get(), size_t(n) * 4, cudaMemcpyDeviceToHost));
    return out;
  }
  std::vector<uint16_t> bits(n);
  CUDA_CHECK(cudaMemcpy(bits.data(), buf.get(), size_t(n) * 2, cudaMemcpyDeviceToHost));
  const uint16_t poison_bits = dt == DType::bf16 ? kPoisonBitsBf16 : kPoisonBitsF16;
  for (int64_t i = 0; i < n; ++i)
    out[i] = bits[i] == poison_bits ? poison_value_f32()
             : dt == DType::bf16    ? bf16_bits_to_float(bits[i])
                                    : half_bits_to_float(bits[i]);
  return out;
}

void CudaRunBase::poison(const DeviceBuffer& buf, int64_t n, DType dt) {
  poison_device_buffer(buf.get(), n, dt, stream_);
}

std::string gib_text(double bytes) { return fmt::format("{:.1f} GiB", bytes / double(1ull << 30)); }

std::optional<std::string> device_memory_shortfall(double need_bytes, const char* what) {
  size_t free_bytes = 0, total_bytes = 0;
  // No device to ask: nothing to fall short of. The runner skips GPU cases without a device
  // before this; the plan tests (tests/kernels/test_plans.cpp) ask for the shape limits alone.
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  if (need_bytes > 0.95 * double(free_bytes))
    return fmt::format("needs {} ({}), device has {} free", gib_text(need_bytes), what, gib_text(double(free_bytes)));
  return std::nullopt;
}
