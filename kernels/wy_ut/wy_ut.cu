// wy_ut: the chunked GDN forward of DESIGN.md section 1 with its products on tensor cores
// (mma.sync m16n8k16, bf16/fp16 operands, float32 accumulation), chunk C = 64.
//   gamma = local cumsum of g;  A = strictly_lower(diag(beta) K K^T .* D), D_ij = exp(g_i - g_j)
//   Tm = (I + A)^-1;  W = Tm diag(beta exp(gamma)) K;  U0 = Tm diag(beta) V
//   per chunk, in sequence:  U = U0 - W S0;  S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
//   O = scale (diag(exp(gamma)) Q S0 + ((Q K^T) .* D .* causal_incl_diag) U)
// Versions: 1 three kernels, one per stage, loads then compute; 2 the scan prefetches
// the next chunk (cp.async double buffer) and splits S and U once per step into shared hi/lo
// planes; 3 put the output stage inside the scan for K <= 128 (states_output). Measured on the
// H200, version 3 was slower (T = 16384: 2.26 ms against 1.94; the scan's 128 blocks carried the
// output's work on their sequential chain) and was removed once fused_conv stopped using it
// (docs/perf-notes.md keeps its record); 4 (this one) pipelines the output stage and prepare: a
// block loops over several chunks of one head and copies the next chunk's tiles (output: the next
// value slices, q and k) while it computes; the scan is version 2's, and so is fused_conv's prepare
// (its front-end prologue builds the tiles); fused_conv's output is version 4's (version 3 of
// fused_conv, below) where K and V <= 128, else version 2's with a prologue.
//   1 prepare, grid (G, HV, B), block x taking chunks x, x + G, ... (G as for output, below): K K^T
//     on tensor cores, A in float32; Tm from the inverses of the four 16x16 diagonal blocks of
//     I + A (forward substitution, one column per lane) merged block by block,
//     X_ij = -X_ii sum_{j<=m<i} A_im X_mj (float32 SIMT); U0 then W on tensor cores. The next
//     chunk's tiles are copied (cp.async) into space this chunk is done with: its k over A once Tm
//     is built (K = 128, where the two tiles are the same 17 KiB; the regions then swap roles),
//     its v over this v once U0 is stored (overlapping W), g and beta in registers; at K = 64 and
//     256 its k only after W. The arithmetic is one function (prepare_chunk) for versions 2 and 4:
//     gamma, W and U0 are bit for bit version 2's (a test compares the bytes).
//   2 states, grid (V/32, HV, B), sequential over chunks: the state slice S (K x 32) lives in
//     float32 mma accumulators; per chunk U = U0 - W S and S = exp(gamma_last) S + K^T
//     (exp(gamma_last - gamma) .* U) on tensor cores; it saves the entering state and U to the
//     workspace for stage 3, and hT at the end. A thread's copies of each chunk's tiles have
//     fixed offsets, computed once (run 48: 27% fewer instructions per step, scan 700 -> 651 us at
//     T = 16384; version 5, one product layer per step, was slower: docs/perf-notes.md, run 46).
//   2' two-level scan (runs 52-53), where the plain scan's V/32 x HV x B blocks leave most SMs idle
//     (wy_ut_scan_groups in kernels/plans/launch_plans.h decides, with a cost model in scan steps; the issue's shapes fill the
//     machine and keep the plain scan): the chunks in G groups, S_end = M S_enter + R per group
//     (M = the product of the chunks' exp(gL) I - K~^T W, K x K; R the end from a zero state).
//     Pass 1 (one launch, the same kernel with kSeg): group 0 from h0 as the plain scan does (U,
//     states, and its end = the state entering group 1), groups 1 .. G-2 from a zero state (R) and,
//     in K/32 more blocks, from the identity with U0 = 0 (M's columns), writing only their ends.
//     The combine: E_g = M_{g-1} E_{g-1} + R_{g-1} for g = 2 .. G-1 (float32 FMAs, 8 value columns
//     a block, M streamed through two cp.async stages). Pass 3: groups 1 .. G-1 from E_g, writing
//     U, states and hT. ~2N/G sequential steps instead of N, for about three times the scan's
//     products. B = 1, K = V = 128, bf16 (run 53): 1.8-5.4x faster at HV = 1, 1.5-2.2x at
//     HV = 4, 1.2-1.4x at HV = 8 over T = 4K..64K; forced at HV = 32 it is 1.5x slower (run 52).
//   3 output, grid (G, HV, B), block x taking chunks x, x + G, ... (G from the device's resident
//     blocks: one wave): P = (Q K^T) .* D .* causal once per chunk, kept split in registers with
//     Q's fragments, then per slice of kSW value columns o = scale (exp(gamma) .* (Q S0) + P U),
//     S0 and U streamed from the workspace through a ring of slice buffers (cp.async), the next
//     chunk's q, k, gamma copied over the current ones once they are in registers. A thread's copies
//     have fixed offsets from a chunk's or slice's base, computed once (run 49: 513 -> 497 us at
//     T = 16384). o is bit for bit version 2's (same products, same order per 16 x 8 tile; a test
//     compares the bytes).
// Differs from chunked (SIMT float32): the products run on tensor cores. Differs from FLA's chunk
// kernel: operands that are not inputs are never rounded to bf16/fp16 alone (below).
// Rounding: q, k, v are exact in the dtype, so K K^T, Q K^T and every product with K, Q or V as one
// operand has exact operands on that side. A float32 operand x (Tm, S, W, U, P) is split into
// hi = dtype(x), lo = dtype(x - hi) and issued as two products (x ~ hi + lo: 16 significant bits
// in bf16, 22 in fp16); where both operands are float32 (W S, P U) three products (hi hi + lo hi +
// hi lo). So every intermediate carries ~1e-5 relative error (bf16 split) and o is limited by its
// final rounding to the dtype: expected rel_l2 ~ the dtype floor (bf16 ~1.6e-3, fp16 ~2.2e-4).
// gamma, A, Tm, the state and all accumulation are float32; the workspace is float32.
// Constraints: dtype bf16/fp16 (fp32 inputs are refused, not run in TF32), C = 64,
// K in {64, 128, 256}, V a multiple of 32 up to 256; fp16 splits need |S|, |U| < 65504.
// exp is only ever taken of gamma_i - gamma_j with j <= i < L (or of gamma itself), never of a
// positive difference, so strong decay underflows to 0 and never makes inf * 0. Rows past the end
// of a tail chunk keep gamma = 0 (the reference's layout), so they are masked, not exponentiated.
// Budget (128 threads = 4 warps per block everywhere; dynamic shared memory, raised past 48 KiB;
// the scan's grid is V/32 x HV x B blocks, one per SM, so its registers cost no occupancy):
//   prepare: k, v tiles 64 x (K+8) x 2 B + 64 x (V+8) x 2 B (34 KiB each at 256) + A, Tm
//     64 x 68 x 4 B = 17 KiB each + merge scratch 3 x 16 x 16 x 4 B = 3 KiB + 4 x 64 x 4 B
//     = 104 KiB at K = V = 256, 72 KiB at 128 (3 blocks per SM), 56 KiB at 64 (4); version 4 the
//     same bytes in another order (k, A, v, Tm, scratch). Registers: 8 accumulator tiles (32) +
//     split Tm fragments (32); ptxas: 80 (version 2), 123 / 123 bf16 / fp16 (version 4: the chunk
//     loop, the copy addresses, next g and beta; 4 blocks per SM, so shared memory still decides).
//   states, one stage: k 64 x (K+8) x 2 B (17 KiB at 128) + W 64 x (K+8) x 4 B (34 KiB) + U0
//     64 x 36 x 4 B (9 KiB) + gamma 256 B; planes (K+64) x 40 x 2 B x 2 for S0 and
//     exp(gL - gamma) .* U (30 KiB at 128). 2 stages + planes = 150.5 KiB at K = 128, 1 stage +
//     planes = 158.3 KiB at 256. Registers: state K x 32 / 128 threads (32 floats at K = 128) + U
//     16 + W S partial sums 32 + the copies' per-thread addresses; ptxas (bf16 / fp16): 127 / 128,
//     127 / 127, 166 / 170 at K = 64, 128, 256 (168 / 168, 162 / 164, 254 / 233 before the copy
//     addresses were hoisted out of the chunk loop).
//   output (version 4): q, k tiles 2 x 64 x (K+8) x 2 B + gamma 256 B + kStages slice buffers of
//     (K + 64) x (kSW + 4) x 4 B (S0 and U): K = 64: kSW 32, 2 stages, 18 KiB + 36 KiB = 54.25 KiB
//     (4 blocks per SM); K = 128: kSW 16, 2 stages, 34.25 KiB + 30 KiB = 64.25 KiB (3 per SM);
//     K = 256: kSW 8, 3 stages, 66.25 KiB + 45 KiB = 111.25 KiB (2 per SM). Registers: Q's
//     fragments K/4 + P hi/lo 32 + kSW/2 accumulators + the copies' per-thread addresses; ptxas
//     (bf16 / fp16): 123 / 123, 128 / 128, 164 / 164 at K = 64, 128, 256 (registers allow 4, 4, 3
//     blocks per SM; shared memory 4, 3, 2).
//     Version 2's kernel (fused_conv, and the tests' reference): q tile 33 KiB + (k tile | S0
//     slice) 36 KiB + P 17 KiB + U slice 9 KiB = 95 KiB at K = 256, 61.25 KiB at 128; ptxas: 71.
//   two-level: the scan's kSeg instances as the plain ones (ptxas bf16 / fp16: 128 / 130, 128 / 128,
//     168 / 170 at K = 64, 128, 256; 24 bytes spilled by the bf16 K = 256 instance only); the
//     combine: E's slice K x 12 floats + 2 stages of (M's slab K x 68 + R's slice K x 12) floats
//     = 43 / 86 / 172 KiB at K = 64 / 128 / 256; 56 / 64 / 75 registers.
//     Workspace: B HV G K (2V + K) x 4 B more (the group ends and entering states) when G > 1.
//   No spills (but the one above), no stack frame (ptxas -v). Workspace: B HV N (C + C K + C V +
//   K V) x 4 B (gamma, W, U, the chunk states): ~2 KiB per token and value head at K = V = 128.
// fused_conv (kFe, K in {64, 128}; declared in kernels/frontend/frontend.h): version 2's prepare and output
// kernels with the front end (kernels/frontend/frontend.cuh) in their prologues, the scan unchanged.
// prepare builds its k tile (conv, SiLU, L2 norm) and v tile (conv, SiLU) from the raw rows of
// tokens [t0 - 3, t0 + 64) (the conv cache before t = 0) and g, beta from a, b; one value head of
// each q/k head group (the one that writes the final q/k conv caches) also writes the k tile to
// fused_conv's workspace, [B, T, H, K] like p.k, where the scan and output read it. Output builds
// its q tile from the raw q rows the same way. So k reaches global memory once, in the workspace
// like W and U; q, v, g, beta never. The front end runs in the parallel kernels only (N x HV x B
// blocks), not on the scan's sequential chain (fused_conv's version 1 built q and k in the fused
// scan: 3x slower than unfused_conv, docs/perf-notes.md). The tile builder (fe_build_tile) is the
// front-end kernel's register roll (fe_roll): a thread owns 8 consecutive channels of a run of
// 64 x lanes / 128 consecutive rows (8 at D = 128), 16-byte loads of the run and its 3 rows
// before, conv and SiLU in registers, the per-row sum of squares by shuffles over the lanes of
// the row, 16-byte stores to the tile; so q, k, v are the front-end kernel's bits and o, hT equal
// unfused_conv's bit for bit. Shared memory: as without the front end (the raw rows and taps stay
// in registers). ptxas (bf16 / fp16): prepare 128 / 124 (80 without; 3 blocks per SM at
// K = V = 128 either way, 4 at 64), output 120 / 119 (71 without; 3 blocks per SM at K = 128
// either way, 4 instead of 5 at 64); no spills, no stack frame.
// fused_conv version 3 (runs 57-58), where K and V <= 128 (gdn_fused_conv_pipelined): the output is
// version 4's pipelined kernel (gdn_wy_ut_output_v4_fe_kernel, capped for 3 blocks per SM): its
// copies bring the next chunk's raw q rows into the q tile and the 3 rows before into a halo
// buffer past the layout's bytes (816 B at K = 128), and at the chunk's first slice
// fe_convert_tile turns them into the q tile in place (fe_roll's mapping and operations, so o and
// hT are still unfused_conv's bit for bit; taps and rows kept packed: the chunk loop leaves few
// registers). ptxas: 158-160 registers at K = 128 (3 blocks per SM as the plain kernel), 155-168 at
// 64 (3 instead of 4); no spills. fused_conv at 16K 2.255 -> 2.123 ms (unfused_conv 2.016). The same
// conversion in version 4's prepare (k and v) was slower: 2.85 ms capped for 3 blocks per SM (264
// bytes spilled), 2.77 for 2 (docs/experiments/fused-conv-v3-prepare.patch), so prepare stays
// version 2's with its prologue.
// Padding: 16-bit tiles have rows of K+8 elements (16 B apart mod 128: ldmatrix conflict free);
// float32 slices have rows of 36 floats (version 4's output: kSW + 4 = 36, 20, 12 at K = 64, 128,
// 256), so the column-pair reads of a B fragment (rows 2t, 2t+1, column g) hit 32 distinct banks.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/frontend/frontend.cuh"
#include "kernels/common/tensor_core.cuh"
#include "kernels/wy_ut/wy_ut.h"

namespace {

using tc::cp_async16;
using tc::cp_async_commit;
using tc::cp_async_wait;
using tc::ldsm_x4;
using tc::ldsm_x4_trans;
using tc::Mma;

constexpr int kC = kWyUtChunk;
constexpr int kThreads = 128;
constexpr int kBV = 32;          // value columns per state block and per output slice
constexpr int kLdCC = kC + 4;    // row stride (floats) of the C x C float32 tiles A, Tm, P
constexpr int kLdBV = kBV + 4;   // row stride (floats) of the float32 S and U slices

__device__ __forceinline__ int lane_id() { return int(threadIdx.x & 31); }

// x ~ hi + lo with hi, lo in the dtype: a float32 operand as two tensor-core operands.
template <typename T>
__device__ __forceinline__ void split2(float x, float y, uint32_t& hi, uint32_t& lo) {
  hi = Mma<T>::pack(x, y);
  const float2 h = Mma<T>::unpack(hi);
  lo = Mma<T>::pack(x - h.x, y - h.y);
}

// 16-bit tiles in shared memory (rows 16-byte aligned); p points at the tile's (0, 0) element.
// A(r, c) = p[r * ld + c].
template <typename T>
__device__ __forceinline__ void ldsm_a(uint32_t a[4], const T* p, int ld) {
  const int l = lane_id();
  ldsm_x4(a, p + (l & 15) * ld + (l >> 4) * 8);
}
// A(r, c) = p[c * ld + r] (the transpose is stored).
template <typename T>
__device__ __forceinline__ void ldsm_a_trans(uint32_t a[4], const T* p, int ld) {
  const int l = lane_id(), m = l >> 3;
  ldsm_x4_trans(a, p + ((l & 7) + (m >> 1) * 8) * ld + (m & 1) * 8);
}
// Two n-tiles (16 columns) of B with B(k, n) = p[n * ld + k]: b[0] columns 0-7, b[1] 8-15.
template <typename T>
__device__ __forceinline__ void ldsm_b2(uint32_t b[2][2], const T* p, int ld) {
  const int l = lane_id(), m = l >> 3;
  uint32_t r[4];
  ldsm_x4(r, p + ((l & 7) + (m >> 1) * 8) * ld + (m & 1) * 8);
  b[0][0] = r[0]; b[0][1] = r[1]; b[1][0] = r[2]; b[1][1] = r[3];
}
// Two n-tiles of B with B(k, n) = p[k * ld + n].
template <typename T>
__device__ __forceinline__ void ldsm_b2_trans(uint32_t b[2][2], const T* p, int ld) {
  const int l = lane_id(), m = l >> 3;
  uint32_t r[4];
  ldsm_x4_trans(r, p + ((l & 7) + (m & 1) * 8) * ld + (m >> 1) * 8);
  b[0][0] = r[0]; b[0][1] = r[1]; b[1][0] = r[2]; b[1][1] = r[3];
}

// Float32 operands (shared or global memory), split into hi and lo fragments.
// A(r, c) = p[r * ld + c] * (col_scale ? col_scale[c] : 1).
template <typename T>
__device__ __forceinline__ void lda_split(uint32_t hi[4], uint32_t lo[4], const float* p, int64_t ld,
                                          const float* col_scale = nullptr) {
  const int l = lane_id(), g = l >> 2, t = (l & 3) * 2;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = g + (i & 1) * 8, c = t + (i >> 1) * 8;
    float2 x = *reinterpret_cast<const float2*>(p + r * ld + c);
    if (col_scale) {
      x.x *= col_scale[c];
      x.y *= col_scale[c + 1];
    }
    split2<T>(x.x, x.y, hi[i], lo[i]);
  }
}
// B(k, n) = p[k * ld + n].
template <typename T>
__device__ __forceinline__ void ldb_split(uint32_t hi[2], uint32_t lo[2], const float* p, int ld) {
  const int l = lane_id(), g = l >> 2, t = (l & 3) * 2;
  split2<T>(p[t * ld + g], p[(t + 1) * ld + g], hi[0], lo[0]);
  split2<T>(p[(t + 8) * ld + g], p[(t + 9) * ld + g], hi[1], lo[1]);
}

// acc = X Y^T on the 16 rows of warp `warp` and column blocks 0..warp only: the lower block
// triangle of a C x C product (K K^T for A, Q K^T for P). X and Y are C x K 16-bit tiles in shared
// memory with rows `ld` elements apart; acc[nt] holds columns 8 nt .. 8 nt + 7.
template <typename T>
__device__ __forceinline__ void lower_block_product(float acc[8][4], const T* x_s, const T* y_s, int ld, int K,
                                                    int warp) {
  for (int ks = 0; ks < K / 16; ++ks) {
    uint32_t a[4];
    ldsm_a(a, x_s + 16 * warp * ld + 16 * ks, ld);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      if (np > warp) break;
      uint32_t bb[2][2];
      ldsm_b2(bb, y_s + 16 * np * ld + 16 * ks, ld);
      Mma<T>::run(acc[2 * np], a, bb[0]);
      Mma<T>::run(acc[2 * np + 1], a, bb[1]);
    }
  }
}

// Rows [0, L) of a [rows, cols] 16-bit tensor with row stride `stride` (elements) into shared
// rows of `ld` elements; rows [L, C) are zero. cols is a multiple of 8 (16-byte vectors).
template <typename T>
__device__ __forceinline__ void load_rows(T* dst, int ld, const T* src, int64_t stride, int cols, int L) {
  const int vecs = cols / 8;
  for (int x = threadIdx.x; x < kC * vecs; x += kThreads) {
    const int r = x / vecs, c = (x % vecs) * 8;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < L) val = *reinterpret_cast<const uint4*>(src + r * stride + c);
    *reinterpret_cast<uint4*>(dst + r * ld + c) = val;
  }
}

// ---------------------------------------------------------------------------------------------
// The front-end prologue of fused_conv: prepare and output build their 16-bit tiles straight from
// the raw projections (q, v, g and beta never exist in global memory; k once, in the workspace).

// Rows [0, 64) of one head's 16-bit tile (row stride ld) for the chunk at token t0 (L rows in the
// sequence, zeros past them), from the raw projection x [B, T, channels] at channels [ch0, ch0 + D):
// conv4 (the cache before t = 0), SiLU, and with `norm` the L2 norm of each row. The roll of the
// front-end kernel (fe_roll, kernels/frontend/frontend.cuh): thread tid owns kFeVec channels of a run of
// kC x lanes / kThreads consecutive rows (8 at D = 128; D >= 32 here, so at least 2) with the 3
// input rows before the run, so each row is, bit for bit, what gdn_frontend_kernel writes for
// that token. `copy` (nullptr: none) gets
// the rows < L as well, [B, T, .] with rows copy_stride elements apart at channel ch0.
// x, w and bias 16-byte aligned and D a multiple of 8 (the launcher checks).
template <typename T>
__device__ __forceinline__ void fe_build_tile(T* dst, int ld, const T* x, const T* cache, const T* w,
                                              const T* bias, int64_t b, int64_t t0, int64_t T_len,
                                              int64_t channels, int64_t ch0, int D, int L, bool norm,
                                              float eps, T* copy, int64_t copy_stride) {
  const int shift = fe_lanes_log2(D), lanes = 1 << shift;
  const int run = kC * lanes / kThreads;
  const int tid = int(threadIdx.x);
  const int r0 = (tid >> shift) * run, c0 = (tid & (lanes - 1)) * kFeVec, n = D - c0;
  const bool active = c0 < D;  // lanes past the head's channels compute zeros, write nothing
  const int valid = L - r0 < 0 ? 0 : (L - r0 < run ? L - r0 : run);
  const bool reads = active && valid > 0;  // the run's rows (and the 3 before) exist
  const int64_t ch = ch0 + c0;
  const T* xr = x + (b * T_len + t0 + r0) * channels + ch;
  ConvChannel conv[kFeVec];
  fe_load_taps<T, true>(conv, w, bias, ch, n, active);
  fe_load_history<T, true>(conv, xr, cache, b, t0 + r0, channels, ch, n, reads);
  T* cp = copy ? copy + (b * T_len + t0 + r0) * copy_stride + ch : nullptr;
  fe_roll<T, true>(conv, xr, channels, run, valid, n, reads, norm, lanes, eps,
                   [&](int i, const float (&y)[kFeVec], bool in_sequence) {
                     if (!active) return;
                     T* row = dst + (r0 + i) * ld + c0;
                     if (!in_sequence) {
                       *reinterpret_cast<uint4*>(row) = make_uint4(0, 0, 0, 0);
                       return;
                     }
                     fe_store<T, true>(row, y, n);
                     if (cp) fe_store<T, true>(cp + i * copy_stride, y, n);
                   });
}

// Version 4's front end (fused_conv on the pipelined kernels): the raw rows of the next chunk are
// copied (cp.async) into the tile they will become, the 3 rows before them into a small halo
// buffer, while this chunk computes; at the chunk's start the tile is converted in place.
constexpr int kFeHaloRows = kConvCache;
__host__ __device__ constexpr int fe_halo_bytes(int D) { return kFeHaloRows * (D + 8) * 2; }

// The 3 raw rows before token t0 of channels [ch0, ch0 + D) into halo (rows of ld elements): x's
// rows by 16-byte cp.async (t0 >= 64 here: they exist), or at t0 = 0 the conv cache [B, channels, 3]
// (zeros without one) by plain loads and stores. Joins the caller's next commit group.
template <typename T>
__device__ __forceinline__ void fe_issue_halo(T* halo, int ld, const T* x, const T* cache, int64_t b, int64_t t0,
                                              int64_t T_len, int64_t channels, int64_t ch0, int D) {
  const int tid = int(threadIdx.x);
  if (t0 >= kFeHaloRows) {
    const int vecs = D / 8;
    for (int e = tid; e < kFeHaloRows * vecs; e += kThreads) {
      const int i = e / vecs, c = (e % vecs) * 8;
      cp_async16(halo + i * ld + c, x + (b * T_len + t0 - kFeHaloRows + i) * channels + ch0 + c, true);
    }
  } else {
    for (int e = tid; e < kFeHaloRows * D; e += kThreads) {
      const int c = e / kFeHaloRows, i = e % kFeHaloRows;
      halo[i * ld + c] = cache ? cache[(b * channels + ch0 + c) * kConvCache + i] : from_float<T>(0.0f);
    }
  }
}

// In place: tile rows [0, 64) (row stride ld) hold the raw rows of tokens [t0, t0 + 64) at channels
// [ch0, ch0 + D) (zeros from row L on), halo the 3 before; they become conv4, SiLU and with `norm`
// the L2-normalised rows in T, zeros from row L on. fe_roll's thread mapping, operations and order
// (kFeVec channels of a run of consecutive rows per thread, fe_conv's sum, the row's sum of squares
// over its lanes by fe_lane_group_sum), so each row is, bit for bit, gdn_frontend_kernel's for that
// token. A thread keeps the 3 rows before its run (raw bits), then after the block barrier inside
// touches only its own rows, last first, so that each raw row is read before its output replaces
// it. Taps and rows stay packed (16-bit) in registers and are widened at use: the caller's chunk
// loop keeps many registers live here. `copy` (nullptr: none): the rows < L also to [B, T, .] at
// channel ch0, rows copy_stride apart. D <= 128, a multiple of 8; T 16-bit.
template <typename T>
__device__ __forceinline__ float fe_half_word(uint32_t w, int e) {  // element e of a packed pair
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __uint_as_float(e ? w & 0xFFFF0000u : w << 16);
  else return __half2float(__ushort_as_half((unsigned short)(e ? w >> 16 : w & 0xFFFFu)));
}

template <typename T>
__device__ __forceinline__ void fe_convert_tile(T* tile, const T* halo, int ld, const T* w, const T* bias,
                                                int64_t b, int64_t t0, int64_t T_len, int64_t ch0, int D, int L,
                                                bool norm, float eps, T* copy, int64_t copy_stride) {
  static_assert(sizeof(T) == 2, "16-bit tiles");
  constexpr int kMaxRun = 8;
  const int shift = fe_lanes_log2(D), lanes = 1 << shift;
  const int run = kC * lanes / kThreads;
  const int tid = int(threadIdx.x);
  const int r0 = (tid >> shift) * run, c0 = (tid & (lanes - 1)) * kFeVec;
  const bool active = c0 < D;  // lanes past the head's channels compute zeros, write nothing
  // Taps of the 8 channels, channel-major (tap c * 4 + i), and their biases, as loaded by
  // fe_load_taps: 4 + 1 16-byte loads. Opaque pointers keep them from being hoisted out of the
  // caller's chunk loop.
  asm volatile("" : "+l"(w));
  asm volatile("" : "+l"(bias));
  uint4 taps[kConvWidth], bb = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int j = 0; j < kConvWidth; ++j)
    taps[j] = active ? __ldg(reinterpret_cast<const uint4*>(w + (ch0 + c0) * kConvWidth) + j) : make_uint4(0, 0, 0, 0);
  if (active && bias) bb = __ldg(reinterpret_cast<const uint4*>(bias + ch0 + c0));
  auto word = [](const uint4& u, int k) { return k == 0 ? u.x : k == 1 ? u.y : k == 2 ? u.z : u.w; };
  auto elem = [&](const uint4& u, int e) { return fe_half_word<T>(word(u, e / 2), e % 2); };
  auto load_row = [&](const T* p) { return active ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0); };
  uint4 before[kConvCache];  // raw rows r0 - 3 .. r0 - 1
#pragma unroll
  for (int i = 0; i < kConvCache; ++i) {
    const int r = r0 - kConvCache + i;
    before[i] = load_row(r >= 0 ? tile + r * ld + c0 : halo + (kFeHaloRows + r) * ld + c0);
  }
  __syncthreads();  // every thread holds the rows before its run: from here each touches its own rows
#pragma unroll
  for (int i = kMaxRun - 1; i >= 0; --i) {
    if (i >= run) continue;  // uniform: run depends on D only
    T* row = tile + (r0 + i) * ld + c0;
    uint4 x[kConvWidth];  // raw rows r0 + i - 3 .. r0 + i
#pragma unroll
    for (int j = 0; j < kConvWidth; ++j) {
      const int k = i - kConvCache + j;  // row r0 + k of this run, or one of the 3 before
      x[j] = k >= 0 ? load_row(tile + (r0 + k) * ld + c0) : before[kConvCache + k];
    }
    float y[kFeVec], ss = 0.0f;
#pragma unroll
    for (int c = 0; c < kFeVec; ++c) {
      const float wc[kConvWidth] = {elem(taps[(c * 4) / 8], (c * 4) % 8), elem(taps[(c * 4 + 1) / 8], (c * 4 + 1) % 8),
                                    elem(taps[(c * 4 + 2) / 8], (c * 4 + 2) % 8),
                                    elem(taps[(c * 4 + 3) / 8], (c * 4 + 3) % 8)};
      y[c] = fe_silu(fe_conv(wc, elem(bb, c), elem(x[0], c), elem(x[1], c), elem(x[2], c), elem(x[3], c)));
      ss = fmaf(y[c], y[c], ss);
    }
    if (norm) {
      const float inv = fe_inv_l2(fe_lane_group_sum(ss, lanes), eps);
#pragma unroll
      for (int c = 0; c < kFeVec; ++c) y[c] *= inv;
    }
    if (!active) continue;
    if (r0 + i >= L) {
      *reinterpret_cast<uint4*>(row) = make_uint4(0, 0, 0, 0);
      continue;
    }
    fe_store<T, true>(row, y, kFeVec);
    if (copy) fe_store<T, true>(copy + (b * T_len + t0 + r0 + i) * copy_stride + ch0 + c0, y, kFeVec);
  }
}

// The final conv cache of channels [ch0, ch0 + D): the last 3 inputs of the sequence, the initial
// cache shifted in when T < 3 (zeros without one). Copies of dtype values: exact.
template <typename T>
__device__ __forceinline__ void store_final_cache(T* out, const T* x, const T* cache, int64_t b, int64_t T_len,
                                                  int64_t channels, int64_t ch0, int D) {
  for (int e = threadIdx.x; e < D * kConvCache; e += kThreads) {
    const int c = e / kConvCache, i = e % kConvCache;
    const int64_t t = T_len - kConvCache + i, ch = ch0 + c;
    out[(b * channels + ch) * kConvCache + i] =
        t >= 0 ? x[(b * T_len + t) * channels + ch]
               : (cache ? cache[(b * channels + ch) * kConvCache + (kConvCache + t)] : from_float<T>(0.0f));
  }
}

// Shared-memory layouts (bytes), shared by the launchers and the kernels.
__host__ __device__ constexpr int tile16_bytes(int rows, int cols) { return rows * (cols + 8) * 2; }
__host__ __device__ constexpr int prepare_smem_bytes(int K, int V) {
  return tile16_bytes(kC, K) + tile16_bytes(kC, V) + 2 * kC * kLdCC * 4 + 3 * 256 * 4 + 4 * kC * 4;
}
__host__ __device__ constexpr int output_kS0_bytes(int K) {
  return tile16_bytes(kC, K) > K * kLdBV * 4 ? tile16_bytes(kC, K) : K * kLdBV * 4;
}
__host__ __device__ constexpr int output_smem_bytes(int K) {
  return tile16_bytes(kC, K) + output_kS0_bytes(K) + kC * kLdCC * 4 + kC * kLdBV * 4 + kC * 4;
}

// ---------------------------------------------------------------------------------------------
// Stage 1: gamma, A, Tm, W, U0 for one (b, hv, chunk). Warp w owns rows [16w, 16w + 16).

// The shared-memory tiles of stage 1 (both kernels; the version 4 kernel swaps k_s and A_s from one
// chunk to the next at K = 128).
template <typename T>
struct PrepareTiles {
  T* k_s;          // C x (K + 8): k rows, zero past the end
  T* v_s;          // C x (V + 8): v rows, zero past the end
  float* A_s;      // C x kLdCC
  float* X_s;      // C x kLdCC: Tm
  float* Y_s;      // raw g in [0, C) on entry, then the merge scratch (3 x 256)
  float* gamma_s;  // C
  float* beta_s;   // C: beta on entry (0 past the end, 1 without the delta term)
  float* cw_s;     // C: beta exp(gamma), the column factors of W
  float* cu_s;     // C: beta, the column factors of U0
};

// Stage 1's arithmetic for one chunk, the same in both prepare kernels (so their outputs are the
// same bits): from the tiles (visible to every thread) to gamma, A, Tm and the workspace's W and U0.
// after_tm(): every thread, once A is dead (Tm built, the test hooks written); after_u0(): every
// thread, after U0's products (its caller must sync before it overwrites the v tile).
template <typename T, typename AfterTm, typename AfterU0>
__device__ __forceinline__ void prepare_chunk(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                              const PrepareTiles<T>& tl, int64_t chunk, int L, AfterTm after_tm,
                                              AfterU0 after_u0) {
  const int K = int(p.shape.K), V = int(p.shape.V), ldk = K + 8, ldv = V + 8;
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;
  const T* k_s = tl.k_s;
  const T* v_s = tl.v_s;
  float* A_s = tl.A_s;
  float* X_s = tl.X_s;
  float* Y_s = tl.Y_s;
  float* gamma_s = tl.gamma_s;
  const float* beta_s = tl.beta_s;
  float* cw_s = tl.cw_s;
  float* cu_s = tl.cu_s;

  if (tid < kC) {
    float acc = 0.0f;  // sequential, in the order of the reference; rows past the end stay 0
    for (int j = 0; j <= tid; ++j) acc += Y_s[j];
    if (tid >= L) acc = 0.0f;
    gamma_s[tid] = acc;
    cw_s[tid] = p.use_delta ? beta_s[tid] * expf(acc) : 0.0f;
    cu_s[tid] = beta_s[tid];
    ws.gamma[chunk * kC + tid] = acc;
  }
  __syncthreads();

  // A = strictly_lower(diag(beta) K K^T .* D). Row block w needs column blocks 0..w only.
  {
    float acc[8][4] = {};
    if (p.use_delta) lower_block_product<T>(acc, k_s, k_s, ldk, K, warp);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = 16 * warp + g + (e >> 1) * 8, j = 8 * nt + t + (e & 1);
        // Rows past the end have gamma 0, so exp(gamma_i - gamma_j) may overflow there: skip them.
        A_s[i * kLdCC + j] = j < i && i < L ? beta_s[i] * acc[nt][e] * expf(gamma_s[i] - gamma_s[j]) : 0.0f;
      }
  }
  __syncthreads();

  // Tm: the diagonal blocks, one column per lane (x_i = -sum_{m<i} A_im x_m below the diagonal).
  for (int e = tid; e < kC * kC; e += kThreads) {
    const int i = e / kC, j = e % kC;
    if (j / 16 > i / 16) X_s[i * kLdCC + j] = 0.0f;
  }
  if ((tid & 31) < 16) {
    const int j = tid & 15, base = 16 * warp;
    const float* Ab = A_s + base * kLdCC + base;
    float x[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float sum = 0.0f;
#pragma unroll
      for (int m = 0; m < i; ++m) sum += Ab[i * kLdCC + m] * x[m];
      x[i] = i == j ? 1.0f : (i < j ? 0.0f : -sum);
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) X_s[(base + i) * kLdCC + base + j] = x[i];
  }
  // Off-diagonal blocks by distance d from the diagonal: X_ij = -X_ii (sum_{j<=m<i} A_im X_mj).
  for (int d = 1; d < 4; ++d) {
    __syncthreads();
    const int blocks = 4 - d;
    for (int e = tid; e < blocks * 256; e += kThreads) {
      const int bj = e / 256, r = (e / 16) % 16, c = e % 16, bi = bj + d;
      const float* Ar = A_s + (16 * bi + r) * kLdCC;
      float sum = 0.0f;
      for (int m = 16 * bj; m < 16 * bi; ++m) sum += Ar[m] * X_s[m * kLdCC + 16 * bj + c];
      Y_s[e] = sum;
    }
    __syncthreads();
    for (int e = tid; e < blocks * 256; e += kThreads) {
      const int bj = e / 256, r = (e / 16) % 16, c = e % 16, bi = bj + d;
      const float* Xr = X_s + (16 * bi + r) * kLdCC + 16 * bi;
      float sum = 0.0f;
#pragma unroll
      for (int m = 0; m < 16; ++m) sum += Xr[m] * Y_s[bj * 256 + m * 16 + c];
      X_s[(16 * bi + r) * kLdCC + 16 * bj + c] = -sum;
    }
  }
  __syncthreads();
  if (ws.A || ws.Tm) {  // test hooks: rows past the sequence end are zero, as in the reference
    for (int e = tid; e < kC * kC; e += kThreads) {
      const int i = e / kC, j = e % kC;
      if (ws.A) ws.A[chunk * kC * kC + e] = A_s[i * kLdCC + j];
      if (ws.Tm) ws.Tm[chunk * kC * kC + e] = i < L ? X_s[i * kLdCC + j] : 0.0f;
    }
    __syncthreads();  // the hooks' reads of A are done
  }
  after_tm();

  // U0 = (Tm diag(cu)) V, then W = (Tm diag(cw)) K: Tm split (hi + lo), K and V exact. Row block w
  // of Tm is zero past column block w. U0 first, so the v tile is free before W runs.
  for (int which = 1; which >= (p.use_delta ? 0 : 1); --which) {
    const float* cs = which == 0 ? cw_s : cu_s;
    const T* src = which == 0 ? k_s : v_s;
    const int ld = which == 0 ? ldk : ldv, cols = which == 0 ? K : V;
    float* dst = which == 0 ? ws.W + chunk * kC * K : ws.U + chunk * kC * V;
    uint32_t ahi[4][4], alo[4][4];
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      if (ks <= warp) lda_split<T>(ahi[ks], alo[ks], X_s + 16 * warp * kLdCC + 16 * ks, kLdCC, cs + 16 * ks);
    for (int c0 = 0; c0 < cols; c0 += 16) {
      float acc[2][4] = {};
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        if (ks > warp) break;
        uint32_t bb[2][2];
        ldsm_b2_trans(bb, src + 16 * ks * ld + c0, ld);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          Mma<T>::run(acc[j], alo[ks], bb[j]);
          Mma<T>::run(acc[j], ahi[ks], bb[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int r = 16 * warp + g, c = c0 + 8 * j + t;
        *reinterpret_cast<float2*>(dst + int64_t(r) * cols + c) = make_float2(acc[j][0], acc[j][1]);
        *reinterpret_cast<float2*>(dst + int64_t(r + 8) * cols + c) = make_float2(acc[j][2], acc[j][3]);
      }
    }
    if (which == 1) after_u0();
  }
}

// Version 2's kernel: one block per chunk, loads then compute. The plain one is the tests'
// bit-identity reference for version 4; kFe (fused_conv): k, v, g and beta come from the raw
// projections in `fe` instead of p.k, p.v, p.g, p.beta; the normalised k tile also goes to k_out
// ([B, T, H, K], for the scan and output), written by one value head of each q/k head group; the
// blocks of the last chunk write the final conv caches.
template <typename T, bool kFe>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_prepare_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const GdnFrontEndParams fe, T* k_out) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GdnShape s = p.shape;
  const int K = int(s.K), V = int(s.V), ldk = K + 8, ldv = V + 8;
  T* k_s = reinterpret_cast<T*>(smem);
  T* v_s = k_s + kC * ldk;
  float* A_s = reinterpret_cast<float*>(v_s + kC * ldv);
  float* X_s = A_s + kC * kLdCC;  // Tm
  float* Y_s = X_s + kC * kLdCC;  // raw g, then the merge scratch
  float* gamma_s = Y_s + 3 * 256;
  float* beta_s = gamma_s + kC;
  float* cw_s = beta_s + kC;  // beta exp(gamma): column factors of W
  float* cu_s = cw_s + kC;    // beta: column factors of U0

  const int64_t n = blockIdx.x, hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t N = ws.num_chunks, t0 = n * kC, chunk = (b * s.HV + hv) * N + n;
  const int L = int(s.T - t0 < kC ? s.T - t0 : kC);
  const int tid = threadIdx.x;

  if constexpr (kFe) {
    // k (conv, SiLU, L2 norm) and v (conv, SiLU) tiles from the raw rows; g and beta per row.
    const T* const* x = reinterpret_cast<const T* const*>(fe.x);
    const T* const* cw = reinterpret_cast<const T* const*>(fe.conv_w);
    const T* const* cb = reinterpret_cast<const T* const*>(fe.conv_bias);
    const T* const* cin = reinterpret_cast<const T* const*>(fe.cache_in);
    // One writer per q/k head: the rule of the final q/k conv caches below.
    const bool group_writer = hv % (s.HV / s.H) == 0;
    fe_build_tile(k_s, ldk, x[kFeK], cin[kFeK], cw[kFeK], cb[kFeK], b, t0, s.T, s.H * K, h * K, K, L, true,
                  fe.l2_eps, group_writer ? k_out : nullptr, s.H * K);
    fe_build_tile(v_s, ldv, x[kFeV], cin[kFeV], cw[kFeV], cb[kFeV], b, t0, s.T, s.HV * V, hv * V, V, L, false,
                  fe.l2_eps, static_cast<T*>(nullptr), 0);
    if (tid < kC) {
      const int64_t gi = (b * s.T + t0 + tid) * s.HV + hv;
      Y_s[tid] = tid < L ? fe_gate(to_float(static_cast<const T*>(fe.a)[gi]), fe.A_log[hv], fe.dt_bias[hv]) : 0.0f;
      beta_s[tid] = tid < L ? (p.use_delta ? fe_beta(to_float(static_cast<const T*>(fe.b)[gi])) : 1.0f) : 0.0f;
    }
    // Final conv caches, each channel by one block: v by every (last chunk, hv); q and k, which
    // HV / H value heads share, by the first value head of the group only.
    if (n == N - 1) {
      T* const* cout = reinterpret_cast<T* const*>(fe.cache_out);
      if (cout[kFeV]) store_final_cache(cout[kFeV], x[kFeV], cin[kFeV], b, s.T, s.HV * V, hv * V, V);
      if (group_writer)
#pragma unroll
        for (int tsr = kFeQ; tsr <= kFeK; ++tsr)
          if (cout[tsr]) store_final_cache(cout[tsr], x[tsr], cin[tsr], b, s.T, s.H * K, h * K, K);
    }
  } else {
    load_rows(k_s, ldk, static_cast<const T*>(p.k) + ((b * s.T + t0) * s.H + h) * K, s.H * K, K, L);
    load_rows(v_s, ldv, static_cast<const T*>(p.v) + ((b * s.T + t0) * s.HV + hv) * V, s.HV * V, V, L);
    if (tid < kC) {
      const int64_t gi = (b * s.T + t0 + tid) * s.HV + hv;
      Y_s[tid] = (tid < L && p.g) ? p.g[gi] : 0.0f;
      beta_s[tid] = tid < L ? (p.use_delta ? p.beta[gi] : 1.0f) : 0.0f;
    }
  }
  __syncthreads();
  prepare_chunk<T>(p, ws, PrepareTiles<T>{k_s, v_s, A_s, X_s, Y_s, gamma_s, beta_s, cw_s, cu_s}, chunk, L,
                   [] {}, [] {});
}

// Version 4: every chunk n = blockIdx.x, blockIdx.x + gridDim.x, ... of one (b, hv), the next
// chunk's tiles copied (cp.async) into the space this chunk has done with, while it computes. The
// layout is version 2's bytes (so as many blocks per SM): region 0 (a k tile), region 1 (an A
// tile), v, Tm, scratch. g and beta of the next chunk wait in registers (threads < C). Per chunk:
//   wait, g and beta to shared memory, barrier, gamma, A, Tm;
//   K = 128, where a k tile and A are both 17 KiB: the next k into A's region (A is dead), and
//     the two regions swap roles (the next A goes where this k is, dead after W);
//   U0, barrier, the next v into the v tile (overlaps W); W;
//   K = 64, 256: barrier, the next k into the k tile (nothing left to overlap it: the k tile is
//     smaller than A at 64, larger at 256, and a separate buffer would cost a block per SM).
// The arithmetic is prepare_chunk's, as in version 2: gamma, W and U0 are its bits.
template <typename T>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_prepare_v4_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GdnShape s = p.shape;
  const int K = int(s.K), V = int(s.V), ldk = K + 8, ldv = V + 8;
  static_assert(tile16_bytes(kC, 128) == kC * kLdCC * 4, "the k tile and A swap at K = 128");
  const bool swap = K == 128;
  unsigned char* region0 = smem;
  unsigned char* region1 = smem + tile16_bytes(kC, K);
  T* v_s = reinterpret_cast<T*>(region1 + kC * kLdCC * 4);
  float* X_s = reinterpret_cast<float*>(v_s + kC * ldv);  // Tm
  float* Y_s = X_s + kC * kLdCC;  // raw g, then the merge scratch
  float* gamma_s = Y_s + 3 * 256;
  float* beta_s = gamma_s + kC;
  float* cw_s = beta_s + kC;
  float* cu_s = cw_s + kC;

  const int64_t hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t head = b * s.HV + hv, N = ws.num_chunks, stride = gridDim.x;
  const int tid = threadIdx.x;
  auto rows_of = [&](int64_t n) { return int(s.T - n * kC < kC ? s.T - n * kC : kC); };

  // Rows [0, L) of chunk n of a [B, T, heads, cols] tensor into shared rows of ld elements; rows
  // [L, C) zero-filled (nothing read there).
  auto issue_rows = [&](void* dst, int ld, const void* base, int64_t heads, int64_t head_idx, int cols, int64_t n) {
    const int L = rows_of(n);
    const T* src = static_cast<const T*>(base) + ((b * s.T + n * kC) * heads + head_idx) * cols;
    T* d = static_cast<T*>(dst);
    const int vecs = cols / 8;
    for (int x = tid; x < kC * vecs; x += kThreads) {
      const int r = x / vecs, c = (x % vecs) * 8;
      cp_async16(d + r * ld + c, r < L ? src + int64_t(r) * heads * cols + c : src, r < L);
    }
  };
  float g_next = 0.0f, beta_next = 0.0f;  // chunk n's g and beta of row tid, as version 2 reads them
  auto load_gates = [&](int64_t n) {
    if (tid < kC) {
      const int L = rows_of(n);
      const int64_t gi = (b * s.T + n * kC + tid) * s.HV + hv;
      g_next = (tid < L && p.g) ? p.g[gi] : 0.0f;
      beta_next = tid < L ? (p.use_delta ? p.beta[gi] : 1.0f) : 0.0f;
    }
  };

  int64_t n = blockIdx.x;
  if (n >= N) return;
  issue_rows(region0, ldk, p.k, s.H, h, K, n);
  issue_rows(v_s, ldv, p.v, s.HV, hv, V, n);
  cp_async_commit();
  load_gates(n);
  for (int i = 0; n < N; n += stride, ++i) {
    const int64_t next = n + stride;
    const bool has_next = next < N;
    const bool odd = swap && (i & 1);
    T* k_s = reinterpret_cast<T*>(odd ? region1 : region0);
    float* A_s = reinterpret_cast<float*>(odd ? region0 : region1);
    cp_async_wait<0>();
    if (tid < kC) {
      Y_s[tid] = g_next;
      beta_s[tid] = beta_next;
    }
    __syncthreads();  // chunk n's tiles are visible; every read of chunk n - stride's is done
    if (has_next) load_gates(next);
    prepare_chunk<T>(
        p, ws, PrepareTiles<T>{k_s, v_s, A_s, X_s, Y_s, gamma_s, beta_s, cw_s, cu_s}, head * N + n, rows_of(n),
        [&] {
          if (swap && has_next) {
            issue_rows(A_s, ldk, p.k, s.H, h, K, next);
            cp_async_commit();
          }
        },
        [&] {
          if (has_next) {
            __syncthreads();  // every warp's U0 products (the v tile's reads) are done
            issue_rows(v_s, ldv, p.v, s.HV, hv, V, next);
            cp_async_commit();
          }
        });
    if (!swap && has_next) {
      __syncthreads();  // every warp's W products (the k tile's reads) are done
      issue_rows(k_s, ldk, p.k, s.H, h, K, next);
      cp_async_commit();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers of the output stage.

// P = (Q K^T) .* D .* causal (diagonal included) for the rows [16 warp, 16 warp + 16) of a chunk,
// q and k tiles with rows of `ld` elements: exact operands, float32 result in the C fragments of
// eight 16x8 column tiles. Column tiles past the warp's diagonal block are zero. Rows past the end
// (i >= L, gamma 0) are zero, so exp is only taken of gamma_i - gamma_j with j <= i < L.
template <typename T>
__device__ __forceinline__ void causal_qk(float acc[8][4], const T* q_s, const T* k_s, int ld, int K,
                                          const float* gamma_s, int L) {
  const int warp = int(threadIdx.x >> 5), g = lane_id() >> 2, t = (lane_id() & 3) * 2;
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
  lower_block_product<T>(acc, q_s, k_s, ld, K, warp);
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = 16 * warp + g + (e >> 1) * 8, j = 8 * nt + t + (e & 1);
      acc[nt][e] = j <= i && i < L ? acc[nt][e] * expf(gamma_s[i] - gamma_s[j]) : 0.0f;
    }
}

// Rows [16 warp, 16 warp + 16) of a 16 x 8 kNT accumulator block times exp(gamma) of each row.
template <int kNT>
__device__ __forceinline__ void scale_rows(float acc[kNT][4], float row_lo, float row_hi) {
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    acc[nt][0] *= row_lo;
    acc[nt][1] *= row_lo;
    acc[nt][2] *= row_hi;
    acc[nt][3] *= row_hi;
  }
}

// o rows [16 warp, 16 warp + 16) of a chunk (those < L), 8 kNT value columns: scale acc, rounded
// once to the dtype. o0: the chunk's row 0 at the first column; ld: elements from one row to the next.
template <typename T, int kNT>
__device__ __forceinline__ void store_o(T* o0, int64_t ld, float scale, const float acc[kNT][4], int L) {
  const int warp = int(threadIdx.x >> 5), g = lane_id() >> 2, t = (lane_id() & 3) * 2;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = 16 * warp + g + 8 * hh;
    if (i >= L) continue;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
      *reinterpret_cast<uint32_t*>(o0 + i * ld + 8 * nt + t) =
          Mma<T>::pack(scale * acc[nt][2 * hh], scale * acc[nt][2 * hh + 1]);
  }
}

// ---------------------------------------------------------------------------------------------
// Stage 2: the state of one (b, hv) and 32 value columns, carried through the chunks in order.
// Warp w owns state rows [w K/4, (w+1) K/4) (kMT m-tiles of 16 x 32) and U rows [16w, 16w + 16).
// Only the products depend on the previous chunk, so the next chunk's k, W, U0 and gamma are
// copied into the other half of a double buffer (cp.async) while this chunk is computed; the
// sequential chain is then shared-memory and tensor-core work only. At K = 256 two buffers do not
// fit, and the copy is issued at the top of the step instead (no overlap).
template <int kK>
struct StateLayout {
  static constexpr int kStages = kK == 256 ? 1 : 2;
  static constexpr int kLdk = kK + 8;    // 16-bit k rows
  static constexpr int kLdw = kK + 8;    // float32 W rows (8 floats apart mod 32 banks)
  static constexpr int kLdp = kBV + 8;   // 16-bit hi/lo planes of S and U: 80-byte rows
  static constexpr int kK16 = kC * kLdk * 2, kW = kC * kLdw * 4, kU0 = kC * kLdBV * 4, kG = kC * 4;
  // One stage: k, W, U0, gamma; every part a multiple of 16 bytes.
  static constexpr int kOffW = kK16, kOffU0 = kOffW + kW, kOffG = kOffU0 + kU0;
  static constexpr int kStage = kOffG + kG;
  static constexpr int kOffPlanes = kStages * kStage;
  static constexpr int kSPlane = kK * kLdp * 2, kUPlane = kC * kLdp * 2;
  static constexpr int kBytes = kOffPlanes + 2 * kSPlane + 2 * kUPlane;
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
};

// The two-level scan (kSeg): which groups of chunks a launch's blocks take and how (launcher
// `states_for_k` below; the layout of the group buffers is GdnWyUtWorkspace's).
struct ScanPass {
  int64_t chunks_per_group = 0;  // every group but the last has this many chunks
  int64_t first_group = 0;       // group of blockIdx.z % grid_groups == 0
  int64_t grid_groups = 1;       // groups in this launch: gridDim.z = B x grid_groups
  bool local = false;            // pass 1: groups >= 1 from a zero entering state, plus their transition
};

template <typename T, int kK, bool kSeg>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_state_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const ScanPass pass) {
  using Lay = StateLayout<kK>;
  constexpr int kMT = kK / 64, kLdk = Lay::kLdk, kLdw = Lay::kLdw, kLdp = Lay::kLdp;
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* planes = smem + Lay::kOffPlanes;
  T* S_hi = reinterpret_cast<T*>(planes);  // [K][kLdp] entering state, split
  T* S_lo = S_hi + kK * kLdp;
  T* U_hi = S_lo + kK * kLdp;              // [C][kLdp] exp(gL - gamma) .* U, split
  T* U_lo = U_hi + kC * kLdp;

  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, N = ws.num_chunks, G = ws.scan_groups;
  const int64_t b = kSeg ? blockIdx.z / pass.grid_groups : blockIdx.z;
  const int64_t group = kSeg ? pass.first_group + blockIdx.z % pass.grid_groups : 0;
  // Pass 1's groups >= 1 scan from a zero state (their R) and, in the blocks past the value
  // slices, the identity's columns with U0 = 0 (their transition M): S_end = M S_enter + R.
  const bool local = kSeg && pass.local && group > 0;
  const bool transition = kSeg && int64_t(blockIdx.x) >= V / kBV;
  if (transition && !local) return;  // group 0 starts from h0: no transition wanted
  const int64_t v0 = (transition ? int64_t(blockIdx.x) - V / kBV : int64_t(blockIdx.x)) * kBV;
  const int64_t h = hv / (s.HV / s.H), head = b * s.HV + hv;
  const int64_t n_begin = kSeg ? group * pass.chunks_per_group : 0;
  const int64_t n_end = kSeg && n_begin + pass.chunks_per_group < N ? n_begin + pass.chunks_per_group : N;
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;
  const int row0 = warp * (kK / 4);

  // The tiles of chunk n in buffer `buf`: k rows, zero past the end; W, U0 and gamma (the
  // workspace pads every chunk to 64 rows with zeros).
  auto k_tile = [&](int buf) { return reinterpret_cast<T*>(smem + buf * Lay::kStage); };
  auto w_tile = [&](int buf) { return reinterpret_cast<float*>(smem + buf * Lay::kStage + Lay::kOffW); };
  auto u_tile = [&](int buf) { return reinterpret_cast<float*>(smem + buf * Lay::kStage + Lay::kOffU0); };
  auto g_tile = [&](int buf) { return reinterpret_cast<float*>(smem + buf * Lay::kStage + Lay::kOffG); };
  // Each thread copies the same 16-byte pieces of every chunk (its row and column fixed, the rows
  // kThreads / vectors-per-row apart), so the addresses are computed once here and a copy is one
  // add from a chunk's base: the per-chunk issue is a few instructions per copy, not a division.
  constexpr int kKVec = kK / 8, kKRows = kThreads / kKVec;  // k: 16-byte pieces per row, rows per pass
  constexpr int kWVec = kK / 4, kWRows = kThreads / kWVec;  // W (float32)
  constexpr int kUVec = kBV / 4, kURows = kThreads / kUVec; // U0 (float32, 32 columns)
  static_assert(kThreads % kKVec == 0 && kThreads % kWVec == 0 && kC % kKRows == 0 && kC % kWRows == 0,
                "a thread's pieces repeat every kThreads");
  const int k_row = tid / kKVec, w_row = tid / kWVec, u_row = tid / kUVec;
  const int64_t k_row_stride = s.H * kK;  // elements between consecutive tokens' k rows
  const T* k_head = static_cast<const T*>(p.k) + (b * s.T * s.H + h) * kK;
  const T* k_src_thread = k_head + k_row * k_row_stride + (tid % kKVec) * 8;
  const float* w_src_thread = ws.W + head * N * kC * kK + w_row * kK + (tid % kWVec) * 4;
  const float* u_src_thread = ws.U + head * N * kC * V + v0 + u_row * V + (tid % kUVec) * 4;
  const uint32_t smem0 = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t k_dst_thread = smem0 + 2 * (k_row * kLdk + (tid % kKVec) * 8);
  const uint32_t w_dst_thread = smem0 + Lay::kOffW + 4 * (w_row * kLdw + (tid % kWVec) * 4);
  const uint32_t u_dst_thread = smem0 + Lay::kOffU0 + 4 * (u_row * kLdBV + (tid % kUVec) * 4);
  auto issue_copies = [&](int64_t n, int buf) {
    const int64_t t0 = n * kC;
    const int L = int(s.T - t0 < kC ? s.T - t0 : kC);
    const uint32_t stage = uint32_t(buf * Lay::kStage);
    const T* k_src = k_src_thread + t0 * k_row_stride;
#pragma unroll
    for (int i = 0; i < kC / kKRows; ++i) {  // rows past the end: zero-filled, not read
      const bool in = k_row + i * kKRows < L;
      cp_async16(k_dst_thread + stage + 2 * i * kKRows * kLdk, in ? k_src + i * kKRows * k_row_stride : k_head, in);
    }
    if (p.use_delta) {
      const float* w_src = w_src_thread + n * kC * kK;
#pragma unroll
      for (int i = 0; i < kC / kWRows; ++i)
        cp_async16(w_dst_thread + stage + 4 * i * kWRows * kLdw, w_src + i * kWRows * kK, true);
    }
    if (!transition) {  // the transition's U0 is zero
      const float* u_src = u_src_thread + n * kC * V;
#pragma unroll
      for (int i = 0; i < kC / kURows; ++i)
        cp_async16(u_dst_thread + stage + 4 * i * kURows * kLdBV, u_src + i * kURows * V, true);
    }
    if (tid < kC / 4) cp_async16(g_tile(buf) + 4 * tid, ws.gamma + (head * N + n) * kC + 4 * tid, true);
    cp_async_commit();
  };

  float S[kMT][4][4];
  {
    // The entering state (row stride V): h0 for group 0, the combined state for a later group of
    // pass 3, zero for pass 1's local value columns; the transition's starts as the identity.
    const float* enter = nullptr;
    if (group == 0) enter = p.h0 ? p.h0 + head * kK * V + v0 : nullptr;
    else if (!local) enter = ws.group_enters + (head * G + group) * kK * V + v0;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int64_t r = row0 + 16 * mt + g + 8 * hh, c = 8 * nt + t;
          float2 x = enter ? *reinterpret_cast<const float2*>(enter + r * V + c) : make_float2(0.f, 0.f);
          if (transition) x = make_float2(r == v0 + c ? 1.f : 0.f, r == v0 + c + 1 ? 1.f : 0.f);
          S[mt][nt][2 * hh] = x.x;
          S[mt][nt][2 * hh + 1] = x.y;
        }
  }

  if (Lay::kStages == 2) issue_copies(n_begin, 0);
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int64_t t0 = n * kC, chunk = head * N + n;
    const int L = int(s.T - t0 < kC ? s.T - t0 : kC);
    const int buf = Lay::kStages == 2 ? int((n - n_begin) & 1) : 0;
    if (Lay::kStages == 1) {
      __syncthreads();  // every read of the previous chunk's tiles is done
      issue_copies(n, 0);
    }
    cp_async_wait<0>();
    __syncthreads();  // chunk n's tiles are visible; the previous step's reads are done
    if (Lay::kStages == 2 && n + 1 < n_end) issue_copies(n + 1, buf ^ 1);
    const T* k_s = k_tile(buf);
    const float* W_s = w_tile(buf);
    const float* U0_s = u_tile(buf);
    const float* gamma_s = g_tile(buf);

    {  // the entering state: split into the B operand planes of W S; to the workspace for stage 3
      float* st = ws.states + chunk * kK * V + v0;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            const int r = row0 + 16 * mt + g + 8 * hh, c = 8 * nt + t;
            const float2 x = make_float2(S[mt][nt][2 * hh], S[mt][nt][2 * hh + 1]);
            uint32_t hi, lo;
            split2<T>(x.x, x.y, hi, lo);
            *reinterpret_cast<uint32_t*>(S_hi + r * kLdp + c) = hi;
            *reinterpret_cast<uint32_t*>(S_lo + r * kLdp + c) = lo;
            if (!local) *reinterpret_cast<float2*>(st + int64_t(r) * V + c) = x;
          }
    }
    __syncthreads();

    // U = U0 - W S: W and S both float32, three products (Wh Sh + Wl Sh + Wh Sl). Two partial sums
    // (even and odd k steps) halve the dependent chain of mma instructions.
    float u[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float* u0 = U0_s + (16 * warp + g + 8 * hh) * kLdBV + 8 * nt + t;
        const float2 x = transition ? make_float2(0.f, 0.f) : *reinterpret_cast<const float2*>(u0);
        u[nt][2 * hh] = x.x;
        u[nt][2 * hh + 1] = x.y;
      }
    if (p.use_delta) {
      float ws_acc[2][4][4] = {};
#pragma unroll
      for (int ks = 0; ks < kK / 16; ++ks) {
        uint32_t ah[4], al[4];
        lda_split<T>(ah, al, W_s + 16 * warp * kLdw + 16 * ks, kLdw);
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          uint32_t bh[2][2], bl[2][2];
          ldsm_b2_trans(bh, S_hi + 16 * ks * kLdp + 16 * np, kLdp);
          ldsm_b2_trans(bl, S_lo + 16 * ks * kLdp + 16 * np, kLdp);
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            float* acc = ws_acc[ks & 1][2 * np + j];
            Mma<T>::run(acc, al, bh[j]);
            Mma<T>::run(acc, ah, bl[j]);
            Mma<T>::run(acc, ah, bh[j]);
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) u[nt][e] -= ws_acc[0][nt][e] + ws_acc[1][nt][e];
    }
    const float g_last = gamma_s[L - 1];
    float* Ub = ws.U + chunk * kC * V + v0;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int r = 16 * warp + g + 8 * hh;
      const float d = expf(g_last - gamma_s[r]);  // rows past the end: gamma 0, U 0
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int c = 8 * nt + t;
        const float u0 = u[nt][2 * hh], u1 = u[nt][2 * hh + 1];
        if (!local) *reinterpret_cast<float2*>(Ub + int64_t(r) * V + c) = make_float2(u0, u1);
        uint32_t hi, lo;
        split2<T>(d * u0, d * u1, hi, lo);
        *reinterpret_cast<uint32_t*>(U_hi + r * kLdp + c) = hi;
        *reinterpret_cast<uint32_t*>(U_lo + r * kLdp + c) = lo;
      }
    }
    __syncthreads();

    // S = exp(gL) S + K^T (exp(gL - gamma) .* U): K exact, U split (two products).
    const float decay = expf(g_last);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) S[mt][nt][e] *= decay;
#pragma unroll
    for (int ks = 0; ks < kC / 16; ++ks) {
      uint32_t bh[4][2], bl[4][2];
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        ldsm_b2_trans(&bh[2 * np], U_hi + 16 * ks * kLdp + 16 * np, kLdp);
        ldsm_b2_trans(&bl[2 * np], U_lo + 16 * ks * kLdp + 16 * np, kLdp);
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        uint32_t a[4];
        ldsm_a_trans(a, k_s + 16 * ks * kLdk + row0 + 16 * mt, kLdk);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          Mma<T>::run(S[mt][nt], a, bl[nt]);
          Mma<T>::run(S[mt][nt], a, bh[nt]);
        }
      }
    }
  }

  // Where the final state goes: hT after the last chunk; else (two-level scan) pass 1's local
  // group to its R or M columns of group_ends, pass 1's group 0 to the state entering group 1.
  float* end = nullptr;
  int64_t ld = V;
  if (n_end == N) end = p.hT ? p.hT + head * kK * V + v0 : nullptr;
  else if (local) {
    ld = V + kK;
    end = ws.group_ends + (head * G + group) * kK * ld + (transition ? V : 0) + v0;
  } else if (kSeg && pass.local) end = ws.group_enters + ((head * G + group + 1) * kK) * V + v0;
  if (end) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int64_t r = row0 + 16 * mt + g + 8 * hh;
          *reinterpret_cast<float2*>(end + r * ld + 8 * nt + t) = make_float2(S[mt][nt][2 * hh], S[mt][nt][2 * hh + 1]);
        }
  }
}

// The two-level scan's middle pass: the state entering each group g >= 2, from the one entering
// g - 1 and that group's local end: E_g = M_{g-1} E_{g-1} + R_{g-1} (float32 FMAs, a fixed order).
// One block per (b, hv, kCombineCols value columns), sequential over the groups: narrow slices, so
// that the chain's work per group is spread over many SMs. M and R do not depend on the chain, so
// they stream through two cp.async stages (M in slabs of 64 columns, R's slice with a group's first
// slab) while the chain computes; E_{g-1}'s slice stays in shared memory. Thread i holds rows
// i / 2 + 64 m of columns [4 (i % 2), 4 (i % 2) + 4). (Run 52's first form: 32 columns a block and
// one dependent round trip per 16 of M's columns, 23 us a group at K = 128.)
constexpr int kCombineCols = 8;

template <int kK>
struct CombineLayout {
  static constexpr int kJ = 64, kSlabs = kK / kJ;  // M's columns per slab
  static constexpr int kLdE = kCombineCols + 4, kLdM = kJ + 4;  // rows 16-byte aligned
  static constexpr int kE = kK * kLdE * 4, kM = kK * kLdM * 4;
  static constexpr int kStage = kM + kE;  // M's slab, then R's slice (E's layout)
  static constexpr int kBytes = kE + 2 * kStage;
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
};

template <int kK>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_group_combine_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  using Lay = CombineLayout<kK>;
  constexpr int kRows = kK / 64, kJ = Lay::kJ, kLdE = Lay::kLdE, kLdM = Lay::kLdM, kVec = kCombineCols / 4;
  extern __shared__ __align__(16) unsigned char smem[];
  float* E_s = reinterpret_cast<float*>(smem);  // [K][kLdE]
  auto M_s = [&](int buf) { return reinterpret_cast<float*>(smem + Lay::kE + buf * Lay::kStage); };
  auto R_s = [&](int buf) { return reinterpret_cast<float*>(smem + Lay::kE + buf * Lay::kStage + Lay::kM); };
  const int64_t V = p.shape.V, G = ws.scan_groups, ld_end = V + kK;
  const int64_t head = int64_t(blockIdx.z) * p.shape.HV + blockIdx.y, v0 = int64_t(blockIdx.x) * kCombineCols;
  const int tid = threadIdx.x, r0 = tid / kVec, c0 = (tid % kVec) * 4;
  const int64_t items = (G - 2) * Lay::kSlabs;  // (group, slab) in order
  // Item q: slab q % kSlabs of M_{g-1}, g = 2 + q / kSlabs, and with its first slab R_{g-1}.
  auto issue = [&](int64_t q, int buf) {
    const float* ends = ws.group_ends + (head * G + 1 + q / Lay::kSlabs) * kK * ld_end;
    const int j0 = int(q % Lay::kSlabs) * kJ;
    for (int i = tid; i < kK * (kJ / 4); i += kThreads) {
      const int r = i / (kJ / 4), c = (i % (kJ / 4)) * 4;
      cp_async16(M_s(buf) + r * kLdM + c, ends + int64_t(r) * ld_end + V + j0 + c, true);
    }
    if (j0 == 0)
      for (int i = tid; i < kK * kVec; i += kThreads) {
        const int r = i / kVec, c = (i % kVec) * 4;
        cp_async16(R_s(buf) + r * kLdE + c, ends + int64_t(r) * ld_end + v0 + c, true);
      }
    cp_async_commit();
  };
  if (items > 0) issue(0, 0);
  const float* enter1 = ws.group_enters + (head * G + 1) * kK * V + v0;
  for (int i = tid; i < kK * kVec; i += kThreads)
    *reinterpret_cast<float4*>(E_s + (i / kVec) * kLdE + (i % kVec) * 4) =
        *reinterpret_cast<const float4*>(enter1 + int64_t(i / kVec) * V + (i % kVec) * 4);
  float acc[kRows][4];
  for (int64_t q = 0; q < items; ++q) {
    const int buf = int(q & 1), j0 = int(q % Lay::kSlabs) * kJ;
    cp_async_wait<0>();
    __syncthreads();  // item q visible; E_s written; every read of the other stage done
    if (q + 1 < items) issue(q + 1, buf ^ 1);
    if (j0 == 0) {
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        const float4 x = *reinterpret_cast<const float4*>(R_s(buf) + (r0 + 64 * m) * kLdE + c0);
        acc[m][0] = x.x, acc[m][1] = x.y, acc[m][2] = x.z, acc[m][3] = x.w;
      }
    }
    const float* M = M_s(buf);
#pragma unroll 8
    for (int j = 0; j < kJ; ++j) {
      const float4 e = *reinterpret_cast<const float4*>(E_s + (j0 + j) * kLdE + c0);
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        const float w = M[(r0 + 64 * m) * kLdM + j];
        acc[m][0] = fmaf(w, e.x, acc[m][0]);
        acc[m][1] = fmaf(w, e.y, acc[m][1]);
        acc[m][2] = fmaf(w, e.z, acc[m][2]);
        acc[m][3] = fmaf(w, e.w, acc[m][3]);
      }
    }
    if (j0 + kJ == kK) {  // group g done: E_g replaces E_{g-1}
      __syncthreads();    // every read of E_{g-1} is done
      float* enter = ws.group_enters + (head * G + 2 + q / Lay::kSlabs) * kK * V + v0;
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        const float4 x = make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
        *reinterpret_cast<float4*>(E_s + (r0 + 64 * m) * kLdE + c0) = x;
        *reinterpret_cast<float4*>(enter + int64_t(r0 + 64 * m) * V + c0) = x;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Stage 3: o for one (b, hv, chunk), 32 value columns at a time. Warp w owns rows [16w, 16w + 16).
// kFe (fused_conv): the q tile comes from the raw q projection in `fe` (conv, SiLU, L2 norm), not
// from p.q; k from p.k as always (there, the normalised k that prepare wrote).
template <typename T, bool kFe>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_output_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const GdnFrontEndParams fe) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GdnShape s = p.shape;
  const int K = int(s.K), ldk = K + 8;
  const int64_t V = s.V;
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = q_s + kC * ldk;
  float* S0_s = reinterpret_cast<float*>(k_s);  // [K][kLdBV], once P is built (k_s is dead)
  float* P_s = reinterpret_cast<float*>(smem + tile16_bytes(kC, K) + output_kS0_bytes(K));
  float* U_s = P_s + kC * kLdCC;
  float* gamma_s = U_s + kC * kLdBV;

  const int64_t n = blockIdx.x, hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t N = ws.num_chunks, t0 = n * kC, chunk = (b * s.HV + hv) * N + n;
  const int L = int(s.T - t0 < kC ? s.T - t0 : kC);
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2, t = (tid & 3) * 2;

  if constexpr (kFe) {
    fe_build_tile(q_s, ldk, static_cast<const T*>(fe.x[kFeQ]), static_cast<const T*>(fe.cache_in[kFeQ]),
                  static_cast<const T*>(fe.conv_w[kFeQ]), static_cast<const T*>(fe.conv_bias[kFeQ]), b, t0,
                  s.T, s.H * K, h * K, K, L, true, fe.l2_eps, static_cast<T*>(nullptr), 0);
  } else {
    load_rows(q_s, ldk, static_cast<const T*>(p.q) + ((b * s.T + t0) * s.H + h) * K, s.H * K, K, L);
  }
  load_rows(k_s, ldk, static_cast<const T*>(p.k) + ((b * s.T + t0) * s.H + h) * K, s.H * K, K, L);
  if (tid < kC) gamma_s[tid] = ws.gamma[chunk * kC + tid];
  __syncthreads();

  // P = (Q K^T) .* D .* causal, once for every value slice.
  {
    float acc[8][4];
    causal_qk<T>(acc, q_s, k_s, ldk, K, gamma_s, L);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        *reinterpret_cast<float2*>(P_s + (16 * warp + g + 8 * hh) * kLdCC + 8 * nt + t) =
            make_float2(acc[nt][2 * hh], acc[nt][2 * hh + 1]);
  }
  const float decay_lo = expf(gamma_s[16 * warp + g]), decay_hi = expf(gamma_s[16 * warp + g + 8]);

  for (int64_t c0 = 0; c0 < V; c0 += kBV) {
    __syncthreads();  // P is built / the previous slice is consumed
    const float* st = ws.states + chunk * K * V + c0;
    for (int x = tid; x < K * (kBV / 4); x += kThreads) {
      const int r = x / (kBV / 4), c = (x % (kBV / 4)) * 4;
      *reinterpret_cast<float4*>(S0_s + r * kLdBV + c) = *reinterpret_cast<const float4*>(st + int64_t(r) * V + c);
    }
    const float* ub = ws.U + chunk * kC * V + c0;
    for (int x = tid; x < kC * (kBV / 4); x += kThreads) {
      const int r = x / (kBV / 4), c = (x % (kBV / 4)) * 4;
      *reinterpret_cast<float4*>(U_s + r * kLdBV + c) = *reinterpret_cast<const float4*>(ub + int64_t(r) * V + c);
    }
    __syncthreads();

    // Q S0: Q exact, S0 split (two products); then the decay of each row.
    float acc[4][4] = {};
    for (int ks = 0; ks < K / 16; ++ks) {
      uint32_t a[4];
      ldsm_a(a, q_s + 16 * warp * ldk + 16 * ks, ldk);
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        uint32_t bh[2], bl[2];
        ldb_split<T>(bh, bl, S0_s + 16 * ks * kLdBV + 8 * nt, kLdBV);
        Mma<T>::run(acc[nt], a, bl);
        Mma<T>::run(acc[nt], a, bh);
      }
    }
    scale_rows<4>(acc, decay_lo, decay_hi);
    // + P U: both float32, three products. P is zero past the diagonal block.
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if (ks > warp) break;
      uint32_t ah[4], al[4];
      lda_split<T>(ah, al, P_s + 16 * warp * kLdCC + 16 * ks, kLdCC);
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        uint32_t bh[2], bl[2];
        ldb_split<T>(bh, bl, U_s + 16 * ks * kLdBV + 8 * nt, kLdBV);
        Mma<T>::run(acc[nt], al, bh);
        Mma<T>::run(acc[nt], ah, bl);
        Mma<T>::run(acc[nt], ah, bh);
      }
    }
    store_o<T, 4>(static_cast<T*>(p.o) + ((b * s.T + t0) * s.HV + hv) * V + c0, s.HV * V, p.scale, acc, L);
  }
}

// ---------------------------------------------------------------------------------------------
// Stage 3, version 4: o for every chunk n = blockIdx.x, blockIdx.x + gridDim.x, ... of one
// (b, hv), the value columns in slices of kSW. The entering state and U reach shared memory one
// slice at a time through a ring of kStages slice buffers (cp.async): while slice m is computed,
// slices m + 1 .. m + kStages - 1 are in flight, across chunk boundaries. The q and k tiles have
// one buffer: once P is built, each warp holds its rows of Q (exact A fragments) and of P (split
// A fragments) in registers, so the next chunk's q, k and gamma are copied over them while this
// chunk's slices run. Same products in the same order as the version 2 kernel above, per 16 x 8
// tile of o: o is bit for bit the same (the slice width only groups the n-tiles differently).
template <int kK>
struct OutputLayout {
  // Slice width and ring depth: 2 blocks per SM at K = 256, 3 at 128, 4 at 64 (227 KiB per SM
  // less 1 KiB per block).
  static constexpr int kSW = kK == 64 ? 32 : (kK == 128 ? 16 : 8);  // value columns per slice
  static constexpr int kStages = kK == 256 ? 3 : 2;
  static constexpr int kNT = kSW / 8;    // 16 x 8 tiles of o per warp and slice
  static constexpr int kLdS = kSW + 4;   // float32 slice rows: the B fragment reads hit 32 banks
  static constexpr int kLdk = kK + 8;    // 16-bit q, k rows
  static constexpr int kTile = kC * kLdk * 2;
  static constexpr int kOffK = kTile, kOffG = 2 * kTile, kOffSlices = kOffG + kC * 4;
  static constexpr int kS0 = kK * kLdS * 4, kU = kC * kLdS * 4, kSlice = kS0 + kU;
  static constexpr int kBytes = kOffSlices + kStages * kSlice;
  static_assert(kSW % 8 == 0 && kSW <= kBV && kBV % kSW == 0, "slices must tile every V that wy_ut takes");
  static_assert(kBytes <= 227 * 1024, "past the shared memory one block may have");
  // The next chunk's q, k ride with the group of slice kStages - 1 of this chunk's first step;
  // the next chunk's first step waits for its own slice 0, so that group must not be later.
  static_assert(kStages - 1 <= kBV / kSW, "the q, k copy must land before the next chunk");
};

// kFe (fused_conv version 3): the copies bring the raw q rows of the next chunk (and the 3 rows
// before into a halo buffer past the layout's bytes); fe_convert_tile turns them into the q tile
// (conv, SiLU, L2 norm) at the chunk's first slice. K <= 128.
template <typename T, int kK, bool kFe>
__device__ __forceinline__ void output_v4_body(const GdnParams& p, const GdnWyUtWorkspace& ws,
                                               const GdnFrontEndParams& fe) {
  using Lay = OutputLayout<kK>;
  constexpr int kSW = Lay::kSW, kNT = Lay::kNT, kLdS = Lay::kLdS, kLdk = Lay::kLdk, kStages = Lay::kStages;
  extern __shared__ __align__(16) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = reinterpret_cast<T*>(smem + Lay::kOffK);
  float* gamma_s = reinterpret_cast<float*>(smem + Lay::kOffG);
  auto s0_tile = [&](int buf) { return reinterpret_cast<float*>(smem + Lay::kOffSlices + buf * Lay::kSlice); };
  auto u_tile = [&](int buf) { return s0_tile(buf) + kK * kLdS; };

  const GdnShape s = p.shape;
  const int64_t V = s.V, hv = blockIdx.y, b = blockIdx.z, h = hv / (s.HV / s.H);
  const int64_t head = b * s.HV + hv, N = ws.num_chunks, stride = gridDim.x;
  const int slices = int(V / kSW);
  const int tid = threadIdx.x, warp = tid >> 5, g = (tid & 31) >> 2;
  auto rows_of = [&](int64_t n) { return int(s.T - n * kC < kC ? s.T - n * kC : kC); };

  // A thread copies the same pieces of every chunk and slice (row and column fixed, the rows
  // kThreads / vectors-per-row apart), so its addresses are computed once here (as in the scan).
  constexpr int kQVec = kK / 8, kQRows = kThreads / kQVec;   // q, k: 16-byte pieces per row, rows per pass
  constexpr int kSVec = kSW / 4, kSRows = kThreads / kSVec;  // S0 and U slices (float32)
  static_assert(kC % kQRows == 0 && kK % kSRows == 0 && kC % kSRows == 0, "whole passes");
  const int q_row = tid / kQVec, s_row = tid / kSVec;
  const int64_t qk_row_stride = s.H * kK;  // elements between consecutive tokens' q or k rows
  const int64_t qk_thread = (b * s.T * s.H + h) * kK + q_row * qk_row_stride + (tid % kQVec) * 8;
  const float* st_thread = ws.states + head * N * kK * V + s_row * V + (tid % kSVec) * 4;
  const float* ub_thread = ws.U + head * N * kC * V + s_row * V + (tid % kSVec) * 4;
  const uint32_t smem0 = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t q_dst = smem0 + 2 * (q_row * kLdk + (tid % kQVec) * 8), k_dst = q_dst + Lay::kOffK;
  const uint32_t slice_dst = smem0 + Lay::kOffSlices + 4 * (s_row * kLdS + (tid % kSVec) * 4);

  // kFe: q's rows are the raw projection's (same layout), with the 3 rows before in q_halo.
  const T* q_base = kFe ? static_cast<const T*>(fe.x[kFeQ]) : static_cast<const T*>(p.q);
  T* q_halo = reinterpret_cast<T*>(smem + Lay::kBytes);
  // q and k rows of chunk n (zero-filled past the end, nothing read there) and its gamma.
  auto issue_qk = [&](int64_t n) {
    const int L = rows_of(n);
    if constexpr (kFe)
      fe_issue_halo(q_halo, kLdk, q_base, static_cast<const T*>(fe.cache_in[kFeQ]), b, n * kC, s.T, s.H * kK,
                    h * kK, kK);
    const T* q_src = q_base + qk_thread + n * kC * qk_row_stride;
    const T* k_src = static_cast<const T*>(p.k) + qk_thread + n * kC * qk_row_stride;
#pragma unroll
    for (int i = 0; i < kC / kQRows; ++i) {
      const bool in = q_row + i * kQRows < L;
      const int64_t off = i * kQRows * qk_row_stride;
      cp_async16(q_dst + 2 * i * kQRows * kLdk, in ? q_src + off : q_base, in);
      cp_async16(k_dst + 2 * i * kQRows * kLdk, in ? k_src + off : static_cast<const T*>(p.k), in);
    }
    if (tid < kC / 4) cp_async16(gamma_s + 4 * tid, ws.gamma + (head * N + n) * kC + 4 * tid, true);
  };
  // Columns [j kSW, (j + 1) kSW) of chunk n's entering state (K rows) and of its U (C rows; the
  // workspace pads every chunk to 64 rows with zeros) into ring buffer `buf`.
  auto issue_slice = [&](int64_t n, int j, int buf) {
    const float* st = st_thread + n * kK * V + j * kSW;
    const float* ub = ub_thread + n * kC * V + j * kSW;
    const uint32_t dst = slice_dst + uint32_t(buf * Lay::kSlice);
#pragma unroll
    for (int i = 0; i < kK / kSRows; ++i) cp_async16(dst + 4 * i * kSRows * kLdS, st + i * kSRows * V, true);
#pragma unroll
    for (int i = 0; i < kC / kSRows; ++i)
      cp_async16(dst + 4 * (kK + i * kSRows) * kLdS, ub + i * kSRows * V, true);
  };

  int64_t n = blockIdx.x;
  if (n >= N) return;
  // The issue cursor: the next slice (chunk in_n, columns in_j) to copy, slice number `issued`.
  int64_t in_n = n;
  int in_j = 0, issued = 0;
  auto issue_next = [&]() {  // one commit group per call, empty past the block's last slice
    if (in_n < N) {
      issue_slice(in_n, in_j, issued % kStages);
      if (++in_j == slices) {
        in_j = 0;
        in_n += stride;
      }
    }
    ++issued;
    cp_async_commit();
  };

  issue_qk(n);
#pragma unroll
  for (int i = 0; i + 1 < kStages; ++i) issue_next();  // q, k, gamma ride with the first group

  uint32_t qa[kK / 16][4];        // this warp's 16 rows of Q, exact
  uint32_t ph[4][4], pl[4][4];    // this warp's 16 rows of P, split (hi + lo); column blocks <= warp
  float decay_lo = 0.0f, decay_hi = 0.0f;
  int L = 0;
  for (int m = 0; n < N; n += stride) {
    for (int j = 0; j < slices; ++j, ++m) {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // slice m landed for every thread; slice m - 1's buffer is read
      if (j == 0) {
        // P = (Q K^T) .* D .* causal in registers, split once for every slice of the chunk; Q's
        // A fragments too. Then q, k and gamma are free for the next chunk.
        L = rows_of(n);
        if constexpr (kFe) {
          fe_convert_tile(q_s, q_halo, kLdk, static_cast<const T*>(fe.conv_w[kFeQ]),
                          static_cast<const T*>(fe.conv_bias[kFeQ]), b, n * kC, s.T, h * kK, int(kK), L, true,
                          fe.l2_eps, static_cast<T*>(nullptr), 0);
          __syncthreads();  // the q tile is converted
        }
        {
          float acc[8][4];
          causal_qk<T>(acc, q_s, k_s, kLdk, kK, gamma_s, L);
#pragma unroll
          for (int ks = 0; ks < 4; ++ks) {
            if (ks > warp) break;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const float* c = acc[2 * ks + (i >> 1)] + 2 * (i & 1);  // the lda_split element order
              split2<T>(c[0], c[1], ph[ks][i], pl[ks][i]);
            }
          }
        }
#pragma unroll
        for (int ks = 0; ks < kK / 16; ++ks) ldsm_a(qa[ks], q_s + 16 * warp * kLdk + 16 * ks, kLdk);
        decay_lo = expf(gamma_s[16 * warp + g]);
        decay_hi = expf(gamma_s[16 * warp + g + 8]);
        __syncthreads();  // every warp holds its fragments
        if (n + stride < N) issue_qk(n + stride);  // joins the group issue_next commits below
      }
      issue_next();  // slice m + kStages - 1 into the buffer slice m - 1 used

      const int buf = m % kStages;
      const float* S0_s = s0_tile(buf);
      const float* U_s = u_tile(buf);
      // Q S0: Q exact, S0 split (two products); then the decay of each row.
      float acc[kNT][4] = {};
#pragma unroll
      for (int ks = 0; ks < kK / 16; ++ks)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          uint32_t bh[2], bl[2];
          ldb_split<T>(bh, bl, S0_s + 16 * ks * kLdS + 8 * nt, kLdS);
          Mma<T>::run(acc[nt], qa[ks], bl);
          Mma<T>::run(acc[nt], qa[ks], bh);
        }
      scale_rows<kNT>(acc, decay_lo, decay_hi);
      // + P U: both float32, three products. P is zero past the diagonal block.
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        if (ks > warp) break;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          uint32_t bh[2], bl[2];
          ldb_split<T>(bh, bl, U_s + 16 * ks * kLdS + 8 * nt, kLdS);
          Mma<T>::run(acc[nt], pl[ks], bh);
          Mma<T>::run(acc[nt], ph[ks], bl);
          Mma<T>::run(acc[nt], ph[ks], bh);
        }
      }
      store_o<T, kNT>(static_cast<T*>(p.o) + ((b * s.T + n * kC) * s.HV + hv) * V + int64_t(j) * kSW, s.HV * V,
                      p.scale, acc, L);
    }
  }
  cp_async_wait<0>();  // nothing left in flight at exit (the groups past the last slice are empty)
}

template <typename T, int kK>
__global__ void __launch_bounds__(kThreads)
gdn_wy_ut_output_v4_kernel(const GdnParams p, const GdnWyUtWorkspace ws) {
  output_v4_body<T, kK, false>(p, ws, GdnFrontEndParams());
}

// fused_conv version 3's output: capped for 3 blocks per SM, as the plain kernel runs at K = 128.
template <typename T, int kK>
__global__ void __launch_bounds__(kThreads, 3)
gdn_wy_ut_output_v4_fe_kernel(const GdnParams p, const GdnWyUtWorkspace ws, const GdnFrontEndParams fe) {
  output_v4_body<T, kK, true>(p, ws, fe);
}

// ---------------------------------------------------------------------------------------------
// Launchers.

int64_t num_chunks(const GdnParams& p) { return (p.shape.T + kC - 1) / kC; }

// The two-level scan's groups of N chunks: ceil(N / G) chunks each but the last, so only
// ceil(N / ceil(N / G)) groups have chunks (the rest would be empty).
int64_t chunks_per_group(int64_t N, int64_t G) { return (N + G - 1) / G; }
int64_t groups_with_chunks(int64_t N, int64_t G) { return (N + chunks_per_group(N, G) - 1) / chunks_per_group(N, G); }

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

// Raises the kernel's dynamic shared-memory limit when it needs more than the default 48 KiB.
template <typename Kernel>
cudaError_t allow_smem(Kernel kernel, int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

// Blocks per (b, hv) of a kernel whose blocks loop over chunks: `requested`, or with 0 one wave of
// the device's resident blocks (gdn_wy_ut_output_blocks_per_head); at most one per chunk.
template <typename Kernel>
cudaError_t blocks_per_head_for(Kernel kernel, int bytes, const GdnParams& p, const GdnWyUtWorkspace& ws,
                                int requested, int64_t& per_head) {
  per_head = requested;
  if (per_head <= 0) {
    int device = 0, sms = 0, per_sm = 0;
    if (const cudaError_t e = cudaGetDevice(&device)) return e;
    if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) return e;
    if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, bytes))
      return e;
    per_head = gdn_wy_ut_output_blocks_per_head(ws.num_chunks, p.shape.B * p.shape.HV, int64_t(sms) * per_sm);
  }
  if (per_head > ws.num_chunks) per_head = ws.num_chunks;
  return cudaSuccess;
}

// Version 2's prepare, one block per chunk. kFe: with the front-end prologue reading `fe` and
// writing the normalised k to k_out (fused_conv); otherwise fe and k_out are unused (the tests'
// bit-identity reference).
template <typename T, bool kFe = false>
cudaError_t prepare_v2_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                                const GdnFrontEndParams& fe = GdnFrontEndParams(), T* k_out = nullptr) {
  const int bytes = prepare_smem_bytes(int(p.shape.K), int(p.shape.V));
  if (const cudaError_t e = allow_smem(gdn_wy_ut_prepare_kernel<T, kFe>, bytes)) return e;
  const dim3 grid(unsigned(ws.num_chunks), unsigned(p.shape.HV), unsigned(p.shape.B));
  gdn_wy_ut_prepare_kernel<T, kFe><<<grid, kThreads, bytes, stream>>>(p, ws, fe, k_out);
  return cudaGetLastError();
}

// Version 4's prepare: blocks_per_head blocks per (b, hv), each looping over its chunks.
template <typename T>
cudaError_t prepare_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                             int blocks_per_head) {
  const auto kernel = gdn_wy_ut_prepare_v4_kernel<T>;
  const int bytes = prepare_smem_bytes(int(p.shape.K), int(p.shape.V));
  if (const cudaError_t e = allow_smem(kernel, bytes)) return e;
  int64_t per_head = 0;
  if (const cudaError_t e = blocks_per_head_for(kernel, bytes, p, ws, blocks_per_head, per_head)) return e;
  const dim3 grid(unsigned(per_head), unsigned(p.shape.HV), unsigned(p.shape.B));
  kernel<<<grid, kThreads, bytes, stream>>>(p, ws);
  return cudaGetLastError();
}

// The state scan: one launch, or with ws.scan_groups = G > 1 the two-level scan's three passes
// (wy_ut_scan_groups in kernels/plans/launch_plans.h): pass 1 groups 0 .. G-2 (group 0 from h0, writing
// its U, states and the state entering group 1; the others their R and M), the combine for the
// states entering groups 2 .. G-1, pass 3 groups 1 .. G-1 from those (U, states, hT).
// The state scan: one launch, or with ws.scan_groups = G > 1 the two-level scan's three passes
// (wy_ut_scan_groups in kernels/plans/launch_plans.h): pass 1 groups 0 .. G-2 (group 0 from h0, writing
// its U, states and the state entering group 1; the others their R and M), the combine for the
// states entering groups 2 .. G-1, pass 3 groups 1 .. G-1 from those (U, states, hT).
template <typename T, int kK>
cudaError_t states_for_k(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  const int bytes = StateLayout<kK>::kBytes;
  const unsigned slices = unsigned(p.shape.V / kBV), HV = unsigned(p.shape.HV);
  const int64_t G = ws.scan_groups;
  if (G <= 1) {
    if (const cudaError_t e = allow_smem(gdn_wy_ut_state_kernel<T, kK, false>, bytes)) return e;
    gdn_wy_ut_state_kernel<T, kK, false><<<dim3(slices, HV, unsigned(p.shape.B)), kThreads, bytes, stream>>>(
        p, ws, ScanPass());
    return cudaGetLastError();
  }
  const auto scan = gdn_wy_ut_state_kernel<T, kK, true>;
  if (const cudaError_t e = allow_smem(scan, bytes)) return e;
  ScanPass pass;
  pass.chunks_per_group = chunks_per_group(ws.num_chunks, G);
  pass.grid_groups = G - 1;
  pass.local = true;
  const unsigned z = unsigned(p.shape.B * (G - 1));
  scan<<<dim3(slices + kK / kBV, HV, z), kThreads, bytes, stream>>>(p, ws, pass);
  if (const cudaError_t e = cudaGetLastError()) return e;
  if (G > 2) {
    const int combine_bytes = CombineLayout<kK>::kBytes;
    if (const cudaError_t e = allow_smem(gdn_wy_ut_group_combine_kernel<kK>, combine_bytes)) return e;
    const unsigned combine_slices = unsigned(p.shape.V / kCombineCols);
    gdn_wy_ut_group_combine_kernel<kK><<<dim3(combine_slices, HV, unsigned(p.shape.B)), kThreads, combine_bytes,
                                         stream>>>(p, ws);
    if (const cudaError_t e = cudaGetLastError()) return e;
  }
  pass.first_group = 1;
  pass.local = false;
  scan<<<dim3(slices, HV, z), kThreads, bytes, stream>>>(p, ws, pass);
  return cudaGetLastError();
}

// Scan blocks the current device holds at once at this dtype and K (SMs x blocks per SM), asked
// once per (device, dtype, K) and kept; 0 when there is no device to ask.
template <typename T, int kK>
int64_t scan_resident_blocks() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int64_t> cache[kMaxDevices];  // 0: not asked yet
  int device = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();  // no device: leave no error behind for a later launch check
    return 0;
  }
  const bool keep = device >= 0 && device < kMaxDevices;
  if (keep)
    if (const int64_t r = cache[device].load(std::memory_order_relaxed)) return r;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      allow_smem(gdn_wy_ut_state_kernel<T, kK, false>, StateLayout<kK>::kBytes) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gdn_wy_ut_state_kernel<T, kK, false>, kThreads,
                                                    StateLayout<kK>::kBytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const int64_t resident = int64_t(sms) * per_sm;
  if (keep) cache[device].store(resident, std::memory_order_relaxed);
  return resident;
}

template <typename T>
int64_t scan_resident_blocks_for_k(int64_t K) {
  return K == 64 ? scan_resident_blocks<T, 64>() : K == 128 ? scan_resident_blocks<T, 128>()
                                                            : scan_resident_blocks<T, 256>();
}

template <typename T>
cudaError_t states_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  switch (p.shape.K) {
    case 64: return states_for_k<T, 64>(p, ws, stream);
    case 128: return states_for_k<T, 128>(p, ws, stream);
    case 256: return states_for_k<T, 256>(p, ws, stream);
  }
  return cudaErrorInvalidValue;
}

// Version 2's output kernel, one block per chunk: fused_conv's (with the front end) and the
// bit-identity reference of the tests (without).
template <typename T, bool kFe = false>
cudaError_t output_v2_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                               const GdnFrontEndParams& fe = GdnFrontEndParams()) {
  const int bytes = output_smem_bytes(int(p.shape.K));
  if (const cudaError_t e = allow_smem(gdn_wy_ut_output_kernel<T, kFe>, bytes)) return e;
  const dim3 grid(unsigned(ws.num_chunks), unsigned(p.shape.HV), unsigned(p.shape.B));
  gdn_wy_ut_output_kernel<T, kFe><<<grid, kThreads, bytes, stream>>>(p, ws, fe);
  return cudaGetLastError();
}

// Version 4: blocks_per_head blocks per (b, hv), each looping over its chunks; 0 picks one wave
// of the device's resident blocks (gdn_wy_ut_output_blocks_per_head).
template <typename T, int kK, bool kFe = false>
cudaError_t output_v4_for_k(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                            int blocks_per_head, const GdnFrontEndParams& fe = GdnFrontEndParams()) {
  const int bytes = OutputLayout<kK>::kBytes + (kFe ? fe_halo_bytes(kK) : 0);
  auto launch = [&](auto kernel, auto... args) {
    if (const cudaError_t e = allow_smem(kernel, bytes)) return e;
    int64_t per_head = 0;
    if (const cudaError_t e = blocks_per_head_for(kernel, bytes, p, ws, blocks_per_head, per_head)) return e;
    const dim3 grid(unsigned(per_head), unsigned(p.shape.HV), unsigned(p.shape.B));
    kernel<<<grid, kThreads, bytes, stream>>>(p, ws, args...);
    return cudaGetLastError();
  };
  if constexpr (kFe) return launch(gdn_wy_ut_output_v4_fe_kernel<T, kK>, fe);
  else return launch(gdn_wy_ut_output_v4_kernel<T, kK>);
}

template <typename T>
cudaError_t output_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                            int blocks_per_head) {
  switch (p.shape.K) {
    case 64: return output_v4_for_k<T, 64>(p, ws, stream, blocks_per_head);
    case 128: return output_v4_for_k<T, 128>(p, ws, stream, blocks_per_head);
    case 256: return output_v4_for_k<T, 256>(p, ws, stream, blocks_per_head);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

bool gdn_fused_conv_pipelined(const GdnShape& shape) {
  return fused_conv_output(shape, FusedConvOutput::automatic) == FusedConvOutput::pipelined;
}

namespace {

// fused_conv: prepare with the front end (k, v, g, beta; the normalised k into p.k), the plain
// scan on that k, output with the front end (q).
template <typename T>
cudaError_t fused_conv_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, const GdnFrontEndParams& fe,
                                cudaStream_t stream) {
  T* k_ws = static_cast<T*>(const_cast<void*>(p.k));
  if (const cudaError_t e = prepare_v2_for_type<T, true>(p, ws, stream, fe, k_ws)) return e;
  if (const cudaError_t e = states_for_type<T>(p, ws, stream)) return e;
  if (fused_conv_output(p.shape, fe.fused_conv_output) == FusedConvOutput::per_chunk)
    return output_v2_for_type<T, true>(p, ws, stream, fe);
  return p.shape.K == 64 ? output_v4_for_k<T, 64, true>(p, ws, stream, 0, fe)  // version 3
                         : output_v4_for_k<T, 128, true>(p, ws, stream, 0, fe);
}

bool workspace_ok(const GdnParams& p, const GdnWyUtWorkspace& ws) {
  const int64_t G = ws.scan_groups;
  const bool groups_ok = G == 1 || (G > 1 && G <= ws.num_chunks && ws.group_ends && ws.group_enters &&
                                    p.shape.B * (G - 1) <= 65535 && groups_with_chunks(ws.num_chunks, G) == G);
  return ws.num_chunks == num_chunks(p) && ws.gamma && ws.U && ws.states && (ws.W || !p.use_delta) && groups_ok;
}

// The scan's groups of the plan (wy_ut_scan_groups, kernels/plans/launch_plans.h): `requested` > 0,
// else p.scan_groups > 0 (a forced plan), else the cost model on the device's resident blocks.
int64_t resolve_scan_groups(const GdnParams& p, int64_t requested) {
  if (gdn_wy_ut_shape_unsupported(p)) return 1;
  const int64_t G = requested > 0 ? requested : p.scan_groups;
  if (G > 0) return wy_ut_scan_groups(p.shape, G, 0);
  const int64_t resident = p.dtype == DType::bf16 ? scan_resident_blocks_for_k<__nv_bfloat16>(p.shape.K)
                                                  : scan_resident_blocks_for_k<__half>(p.shape.K);
  return wy_ut_scan_groups(p.shape, 0, resident);
}

}  // namespace

const char* gdn_wy_ut_unsupported(const GdnParams& p) {
  if (const char* why = gdn_wy_ut_shape_unsupported(p)) return why;
  if (!p.q || !p.k || !p.v || !p.o || (p.use_delta && !p.beta)) return "wy_ut: a required pointer is null";
  return nullptr;
}

const char* gdn_wy_ut_shape_unsupported(const GdnParams& p) {
  const GdnShape& s = p.shape;
  if (p.dtype != DType::bf16 && p.dtype != DType::f16)
    return "wy_ut takes bf16 or fp16 inputs only (fp32: use recurrent or chunked)";
  if (p.chunk != kC) return "wy_ut runs chunk 64 only";
  if (s.K != 64 && s.K != 128 && s.K != 256) return "wy_ut needs K in {64, 128, 256}";
  if (s.V < kBV || s.V > 256 || s.V % kBV != 0) return "wy_ut needs V a multiple of 32 up to 256";
  if (s.B < 1 || s.T < 1 || s.H < 1 || s.HV < 1 || s.HV % s.H != 0)
    return "wy_ut needs positive sizes and HV a multiple of H";
  if (s.B > 65535 || s.HV > 65535) return "wy_ut needs B and HV <= 65535";
  if ((s.T + kC - 1) / kC > 0x7FFFFFFF) return "wy_ut needs ceil(T / 64) < 2^31";
  return nullptr;
}

GdnParams gdn_wy_ut_shape_params(const GdnShape& shape, DType dtype) {
  GdnParams gp;
  gp.shape = shape;
  gp.dtype = dtype;
  gp.chunk = kC;
  return gp;
}

int gdn_wy_ut_plan_device(const GdnShape& shape, DType dtype, PlanDevice& dev) {
  const GdnParams p = gdn_wy_ut_shape_params(shape, dtype);
  if (gdn_wy_ut_shape_unsupported(p)) return int(cudaErrorInvalidValue);
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device)) return int(e);
  if (const cudaError_t e = cudaDeviceGetAttribute(&dev.sms, cudaDevAttrMultiProcessorCount, device)) return int(e);
  const int64_t resident = dtype == DType::bf16 ? scan_resident_blocks_for_k<__nv_bfloat16>(shape.K)
                                                : scan_resident_blocks_for_k<__half>(shape.K);
  dev.wy_ut_scan_resident[shape.K <= 64 ? 0 : shape.K <= 128 ? 1 : 2] = resident;
  return resident > 0 ? 0 : int(cudaErrorInvalidValue);
}

int64_t gdn_wy_ut_scan_groups_for(const GdnParams& p) { return resolve_scan_groups(p, 0); }

namespace {
// The two-level scan's buffers: R | M per group, then the entering states.
size_t group_ends_bytes(const GdnShape& s, int64_t G) {
  return align256(size_t(s.B * s.HV * G * s.K * (s.V + s.K)) * 4);
}
size_t group_enters_bytes(const GdnShape& s, int64_t G) { return align256(size_t(s.B * s.HV * G * s.K * s.V) * 4); }
}  // namespace

size_t gdn_wy_ut_workspace_bytes(const GdnParams& p, int64_t scan_groups) {
  const GdnShape& s = p.shape;
  const size_t chunks = size_t(s.B * s.HV * num_chunks(p));
  const int64_t G = resolve_scan_groups(p, scan_groups);
  return align256(chunks * kC * 4) + align256(chunks * kC * size_t(s.K) * 4) +
         align256(chunks * kC * size_t(s.V) * 4) + align256(chunks * size_t(s.K * s.V) * 4) +
         (G > 1 ? group_ends_bytes(s, G) + group_enters_bytes(s, G) : 0);
}

size_t gdn_wy_ut_workspace_bytes(const GdnParams& p) { return gdn_wy_ut_workspace_bytes(p, 0); }

// Parts in order: gamma, W, U, the entering states, with groups the group ends and enters.
GdnWyUtWorkspace gdn_wy_ut_workspace_view(const GdnParams& p, void* workspace, int64_t scan_groups) {
  const GdnShape& s = p.shape;
  const size_t chunks = size_t(s.B * s.HV * num_chunks(p));
  auto* base = static_cast<unsigned char*>(workspace);
  GdnWyUtWorkspace ws;
  ws.num_chunks = num_chunks(p);
  ws.gamma = reinterpret_cast<float*>(base);
  base += align256(chunks * kC * 4);
  ws.W = reinterpret_cast<float*>(base);
  base += align256(chunks * kC * size_t(s.K) * 4);
  ws.U = reinterpret_cast<float*>(base);
  base += align256(chunks * kC * size_t(s.V) * 4);
  ws.states = reinterpret_cast<float*>(base);
  ws.scan_groups = resolve_scan_groups(p, scan_groups);
  if (ws.scan_groups > 1) {
    base += align256(chunks * size_t(s.K * s.V) * 4);
    ws.group_ends = reinterpret_cast<float*>(base);
    base += group_ends_bytes(s, ws.scan_groups);
    ws.group_enters = reinterpret_cast<float*>(base);
  }
  return ws;
}

namespace {

// The stage entry points: the problem and the workspace checked once, then the stage's
// instance for the element type (a value of it passed as a tag).
template <typename Launch>
int checked_for_dtype(const GdnParams& p, const GdnWyUtWorkspace& ws, Launch&& launch) {
  if (gdn_wy_ut_unsupported(p) || !workspace_ok(p, ws)) return int(cudaErrorInvalidValue);
  return int(p.dtype == DType::bf16 ? launch(__nv_bfloat16{}) : launch(__half{}));
}

}  // namespace

int launch_gdn_wy_ut_prepare(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                             int blocks_per_head) {
  return checked_for_dtype(p, ws, [&](auto t) { return prepare_for_type<decltype(t)>(p, ws, stream, blocks_per_head); });
}

int launch_gdn_wy_ut_prepare_v2(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  return checked_for_dtype(p, ws, [&](auto t) { return prepare_v2_for_type<decltype(t)>(p, ws, stream); });
}

int launch_gdn_wy_ut_states(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  return checked_for_dtype(p, ws, [&](auto t) { return states_for_type<decltype(t)>(p, ws, stream); });
}

int64_t gdn_wy_ut_output_blocks_per_head(int64_t num_chunks, int64_t heads, int64_t resident_blocks) {
  if (num_chunks < 1) return 1;
  const int64_t most = heads < resident_blocks ? resident_blocks / heads : 1;  // one wave, or one per head
  const int64_t chunks_per_block = (num_chunks + most - 1) / most;
  return (num_chunks + chunks_per_block - 1) / chunks_per_block;  // the fewest blocks for that many
}

int launch_gdn_wy_ut_output(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                            int blocks_per_head) {
  return checked_for_dtype(p, ws, [&](auto t) { return output_for_type<decltype(t)>(p, ws, stream, blocks_per_head); });
}

int launch_gdn_wy_ut_output_v2(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  return checked_for_dtype(p, ws, [&](auto t) { return output_v2_for_type<decltype(t)>(p, ws, stream); });
}

int launch_gdn_wy_ut(const GdnParams& p, void* workspace, cudaStream_t stream) {
  if (gdn_wy_ut_unsupported(p) || !workspace) return int(cudaErrorInvalidValue);
  const GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(p, workspace);
  if (const int e = launch_gdn_wy_ut_prepare(p, ws, stream)) return e;
  if (const int e = launch_gdn_wy_ut_states(p, ws, stream)) return e;
  return launch_gdn_wy_ut_output(p, ws, stream);
}

// ---------------------------------------------------------------------------------------------
// fused_conv (kernels/frontend/frontend.h): wy_ut's three kernels, the front end in prepare's and output's
// prologues.

namespace {
// Whether any final conv cache overlaps any initial one. prepare's last-chunk blocks write the
// final caches while its first-chunk blocks, and the output kernel launched after it, still read the
// initial ones: an in-place update would hand them the new rows (the contract of kernels/frontend/frontend.h says
// never in place; this refuses the launch instead of returning wrong results).
bool conv_caches_overlap(const GdnFrontEndParams& fe) {
  const GdnShape& s = fe.shape;
  auto bytes = [&](int t) {
    return size_t(s.B) * size_t(t == kFeV ? s.HV * s.V : s.H * s.K) * kConvCache * dtype_bytes(fe.dtype);
  };
  for (int i = 0; i < 3; ++i)
    for (int o = 0; o < 3; ++o) {
      if (!fe.cache_in[i] || !fe.cache_out[o]) continue;
      const uintptr_t in0 = reinterpret_cast<uintptr_t>(fe.cache_in[i]);
      const uintptr_t out0 = reinterpret_cast<uintptr_t>(fe.cache_out[o]);
      if (in0 < out0 + bytes(o) && out0 < in0 + bytes(i)) return true;
    }
  return false;
}
// The workspace: wy_ut's (gamma, W, U, the entering states), then the normalised k [B, T, H, K].
size_t fused_conv_k_offset(const GdnParams& gp) { return gdn_wy_ut_workspace_bytes(gp); }

}  // namespace

const char* gdn_fused_conv_shape_unsupported(const GdnShape& shape, DType dtype) {
  if (const char* why = gdn_wy_ut_shape_unsupported(gdn_wy_ut_shape_params(shape, dtype))) return why;
  if (shape.K != 64 && shape.K != 128)
    return "fused_conv needs K in {64, 128} (K = 256 is not verified with its front-end prologues: "
           "use unfused_conv)";
  return nullptr;
}

size_t gdn_fused_conv_workspace_bytes(const GdnShape& shape, DType dtype, int64_t scan_groups) {
  GdnParams gp = gdn_wy_ut_shape_params(shape, dtype);
  gp.scan_groups = scan_groups;
  return fused_conv_k_offset(gp) + align256(size_t(shape.qk_elems()) * dtype_bytes(dtype));
}

int launch_gdn_fused_conv(const GdnFrontEndParams& fe, void* workspace, cudaStream_t stream) {
  if (gdn_fused_conv_shape_unsupported(fe.shape, fe.dtype) || !workspace) return int(cudaErrorInvalidValue);
  if (!fe.o || !fe.a || !fe.A_log || !fe.dt_bias || (fe.use_delta && !fe.b)) return int(cudaErrorInvalidValue);
  // The tile builders load 8 channels (16 bytes) at a time.
  for (int t = 0; t < 3; ++t) {
    if (!fe.x[t] || !fe.conv_w[t]) return int(cudaErrorInvalidValue);
    if (!aligned16(fe.x[t]) || !aligned16(fe.conv_w[t]) || !aligned16(fe.conv_bias[t]))
      return int(cudaErrorInvalidValue);
  }
  if (conv_caches_overlap(fe) || !aligned16(workspace)) return int(cudaErrorInvalidValue);
  GdnParams gp = gdn_wy_ut_shape_params(fe.shape, fe.dtype);
  gp.scan_groups = fe.scan_groups;
  gp.k = static_cast<unsigned char*>(workspace) + fused_conv_k_offset(gp);
  gp.h0 = fe.h0;
  gp.hT = fe.hT;
  gp.o = fe.o;
  gp.scale = fe.scale;
  gp.use_delta = fe.use_delta;
  if (fused_conv_output(fe.shape, fe.fused_conv_output) == FusedConvOutput::pipelined && !gdn_fused_conv_pipelined(fe.shape))
    return int(cudaErrorInvalidValue);  // a forced pipelined output past K, V = 128
  const GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(gp, workspace);
  return int(fe.dtype == DType::bf16 ? fused_conv_for_type<__nv_bfloat16>(gp, ws, fe, stream)
                                     : fused_conv_for_type<__half>(gp, ws, fe, stream));
}
