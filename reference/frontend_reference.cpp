#include "reference/frontend_reference.h"

#include <cmath>
#include <stdexcept>

namespace {

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// SiLU in place; then, when dim > 0, L2 normalisation of every run of `dim` values.
void silu_then_normalise(std::vector<double>& x, int64_t dim, double eps) {
  for (double& e : x) e = silu(e);
  if (dim <= 0) return;
  for (size_t r = 0; r < x.size(); r += size_t(dim)) {
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += x[r + i] * x[r + i];
    const double inv = 1.0 / std::sqrt(ss + eps);
    for (int64_t i = 0; i < dim; ++i) x[r + i] *= inv;
  }
}

}  // namespace

std::vector<double> causal_conv_ref(int64_t B, int64_t T, int64_t C, int64_t W, const double* x,
                                    const double* w, const double* bias, const double* cache,
                                    std::vector<double>* final_cache) {
  if (W < 1) throw std::invalid_argument("causal_conv_ref: width must be positive");
  std::vector<double> y(size_t(B * T * C));
  // Input at time t (t may be negative down to -(W-1): the cache) of channel c of batch b.
  auto input = [&](int64_t b, int64_t t, int64_t c) -> double {
    if (t >= 0) return x[(b * T + t) * C + c];
    return cache ? cache[(b * C + c) * (W - 1) + (W - 1 + t)] : 0.0;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        double acc = bias ? bias[c] : 0.0;
        for (int64_t i = 0; i < W; ++i) acc += w[c * W + i] * input(b, t - (W - 1) + i, c);
        y[(b * T + t) * C + c] = acc;
      }
  if (final_cache) {
    final_cache->assign(size_t(B * C * (W - 1)), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < W - 1; ++j)
          (*final_cache)[(b * C + c) * (W - 1) + j] = input(b, T - (W - 1) + j, c);
  }
  return y;
}

FrontEndOutputs gdn_frontend_ref(const GdnShape& s, const FrontEndInputs& in, const FrontEndOptions& opt) {
  const int64_t W = opt.conv_width;
  FrontEndOutputs out;
  out.q = causal_conv_ref(s.B, s.T, s.H * s.K, W, in.q_proj, in.q_conv_w, in.q_conv_bias,
                          in.q_conv_cache, &out.q_conv_cache);
  out.k = causal_conv_ref(s.B, s.T, s.H * s.K, W, in.k_proj, in.k_conv_w, in.k_conv_bias,
                          in.k_conv_cache, &out.k_conv_cache);
  out.v = causal_conv_ref(s.B, s.T, s.HV * s.V, W, in.v_proj, in.v_conv_w, in.v_conv_bias,
                          in.v_conv_cache, &out.v_conv_cache);
  silu_then_normalise(out.q, s.K, opt.l2_eps);
  silu_then_normalise(out.k, s.K, opt.l2_eps);
  silu_then_normalise(out.v, 0, opt.l2_eps);
  out.g.resize(size_t(s.gate_elems()));
  out.beta.resize(size_t(s.gate_elems()));
  for (int64_t i = 0; i < s.gate_elems(); ++i) {
    const int64_t hv = i % s.HV;
    out.g[i] = -std::exp(in.A_log[hv]) * softplus(in.a[i] + in.dt_bias[hv]);
    out.beta[i] = sigmoid(in.b[i]);
  }
  GdnRefInputs gi;
  gi.q = out.q.data();
  gi.k = out.k.data();
  gi.v = out.v.data();
  gi.g = out.g.data();
  gi.beta = out.beta.data();
  gi.h0 = in.h0;
  out.gdn = gdn_recurrent_ref(s, gi, opt.gdn);
  return out;
}
