// wy_ut: the chunked GDN forward of docs/DESIGN.md section 1 with its products on tensor cores
// (mma.sync m16n8k16, bf16/fp16 operands, float32 accumulation), chunk C = 64.
//   gamma = local cumsum of g;  A = strictly_lower(diag(beta) K K^T .* D), D_ij = exp(g_i - g_j)
//   Tm = (I + A)^-1;  W = Tm diag(beta exp(gamma)) K;  U0 = Tm diag(beta) V
//   per chunk, in sequence:  U = U0 - W S0;  S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
//   O = scale (diag(exp(gamma)) Q S0 + ((Q K^T) .* D .* causal_incl_diag) U)
// Three stages: prepare.cuh (gamma, W, U0), scan.cuh (the states, plain or two-level),
// output.cuh (o); or, where the plan puts the output beside the plain scan (K <= 128),
// prepare.cuh then scan_output.cuh (the scan and the output in one warp-specialised kernel,
// the states never in memory); this file holds their launchers and fused_conv's (the front end of
// frontend_prologue.cuh in prepare's and output's prologues, the scan unchanged; k reaches global
// memory once, in the workspace like W and U; q, v, g, beta never).
// Differs from chunked (SIMT float32): the products run on tensor cores. Differs from FLA's chunk
// kernel: operands that are not inputs are never rounded to bf16/fp16 alone (wy_ut_common.cuh):
// every intermediate carries ~1e-5 relative error (bf16 split) and o is limited by its final
// rounding to the dtype: expected rel_l2 ~ the dtype floor (bf16 ~1.6e-3, fp16 ~2.2e-4). gamma,
// A, Tm, the state and all accumulation are float32; the workspace is float32.
// Constraints: dtype bf16/fp16 (fp32 inputs are refused, not run in TF32), C = 64,
// K in {64, 128, 256}, V a multiple of 32 up to 256; fp16 splits need |S|, |U| < 65504. exp is
// only ever taken of gamma_i - gamma_j with j <= i < L (or of gamma itself), never of a positive
// difference, so strong decay underflows to 0 and never makes inf * 0. Rows past the end of a tail
// chunk keep gamma = 0 (the reference's layout), so they are masked, not exponentiated.
// fused_conv: K in {64, 128}; its output is the pipelined kernel where K and V <= 128
// (gdn_fused_conv_pipelined), else the per-chunk one; its prepare is the per-chunk kernel.
// Padding: 16-bit tiles have rows of K+8 elements (16 B apart mod 128: ldmatrix conflict free).
// Workspace: B HV N (C + C K + C V + K V) x 4 B (gamma, W, U, the chunk states, or in their
// place P's fragments for the scan with the output beside it): ~2 KiB per token and value head at
// K = V = 128; B HV G K (2V + K) x 4 B more (the group ends and entering
// states) when G > 1.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/frontend/frontend.cuh"
#include "kernels/wy_ut/chain_wgmma.cuh"
#include "kernels/wy_ut/output.cuh"
#include "kernels/wy_ut/prepare.cuh"
#include "kernels/wy_ut/scan.cuh"
#include "kernels/wy_ut/scan_output.cuh"
#include "kernels/wy_ut/wy_ut.h"
#include "kernels/wy_ut/wy_ut_common.cuh"

namespace {

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

// The per-chunk prepare, one block per chunk (fused_conv's, with its front end). kFe: with the front-end prologue reading `fe` and
// writing the normalised k to k_out (fused_conv); otherwise fe and k_out are unused (the tests'
// bit-identity reference).
template <typename T, bool kFe = false>
cudaError_t prepare_per_chunk_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                                const GdnFrontEndParams& fe = GdnFrontEndParams(), T* k_out = nullptr) {
  const int bytes = prepare_smem_bytes(int(p.shape.K), int(p.shape.V));
  if (const cudaError_t e = allow_smem(gdn_wy_ut_prepare_kernel<T, kFe>, bytes)) return e;
  const dim3 grid(unsigned(ws.num_chunks), unsigned(p.shape.HV), unsigned(p.shape.B));
  gdn_wy_ut_prepare_kernel<T, kFe><<<grid, kThreads, bytes, stream>>>(p, ws, fe, k_out);
  return cudaGetLastError();
}

// The pipelined prepare (wy_ut's): blocks_per_head blocks per (b, hv), each looping over its chunks.
template <typename T>
cudaError_t prepare_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                             int blocks_per_head) {
  const auto kernel = gdn_wy_ut_prepare_pipelined_kernel<T>;
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

// The per-chunk output kernel, one block per chunk: fused_conv's (with the front end) and the
// bit-identity reference of the tests (without).
template <typename T, bool kFe = false>
cudaError_t output_per_chunk_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                               const GdnFrontEndParams& fe = GdnFrontEndParams()) {
  const int bytes = output_smem_bytes(int(p.shape.K));
  if (const cudaError_t e = allow_smem(gdn_wy_ut_output_kernel<T, kFe>, bytes)) return e;
  const dim3 grid(unsigned(ws.num_chunks), unsigned(p.shape.HV), unsigned(p.shape.B));
  gdn_wy_ut_output_kernel<T, kFe><<<grid, kThreads, bytes, stream>>>(p, ws, fe);
  return cudaGetLastError();
}

// The pipelined output: blocks_per_head blocks per (b, hv), each looping over its chunks; 0 picks one wave
// of the device's resident blocks (gdn_wy_ut_output_blocks_per_head).
template <typename T, int kK, bool kFe = false>
cudaError_t output_pipelined_for_k(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
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
  if constexpr (kFe) return launch(gdn_wy_ut_output_pipelined_fe_kernel<T, kK>, fe);
  else return launch(gdn_wy_ut_output_pipelined_kernel<T, kK>);
}

// The scan with the output beside it (scan_output.cuh): P's fragments, grid (N, HV, B); then the
// scan and output, grid (V/32, HV, B).
template <typename T, int kK>
cudaError_t scan_output_for_k(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  {
    const auto fragments = gdn_wy_ut_qk_fragments_kernel<T>;
    const int bytes = 2 * tile16_bytes(kC, kK) + kC * 4;
    if (const cudaError_t e = allow_smem(fragments, bytes)) return e;
    const dim3 grid(unsigned(ws.num_chunks), unsigned(p.shape.HV), unsigned(p.shape.B));
    fragments<<<grid, kThreads, bytes, stream>>>(p, ws);
    if (const cudaError_t e = cudaGetLastError()) return e;
  }
  const auto kernel = gdn_wy_ut_scan_output_kernel<T, kK>;
  const int bytes = ScanOutputLayout<kK>::kBytes;
  if (const cudaError_t e = allow_smem(kernel, bytes)) return e;
  const dim3 grid(unsigned(p.shape.V / kBV), unsigned(p.shape.HV), unsigned(p.shape.B));
  kernel<<<grid, kScanOutputThreads, bytes, stream>>>(p, ws);
  return cudaGetLastError();
}

template <typename T>
cudaError_t scan_output_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  if (!wy_ut_output_in_scan_fits(p.shape, ws.scan_groups)) return cudaErrorInvalidValue;
  return p.shape.K == 64 ? scan_output_for_k<T, 64>(p, ws, stream) : scan_output_for_k<T, 128>(p, ws, stream);
}

template <typename T>
cudaError_t output_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                            int blocks_per_head) {
  switch (p.shape.K) {
    case 64: return output_pipelined_for_k<T, 64>(p, ws, stream, blocks_per_head);
    case 128: return output_pipelined_for_k<T, 128>(p, ws, stream, blocks_per_head);
    case 256: return output_pipelined_for_k<T, 256>(p, ws, stream, blocks_per_head);
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
  if (const cudaError_t e = prepare_per_chunk_for_type<T, true>(p, ws, stream, fe, k_ws)) return e;
  if (const cudaError_t e = states_for_type<T>(p, ws, stream)) return e;
  if (fused_conv_output(p.shape, fe.fused_conv_output) == FusedConvOutput::per_chunk)
    return output_per_chunk_for_type<T, true>(p, ws, stream, fe);
  return p.shape.K == 64 ? output_pipelined_for_k<T, 64, true>(p, ws, stream, 0, fe)
                         : output_pipelined_for_k<T, 128, true>(p, ws, stream, 0, fe);
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
  int major = 0, minor = 0;
  if (const cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) return int(e);
  if (const cudaError_t e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) return int(e);
  dev.sm90a = major == 9 && minor == 0;
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

namespace {
// The entering states' part, which the P fragments share (the scan with the output beside it
// writes no states): K V floats a chunk, at least the fragments' 10 KiB.
size_t states_bytes(const GdnShape& s, size_t chunks) {
  return align256(chunks * std::max<size_t>(size_t(s.K * s.V), size_t(kQkFragmentWords)) * 4);
}
}  // namespace

size_t gdn_wy_ut_workspace_bytes(const GdnParams& p, int64_t scan_groups) {
  const GdnShape& s = p.shape;
  const size_t chunks = size_t(s.B * s.HV * num_chunks(p));
  const int64_t G = resolve_scan_groups(p, scan_groups);
  return align256(chunks * kC * 4) + align256(chunks * kC * size_t(s.K) * 4) +
         align256(chunks * kC * size_t(s.V) * 4) + states_bytes(s, chunks) +
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
  ws.qk_fragments = reinterpret_cast<uint32_t*>(base);
  ws.scan_groups = resolve_scan_groups(p, scan_groups);
  if (ws.scan_groups > 1) {
    base += states_bytes(s, chunks);
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

int launch_gdn_wy_ut_prepare_per_chunk(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  return checked_for_dtype(p, ws, [&](auto t) { return prepare_per_chunk_for_type<decltype(t)>(p, ws, stream); });
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

int launch_gdn_wy_ut_output_per_chunk(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  return checked_for_dtype(p, ws, [&](auto t) { return output_per_chunk_for_type<decltype(t)>(p, ws, stream); });
}

int launch_gdn_wy_ut_scan_output(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  return checked_for_dtype(p, ws, [&](auto t) { return scan_output_for_type<decltype(t)>(p, ws, stream); });
}

namespace {
template <typename T, int kK>
cudaError_t chain_wgmma_for_k(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  using Ops = ChainOperands<kK>;
  const auto operands = gdn_wy_ut_chain_operands_kernel<T, kK>;
  const int operand_bytes = Ops::kQ + Ops::kKt + Ops::kP + Ops::kQ + kC * 4;
  if (const cudaError_t e = allow_smem(operands, operand_bytes)) return e;
  operands<<<dim3(unsigned(ws.num_chunks), unsigned(p.shape.HV), unsigned(p.shape.B)), kThreads, operand_bytes,
             stream>>>(p, ws);
  if (const cudaError_t e = cudaGetLastError()) return e;
  const auto kernel = gdn_wy_ut_chain_wgmma_kernel<T, kK>;
  const int bytes = ChainWgmmaLayout<kK>::kBytes;
  if (const cudaError_t e = allow_smem(kernel, bytes)) return e;
  const dim3 grid(unsigned(p.shape.V / kChainValues), unsigned(p.shape.HV), unsigned(p.shape.B));
  kernel<<<grid, kChainThreads, bytes, stream>>>(p, ws);
  return cudaGetLastError();
}
template <typename T>
cudaError_t chain_wgmma_for_type(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  if (!wy_ut_wgmma_chain_fits(p.shape, ws.scan_groups)) return cudaErrorInvalidValue;
  return p.shape.K == 64 ? chain_wgmma_for_k<T, 64>(p, ws, stream) : chain_wgmma_for_k<T, 128>(p, ws, stream);
}
}  // namespace

int launch_gdn_wy_ut_chain_wgmma(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream) {
  int device = 0, major = 0, minor = 0;
  if (const cudaError_t e = cudaGetDevice(&device)) return int(e);
  if (const cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) return int(e);
  if (const cudaError_t e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) return int(e);
  if (major != 9 || minor != 0) return int(cudaErrorInvalidDeviceFunction);
  return checked_for_dtype(p, ws, [&](auto t) { return chain_wgmma_for_type<decltype(t)>(p, ws, stream); });
}

int launch_gdn_wy_ut(const GdnParams& p, void* workspace, cudaStream_t stream) {
  if (gdn_wy_ut_unsupported(p) || !workspace) return int(cudaErrorInvalidValue);
  const GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(p, workspace);
  if (p.wy_ut_output == WyUtOutput::wgmma_chain) {
    if (!wy_ut_wgmma_chain_fits(p.shape, ws.scan_groups)) return int(cudaErrorInvalidValue);
    if (const int e = launch_gdn_wy_ut_prepare(p, ws, stream)) return e;
    return launch_gdn_wy_ut_chain_wgmma(p, ws, stream);
  }
  const bool in_scan = wy_ut_output(p.shape, ws.scan_groups, p.wy_ut_output) == WyUtOutput::in_scan;
  if (in_scan && !wy_ut_output_in_scan_fits(p.shape, ws.scan_groups)) return int(cudaErrorInvalidValue);
  if (const int e = launch_gdn_wy_ut_prepare(p, ws, stream)) return e;
  if (in_scan) return launch_gdn_wy_ut_scan_output(p, ws, stream);
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
