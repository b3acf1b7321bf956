// The plain parameter block every GDN kernel takes (CPU and CUDA). Tensors are contiguous in the
// canonical layouts of GdnShape. A kernel never allocates, synchronises, prints or exits.
#pragma once
#include "kernels/common/dtype.h"
#include "kernels/plans/launch_plans.h"
#include "reference/gdn_shape.h"

struct GdnParams {
  GdnShape shape;
  DType dtype = DType::f32;  // element type of q, k, v, o (CPU backend: float storage, rounded)
  const void* q = nullptr;   // [B, T, H, K]
  const void* k = nullptr;   // [B, T, H, K]
  const void* v = nullptr;   // [B, T, HV, V]
  const float* g = nullptr;     // [B, T, HV] log decay; nullptr: no gate (DeltaNet)
  const float* beta = nullptr;  // [B, T, HV]
  const float* h0 = nullptr;    // [B or num_seqs, HV, K, V]; nullptr: zero initial state
  void* o = nullptr;            // [B, T, HV, V]
  float* hT = nullptr;          // [B or num_seqs, HV, K, V]; nullptr: final state not written
  // A packed batch (shape.num_seqs > 0): the num_seqs + 1 token offsets of its sequences, in the
  // memory the kernel reads (host for the CPU backend, device for CUDA); nullptr otherwise.
  const int32_t* cu_seqlens = nullptr;
  float scale = 0.0f;           // resolved by the harness (K^-1/2 by default), never 0 here
  bool use_delta = true;        // false: gated linear attention
  int chunk = 64;               // chunk size C for chunked variants
  // The plan (kernels/plans/launch_plans.h), automatic unless forced: recurrent's T form; wy_ut's scan
  // groups (0: the plan's, 1 the plain scan, G >= 2 the two-level scan over G groups of chunks)
  // and where its output runs (its own kernel, or beside the plain scan).
  RecurrentForm recurrent_form = RecurrentForm::automatic;
  int64_t scan_groups = 0;
  WyUtOutput wy_ut_output = WyUtOutput::automatic;
};
