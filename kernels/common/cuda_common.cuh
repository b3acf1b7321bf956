// Helpers shared by the CUDA kernels: the dtype dispatch, element conversions for fp32/bf16/fp16
// to and from float, warp sums, and the host's alignment test for their vector paths.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/dtype.h"

// Calls fn(T{}) with T the element type of dtype.
template <typename Fn>
inline cudaError_t dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::bf16: return fn(__nv_bfloat16{});
    case DType::f16: return fn(__half{});
  }
  return cudaErrorInvalidValue;
}

// Whether a pointer may be read or written with 16-byte vector accesses (nullptr: yes).
inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

// Sum over groups of `Width` consecutive lanes (Width a power of two <= 32); every lane gets it.
template <int Width>
__device__ __forceinline__ float group_sum(float x) {
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xFFFFFFFFu, x, offset, Width);
  return x;
}
