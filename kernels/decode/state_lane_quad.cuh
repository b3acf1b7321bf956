// fused_decode's state kernels that hold a state column, or a quad of columns, in registers for
// K <= 128, all three for a float32 pool (a bf16 pool's kernels: state_split_stream.cuh):
//   gdn_decode_lane_kernel (2b): one warp per (b, hv, 32 value columns), lane j all kK rows of
//     column j: S^T k, S^T q and the update lane-local, one barrier per block.
//   gdn_decode_quad_kernel (2q): 64 < K <= 128, V % 4 == 0; a lane 4 columns x 32 rows with
//     16-byte accesses, sums across the 4 row groups by an xor butterfly.
//   gdn_decode_quad_fe_kernel (2qf): T = 1, H = HV, K = V = 128, 16-bit aligned inputs: the quad
//     update with the vector front end inside it, one launch per step.
// Arithmetic: state_tokens.cuh. Rounds: float32; o to the dtype once.
// Budget: lane kernel registers kK + ~40: 168 at kK = 128 (3 blocks of 4 warps or 6 of 2 per
// SM), 254 without spills for one-wave grids (2 blocks of 4 warps), 128 at kK = 64 (4 blocks of 4
// warps); static shared 8 x 2 x kK x 4 B of q/k rows (8 KiB at kK = 128) + W x 8 x 32 x 4 B of v
// + the gates = 10.1 KiB (W = 2) or 12.1 KiB (W = 4). Bytes in flight: 12 warps x 128 rows x
// 128 B = 192 KiB per SM with a float32 pool, against ~32 KiB that latency x bandwidth asks for.
// Quad kernel: 168 registers (6 blocks of 2 warps per SM), no spills. 2qf: 167 registers, the
// 64 KiB slice + 1.8 KiB shared: 3 blocks per SM.
// Included only by decode/launch.cu: fused_decode is one translation unit, its kernels and launchers
// in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/bulk_copy.cuh"
#include "kernels/common/ptx.cuh"
#include "kernels/decode/decode_common.cuh"
#include "kernels/decode/state_tokens.cuh"

namespace {

// The lane state update for K <= 128: one warp per slice (b, hv, 32 value columns), lane j
// owning column j0 + j with all kK rows of it in registers, so S^T k, S^T q and the update are
// lane-local: no shuffles, no shared-memory sums, no barrier after the one that publishes the
// front end's rows. A block is the W = min(4, ceil(V / 32)) warps of consecutive column groups
// of one (b, hv), which share its q and k rows. The state loads come first, one 128-byte row
// segment per warp instruction and all kK of them in flight before the first use (kK x 128 B =
// 16 KiB per warp at K = 128); with kDecodePdl they are issued before griddepcontrol.wait, while
// the front end still runs. Sums in the grouping of the block kernel's step (8 partials of kK / 8 rows,
// then those in order), its expressions for u, o and the update: the same float32 operations.
// LaneConfig: an instance's warps per block (at most: ceil(V / 32) when fewer) and the resident
// blocks per SM its register cap is set for. 12 warps per SM at kK = 128 (168 registers: the kK
// state values, the 24 partial sums of a token and addresses), 16 at kK = 64 (128 registers).
//   LaneWide (4 warps, 3 per SM): kK = 128 at T > 1 where the quad kernel does not take the grid.
//   LaneNarrow (2 warps, 6 per SM): kK = 128, float32 pool, T = 1, where the quad kernel does not
//     take the grid (V off a multiple of 4, a pool off 16 bytes). A block's registers are freed
//     when its last warp ends; half the warps share that end (the step 2-3% faster at B = 16..256,
//     H = HV = 32). At T > 1 the blocks' rows of q and
//     k, loaded by half the threads, cost more than that: 4% and 10% slower at T = 2 and 4.
//   LaneOneWave (4 warps, 2 per SM, 254 registers, no spills): kK = 128, a grid within one wave
//     of those (B x HV <= 2 x SMs at V = 128): at B = 8, H = HV = 32 with a float32 pool 12%
//     faster, where at B = 64 and 256 that cap is 13-19% slower (fewer resident warps); in 2-warp
//     blocks 3% slower at B = 8.
template <int kMaxWarps, int kBlocksPerSm>
struct LaneConfig {
  static constexpr int kWarps = kMaxWarps, kMinBlocks = kBlocksPerSm;
};
using Lane64 = LaneConfig<4, 4>;
using LaneWide = LaneConfig<4, 3>;
using LaneNarrow = LaneConfig<2, 6>;
using LaneOneWave = LaneConfig<4, 2>;
static_assert(LaneOneWave::kWarps == kDecodeOneWaveWarps && LaneOneWave::kMinBlocks == kDecodeOneWaveBlocksPerSm,
              "kernels/plans/launch_plans.h sizes the one-wave grid with these");

template <typename T, typename St, int kK, bool kFull, int kMaxWarps, int kMinBlocks>
__global__ void __launch_bounds__(kMaxWarps * 32, kMinBlocks)
gdn_decode_lane_kernel(const GdnFrontEndParams p, const float* fe) {
  __shared__ __align__(16) float qk_s[kDecodeMaxTokens][2][kK];
  __shared__ float v_s[kMaxWarps][kDecodeMaxTokens][32];
  __shared__ float gates_s[kDecodeMaxTokens][2];  // alpha = exp(g), beta

  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, warps = int(blockDim.x) / 32;
  const int K = int(s.K), V = int(s.V), nt = int(s.T);
  const uint32_t HV = uint32_t(s.HV), H = uint32_t(s.H);
  const uint32_t head = blockIdx.z * gridDim.y + blockIdx.y;  // b * HV + hv
  if (head >= uint32_t(s.B) * HV) return;  // the last z row of a grid split over y and z
  const uint32_t b = head / HV, hv = head - b * HV, h = hv / (HV / H);
  const int j0 = (int(blockIdx.x) * warps + warp) * 32, j = j0 + lane;
  const bool col_ok = j < V;

  // The slot does not depend on the front end, nor does the state: both are requested first.
  // A lane past V reads column V - 1 instead (everything a lane computes stays in that lane, and
  // it stores nothing), so that with kFull (K = kK) no load waits on a condition. The pool's
  // values load straight into S; rows past K (not kFull) are zero.
  static_assert(sizeof(St) == 4, "a float32 pool: the plan gives a bf16 pool the split and stream kernels");
  const int64_t slot = p.slots[b];
  const int64_t slice = (slot * HV + hv) * int64_t(K) * V + (col_ok ? j : V - 1);
  const float* const src = static_cast<const float*>(p.state) + slice;
  float S[kK];
#pragma unroll
  for (int i = 0; i < kK; ++i) S[i] = (kFull || i < K) ? src[i * V] : 0.0f;
  if constexpr (kDecodePdl) ptx::wait_prior_grid();  // the front end's rows

  const float* row = fe + int64_t(b) * nt * lay.row;
  for (int x = tid; x < nt * 2 * kK; x += int(blockDim.x)) {
    const int t = x / (2 * kK), tensor = x / kK % 2, i = x % kK;
    qk_s[t][tensor][i] = i < K ? row[t * lay.row + tensor * lay.qk + int64_t(h) * K + i] : 0.0f;
  }
  for (int t = 0; t < nt; ++t) v_s[warp][t][lane] = col_ok ? row[t * lay.row + 2 * lay.qk + int64_t(hv) * V + j] : 0.0f;
  if (tid < nt) {
    const float* gates = row + tid * lay.row + 2 * lay.qk + lay.v + 2 * hv;
    gates_s[tid][0] = gates[0];
    gates_s[tid][1] = gates[1];
  }
  __syncthreads();  // the only barrier: q, k and the gates are in place
  if (j0 >= V) return;  // a warp past the last column group (V not a multiple of 32 W)

  T* o = static_cast<T*>(p.o) + (int64_t(b) * nt * HV + hv) * V + j;
  decode_lane_tokens<T, kK>(S, qk_s, &v_s[warp][0][lane], 32, gates_s, nt, col_ok, o, int64_t(HV) * V, p);
  if (!col_ok) return;
  float* const dst = static_cast<float*>(p.state) + slice;
#pragma unroll
  for (int i = 0; i < kK; ++i)
    if (kFull || i < K) dst[i * V] = S[i];
}

// The quad state update (kernel 2q) for a float32 pool, 64 < K <= 128, V % 4 == 0:
// a warp takes 32 value columns, as the lane kernel does, but lane (rg, cq) = (lane / 8, lane % 8)
// holds columns 4 cq .. 4 cq + 3 of rows 32 rg .. 32 rg + 31 (128 registers, as many as a lane of
// the lane kernel): a warp's load of one row index reads four whole 128-byte rows, 32 16-byte
// loads and stores per lane where the lane kernel makes 128 4-byte ones. S^T k and S^T q are
// summed per lane over its rows (groups of 16 in order), k^T q once for the four columns, then
// across the four row groups by an xor butterfly. The q and k rows in shared memory are skewed by
// 4 floats per row group, so the groups' 16-byte reads use distinct banks. Blocks of 2 warps, 6
// per SM, as LaneNarrow. Measured on the H200 (H = HV = 32, K = V = 128): the state kernel alone
// ~6% faster than the lane kernel at B = 64; with 8 of a lane's rows requested before the wait (the
// rest after it) the step 2-4% faster at B = 32 and 64, unchanged at 256, so it takes every grid
// the one-wave kernel does not.
struct DecodeQuad {
  static constexpr int kK = 128, kGroupsR = 4, kRows = kK / kGroupsR, kSkew = kRows + 4;
  static constexpr int kWarps = 2, kMinBlocks = 6;
  // Rows of a lane's 32 whose loads are issued before griddepcontrol.wait. All 32 in flight at
  // the state blocks' start, as the lane kernel does, lengthen the front end (its dependent slot
  // and cache loads queue behind them): by 3-4 us at B = 64.
  static constexpr int kEarlyRows = 8;
};

// How many heads ahead in dispatch order a state block prefetches its successor's slice into L2
// (kernels 2qf and 2q); 0: no prefetch.
constexpr uint32_t kDecodeL2AheadHeads = 50;

// The float32 slice (K x V, contiguous) of head `ahead` into L2, unless its first block (of
// `blocks_per_head`, dispatched in grid order) is among the first wave's `first_wave` blocks,
// whose own loads start with the caller's, or it is past the last head.
__device__ __forceinline__ void decode_prefetch_slice_l2(const GdnFrontEndParams& p, uint32_t ahead,
                                                         uint32_t blocks_per_head, uint32_t first_wave) {
  const uint32_t HV = uint32_t(p.shape.HV);
  if (ahead >= uint32_t(p.shape.B) * HV || uint64_t(ahead) * blocks_per_head < first_wave) return;
  const uint32_t ab = ahead / HV;
  const int64_t elems = p.shape.K * p.shape.V;
  bulk::prefetch_l2(static_cast<const float*>(p.state) + (int64_t(p.slots[ab]) * HV + (ahead - ab * HV)) * elems,
                    uint32_t(elems * 4));
}

template <typename T, bool kFull>
__global__ void __launch_bounds__(DecodeQuad::kWarps * 32, DecodeQuad::kMinBlocks)
gdn_decode_quad_kernel(const GdnFrontEndParams p, const float* fe, uint32_t ahead_heads, uint32_t first_wave) {
  using L = DecodeQuad;
  constexpr int kK = L::kK, kRows = L::kRows, kSkew = L::kSkew;
  __shared__ __align__(16) float qk_s[kDecodeMaxTokens][2][L::kGroupsR * kSkew];
  __shared__ __align__(16) float v_s[kDecodeMaxTokens][L::kWarps * 32];
  __shared__ float gates_s[kDecodeMaxTokens][2];

  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int rg = lane / 8, cq = lane % 8;
  const int K = int(s.K), V = int(s.V), nt = int(s.T);
  const uint32_t HV = uint32_t(s.HV), H = uint32_t(s.H);
  const uint32_t head = blockIdx.z * gridDim.y + blockIdx.y;
  if (head >= uint32_t(s.B) * HV) return;
  const uint32_t b = head / HV, hv = head - b * HV, h = hv / (HV / H);
  const int j0 = int(blockIdx.x) * L::kWarps * 32, jb = warp * 32 + cq * 4, j = j0 + jb;
  const bool cols_ok = j < V;  // V % 4 == 0: a quad is wholly in or out

  const int64_t slot = p.slots[b];
  const int64_t slice = (slot * HV + hv) * int64_t(K) * V + (cols_ok ? j : V - 4);
  const float* const src = static_cast<const float*>(p.state) + slice + int64_t(rg) * kRows * V;
  // kEarlyRows of the lane's rows are requested before griddepcontrol.wait, the rest after it.
  float4 S[kRows];
#pragma unroll
  for (int r = 0; r < L::kEarlyRows; ++r)
    S[r] = (kFull || rg * kRows + r < K) ? *reinterpret_cast<const float4*>(src + int64_t(r) * V)
                                         : make_float4(0.f, 0.f, 0.f, 0.f);
  if constexpr (kDecodePdl) ptx::wait_prior_grid();
#pragma unroll
  for (int r = L::kEarlyRows; r < kRows; ++r)
    S[r] = (kFull || rg * kRows + r < K) ? *reinterpret_cast<const float4*>(src + int64_t(r) * V)
                                         : make_float4(0.f, 0.f, 0.f, 0.f);
  if (ahead_heads > 0 && tid == 32 && blockIdx.x == 0)  // warp 1: warp 0 stages first
    decode_prefetch_slice_l2(p, head + ahead_heads, gridDim.x, first_wave);

  decode_stage_rows_skewed<kK, kRows, L::kWarps * 32>(fe + int64_t(b) * nt * lay.row, lay, h, hv, j0, K, V, nt, qk_s,
                                                       v_s, gates_s);
  __syncthreads();
  if (j0 + warp * 32 >= V) return;

  T* o = static_cast<T*>(p.o) + (int64_t(b) * nt * HV + hv) * V + j;
  for (int t = 0; t < nt; ++t)
    decode_quad_token<T, kRows>(S, &qk_s[t][kFeK][rg * kSkew], &qk_s[t][kFeQ][rg * kSkew],
                                *reinterpret_cast<const float4*>(&v_s[t][jb]), gates_s[t][0], gates_s[t][1], p,
                                o + int64_t(t) * HV * V, cols_ok && rg == 0);
  if (cols_ok)
    decode_quad_store<kFull, kRows>(S, static_cast<float*>(p.state) + slice + int64_t(rg) * kRows * V, K - rg * kRows, V);
}

// Kernel 2qf: the quad update with the front end inside it, so a step is one launch:
// T = 1, H = HV, K = V = 128, a float32 pool, 16-bit inputs on 16-byte boundaries (the vector front
// end's conditions). A block of 4 warps takes one (b, h) whole, warp w the columns 32w .. 32w + 31
// as in the quad kernel, so it is the only reader and writer of its head's conv caches and waits
// for no other block. Thread 0 starts bulk copies of the 64 KiB state slice into shared memory as
// soon as the slot is known; while they land, 48 lanes run the vector front end's operations on 8
// channels each (q and k: warp 0's two halves; v: warp 1's lanes 0-15; warp 1's lane 16 the gates)
// into shared memory and roll the caches in place. The lanes then read their 32 rows from the copy
// and run the quad kernel's arithmetic (decode_quad_token): o, the state and the caches are the
// two-kernel path's bits. The copy, not registers, holds the slice while the front end runs, so
// the front end's registers and the state's are never live together (3 blocks per SM: 192 KiB of
// slices).
// Thread 64 (a lane with no front-end work) also asks L2 for the slice of the block kAheadHeads
// later in dispatch order (cp.async.bulk.prefetch.L2), unless that block is in the first wave
// (`first_wave` resident blocks), whose copy starts with this one's. A block's own copy is only
// 64 KiB and 3 are resident per SM; the prefetches put more of the state in flight. Measured on the
// H200 (H = HV = 32): 33, 50 and 66 heads ahead 2-3% faster at B = 16-256, 99 less so, 132 none,
// 264 and 396 8-30% slower (the L2 holds the prefetched slices too long); without the first-wave
// rule 66 ahead cost B = 8 up to 5%.
struct DecodeQuadFe {
  static constexpr int kK = 128, kV = 128, kGroupsR = 4, kRows = kK / kGroupsR, kSkew = kRows + 4;
  static constexpr int kWarps = 4, kMinBlocks = 3;
  static constexpr int kCopies = 4;  // bulk copies of a quarter slice each
  static constexpr uint32_t kSliceBytes = uint32_t(kK) * kV * 4;
  static constexpr uint32_t kAheadHeads = kDecodeL2AheadHeads;  // 0: no prefetch
  static constexpr int kPrefetchThread = 64;                          // warp 2's lane 0
};

template <typename T>
__global__ void __launch_bounds__(DecodeQuadFe::kWarps * 32, DecodeQuadFe::kMinBlocks)
gdn_decode_quad_fe_kernel(const GdnFrontEndParams p, uint32_t first_wave) {
  using L = DecodeQuadFe;
  constexpr int kRows = L::kRows, kSkew = L::kSkew, kQuarter = L::kK * L::kV / L::kCopies;
  extern __shared__ __align__(128) float slice_s[];  // [K][V], the slice as the pool holds it
  __shared__ __align__(16) float qk_s[2][L::kGroupsR * kSkew];
  __shared__ __align__(16) float v_s[L::kV];
  __shared__ float gates_s[2];
  __shared__ __align__(8) uint64_t bar;

  const GdnShape s = p.shape;
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int rg = lane / 8, cq = lane % 8, j = warp * 32 + cq * 4;
  const uint32_t HV = uint32_t(s.HV);
  const uint32_t head = blockIdx.z * gridDim.y + blockIdx.y;
  if (head >= uint32_t(s.B) * HV) return;  // uniform in the block
  const uint32_t b = head / HV, h = head - b * HV;  // H = HV: q, k and v head h

  // Front-end lanes: 16 per 128-channel head, kFeVec channels each.
  const bool fe_lane = warp == 0 || (warp == 1 && lane < 16), gate_lane = warp == 1 && lane == 16;
  const int tensor = warp == 0 ? (lane < 16 ? kFeQ : kFeK) : kFeV;
  const int c0 = (lane % 16) * kFeVec;
  const int64_t channels = int64_t(s.HV) * L::kK, ch = int64_t(h) * L::kK + c0;  // K = V, H = HV
  ConvChannel conv[kFeVec];
  FeChunk<T, true> xs;
  if (fe_lane) {  // the taps and x do not depend on the slot: requested before it
    fe_load_taps<T, true>(conv, static_cast<const T*>(p.conv_w[tensor]), static_cast<const T*>(p.conv_bias[tensor]),
                          ch, kFeVec, true);
    xs.load(static_cast<const T*>(p.x[tensor]) + int64_t(b) * channels + ch, kFeVec, true);
  }
  if (tid == 0) {
    bulk::mbarrier_init<1>(&bar);
    bulk::fence_mbarrier_init();
  }
  const int64_t slot = p.slots[b];
  const int64_t slice = (slot * HV + h) * int64_t(L::kK) * L::kV;
  __syncthreads();  // the barrier is initialised
  if (tid == 0) {
    bulk::arrive_expect_tx(&bar, L::kSliceBytes);
    const float* src = static_cast<const float*>(p.state) + slice;
#pragma unroll
    for (int c = 0; c < L::kCopies; ++c)
      bulk::copy(slice_s + c * kQuarter, src + c * kQuarter, L::kSliceBytes / L::kCopies, &bar);
  }
  if constexpr (L::kAheadHeads > 0)
    if (tid == L::kPrefetchThread) decode_prefetch_slice_l2(p, head + L::kAheadHeads, 1, first_wave);
  if (fe_lane) {
    T* cache = static_cast<T*>(p.cache_out[tensor]) + (slot * channels + ch) * kConvCache;
    fe_load_cache_vec<T>(conv, cache, true);
    float xf[kFeVec], y[kFeVec];
    xs.unpack(xf);
    fe_token(conv, xf, y, tensor != kFeV, 16, p.l2_eps);  // warp 0 whole in the q and k shuffles
#pragma unroll
    for (int e = 0; e < kFeVec; ++e) {
      const int i = c0 + e;
      if (tensor == kFeV) v_s[i] = y[e];
      else qk_s[tensor][i + i / kRows * 4] = y[e];
    }
    fe_store_cache_vec<T>(conv, cache, true);
  }
  if (gate_lane) {
    const float2 g = decode_gate_values<T>(p, b, 0, int(h));
    gates_s[0] = g.x;
    gates_s[1] = g.y;
  }
  __syncthreads();  // q, k, v and the gates in place
  bulk::wait(&bar, 0);

  float4 S[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) S[r] = *reinterpret_cast<const float4*>(&slice_s[(rg * kRows + r) * L::kV + j]);
  T* o = static_cast<T*>(p.o) + int64_t(head) * L::kV + j;
  decode_quad_token<T, kRows>(S, &qk_s[kFeK][rg * kSkew], &qk_s[kFeQ][rg * kSkew],
                              *reinterpret_cast<const float4*>(&v_s[j]), gates_s[0], gates_s[1], p, o, rg == 0);
  decode_quad_store<true, kRows>(S, static_cast<float*>(p.state) + slice + int64_t(rg) * kRows * L::kV + j, L::kK,
                                 L::kV);
}

}  // namespace
