// Probe of run 89 (docs/perf-notes.md): run 37's copy and in-place read-modify-write (128 MiB and
// 1 GiB each way) timed after the L2 flush as the harness does it (a 256 MiB memset: the L2 is left
// full of the memset's dirty lines) and after the same memset followed by a read of the buffer
// (the L2 left holding clean lines). 15 samples, the median of the last 13. Built and run as it ran:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -cudart static -o probe_flush docs/device-calls/probe_flush.cu
//   ./probe_flush
#include <cstdio>
#include <cuda_runtime.h>
#include <algorithm>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void rmw(float4* x, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    float4 v = x[i]; v.x = v.x * 0.999f + 1e-3f; v.y = v.y * 0.999f; v.z = v.z * 0.999f; v.w = v.w * 0.999f; x[i] = v;
  }
}
__global__ void read_all(const uint4* in, long n, uint4* sink) {
  unsigned acc = 0;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    const uint4 v = in[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) sink[0] = make_uint4(acc, 0, 0, 0);
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const long flush_bytes = 256L << 20;
  char* flush; CK(cudaMalloc(&flush, flush_bytes));
  long sizes[] = {134217728L, 1073741824L};
  const char* modes[] = {"cudaMemcpy D2D", "in-place rmw, one-shot grid"};
  for (long bytes : sizes) {
    float4 *a, *b; CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 0, bytes)); CK(cudaMemset(b, 0, bytes));
    long n = bytes / 16;
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int mode = 0; mode < 2; ++mode)
      for (int clean = 0; clean < 2; ++clean) {
        std::vector<float> ts;
        for (int r = 0; r < 15; ++r) {
          CK(cudaMemset(flush, r, flush_bytes));
          if (clean) read_all<<<sms * 8, 256>>>((const uint4*)flush, flush_bytes / 16, (uint4*)flush);
          cudaEventRecord(e0);
          if (mode == 0) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
          if (mode == 1) rmw<<<(n + 255) / 256, 256>>>(a, n);
          cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
          float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 2) ts.push_back(ms);
        }
        std::sort(ts.begin(), ts.end()); float med = ts[ts.size() / 2];
        printf("%-28s %5ld MiB each way, flush %-5s: %8.2f us  %6.3f TB/s\n", modes[mode], bytes >> 20,
               clean ? "clean" : "write", med * 1e3, 2.0 * bytes / (med * 1e-3) / 1e12);
      }
    CK(cudaFree(a)); CK(cudaFree(b));
  }
  return 0;
}
