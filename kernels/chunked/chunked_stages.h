// The stages of the `chunked` CUDA variant (kernels/chunked/chunked.cu), exposed one by one so a test can
// run them in order and read every intermediate against gdn_chunked_ref's GdnChunkIntermediates.
// launch_gdn_chunked (cuda_kernels.h) runs the five stages back to back. Host-only declarations.
// Each launcher checks the parameters (chunked_params_ok), enqueues one kernel on `stream` and
// returns the launch status as an int cudaError_t (0 = cudaSuccess).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/gdn_params.h"

typedef struct CUstream_st* cudaStream_t;

// The float32 intermediates in the workspace, N = ceil(T / C) chunks, each padded to C rows (rows
// past the tail chunk's length are zero), layout [B, HV, N, ...] as in GdnChunkIntermediates.
struct ChunkedWorkspaceView {
  float* gamma = nullptr;   // [B, HV, N, C]     local cumulative gate sums
  float* T_inv = nullptr;   // [B, HV, N, C, C]  (I + A)^-1
  float* W = nullptr;       // [B, HV, N, C, K]  Tm diag(beta exp(gamma)) K
  float* U0 = nullptr;      // [B, HV, N, C, V]  Tm diag(beta) V
  float* U = nullptr;       // [B, HV, N, C, V]  U0 - W S0
  float* states = nullptr;  // [B, HV, N, K, V]  state entering each chunk
};

int64_t chunked_num_chunks(const GdnParams& p);
// Splits a workspace of gdn_chunked_workspace_bytes(p) bytes into its tensors (256-byte aligned).
ChunkedWorkspaceView chunked_workspace_view(const GdnParams& p, void* workspace);
// K, V in [1, 256], C in {16, 32, 64}, HV a multiple of H, B and HV <= 65535.
bool chunked_params_ok(const GdnParams& p);

int launch_chunked_gamma(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream);
// Reads gamma; writes T_inv.
int launch_chunked_ut_transform(const GdnParams& p, const ChunkedWorkspaceView& ws,
                                cudaStream_t stream);
// Reads gamma, T_inv; writes W and U0.
int launch_chunked_wy(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream);
// Reads gamma, W, U0, h0; writes U, states and hT (when p.hT is set).
int launch_chunked_scan(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream);
// Reads gamma, U, states; writes o.
int launch_chunked_output(const GdnParams& p, const ChunkedWorkspaceView& ws, cudaStream_t stream);
