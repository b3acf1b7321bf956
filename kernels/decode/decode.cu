// fused_decode: T <= 8 new tokens per sequence (T = 1 is the serving case), in place:
//   conv caches rolled, q, k = l2norm(SiLU(conv4(x))), v = SiLU(conv4(x_v)),
//   g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)        (kernels/frontend/frontend.cuh)
//   S' = exp(g) S;  u = beta (v - S'^T k);  S = S' + k u^T;  o = scale S^T q   per token
// The state and the conv caches live in pools addressed through slots[b] (continuous batching:
// a batch row names its sequence's slot in a larger pool); both are updated in place.
// Version 1 (0.153 ms at B=64 H=HV=32 K=V=128 fp32 state, docs/perf-notes.md) and version 2
// (0.144 ms: the state slice copied with cp.async before the front end) ran the front end inside
// the state-update blocks: every one of the V/32 column blocks of a (b, h) group convolved and
// normalised the same q and k channels, on the block's critical path, and the in-place q/k cache
// update needed a per-(b, h) arrival counter. ncu showed the block time set by that front end.
// Version 3: two kernels (0.121 ms). Version 4: version 3 with front-end blocks of
// round_up(max(K, V), 32) threads instead of 256 (0.114 ms; 23.3 -> 15.7 us for the front end at
// B = 64). A state kernel that walked several slices per block through two cp.async stages was
// measured too: 4-5% faster with a float32 pool at B >= 64, 9-21% slower with a bf16 pool, 12%
// slower at B = 1 (docs/perf-notes.md, fused_decode version 4), so the state kernel stays one
// slice per block.
// Version 5 (0.096 ms at B = 64, H = HV = 32, K = V = 128, float32 pool; run 24 in
// docs/perf-notes.md): for K <= 128 a new state kernel, "lane owns a column"
// (kernel 2b below): version 4's state kernel spent its slice time in three block barriers and
// cross-warp shared-memory sums per token, not in the copy, so 8 warps per 16 KiB slice left DRAM
// at 55%. Now one warp per slice holds all K rows of its 32 columns, lane j the whole column j in
// registers, and S^T k, S^T q and the update are lane-local: one barrier per block (publishing
// q, k, v and the gates), none per token. The state loads (K per lane, each a 128-byte row segment
// per warp, all in flight before the first use) are issued before griddepcontrol.wait, so with
// Programmatic Dependent Launch (kDecodePdl) they overlap the front end's last wave. K = 256 keeps
// version 4's block kernel (256 state registers per lane would not fit).
// Version 7 (0.090 ms at that shape against version 5's 0.095 in the same run, bf16 pool 0.066
// against 0.074; runs 32-33): version 5 with a front end that takes 4 batch rows per block at
// T = 1 when one row per block would need more than two waves of blocks (at B = 64: 1536 blocks
// instead of 6144; the front-end kernel alone 15.9 -> 12.4 us by ncu). Per row the same
// operations in the same order, so q, k, v and the gates are version 5's by construction.
// Version 8 (runs 35-44): a bf16 pool takes one of two new state kernels, 2c (split
// columns) below 4 slices per SM and 2d (a persistent stream of bulk copies) from there: bf16
// pool 0.0159 -> 0.0148 ms at B = 8, 0.0261 -> 0.0238 at B = 16, 0.0667 -> 0.0643 at B = 64,
// 0.238 -> 0.207 at B = 256 (H = HV = 32, K = V = 128). The float32 pool stays on version 5's
// kernel, which both new ones are slower than (by 1-11%), capped for 2 blocks per SM instead of
// 3 where its grid fits one wave of those: 0.0195 -> 0.0171 ms at B = 8 (runs 42-43). Its state
// kernel takes 77.5 us at B = 64 against 66.9 us for an in-place update of the same 134 MB with
// one 16-byte access per thread (run 37).
// Version 9 (runs 64-66): at T = 1 the float32 pool's lane kernel at K = 128 in blocks
// of 2 warps, 6 per SM, instead of 4 warps, 3 per SM (the same warps per SM): its state kernel
// 77.9 -> 74.7 us at B = 64, the step 0.0896 -> 0.0871 ms; one-wave grids and T > 1 keep 4-warp
// blocks.
// Version 10, this one (runs 70-72): the front end for bf16 and fp16 inputs with K and V multiples
// of 8 (kernel 1v): a thread takes 8 channels of one row with 16-byte accesses, where kernel 1 took
// one channel with 2-byte ones; at B = 64 the front-end kernel 12.3 -> 9.6 us by ncu, the step
// (float32 pool) 0.0872 -> 0.0855 ms, -6% at B = 16 and 32, -3.6% at 256, -6 to -10% at T = 2..4.
// Kernel 1 stays for float32 inputs, T > 4, small grids and other K, V (measured slower there).
// Version 11 (runs 75-77): kernel 1v with whole-sector stores from 2 blocks per SM on (each warp
// stages its 16-byte pieces of rows and caches in dynamic shared memory, then stores them in
// lane order): the front-end kernel 9.2 -> 7.0 us at B = 64, the step (float32 pool) 0.0854 ->
// 0.0833 ms, bf16 pool 0.0631 -> 0.0602.
// Version 12 (runs 78-82): a float32 pool's state at 64 < K <= 128 takes the quad kernel (2q:
// 16-byte accesses, a lane 4 columns x 32 rows) at T > 1 and up to 8 slices per SM, where the
// step measured 2-6% faster; a bf16 pool's stream kernel is launched as the front end's blocks
// exit from 8 slices per SM (B = 64: 0.0600 -> 0.0574 ms).
// Version 13 (runs 83-85): the quad kernel requests 8 of a lane's 32 rows before
// griddepcontrol.wait, the rest after, and takes every float32-pool grid at 64 < K <= 128 outside
// one wave (V % 4 == 0): B = 64 0.0832 -> 0.0816 ms, B = 32 -4%.
// Version 14 (runs 91-92): at T = 1, H = HV, K = V = 128 with 16-bit inputs the quad update runs
// the front end itself (2qf), one launch a step, at every B: B = 64 0.0794-0.0798 -> 0.0784 ms,
// B = 16 -6%, B = 32 -4.5%, B = 256 -0.5%; in one-wave grids too, where the lane kernel took
// them: B = 1 0.0107 -> 0.0081, B = 8 0.0169 -> 0.0144.
// Version 15 (runs 102-103): 2qf's blocks each ask L2 for the slice of the block 50 later in
// dispatch order (past the first wave), so more of the state is in flight than the resident
// blocks' copies: B = 64 0.0783-0.0788 -> 0.0760-0.0765 ms, B = 16-256 -2 to -3%. The quad
// kernel (2q) does the same at T <= 2 (run 105: GVA at T = 1 B = 64 -1.8%, T = 2 B = 256 -1.2%).
// Version 6 (the front end inside the lane kernel, its loads behind the state's) was measured
// slower and not kept.
//   1 front end, grid (2H + HV, B), or (2H + HV, ceil(B / 4)) with 4 rows per block (version 7),
//     one thread per channel: each q, k or v channel is convolved once per launch (not once
//     per column block), its conv cache rolled in place by
//     its only reader and writer (no counter), q and k normalised with a block sum of squares per
//     token, the gates computed by the v blocks; the results (float32, [B][T] rows of q, k, v and
//     the gates: ~49 KiB per (b, t) at H = HV = 32, K = V = 128) go to the workspace and stay in
//     L2 for kernel 2.
//   1v front end (versions 10-11), 8 channels of one (b, head) row per thread, the row's sum of
//     squares a shuffle sum over its lanes: the same rows in the workspace.
//   2 state update: the decode shape of kernels/recurrent/recurrent.cu, whose per-token step it shares
//     (kernels/common/decode_step.cuh): one block per (32 value columns, b, hv); lane = column j, warp w
//     holds state rows [w R, w R + R) (W x R = 16 x 16; used for K = 256 since version 5) for the
//     steps. The block's state slice (K x 32 columns) is copied into shared memory with 16-byte
//     cp.async first, while the q, k, v rows and gates of its (b, h) come from L2; then each
//     thread moves its R state values into registers.
//   2b state update, K <= 128 (version 5): one warp per (32 value columns, b, hv), blocks of up
//     to 4 (2 at K = 128 and T = 1 since version 9) column groups of one (b, hv), which share its
//     q and k rows.
//   2c state update, K <= 128, bf16 pool, few slices (version 8): 32 bytes of columns per warp,
//     each column's rows split over the lanes that share it, sums by an xor butterfly.
//   2d state update, K = 128, bf16 pool, many slices (version 8): persistent blocks, each
//     slice's state brought in by one bulk copy a slice ahead.
//   2q state update, 64 < K <= 128, float32 pool, V % 4 == 0 (versions 12-13): 2b's warps and
//     blocks, a lane 4 columns x 32 rows with 16-byte accesses, sums across the 4 row groups by an
//     xor butterfly. 168 registers (6 blocks of 2 warps per SM), no spills since version 15 (4 B at
//     K = 128, 28 B stored and 76 B loaded at K < 128 before).
//   2qf state update with the front end (version 14): T = 1, H = HV, K = V = 128, float32 pool,
//     16-bit inputs aligned for kernel 1v: one 4-warp block per (b, h), the slice brought into
//     shared memory by bulk copies while 48 lanes run kernel 1v's per-token operations; then
//     2q's arithmetic. 167 registers (no spills), 64 KiB + 1.8 KiB shared: 3 blocks per SM.
// Budget of kernel 2b: registers kK + ~40 (kK = 64 or 128, K padded with zero rows): 168 at
// kK = 128 (3 blocks of 4 warps or 6 of 2 per SM; 8 B spilled at K = 128, the slice offset kept
// for the stores; 8-24 B stored and 24-60 B loaded at K < 128, the bf16-pool instances, which
// version 8 no longer launches, the most), or 254 without spills for one-wave grids (2 blocks of
// 4 warps), 128 at kK = 64 (4 blocks of 4 warps); static shared 8 x 2 x kK x 4 B of q/k rows
// (8 KiB at kK = 128) + W x 8 x 32 x 4 B of v + the gates = 10.1 KiB (W = 2) or 12.1 KiB
// (W = 4). Bytes in flight: 12 warps x 128 rows x 128 B = 192 KiB per SM with a float32 pool,
// 96 KiB with bf16, against ~32 KiB that latency x bandwidth asks for.
// Budget of kernel 2 (K = 256, W = 16): 32 + 16 KiB dynamic at T = 8 plus 7.2 KiB static,
// opted in whenever static + dynamic exceed 48 KiB (a float32 state from T = 5 on). Without
// 16-byte alignment (V not a multiple of 4 for a float32 pool, of 8 for bf16) each thread loads
// its own state values after the barrier.
// Rounds: float32 everywhere; o rounded to the dtype once; the state is rounded only when stored
// to a bf16 pool (fused_decode_bf16state), once per launch, not per token.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/common/bulk_copy.cuh"
#include "kernels/common/decode_step.cuh"
#include "kernels/frontend/frontend.cuh"

namespace {

constexpr int64_t kMaxGridY = 65535;
constexpr int kMaxDevices = 64;  // devices whose launch-time answers are kept (occupancy, SMs)

// A grid of x blocks per (b, hv) head, the B x HV heads over y and, past kMaxGridY, z.
dim3 decode_heads_grid(const GdnShape& s, int64_t x) {
  const int64_t heads = s.B * s.HV, y = heads < kMaxGridY ? heads : kMaxGridY;
  return dim3(unsigned(x), unsigned(y), unsigned((heads + y - 1) / y));
}

// Programmatic Dependent Launch of the state kernel (version 5): its state loads are issued while
// the front end still runs. Build with -DGDNBENCH_DECODE_PDL=0 to compare without; the kernels are
// correct either way (griddepcontrol.wait returns at once in a grid launched without the attribute).
constexpr bool kDecodePdl = true;

__device__ __forceinline__ void dec_cp_async_16(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void dec_cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
}

// Four floats from shared memory (16-byte aligned) by a load the compiler neither merges with an
// earlier load of the same address nor removes.
__device__ __forceinline__ float4 dec_lds_volatile_v4(const float* p) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  float4 v;
  asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(s));
  return v;
}

// Resident blocks per SM the register cap is set for: 64 registers, 4 x 8 or 2 x 16 warps (half
// occupancy). 48 registers (5 x 8 warps) spill; the state copies are in shared memory, not in
// registers, so 4 blocks already have 64 KiB of state loads in flight per SM, twice what the
// memory latency needs at full bandwidth (4.27 TB/s x ~1 us / 132 SMs ~ 32 KiB).
template <int kWarps>
constexpr int kDecodeMinBlocks = 2048 / (kWarps * 32) / 2;

// Dynamic shared memory of the step kernel: the state slice [kKPad][32] of St and the q/k rows
// [T][2][kKPad] as float.
template <typename St, int kKPad>
size_t decode_dynamic_smem(int64_t T) {
  return size_t(kKPad) * 32 * sizeof(St) + size_t(T) * 2 * kKPad * 4;
}

// The front end of every (b, t) row, [B][T] of: q, k (normalised) [2][H][K], v [HV][V], then the
// gates (alpha = exp(g), beta) [HV][2]; float32, in the workspace, read by the step kernel from L2.
struct DecodeFeLayout {
  int64_t qk, v, row;  // floats: q or k part, v part, one (b, t) row with the gates
  __host__ __device__ DecodeFeLayout(const GdnShape& s)
      : qk(s.H * s.K), v(s.HV * s.V), row(2 * s.H * s.K + s.HV * s.V + 2 * s.HV) {}
};

constexpr int kFeMaxThreads = 256;  // one channel per thread: K, V <= 256

// (alpha = exp(g), beta) of token t of row b, value head hv.
template <typename T>
__device__ __forceinline__ float2 decode_gate_values(const GdnFrontEndParams& p, int64_t b, int t, int hv) {
  const int64_t gi = (b * p.shape.T + t) * p.shape.HV + hv;
  return make_float2(expf(fe_gate(to_float(static_cast<const T*>(p.a)[gi]), p.A_log[hv], p.dt_bias[hv])),
                     fe_beta(to_float(static_cast<const T*>(p.b)[gi])));
}
// The gates of row (b, t) and value head hv into the front end's row.
template <typename T>
__device__ __forceinline__ void decode_fe_gates(const GdnFrontEndParams& p, float* fe, const DecodeFeLayout& lay,
                                                int64_t b, int t, int hv) {
  float* gates = fe + (b * p.shape.T + t) * lay.row + 2 * lay.qk + lay.v + 2 * hv;
  const float2 g = decode_gate_values<T>(p, b, t, hv);
  gates[0] = g.x;
  gates[1] = g.y;
}

// Threads of a front-end block: one per channel of the widest head, in whole warps (128 at
// K = V = 128). Version 3 always ran 256, so at K = V = 128 half of every block idled while
// holding its registers: 48 registers x 256 threads let 5 blocks (640 working channels) reside
// per SM; 128-thread blocks make that 10 (1280), half the waves.
unsigned decode_fe_threads(const GdnShape& s) {
  const int64_t d = s.K > s.V ? s.K : s.V;
  return unsigned((d + 31) / 32 * 32);
}

// Kernel 1, grid (2H + HV, ceil(B / kRows)), decode_fe_threads threads: block x < H convolves q
// head x, x < 2H k head x - H, else v head x - 2H, for the kRows batch rows b = kRows y ...; thread =
// channel. The conv cache of a (slot, channel) has this one reader and writer, so it is rolled in
// place. q and k rows are normalised here (block sums of squares per token); the v blocks' first
// T threads compute the gates. kRows > 1 (T = 1, the serving case): every row's loads are issued
// before the first is used, so a block pays the slot and cache round trips once for kRows rows,
// and the grid is kRows times fewer blocks (at B = 64, H = HV = 32: 1536 instead of 6144, about
// one wave instead of ~4.7 at 10 blocks per SM). Per row, the operations and their order are the
// kRows = 1 kernel's.
template <int kRows>
constexpr int kFeTokens = kRows == 1 ? int(kDecodeMaxTokens) : 1;  // tokens a thread holds per row

template <typename T, int kRows>
__global__ void __launch_bounds__(kFeMaxThreads)
gdn_decode_frontend_kernel(const GdnFrontEndParams p, float* fe, bool early_trigger) {
  constexpr int kMaxWarps = kFeMaxThreads / 32;
  constexpr int kTok = kFeTokens<kRows>;
  __shared__ float ss_s[kRows][kTok][kMaxWarps];
  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, warps = int(blockDim.x) / 32, nt = int(s.T);
  const int H = int(s.H), head_block = int(blockIdx.x);
  const int b0 = int(blockIdx.y) * kRows, B = int(s.B);
  const int tensor = head_block < H ? kFeQ : head_block < 2 * H ? kFeK : kFeV;
  const int head = tensor == kFeV ? head_block - 2 * H : head_block - tensor * H;
  const int D = int(tensor == kFeV ? s.V : s.K);
  const int64_t channels = tensor == kFeV ? lay.v : lay.qk;
  const bool ok = tid < D;
  const int64_t ch = int64_t(head) * D + tid;
  // The state kernel may start now (it waits for this grid's completion before reading any row it
  // writes); its blocks then take the SM slots this grid's last wave leaves free. Without
  // early_trigger it starts as this grid's blocks exit (FeTrigger).
  if (kDecodePdl && early_trigger) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  // Two dependent round trips, slots[b] then the conv cache at that slot; everything else (x,
  // taps, bias, the gate inputs) is requested while the first is in flight. The v blocks' gates
  // are stored first: their loads share the slot's round trip (and keeping them in registers to
  // the end would cost 4 registers, one resident block per SM).
  int64_t slot[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) slot[r] = b0 + r < B ? p.slots[b0 + r] : 0;
  if (tensor == kFeV && tid < nt) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (b0 + r >= B) break;
      decode_fe_gates<T>(p, fe, lay, b0 + r, tid, head);
    }
  }
  float y[kRows][kTok];
  if (ok) {
    const T* bias = static_cast<const T*>(p.conv_bias[tensor]);
    ConvChannel taps;
    taps.load<T>(static_cast<const T*>(p.conv_w[tensor]) + ch * kConvWidth, bias ? bias + ch : nullptr,
                 static_cast<const T*>(nullptr));
    float xs[kRows][kTok];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const T* x = static_cast<const T*>(p.x[tensor]) + int64_t(b0 + r) * nt * channels + ch;
#pragma unroll
      for (int t = 0; t < kTok; ++t) xs[r][t] = (t < nt && b0 + r < B) ? to_float(x[t * channels]) : 0.0f;
    }
    // This channel's conv cache in row r's slot of the pool.
    auto cache_of = [&](int r) { return static_cast<T*>(p.cache_out[tensor]) + (slot[r] * channels + ch) * kConvCache; };
    ConvChannel conv[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      conv[r] = taps;
      if (b0 + r < B) conv[r].load_cache(cache_of(r));
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int t = 0; t < kTok; ++t) y[r][t] = t < nt ? fe_silu(conv[r].step(xs[r][t])) : 0.0f;
      if (b0 + r < B) conv[r].store_cache(cache_of(r));
    }
  } else {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int t = 0; t < kTok; ++t) y[r][t] = 0.0f;
  }
  if (tensor == kFeV) {
    if (ok)
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (b0 + r >= B) break;
        float* row = fe + int64_t(b0 + r) * nt * lay.row;
        for (int t = 0; t < nt; ++t) row[t * lay.row + 2 * lay.qk + ch] = y[r][t];
      }
    return;
  }
  // q or k: 1 / ||row|| per token from the block's sum of squares, the warps summed in order (as
  // in version 3, whose extra warps added zeros: the same bits).
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t < nt) {
        const float ss = group_sum<32>(y[r][t] * y[r][t]);
        if (lane == 0) ss_s[r][t][warp] = ss;
      }
    }
  __syncthreads();
  if (!ok) return;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (b0 + r >= B) break;
    float* row = fe + int64_t(b0 + r) * nt * lay.row;
    for (int t = 0; t < nt; ++t) {
      float ss = 0.0f;
#pragma unroll
      for (int w = 0; w < kMaxWarps; ++w)
        if (w < warps) ss += ss_s[r][t][w];
      row[t * lay.row + (tensor == kFeK ? lay.qk : 0) + ch] = y[r][t] * fe_inv_l2(ss, p.l2_eps);
    }
  }
}

// Kernel 1v (versions 10-11), for K and V multiples of 8 with 16-byte aligned projections, conv
// weights, biases and caches: thread = 8 consecutive channels of one (b, head) row, the row in
// 2^fe_lanes_log2(D) adjacent lanes (16 at D = 128), so a token's sum of squares is a shuffle sum
// over those lanes and no block barrier is needed. Its x, taps, bias and conv cache come in
// 16-byte loads (at K = 128, bf16: 9 loads and 5 stores for 8 channels, where kernel 1 makes 72
// and 32 two-byte ones), and the tokens go through fe_token, the operations of unfused_conv's
// front end: q, k and v are its bits. Blocks [0, qk_blocks) take the 2H q and k heads of every
// row, the rest the HV v heads, whose lane 0 also computes the row's gates. kTokens: 1 (the
// serving case) or kFeVecMaxTokens (T <= kTokens at run time); every token's loads are in flight
// before the conv cache's round trip.
// Measured at B = 64, H = HV = 32, K = V = 128 (run 70): kernel 1 spends 9.7 of its 12.7 us
// issuing instructions, 789 per warp, most of them addresses and bounds of 2-byte accesses.
constexpr int kFeVecThreads = 128;
constexpr int kFeVecMaxTokens = kDecodeFeVecMaxTokens;  // tokens of the T > 1 instance
constexpr int kFeCachePieces = kConvCache * kFeVec * 2 / 16;  // a 16-bit conv cache's 16-byte pieces
// Kernel 1v stores its rows and caches in whole 32-byte sectors (decode_warp_store_pieces) from
// this many blocks per SM on, its stage in dynamic shared memory requested only then. Measured
// (runs 75-77, H = HV = 32, K = V = 128, T = 1): the front-end kernel 9.2 -> 7.0 us at B = 64
// (768 blocks), the step -2.5% (float32 pool) and -4.5% (bf16), -2.5% at B = 32; T = 2, 4 within
// 2%. Staged at every B, or with a static stage, the step was 2-5% slower at B = 8 and 16.
constexpr int kFeWholeSectorBlocksPerSm = 2;
constexpr size_t kFeStageBytes = size_t(kFeVecThreads) * kFeCachePieces * 16;

// Each lane's kPieces 16-byte pieces (contiguous from its dst, none where !active), stored so that
// store k of the warp writes pieces 32k .. 32k + 31 of the lanes in order: where the lanes'
// destinations follow each other (the lanes of one row), each store fills whole 32-byte sectors,
// where one store per piece would leave every sector partly written. stage: this warp's
// 32 x kPieces pieces of shared memory.
template <int kPieces>
__device__ __forceinline__ void decode_warp_store_pieces(const uint4 (&mine)[kPieces], void* dst, bool active,
                                                         uint4* stage) {
  const int lane = int(threadIdx.x % 32);
#pragma unroll
  for (int i = 0; i < kPieces; ++i) stage[lane * kPieces + i] = mine[i];
  __syncwarp();
  const unsigned long long d = reinterpret_cast<unsigned long long>(dst);
#pragma unroll
  for (int k = 0; k < kPieces; ++k) {
    const int piece = k * 32 + lane, src = piece / kPieces;
    const unsigned long long to = __shfl_sync(0xFFFFFFFFu, d, src) + 16ull * unsigned(piece % kPieces);
    if (__shfl_sync(0xFFFFFFFFu, int(active), src)) *reinterpret_cast<uint4*>(to) = stage[piece];
  }
  __syncwarp();  // the stage is written again by the next call
}

template <typename T, int kTokens>
__global__ void __launch_bounds__(kFeVecThreads)
gdn_decode_frontend_vec_kernel(const GdnFrontEndParams p, float* fe, unsigned qk_blocks, bool whole_sectors,
                               bool early_trigger) {
  static_assert(sizeof(T) == 2, "16-bit projections (decode_fe_vector_shape)");
  // The stores' stage (dynamic: kFeStageBytes where whole_sectors, else none, so that the kernel
  // asks for no shared memory where it does not stage).
  extern __shared__ __align__(16) uint4 fe_stage_s[];
  uint4* const stage = fe_stage_s + threadIdx.x / 32 * (32 * kFeCachePieces);
  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  // The state kernel may start now (it waits for this grid's completion before reading any row).
  if (kDecodePdl && early_trigger) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const int nt = kTokens == 1 ? 1 : int(s.T), H = int(s.H);
  const bool qk = blockIdx.x < qk_blocks;  // uniform in the block, so in every warp
  const int D = int(qk ? s.K : s.V), shift = fe_lanes_log2(D), lanes = 1 << shift;
  const int64_t heads = qk ? 2 * s.H : s.HV;
  const int64_t unit = int64_t(qk ? blockIdx.x : blockIdx.x - qk_blocks) * (kFeVecThreads >> shift) +
                       (threadIdx.x >> shift);  // b * heads + head of the tensor pair
  const bool unit_ok = unit < s.B * heads;
  const int64_t b = unit_ok ? unit / heads : 0;
  const int hh = int(unit - b * heads);
  const int tensor = qk ? (hh < H ? kFeQ : kFeK) : kFeV;
  const int head = tensor == kFeK ? hh - H : hh;
  const int c0 = int(threadIdx.x & unsigned(lanes - 1)) * kFeVec;
  // Lanes past the head's channels and rows past B compute zeros and take part in the shuffles.
  const bool active = unit_ok && c0 < D;
  const int64_t channels = tensor == kFeV ? lay.v : lay.qk, ch = int64_t(head) * D + c0;
  const int64_t slot = unit_ok ? p.slots[b] : 0;
  if (tensor == kFeV && unit_ok && c0 == 0)
    for (int t = 0; t < nt; ++t) decode_fe_gates<T>(p, fe, lay, b, t, head);

  ConvChannel conv[kFeVec];
  fe_load_taps<T, true>(conv, static_cast<const T*>(p.conv_w[tensor]), static_cast<const T*>(p.conv_bias[tensor]),
                        ch, D - c0, active);
  const T* x = static_cast<const T*>(p.x[tensor]) + b * nt * channels + ch;
  FeChunk<T, true> xs[kTokens];  // every token's inputs in flight before the cache's round trip
#pragma unroll
  for (int t = 0; t < kTokens; ++t) xs[t].load(x + t * channels, kFeVec, active && t < nt);
  T* cache = static_cast<T*>(p.cache_out[tensor]) + (slot * channels + ch) * kConvCache;
  fe_load_cache_vec<T>(conv, cache, active);
  float* out = fe + b * nt * lay.row + (tensor == kFeV ? 2 * lay.qk : tensor * lay.qk) + ch;
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t >= nt) break;  // uniform: every row has T tokens
    float xf[kFeVec], y[kFeVec];
    xs[t].unpack(xf);
    fe_token(conv, xf, y, tensor != kFeV, lanes, p.l2_eps);
    if (whole_sectors && lay.row % 4 == 0) {  // and rows on 16-byte boundaries (HV even)
      const uint4 pieces[2] = {make_uint4(__float_as_uint(y[0]), __float_as_uint(y[1]), __float_as_uint(y[2]),
                                          __float_as_uint(y[3])),
                               make_uint4(__float_as_uint(y[4]), __float_as_uint(y[5]), __float_as_uint(y[6]),
                                          __float_as_uint(y[7]))};
      decode_warp_store_pieces<2>(pieces, out + t * lay.row, active, stage);
    } else if (active) {
#pragma unroll
      for (int c = 0; c < kFeVec; c += 2)
        *reinterpret_cast<float2*>(out + t * lay.row + c) = make_float2(y[c], y[c + 1]);
    }
  }
  if (!whole_sectors) {
    fe_store_cache_vec<T>(conv, cache, active);
    return;
  }
  // The rolled caches: the 24 inputs of the 8 channels, [channel][3], as 3 packed pieces.
  uint4 pieces[kFeCachePieces];
#pragma unroll
  for (int j = 0; j < kFeCachePieces; ++j) {
    float f[kFeVec];
    fe_cache_chunk(conv, j, f);
    pieces[j] = fe_pack16<T>(f);
  }
  decode_warp_store_pieces<kFeCachePieces>(pieces, cache, active, stage);
}

// Kernel 2, the state update: one block per (32 value columns, b, hv) as in recurrent's decode.
template <typename T, typename St, int kRows, int kWarps, bool kAsync>
__global__ void __launch_bounds__(kWarps * 32, kDecodeMinBlocks<kWarps>)
gdn_decode_kernel(const GdnFrontEndParams p, const float* fe) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kKPad = kRows * kWarps;
  constexpr int kChunkElems = 16 / int(sizeof(St));     // state elements per 16-byte copy
  constexpr int kChunksPerRow = 32 / kChunkElems;
  static_assert(kWarps >= 2, "the last two warps load v and the gates");
  extern __shared__ __align__(16) unsigned char dyn_s[];
  St (*state_s)[32] = reinterpret_cast<St (*)[32]>(dyn_s);  // [kKPad][32]
  float (*qk_s)[2][kKPad] = reinterpret_cast<float (*)[2][kKPad]>(dyn_s + kKPad * 32 * sizeof(St));  // [T]
  __shared__ float v_s[kDecodeMaxTokens][32];
  __shared__ float alpha_s[kDecodeMaxTokens], beta_s[kDecodeMaxTokens];
  __shared__ DecodeStepShared<kWarps> sh;

  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int K = int(s.K), V = int(s.V), nt = int(s.T);
  const uint32_t HV = uint32_t(s.HV), H = uint32_t(s.H);
  const uint32_t head = blockIdx.z * gridDim.y + blockIdx.y;  // b * HV + hv
  if (head >= uint32_t(s.B) * HV) return;  // the last z row of a grid split over y and z
  const uint32_t b = head / HV, hv = head - b * HV, h = hv / (HV / H);
  const int j0 = int(blockIdx.x) * 32, j = j0 + lane;
  const bool col_ok = j < V;
  const int64_t slot = p.slots[b];
  St* const state = static_cast<St*>(p.state) + (slot * HV + hv) * int64_t(K) * V + j0;

  // The state slice first: in flight, in no register, while the front end's rows come from L2.
  if constexpr (kAsync) {
    constexpr int kChunks = kKPad * kChunksPerRow;
#pragma unroll
    for (int c = tid; c < kChunks; c += kThreads) {
      const int r = c / kChunksPerRow, col = c % kChunksPerRow * kChunkElems;
      if (r < K && col < V - j0) dec_cp_async_16(&state_s[r][col], state + r * V + col);
    }
  }
  const float* row = fe + int64_t(b) * nt * lay.row;
  for (int x = tid; x < nt * 2 * kKPad; x += kThreads) {
    const int t = x / (2 * kKPad), tensor = x / kKPad % 2, i = x % kKPad;
    qk_s[t][tensor][i] = i < K ? row[t * lay.row + tensor * lay.qk + int64_t(h) * K + i] : 0.0f;
  }
  if (warp == kWarps - 1)
    for (int t = 0; t < nt; ++t) v_s[t][lane] = col_ok ? row[t * lay.row + 2 * lay.qk + int64_t(hv) * V + j] : 0.0f;
  if (warp == kWarps - 2 && lane < nt) {
    const float* gates = row + lane * lay.row + 2 * lay.qk + lay.v + 2 * hv;
    alpha_s[lane] = gates[0];
    beta_s[lane] = gates[1];
  }
  if constexpr (kAsync) dec_cp_async_wait_all();
  __syncthreads();  // the state slice (copied by other threads) and the front-end rows are in place

  float S[kRows];
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int i = warp * kRows + n;
    S[n] = (col_ok && i < K) ? to_float(kAsync ? state_s[i][lane] : state[i * V + lane]) : 0.0f;
  }

  T* o = static_cast<T*>(p.o) + (int64_t(b) * nt * HV + hv) * V + j;
  for (int t = 0; t < nt; ++t) {
    decode_token_step<kRows, kWarps, false>(
        S, sh, p.scale,
        [&](int n, float& kv, float& qv) {
          const int i = warp * kRows + n;
          kv = qk_s[t][kFeK][i];
          qv = qk_s[t][kFeQ][i];
        },
        [&](float PS, float& alpha) {
          alpha = alpha_s[t];
          const float vj = col_ok ? v_s[t][lane] : 0.0f;
          return p.use_delta ? beta_s[t] * (vj - alpha * PS) : vj;
        },
        [&](float out) {
          if (col_ok) o[int64_t(t) * HV * V] = from_float<T>(out);
        });
  }
  // The compiler would otherwise keep the kRows load addresses of the fallback alive across the
  // tokens to reuse them here (2 kRows registers, spilled under the cap); an opaque copy of the
  // base makes it recompute them.
  uint64_t base = reinterpret_cast<uint64_t>(state);
  asm volatile("" : "+l"(base));
  St* const out = reinterpret_cast<St*>(base);
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    const int i = warp * kRows + n;
    if (col_ok && i < K) out[i * V + lane] = from_float<St>(S[n]);
  }
}

// The tokens of one state column (versions 5 and 8, the lane, stream and split-column kernels).
// The column's rows are held by kLanes consecutive-by-xor lanes (1: one lane holds all; the split
// kernel's 2 or 4), kRows each in S (rows past K zero); q0 and k0 point at token 0's q and k rows
// for this lane's rows (zero past K, token t at t * qk_stride), v_t[t * v_stride] is v_j of token t,
// gates_s[t] its alpha = exp(g) and beta; o[t * o_stride] receives o_j of token t where writes_o.
// Sums in the grouping of version 4's step (partials of kGroupRows rows, then those in order), then
// across the column's lanes by an xor butterfly (every lane ends with the same bits); its
// expressions for u, o and the update: the same float32 operations in every kernel that calls this.
template <typename T, int kRows, int kGroupRows, int kLanes>
__device__ __forceinline__ void decode_column_tokens(float (&S)[kRows], const float* q0, const float* k0,
                                                     int qk_stride, const float* v_t, int v_stride,
                                                     const float (*gates_s)[2], int nt, bool writes_o, T* o,
                                                     int64_t o_stride, const GdnFrontEndParams& p) {
  constexpr int kGroups = kRows / kGroupRows;
  for (int t = 0; t < nt; ++t) {
    const float* kr = k0 + t * qk_stride;
    const float* qr = q0 + t * qk_stride;
    float PS = 0.0f, PQ = 0.0f, KQ = 0.0f;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      float ps = 0.0f, pq = 0.0f, kq = 0.0f;
#pragma unroll
      for (int n = 0; n < kGroupRows; ++n) {
        const int i = g * kGroupRows + n;
        ps += S[i] * kr[i];
        pq += S[i] * qr[i];
        kq += kr[i] * qr[i];
      }
      PS += ps;
      PQ += pq;
      KQ += kq;
    }
#pragma unroll
    for (int m = 32 / kLanes; m < 32; m <<= 1) {
      PS += __shfl_xor_sync(0xffffffffu, PS, m);
      PQ += __shfl_xor_sync(0xffffffffu, PQ, m);
      KQ += __shfl_xor_sync(0xffffffffu, KQ, m);
    }
    const float alpha = gates_s[t][0];
    const float vj = v_t[t * v_stride];
    const float u = p.use_delta ? gates_s[t][1] * (vj - alpha * PS) : vj;
    if (writes_o) o[int64_t(t) * o_stride] = from_float<T>(p.scale * (alpha * PQ + u * KQ));
    // k is read from shared memory again for the update (volatile loads, which ptxas does not
    // merge with the ones of the sums): kept from the sums, its kRows values would live next to
    // the kRows of S (twice the registers, spilled at the cap).
#pragma unroll
    for (int i = 0; i < kRows; i += 4) {
      const float4 k4 = dec_lds_volatile_v4(kr + i);
      S[i] = alpha * S[i] + k4.x * u;
      S[i + 1] = alpha * S[i + 1] + k4.y * u;
      S[i + 2] = alpha * S[i + 2] + k4.z * u;
      S[i + 3] = alpha * S[i + 3] + k4.w * u;
    }
  }
}

// decode_column_tokens for one lane per column: the lane and stream kernels' qk_s[t][q or k][i].
template <typename T, int kK>
__device__ __forceinline__ void decode_lane_tokens(float (&S)[kK], const float (*qk_s)[2][kK], const float* v_t,
                                                   int v_stride, const float (*gates_s)[2], int nt, bool col_ok,
                                                   T* o, int64_t o_stride, const GdnFrontEndParams& p) {
  decode_column_tokens<T, kK, kK / 8, 1>(S, qk_s[0][kFeQ], qk_s[0][kFeK], 2 * kK, v_t, v_stride, gates_s, nt, col_ok,
                                          o, o_stride, p);
}

// Version 5's state update for K <= 128: one warp per slice (b, hv, 32 value columns), lane j
// owning column j0 + j with all kK rows of it in registers, so S^T k, S^T q and the update are
// lane-local: no shuffles, no shared-memory sums, no barrier after the one that publishes the
// front end's rows. A block is the W = min(4, ceil(V / 32)) warps of consecutive column groups
// of one (b, hv), which share its q and k rows. The state loads come first, one 128-byte row
// segment per warp instruction and all kK of them in flight before the first use (kK x 128 B =
// 16 KiB per warp at K = 128); with kDecodePdl they are issued before griddepcontrol.wait, while
// the front end still runs. Sums in the grouping of version 4's step (8 partials of kK / 8 rows,
// then those in order), its expressions for u, o and the update: the same float32 operations.
// LaneConfig: an instance's warps per block (at most: ceil(V / 32) when fewer) and the resident
// blocks per SM its register cap is set for. 12 warps per SM at kK = 128 (168 registers: the kK
// state values, the 24 partial sums of a token and addresses), 16 at kK = 64 (128 registers; a
// 96-register cap makes the bf16-pool instances spill).
//   LaneWide (4 warps, 3 per SM): kK = 128 at T > 1 where the quad kernel does not take the grid,
//     and a forced bf16 pool.
//   LaneNarrow (2 warps, 6 per SM): kK = 128, float32 pool, T = 1, where the quad kernel does not
//     take the grid (V off a multiple of 4, a pool off 16 bytes). A block's registers are freed
//     when its last warp ends; half the warps share that end (run 65: the step 0.0896 -> 0.0871
//     ms at B = 64, H = HV = 32, -2 to -3% at B = 16..256). At T > 1 the blocks' rows of q and
//     k, loaded by half the threads, cost more than that: 4% and 10% slower at T = 2 and 4.
//   LaneOneWave (4 warps, 2 per SM, 254 registers, no spills): kK = 128, a grid within one wave
//     of those (B x HV <= 2 x SMs at V = 128): at B = 8, H = HV = 32 with a float32 pool 0.0195 ->
//     0.0171 ms (runs 42-43), where at B = 64 and 256 that cap is 13-19% slower (fewer resident
//     warps); in 2-warp blocks 3% slower at B = 8 (run 64).
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
  // it stores nothing), so that with kFull (K = kK) no load waits on a condition. A float32 pool
  // loads straight into S, a bf16 one the raw bits into the registers of S, widened after the
  // barrier: widened as they arrived, the first one would stall the warp before the later loads
  // are issued. Rows past K (not kFull) are zero.
  using Raw = typename std::conditional<sizeof(St) == 4, float, unsigned short>::type;
  const int64_t slot = p.slots[b];
  const int64_t slice = (slot * HV + hv) * int64_t(K) * V + (col_ok ? j : V - 1);
  const Raw* const src = reinterpret_cast<const Raw*>(static_cast<const St*>(p.state) + slice);
  float S[kK];
#pragma unroll
  for (int i = 0; i < kK; ++i) {
    if constexpr (sizeof(St) == 4)
      S[i] = (kFull || i < K) ? src[i * V] : 0.0f;
    else
      S[i] = __uint_as_float((kFull || i < K) ? uint32_t(src[i * V]) : 0u);
  }
  if constexpr (kDecodePdl) asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the front end's rows

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
  if constexpr (sizeof(St) == 2) {
#pragma unroll
    for (int i = 0; i < kK; ++i) S[i] = __uint_as_float(__float_as_uint(S[i]) << 16);
  }
  if (j0 >= V) return;  // a warp past the last column group (V not a multiple of 32 W)

  T* o = static_cast<T*>(p.o) + (int64_t(b) * nt * HV + hv) * V + j;
  decode_lane_tokens<T, kK>(S, qk_s, &v_s[warp][0][lane], 32, gates_s, nt, col_ok, o, int64_t(HV) * V, p);
  if (!col_ok) return;
  Raw* const dst = reinterpret_cast<Raw*>(static_cast<St*>(p.state) + slice);
#pragma unroll
  for (int i = 0; i < kK; ++i) {
    if (kFull || i < K) {
      if constexpr (sizeof(St) == 4)
        dst[i * V] = S[i];
      else
        dst[i * V] = __bfloat16_as_ushort(__float2bfloat16_rn(S[i]));
    }
  }
}

// The front end's rows of one (b, hv) into shared memory for the split-column and quad kernels:
// q and k [t][tensor][i] with a 4-float skew after every kRows rows (the row groups' 16-byte reads
// then use distinct banks; zeros past K), v of the block's kBlockCols columns from j0 (zeros past
// V), and each token's gates (alpha = exp(g), beta).
template <int kK, int kRows, int kBlockCols>
__device__ __forceinline__ void decode_stage_rows_skewed(const float* row, const DecodeFeLayout& lay, uint32_t h,
                                                         uint32_t hv, int j0, int K, int V, int nt,
                                                         float (*qk_s)[2][kK / kRows * (kRows + 4)],
                                                         float (*v_s)[kBlockCols], float (*gates_s)[2]) {
  const int tid = int(threadIdx.x);
  for (int x = tid; x < nt * 2 * kK; x += int(blockDim.x)) {
    const int t = x / (2 * kK), tensor = x / kK % 2, i = x % kK;
    qk_s[t][tensor][i + i / kRows * 4] = i < K ? row[t * lay.row + tensor * lay.qk + int64_t(h) * K + i] : 0.0f;
  }
  for (int x = tid; x < nt * kBlockCols; x += int(blockDim.x)) {
    const int t = x / kBlockCols, c = x % kBlockCols;
    v_s[t][c] = j0 + c < V ? row[t * lay.row + 2 * lay.qk + int64_t(hv) * V + j0 + c] : 0.0f;
  }
  if (tid < nt) {
    const float* gates = row + tid * lay.row + 2 * lay.qk + lay.v + 2 * hv;
    gates_s[tid][0] = gates[0];
    gates_s[tid][1] = gates[1];
  }
}

// One token of the quad update of a lane's 4 columns x kRows rows, S updated in place: S^T k and
// S^T q over the lane's rows (groups of 16, in order), k^T q, each summed across the four row
// groups by an xor butterfly (lanes 8 and 16 apart), then o (where write_o) and the state. kr, qr:
// the token's k and q rows of the lane's row group in shared memory; v4: its values of the 4
// columns; alpha = exp(g). The quad kernels' one copy of the arithmetic, so they agree bit for bit.
template <typename T, int kRows>
__device__ __forceinline__ void decode_quad_token(float4 (&S)[kRows], const float* kr, const float* qr, float4 v4,
                                                  float alpha, float beta, const GdnFrontEndParams& p, T* o,
                                                  bool write_o) {
  constexpr int kGroupRows = 16;
  float PS[4] = {0.f, 0.f, 0.f, 0.f}, PQ[4] = {0.f, 0.f, 0.f, 0.f}, KQ = 0.f;
#pragma unroll
  for (int g = 0; g < kRows / kGroupRows; ++g) {
    float ps[4] = {0.f, 0.f, 0.f, 0.f}, pq[4] = {0.f, 0.f, 0.f, 0.f}, kq = 0.f;
#pragma unroll
    for (int n = 0; n < kGroupRows; n += 4) {
      const float4 k4 = *reinterpret_cast<const float4*>(kr + g * kGroupRows + n);
      const float4 q4 = *reinterpret_cast<const float4*>(qr + g * kGroupRows + n);
      const float kk[4] = {k4.x, k4.y, k4.z, k4.w}, qq[4] = {q4.x, q4.y, q4.z, q4.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float4 sr = S[g * kGroupRows + n + e];
        ps[0] += sr.x * kk[e]; ps[1] += sr.y * kk[e]; ps[2] += sr.z * kk[e]; ps[3] += sr.w * kk[e];
        pq[0] += sr.x * qq[e]; pq[1] += sr.y * qq[e]; pq[2] += sr.z * qq[e]; pq[3] += sr.w * qq[e];
        kq += kk[e] * qq[e];
      }
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) { PS[c] += ps[c]; PQ[c] += pq[c]; }
    KQ += kq;
  }
#pragma unroll
  for (int m = 8; m < 32; m <<= 1) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      PS[c] += __shfl_xor_sync(0xffffffffu, PS[c], m);
      PQ[c] += __shfl_xor_sync(0xffffffffu, PQ[c], m);
    }
    KQ += __shfl_xor_sync(0xffffffffu, KQ, m);
  }
  const float vv[4] = {v4.x, v4.y, v4.z, v4.w};
  float u[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) u[c] = p.use_delta ? beta * (vv[c] - alpha * PS[c]) : vv[c];
  if (write_o)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[c] = from_float<T>(p.scale * (alpha * PQ[c] + u[c] * KQ));
#pragma unroll
  for (int r = 0; r < kRows; r += 4) {
    const float4 k4 = dec_lds_volatile_v4(kr + r);
    const float kk[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float4& sr = S[r + e];
      sr.x = alpha * sr.x + kk[e] * u[0];
      sr.y = alpha * sr.y + kk[e] * u[1];
      sr.z = alpha * sr.z + kk[e] * u[2];
      sr.w = alpha * sr.w + kk[e] * u[3];
    }
  }
}

// A lane's kRows state rows (4 columns each) back to the pool from dst (its first row; rows V
// apart); with !kFull only the rows_left < kRows that exist.
template <bool kFull, int kRows>
__device__ __forceinline__ void decode_quad_store(const float4 (&S)[kRows], float* dst, int rows_left, int V) {
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (kFull || r < rows_left) *reinterpret_cast<float4*>(dst + int64_t(r) * V) = S[r];
}

// The quad state update (kernel 2q, versions 12-13) for a float32 pool, 64 < K <= 128, V % 4 == 0:
// a warp takes 32 value columns, as the lane kernel does, but lane (rg, cq) = (lane / 8, lane % 8)
// holds columns 4 cq .. 4 cq + 3 of rows 32 rg .. 32 rg + 31 (128 registers, as many as a lane of
// the lane kernel): a warp's load of one row index reads four whole 128-byte rows, 32 16-byte
// loads and stores per lane where the lane kernel makes 128 4-byte ones. S^T k and S^T q are
// summed per lane over its rows (groups of 16 in order), k^T q once for the four columns, then
// across the four row groups by an xor butterfly. The q and k rows in shared memory are skewed by
// 4 floats per row group, so the groups' 16-byte reads use distinct banks. Blocks of 2 warps, 6
// per SM, as LaneNarrow. Measured (runs 79-84, H = HV = 32, K = V = 128): the state kernel alone
// 74.2 -> 69.8 us at B = 64 by ncu. In the step, with all 32 rows requested before the wait, -2 to
// -6% at T > 1 and B <= 32, none at B = 64 and +1% at 256 (version 12 took it there only);
// with 8 rows before the wait (version 13) B = 32 0.0475 -> 0.0456 ms, B = 64 0.0832 -> 0.0816,
// B = 256 unchanged, so it takes every grid the one-wave kernel does not.
struct DecodeQuad {
  static constexpr int kK = 128, kGroupsR = 4, kRows = kK / kGroupsR, kSkew = kRows + 4;
  static constexpr int kWarps = 2, kMinBlocks = 6;
  // Rows of a lane's 32 whose loads are issued before griddepcontrol.wait (version 13). All 32
  // in flight at the state blocks' start, as the lane kernel does, lengthen the front end (its
  // dependent slot and cache loads queue behind them): by 3-4 us at B = 64 (run 83's timeline).
  static constexpr int kEarlyRows = 8;
};

// How many heads ahead in dispatch order a state block prefetches its successor's slice into L2
// (version 15: kernels 2qf and 2q); 0 builds version 14.
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
  if constexpr (kDecodePdl) asm volatile("griddepcontrol.wait;\n" ::: "memory");
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

// Kernel 2qf (version 14): the quad update with the front end inside it, so a step is one launch:
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
// Version 15: thread 64 (a lane with no front-end work) also asks L2 for the slice of the block
// kAheadHeads later in dispatch order (cp.async.bulk.prefetch.L2), unless that block is in the
// first wave (`first_wave` resident blocks), whose copy starts with this one's. A block's own
// copy is only 64 KiB and 3 are resident per SM; the prefetches put more of the state in flight.
// Measured (runs 102-103, H = HV = 32): 33, 50 and 66 heads ahead 2-3% faster at B = 16-256,
// 99 less so, 132 none, 264 and 396 8-30% slower (the L2 holds the prefetched slices too long);
// without the first-wave rule 66 ahead cost B = 8 up to 5% in one of two runs.
struct DecodeQuadFe {
  static constexpr int kK = 128, kV = 128, kGroupsR = 4, kRows = kK / kGroupsR, kSkew = kRows + 4;
  static constexpr int kWarps = 4, kMinBlocks = 3;
  static constexpr int kCopies = 4;  // bulk copies of a quarter slice each
  static constexpr uint32_t kSliceBytes = uint32_t(kK) * kV * 4;
  static constexpr uint32_t kAheadHeads = kDecodeL2AheadHeads;  // 0: no prefetch (version 14)
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

// The split-column state update for K <= 128 (kernel 2c, version 8; a bf16 pool below 4 slices
// per SM): a warp takes kCols columns (32 bytes of each state row: 8 float32, 16 bf16), and the
// kGroupsR = 32 / kCols lanes of one column hold kRows = 128 / kGroupsR of its rows each (32
// float32 rows, 64 bf16). A warp's load of one row index thus reads kGroupsR whole 32-byte
// sectors, and a lane holds a quarter (float32) or half (bf16) of version 5's registers: 6 or 4
// resident blocks per SM instead of 3, and as much less of the per-lane chain between a block's
// state loads and its stores. S^T k, S^T q and k^T q are summed per lane over its rows (groups of
// 16 in order), then across the column's lanes by an xor butterfly (every lane ends with the same
// bits). The q and k rows in shared memory are skewed by 4 floats per row group, so the row
// groups' 16-byte reads fall in distinct banks. Measured (run 38): with a bf16 pool 3-9% faster
// than version 5 at B = 1 to 16; with a float32 pool 1-11% slower (four 32-byte pieces of four
// lines per load instruction, 15.4 cycles per issued instruction against 10.0).
template <typename St>
struct DecodeSplit {
  static constexpr int kK = 128;
  static constexpr int kCols = 32 / int(sizeof(St));  // columns per warp
  static constexpr int kGroupsR = 32 / kCols;          // lanes per column
  static constexpr int kRows = kK / kGroupsR;          // rows per lane
  static constexpr int kSkew = kRows + 4;              // shared-memory stride of a row group
  static constexpr int kWarps = 4;
  static constexpr int kBlockCols = kWarps * kCols;
  static constexpr int kMinBlocks = sizeof(St) == 4 ? 6 : 4;
};

template <typename T, typename St, bool kFull>
__global__ void __launch_bounds__(DecodeSplit<St>::kWarps * 32, DecodeSplit<St>::kMinBlocks)
gdn_decode_split_kernel(const GdnFrontEndParams p, const float* fe) {
  using L = DecodeSplit<St>;
  constexpr int kK = L::kK, kCols = L::kCols, kRows = L::kRows, kSkew = L::kSkew, kBlockCols = L::kBlockCols;
  __shared__ __align__(16) float qk_s[kDecodeMaxTokens][2][L::kGroupsR * kSkew];
  __shared__ float v_s[kDecodeMaxTokens][kBlockCols];
  __shared__ float gates_s[kDecodeMaxTokens][2];  // alpha = exp(g), beta

  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int col = lane % kCols, rg = lane / kCols;
  const int K = int(s.K), V = int(s.V), nt = int(s.T);
  const uint32_t HV = uint32_t(s.HV), H = uint32_t(s.H);
  const uint32_t head = blockIdx.z * gridDim.y + blockIdx.y;  // b * HV + hv
  if (head >= uint32_t(s.B) * HV) return;
  const uint32_t b = head / HV, hv = head - b * HV, h = hv / (HV / H);
  const int j0 = int(blockIdx.x) * kBlockCols, jb = warp * kCols + col, j = j0 + jb;
  const bool col_ok = j < V;

  // The state first (it does not depend on the front end); a lane past V reads column V - 1.
  using Raw = typename std::conditional<sizeof(St) == 4, float, unsigned short>::type;
  const int64_t slot = p.slots[b];
  const int64_t slice = (slot * HV + hv) * int64_t(K) * V + (col_ok ? j : V - 1);
  const Raw* const src = reinterpret_cast<const Raw*>(static_cast<const St*>(p.state) + slice) + int64_t(rg) * kRows * V;
  float S[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const bool row_ok = kFull || rg * kRows + r < K;
    if constexpr (sizeof(St) == 4)
      S[r] = row_ok ? src[r * V] : 0.0f;
    else
      S[r] = __uint_as_float(row_ok ? uint32_t(src[r * V]) : 0u);
  }
  if constexpr (kDecodePdl) asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the front end's rows

  decode_stage_rows_skewed<kK, kRows, kBlockCols>(fe + int64_t(b) * nt * lay.row, lay, h, hv, j0, K, V, nt, qk_s, v_s,
                                                   gates_s);
  __syncthreads();  // the only barrier: q, k, v and the gates are in place
  if constexpr (sizeof(St) == 2) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) S[r] = __uint_as_float(__float_as_uint(S[r]) << 16);
  }
  if (j0 + warp * kCols >= V) return;  // a warp wholly past V

  T* o = static_cast<T*>(p.o) + (int64_t(b) * nt * HV + hv) * V + j;
  decode_column_tokens<T, kRows, 16, L::kGroupsR>(S, qk_s[0][kFeQ] + rg * kSkew, qk_s[0][kFeK] + rg * kSkew,
                                                  2 * L::kGroupsR * kSkew, &v_s[0][jb], kBlockCols, gates_s, nt,
                                                  col_ok && rg == 0, o, int64_t(HV) * V, p);
  if (!col_ok) return;
  Raw* const dst = reinterpret_cast<Raw*>(static_cast<St*>(p.state) + slice) + int64_t(rg) * kRows * V;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (kFull || rg * kRows + r < K) {
      if constexpr (sizeof(St) == 4)
        dst[r * V] = S[r];
      else
        dst[r * V] = __bfloat16_as_ushort(__float2bfloat16_rn(S[r]));
    }
  }
}

// Version 8's state update for a bf16 pool at K = 128, V <= 128, with many slices (B x HV at
// least kDecodeStreamMinUnitsPerSm per SM): persistent blocks of 128 threads, 3 per SM, walk the
// slices (units b x HV + hv, block i taking i, i + grid, ...). Each slice's K x V state is
// contiguous in the pool (32 KiB in bf16 at K = V = 128) and comes into shared memory by one bulk
// copy (cp.async.bulk, completion on an mbarrier), `stages` slices ahead in a 64 KiB budget per
// block (2 stages in bf16). Thread j owns column j: it moves the column into registers, frees the
// buffer (the next bulk copy into it starts), runs the tokens as version 5 does
// (decode_lane_tokens: the same float32 operations) and stores the column from registers. While
// a slice is computed and stored the next one is in flight, where version 5's blocks load, then
// compute, then store. The first copies are issued before griddepcontrol.wait, while the front
// end runs; the front end's rows of the next slice come by 4-byte cp.async into the second of two
// buffers while the current one is used. Measured (runs 35-38, docs/perf-notes.md): with a bf16
// pool 5-13% faster than version 5 from B = 32 on (H = HV = 32); with a float32 pool (one 64 KiB
// stage per block) 2-5% slower, and one block per SM with three stages 14% slower: the float32
// pool stays on version 5.
constexpr int kStreamThreads = 128;
constexpr int kStreamBlocksPerSm = 3;        // the register cap (170) is set for this many
constexpr int kStreamMaxStages = 4;
constexpr int kStreamStateSmem = 64 * 1024;  // shared memory for the state stages, per block
constexpr int kStreamK = 128;                // registers per column (rows past K are zero)

// Slices per SM from which version 8 takes a bf16 pool (units = B x HV >= this x SMs); below it
// the split-column kernel (at B = 16, H = HV = 32, 512 slices: split 0.0238 ms, stream 0.0253).
static_assert(kDecodeStreamMinUnitsPerSm == 4, "kernels/plans/launch_plans.h: the stream takes 4 slices per SM");

// The front end's rows of one slice, every token, in dynamic shared memory after the state
// stages: q and k [T][2][kStreamK], v [T][kStreamThreads], the gates [T][2]; two such buffers,
// each rounded up to 16 bytes.
__host__ __device__ constexpr int stream_fe_floats(int nt) {
  return (nt * (2 * kStreamK + kStreamThreads + 2) + 3) / 4 * 4;
}
size_t stream_smem_bytes(int nt) { return size_t(kStreamStateSmem) + 2 * size_t(stream_fe_floats(nt)) * 4; }

__device__ __forceinline__ void dec_cp_async_4(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(bulk::smem_addr(smem)), "l"(gmem) : "memory");
}
// One slice by one bulk copy: its barrier's one arrival announces the slice's bytes.
__device__ __forceinline__ void dec_bulk_load(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
  bulk::arrive_expect_tx(bar, bytes);
  bulk::copy(smem, gmem, bytes, bar);
}

template <typename T, typename St>
__global__ void __launch_bounds__(kStreamThreads, kStreamBlocksPerSm)
gdn_decode_stream_kernel(const GdnFrontEndParams p, const float* fe, int stages) {
  constexpr int kK = kStreamK;
  extern __shared__ __align__(128) unsigned char stream_s[];  // [stages][K x V] of St, then the rows
  __shared__ __align__(8) uint64_t full[kStreamMaxStages];

  const GdnShape s = p.shape;
  const DecodeFeLayout lay(s);
  const int tid = threadIdx.x, K = int(s.K), V = int(s.V), nt = int(s.T);
  const int j = tid < V ? tid : V - 1;  // threads past V compute on column V - 1 and store nothing
  const bool col_ok = tid < V;
  const int64_t HV = s.HV, group = s.HV / s.H, units = s.B * HV, slice = int64_t(K) * V;
  const uint32_t slice_bytes = uint32_t(slice * int64_t(sizeof(St)));
  const int64_t first = blockIdx.x, stride = gridDim.x;
  const int count = first < units ? int((units - 1 - first) / stride + 1) : 0;  // this block's slices
  St* const pool = static_cast<St*>(p.state);
  auto slot_of = [&](int n) { return int64_t(p.slots[(first + n * stride) / HV]); };
  auto buffer = [&](int n) { return stream_s + size_t(n % stages) * slice_bytes; };
  auto state_at = [&](int n, int64_t slot) { return pool + (slot * HV + (first + n * stride) % HV) * slice; };
  // Front-end rows buffer f: q and k, then v, then the gates.
  float* const rows_s = reinterpret_cast<float*>(stream_s + kStreamStateSmem);
  auto qk_of = [&](int f) { return reinterpret_cast<float(*)[2][kK]>(rows_s + f * stream_fe_floats(nt)); };
  auto v_of = [&](int f) { return rows_s + f * stream_fe_floats(nt) + nt * 2 * kK; };
  auto gates_of = [&](int f) {
    return reinterpret_cast<float(*)[2]>(rows_s + f * stream_fe_floats(nt) + nt * (2 * kK + kStreamThreads));
  };

  if (tid == 0) {
    for (int i = 0; i < stages; ++i) bulk::mbarrier_init<1>(&full[i]);
    bulk::fence_mbarrier_init();
  }
  __syncthreads();
  // The slots and the state do not depend on the front end: the first copies go out now.
  if (tid == 0)
    for (int n = 0; n < stages && n < count; ++n) dec_bulk_load(buffer(n), state_at(n, slot_of(n)), slice_bytes, &full[n]);
  if constexpr (kDecodePdl) asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the front end's rows

  // Slice n's rows of every token into buffer n % 2: q and k of head h, v and the gates of hv.
  const int per_token = 2 * K + V + 2;
  auto copy_fe = [&](int n) {
    const int64_t unit = first + n * stride, b = unit / HV, hv = unit % HV, h = hv / group;
    float(*qk)[2][kK] = qk_of(n % 2);
    float* v = v_of(n % 2);
    float(*gates)[2] = gates_of(n % 2);
    for (int x = tid; x < nt * per_token; x += kStreamThreads) {
      const int t = x / per_token, e = x % per_token;
      const float* row = fe + (b * nt + t) * lay.row;
      if (e < 2 * K)
        dec_cp_async_4(&qk[t][e / K][e % K], row + (e / K) * lay.qk + h * K + e % K);
      else if (e < 2 * K + V)
        dec_cp_async_4(&v[t * kStreamThreads + e - 2 * K], row + 2 * lay.qk + hv * V + (e - 2 * K));
      else
        dec_cp_async_4(&gates[t][e - 2 * K - V], row + 2 * lay.qk + lay.v + 2 * hv + (e - 2 * K - V));
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  if (count > 0) copy_fe(0);

  for (int n = 0; n < count; ++n) {
    const int64_t slot = slot_of(n);  // for the stores; the refill's slot is asked early too
    const int64_t refill_slot = tid == 0 && n + stages < count ? slot_of(n + stages) : 0;
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads();  // slice n's rows are in buffer n % 2; every thread is done with slice n - 1's
    if (n + 1 < count) copy_fe(n + 1);
    bulk::wait(&full[n % stages], uint32_t(n / stages) & 1u);
    const St* const in = reinterpret_cast<const St*>(buffer(n));
    float S[kK];
#pragma unroll
    for (int i = 0; i < kK; ++i) {
      if constexpr (sizeof(St) == 4)
        S[i] = in[i * V + j];
      else
        S[i] = __bfloat162float(in[i * V + j]);
    }
    __syncthreads();  // the buffer is in registers: it takes slice n + stages
    if (tid == 0 && n + stages < count) dec_bulk_load(buffer(n), state_at(n + stages, refill_slot), slice_bytes, &full[n % stages]);

    const int64_t unit = first + n * stride, b = unit / HV, hv = unit % HV;
    T* o = static_cast<T*>(p.o) + (b * nt * HV + hv) * V + j;
    decode_lane_tokens<T, kK>(S, qk_of(n % 2), v_of(n % 2) + j, kStreamThreads, gates_of(n % 2), nt, col_ok, o,
                              HV * V, p);
    if (col_ok) {
      St* const out = state_at(n, slot) + j;
#pragma unroll
      for (int i = 0; i < kK; ++i) {
        if constexpr (sizeof(St) == 4)
          out[i * V] = S[i];
        else
          out[i * V] = __float2bfloat16_rn(S[i]);
      }
    }
  }
}

// Static shared memory of a kernel in bytes, or -1 where the query fails.
template <typename Kernel>
int64_t decode_static_smem(Kernel kernel) {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, kernel) == cudaSuccess) return int64_t(attr.sharedSizeBytes);
  (void)cudaGetLastError();  // not the launch's error: the launch reports its own
  return -1;
}

// The current device and its SMs, asked once per device.
cudaError_t decode_device(int& device, int& sms) {
  static std::atomic<int> sms_cache[kMaxDevices];  // 0: not asked yet
  if (const cudaError_t e = cudaGetDevice(&device)) return e;
  sms = device >= 0 && device < kMaxDevices ? sms_cache[device].load(std::memory_order_relaxed) : 0;
  if (sms > 0) return cudaSuccess;
  if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) return e;
  if (device >= 0 && device < kMaxDevices) sms_cache[device].store(sms, std::memory_order_relaxed);
  return cudaSuccess;
}

// The blocks of `kernel` resident at once on the current device (its first wave: at most SMs x 32,
// so it fits the kernels' uint32_t), asked once per device into `cache` (0: not asked yet) and
// kept: a decode step is launched once per token.
template <typename Kernel>
cudaError_t decode_resident_blocks(Kernel kernel, int threads, size_t smem, std::atomic<int64_t> (&cache)[kMaxDevices],
                                   int64_t& resident) {
  int device = 0, sms = 0;
  if (const cudaError_t e = decode_device(device, sms)) return e;
  std::atomic<int64_t>* cached = device >= 0 && device < kMaxDevices ? &cache[device] : nullptr;
  resident = cached ? cached->load(std::memory_order_relaxed) : 0;
  if (resident > 0) return cudaSuccess;
  int per_sm = 0;
  if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem)) return e;
  resident = int64_t(sms) * per_sm;
  if (cached) cached->store(resident, std::memory_order_relaxed);
  return cudaSuccess;
}

// Batch rows per front-end block at T = 1 (kernel 1's kRows); T > 1 takes one row per block.
constexpr int kFeRowsT1 = 4;

// Kernel 1's blocks resident at once at this shape's block size: the plan (decode_plan) takes
// kFeRowsT1 batch rows per block at T = 1 where one row per block would need more than two waves
// of them (measured on the H200, run 32: at B = 8, H = HV = 32, four rows per block were 8%
// slower, at B = 64 5-10% faster). Asked once per (device, block size) and kept: a decode step is
// launched once per token, and the query would otherwise sit on its launch path every time.
template <typename T>
cudaError_t decode_fe_row_resident(const GdnShape& s, int64_t& resident) {
  constexpr int kSizes = kFeMaxThreads / 32;
  static std::atomic<int64_t> resident_cache[kSizes][kMaxDevices];  // [warps - 1]
  const int threads = int(decode_fe_threads(s));
  return decode_resident_blocks(gdn_decode_frontend_kernel<T, 1>, threads, 0, resident_cache[threads / 32 - 1],
                                resident);
}

// Kernel 1v's grid: the blocks of the q and k rows, then those of the v rows.
struct DecodeFeVecGrid {
  int64_t qk_blocks, blocks;
};
DecodeFeVecGrid decode_fe_vec_grid(const GdnShape& s) {
  auto blocks = [](int64_t rows, int64_t D) {
    const int64_t per_block = kFeVecThreads >> fe_lanes_log2(int(D));
    return (rows + per_block - 1) / per_block;
  };
  const int64_t qk = blocks(s.B * 2 * s.H, s.K);
  return {qk, qk + blocks(s.B * s.HV, s.V)};
}

// The vector front end's 16-byte accesses: projections, caches, taps and biases on 16-byte boundaries.
bool decode_fe_inputs_aligned(const GdnFrontEndParams& p) {
  bool ok = true;
  for (int t = 0; t < 3; ++t)
    ok = ok && aligned16(p.x[t]) && aligned16(p.cache_out[t]) && aligned16(p.conv_w[t]) &&
         aligned16(p.conv_bias[t]);  // nullptr: aligned
  return ok;
}

template <typename T>
cudaError_t launch_decode_frontend_vec(const GdnFrontEndParams& p, float* fe, bool early_trigger, cudaStream_t stream) {
  if constexpr (sizeof(T) == 2) {
    const DecodeFeVecGrid g = decode_fe_vec_grid(p.shape);
    const unsigned blocks = unsigned(g.blocks), qk_blocks = unsigned(g.qk_blocks);
    int device = 0, sms = 0;
    if (const cudaError_t e = decode_device(device, sms)) return e;
    const bool whole_sectors = g.blocks >= kFeWholeSectorBlocksPerSm * int64_t(sms);
    const size_t smem = whole_sectors ? kFeStageBytes : 0;
    if (p.shape.T == 1)
      gdn_decode_frontend_vec_kernel<T, 1>
          <<<blocks, kFeVecThreads, smem, stream>>>(p, fe, qk_blocks, whole_sectors, early_trigger);
    else
      gdn_decode_frontend_vec_kernel<T, kFeVecMaxTokens>
          <<<blocks, kFeVecThreads, smem, stream>>>(p, fe, qk_blocks, whole_sectors, early_trigger);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;  // not taken: the plan gives float32 inputs no vector front end
}

// Whether the front end lets the state kernel launch from its start (griddepcontrol.launch_dependents
// first) or as its blocks exit. Early, the state blocks' loads overlap the front end: without PDL
// the step is 3.5 us slower at B = 8 and 64 with a float32 pool (run 78). The persistent stream
// kernel (a bf16 pool) starts at the exits from kStreamLateTriggerUnitsPerSm slices per SM (runs
// 78-79, H = HV = 32: B = 64, 15.5 slices per SM, 0.0600 -> 0.0574 ms; B = 256 -1%; but B = 32,
// 7.8 per SM, +1.5%). Why is not measured; a likely cause: launched early, some of its
// persistent blocks wait for front-end blocks' SM slots, and its static walk of the slices ends
// with theirs.
enum class FeTrigger { early, at_exit };
constexpr int kStreamLateTriggerUnitsPerSm = 8;

template <typename T>
cudaError_t launch_decode_frontend(const GdnFrontEndParams& p, float* fe, cudaStream_t stream,
                                   FeTrigger trigger = FeTrigger::early) {
  const bool early_trigger = trigger == FeTrigger::early;
  if (p.decode_fe == DecodeFeKernel::vector) return launch_decode_frontend_vec<T>(p, fe, early_trigger, stream);
  const unsigned heads = unsigned(2 * p.shape.H + p.shape.HV), threads = decode_fe_threads(p.shape);
  if (p.decode_fe == DecodeFeKernel::rows) {
    const dim3 fe_grid(heads, unsigned((p.shape.B + kFeRowsT1 - 1) / kFeRowsT1));
    gdn_decode_frontend_kernel<T, kFeRowsT1><<<fe_grid, threads, 0, stream>>>(p, fe, early_trigger);
  } else {
    gdn_decode_frontend_kernel<T, 1><<<dim3(heads, unsigned(p.shape.B)), threads, 0, stream>>>(p, fe, early_trigger);
  }
  return cudaGetLastError();
}

template <typename T, typename St, int kRows, int kWarps>
cudaError_t launch_decode_shape(const GdnFrontEndParams& p, float* fe, const dim3& grid,
                                cudaStream_t stream) {
  constexpr int kChunkElems = 16 / int(sizeof(St));
  const size_t smem = decode_dynamic_smem<St, kRows * kWarps>(p.shape.T);
  // 16-byte copies need every state row of the block on a 16-byte boundary.
  const bool async = p.shape.V % kChunkElems == 0 && aligned16(p.state);
  auto kernel = async ? gdn_decode_kernel<T, St, kRows, kWarps, true> : gdn_decode_kernel<T, St, kRows, kWarps, false>;
  // Without the opt-in a launch may use 48 KiB of shared memory in all, static included: the
  // default dynamic limit is 48 KiB minus the kernel's static part (7.2 KiB at W = 16), so K = 256
  // with a float32 state at T = 5..7 (42-46 KiB dynamic) needs the opt-in too. The static size
  // is a property of the compiled kernel; -1 (query failed) always opts in.
  static const int64_t static_smem[2] = {decode_static_smem(gdn_decode_kernel<T, St, kRows, kWarps, false>),
                                         decode_static_smem(gdn_decode_kernel<T, St, kRows, kWarps, true>)};
  const int64_t static_bytes = static_smem[async ? 1 : 0];
  if (static_bytes < 0 || int64_t(smem) + static_bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  // The front end rolls the conv caches in place, so it is launched only once the state update
  // can be: an error before this point leaves the pools untouched.
  if (const cudaError_t e = launch_decode_frontend<T>(p, fe, stream)) return e;
  kernel<<<grid, kWarps * 32, smem, stream>>>(p, fe);
  return cudaGetLastError();
}

// Launches the state kernel after the front end, with the programmatic stream serialisation
// attribute under kDecodePdl (its blocks may start while the front end runs: they wait with
// griddepcontrol.wait before reading its rows). Should the runtime refuse that launch, the plain
// one follows: the front end has run, so the state update must too.
template <typename... Args>
cudaError_t launch_after_front_end(void (*kernel)(Args...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                   Args... args) {
  if constexpr (kDecodePdl) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelEx(&cfg, kernel, args...) == cudaSuccess) return cudaSuccess;
    (void)cudaGetLastError();
  }
  kernel<<<grid, block, smem, stream>>>(args...);
  return cudaGetLastError();
}

// Version 5's blocks (K <= 128): W = min(max_warps, ceil(V / 32)) warps, the column groups of a
// (b, hv).
int64_t decode_lane_warps(const GdnShape& s, int max_warps) {
  const int64_t groups = (s.V + 31) / 32;
  return groups < max_warps ? groups : max_warps;
}
dim3 decode_lane_grid(const GdnShape& s, int max_warps) {
  const int64_t groups = (s.V + 31) / 32, warps = decode_lane_warps(s, max_warps);
  return decode_heads_grid(s, (groups + warps - 1) / warps);
}

// Version 5 (K <= 128): the front end, then gdn_decode_lane_kernel in C's blocks.
template <typename T, typename St, int kK, typename C>
cudaError_t launch_decode_lane(const GdnFrontEndParams& p, float* fe, cudaStream_t stream) {
  const dim3 grid = decode_lane_grid(p.shape, C::kWarps);
  const dim3 block(unsigned(decode_lane_warps(p.shape, C::kWarps) * 32));
  if (const cudaError_t e = launch_decode_frontend<T>(p, fe, stream)) return e;
  const float* rows = fe;
  auto kernel = p.shape.K == kK ? gdn_decode_lane_kernel<T, St, kK, true, C::kWarps, C::kMinBlocks>
                                : gdn_decode_lane_kernel<T, St, kK, false, C::kWarps, C::kMinBlocks>;
  return launch_after_front_end(kernel, grid, block, 0, stream, p, rows);
}

// The quad kernel (decode_quad_shape): the front end, then gdn_decode_quad_kernel.
template <typename T>
cudaError_t launch_decode_quad(const GdnFrontEndParams& p, float* fe, cudaStream_t stream) {
  using L = DecodeQuad;
  const dim3 grid = decode_heads_grid(p.shape, (p.shape.V + L::kWarps * 32 - 1) / (L::kWarps * 32));
  const bool full = p.shape.K == L::kK;
  auto kernel = full ? gdn_decode_quad_kernel<T, true> : gdn_decode_quad_kernel<T, false>;
  // Measured (run 105, B = 64 and 256): -1 to -2% at T = 1 (GVA) and T = 2, +1 to +2% at T = 8,
  // whose longer blocks leave the prefetched slices waiting in L2 longer; T = 4 not measured.
  const uint32_t ahead = p.shape.T <= 2 ? kDecodeL2AheadHeads : 0;
  static std::atomic<int64_t> resident_cache[2][kMaxDevices];  // [full]
  int64_t resident = 0;  // only the prefetch's rule reads it
  if (ahead > 0)
    if (const cudaError_t e = decode_resident_blocks(kernel, L::kWarps * 32, 0, resident_cache[full], resident))
      return e;
  if (const cudaError_t e = launch_decode_frontend<T>(p, fe, stream)) return e;
  const float* rows = fe;
  return launch_after_front_end(kernel, grid, dim3(L::kWarps * 32), 0, stream, p, rows, ahead, uint32_t(resident));
}

// Versions 14-15 (gdn_decode_quad_fe_kernel): the whole step in one launch; its slice copy is
// dynamic shared memory past the default 48 KiB, so the kernel is opted in once. Its resident
// blocks (version 15's first wave) are asked once per device and kept, as decode_fe_takes_rows
// does: a step is launched once per token.
template <typename T>
cudaError_t launch_decode_quad_fe(const GdnFrontEndParams& p, cudaStream_t stream) {
  using L = DecodeQuadFe;
  static const cudaError_t opt_in = cudaFuncSetAttribute(
      gdn_decode_quad_fe_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(L::kSliceBytes));
  if (opt_in != cudaSuccess) return opt_in;
  static std::atomic<int64_t> resident_cache[kMaxDevices];
  int64_t resident = 0;
  if (const cudaError_t e =
          decode_resident_blocks(gdn_decode_quad_fe_kernel<T>, L::kWarps * 32, L::kSliceBytes, resident_cache, resident))
    return e;
  gdn_decode_quad_fe_kernel<T><<<decode_heads_grid(p.shape, 1), L::kWarps * 32, L::kSliceBytes, stream>>>(
      p, uint32_t(resident));
  return cudaGetLastError();
}

// The split-column kernel (K <= 128): the front end, then gdn_decode_split_kernel.
template <typename T, typename St>
cudaError_t launch_decode_split(const GdnFrontEndParams& p, float* fe, cudaStream_t stream) {
  using L = DecodeSplit<St>;
  const dim3 grid = decode_heads_grid(p.shape, (p.shape.V + L::kBlockCols - 1) / L::kBlockCols);
  if (const cudaError_t e = launch_decode_frontend<T>(p, fe, stream)) return e;
  const float* rows = fe;
  auto kernel = p.shape.K == L::kK ? gdn_decode_split_kernel<T, St, true> : gdn_decode_split_kernel<T, St, false>;
  return launch_after_front_end(kernel, grid, dim3(L::kWarps * 32), 0, stream, p, rows);
}

// The split-column and stream kernels are built for a bf16 pool only: a float32 pool's plan never
// takes them (fewer instances for nvcc to compile).
template <typename St>
constexpr bool kSplitAndStreamFor = sizeof(St) == 2;

// The stream's launch shape: its stages, persistent blocks (as many as are resident at once:
// kStreamBlocksPerSm per SM at T = 1, fewer where T's rows take the shared memory) and dynamic
// shared memory.
struct DecodeStreamLaunch {
  int stages = 0, blocks = 0;
  size_t smem = 0;
};

// Stream blocks resident per SM at this T, asked once per device and kept: a decode step is
// launched once per token. The opt-in that comes with the first question is to the shared memory
// of the largest T, the same every time: an opt-in to this T's would lower a larger T's, asked
// earlier, under its later launches.
template <typename T, typename St>
cudaError_t decode_stream_per_sm(int64_t nt, int& per_sm) {
  per_sm = 0;
  if constexpr (kSplitAndStreamFor<St>) {
    int device = 0, sms = 0;
    if (const cudaError_t e = decode_device(device, sms)) return e;
    static std::atomic<int> per_sm_cache[kMaxDevices][kDecodeMaxTokens + 1];  // 0: not asked yet
    std::atomic<int>* cached = device >= 0 && device < kMaxDevices ? &per_sm_cache[device][nt] : nullptr;
    per_sm = cached ? cached->load(std::memory_order_relaxed) : 0;
    if (per_sm > 0) return cudaSuccess;
    const auto kernel = gdn_decode_stream_kernel<T, St>;
    const int most = int(stream_smem_bytes(int(kDecodeMaxTokens)));
    if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most)) return e;
    if (const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kStreamThreads, stream_smem_bytes(int(nt))))
      return e;
    if (cached && per_sm > 0) cached->store(per_sm, std::memory_order_relaxed);
  }
  return cudaSuccess;
}

// The device facts decode_plan reads for this problem: the SMs, and the occupancy of the kernels
// whose grids decide (asked only where the plan looks at them).
template <typename T, typename St>
cudaError_t decode_plan_device(const GdnShape& s, PlanDevice& dev) {
  int device = 0;
  if (const cudaError_t e = decode_device(device, dev.sms)) return e;
  if (s.T == 1)
    if (const cudaError_t e = decode_fe_row_resident<T>(s, dev.decode_fe_row_resident)) return e;
  if (sizeof(St) == 2 && s.K == kStreamK && s.V <= kStreamThreads)
    if (const cudaError_t e = decode_stream_per_sm<T, St>(s.T, dev.decode_stream_per_sm)) return e;
  return cudaSuccess;
}

// The plan of p (decode_plan, kernels/plans/launch_plans.h) with its forced kernels, in `planned`.
template <typename T, typename St>
cudaError_t decode_resolve_plan(const GdnFrontEndParams& p, GdnFrontEndParams& planned) {
  planned = p;
  PlanDevice dev;
  if (const cudaError_t e = decode_plan_device<T, St>(p.shape, dev)) return e;
  DecodePlanInputs in{p.shape, p.dtype, sizeof(St) == 2, aligned16(p.state), decode_fe_inputs_aligned(p)};
  std::string why;
  const DecodePlan plan = decode_plan(in, dev, DecodePlan{p.decode_state, p.decode_fe}, &why);
  if (!why.empty()) return cudaErrorInvalidValue;  // a forced kernel that cannot run this problem
  planned.decode_state = plan.state;
  planned.decode_fe = plan.fe;
  return cudaSuccess;
}

// Version 8 (gdn_decode_stream_kernel): the front end, then the persistent state stream, opted
// in to its shared memory by decode_stream_per_sm.
template <typename T, typename St>
cudaError_t launch_decode_stream(const GdnFrontEndParams& p, float* fe, cudaStream_t stream) {
  int device = 0, sms = 0, per_sm = 0;
  if (const cudaError_t e = decode_device(device, sms)) return e;
  if (const cudaError_t e = decode_stream_per_sm<T, St>(p.shape.T, per_sm)) return e;
  if (per_sm < 1) return cudaErrorInvalidConfiguration;
  const GdnShape& s = p.shape;
  const int64_t slice_bytes = s.K * s.V * int64_t(sizeof(St)), units = s.B * s.HV;
  DecodeStreamLaunch launch;
  launch.stages = int(std::min<int64_t>(kStreamMaxStages, kStreamStateSmem / slice_bytes));
  launch.blocks = int(std::min<int64_t>(units, int64_t(per_sm) * sms));
  launch.smem = stream_smem_bytes(int(s.T));
  const bool late = units >= int64_t(kStreamLateTriggerUnitsPerSm) * sms;
  if (const cudaError_t e = launch_decode_frontend<T>(p, fe, stream, late ? FeTrigger::at_exit : FeTrigger::early))
    return e;
  const float* rows = fe;
  return launch_after_front_end(gdn_decode_stream_kernel<T, St>, dim3(unsigned(launch.blocks)), dim3(kStreamThreads),
                                launch.smem, stream, p, rows, launch.stages);
}

template <typename T, typename St>
cudaError_t launch_decode_for_types(const GdnFrontEndParams& given, float* fe, cudaStream_t stream) {
  GdnFrontEndParams p;
  if (const cudaError_t e = decode_resolve_plan<T, St>(given, p)) return e;
  switch (p.decode_state) {
    case DecodeStateKernel::stream:
      if constexpr (kSplitAndStreamFor<St>) return launch_decode_stream<T, St>(p, fe, stream);
      break;
    case DecodeStateKernel::split:
      if constexpr (kSplitAndStreamFor<St>) return launch_decode_split<T, St>(p, fe, stream);
      break;
    case DecodeStateKernel::lane64:
      return launch_decode_lane<T, St, 64, Lane64>(p, fe, stream);
    case DecodeStateKernel::lane_wide:
      if constexpr (sizeof(St) == 4) return launch_decode_lane<T, St, 128, LaneWide>(p, fe, stream);
      break;
    case DecodeStateKernel::lane_narrow:
      if constexpr (sizeof(St) == 4) return launch_decode_lane<T, St, 128, LaneNarrow>(p, fe, stream);
      break;
    case DecodeStateKernel::lane_one_wave:
      if constexpr (sizeof(St) == 4) return launch_decode_lane<T, St, 128, LaneOneWave>(p, fe, stream);
      break;
    case DecodeStateKernel::quad:
      if constexpr (sizeof(St) == 4) return launch_decode_quad<T>(p, fe, stream);
      break;
    case DecodeStateKernel::quad_fe:
      if constexpr (sizeof(St) == 4 && sizeof(T) == 2) return launch_decode_quad_fe<T>(p, stream);
      break;
    case DecodeStateKernel::block:
      return launch_decode_shape<T, St, 16, 16>(p, fe, decode_heads_grid(p.shape, (p.shape.V + 31) / 32), stream);
    case DecodeStateKernel::automatic: break;
  }
  return cudaErrorInvalidValue;  // a kernel this pool's plan never takes
}

template <typename T>
cudaError_t launch_decode_for_type(const GdnFrontEndParams& p, float* fe, cudaStream_t stream) {
  return p.state_bf16 ? launch_decode_for_types<T, __nv_bfloat16>(p, fe, stream)
                      : launch_decode_for_types<T, float>(p, fe, stream);
}

}  // namespace

const char* gdn_decode_shape_unsupported(const GdnShape& s) {
  if (s.T < 1 || s.T > kDecodeMaxTokens) return "decode takes 1 to 8 new tokens per sequence (T <= 8)";
  if (s.K > 256 || s.V > 256) return "K and V must be <= 256";
  if (s.H < 1 || s.HV % s.H != 0) return "HV must be a multiple of H";
  if (s.B * s.HV > kMaxGridY * kMaxGridY) return "B * HV too large for one grid";
  if (s.B > kMaxGridY) return "decode's front-end grid needs B <= 65535";
  return nullptr;
}

size_t gdn_decode_workspace_bytes(const GdnShape& s) {
  return size_t(s.B * s.T) * size_t(DecodeFeLayout(s).row) * sizeof(float);
}

int gdn_decode_plan_device(const GdnShape& shape, DType dtype, bool state_bf16, PlanDevice& dev) {
  if (gdn_decode_shape_unsupported(shape)) return int(cudaErrorInvalidValue);
  const cudaError_t e = dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return state_bf16 ? decode_plan_device<T, __nv_bfloat16>(shape, dev) : decode_plan_device<T, float>(shape, dev);
  });
  if (e != cudaSuccess) (void)cudaGetLastError();
  return int(e);
}

int launch_gdn_decode(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream) {
  if (gdn_decode_shape_unsupported(p.shape) || !workspace) return int(cudaErrorInvalidValue);
  if (!p.state || !p.slots || !p.o || !p.a || !p.b || !p.A_log || !p.dt_bias) return int(cudaErrorInvalidValue);
  for (int t = 0; t < 3; ++t)
    if (!p.x[t] || !p.conv_w[t] || !p.cache_in[t] || p.cache_in[t] != p.cache_out[t])
      return int(cudaErrorInvalidValue);
  float* fe = static_cast<float*>(workspace);
  return int(dispatch_dtype(p.dtype, [&](auto tag) { return launch_decode_for_type<decltype(tag)>(p, fe, stream); }));
}
