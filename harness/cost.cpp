#include "harness/cost.h"

CaseCost case_cost(Family family, double (*min_bytes)(const Problem&), const Problem& p) {
  const bool is_gdn = family == Family::gdn;
  CaseCost c;
  c.flops = is_gdn ? gdn_flops(p) : attention_flops(p);
  c.bytes = min_bytes ? min_bytes(p) : is_gdn ? gdn_min_bytes(p) : attention_min_bytes(p);
  return c;
}

// Chunked GDN per (token, value head) at C = 64 for every variant, so rates compare:
// 6CK + 4CV + 6KV (docs/DESIGN.md section 4).
double gdn_flops(const Problem& p) {
  const GdnShape& s = p.shape;
  const double C = 64, K = double(s.K), V = double(s.V);
  return double(s.B) * double(s.T) * double(s.HV) * (6 * C * K + 4 * C * V + 6 * K * V);
}

double gdn_min_bytes(const Problem& p) {
  const GdnShape& s = p.shape;
  const double e = double(dtype_bytes(p.dtype));
  double bytes = e * (2.0 * s.qk_elems() + 2.0 * s.v_elems());  // q, k, v in; o out
  bytes += 4.0 * s.gate_elems() * ((p.use_gate ? 1 : 0) + (p.use_delta ? 1 : 0));
  bytes += 4.0 * s.state_elems() * (p.use_h0 ? 2 : 1);  // hT out, h0 in
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
