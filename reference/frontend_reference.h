// Float64 front end of a GDN layer (docs/DESIGN.md section 1, "Fused front end"): what real layers
// feed the recurrence. Per channel a causal depthwise convolution of width W over T, then SiLU;
// q and k L2-normalised per head (eps inside the square root); g = -exp(A_log) softplus(a +
// dt_bias); beta = sigmoid(b); then the GDN recurrence. No CUDA headers.
#pragma once
#include <cstdint>
#include <vector>

#include "reference/gdn_reference.h"

// Layouts: projections [B, T, channels] with channels = H*K (q, k) or HV*V (v), channel
// c = head * dim + i; conv weights [channels, W] (tap W-1 multiplies the current token); conv
// bias [channels]; conv caches [B, channels, W-1] holding the last W-1 inputs, oldest first
// (zeros when absent); a, b [B, T, HV]; A_log, dt_bias [HV].
struct FrontEndInputs {
  const double* q_proj = nullptr;
  const double* k_proj = nullptr;
  const double* v_proj = nullptr;
  const double* q_conv_w = nullptr;
  const double* k_conv_w = nullptr;
  const double* v_conv_w = nullptr;
  const double* q_conv_bias = nullptr;  // optional
  const double* k_conv_bias = nullptr;
  const double* v_conv_bias = nullptr;
  const double* q_conv_cache = nullptr;  // optional initial caches
  const double* k_conv_cache = nullptr;
  const double* v_conv_cache = nullptr;
  const double* a = nullptr;
  const double* b = nullptr;
  const double* A_log = nullptr;
  const double* dt_bias = nullptr;
  const double* h0 = nullptr;  // optional [B, HV, K, V]
};

struct FrontEndOptions {
  int64_t conv_width = 4;
  double l2_eps = 1e-6;  // inside the square root: x / sqrt(sum x^2 + eps)
  GdnRefOptions gdn;     // scale, delta, threads of the recurrence
};

struct FrontEndOutputs {
  std::vector<double> q, k, v, g, beta;  // what the recurrence received
  GdnRefOutputs gdn;                     // o and hT
  std::vector<double> q_conv_cache, k_conv_cache, v_conv_cache;  // final caches [B, ch, W-1]
};

// y[t, c] = bias[c] + sum_i w[c, i] x[t - (W-1) + i, c], inputs before t = 0 from the cache.
// Returns y; writes the final cache (the last W-1 inputs) to final_cache.
std::vector<double> causal_conv_ref(int64_t B, int64_t T, int64_t channels, int64_t W,
                                    const double* x, const double* w, const double* bias,
                                    const double* cache, std::vector<double>* final_cache);

FrontEndOutputs gdn_frontend_ref(const GdnShape& shape, const FrontEndInputs& in,
                                 const FrontEndOptions& opt);
