// Device query, device-side poisoning and the GPU timing engine (docs/DESIGN.md section 4).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "harness/cuda_check.h"
#include "harness/device_buffer.h"
#include "harness/gpu_runtime.h"
#include "harness/metrics.h"
#include "kernels/frontend/frontend.h"
#include "kernels/wy_ut/wy_ut.h"

namespace {

template <typename Word>
__global__ void fill_pattern_kernel(Word* out, int64_t n, Word pattern) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = pattern;
}

// The clean flush's second half: every line of the buffer read, so the memset's dirty lines are
// written back before the sample, not during it. The store never happens (acc would have to hit
// one value); it keeps the loads from being removed.
__global__ void l2_read_all_kernel(const uint4* in, int64_t n, uint4* never) {
  uint32_t acc = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = in[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) never[0] = make_uint4(acc, 0, 0, 0);
}

// One buffer of twice the L2 size, overwritten before each sample so no input stays cached.
DeviceBuffer& l2_flush_buffer(int64_t l2_bytes) {
  static DeviceBuffer buffer;
  const size_t want = size_t(std::max<int64_t>(2 * l2_bytes, 8 << 20));
  if (buffer.bytes() < want) buffer = DeviceBuffer(want);
  return buffer;
}

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

struct GraphExec {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GraphExec() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

}  // namespace

bool cuda_compiled() { return true; }

GpuInfo query_gpu() {
  GpuInfo info;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    info.why_not = std::string("CUDA runtime: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error so later checks start clean
    return info;
  }
  if (count == 0) {
    info.why_not = "no CUDA device found";
    return info;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  CUDA_CHECK(cudaSetDevice(0));
  info.available = true;
  info.device = 0;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.smem_per_block_optin = int64_t(prop.sharedMemPerBlockOptin);
  info.total_mem_bytes = int64_t(prop.totalGlobalMem);
  CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_clock_khz, cudaDevAttrClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&info.mem_clock_khz, cudaDevAttrMemoryClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&info.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
  return info;
}

void poison_device_buffer(void* ptr, int64_t elems, DType dt, void* stream) {
  if (elems == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const int threads = 256;
  const int blocks = int(std::min<int64_t>((elems + threads - 1) / threads, 4096));
  if (dt == DType::f32) {
    fill_pattern_kernel<<<blocks, threads, 0, s>>>(static_cast<uint32_t*>(ptr), elems, kPoisonBitsF32);
  } else {
    const uint16_t bits = dt == DType::bf16 ? kPoisonBitsBf16 : kPoisonBitsF16;
    fill_pattern_kernel<<<blocks, threads, 0, s>>>(static_cast<uint16_t*>(ptr), elems, bits);
  }
  CUDA_CHECK_LAUNCH();
}

TimingStats time_gpu_run(VariantRun& run, const TimingConfig& cfg) {
  auto stream = static_cast<cudaStream_t>(run.stream());
  int device = 0, l2 = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  DeviceBuffer& flush = l2_flush_buffer(l2);

  for (int i = 0; i < cfg.warmup; ++i) run.launch();
  CUDA_CHECK(cudaStreamSynchronize(stream));

  GraphExec graph;
  if (cfg.cuda_graph) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    run.launch();
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph.graph));
    CUDA_CHECK(cudaGraphInstantiate(&graph.exec, graph.graph, 0));
    CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));  // warm the graph itself
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  EventPair ev;
  std::vector<double> samples;
  const auto start = std::chrono::steady_clock::now();
  int sms = 0;  // the clean flush's read grid
  if (cfg.l2_flush == L2Flush::clean) CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (int i = 0;; ++i) {
    stop_if_interrupted();  // between samples: nothing of a sample is in flight here
    if (cfg.l2_flush != L2Flush::off) CUDA_CHECK(cudaMemsetAsync(flush.get(), i & 0xFF, flush.bytes(), stream));
    if (cfg.l2_flush == L2Flush::clean) {
      l2_read_all_kernel<<<8 * sms, 256, 0, stream>>>(static_cast<const uint4*>(flush.get()),
                                                      int64_t(flush.bytes() / 16), static_cast<uint4*>(flush.get()));
      CUDA_CHECK_LAUNCH();
    }
    CUDA_CHECK(cudaEventRecord(ev.start, stream));
    if (graph.exec) CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));
    else run.launch();
    CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    samples.push_back(ms);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (sampling_done(samples, elapsed, cfg)) break;
  }
  TimingStats stats = summarize_samples(samples);
  stats.timer = graph.exec ? "graph" : "events";
  stats.l2_flush = l2_flush_name(cfg.l2_flush);
  return stats;
}
