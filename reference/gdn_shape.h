// Shapes shared by the reference, the kernels and the harness (layout of docs/DESIGN.md section 1).
#pragma once
#include <cstdint>

// Functions that kernels call on the device too; plain inline in host-only translation units.
#ifdef __CUDACC__
#define GDN_HOST_DEVICE __host__ __device__
#else
#define GDN_HOST_DEVICE
#endif

struct GdnShape {
  int64_t B = 1;   // batch
  int64_t T = 1;   // tokens (of a packed batch: of all its sequences)
  int64_t H = 1;   // q/k heads
  int64_t HV = 1;  // value heads, a multiple of H (grouped value heads)
  int64_t K = 64;  // key head dim
  int64_t V = 64;  // value head dim
  // A packed batch (FLA's and FlashInfer's varlen layout): B = 1, the tokens of num_seqs sequences
  // concatenated along T at the offsets cu_seqlens (num_seqs + 1 of them, 0 first, T last, kept
  // beside the shape: GdnParams, GdnRefInputs), each sequence with its own initial and final
  // state. 0: not packed, every batch row one sequence.
  int64_t num_seqs = 0;

  GDN_HOST_DEVICE int64_t sequences() const { return num_seqs > 0 ? num_seqs : B; }
  int64_t qk_elems() const { return B * T * H * K; }      // q, k: [B, T, H, K]
  int64_t v_elems() const { return B * T * HV * V; }      // v, o: [B, T, HV, V]
  int64_t gate_elems() const { return B * T * HV; }       // g, beta: [B, T, HV]
  int64_t state_elems() const { return sequences() * HV * K * V; }  // h0, hT: [B or num_seqs, HV, K, V]
  GDN_HOST_DEVICE int64_t group() const { return HV / H; }          // value heads per q/k head
};

// Sequence n of a batch: tokens [begin, end) of batch row b, and state n of h0 and hT. Unpacked,
// row n is sequence n over [0, T); packed, every sequence lies in row 0 at its offsets.
struct GdnSequence {
  int64_t b, begin, end;
  GDN_HOST_DEVICE int64_t length() const { return end - begin; }
};
GDN_HOST_DEVICE inline GdnSequence gdn_sequence(const GdnShape& s, const int32_t* cu_seqlens, int64_t n) {
  if (s.num_seqs > 0) return {0, cu_seqlens[n], cu_seqlens[n + 1]};
  return {n, 0, s.T};
}

// Sequence n of a packed batch as a batch of its own (B = 1, T = its length, not packed) and where
// its elements start in each packed tensor: the one definition of a per-sequence view, for the
// references and for the variants that run a packed batch one sequence at a time.
struct GdnSequenceView {
  GdnShape shape;
  int64_t qk, v, gate, state;  // element offsets in q/k, in v/o, in g/beta, in h0/hT
};
inline GdnSequenceView gdn_sequence_view(const GdnShape& packed, const int32_t* cu_seqlens, int64_t n) {
  const GdnSequence seq = gdn_sequence(packed, cu_seqlens, n);
  GdnSequenceView view;
  view.shape = packed;
  view.shape.B = 1;
  view.shape.T = seq.length();
  view.shape.num_seqs = 0;
  const int64_t token = seq.b * packed.T + seq.begin;
  view.qk = token * packed.H * packed.K;
  view.v = token * packed.HV * packed.V;
  view.gate = token * packed.HV;
  view.state = n * packed.HV * packed.K * packed.V;
  return view;
}
