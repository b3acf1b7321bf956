#include "reference/layer_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "reference/frontend_reference.h"

namespace {

double silu(double x) { return x / (1.0 + std::exp(-x)); }

const double* data_or_null(const std::vector<double>& x) { return x.empty() ? nullptr : x.data(); }

void add_into(std::vector<double>& acc, const std::vector<double>& x) {
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += x[i];
}

// out = h + MLP(rmsnorm(h)), the tail both blocks share.
std::vector<double> mlp_block(int64_t rows, int64_t d, const MlpWeights& m, std::vector<double> h) {
  const std::vector<double> n = rmsnorm_ref(h, d, m.w_post_norm, kLayerRmsEps);
  const std::vector<double> gate = matmul_ref(rows, d, m.d_ff, n.data(), m.w_gate);
  std::vector<double> up = matmul_ref(rows, d, m.d_ff, n.data(), m.w_up);
  for (size_t i = 0; i < up.size(); ++i) up[i] *= silu(gate[i]);
  add_into(h, matmul_ref(rows, m.d_ff, d, up.data(), m.w_down));
  return h;
}

}  // namespace

std::vector<double> matmul_ref(int64_t rows, int64_t in, int64_t out, const double* x, const double* w) {
  std::vector<double> y(size_t(rows * out), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < in; ++i) {
      const double xi = x[r * in + i];
      const double* wi = w + i * out;
      double* yr = y.data() + r * out;
      for (int64_t j = 0; j < out; ++j) yr[j] += xi * wi[j];
    }
  return y;
}

std::vector<double> rmsnorm_ref(const std::vector<double>& x, int64_t width, const double* weight, double eps) {
  if (width <= 0 || x.size() % size_t(width) != 0) throw std::invalid_argument("rmsnorm_ref: width divides no row");
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(width); ++r) {
    const double* xr = x.data() + r * width;
    double ss = 0.0;
    for (int64_t i = 0; i < width; ++i) ss += xr[i] * xr[i];
    const double inv = 1.0 / std::sqrt(ss / double(width) + eps);
    for (int64_t i = 0; i < width; ++i) y[r * width + i] = xr[i] * inv * (weight ? weight[i] : 1.0);
  }
  return y;
}

std::vector<double> gdn_layer_ref(int64_t B, int64_t T, const GdnLayerWeights& w, const std::vector<double>& x,
                                  GdnLayerState& state, int threads) {
  const int64_t d = w.d_model, rows = B * T;
  if (int64_t(x.size()) != rows * d) throw std::invalid_argument("gdn_layer_ref: x is not [B, T, d_model]");
  auto sized = [](const std::vector<double>& v, int64_t n) { return v.empty() || int64_t(v.size()) == n; };
  if (!sized(state.S, B * w.HV * w.K * w.V) || !sized(state.cache_q, B * w.H * w.K * 3) ||
      !sized(state.cache_k, B * w.H * w.K * 3) || !sized(state.cache_v, B * w.HV * w.V * 3))
    throw std::invalid_argument("gdn_layer_ref: the state is not [B, HV, K, V] or a conv cache not [B, channels, 3]");
  const std::vector<double> u = rmsnorm_ref(x, d, w.w_in_norm, kLayerRmsEps);
  const std::vector<double> xq = matmul_ref(rows, d, w.H * w.K, u.data(), w.w_q);
  const std::vector<double> xk = matmul_ref(rows, d, w.H * w.K, u.data(), w.w_k);
  const std::vector<double> xv = matmul_ref(rows, d, w.HV * w.V, u.data(), w.w_v);
  const std::vector<double> a = matmul_ref(rows, d, w.HV, u.data(), w.w_a);
  const std::vector<double> b = matmul_ref(rows, d, w.HV, u.data(), w.w_b);
  const std::vector<double> z = matmul_ref(rows, d, w.HV * w.V, u.data(), w.w_z);

  GdnShape s;
  s.B = B, s.T = T, s.H = w.H, s.HV = w.HV, s.K = w.K, s.V = w.V;
  FrontEndInputs fi;
  fi.q_proj = xq.data(), fi.k_proj = xk.data(), fi.v_proj = xv.data();
  fi.q_conv_w = w.conv_q, fi.k_conv_w = w.conv_k, fi.v_conv_w = w.conv_v;
  fi.q_conv_cache = data_or_null(state.cache_q), fi.k_conv_cache = data_or_null(state.cache_k);
  fi.v_conv_cache = data_or_null(state.cache_v);
  fi.a = a.data(), fi.b = b.data(), fi.A_log = w.A_log, fi.dt_bias = w.dt_bias;
  fi.h0 = data_or_null(state.S);
  FrontEndOptions fo;
  fo.gdn.threads = threads;
  FrontEndOutputs fe = gdn_frontend_ref(s, fi, fo);
  state.S = std::move(fe.gdn.hT);
  state.cache_q = std::move(fe.q_conv_cache), state.cache_k = std::move(fe.k_conv_cache);
  state.cache_v = std::move(fe.v_conv_cache);

  // The output gate: each value head's o normalised over V, scaled, times silu(z).
  std::vector<double> y = rmsnorm_ref(fe.gdn.o, w.V, w.w_o_norm, kLayerRmsEps);
  for (size_t i = 0; i < y.size(); ++i) y[i] *= silu(z[i]);
  std::vector<double> h = x;
  add_into(h, matmul_ref(rows, w.HV * w.V, d, y.data(), w.w_o));
  return mlp_block(rows, d, w.mlp, std::move(h));
}

std::vector<double> attention_layer_ref(int64_t B, int64_t T, const AttentionLayerWeights& w,
                                        const std::vector<double>& x, AttentionLayerCache& cache) {
  const int64_t d = w.d_model, rows = B * T, HD = w.H * w.D, L = cache.L;
  if (int64_t(x.size()) != rows * d) throw std::invalid_argument("attention_layer_ref: x is not [B, T, d_model]");
  if (int64_t(cache.k.size()) != B * L * HD || int64_t(cache.v.size()) != B * L * HD)
    throw std::invalid_argument("attention_layer_ref: the cache is not [B, L, H, D]");
  const std::vector<double> u = rmsnorm_ref(x, d, w.w_in_norm, kLayerRmsEps);
  const std::vector<double> q = matmul_ref(rows, d, HD, u.data(), w.w_q);
  const std::vector<double> k = matmul_ref(rows, d, HD, u.data(), w.w_k);
  const std::vector<double> v = matmul_ref(rows, d, HD, u.data(), w.w_v);

  // The cache grows by the new tokens; position p < L is the cache's, p >= L the new token p - L.
  AttentionLayerCache grown{L + T, std::vector<double>(size_t(B * (L + T) * HD)),
                            std::vector<double>(size_t(B * (L + T) * HD))};
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t p = 0; p < L + T; ++p)
      for (int64_t e = 0; e < HD; ++e) {
        const size_t to = size_t((bb * (L + T) + p) * HD + e);
        const size_t from = size_t(p < L ? (bb * L + p) * HD + e : (bb * T + p - L) * HD + e);
        grown.k[to] = p < L ? cache.k[from] : k[from];
        grown.v[to] = p < L ? cache.v[from] : v[from];
      }
  const double scale = 1.0 / std::sqrt(double(w.D));
  std::vector<double> o(size_t(rows * HD), 0.0), p(size_t(L + T));
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hh = 0; hh < w.H; ++hh) {
        const double* qi = q.data() + (bb * T + t) * HD + hh * w.D;
        const int64_t last = L + t;  // causal: the cache and the new tokens up to this one
        double m = -INFINITY;
        for (int64_t j = 0; j <= last; ++j) {
          const double* kj = grown.k.data() + (bb * (L + T) + j) * HD + hh * w.D;
          double dot = 0.0;
          for (int64_t e = 0; e < w.D; ++e) dot += qi[e] * kj[e];
          p[j] = dot * scale;
          m = std::max(m, p[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j <= last; ++j) sum += (p[j] = std::exp(p[j] - m));
        double* oi = o.data() + (bb * T + t) * HD + hh * w.D;
        for (int64_t j = 0; j <= last; ++j) {
          const double* vj = grown.v.data() + (bb * (L + T) + j) * HD + hh * w.D;
          for (int64_t e = 0; e < w.D; ++e) oi[e] += p[j] / sum * vj[e];
        }
      }
  cache = std::move(grown);
  std::vector<double> h = x;
  add_into(h, matmul_ref(rows, HD, d, o.data(), w.w_o));
  return mlp_block(rows, d, w.mlp, std::move(h));
}
