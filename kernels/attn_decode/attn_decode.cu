// attn_decode: one query per (sequence, head) against a KV cache, split over the keys
// (flash-decoding). Keys and values cover L = context + 1 positions: the context cached ones and
// the new token's own (position context), so o = softmax_j(scale q . k_j) v_j over all L.
// Variants: attn_flash tiles queries for prefill; with one query there is nothing to tile and the
// work is reading K and V once, so this kernel is written for bandwidth:
//   1 split kernel, grid (splits, B * H), 128 threads: block (s, bh) takes keys
//     [s * per_split, (s + 1) * per_split). D / 8 lanes share a key row, each holding 8 dims, and
//     read it with one 16-byte load (ld.global.nc, no L1 allocation: every byte is read once);
//     a group issues the loads of 4 keys (K and V) before using any, so 8 x 16 B per thread are
//     in flight. Per 4 keys a group keeps a running max m, sum l and o (float32, log2 units: q is
//     prescaled by scale log2 e); the groups of the block are merged through shared memory and
//     the block writes its partial (m, l, unnormalised o) to the workspace.
//   2 combine kernel, grid B * H, D threads: o = sum_s 2^(m_s - M) o_s / sum_s 2^(m_s - M) l_s.
//   With one split the split kernel writes o itself and the combine is not launched.
// Split count (attn_decode_num_splits): about four waves of 8 blocks per SM over B * H * splits,
// at least 256 keys per split; on 132 SMs B = 1, H = 32, L = 128K gives 132 splits of ~1K keys,
// B = 64, H = 32, L = 8K gives 3 splits of ~2.7K keys (6144 blocks).
// Constraints: D in {64, 128, 256} (K = V), bf16 or fp16, any L >= 1 (T = 1, context >= 0).
// Rounds: products and sums in float32 (dot products of 8 dims per lane, then a shuffle tree);
// exp2 is ex2.approx; o rounded once to the dtype.
// Budget: registers ~ q 8 + o 8 + 4 x (K 4 + V 4) words in flight, capped at 64 (8 blocks of
// 128 threads per SM: 8 x 16 B x 1024 threads = 128 KiB of loads in flight per SM; ptxas: 64,
// no spills; combine 32); shared memory per block
// (128 / (D / 8)) x (D + 2) x 4 B = 4.1 KiB at every D.
// Workspace: B H splits (D + 2) x 4 B (0 with one split).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_kernels.h"
#include "kernels/common/ptx.cuh"

namespace {

constexpr int kThreads = 128;
constexpr int kBlocksPerSm = 8;        // 64 registers per thread (launch bounds): 32 warps per SM
constexpr int kUnroll = 4;             // keys per group between online-softmax updates
constexpr int64_t kMinKeysPerSplit = 256;
constexpr int64_t kMaxSplits = 1024;
constexpr float kLog2e = 1.4426950408889634f;

using ptx::fast_exp2;
using ptx::load_stream;

template <typename T>
__device__ __forceinline__ void unpack8(const uint4& u, float x[8]);
template <>
__device__ __forceinline__ void unpack8<__nv_bfloat16>(const uint4& u, float x[8]) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[i]));
    x[2 * i] = f.x;
    x[2 * i + 1] = f.y;
  }
}
template <>
__device__ __forceinline__ void unpack8<__half>(const uint4& u, float x[8]) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
    x[2 * i] = f.x;
    x[2 * i + 1] = f.y;
  }
}

struct DecodeArgs {
  const void* q;        // [B, H, D]
  const void* k_new;    // [B, H, D]: the key at position context
  const void* v_new;    // [B, H, D]
  const void* k_cache;  // [B, context, H, D]
  const void* v_cache;  // [B, context, H, D]
  void* o;              // [B, H, D]
  float* ws_o;          // [B * H, splits, D]
  float2* ws_ml;        // [B * H, splits]: (m, l)
  int64_t context, per_split;
  int H;
  float scale_log2;
};

template <typename T, int D>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) attn_decode_split_kernel(const DecodeArgs a) {
  constexpr int kLanes = D / 8;               // lanes per key row
  constexpr int kGroups = kThreads / kLanes;  // keys read side by side
  __shared__ float s_o[kGroups][D];
  __shared__ float s_m[kGroups], s_l[kGroups];

  const int tid = int(threadIdx.x), grp = tid / kLanes, sub = tid % kLanes;
  const int split = int(blockIdx.x), splits = int(gridDim.x);
  const int64_t bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
  const int64_t L = a.context + 1;
  const int64_t j0 = int64_t(split) * a.per_split;
  const int64_t j1 = j0 + a.per_split < L ? j0 + a.per_split : L;
  const int64_t head_stride = int64_t(a.H) * D;  // between positions in the cache
  const T* kc = static_cast<const T*>(a.k_cache) + (b * a.context * a.H + h) * D + sub * 8;
  const T* vc = static_cast<const T*>(a.v_cache) + (b * a.context * a.H + h) * D + sub * 8;
  const T* kn = static_cast<const T*>(a.k_new) + bh * D + sub * 8;
  const T* vn = static_cast<const T*>(a.v_new) + bh * D + sub * 8;

  float qf[8];
  unpack8<T>(load_stream(static_cast<const T*>(a.q) + bh * D + sub * 8), qf);
#pragma unroll
  for (int i = 0; i < 8; ++i) qf[i] *= a.scale_log2;

  float m = -INFINITY, l = 0.0f, acc[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] = 0.0f;

  // The loop runs while the warp's first group has keys, so every lane of a warp takes part in the
  // shuffles; a later group of the warp past the end masks all of its keys.
  const int warp_grp0 = (tid / 32) * (32 / kLanes);
  for (int64_t wbase = j0 + int64_t(warp_grp0) * kUnroll; wbase < j1; wbase += int64_t(kGroups) * kUnroll) {
    const int64_t base = wbase + int64_t(grp - warp_grp0) * kUnroll;
    uint4 kr[kUnroll], vr[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = base + u < j1 ? base + u : j1 - 1;  // a valid row; its score is masked below
      const bool cached = j < a.context;
      kr[u] = load_stream(cached ? kc + j * head_stride : kn);
      vr[u] = load_stream(cached ? vc + j * head_stride : vn);
    }
    float s[kUnroll];
    float mx = m;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float kf[8];
      unpack8<T>(kr[u], kf);
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot = fmaf(qf[i], kf[i], dot);
      dot = group_sum<kLanes>(dot);
      s[u] = base + u < j1 ? dot : -INFINITY;
      mx = fmaxf(mx, s[u]);
    }
    const float m_use = mx == -INFINITY ? 0.0f : mx;  // no key yet: weights 0, never NaN
    const float corr = fast_exp2(m - m_use);
    m = mx;
    l *= corr;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] *= corr;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const float p = fast_exp2(s[u] - m_use);
      l += p;
      float vf[8];
      unpack8<T>(vr[u], vf);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = fmaf(p, vf[i], acc[i]);
    }
  }

  // Merge the groups; a group that saw no key has m = -inf, l = 0 and weight 0.
  if (sub == 0) {
    s_m[grp] = m;
    s_l[grp] = l;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) s_o[grp][sub * 8 + i] = acc[i];
  __syncthreads();
  float M = -INFINITY;
#pragma unroll
  for (int gi = 0; gi < kGroups; ++gi) M = fmaxf(M, s_m[gi]);
  const float m_use = M == -INFINITY ? 0.0f : M;  // an empty split: every weight 0, never NaN
  float lsum = 0.0f;
#pragma unroll
  for (int gi = 0; gi < kGroups; ++gi) lsum += fast_exp2(s_m[gi] - m_use) * s_l[gi];
  for (int d = tid; d < D; d += kThreads) {
    float od = 0.0f;
#pragma unroll
    for (int gi = 0; gi < kGroups; ++gi) od += fast_exp2(s_m[gi] - m_use) * s_o[gi][d];
    if (splits == 1) {
      static_cast<T*>(a.o)[bh * D + d] = from_float<T>(od / lsum);
    } else {
      a.ws_o[(bh * splits + split) * D + d] = od;
    }
  }
  if (splits > 1 && tid == 0) a.ws_ml[bh * splits + split] = make_float2(M, lsum);
}

// grid B * H, D threads: merges the splits' partials of one (b, h).
template <typename T>
__global__ void attn_decode_combine_kernel(const float* __restrict__ ws_o, const float2* __restrict__ ws_ml,
                                           T* __restrict__ o, int splits) {
  const int64_t bh = blockIdx.x;
  const int d = int(threadIdx.x), D = int(blockDim.x);
  const float2* ml = ws_ml + bh * splits;
  float M = -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, ml[s].x);  // finite: split 0 holds key 0
  float lsum = 0.0f, od = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float2 x = ml[s];
    const float w = exp2f(x.x - M);
    lsum += w * x.y;
    od += w * ws_o[(bh * splits + s) * D + d];
  }
  o[bh * D + d] = from_float<T>(od / lsum);
}

template <typename T, int D>
int launch_typed(const AttnDecodeParams& p, void* workspace, cudaStream_t stream) {
  const int64_t L = p.context + 1;
  const int splits = p.num_splits;
  DecodeArgs a;
  a.q = p.q;
  a.k_new = p.k;
  a.v_new = p.v;
  a.k_cache = p.k_cache;
  a.v_cache = p.v_cache;
  a.o = p.o;
  a.ws_o = static_cast<float*>(workspace);
  a.ws_ml = reinterpret_cast<float2*>(a.ws_o + size_t(p.B * p.H) * size_t(splits) * D);
  a.context = p.context;
  a.per_split = (L + splits - 1) / splits;
  a.H = int(p.H);
  a.scale_log2 = p.scale * kLog2e;
  attn_decode_split_kernel<T, D><<<dim3(unsigned(splits), unsigned(p.B * p.H)), kThreads, 0, stream>>>(a);
  cudaError_t st = cudaGetLastError();
  if (st != cudaSuccess || splits == 1) return int(st);
  attn_decode_combine_kernel<T><<<unsigned(p.B * p.H), D, 0, stream>>>(a.ws_o, a.ws_ml, static_cast<T*>(p.o), splits);
  return int(cudaGetLastError());
}

template <typename T>
int launch_dtype(const AttnDecodeParams& p, void* workspace, cudaStream_t stream) {
  switch (p.D) {
    case 64: return launch_typed<T, 64>(p, workspace, stream);
    case 128: return launch_typed<T, 128>(p, workspace, stream);
    case 256: return launch_typed<T, 256>(p, workspace, stream);
  }
  return int(cudaErrorInvalidValue);
}

}  // namespace

const char* attn_decode_shape_unsupported(const AttnDecodeParams& p) {
  if (p.dtype == DType::f32) return "fp32 inputs are not run (bf16/fp16 only)";
  if (p.D != 64 && p.D != 128 && p.D != 256) return "K = V must be 64, 128 or 256";
  if (p.B * p.H > 65535) return "B * H must be <= 65535";
  if (p.context < 0) return "context must not be negative";
  return nullptr;
}

int attn_decode_num_splits(int64_t B, int64_t H, int64_t L, int sm_count) {
  // The plan (kernels/plans/launch_plans.h) holds the rule, with this file's constants.
  static_assert(kBlocksPerSm == 8 && kMinKeysPerSplit == 256 && kMaxSplits == 1024, "attn_decode_splits's constants");
  return int(attn_decode_splits(B, H, L, sm_count));
}

size_t attn_decode_workspace_bytes(const AttnDecodeParams& p) {
  if (p.num_splits <= 1) return 0;
  return size_t(p.B * p.H) * size_t(p.num_splits) * (size_t(p.D) * 4 + 8);
}

int launch_attn_decode(const AttnDecodeParams& p, void* workspace, cudaStream_t stream) {
  if (attn_decode_shape_unsupported(p) || p.num_splits < 1 || p.num_splits > kMaxSplits)
    return int(cudaErrorInvalidValue);
  if (p.num_splits > 1 && workspace == nullptr) return int(cudaErrorInvalidValue);
  return p.dtype == DType::bf16 ? launch_dtype<__nv_bfloat16>(p, workspace, stream)
                                : launch_dtype<__half>(p, workspace, stream);
}
