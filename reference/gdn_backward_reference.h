// Float64 gradients of gated DeltaNet: the oracle a backward kernel is judged against
// (derivation in docs/BACKWARD.md). Both references differentiate the scalar loss
//
//     L = sum(dout .* o) + sum(dhT .* hT)
//
// of the forward of reference/gdn_reference.h, so their results are the vector-Jacobian products
// a training framework's backward pass returns. Nothing here is tuned for speed. No CUDA headers.
#pragma once
#include <cstdint>
#include <vector>

#include "reference/gdn_reference.h"

// The upstream gradients, in the layouts of GdnShape. A packed batch (GdnRefInputs::cu_seqlens):
// each sequence's gradients from its own h0 and dhT, as for the forward (gdn_recurrent_ref).
struct GdnRefGradInputs {
  const double* dout = nullptr;  // dL/do, [B, T, HV, V]; required
  const double* dhT = nullptr;   // dL/dhT, [B, HV, K, V]; nullptr: the loss does not read hT
};

// dL/d(input) for every input of GdnRefInputs. For a subset of heads (GdnRefOptions::heads, whole
// groups of value heads) each array holds those heads only, head-major: dq, dk [qk_heads, T, K];
// dv [heads, T, V]; dg, dbeta [heads, T]; dh0 [heads, K, V].
struct GdnRefGradients {
  std::vector<double> dq, dk;  // [B, T, H, K], summed over the value heads of each q/k head
  std::vector<double> dv;      // [B, T, HV, V]
  std::vector<double> dg;      // [B, T, HV]; empty when there is no gate (in.g == nullptr)
  // [B, T, HV]. Without the delta term (GdnRefOptions::use_delta false) beta is not read, so
  // its gradient is all zero: kept at full size so callers compare it like any other.
  std::vector<double> dbeta;
  std::vector<double> dh0;  // [B, HV, K, V]; empty when in.h0 == nullptr
  // A subset's heads: value heads b HV + hv, and the q/k heads b H + h whose groups they make
  // (entry r of an array: heads[r] or qk_heads[r]); both empty when every head is computed.
  std::vector<int64_t> heads, qk_heads;
};

// The recurrent backward keeps the state at every checkpoint_interval-th token on a forward
// sweep, then walks the checkpoints backwards, recomputing the states of each interval from its
// checkpoint: per head O(T / interval + interval) states of K x V, so T = 65536 at
// K = V = 128 holds ~1024 + 64 states (~140 MB) per head in flight.
constexpr int64_t kGdnBackwardCheckpointInterval = 64;

// Reverse mode through the step form S' = exp(g) S; u = beta (v - S'^T k); S = S' + k u^T;
// o = scale S^T q. opt.threads spreads the heads (b, hv) over threads; the result does not depend
// on the thread count or on checkpoint_interval (bit for bit). opt.heads, when not empty, is a
// sorted subset of whole groups (the value heads b HV + h G .. + G - 1 of q/k head (b, h), G = HV
// / H), each head computed by the same code as in the whole reference; a packed batch takes every
// head. opt.o_magnitude is ignored. Throws ReferenceCancelled like gdn_recurrent_ref.
GdnRefGradients gdn_recurrent_backward_ref(const GdnShape& shape, const GdnRefInputs& in,
                                           const GdnRefGradInputs& grad_in,
                                           const GdnRefOptions& opt,
                                           int64_t checkpoint_interval = kGdnBackwardCheckpointInterval);

// The same gradients through the chunked UT-transform algebra of gdn_chunked_ref, differentiated
// by hand chunk by chunk backwards: the matrix form a chunked GPU backward follows. Keeps the state
// entering each chunk (T / chunk states per head) and recomputes each chunk's gamma, A, T_inv, W,
// U0 and U from it. Agrees with gdn_recurrent_backward_ref to ~1e-12. Threads, heads and
// cancellation as gdn_recurrent_backward_ref.
GdnRefGradients gdn_chunked_backward_ref(const GdnShape& shape, const GdnRefInputs& in,
                                         const GdnRefGradInputs& grad_in, const GdnRefOptions& opt,
                                         int64_t chunk);
