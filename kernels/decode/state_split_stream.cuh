// fused_decode's state kernels for a bf16 pool at K <= 128 (instanced for a bf16 pool only,
// kSplitAndStreamFor in decode/launch.cu):
//   gdn_decode_split_kernel (2c), below kDecodeStreamMinUnitsPerSm slices per SM: 32 bytes of
//     columns per warp, each column's rows split over the lanes that share it, sums by an xor
//     butterfly.
//   gdn_decode_stream_kernel (2d), K = 128, V <= 128, from there on: persistent blocks, each
//     slice's state brought into shared memory by one bulk copy (mbarrier completion) stages
//     ahead, the front end's rows of the next slice by 4-byte cp.async.
// Arithmetic: state_tokens.cuh (decode_column_tokens), the same float32 operations as the lane
// kernel. Rounds: float32; o to the dtype once; the state to bf16 once, when stored.
// Budget: split 4 warps, 6 (float32) or 4 (bf16) blocks per SM; stream 128 threads, 170
// registers (3 blocks per SM), 64 KiB of state stages + 2 x T x (2 x 128 + 128 + 2) x 4 B of
// rows dynamic shared memory per block.
// Included only by decode/launch.cu: fused_decode is one translation unit, its kernels and launchers
// in one anonymous namespace.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/bulk_copy.cuh"
#include "kernels/common/ptx.cuh"
#include "kernels/common/tensor_core.cuh"
#include "kernels/decode/decode_common.cuh"
#include "kernels/decode/state_tokens.cuh"

namespace {

// The split-column state update for K <= 128 (kernel 2c; a bf16 pool below 4 slices
// per SM): a warp takes kCols columns (32 bytes of each state row: 8 float32, 16 bf16), and the
// kGroupsR = 32 / kCols lanes of one column hold kRows = 128 / kGroupsR of its rows each (32
// float32 rows, 64 bf16). A warp's load of one row index thus reads kGroupsR whole 32-byte
// sectors, and a lane holds a quarter (float32) or half (bf16) of the lane kernel's registers: 6 or 4
// resident blocks per SM instead of 3, and as much less of the per-lane chain between a block's
// state loads and its stores. S^T k, S^T q and k^T q are summed per lane over its rows (groups of
// 16 in order), then across the column's lanes by an xor butterfly (every lane ends with the same
// bits). The q and k rows in shared memory are skewed by 4 floats per row group, so the row
// groups' 16-byte reads fall in distinct banks. Measured: with a bf16 pool 3-9% faster than the
// lane kernel at B = 1 to 16; with a float32 pool 1-11% slower (four 32-byte pieces of four
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
  if constexpr (kDecodePdl) ptx::wait_prior_grid();  // the front end's rows

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

// The stream state update for a bf16 pool at K = 128, V <= 128, with many slices (B x HV at
// least kDecodeStreamMinUnitsPerSm per SM): persistent blocks of 128 threads, 3 per SM, walk the
// slices (units b x HV + hv, block i taking i, i + grid, ...). Each slice's K x V state is
// contiguous in the pool (32 KiB in bf16 at K = V = 128) and comes into shared memory by one bulk
// copy (cp.async.bulk, completion on an mbarrier), `stages` slices ahead in a 64 KiB budget per
// block (2 stages in bf16). Thread j owns column j: it moves the column into registers, frees the
// buffer (the next bulk copy into it starts), runs the tokens as the lane kernel does
// (decode_lane_tokens: the same float32 operations) and stores the column from registers. While
// a slice is computed and stored the next one is in flight, where the lane kernel's blocks load, then
// compute, then store. The first copies are issued before griddepcontrol.wait, while the front
// end runs; the front end's rows of the next slice come by 4-byte cp.async into the second of two
// buffers while the current one is used. Measured: with a bf16 pool 5-13% faster than the lane
// kernel from B = 32 on (H = HV = 32); with a float32 pool (one 64 KiB
// stage per block) 2-5% slower, and one block per SM with three stages 14% slower: the float32
// pool stays on the lane kernel.
constexpr int kStreamThreads = 128;
constexpr int kStreamBlocksPerSm = 3;        // the register cap (170) is set for this many
constexpr int kStreamMaxStages = 4;
constexpr int kStreamStateSmem = 64 * 1024;  // shared memory for the state stages, per block
constexpr int kStreamK = 128;                // registers per column (rows past K are zero)

// Slices per SM from which the stream kernel takes a bf16 pool (units = B x HV >= this x SMs); below it
// the split-column kernel (at B = 16, H = HV = 32, 512 slices: split 0.0238 ms, stream 0.0253).
static_assert(kDecodeStreamMinUnitsPerSm == 4, "kernels/plans/launch_plans.h: the stream takes 4 slices per SM");

// The front end's rows of one slice, every token, in dynamic shared memory after the state
// stages: q and k [T][2][kStreamK], v [T][kStreamThreads], the gates [T][2]; two such buffers,
// each rounded up to 16 bytes.
__host__ __device__ constexpr int stream_fe_floats(int nt) {
  return (nt * (2 * kStreamK + kStreamThreads + 2) + 3) / 4 * 4;
}
size_t stream_smem_bytes(int nt) { return size_t(kStreamStateSmem) + 2 * size_t(stream_fe_floats(nt)) * 4; }

// One slice by one bulk copy: its barrier's one arrival announces the slice's bytes.
__device__ __forceinline__ void bulk_load_slice(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
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
    for (int n = 0; n < stages && n < count; ++n) bulk_load_slice(buffer(n), state_at(n, slot_of(n)), slice_bytes, &full[n]);
  if constexpr (kDecodePdl) ptx::wait_prior_grid();  // the front end's rows

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
        tc::cp_async4(&qk[t][e / K][e % K], row + (e / K) * lay.qk + h * K + e % K);
      else if (e < 2 * K + V)
        tc::cp_async4(&v[t * kStreamThreads + e - 2 * K], row + 2 * lay.qk + hv * V + (e - 2 * K));
      else
        tc::cp_async4(&gates[t][e - 2 * K - V], row + 2 * lay.qk + lay.v + 2 * hv + (e - 2 * K - V));
    }
    tc::cp_async_commit();
  };
  if (count > 0) copy_fe(0);

  for (int n = 0; n < count; ++n) {
    const int64_t slot = slot_of(n);  // for the stores; the refill's slot is asked early too
    const int64_t refill_slot = tid == 0 && n + stages < count ? slot_of(n + stages) : 0;
    tc::cp_async_wait_all();
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
    if (tid == 0 && n + stages < count) bulk_load_slice(buffer(n), state_at(n + stages, refill_slot), slice_bytes, &full[n % stages]);

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

}  // namespace
