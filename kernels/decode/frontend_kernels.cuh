// fused_decode's front-end kernels: per (b, t) row the conv caches rolled in place and
//   q, k = l2norm(SiLU(conv4(x))), v = SiLU(conv4(x_v)), the gates (decode_common.cuh)
// written to the workspace as float32 rows (DecodeFeLayout) for the state kernel.
//   1  gdn_decode_frontend_kernel: grid (2H + HV, B), or (2H + HV, ceil(B / 4)) with 4 rows per
//      block at T = 1; one thread per channel: each q, k or v channel is convolved once per launch,
//      its conv cache rolled in place by its only reader and writer (no counter), q and k
//      normalised with a block sum of squares per token, the gates computed by the v blocks. Any
//      dtype, any K, V <= 256.
//   1v gdn_decode_frontend_vec_kernel: 16-bit inputs, K and V multiples of 8, 16-byte aligned:
//      8 channels of one (b, head) row per thread, the row's sum of squares a shuffle sum over its
//      lanes, the operations of unfused_conv's front end (fe_token): the same rows in the workspace.
// Both may let the state kernel start at once (griddepcontrol.launch_dependents, early_trigger).
// Rounds: float32 throughout; the conv caches are rounded to the dtype when stored.
// Budget: kernel 1 48 registers, 128 threads at K = V = 128 (10 blocks per SM); kernel 1v 128
// threads, a 16-byte-piece stage of 128 x 3 x 16 B = 6 KiB dynamic shared memory where it stores
// whole sectors (kFeWholeSectorBlocksPerSm), none otherwise.
// Included only by decode/launch.cu: fused_decode is one translation unit, its kernels and launchers
// in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/ptx.cuh"
#include "kernels/decode/decode_common.cuh"

namespace {

// Threads of a front-end block: one per channel of the widest head, in whole warps (128 at
// K = V = 128), not a fixed 256: at K = V = 128 half of a 256-thread block would idle while
// holding its registers (48 registers x 256 threads let 5 blocks, 640 working channels, reside
// per SM; 128-thread blocks make that 10, 1280, half the waves).
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
  if (kDecodePdl && early_trigger) ptx::launch_dependents();
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
  // q or k: 1 / ||row|| per token from the block's sum of squares, the warps summed in order
  // (the same bits as a 256-thread block, whose extra warps would add zeros).
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

// Kernel 1v, the vector front end, for K and V multiples of 8 with 16-byte aligned projections, conv
// weights, biases and caches: thread = 8 consecutive channels of one (b, head) row, the row in
// 2^fe_lanes_log2(D) adjacent lanes (16 at D = 128), so a token's sum of squares is a shuffle sum
// over those lanes and no block barrier is needed. Its x, taps, bias and conv cache come in
// 16-byte loads (at K = 128, bf16: 9 loads and 5 stores for 8 channels, where kernel 1 makes 72
// and 32 two-byte ones), and the tokens go through fe_token, the operations of unfused_conv's
// front end: q, k and v are its bits. Blocks [0, qk_blocks) take the 2H q and k heads of every
// row, the rest the HV v heads, whose lane 0 also computes the row's gates. kTokens: 1 (the
// serving case) or kFeVecMaxTokens (T <= kTokens at run time); every token's loads are in flight
// before the conv cache's round trip.
// Why: at B = 64, H = HV = 32, K = V = 128 kernel 1 spends most of its time issuing instructions,
// most of them addresses and bounds of 2-byte accesses.
constexpr int kFeVecThreads = 128;
constexpr int kFeVecMaxTokens = kDecodeFeVecMaxTokens;  // tokens of the T > 1 instance
constexpr int kFeCachePieces = kConvCache * kFeVec * 2 / 16;  // a 16-bit conv cache's 16-byte pieces
// Kernel 1v stores its rows and caches in whole 32-byte sectors (decode_warp_store_pieces) from
// this many blocks per SM on, its stage in dynamic shared memory requested only then. Measured on
// the H200 (H = HV = 32, K = V = 128, T = 1): the front-end kernel ~25% faster at B = 64 and the
// state kernel 2.5-4.5% faster behind it; staged at every B, or with a static stage, the step was
// 2-5% slower at B = 8 and 16.
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
  if (kDecodePdl && early_trigger) ptx::launch_dependents();
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

}  // namespace
