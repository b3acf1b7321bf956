// Shared plumbing of GPU runs: a dedicated stream, tracked device allocations (their sum is the
// run's peak device memory), dtype upload and poison-aware download.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/device_buffer.h"
#include "harness/variant.h"

class CudaRunBase : public VariantRun {
 public:
  CudaRunBase();
  ~CudaRunBase() override;
  void synchronize() override;
  int64_t peak_device_bytes() const override { return allocated_bytes_; }
  void* stream() const override { return stream_; }

 protected:
  DeviceBuffer allocate(size_t bytes);
  // Converts host floats (already representable in dt) to dt and copies them to the device.
  DeviceBuffer upload(const std::vector<float>& host, DType dt);
  // Host bytes to the device on the run's stream, complete when it returns. The launches run on
  // that non-blocking stream, which is not ordered after the legacy stream's work: a cudaMemcpy
  // from pageable memory may return before its DMA lands, and a kernel on stream_ could then read
  // the buffer before its inputs are there.
  void copy_to_device(void* dst, const void* src, size_t bytes);
  // `bytes` of zeros, set on the run's stream (ordered before its launches).
  DeviceBuffer zeros(size_t bytes);
  // Reads n elements of type dt back as float; poisoned elements come back as the f32 poison.
  std::vector<float> download(const DeviceBuffer& buf, int64_t n, DType dt) const;
  void poison(const DeviceBuffer& buf, int64_t n, DType dt);

  cudaStream_t stream_ = nullptr;

 private:
  int64_t allocated_bytes_ = 0;
};

// "12.3 GiB": how SKIPPED reasons name sizes.
std::string gib_text(double bytes);
// A SKIPPED reason ("needs X GiB (what), device has Y GiB free") when `need_bytes` of device memory
// would not fit in 95% of what is free now, else nullopt.
std::optional<std::string> device_memory_shortfall(double need_bytes, const char* what);
