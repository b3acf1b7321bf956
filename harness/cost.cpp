#include "harness/cost.h"

CaseCost case_cost(Family family, double (*min_bytes)(const Problem&), const Problem& p) {
  const bool is_gdn = family == Family::gdn;
  CaseCost c;
  c.flops = is_gdn ? gdn_flops(p) : attention_flops(p);
  c.bytes = min_bytes ? min_bytes(p) : is_gdn ? gdn_min_bytes(p) : attention_min_bytes(p);
  return c;
}

// Chunked GDN per (token, value head) at C = 64 for every variant, so rates compare:
// 6CK + 4CV + 6KV (docs/DESIGN.md section 4). The backward counts twice the forward, the usual
// convention for a layer's backward (two products for each of the forward's), so the fwdbwd
// pass counts three times.
double gdn_flops(const Problem& p) {
  const GdnShape& s = p.shape;
  const double C = 64, K = double(s.K), V = double(s.V);
  const double forward = double(s.B) * double(s.T) * double(s.HV) * (6 * C * K + 4 * C * V + 6 * K * V);
  return forward * (p.pass == Pass::fwd ? 1 : p.pass == Pass::bwd ? 2 : 3);
}

double gdn_min_bytes(const Problem& p) {
  const GdnShape& s = p.shape;
  const double e = double(dtype_bytes(p.dtype));
  const double gates = double(s.gate_elems()) * ((p.use_gate ? 1 : 0) + (p.use_delta ? 1 : 0));
  // The forward's inputs, read by every pass: q, k, v in the dtype, g, beta and h0 in float32.
  double bytes = e * (2.0 * s.qk_elems() + s.v_elems()) + 4.0 * gates + (p.use_h0 ? 4.0 * s.state_elems() : 0.0);
  if (pass_has_forward(p.pass)) bytes += e * s.v_elems() + 4.0 * s.state_elems();  // o, hT out
  // The backward reads dO (and dhT) and writes a gradient of every input, each in its input's type.
  if (pass_has_backward(p.pass))
    bytes += e * s.v_elems() + (p.use_dht ? 4.0 * s.state_elems() : 0.0) +
             e * (2.0 * s.qk_elems() + s.v_elems()) + 4.0 * gates + (p.use_h0 ? 4.0 * s.state_elems() : 0.0);
  return bytes;
}

// Causal softmax attention: 2 T^2 D per head (QK^T and PV, half the square each). With a KV
// cache each of the T queries also attends to the context cached positions: + 2 T context (K + V).
double attention_flops(const Problem& p) {
  const GdnShape& s = p.shape;
  const double pairs = double(s.T) * double(s.T) / 2.0 + double(s.T) * double(p.context);
  return 2.0 * pairs * double(s.K + s.V) * double(s.B * s.HV);
}

double attention_min_bytes(const Problem& p) {
  const GdnShape& s = p.shape;
  const double e = double(dtype_bytes(p.dtype));
  const double cache = double(p.context) * double(s.K + s.V);  // the cached keys and values, read once
  return e * double(s.B * s.HV) * (double(s.T) * double(2 * s.K + 2 * s.V) + cache);
}
