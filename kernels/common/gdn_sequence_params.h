// One sequence of a packed batch (GdnShape::num_seqs > 0) as a batch of its own: B = 1, T its
// length, every pointer moved to where the sequence starts (tokens for q, k, v, g, beta, o and
// their gradients, the sequence index for h0, hT, dhT, dh0). A kernel without a packed form runs a
// packed batch as one launch per view; the views are gdn_sequence_view's offsets (reference/gdn_shape.h).
// Host-only: it reads cu_seqlens on the host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/common/gdn_grad_params.h"
#include "kernels/common/gdn_params.h"

namespace gdn_sequence_detail {
template <typename Ptr>
Ptr advance(Ptr base, int64_t elements, size_t element_bytes) {
  if (!base) return base;
  using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<Ptr>>, const char, char>;
  return reinterpret_cast<Ptr>(reinterpret_cast<Byte*>(base) + elements * int64_t(element_bytes));
}
}  // namespace gdn_sequence_detail

// element_bytes: the storage of q, k, v, o, dout, dq, dk, dv (the CPU backend stores float for every
// dtype; CUDA kernels dtype_bytes(dtype)); g, beta and the states are float32 everywhere.
inline GdnParams gdn_sequence_params(const GdnParams& packed, const GdnSequenceView& view, size_t element_bytes) {
  using gdn_sequence_detail::advance;
  GdnParams p = packed;
  p.shape = view.shape;
  p.cu_seqlens = nullptr;
  p.q = advance(packed.q, view.qk, element_bytes);
  p.k = advance(packed.k, view.qk, element_bytes);
  p.v = advance(packed.v, view.v, element_bytes);
  p.o = advance(packed.o, view.v, element_bytes);
  p.g = advance(packed.g, view.gate, 4);
  p.beta = advance(packed.beta, view.gate, 4);
  p.h0 = advance(packed.h0, view.state, 4);
  p.hT = advance(packed.hT, view.state, 4);
  return p;
}

inline GdnGradParams gdn_sequence_grad_params(const GdnGradParams& packed, const GdnSequenceView& view,
                                              size_t element_bytes) {
  using gdn_sequence_detail::advance;
  GdnGradParams gp;
  gp.dout = advance(packed.dout, view.v, element_bytes);
  gp.dhT = advance(packed.dhT, view.state, 4);
  gp.dq = advance(packed.dq, view.qk, element_bytes);
  gp.dk = advance(packed.dk, view.qk, element_bytes);
  gp.dv = advance(packed.dv, view.v, element_bytes);
  gp.dg = advance(packed.dg, view.gate, 4);
  gp.dbeta = advance(packed.dbeta, view.gate, 4);
  gp.dh0 = advance(packed.dh0, view.state, 4);
  return gp;
}

// launch(view, grad_view) for every sequence of the packed batch `packed` in order, cu_seqlens read
// from host memory (packed.cu_seqlens may point at the device): the one loop of every variant that
// runs a packed batch a sequence at a time.
template <typename Launch>
void for_each_sequence_view(const GdnParams& packed, const GdnGradParams& grad, const int32_t* host_cu_seqlens,
                            size_t element_bytes, Launch&& launch) {
  for (int64_t n = 0; n < packed.shape.num_seqs; ++n) {
    const GdnSequenceView view = gdn_sequence_view(packed.shape, host_cu_seqlens, n);
    launch(gdn_sequence_params(packed, view, element_bytes), gdn_sequence_grad_params(grad, view, element_bytes));
  }
}
