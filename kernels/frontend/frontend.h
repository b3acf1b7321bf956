// The GDN front end on the GPU (docs/DESIGN.md section 1, "Fused front end"): what turns a layer's raw
// projections into the q, k, v, g, beta of the recurrence. Host-only declarations: no CUDA headers
// needed to include this. The device functions live in kernels/frontend/frontend.cuh; the kernels in
// kernels/frontend/frontend.cu (front end alone, and the unfused pipeline), kernels/decode/ (fused
// decode) and kernels/wy_ut/ (fused_conv: the front end as a prologue of wy_ut's kernels).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/gdn_params.h"
#include "kernels/plans/launch_plans.h"

typedef struct CUstream_st* cudaStream_t;

// Width of the causal depthwise convolution; a conv cache holds the last kConvWidth - 1 inputs.
constexpr int kConvWidth = 4;
constexpr int kConvCache = kConvWidth - 1;

// Index of the three convolved tensors in the arrays of GdnFrontEndParams.
enum FrontEndTensor : int { kFeQ = 0, kFeK = 1, kFeV = 2 };

// Layouts as reference/frontend_reference.h: projections [B, T, channels] with channels = H*K for
// q and k, HV*V for v (channel = head * dim + i); conv weights [channels, 4], tap 3 multiplies the
// current token; conv caches [rows, channels, 3], oldest input first. Projections, a, b, conv
// weights, biases and caches are in `dtype`; A_log and dt_bias are float32.
struct GdnFrontEndParams {
  GdnShape shape;
  DType dtype = DType::bf16;
  const void* x[3] = {nullptr, nullptr, nullptr};          // raw projections q, k, v
  const void* conv_w[3] = {nullptr, nullptr, nullptr};     // [channels, 4]
  const void* conv_bias[3] = {nullptr, nullptr, nullptr};  // [channels]; nullptr: no bias
  // Forward (frontend kernels, unfused): caches [B, channels, 3] read from cache_in (nullptr:
  // zeros, a fresh sequence) and the final caches written to cache_out (never in place).
  // Decode: one pool per tensor, [pool_slots, channels, 3], read and written in place at the
  // rows slots[b]; cache_in must equal cache_out.
  const void* cache_in[3] = {nullptr, nullptr, nullptr};
  void* cache_out[3] = {nullptr, nullptr, nullptr};
  const void* a = nullptr;         // [B, T, HV]
  const void* b = nullptr;         // [B, T, HV]
  const float* A_log = nullptr;    // [HV]
  const float* dt_bias = nullptr;  // [HV]
  float l2_eps = 1e-6f;            // q, k: x / sqrt(sum x^2 + eps)
  float scale = 0.0f;              // readout scale, resolved by the caller (K^-1/2 by default)
  bool use_delta = true;           // false: gated linear attention
  // Forward: h0 [B, HV, K, V] (nullptr: zero), hT [B, HV, K, V], o [B, T, HV, V] in dtype.
  const float* h0 = nullptr;
  float* hT = nullptr;
  void* o = nullptr;
  // Decode: the state pool [pool_slots, HV, K, V], float32 or bf16, read and written in place
  // at slots[b]; slots are distinct and < pool_slots (the caller's contract).
  void* state = nullptr;
  bool state_bf16 = false;
  const int32_t* slots = nullptr;  // [B]
  int64_t pool_slots = 0;
  // The plan (kernels/plans/launch_plans.h): automatic, the launcher's choice; else forced (a launch
  // the forced kernel cannot run returns cudaErrorInvalidValue). fused_conv and unfused_conv:
  // the scan's groups (0: the plan's); unfused_conv: where wy_ut's output runs; fused_conv: its
  // output form; fused_decode: its kernels.
  int64_t scan_groups = 0;
  WyUtOutput wy_ut_output = WyUtOutput::automatic;
  FusedConvOutput fused_conv_output = FusedConvOutput::automatic;
  DecodeStateKernel decode_state = DecodeStateKernel::automatic;
  DecodeFeKernel decode_fe = DecodeFeKernel::automatic;
};

// The front end alone (forward, any T): writes q, k [B, T, H, K] and v [B, T, HV, V] in dtype,
// g and beta [B, T, HV] in float32 to the given buffers, and the final conv caches to
// p.cache_out. One launch. Returns cudaError_t as int (0 = success).
int launch_gdn_frontend(const GdnFrontEndParams& p, void* q, void* k, void* v, float* g,
                        float* beta, cudaStream_t stream);

// unfused_conv: launch_gdn_frontend into the workspace, then launch_gdn_wy_ut on it: wy_ut's
// limits (bf16 or fp16, K in {64, 128, 256}, V a multiple of 32 <= 256). nullptr when it can run
// the shape, else why not.
const char* gdn_frontend_unfused_shape_unsupported(const GdnShape& shape, DType dtype);
// q, k, v (dtype), g, beta (float32) and the wy_ut workspace, each part 256-byte aligned.
size_t gdn_frontend_unfused_workspace_bytes(const GdnShape& shape, DType dtype, int64_t scan_groups = 0);
int launch_gdn_frontend_unfused(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream);

// fused_conv: wy_ut's three kernels with the front end in the prologues of prepare (k, v, g, beta)
// and output (q), the state scan unchanged (defined in kernels/wy_ut/, beside the kernels it
// extends). k reaches global memory once, normalised, in the workspace like W and U (prepare writes
// it, the scan and output read it); q, v, g, beta never. Inputs and outputs those of unfused_conv;
// bf16 or fp16, K in {64, 128}, V a multiple of 32 <= 256. nullptr when it can run the shape, else
// why not. The launcher also refuses (cudaErrorInvalidValue) projections, conv weights or biases
// or a workspace that are not 16-byte aligned, and final conv caches that overlap the initial ones.
const char* gdn_fused_conv_shape_unsupported(const GdnShape& shape, DType dtype);
// Whether fused_conv runs wy_ut's pipelined output at this (supported) shape (K and V <= 128): q's
// front end converted in place in the pipelined output kernel; else the per-chunk output, with the
// front end in its prologue. prepare is the per-chunk kernel (its prologue builds k, v, g, beta)
// either way.
bool gdn_fused_conv_pipelined(const GdnShape& shape);
// wy_ut's workspace (gamma, W, U, the chunk states), then k [B, T, H, K] in dtype; each part
// 256-byte aligned.
size_t gdn_fused_conv_workspace_bytes(const GdnShape& shape, DType dtype, int64_t scan_groups = 0);
int launch_gdn_fused_conv(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream);

// fused_decode: T <= kDecodeMaxTokens new tokens per sequence, in place: conv caches rolled,
// conv + SiLU + L2 norm + gates (one kernel), then the state update and o (a second kernel);
// state and caches in pools addressed through p.slots. K and V <= 256, B <= 65535.
constexpr int64_t kDecodeMaxTokens = 8;
const char* gdn_decode_shape_unsupported(const GdnShape& shape);
// The front end's float32 results of one launch, [B][T] rows of q, k, v and the gates
// (kernels/decode/); no initial contents needed.
size_t gdn_decode_workspace_bytes(const GdnShape& shape);
int launch_gdn_decode(const GdnFrontEndParams& p, void* workspace, cudaStream_t stream);
// The device facts fused_decode's plan reads for this problem (decode_plan, kernels/plans/launch_plans.h)
// on the current device: its SMs and the occupancy of the kernels whose grids decide. Returns
// cudaError_t as int. The harness plans each row with these, as the launcher does.
int gdn_decode_plan_device(const GdnShape& shape, DType dtype, bool state_bf16, PlanDevice& dev);
