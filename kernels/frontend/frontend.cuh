// Device functions of the GDN front end (docs/DESIGN.md section 1, "Fused front end"), the one
// definition every kernel that reads raw projections uses (kernels/frontend/frontend.cu,
// kernels/decode/, the fused_conv prologues of kernels/wy_ut/). The scalar functions work on
// one channel or one element; fe_roll is the register-rolled run of one thread (kFeVec
// consecutive channels over consecutive tokens) that the front-end kernel and fused_conv's tile
// builders share, so q, k, v come out of the same operations in the same order in both.
// Rounds: everything in float32 (the reference is float64); expf/log1pf/sqrtf without fast-math.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/common/cuda_common.cuh"
#include "kernels/frontend/frontend.h"

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
  // The cache alone (3 inputs), for a caller that loaded the taps first with load(w, bias, nullptr).
  template <typename T>
  __device__ __forceinline__ void load_cache(const T* cache) {
#pragma unroll
    for (int i = 0; i < kConvCache; ++i) hist[i] = to_float(cache[i]);
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

// ---------------------------------------------------------------------------------------------
// The register-rolled run: a thread owns kFeVec consecutive channels of one head and carries
// their convolutions over a run of consecutive tokens; a token's row of the head sits in `lanes`
// = 2^fe_lanes_log2(D) adjacent, aligned lanes, so the per-token sum of squares of the L2 norm is
// a shuffle reduction over those lanes (the same lanes and order wherever it runs).

constexpr int kFeVec = 8;  // consecutive channels per thread

// log2 of the lanes that hold one row of D channels: the least power of two with lanes * kFeVec >= D.
__host__ __device__ constexpr int fe_lanes_log2(int D) {
  int shift = 0;
  while ((1 << shift) * kFeVec < D) ++shift;
  return shift;
}

__device__ __forceinline__ uint32_t fe_bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ uint32_t fe_bits(__nv_bfloat16 x) { return __bfloat16_as_ushort(x); }
__device__ __forceinline__ uint32_t fe_bits(__half x) { return __half_as_ushort(x); }

// kFeVec consecutive elements of one row (8 channels of a token, or of weights) as raw words: 16-bit
// types two to a word, element e in the low half of word e / 2 when e is even.
template <typename T, bool kVector>
struct FeChunk {
  static constexpr int kPerWord = 4 / int(sizeof(T));
  static constexpr int kWords = kFeVec / kPerWord;
  uint32_t w[kWords];

  // n: elements of the row from p on (<= 0: none); `on` false loads nothing (zeros).
  // kVector: the caller guarantees p is 16-byte aligned and n >= kFeVec or n <= 0.
  __device__ __forceinline__ void load(const T* p, int n, bool on) {
    if constexpr (kVector) {
#pragma unroll
      for (int i = 0; i < kWords / 4; ++i) {
        uint4 u = make_uint4(0, 0, 0, 0);
        if (on && n > 0) u = __ldg(reinterpret_cast<const uint4*>(p) + i);
        w[4 * i] = u.x;
        w[4 * i + 1] = u.y;
        w[4 * i + 2] = u.z;
        w[4 * i + 3] = u.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kWords; ++i) w[i] = 0;
#pragma unroll
      for (int e = 0; e < kFeVec; ++e)
        if (on && e < n) w[e / kPerWord] |= fe_bits(p[e]) << (32 / kPerWord * (e % kPerWord));
    }
  }
  // Exact: every dtype value is a float.
  __device__ __forceinline__ void unpack(float (&f)[kFeVec]) const {
#pragma unroll
    for (int e = 0; e < kFeVec; ++e) {
      const uint32_t word = w[e / kPerWord];
      if constexpr (sizeof(T) == 4) {
        f[e] = __uint_as_float(word);
      } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        f[e] = __uint_as_float(e % 2 ? word & 0xFFFF0000u : word << 16);
      } else {
        f[e] = __half2float(__ushort_as_half((unsigned short)(e % 2 ? word >> 16 : word & 0xFFFFu)));
      }
    }
  }
};

// kFeVec floats rounded to a 16-bit T (from_float) and packed in order: one 16-byte vector.
template <typename T>
__device__ __forceinline__ uint4 fe_pack16(const float (&y)[kFeVec]) {
  static_assert(sizeof(T) == 2, "16-bit types");
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = fe_bits(from_float<T>(y[2 * i])) | fe_bits(from_float<T>(y[2 * i + 1])) << 16;
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Rounds y to T (from_float, as every kernel does) and writes the first n <= kFeVec elements at p
// (global or shared memory; kVector: p 16-byte aligned and n >= kFeVec).
template <typename T, bool kVector>
__device__ __forceinline__ void fe_store(T* p, const float (&y)[kFeVec], int n) {
  if constexpr (kVector && sizeof(T) == 2) {
    *reinterpret_cast<uint4*>(p) = fe_pack16<T>(y);
  } else if constexpr (kVector) {
    constexpr int kPerWord = 4 / int(sizeof(T));
    uint32_t w[kFeVec / kPerWord];
#pragma unroll
    for (int i = 0; i < kFeVec / kPerWord; ++i) {
      w[i] = 0;
#pragma unroll
      for (int e = 0; e < kPerWord; ++e)
        w[i] |= fe_bits(from_float<T>(y[kPerWord * i + e])) << (32 / kPerWord * e);
    }
#pragma unroll
    for (int i = 0; i < kFeVec / kPerWord / 4; ++i)
      reinterpret_cast<uint4*>(p)[i] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
  } else {
#pragma unroll
    for (int e = 0; e < kFeVec; ++e)
      if (e < n) p[e] = from_float<T>(y[e]);
  }
}

// Sum over aligned groups of `lanes` lanes (a power of two <= 32, uniform in the warp). Every lane
// of a group gets the same bits (each level adds the same two partial sums, in either order).
__device__ __forceinline__ float fe_lane_group_sum(float x, int lanes) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    if (offset < lanes) x += __shfl_xor_sync(0xFFFFFFFFu, x, offset);
  return x;
}

// One token of a thread's kFeVec channels (inputs xf): the conv in `conv` stepped, SiLU, and with
// `norm` the L2 norm of the row, its sum of squares summed over the row's `lanes` lanes (uniform in
// the warp, as `norm`).
__device__ __forceinline__ void fe_token(ConvChannel (&conv)[kFeVec], const float (&xf)[kFeVec], float (&y)[kFeVec],
                                         bool norm, int lanes, float eps) {
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < kFeVec; ++c) {
    y[c] = fe_silu(conv[c].step(xf[c]));
    ss = fmaf(y[c], y[c], ss);
  }
  if (norm) {
    const float inv = fe_inv_l2(fe_lane_group_sum(ss, lanes), eps);
#pragma unroll
    for (int c = 0; c < kFeVec; ++c) y[c] *= inv;
  }
}

// The conv caches of kFeVec consecutive channels, [channel][3] from `cache` on (24 contiguous
// elements, 16-byte aligned): three 16-byte-vector chunks in or out. Exact both ways (the cache
// holds dtype values). `active` false: zeros in, nothing out.
template <typename T>
__device__ __forceinline__ void fe_load_cache_vec(ConvChannel (&conv)[kFeVec], const T* cache, bool active) {
#pragma unroll
  for (int j = 0; j < kConvCache; ++j) {
    FeChunk<T, true> chunk;
    chunk.load(cache + j * kFeVec, kFeVec, active);
    float f[kFeVec];
    chunk.unpack(f);
#pragma unroll
    for (int e = 0; e < kFeVec; ++e) conv[(j * kFeVec + e) / kConvCache].hist[(j * kFeVec + e) % kConvCache] = f[e];
  }
}

// Chunk j of those caches as fe_load_cache_vec reads it: elements j kFeVec .. j kFeVec + 7 of the
// [channel][3] values.
__device__ __forceinline__ void fe_cache_chunk(const ConvChannel (&conv)[kFeVec], int j, float (&f)[kFeVec]) {
#pragma unroll
  for (int e = 0; e < kFeVec; ++e) f[e] = conv[(j * kFeVec + e) / kConvCache].hist[(j * kFeVec + e) % kConvCache];
}

template <typename T>
__device__ __forceinline__ void fe_store_cache_vec(const ConvChannel (&conv)[kFeVec], T* cache, bool active) {
  if (!active) return;
#pragma unroll
  for (int j = 0; j < kConvCache; ++j) {
    float f[kFeVec];
    fe_cache_chunk(conv, j, f);
    fe_store<T, true>(cache + j * kFeVec, f, kFeVec);
  }
}

// Tokens whose loads are in flight while one is computed: 64 bytes per thread in every dtype
// (4 tokens in bf16/fp16, 2 in fp32); the element-wise path packs its loads with extra registers
// and keeps 2.
template <typename T, bool kVector>
constexpr int kFeStep = kVector ? 64 / (kFeVec * int(sizeof(T))) : 2;

// The conv taps and biases of channels [ch, ch + kFeVec) of a [channels, 4] weight tensor (n:
// channels of the head from ch on; bias nullptr: no bias; `active` false: zeros). The 8 channels'
// 32 taps are contiguous, so they come in four 8-element loads.
template <typename T, bool kVector>
__device__ __forceinline__ void fe_load_taps(ConvChannel (&conv)[kFeVec], const T* w, const T* bias,
                                             int64_t ch, int n, bool active) {
  FeChunk<T, kVector> wc[kConvWidth], bc;
#pragma unroll
  for (int i = 0; i < kConvWidth; ++i)
    wc[i].load(w + ch * kConvWidth + i * kFeVec, kConvWidth * n - i * kFeVec, active);
  bc.load(bias ? bias + ch : nullptr, n, active && bias);
  float wf[kConvWidth][kFeVec], bf[kFeVec];
#pragma unroll
  for (int i = 0; i < kConvWidth; ++i) wc[i].unpack(wf[i]);
  bc.unpack(bf);
#pragma unroll
  for (int c = 0; c < kFeVec; ++c) {
#pragma unroll
    for (int i = 0; i < kConvWidth; ++i) {
      const int tap = c * kConvWidth + i;  // taps of the 8 channels, channel-major
      conv[c].w[i] = wf[tap / kFeVec][tap % kFeVec];
    }
    conv[c].bias = bf[c];
  }
}

// The 3 inputs before token t_first of channels [ch, ch + kFeVec) of sequence b: rows of the
// projection x [B, T, channels] where t >= 0, the conv cache [B, channels, 3] (nullptr: zeros)
// before the sequence start. x_first points at x's row t_first, channel ch; callers ask only for
// t_first < T (then every row read here exists).
template <typename T, bool kVector>
__device__ __forceinline__ void fe_load_history(ConvChannel (&conv)[kFeVec], const T* x_first, const T* cache,
                                                int64_t b, int64_t t_first, int64_t channels, int64_t ch,
                                                int n, bool active) {
#pragma unroll
  for (int i = 0; i < kConvCache; ++i) {
    const int64_t t = t_first - kConvCache + i;
    if (t >= 0) {
      FeChunk<T, kVector> hc;
      hc.load(x_first - (kConvCache - i) * channels, n, active);
      float hf[kFeVec];
      hc.unpack(hf);
#pragma unroll
      for (int c = 0; c < kFeVec; ++c) conv[c].hist[i] = hf[c];
    } else {
      const T* cp = cache ? cache + (b * channels + ch) * kConvCache + (kConvCache + t) : nullptr;
#pragma unroll
      for (int c = 0; c < kFeVec; ++c)
        conv[c].hist[i] = (cp && active && c < n) ? to_float(cp[c * kConvCache]) : 0.0f;
    }
  }
}

// One thread's run: the convolutions in `conv` (taps and history loaded) rolled over `tokens`
// consecutive tokens from x (the row of the first token at the thread's channel; rows `stride`
// elements apart), SiLU, and with `norm` the L2 norm over the head's row (eps inside the root).
// Only the first `valid` tokens are read (the rest convolve zeros); sink(i, y, i < valid) takes the
// outputs of token i < tokens in order. The ring keeps the next kFeStep tokens' loads in flight.
// `tokens`, `norm` and `lanes` must be uniform in the warp (the shuffles); `valid` and `active`
// need not be. n, active: as in FeChunk::load.
template <typename T, bool kVector, typename Sink>
__device__ __forceinline__ void fe_roll(ConvChannel (&conv)[kFeVec], const T* x, int64_t stride, int tokens,
                                        int valid, int n, bool active, bool norm, int lanes, float eps,
                                        Sink&& sink) {
  constexpr int kStep = kFeStep<T, kVector>;
  FeChunk<T, kVector> ring[kStep];  // slot r: token tt + r until it is computed, then kStep later
#pragma unroll
  for (int r = 0; r < kStep; ++r) ring[r].load(x + r * stride, n, active && r < valid);
  const T* next = x + kStep * stride;
  for (int tt = 0; tt < tokens; tt += kStep) {
#pragma unroll
    for (int r = 0; r < kStep; ++r) {
      float xf[kFeVec], y[kFeVec];
      ring[r].unpack(xf);
      ring[r].load(next, n, active && tt + r + kStep < valid);
      next += stride;
      fe_token(conv, xf, y, norm, lanes, eps);
      if (tt + r < tokens) sink(tt + r, y, tt + r < valid);
    }
  }
}
