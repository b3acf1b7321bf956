// The upstream gradients a GDN backward takes and the gradients it writes, beside GdnParams (the
// forward's inputs, which a backward reads too). The loss is L = sum(dout .* o) + sum(dhT .* hT)
// (docs/BACKWARD.md); every gradient is dL/d(input) in the layout of that input.
#pragma once

struct GdnGradParams {
  const void* dout = nullptr;  // [B, T, HV, V] dL/do, in the dtype of o (CPU: float storage, rounded)
  const float* dhT = nullptr;  // [B, HV, K, V] dL/dhT; nullptr: the loss does not read hT
  void* dq = nullptr;          // [B, T, H, K], in the dtype of q: summed over each group of value heads
  void* dk = nullptr;          // [B, T, H, K], as dq
  void* dv = nullptr;          // [B, T, HV, V], in the dtype of v
  float* dg = nullptr;         // [B, T, HV]; written only with a gate (GdnParams::g)
  float* dbeta = nullptr;      // [B, T, HV]; all zero without the delta term (beta is not read)
  float* dh0 = nullptr;        // [B, HV, K, V]; written only with h0 (GdnParams::h0)
};
