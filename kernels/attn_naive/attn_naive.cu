// attn_naive: causal softmax attention with the T x T scores materialised, on purpose: it is the
// quadratic-memory baseline (what a plain framework implementation does).
//   S = scale Q K^T  (cuBLAS, dtype operands, float32 accumulation and output)
//   P = softmax(S + causal mask) row by row in float32, stored in the input dtype
//   O = P V          (cuBLAS, float32 accumulation, output in the input dtype)
// One batch entry at a time; the H heads of it are one strided-batched GEMM each.
// Workspace: H * T * T * (4 + dtype bytes), e.g. T = 16384, H = 32, bf16: 48 GiB.
// The full square is multiplied (no causal skipping): half of the GEMM FLOPs are wasted by design.
// Rounds: P in the input dtype before the second product; fp32 inputs use true fp32 GEMMs (no TF32).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_kernels.h"

namespace {

constexpr int kSoftmaxThreads = 256;

__device__ __forceinline__ float block_reduce(float x, bool is_max, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float y = __shfl_xor_sync(0xFFFFFFFFu, x, offset);
    x = is_max ? fmaxf(x, y) : x + y;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from the previous reduction
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = scratch[0];
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) x = is_max ? fmaxf(x, scratch[w]) : x + scratch[w];
  return x;
}

// One block per score row (head, query i): P[i][j] = exp(S_ij - max) / sum for j <= i, else 0.
template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads)
causal_softmax_kernel(const float* scores, T* probs, int64_t T_len, bool causal) {
  __shared__ float scratch[kSoftmaxThreads / 32];
  const int64_t row = blockIdx.x;  // head * T + i
  const int64_t i = row % T_len;
  const int64_t n_valid = causal ? i + 1 : T_len;
  const float* s = scores + row * T_len;
  T* p = probs + row * T_len;
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < n_valid; j += kSoftmaxThreads) m = fmaxf(m, s[j]);
  m = block_reduce(m, true, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < n_valid; j += kSoftmaxThreads) sum += expf(s[j] - m);
  sum = block_reduce(sum, false, scratch);
  const float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < T_len; j += kSoftmaxThreads)
    p[j] = from_float<T>(j < n_valid ? expf(s[j] - m) * inv : 0.0f);
}

cudaDataType_t cuda_type(DType t) {
  return t == DType::f32 ? CUDA_R_32F : t == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

}  // namespace

size_t attn_naive_workspace_bytes(const AttnParams& p) {
  const size_t square = size_t(p.H) * size_t(p.T) * size_t(p.T);
  return square * (4 + dtype_bytes(p.dtype));
}

int launch_attn_naive(const AttnParams& p, void* workspace, cublasHandle_t handle,
                      cudaStream_t stream) {
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
  const size_t square = size_t(p.H) * size_t(p.T) * size_t(p.T);
  float* scores = static_cast<float*>(workspace);
  void* probs = scores + square;
  const size_t esize = dtype_bytes(p.dtype);
  const cudaDataType_t dt = cuda_type(p.dtype);
  const float one = 1.0f, zero = 0.0f, scale = p.scale;
  const int64_t T = p.T, H = p.H, D = p.D, Dv = p.Dv;
  for (int64_t b = 0; b < p.B; ++b) {
    const char* qb = static_cast<const char*>(p.q) + size_t(b * T * H * D) * esize;
    const char* kb = static_cast<const char*>(p.k) + size_t(b * T * H * D) * esize;
    const char* vb = static_cast<const char*>(p.v) + size_t(b * T * H * Dv) * esize;
    char* ob = static_cast<char*>(p.o) + size_t(b * T * H * Dv) * esize;
    // Column-major view: K, Q are D x T with leading dimension H*D; the scores of head h land
    // row-major [i][j] as the column-major T x T matrix K^T Q.
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, int(T), int(T), int(D), &scale, kb, dt, int(H * D), D,
        qb, dt, int(H * D), D, &zero, scores, CUDA_R_32F, int(T), T * T, int(H),
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
    const unsigned rows = unsigned(H * T);
    switch (p.dtype) {
      case DType::f32:
        causal_softmax_kernel<float><<<rows, kSoftmaxThreads, 0, stream>>>(scores, static_cast<float*>(probs), T, p.causal);
        break;
      case DType::bf16:
        causal_softmax_kernel<__nv_bfloat16><<<rows, kSoftmaxThreads, 0, stream>>>(scores, static_cast<__nv_bfloat16*>(probs), T, p.causal);
        break;
      case DType::f16:
        causal_softmax_kernel<__half><<<rows, kSoftmaxThreads, 0, stream>>>(scores, static_cast<__half*>(probs), T, p.causal);
        break;
    }
    if (cudaGetLastError() != cudaSuccess) return int(cudaErrorLaunchFailure);
    // O (column-major Dv x T, leading dimension H*Dv) = V (Dv x T) * P (column-major T x T).
    st = cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(Dv), int(T), int(T), &one,
                                    vb, dt, int(H * Dv), Dv, probs, dt, int(T), T * T, &zero, ob, dt,
                                    int(H * Dv), Dv, int(H), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
  }
  return int(cudaSuccess);
}
