// Probe of run 37 (docs/perf-notes.md): device-to-device copy and in-place read-modify-write of
// 128 MiB, 256 MiB and 1 GiB each way, L2 flushed (256 MiB memset) before each of 15 samples, the
// median of the last 13. Built and run as it ran:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o inplace docs/device-calls/probe_inplace.cu
//   ./inplace
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
__global__ void copyk(const float4* __restrict__ a, float4* __restrict__ b, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) b[i] = a[i];
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  char* flush; CK(cudaMalloc(&flush, 256 << 20));
  long sizes[] = {134217728L, 268435456L, 1073741824L};
  for (long bytes : sizes) {
    float4 *a, *b; CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 0, bytes)); CK(cudaMemset(b, 0, bytes));
    long n = bytes / 16;
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int mode = 0; mode < 4; ++mode) {
      std::vector<float> ts;
      for (int r = 0; r < 15; ++r) {
        CK(cudaMemset(flush, r, 256 << 20));
        cudaEventRecord(e0);
        if (mode == 0) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
        if (mode == 1) copyk<<<sms * 8, 256>>>(a, b, n);
        if (mode == 2) rmw<<<sms * 8, 256>>>(a, n);
        if (mode == 3) rmw<<<(n + 255) / 256, 256>>>(a, n);
        cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 2) ts.push_back(ms);
      }
      std::sort(ts.begin(), ts.end()); float med = ts[ts.size() / 2];
      const char* names[] = {"memcpy_d2d", "copy_kernel_gridstride", "inplace_rmw_gridstride", "inplace_rmw_oneshot"};
      printf("%s bytes_each_way=%ld median_us=%.2f TBps_rw=%.3f\n", names[mode], bytes, med * 1e3, 2.0 * bytes / (med * 1e-3) / 1e12);
    }
    cudaFree(a); cudaFree(b);
  }
  return 0;
}
