// Float64 definitions of gated DeltaNet (docs/DESIGN.md section 1). These are the answers every kernel
// is judged against; nothing here is tuned for speed. No CUDA headers.
#pragma once
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "reference/gdn_shape.h"

// Cancelling a long reference: a plain hook, set by whoever owns the flag (the harness points it
// at its SIGINT/SIGTERM flag). Once *flag is true, gdn_recurrent_ref and the attention references
// stop within a few time steps (query rows) of each head and throw ReferenceCancelled; their
// results are then not computed. nullptr, the default: never cancelled.
void set_reference_cancel_flag(const std::atomic<bool>* flag);
bool reference_cancel_requested();
struct ReferenceCancelled : std::runtime_error {
  ReferenceCancelled() : std::runtime_error("the float64 reference was cancelled") {}
};

// Pointers into contiguous float64 tensors in the canonical layouts of GdnShape.
// g == nullptr: no gate (DeltaNet); h0 == nullptr: zero initial state. A packed batch
// (shape.num_seqs > 0) gives its cu_seqlens; h0 and the results' hT hold one state per sequence.
struct GdnRefInputs {
  const double* q = nullptr;
  const double* k = nullptr;
  const double* v = nullptr;
  const double* g = nullptr;
  const double* beta = nullptr;
  const double* h0 = nullptr;
  const int32_t* cu_seqlens = nullptr;  // [num_seqs + 1] of a packed batch, else unused
};

struct GdnRefOptions {
  double scale = 0.0;      // 0 means K^-1/2
  bool use_delta = true;   // false: gated linear attention, S = exp(g) S + k v^T (beta unused)
  int threads = 1;         // heads (b, hv) are independent; large references use several cores
  // gdn_recurrent_ref: the heads to compute, as flat indices b HV + hv (sorted, distinct, in
  // [0, B HV)); empty: every head. A head's answer does not depend on the others, so a subset is a
  // partial reference of a problem too large for the whole one (harness/reference_sample.h).
  std::vector<int64_t> heads;
  // Also o_abs = |scale| |S|^T |q|: for each output, the sum of the magnitudes of the terms of
  // its last dot product, which sets the rounding error a float32 kernel cannot avoid.
  bool o_magnitude = false;
};

struct GdnRefOutputs {
  std::vector<double> o;   // [B, T, HV, V]; for a subset of heads [heads.size(), T, V]
  std::vector<double> hT;  // [B, HV, K, V]; for a subset of heads [heads.size(), K, V]
  std::vector<double> o_abs;  // with GdnRefOptions::o_magnitude: as o; else empty
  // The heads o and hT hold when GdnRefOptions::heads chose a subset (entry r: head heads[r]);
  // empty: every head, in the layouts above.
  std::vector<int64_t> heads;
  // Front-end problems only (reference/frontend_reference.h): the final q, k, v conv caches
  // concatenated in that order; empty otherwise.
  std::vector<double> conv_cache;
};

double gdn_default_scale(const GdnShape& shape);

// Step form: S' = exp(g) S; u = beta (v - S'^T k); S = S' + k u^T; o = S^T (scale q).
// With opt.heads, only those heads, each computed by the same code as in the full reference (the
// results agree bit for bit).
GdnRefOutputs gdn_recurrent_ref(const GdnShape& shape, const GdnRefInputs& in,
                                const GdnRefOptions& opt);

// Intermediates of the chunked algorithm, chunk index n over ceil(T / C) chunks, each padded to C
// rows (rows past the sequence end are zero). Layout [B, HV, N, ...].
struct GdnChunkIntermediates {
  int64_t chunk = 0;
  int64_t num_chunks = 0;
  std::vector<double> gamma;         // [B, HV, N, C]     local cumulative gate sums
  std::vector<double> A;             // [B, HV, N, C, C]  strictly lower diag(beta)(K K^T) .* D
  std::vector<double> T_inv;         // [B, HV, N, C, C]  (I + A)^-1, the UT transform
  std::vector<double> W;             // [B, HV, N, C, K]
  std::vector<double> U0;            // [B, HV, N, C, V]  Tm diag(beta) V
  std::vector<double> U;             // [B, HV, N, C, V]  U0 - W S0, the "new values"
  std::vector<double> chunk_states;  // [B, HV, N, K, V]  state entering each chunk
};

// Chunked form via the UT transform; must agree with gdn_recurrent_ref to ~1e-12.
GdnRefOutputs gdn_chunked_ref(const GdnShape& shape, const GdnRefInputs& in,
                              const GdnRefOptions& opt, int64_t chunk,
                              GdnChunkIntermediates* keep = nullptr);

// Causal (or full) softmax attention: o = softmax(scale q k^T + mask) v.
// q, k: [B, T, H, D]; v: [B, T, H, Dv]; returns [B, T, H, Dv]. scale 0 means D^-1/2.
std::vector<double> attention_ref(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Dv,
                                  const double* q, const double* k, const double* v,
                                  double scale, bool causal, int threads = 1);

// Causal attention of T new queries after `context` cached positions: query t sits at position
// context + t and attends to every cached position and to the new positions <= t (context = 0
// is attention_ref with causal = true). q, k: [B, T, H, D]; v: [B, T, H, Dv]; k_cache
// [B, context, H, D] and v_cache [B, context, H, Dv] are float storage, read exactly as double.
// Returns [B, T, H, Dv]. scale 0 means D^-1/2.
std::vector<double> attention_cache_ref(int64_t B, int64_t T, int64_t context, int64_t H,
                                        int64_t D, int64_t Dv, const double* q, const double* k,
                                        const double* v, const float* k_cache,
                                        const float* v_cache, double scale, int threads = 1);

// attention_cache_ref for the query rows `rows` only (sorted, distinct, each in [0, T)): returns
// [B, rows.size(), H, Dv], entry r holding query rows[r]. A row costs O((context + rows[r]) D),
// so a sample of rows verifies long sequences whose full reference is O(T^2 D). Each row is
// computed by the same code and in the same order as in attention_cache_ref and attention_ref
// (causal), so the results agree bit for bit.
std::vector<double> attention_cache_rows_ref(int64_t B, int64_t T, int64_t context, int64_t H,
                                             int64_t D, int64_t Dv, const double* q,
                                             const double* k, const double* v,
                                             const float* k_cache, const float* v_cache,
                                             double scale, const std::vector<int64_t>& rows,
                                             int threads = 1);

// One query per sequence against a KV cache of length L.
// q: [B, H, D]; k_cache: [B, L, H, D]; v_cache: [B, L, H, Dv]; returns [B, H, Dv].
std::vector<double> attention_decode_ref(int64_t B, int64_t L, int64_t H, int64_t D, int64_t Dv,
                                         const double* q, const double* k_cache,
                                         const double* v_cache, double scale);
