// Device functions of the GDN front end (DESIGN.md section 1, "Fused front end"), the one
// definition every kernel that reads raw projections uses (kernels/frontend.cu,
// kernels/decode.cu, a fused wy_ut prologue). Each works on one channel, one element or one row,
// so a caller maps them onto its own tile: a thread per channel rolling ConvChannel over tokens,
// or a tile of rows calling fe_conv on inputs fetched with fe_conv_input.
// Rounds: everything in float32 (the reference is float64); expf/log1pf/sqrtf without fast-math.
#pragma once
#include "kernels/cuda_common.cuh"
#include "kernels/frontend.h"

__device__ __forceinline__ float fe_silu(float x) { return x / (1.0f + expf(-x)); }
// log(1 + e^x); past 20 the correction is below float32 resolution (and e^x would overflow later).
__device__ __forceinline__ float fe_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float fe_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// g = -exp(A_log) softplus(a + dt_bias) <= 0: the log decay of one token and value head.
__device__ __forceinline__ float fe_gate(float a, float A_log, float dt_bias) {
  return -expf(A_log) * fe_softplus(a + dt_bias);
}
__device__ __forceinline__ float fe_beta(float b) { return fe_sigmoid(b); }
// 1 / ||x|| with eps inside the square root: q, k = x * fe_inv_l2(sum x^2, eps).
__device__ __forceinline__ float fe_inv_l2(float sum_sq, float eps) { return 1.0f / sqrtf(sum_sq + eps); }

// The convolution at one token: bias + w0 x_{t-3} + w1 x_{t-2} + w2 x_{t-1} + w3 x_t, summed in
// that order (the reference's).
__device__ __forceinline__ float fe_conv(const float (&w)[kConvWidth], float bias, float xm3, float xm2,
                                         float xm1, float x0) {
  float y = bias;
  y = fmaf(w[0], xm3, y);
  y = fmaf(w[1], xm2, y);
  y = fmaf(w[2], xm1, y);
  return fmaf(w[3], x0, y);
}

// Input of channel c at token t of sequence b, t in [-3, T): the projection x [B, T, channels]
// for t >= 0, the conv cache [B, channels, 3] (nullptr: zeros) before the sequence start.
template <typename T>
__device__ __forceinline__ float fe_conv_input(const T* x, const T* cache, int64_t b, int64_t t, int64_t c,
                                               int64_t seq_len, int64_t channels) {
  if (t >= 0) return to_float(x[(b * seq_len + t) * channels + c]);
  return cache ? to_float(cache[(b * channels + c) * kConvCache + (kConvCache + t)]) : 0.0f;
}

// One channel of the causal depthwise convolution carried across tokens: weights, bias and the
// last three inputs (oldest first). step() takes the next input and returns the conv output;
// afterwards hist is the conv cache to store.
struct ConvChannel {
  float w[kConvWidth];
  float bias;
  float hist[kConvCache];

  // weights: the channel's 4 taps; bias and cache (its 3 inputs) may be nullptr (0, zeros).
  template <typename T>
  __device__ __forceinline__ void load(const T* weights, const T* bias_or_null, const T* cache_or_null) {
#pragma unroll
    for (int i = 0; i < kConvWidth; ++i) w[i] = to_float(weights[i]);
    bias = bias_or_null ? to_float(*bias_or_null) : 0.0f;
#pragma unroll
    for (int i = 0; i < kConvCache; ++i) hist[i] = cache_or_null ? to_float(cache_or_null[i]) : 0.0f;
  }
  __device__ __forceinline__ float step(float x) {
    const float y = fe_conv(w, bias, hist[0], hist[1], hist[2], x);
    hist[0] = hist[1];
    hist[1] = hist[2];
    hist[2] = x;
    return y;
  }
  // The inputs are dtype values already, so storing them back is exact.
  template <typename T>
  __device__ __forceinline__ void store_cache(T* cache) const {
#pragma unroll
    for (int i = 0; i < kConvCache; ++i) cache[i] = from_float<T>(hist[i]);
  }
};

// Sum of squares of row[0, n) by one warp (every lane gets it).
__device__ __forceinline__ float fe_warp_sum_sq(const float* row, int n) {
  const int lane = threadIdx.x % 32;
  float ss = 0.0f;
  for (int i = lane; i < n; i += 32) ss = fmaf(row[i], row[i], ss);
  return group_sum<32>(ss);
}
