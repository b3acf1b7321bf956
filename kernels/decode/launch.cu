// fused_decode: T <= 8 new tokens per sequence (T = 1 is the serving case), in place:
//   conv caches rolled, q, k = l2norm(SiLU(conv4(x))), v = SiLU(conv4(x_v)),
//   g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)        (kernels/frontend/frontend.cuh)
//   S' = exp(g) S;  u = beta (v - S'^T k);  S = S' + k u^T;  o = scale S^T q   per token
// The state and the conv caches live in pools addressed through slots[b] (continuous batching:
// a batch row names its sequence's slot in a larger pool); both are updated in place.
// Compared with recurrent's decode shape: the front end (conv, SiLU, norms, gates) is fused in,
// and the state kernel is chosen for the pool's dtype and the grid's size.
// A step is two launches, a front-end kernel (frontend_kernels.cuh) that writes float32 rows to
// the workspace (decode_common.cuh) and a state kernel that reads them from L2, launched with
// Programmatic Dependent Launch so its state loads overlap the front end; or one launch (2qf).
// State kernels: block (K = 256, state_block.cuh); lane, quad and quad_fe (K <= 128, float32
// pool, state_lane_quad.cuh); split and stream (K <= 128, bf16 pool, state_split_stream.cuh). The
// choice is decode_plan (kernels/plans/launch_plans.h), from the shape and the device's facts
// asked here once per device (PerDeviceCache); this file launches what the plan says.
// Constraints: T <= 8, K, V <= 256, HV a multiple of H, B <= 65535; the conv caches in place
// (cache_in == cache_out). Rounds: float32 everywhere; o rounded to the dtype once; the state
// rounded only when stored to a bf16 pool, once per launch, not per token.
// Workspace: B x T rows of 2 H K + HV V + 2 HV floats (gdn_decode_workspace_bytes).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/common/per_device_cache.h"
#include "kernels/decode/decode_common.cuh"
#include "kernels/decode/frontend_kernels.cuh"
#include "kernels/decode/state_block.cuh"
#include "kernels/decode/state_lane_quad.cuh"
#include "kernels/decode/state_split_stream.cuh"
#include "kernels/decode/state_tokens.cuh"

namespace {

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
  static PerDeviceCache<int> sms_cache;  // 0: not asked yet
  if (const cudaError_t e = cudaGetDevice(&device)) return e;
  sms = sms_cache.get(device);
  if (sms > 0) return cudaSuccess;
  if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) return e;
  sms_cache.put(device, sms);
  return cudaSuccess;
}

// The blocks of `kernel` resident at once on the current device (its first wave: at most SMs x 32,
// so it fits the kernels' uint32_t), asked once per device into `cache` (0: not asked yet) and
// kept: a decode step is launched once per token.
template <typename Kernel>
cudaError_t decode_resident_blocks(Kernel kernel, int threads, size_t smem, PerDeviceCache<int64_t>& cache,
                                   int64_t& resident) {
  int device = 0, sms = 0;
  if (const cudaError_t e = decode_device(device, sms)) return e;
  resident = cache.get(device);
  if (resident > 0) return cudaSuccess;
  int per_sm = 0;
  if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem)) return e;
  resident = int64_t(sms) * per_sm;
  cache.put(device, resident);
  return cudaSuccess;
}

// Batch rows per front-end block at T = 1 (kernel 1's kRows); T > 1 takes one row per block.
constexpr int kFeRowsT1 = 4;

// Kernel 1's blocks resident at once at this shape's block size: the plan (decode_plan) takes
// kFeRowsT1 batch rows per block at T = 1 where one row per block would need more than two waves
// of them (measured on the H200: at B = 8, H = HV = 32, four rows per block were 8%
// slower, at B = 64 5-10% faster). Asked once per (device, block size) and kept: a decode step is
// launched once per token, and the query would otherwise sit on its launch path every time.
template <typename T>
cudaError_t decode_fe_row_resident(const GdnShape& s, int64_t& resident) {
  constexpr int kSizes = kFeMaxThreads / 32;
  static PerDeviceCache<int64_t> resident_cache[kSizes];  // [warps - 1]
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
// the step is 3.5 us slower at B = 8 and 64 with a float32 pool. The persistent stream kernel (a
// bf16 pool) starts at the exits from kStreamLateTriggerUnitsPerSm slices per SM (H = HV = 32:
// B = 64, 15.5 slices per SM, 4% faster; B = 256 1%; but B = 32, 7.8 per SM, 1.5% slower). Why is
// not measured; a likely cause: launched early, some of its persistent blocks wait for front-end
// blocks' SM slots, and its static walk of the slices ends with theirs.
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

// The lane kernel's blocks (K <= 128): W = min(max_warps, ceil(V / 32)) warps, the column groups of a
// (b, hv).
int64_t decode_lane_warps(const GdnShape& s, int max_warps) {
  const int64_t groups = (s.V + 31) / 32;
  return groups < max_warps ? groups : max_warps;
}
dim3 decode_lane_grid(const GdnShape& s, int max_warps) {
  const int64_t groups = (s.V + 31) / 32, warps = decode_lane_warps(s, max_warps);
  return decode_heads_grid(s, (groups + warps - 1) / warps);
}

// The lane kernel (K <= 128): the front end, then gdn_decode_lane_kernel in C's blocks.
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
  // Measured (B = 64 and 256): -1 to -2% at T = 1 (GVA) and T = 2, +1 to +2% at T = 8,
  // whose longer blocks leave the prefetched slices waiting in L2 longer; T = 4 not measured.
  const uint32_t ahead = p.shape.T <= 2 ? kDecodeL2AheadHeads : 0;
  static PerDeviceCache<int64_t> resident_cache[2];  // [full]
  int64_t resident = 0;  // only the prefetch's rule reads it
  if (ahead > 0)
    if (const cudaError_t e = decode_resident_blocks(kernel, L::kWarps * 32, 0, resident_cache[full], resident))
      return e;
  if (const cudaError_t e = launch_decode_frontend<T>(p, fe, stream)) return e;
  const float* rows = fe;
  return launch_after_front_end(kernel, grid, dim3(L::kWarps * 32), 0, stream, p, rows, ahead, uint32_t(resident));
}

// gdn_decode_quad_fe_kernel: the whole step in one launch; its slice copy is dynamic shared
// memory past the default 48 KiB, so the kernel is opted in once. Its resident blocks (the first
// wave of the prefetch's rule) are asked once per device and kept, as decode_fe_row_resident
// does: a step is launched once per token.
template <typename T>
cudaError_t launch_decode_quad_fe(const GdnFrontEndParams& p, cudaStream_t stream) {
  using L = DecodeQuadFe;
  static const cudaError_t opt_in = cudaFuncSetAttribute(
      gdn_decode_quad_fe_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(L::kSliceBytes));
  if (opt_in != cudaSuccess) return opt_in;
  static PerDeviceCache<int64_t> resident_cache;
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
    static PerDeviceCache<int> per_sm_cache[kDecodeMaxTokens + 1];  // [T]; 0: not asked yet
    per_sm = per_sm_cache[nt].get(device);
    if (per_sm > 0) return cudaSuccess;
    const auto kernel = gdn_decode_stream_kernel<T, St>;
    const int most = int(stream_smem_bytes(int(kDecodeMaxTokens)));
    if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most)) return e;
    if (const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kStreamThreads, stream_smem_bytes(int(nt))))
      return e;
    if (per_sm > 0) per_sm_cache[nt].put(device, per_sm);
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

// The stream kernel (gdn_decode_stream_kernel): the front end, then the persistent state stream, opted
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
      if constexpr (sizeof(St) == 4) return launch_decode_lane<T, St, 64, Lane64>(p, fe, stream);
      break;
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
