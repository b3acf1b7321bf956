// attn_naive: causal softmax attention with the T x T scores materialised, on purpose: it is the
// quadratic-memory baseline (what a plain framework implementation does).
//   S = scale Q K^T  (cuBLAS, dtype operands, float32 accumulation and output)
//   P = softmax(S + causal mask) row by row in float32, stored in the input dtype
//   O = P V          (cuBLAS, float32 accumulation, output in the input dtype)
// One batch entry at a time; the H heads of it are one strided-batched GEMM each.
// Workspace: H * T * T * (4 + dtype bytes), e.g. T = 16384, H = 32, bf16: 48 GiB.
// The full square is multiplied (no causal skipping): half of the GEMM FLOPs are wasted by design.
// Rounds: P in the input dtype before the second product; fp32 inputs use true fp32 GEMMs (no TF32).
// The backward (launch_attn_naive_backward) is float32 math throughout: the softmax's Jacobian
//   dP = dO V^T;  dS = scale P .* (dP - rowsum(P .* dP));  dQ = dS K;  dK = dS^T Q;  dV = P^T dO
// with P recomputed in float32 and every product a true fp32 GEMM (q, k, dO copied to float32;
// V and dO in the dtype for dP, exact products accumulated in float32), so its gradients are
// judged by the fp32_math bounds: only their final rounding to the dtype is unavoidable.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
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

// One block per row (head, query i) of P (float32) and dP (float32, overwritten by dS):
// delta = sum_j P_ij dP_ij, dS_ij = scale P_ij (dP_ij - delta); P_ij = 0 past the causal mask.
__global__ void __launch_bounds__(kSoftmaxThreads)
softmax_backward_kernel(const float* probs, float* dprobs, int64_t T_len, float scale) {
  __shared__ float scratch[kSoftmaxThreads / 32];
  const int64_t row = blockIdx.x;
  const float* p = probs + row * T_len;
  float* d = dprobs + row * T_len;
  float delta = 0.0f;
  for (int64_t j = threadIdx.x; j < T_len; j += kSoftmaxThreads) delta += p[j] * d[j];
  delta = block_reduce(delta, false, scratch);
  for (int64_t j = threadIdx.x; j < T_len; j += kSoftmaxThreads) d[j] = scale * p[j] * (d[j] - delta);
}

template <typename T>
__global__ void to_f32_kernel(const T* in, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = to_float(in[i]);
}
template <typename T>
__global__ void from_f32_kernel(const float* in, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(in[i]);
}

// n elements of `dt` to float32 (to_f32) or back (!to_f32).
cudaError_t convert(DType dt, bool to_f32, const void* in, void* out, int64_t n, cudaStream_t stream) {
  const unsigned blocks = unsigned(std::min<int64_t>((n + 255) / 256, 4096));
  if (n == 0) return cudaSuccess;
  switch (dt) {
    case DType::f32:
      return cudaMemcpyAsync(out, in, size_t(n) * 4, cudaMemcpyDeviceToDevice, stream);
    case DType::bf16:
      if (to_f32) to_f32_kernel<<<blocks, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(in), static_cast<float*>(out), n);
      else from_f32_kernel<<<blocks, 256, 0, stream>>>(static_cast<const float*>(in), static_cast<__nv_bfloat16*>(out), n);
      break;
    case DType::f16:
      if (to_f32) to_f32_kernel<<<blocks, 256, 0, stream>>>(static_cast<const __half*>(in), static_cast<float*>(out), n);
      else from_f32_kernel<<<blocks, 256, 0, stream>>>(static_cast<const float*>(in), static_cast<__half*>(out), n);
      break;
  }
  return cudaGetLastError();
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

size_t attn_naive_backward_workspace_bytes(const AttnParams& p) {
  const size_t square = size_t(p.H) * size_t(p.T) * size_t(p.T);
  const size_t qk = size_t(p.B * p.T * p.H * p.D), vv = size_t(p.B * p.T * p.H * p.Dv);
  return 4 * (2 * square + 2 * qk + vv  // P, dP/dS; q, k, dout as float32
              + 2 * qk + vv);           // dq, dk, dv in float32
}

int launch_attn_naive_backward(const AttnParams& p, const void* dout, void* dq, void* dk, void* dv,
                               void* workspace, cublasHandle_t handle, cudaStream_t stream) {
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
  const int64_t T = p.T, H = p.H, D = p.D, Dv = p.Dv;
  const size_t square = size_t(H) * size_t(T) * size_t(T);
  const int64_t qk = p.B * T * H * D, vv = p.B * T * H * Dv;
  float* probs = static_cast<float*>(workspace);
  float* dprobs = probs + square;
  float* q32 = dprobs + square;
  float* k32 = q32 + qk;
  float* dout32 = k32 + qk;
  float* dq32 = dout32 + vv;
  float* dk32 = dq32 + qk;
  float* dv32 = dk32 + qk;
  if (convert(p.dtype, true, p.q, q32, qk, stream) || convert(p.dtype, true, p.k, k32, qk, stream) ||
      convert(p.dtype, true, dout, dout32, vv, stream))
    return int(cudaErrorLaunchFailure);
  const size_t esize = dtype_bytes(p.dtype);
  const cudaDataType_t dt = cuda_type(p.dtype);
  const float one = 1.0f, zero = 0.0f, scale = p.scale;
  const int ldqk = int(H * D), ldv = int(H * Dv), n = int(T);
  const unsigned rows = unsigned(H * T);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t oq = b * T * H * D, ov = b * T * H * Dv;
    const char* kb = static_cast<const char*>(p.k) + size_t(oq) * esize;
    const char* qb = static_cast<const char*>(p.q) + size_t(oq) * esize;
    const char* vb = static_cast<const char*>(p.v) + size_t(ov) * esize;
    const char* dob = static_cast<const char*>(dout) + size_t(ov) * esize;
    // P: the forward's scores (column-major K^T Q, row-major [i][j] per head), softmax in float32 in place.
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, int(D), &scale, kb, dt, ldqk, D, qb, dt, ldqk, D, &zero, probs,
        CUDA_R_32F, n, T * T, int(H), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
    causal_softmax_kernel<float><<<rows, kSoftmaxThreads, 0, stream>>>(probs, probs, T, p.causal);
    if (cudaGetLastError() != cudaSuccess) return int(cudaErrorLaunchFailure);
    // dP[i][j] = dO_i . v_j: column-major V^T dO, as the scores.
    st = cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, int(Dv), &one, vb, dt, ldv, Dv, dob,
                                    dt, ldv, Dv, &zero, dprobs, CUDA_R_32F, n, T * T, int(H), CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
    softmax_backward_kernel<<<rows, kSoftmaxThreads, 0, stream>>>(probs, dprobs, T, scale);
    if (cudaGetLastError() != cudaSuccess) return int(cudaErrorLaunchFailure);
    // The squares read column-major are M(j, i) = X[i][j]. dQ (D x T) = K M_dS; dK = Q M_dS^T;
    // dV (Dv x T) = dO M_P^T. True fp32 GEMMs (the handle's default math: no TF32).
    st = cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(D), n, n, &one, k32 + oq, ldqk, D, dprobs,
                                   n, T * T, &zero, dq32 + oq, ldqk, D, int(H));
    if (st != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
    st = cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_T, int(D), n, n, &one, q32 + oq, ldqk, D, dprobs,
                                   n, T * T, &zero, dk32 + oq, ldqk, D, int(H));
    if (st != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
    st = cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_T, int(Dv), n, n, &one, dout32 + ov, ldv, Dv,
                                   probs, n, T * T, &zero, dv32 + ov, ldv, Dv, int(H));
    if (st != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);
  }
  if (convert(p.dtype, false, dq32, dq, qk, stream) || convert(p.dtype, false, dk32, dk, qk, stream) ||
      convert(p.dtype, false, dv32, dv, vv, stream))
    return int(cudaErrorLaunchFailure);
  return int(cudaSuccess);
}
