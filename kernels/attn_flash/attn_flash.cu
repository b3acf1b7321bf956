// attn_flash: causal softmax attention, FlashAttention-2 forward on tensor cores.
//   o_i = sum_j softmax_j(scale q_i . k_j, j <= i) v_j, without the T x T scores in memory:
//   per query row a running max m and sum l (float32), and per key tile
//     s = (scale log2 e) Q K^T;  m' = max(m, rowmax s);  p = 2^(s - m');  c = 2^(m - m')
//     l = c l + rowsum p;  O = c O + P V;      at the end o = O / l.
// Variants: attn_naive (cuBLAS, T x T materialised) is the quadratic-memory baseline; this one is
// the IO-aware kernel: one block per 128-query tile of one (b, h), K/V tiles of 64 keys streamed
// through shared memory with cp.async double buffering (tile n+1 in flight during tile n), both
// products on mma.sync m16n8k16 (bf16/fp16 operands, float32 accumulation), P kept in registers:
// the S accumulator fragment of two adjacent 8-key tiles is exactly the A fragment of the P V
// product, so P is rounded to the dtype and fed back without touching shared memory.
// Causal skipping: key tiles past the last row of a query tile are never loaded; they are visited
// from the diagonal down, so only the first one or two (the diagonal ones) are masked, and a warp
// whose 16 or 32 rows all precede a tile skips its products. Query tiles are scheduled heaviest
// first (blockIdx.y counts down from the last tile), so the long diagonal-rich blocks start early
// and the short ones fill the tail.
// Constraints: D = Dv in {64, 128, 256}, bf16 or fp16, causal, any T >= 1 (the tail query and key
// rows are zero-filled in shared memory by cp.async's src-size 0, and rows >= T are not stored).
// Rounds: P to the dtype before P V (as FlashAttention does); the row sum l uses the unrounded
// float32 p; o rounded once to the dtype. exp2 is ex2.approx (rel. error ~2^-22).
// Budget, Br = 128 query rows, Bc = 64 keys, 16-bit elements:
//   D = 64, 128: 4 warps, each 32 rows (two m16 tiles share every K and V fragment, halving the
//     ldmatrix traffic per mma). Shared: Q 128 x D + 2 stages x (K + V) 64 x D = 384 D x 2 B
//     = 48 KiB (D = 64), 96 KiB (D = 128): two blocks per SM. Registers at D = 128: O 2 x 16 x 4
//     = 128 floats, S 2 x 8 x 4 = 64, fragments ~16.
//   D = 256: 8 warps of 16 rows (O alone is 128 floats per thread). Shared: 192 KiB, one block.
//   ptxas (sm_90a): 230 / 255 / 244 registers at D = 64 / 128 / 256, no spills, no stack; the
//   k-step loop of Q K^T stays rolled to keep it so at D = 128.
// Shared layout: rows of D elements, 16-byte chunk c of row r stored at chunk c ^ (r & 7): the 8
// rows of an ldmatrix phase and the 8 chunks of a cp.async phase hit 8 distinct bank groups.
// The output is staged through the warp's own Q rows (read only by that warp) and written back as
// 16-byte row segments.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/cuda_kernels.h"
#include "kernels/common/ptx.cuh"
#include "kernels/common/tensor_core.cuh"

namespace {

using ptx::fast_exp2;
using tc::ldsm_x4;
using tc::ldsm_x4_trans;
using tc::Mma;

constexpr int kBlockM = 128;  // query rows per block
constexpr int kBlockN = 64;   // keys per tile
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct FlashConfig {
  static constexpr int kWarps = D == 256 ? 8 : 4;
  static constexpr int kMTiles = kBlockM / (16 * kWarps);  // m16 tiles per warp
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kMinBlocks = D == 256 ? 1 : 2;
  static constexpr size_t kSmemBytes = size_t(kBlockM + 4 * kBlockN) * D * 2;
};

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of D-element rows.
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// Byte offset of chunk 2 kk + x of a row whose swizzled chunk-x offset is `lane_off` (row * D * 2
// + ((x ^ (row & 7)) << 4)): the row's bits 4..6 hold the swizzle, so chunk 2 kk moves them by an
// XOR with a constant and the chunks past 8 by a constant add. Keeps one address register per
// operand instead of one per (kk, tile).
__device__ __forceinline__ uint32_t chunk_pair(uint32_t lane_off, int kk) {
  return (lane_off ^ uint32_t((kk & 3) << 5)) + uint32_t((kk >> 2) << 7);
}

// Rows [0, kRows) of a tile whose row 0 is at `src` (rows `stride` elements apart) into swizzled
// shared memory; rows >= valid are zero-filled.
// Thread i copies chunk i % (D / 8) of rows i / (D / 8) + n * kRowsPerPass: a multiple of 8 rows
// apart, so its swizzled chunk is the same in every row it copies.
template <typename T, int D, int kRows, int kThreads>
__device__ __forceinline__ void load_tile(uint32_t dst, const T* src, int64_t stride, int valid) {
  constexpr int kChunks = D / 8;
  constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && kRowsPerPass % 8 == 0 && kRows % kRowsPerPass == 0,
                "tile rows must divide over the block in multiples of 8");
  const int r0 = int(threadIdx.x) / kChunks, c = int(threadIdx.x) % kChunks;
  const T* p = src + r0 * stride + c * 8;
  const uint32_t d = dst + uint32_t(swz<D>(r0, c)) * 2;
#pragma unroll
  for (int i = 0; i < kRows / kRowsPerPass; ++i) {
    const bool ok = r0 + i * kRowsPerPass < valid;
    tc::cp_async16(d + uint32_t(i * kRowsPerPass * D * 2), ok ? p : src, ok);
    p += kRowsPerPass * stride;
  }
}

// grid (B * H, ceil(T / 128)); blockIdx.y = 0 is the last (heaviest) query tile.
template <typename T, int D, bool kCausal>
__global__ void __launch_bounds__(FlashConfig<D>::kThreads, FlashConfig<D>::kMinBlocks)
attn_flash_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                  T* __restrict__ o, int64_t T_len, int H, float scale_log2) {
  using Cfg = FlashConfig<D>;
  constexpr int kM = Cfg::kMTiles;
  constexpr int kNT = kBlockN / 8;  // 8-key accumulator tiles of S
  constexpr int kDT = D / 8;        // 8-column accumulator tiles of O
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  const uint32_t aQ = uint32_t(__cvta_generic_to_shared(smem_raw));
  const uint32_t aK = aQ + kBlockM * D * 2;   // [2][kBlockN][D]
  const uint32_t aV = aK + 2 * kBlockN * D * 2;  // [2][kBlockN][D]
  constexpr uint32_t kStageBytes = kBlockN * D * 2;

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int g = lane / 4, t2 = 2 * (lane % 4);
  const int64_t b = blockIdx.x / H, h = blockIdx.x % H;
  const int64_t m0 = int64_t(gridDim.y - 1 - blockIdx.y) * kBlockM;
  const int64_t stride = int64_t(H) * D;  // between consecutive tokens of one head
  const int64_t head0 = (b * T_len * H + h) * D;  // token 0 of (b, h)
  const int wr0 = warp * 16 * kM;                 // first row of this warp inside the tile

  const int64_t rows_end = kCausal ? (m0 + kBlockM < T_len ? m0 + kBlockM : T_len) : T_len;
  const int n_tiles = int((rows_end + kBlockN - 1) / kBlockN);
  const int q_valid = int(T_len - m0 < kBlockM ? T_len - m0 : kBlockM);

  auto load_kv = [&](int n, int stage) {
    const int64_t k0 = int64_t(n) * kBlockN;
    const int valid = int(T_len - k0 < kBlockN ? T_len - k0 : kBlockN);
    load_tile<T, D, kBlockN, Cfg::kThreads>(aK + stage * kStageBytes, k + head0 + k0 * stride, stride, valid);
    load_tile<T, D, kBlockN, Cfg::kThreads>(aV + stage * kStageBytes, v + head0 + k0 * stride, stride, valid);
  };
  load_tile<T, D, kBlockM, Cfg::kThreads>(aQ, q + head0 + m0 * stride, stride, q_valid);
  load_kv(n_tiles - 1, 0);
  tc::cp_async_commit();

  // Per-lane ldmatrix offsets (chunk pair 0; chunk_pair moves to pair kk). Q, A operand: matrices
  // (rows 0-7 | 8-15) x (chunk lo | hi). K, B operand of S: (keys 0-7, lo), (0-7, hi), (8-15, lo),
  // (8-15, hi) = b0 b1 of key tile 0, b0 b1 of key tile 1. V, B operand of P V through .trans:
  // (keys 0-7, dims lo), (keys 8-15, lo), (0-7, hi), (8-15, hi) = b0 b1 of dim tile 0, then 1.
  const int l7 = lane & 7, l8 = (lane >> 3) & 1, l16 = lane >> 4;
  const uint32_t off_q = uint32_t((wr0 + l7 + 8 * l8) * D * 2 + ((l16 ^ l7) << 4));
  const uint32_t off_k = uint32_t((l7 + 8 * l16) * D * 2 + ((l8 ^ l7) << 4));
  const uint32_t off_v = uint32_t((l7 + 8 * l8) * D * 2 + ((l16 ^ l7) << 4));

  float acc[kM][kDT][4];
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int j = 0; j < kDT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][j][e] = 0.0f;
  float row_max[kM][2], row_sum[kM][2];
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      row_max[mi][hr] = -INFINITY;
      row_sum[mi][hr] = 0.0f;
    }

  for (int it = 0; it < n_tiles; ++it) {
    const int n = n_tiles - 1 - it, stage = it & 1;
    if (it + 1 < n_tiles) {
      load_kv(n - 1, stage ^ 1);  // that stage was released by the barrier ending iteration it-1
      tc::cp_async_commit();
      tc::cp_async_wait<1>();
    } else {
      tc::cp_async_wait<0>();
    }
    __syncthreads();

    const int64_t k0 = int64_t(n) * kBlockN;
    const int64_t warp_last_row = m0 + wr0 + 16 * kM - 1;
    if (!kCausal || k0 <= warp_last_row) {
      const uint32_t tK = aK + stage * kStageBytes, tV = aV + stage * kStageBytes;
      // S = Q K^T: A fragments of Q by ldmatrix, B fragments of two 8-key tiles per ldmatrix.x4.
      float s[kM][kNT][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int j = 0; j < kNT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mi][j][e] = 0.0f;
      // kk only moves addresses (the accumulators are indexed by mi, np), so the loop stays
      // rolled: unrolled, ptxas hoists fragments of later steps and spills at D = 128.
#pragma unroll 1
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t a[kM][4];
#pragma unroll
        for (int mi = 0; mi < kM; ++mi)
          ldsm_x4(a[mi], aQ + mi * 16 * D * 2 + chunk_pair(off_q, kk));
#pragma unroll
        for (int np = 0; np < kBlockN / 16; ++np) {
          uint32_t bk[4];
          ldsm_x4(bk, tK + np * 16 * D * 2 + chunk_pair(off_k, kk));
#pragma unroll
          for (int mi = 0; mi < kM; ++mi) {
            Mma<T>::run(s[mi][2 * np], a[mi], bk);
            Mma<T>::run(s[mi][2 * np + 1], a[mi], bk + 2);
          }
        }
      }

      // Online softmax, in log2 units; -inf for masked keys.
      // Causal: key k0 + c is masked for row m0 + r when c - r > m0 - k0 (in [-64, 128]).
      // Otherwise: keys c >= T - k0 (a tail tile) are masked.
      const bool masked = kCausal ? k0 + kBlockN - 1 > m0 + wr0 : k0 + kBlockN > T_len;
      const int lim = kCausal ? int(m0 - k0) : int(T_len - k0 < kBlockN ? T_len - k0 : kBlockN);
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int row = wr0 + mi * 16 + g + 8 * hr;
          float mx = row_max[mi][hr];
#pragma unroll
          for (int j = 0; j < kNT; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float x = s[mi][j][2 * hr + e] * scale_log2;
              if (masked) {
                const int col = j * 8 + t2 + e;
                if (kCausal ? col - row > lim : col >= lim) x = -INFINITY;
              }
              s[mi][j][2 * hr + e] = x;
              mx = fmaxf(mx, x);
            }
          mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 2));
          // A row with every key so far masked keeps m = -inf; 0 stands in so 2^(-inf - m) is 0,
          // never NaN.
          const float m_use = mx == -INFINITY ? 0.0f : mx;
          const float corr = fast_exp2(row_max[mi][hr] - m_use);
          row_max[mi][hr] = mx;
          float sum = 0.0f;
#pragma unroll
          for (int j = 0; j < kNT; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float p = fast_exp2(s[mi][j][2 * hr + e] - m_use);
              s[mi][j][2 * hr + e] = p;
              sum += p;
            }
          row_sum[mi][hr] = row_sum[mi][hr] * corr + sum;
#pragma unroll
          for (int j = 0; j < kDT; ++j) {
            acc[mi][j][2 * hr] *= corr;
            acc[mi][j][2 * hr + 1] *= corr;
          }
        }

      // O += P V: the S fragments of 8-key tiles 2kk, 2kk+1 are the A fragment of k-step kk.
      // All of P is packed first, so its float32 registers are free during the product.
      uint32_t pa[kBlockN / 16][kM][4];
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk)
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          pa[kk][mi][0] = Mma<T>::pack(s[mi][2 * kk][0], s[mi][2 * kk][1]);
          pa[kk][mi][1] = Mma<T>::pack(s[mi][2 * kk][2], s[mi][2 * kk][3]);
          pa[kk][mi][2] = Mma<T>::pack(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
          pa[kk][mi][3] = Mma<T>::pack(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
        }
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t bv[4];
          ldsm_x4_trans(bv, tV + kk * 16 * D * 2 + chunk_pair(off_v, dp));
#pragma unroll
          for (int mi = 0; mi < kM; ++mi) {
            Mma<T>::run(acc[mi][2 * dp], pa[kk][mi], bv);
            Mma<T>::run(acc[mi][2 * dp + 1], pa[kk][mi], bv + 2);
          }
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }

  // o = O / l, staged in this warp's own Q rows, then 16-byte stores of the rows < T.
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float l = row_sum[mi][hr];
      l += __shfl_xor_sync(0xFFFFFFFFu, l, 1);
      l += __shfl_xor_sync(0xFFFFFFFFu, l, 2);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const int r = wr0 + mi * 16 + g + 8 * hr;
#pragma unroll
      for (int j = 0; j < kDT; ++j)
        *reinterpret_cast<uint32_t*>(sQ + swz<D>(r, j) + t2) =
            Mma<T>::pack(acc[mi][j][2 * hr] * inv, acc[mi][j][2 * hr + 1] * inv);
    }
  __syncwarp();
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = lane; i < 16 * kM * kChunks; i += 32) {
    const int r = wr0 + i / kChunks, c = i % kChunks;
    const int64_t row = m0 + r;
    if (row < T_len)
      *reinterpret_cast<uint4*>(o + head0 + row * stride + c * 8) =
          *reinterpret_cast<const uint4*>(sQ + swz<D>(r, c));
  }
}

template <typename T, int D>
int launch_typed(const AttnParams& p, cudaStream_t stream) {
  using Cfg = FlashConfig<D>;
  auto kernel = attn_flash_kernel<T, D, true>;
  cudaError_t st = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Cfg::kSmemBytes));
  if (st != cudaSuccess) return int(st);
  const dim3 grid(unsigned(p.B * p.H), unsigned((p.T + kBlockM - 1) / kBlockM));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v),
      static_cast<T*>(p.o), p.T, int(p.H), p.scale * kLog2e);
  return int(cudaGetLastError());
}

template <typename T>
int launch_dtype(const AttnParams& p, cudaStream_t stream) {
  switch (p.D) {
    case 64: return launch_typed<T, 64>(p, stream);
    case 128: return launch_typed<T, 128>(p, stream);
    case 256: return launch_typed<T, 256>(p, stream);
  }
  return int(cudaErrorInvalidValue);
}

}  // namespace

const char* attn_flash_shape_unsupported(const AttnParams& p) {
  if (p.dtype == DType::f32) return "fp32 inputs are not run (bf16/fp16 tensor-core operands only)";
  if (p.D != p.Dv) return "K and V must be equal";
  if (p.D != 64 && p.D != 128 && p.D != 256) return "K = V must be 64, 128 or 256";
  if (!p.causal) return "only causal attention is instantiated";
  if (p.T > int64_t(65535) * kBlockM) return "T must be <= 8388480 (65535 query tiles)";
  if (p.B * p.H > 2147483647) return "B * H must fit in a grid dimension";
  return nullptr;
}

int launch_attn_flash(const AttnParams& p, cudaStream_t stream) {
  if (attn_flash_shape_unsupported(p)) return int(cudaErrorInvalidValue);
  return p.dtype == DType::bf16 ? launch_dtype<__nv_bfloat16>(p, stream) : launch_dtype<__half>(p, stream);
}
