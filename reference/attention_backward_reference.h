// Float64 gradients of softmax attention (reference/gdn_reference.h's attention_ref): the oracle
// an attention baseline's backward is judged against, so the harness has its own quadratic
// training baseline. No CUDA headers; nothing here is tuned for speed.
#pragma once
#include <cstdint>
#include <vector>

struct AttentionRefGradients {
  std::vector<double> dq, dk;  // [B, T, H, D]; for a subset of heads [heads, T, D]
  std::vector<double> dv;      // [B, T, H, Dv]; for a subset [heads, T, Dv]
  std::vector<int64_t> heads;  // the subset's flat heads b H + h; empty: every head
};

// dL/dq, dL/dk, dL/dv of L = sum(dout .* o), o = softmax(scale q k^T + causal mask) v, per head:
// with P the softmax and dP = dout v^T, dS = P .* (dP - rowsum(dout .* o)) (the softmax's
// Jacobian), dq = scale dS k, dk = scale dS^T q, dv = P^T dout. q, k [B, T, H, D]; v, dout
// [B, T, H, Dv]; scale 0 means D^-1/2. One head at a time, its rows on `threads` threads (by query
// row, then by key row, as FlashAttention's backward), every sum in index order, so the result does
// not depend on the thread count. ~4 T^2 (D + Dv) multiply-adds a causal head, one row of keys in
// memory at a time. `heads` (flat b H + h, sorted): those heads only, a sample of a problem whose
// whole reference is too slow. Throws ReferenceCancelled like attention_ref.
AttentionRefGradients attention_backward_ref(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Dv,
                                             const double* q, const double* k, const double* v,
                                             const double* dout, double scale, bool causal,
                                             int threads = 1, const std::vector<int64_t>& heads = {});
