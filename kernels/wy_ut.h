// wy_ut: the chunked GDN forward (DESIGN.md section 1) with its products on tensor cores.
// Host-only declarations: no CUDA headers needed to include this. The algorithm, its rounding and
// its budgets are described at the top of kernels/wy_ut.cu.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/gdn_params.h"

typedef struct CUstream_st* cudaStream_t;

// Chunk size of every wy_ut kernel (GdnParams::chunk must equal it).
constexpr int kWyUtChunk = 64;

// nullptr when wy_ut can run these parameters, else what is wrong (and what to do instead):
// dtype bf16 or fp16 (never fp32), chunk 64, K in {64, 128, 256}, V a multiple of 32 up to 256,
// B and HV <= 65535, HV a multiple of H. Launchers return cudaErrorInvalidValue in those cases.
const char* gdn_wy_ut_unsupported(const GdnParams& p);
// The same without the pointer checks: what the registry asks before any buffer exists.
const char* gdn_wy_ut_shape_unsupported(const GdnParams& p);

// The float32 workspace, in the layouts of GdnChunkIntermediates (reference/gdn_reference.h):
// N = ceil(T / 64) chunks, every chunk padded to 64 rows, rows past the sequence end are zero.
struct GdnWyUtWorkspace {
  int64_t num_chunks = 0;
  float* gamma = nullptr;   // [B, HV, N, C]     local cumulative sums of g (stage 1)
  float* W = nullptr;       // [B, HV, N, C, K]  Tm diag(beta exp(gamma)) K (stage 1; not written
                            //                   without the delta term, where W = 0)
  float* U = nullptr;       // [B, HV, N, C, V]  U0 = Tm diag(beta) V after stage 1; the unfused
                            //                   stage 2 overwrites it in place by U = U0 - W S0
                            //                   (stage 3 reads it), the fused one only if save_U
  float* states = nullptr;  // [B, HV, N, K, V]  state entering each chunk: written by the unfused
                            //                   stage 2 for stage 3 (a workspace part only where
                            //                   the launcher runs three kernels); by the fused
                            //                   stage 2 only when set (tests)
  // Optional, for tests (nullptr / false in normal runs; not part of the workspace size): stage 1
  // also writes A and Tm = (I + A)^-1 here, [B, HV, N, C, C], rows past the sequence end zero;
  // the fused stage 2 also writes U into `U` (as the unfused one always does).
  float* A = nullptr;
  float* Tm = nullptr;
  bool save_U = false;
};

// Parameters with only the shape, dtype and chunk (64) set: all that the shape checks and the
// workspace sizes read, for callers that start from a GdnShape (the front-end variants).
GdnParams gdn_wy_ut_shape_params(const GdnShape& shape, DType dtype);

// True where the scan with the output inside (states_output) exists: K <= 128 (the fused step's
// registers and shared memory do not fit K = 256). launch_gdn_wy_ut does not use it: on the H200
// the three kernels are faster (docs/perf-notes.md, "wy_ut version 3"); fused_conv builds on it.
bool gdn_wy_ut_can_fuse_output(const GdnParams& p);

// Bytes of workspace launch_gdn_wy_ut needs (each part 256-byte aligned).
size_t gdn_wy_ut_workspace_bytes(const GdnParams& p);
// The parts of a workspace of gdn_wy_ut_workspace_bytes(p) bytes at `workspace`.
GdnWyUtWorkspace gdn_wy_ut_workspace_view(const GdnParams& p, void* workspace);
// The same for prepare + states_output only: no chunk states (ws.states is nullptr).
size_t gdn_wy_ut_fused_workspace_bytes(const GdnParams& p);
GdnWyUtWorkspace gdn_wy_ut_fused_workspace_view(const GdnParams& p, void* workspace);

// The stages, each one kernel launch (return cudaError_t as int, 0 = success):
//   1 prepare: per (b, hv, chunk): gamma, A, Tm, W, U0.
//   2 states:  per (b, hv, 32 value columns), sequential over chunks: U, entering states, hT
//              (needs ws.states; any K).
//   3 output:  per (b, hv, chunk): o (needs ws.states and U from stage 2; any K).
//   2+3 states_output: stage 2 with o computed in each step (K <= 128, else cudaErrorInvalidValue);
//              writes U and the entering states only where save_U / states ask for them.
int launch_gdn_wy_ut_prepare(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);
int launch_gdn_wy_ut_states(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);
int launch_gdn_wy_ut_output(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);
int launch_gdn_wy_ut_states_output(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);

// prepare + states + output on `stream`;
// workspace of gdn_wy_ut_workspace_bytes(p) bytes. Never allocates, synchronises, prints or exits.
int launch_gdn_wy_ut(const GdnParams& p, void* workspace, cudaStream_t stream);
