// Seeded, counter-based input generation (harness/rng.h): element i of a tensor is a pure function of (seed,
// tensor, i), so values never depend on thread count or order. q, k, v are rounded to the problem
// dtype here, so the reference sees exactly what the kernels see.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/frontend_inputs.h"
#include "harness/problem.h"
#include "reference/gdn_backward_reference.h"
#include "reference/gdn_reference.h"

struct HostInputs {
  std::vector<float> q, k;  // [B, T, H, K], L2-normalised per row, dtype-rounded
  std::vector<float> v;     // [B, T, HV, V], dtype-rounded
  std::vector<float> g;     // [B, T, HV] (empty when the problem has no gate)
  std::vector<float> beta;  // [B, T, HV]
  std::vector<float> h0;    // [B or num_seqs, HV, K, V] (empty when the problem has no h0)
  std::vector<int32_t> cu_seqlens;  // a packed batch's offsets (Problem::cu_seqlens); empty otherwise
  // The KV cache of a problem with context > 0 (attention): k_cache [B, context, H, K] drawn and
  // normalised as k, v_cache [B, context, HV, V] as v, both dtype-rounded. Empty until
  // add_kv_cache fills them: only the attention variants read them, so the GDN rows of a
  // long-context problem do not pay for a cache of many GiB.
  std::vector<float> k_cache, v_cache;
  // A front-end problem (Problem::frontend): the raw projections and front-end parameters; then
  // q, k, v, g and beta are empty (the kernel derives them) and h0 is drawn as always.
  FrontEndHost fe;
  // A backward pass (Problem::pass): the upstream gradients of L = sum(dout .* o) + sum(dhT .* hT),
  // dout [B, T, HV, V] as N(0, 1) rounded to the dtype of o, dhT [B, HV, K, V] as N(0, 1) in
  // float32 (empty with use_dht off). Empty for the forward. Drawn from streams of their own, so a
  // problem's forward inputs do not depend on its pass.
  std::vector<float> dout, dhT;
};

HostInputs make_inputs(const Problem& p);
// Fills in.k_cache and in.v_cache for p.context (a no-op when they already hold them).
void add_kv_cache(const Problem& p, HostInputs& in);

// Float64 copies of the inputs and the view the reference takes.
struct RefInputsF64 {
  std::vector<double> q, k, v, g, beta, h0;
  std::vector<int32_t> cu_seqlens;  // a packed batch's offsets, as HostInputs
  std::vector<double> dout, dhT;  // the upstream gradients of a backward pass (empty otherwise)
  // The KV cache stays float (exactly the values the kernels see; a double copy of a long cache
  // would not fit in host memory): these point at the HostInputs to_f64 was given, which must
  // outlive this object. Filled later by add_kv_cache on that HostInputs is fine.
  const std::vector<float>* k_cache = nullptr;
  const std::vector<float>* v_cache = nullptr;
  FrontEndF64 fe;  // a front-end problem's inputs (empty otherwise)
  GdnRefInputs view() const;
  GdnRefGradInputs grad_view() const;  // dout, and dhT where drawn
};
RefInputsF64 to_f64(const HostInputs& in);

// Bytes of the float tensors make_inputs(p) allocates (the KV cache aside).
double input_bytes(const Problem& p);
// One line for host memory running out while making p's inputs: the problem's sizes and the bytes
// asked for (with_f64: and the float64 copies of to_f64, twice as many more).
std::string inputs_out_of_memory(const Problem& p, bool with_f64);
