// Launchers of the CUDA kernels. Host-only declarations: no CUDA headers needed to include this.
// Each launcher takes a plain params struct, workspace and stream, enqueues its kernels and
// returns the launch status (0 = cudaSuccess); it never allocates, synchronises, prints or exits.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/gdn_params.h"

typedef struct CUstream_st* cudaStream_t;
typedef struct cublasContext* cublasHandle_t;

// recurrent: K and V up to 256.
constexpr int64_t kRecurrentMaxHeadDim = 256;
// recurrent needs no workspace (pass nullptr).
int launch_gdn_recurrent(const GdnParams& p, void* workspace, cudaStream_t stream);

// chunked: K and V up to 256, chunk C in {16, 32, 64}; stages in kernels/chunked_stages.h.
constexpr int64_t kChunkedMaxHeadDim = 256;
// Float32 intermediates of every chunk (gamma, T_inv, W, U0, U, entering states).
size_t gdn_chunked_workspace_bytes(const GdnParams& p);
int launch_gdn_chunked(const GdnParams& p, void* workspace, cudaStream_t stream);

// attn_naive: causal softmax attention through cuBLAS with the T x T scores in memory.
struct AttnParams {
  DType dtype = DType::bf16;
  int64_t B = 1, T = 1, H = 1, D = 64, Dv = 64;
  const void* q = nullptr;  // [B, T, H, D]
  const void* k = nullptr;  // [B, T, H, D]
  const void* v = nullptr;  // [B, T, H, Dv]
  void* o = nullptr;        // [B, T, H, Dv]
  float scale = 0.0f;
  bool causal = true;
};
// Workspace: fp32 scores and dtype probabilities for the H heads of one batch entry.
size_t attn_naive_workspace_bytes(const AttnParams& p);
int launch_attn_naive(const AttnParams& p, void* workspace, cublasHandle_t handle,
                      cudaStream_t stream);
