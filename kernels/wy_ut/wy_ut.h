// wy_ut: the chunked GDN forward (docs/DESIGN.md section 1) with its products on tensor cores.
// Host-only declarations: no CUDA headers needed to include this. The algorithm, its rounding and
// its budgets are described at the top of kernels/wy_ut/launch.cu and of its stage files.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/gdn_params.h"

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
  float* U = nullptr;       // [B, HV, N, C, V]  U0 = Tm diag(beta) V after stage 1; stage 2
                            //                   overwrites it in place by U = U0 - W S0 (stage 3
                            //                   reads it)
  float* states = nullptr;  // [B, HV, N, K, V]  state entering each chunk (stage 2, for stage 3)
  // The scan with the output beside it writes no states: its P fragments take their bytes,
  // [B, HV, N, 2560] words (launch_gdn_wy_ut_scan_output; each chunk's part at least 10 KiB).
  uint32_t* qk_fragments = nullptr;
  // The two-level scan (gdn_wy_ut_scan_groups): stage 2 over scan_groups groups of chunks. With
  // one group, the plain sequential scan, and these two are null (not in the workspace).
  int64_t scan_groups = 1;
  float* group_ends = nullptr;    // [B, HV, G, K, V + K]  a group's end state from a zero entering
                                  //   state (R, columns < V) and its transition (M, the last K):
                                  //   S_end = M S_enter + R (groups 1 .. G - 2)
  float* group_enters = nullptr;  // [B, HV, G, K, V]  the state entering each group (1 .. G - 1)
  // Optional, for tests (nullptr in normal runs; not part of the workspace size): stage 1 also
  // writes A and Tm = (I + A)^-1 here, [B, HV, N, C, C], rows past the sequence end zero.
  float* A = nullptr;
  float* Tm = nullptr;
};

// Parameters with only the shape, dtype and chunk (64) set: all that the shape checks and the
// workspace sizes read, for callers that start from a GdnShape (the front-end variants).
GdnParams gdn_wy_ut_shape_params(const GdnShape& shape, DType dtype);

// The two-level state scan: the scan is N sequential steps on V/32 x HV x B blocks; where those
// leave most SMs idle, G groups cut the chain to ~2N/G steps: pass 1 scans groups 0 .. G-2 at once
// (group 0 from h0; the others from a zero state, plus their K x K transition as K/32 more
// blocks), a small pass chains the groups' entering states (G >= 3), pass 3 scans groups 1 .. G-1
// from them. The plan (wy_ut_scan_groups_model, kernels/plans/launch_plans.h) takes 1 (the plain scan)
// unless a cost model in scan steps, waves of resident blocks included, says G saves a fifth or
// more; groups of >= 8 chunks, G <= 32.
// The device facts wy_ut's plan reads (the scan kernel's resident blocks at this K and dtype on
// the current device). Returns cudaError_t as int.
int gdn_wy_ut_plan_device(const GdnShape& shape, DType dtype, PlanDevice& dev);

// Bytes of workspace launch_gdn_wy_ut needs (each part 256-byte aligned). scan_groups: 0 takes
// p.scan_groups, and where that is 0 the plan's groups for the current device (1 without one),
// which the view and the launchers then also take; another value forces that many groups (at most
// the chunks). The same scan_groups must be given to both.
size_t gdn_wy_ut_workspace_bytes(const GdnParams& p, int64_t scan_groups);
size_t gdn_wy_ut_workspace_bytes(const GdnParams& p);  // scan_groups 0
// The parts of a workspace of gdn_wy_ut_workspace_bytes(p, scan_groups) bytes at `workspace`.
GdnWyUtWorkspace gdn_wy_ut_workspace_view(const GdnParams& p, void* workspace, int64_t scan_groups = 0);
// The groups that scan_groups = 0 means for p on the current device (what the workspace holds).
int64_t gdn_wy_ut_scan_groups_for(const GdnParams& p);

// The stages, each one kernel launch (return cudaError_t as int, 0 = success):
//   1 prepare: per (b, hv, chunk): gamma, A, Tm, W, U0; blocks_per_head blocks per (b, hv), as
//              output's (0: gdn_wy_ut_output_blocks_per_head for the device). The workspace does
//              not depend on the choice.
//   2 states:  per (b, hv, 32 value columns), sequential over chunks: U, entering states, hT
//              (needs ws.states; any K); as ws.scan_groups passes of the two-level scan when it
//              is above 1 (three launches).
//   3 output:  o (needs ws.states and U from stage 2; any K); blocks_per_head blocks per (b, hv),
//              block x taking chunks x, x + blocks_per_head, ... (more than the chunks: one per
//              chunk); 0 picks gdn_wy_ut_output_blocks_per_head for the device. o does not depend
//              on the choice.
int launch_gdn_wy_ut_prepare(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                             int blocks_per_head = 0);
int launch_gdn_wy_ut_states(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);
int launch_gdn_wy_ut_output(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream,
                            int blocks_per_head = 0);
// The per-chunk output kernel (one block per chunk, no pipeline), without the front end: the
// reference the tests compare the pipelined output's o with, bit for bit (fused_conv runs it with
// its front end).
int launch_gdn_wy_ut_output_per_chunk(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);
// The per-chunk prepare kernel (one block per chunk, loads then compute), without the front end:
// the reference the tests compare the pipelined prepare's gamma, W and U0 with, bit for bit
// (fused_conv runs it with its front end).
int launch_gdn_wy_ut_prepare_per_chunk(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);

// Blocks per (b, hv) of the output stage (and of prepare's): as many as fill one wave of
// resident_blocks over the heads (at least 1, at most num_chunks), then the fewest that keep the
// same chunks per block, so every block of a head gets the same number of chunks or one less.
int64_t gdn_wy_ut_output_blocks_per_head(int64_t num_chunks, int64_t heads, int64_t resident_blocks);

// Stages 2 and 3 in two launches (scan_output.cuh): P = (Q K^T) .* D .* causal per chunk, in
// parallel, into ws.qk_fragments; then the plain scan's chain on 4 warps and the output on 8 more,
// the entering states and U handed over in shared memory (ws.states is not written, U keeps U0). K <= 128 and ws.scan_groups = 1 (cudaErrorInvalidValue otherwise); o and hT bit for
// bit those of launch_gdn_wy_ut_states + launch_gdn_wy_ut_output.
int launch_gdn_wy_ut_scan_output(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);

// Stages 2 and 3 in one launch on sm_90a (chain_wgmma.cuh): the chain on warpgroup products, the
// state in registers, the output beside it (ws.states not written, U keeps U0). K in {64, 128},
// V a multiple of 64, ws.scan_groups = 1 (cudaErrorInvalidValue otherwise); another device than
// compute capability 9.0: cudaErrorInvalidDeviceFunction.
int launch_gdn_wy_ut_chain_wgmma(const GdnParams& p, const GdnWyUtWorkspace& ws, cudaStream_t stream);

// prepare, then states + output or scan_output as the plan says (p.wy_ut_output), on `stream`;
// workspace of gdn_wy_ut_workspace_bytes(p) bytes. Never allocates, synchronises, prints or exits.
int launch_gdn_wy_ut(const GdnParams& p, void* workspace, cudaStream_t stream);
