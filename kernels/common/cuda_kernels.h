// Launchers of the CUDA kernels. Host-only declarations: no CUDA headers needed to include this.
// Each launcher takes a plain params struct, workspace and stream, enqueues its kernels and
// returns the launch status (0 = cudaSuccess); it never allocates, synchronises, prints or exits.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/gdn_grad_params.h"
#include "kernels/common/gdn_params.h"

typedef struct CUstream_st* cudaStream_t;
typedef struct cublasContext* cublasHandle_t;

// recurrent: K and V up to 256.
constexpr int64_t kRecurrentMaxHeadDim = 256;
// recurrent needs no workspace (pass nullptr).
int launch_gdn_recurrent(const GdnParams& p, void* workspace, cudaStream_t stream);

// recurrent_backward: the gradients of L = sum(dout .* o) + sum(dhT .* hT) (docs/BACKWARD.md) by
// reverse mode through the step form, from the forward's inputs in p (its o and hT unused); K and V
// up to 256. dq, dk, dv in p.dtype, dg, dbeta, dh0 float32 (kernels/common/gdn_grad_params.h).
// Workspace: stored states (one every 64 tokens and a 64-token window per block of value columns)
// and the per-block partial sums of dq, dk, dg, dbeta.
size_t gdn_recurrent_backward_workspace_bytes(const GdnParams& p);
int launch_gdn_recurrent_backward(const GdnParams& p, const GdnGradParams& grad, void* workspace,
                                  cudaStream_t stream);

// chunked: K and V up to 256, chunk C in {16, 32, 64}; stages in kernels/chunked/chunked_stages.h.
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
// attn_naive's backward in float32 math: dq, dk, dv of L = sum(dout .* o) (dout [B, T, H, Dv] in
// the dtype; dq, dk, dv written in it), from the inputs alone (P recomputed in float32, never
// rounded). Workspace: float32 copies of q, k and dout, float32 gradients, and two float32 T x T
// squares (P, then dP into dS) for the H heads of one batch entry.
size_t attn_naive_backward_workspace_bytes(const AttnParams& p);
int launch_attn_naive_backward(const AttnParams& p, const void* dout, void* dq, void* dk, void* dv,
                               void* workspace, cublasHandle_t handle, cudaStream_t stream);

// attn_flash: causal FlashAttention-2 forward on tensor cores (kernels/attn_flash/attn_flash.cu); D = Dv in
// {64, 128, 256}, bf16 or fp16, any T. No workspace.
// The reason it cannot run p (a static string), or nullptr.
const char* attn_flash_shape_unsupported(const AttnParams& p);
int launch_attn_flash(const AttnParams& p, cudaStream_t stream);

// attn_decode: one query per (sequence, head) against context cached positions plus its own
// (L = context + 1 keys), split over the keys (kernels/attn_decode/attn_decode.cu).
struct AttnDecodeParams {
  DType dtype = DType::bf16;
  int64_t B = 1, H = 1, D = 128;  // D: head dim of q, k and v
  int64_t context = 0;            // cached positions before the new token
  const void* q = nullptr;        // [B, H, D]
  const void* k = nullptr;        // [B, H, D]: the new token's key (position context)
  const void* v = nullptr;        // [B, H, D]
  const void* k_cache = nullptr;  // [B, context, H, D]
  const void* v_cache = nullptr;  // [B, context, H, D]
  void* o = nullptr;              // [B, H, D]
  float scale = 0.0f;
  int num_splits = 1;             // from attn_decode_num_splits; the workspace is sized for it
};
const char* attn_decode_shape_unsupported(const AttnDecodeParams& p);
// Splits of the L keys so that B * H * splits blocks fill sm_count SMs a few times over.
int attn_decode_num_splits(int64_t B, int64_t H, int64_t L, int sm_count);
// Float32 partials (m, l, o) of every split; 0 with one split.
size_t attn_decode_workspace_bytes(const AttnDecodeParams& p);
int launch_attn_decode(const AttnDecodeParams& p, void* workspace, cudaStream_t stream);
