// Float64 gradients of softmax attention (reference/gdn_reference.h's attention_ref): the oracle
// an attention baseline's backward is judged against, so the harness has its own quadratic
// training baseline. No CUDA headers; nothing here is tuned for speed.
#pragma once
#include <cstdint>
#include <vector>

struct AttentionRefGradients {
  std::vector<double> dq, dk;  // [B, T, H, D]
  std::vector<double> dv;      // [B, T, H, Dv]
};

// dL/dq, dL/dk, dL/dv of L = sum(dout .* o), o = softmax(scale q k^T + causal mask) v, per head:
// with P the softmax and dP = dout v^T, dS = P .* (dP - rowsum(dout .* o)) (the softmax's
// Jacobian), dq = scale dS k, dk = scale dS^T q, dv = P^T dout. q, k [B, T, H, D]; v, dout
// [B, T, H, Dv]; scale 0 means D^-1/2. Heads (b, h) run on `threads` threads, each head's query
// rows in order, so the result does not depend on the thread count. O(T^2 (D + Dv)) a head, one
// row of T keys in memory at a time. Throws ReferenceCancelled like attention_ref.
AttentionRefGradients attention_backward_ref(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Dv,
                                             const double* q, const double* k, const double* v,
                                             const double* dout, double scale, bool causal,
                                             int threads = 1);
