#include "harness/skip.h"

#include <fmt/format.h>

#include "harness/frontend_inputs.h"
#include "harness/segments.h"

std::optional<std::string> skip_reason(const VariantInfo& v, const Problem& p, const GpuInfo& gpu) {
  // First: on any machine, a variant without a backward cannot run one.
  if (pass_has_backward(p.pass) && !v.has_backward)
    return fmt::format("no backward pass (--pass {}: {} runs the forward only)", pass_name(p.pass), v.name);
  if (v.backend == Backend::cuda && !gpu.available) return fmt::format("no CUDA device: {}", gpu.why_not);
  // A front-end problem (raw projections) suits only the variants that take them, and the other
  // way round.
  if (v.frontend != p.frontend) return frontend_mismatch_reason(v.frontend);
  if (p.packed()) {
    if (p.frontend)
      return std::string("a packed batch (--seqlens) takes q, k, v, g, beta: the front end's conv caches are per batch row, not per sequence");
    if (v.family == Family::attention)
      return std::string("attention baselines take no packed batch (--seqlens): no causal mask per sequence");
  }
  // Attention baselines read q, k, v of the GDN problem as HV heads of dim K and V.
  if (v.family == Family::attention) {
    if (p.shape.H != p.shape.HV) return std::string("attention baselines need H == HV");
    if (!p.use_gate || !p.use_delta || p.use_h0)
      return std::string("attention baselines run only on the plain GDN configuration (gate on, delta on, h0 off)");
  }
  if (p.segments > 1) return segments_unsupported(v, p);
  return v.unsupported(p);
}
