#include "harness/inputs.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "harness/rng.h"
#include "kernels/frontend/frontend.h"

namespace {

enum Stream : uint32_t { kQ = 1, kK, kV, kG, kGateMask, kBeta, kH0 };
// Streams of the KV cache, apart from the enum above so that new input tensors can extend it.
constexpr uint32_t kKCache = 64, kVCache = 65;
// Streams of a backward pass's upstream gradients: new streams, so the forward inputs stay as they were.
constexpr uint32_t kDout = 8, kDhT = 9;

void l2_normalise_rows(std::vector<float>& x, int64_t row) {
  for (size_t r = 0; r < x.size(); r += row) {
    double ss = 0.0;
    for (int64_t c = 0; c < row; ++c) ss += double(x[r + c]) * x[r + c];
    const double inv = 1.0 / std::sqrt(ss + 1e-12);
    for (int64_t c = 0; c < row; ++c) x[r + c] = float(x[r + c] * inv);
  }
}

std::vector<float> draw_h0(const Problem& p) {
  std::vector<float> h0 = normal_tensor(p.seed, kH0, p.shape.state_elems());
  if (p.h0_scale != 1.0)
    for (float& x : h0) x = float(p.h0_scale * x);
  return h0;
}

}  // namespace

HostInputs make_inputs(const Problem& p) {
  const GdnShape& s = p.shape;
  HostInputs in;
  in.cu_seqlens = p.cu_seqlens;
  if (p.frontend) {  // raw projections and front-end parameters instead of q, k, v, g, beta
    in.fe = make_frontend_inputs(p);
    if (p.use_h0) in.h0 = draw_h0(p);
    return in;
  }
  in.q = normal_tensor(p.seed, kQ, s.qk_elems());
  in.k = normal_tensor(p.seed, kK, s.qk_elems());
  in.v = normal_tensor(p.seed, kV, s.v_elems());
  l2_normalise_rows(in.q, s.K);
  l2_normalise_rows(in.k, s.K);
  if (p.k_norm != 1.0)
    for (float& x : in.k) x = float(p.k_norm * x);
  for (auto* t : {&in.q, &in.k, &in.v})
    for (float& x : *t) x = round_to(p.dtype, x);

  const int64_t ng = s.gate_elems();
  if (p.use_gate) {
    in.g.resize(ng);
    for (int64_t i = 0; i < ng; ++i) {
      switch (p.gate_dist) {
        case GateDist::logsigmoid: {
          const double x = counter_normal(p.seed, kG, i);
          const double logsig = -std::log1p(std::exp(-x));
          const bool masked = counter_uniform(p.seed, kGateMask, i) <= 0.1;
          in.g[i] = masked ? 0.0f : float(logsig / 16.0);
          break;
        }
        case GateDist::zero: in.g[i] = 0.0f; break;
        case GateDist::strong: in.g[i] = float(-30.0 + 20.0 * counter_uniform(p.seed, kG, i)); break;
      }
    }
  }
  in.beta.resize(ng);
  for (int64_t i = 0; i < ng; ++i) {
    switch (p.beta_dist) {
      case BetaDist::sigmoid:
        in.beta[i] = float(1.0 / (1.0 + std::exp(-counter_normal(p.seed, kBeta, i))));
        break;
      case BetaDist::zero: in.beta[i] = 0.0f; break;
      case BetaDist::one: in.beta[i] = 1.0f; break;
    }
  }
  if (p.use_h0) in.h0 = draw_h0(p);
  if (pass_has_backward(p.pass)) {
    in.dout = normal_tensor(p.seed, kDout, s.v_elems());
    for (float& x : in.dout) x = round_to(p.dtype, x);
    if (p.use_dht) in.dhT = normal_tensor(p.seed, kDhT, s.state_elems());
  }
  return in;
}

void add_kv_cache(const Problem& p, HostInputs& in) {
  const GdnShape& s = p.shape;
  const int64_t nk = s.B * p.context * s.H * s.K, nv = s.B * p.context * s.HV * s.V;
  if (int64_t(in.k_cache.size()) == nk && int64_t(in.v_cache.size()) == nv) return;
  in.k_cache = normal_tensor(p.seed, kKCache, nk);
  in.v_cache = normal_tensor(p.seed, kVCache, nv);
  // The same steps as q and k in make_inputs, over row ranges in threads (a cache can hold
  // billions of elements); every row is finished by one thread, so values do not depend on them.
  const int64_t rows = p.context > 0 ? nk / s.K : 0;
  const int64_t workers = std::clamp<int64_t>(nk / (1 << 16), 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int64_t r = rows * w / workers; r < rows * (w + 1) / workers; ++r) {
        float* x = in.k_cache.data() + r * s.K;
        double ss = 0.0;
        for (int64_t c = 0; c < s.K; ++c) ss += double(x[c]) * x[c];
        const double inv = 1.0 / std::sqrt(ss + 1e-12);
        for (int64_t c = 0; c < s.K; ++c) {
          x[c] = float(x[c] * inv);
          if (p.k_norm != 1.0) x[c] = float(p.k_norm * x[c]);
          x[c] = round_to(p.dtype, x[c]);
        }
      }
      for (int64_t i = nv * w / workers; i < nv * (w + 1) / workers; ++i)
        in.v_cache[i] = round_to(p.dtype, in.v_cache[i]);
    });
  for (auto& t : pool) t.join();
}

GdnRefInputs RefInputsF64::view() const {
  GdnRefInputs r;
  r.q = q.data();
  r.k = k.data();
  r.v = v.data();
  r.g = g.empty() ? nullptr : g.data();
  r.beta = beta.data();
  r.h0 = h0.empty() ? nullptr : h0.data();
  r.cu_seqlens = cu_seqlens.empty() ? nullptr : cu_seqlens.data();
  return r;
}

GdnRefGradInputs RefInputsF64::grad_view() const {
  GdnRefGradInputs r;
  r.dout = dout.data();
  r.dhT = dhT.empty() ? nullptr : dhT.data();
  return r;
}

RefInputsF64 to_f64(const HostInputs& in) {
  auto up = [](const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); };
  RefInputsF64 r;
  r.q = up(in.q);
  r.k = up(in.k);
  r.v = up(in.v);
  r.g = up(in.g);
  r.beta = up(in.beta);
  r.h0 = up(in.h0);
  r.cu_seqlens = in.cu_seqlens;
  r.dout = up(in.dout);
  r.dhT = up(in.dhT);
  r.k_cache = &in.k_cache;
  r.v_cache = &in.v_cache;
  r.fe = frontend_to_f64(in.fe);
  return r;
}

double input_bytes(const Problem& p) {
  const GdnShape& s = p.shape;
  const double B = double(s.B), T = double(s.T), HV = double(s.HV);
  const double cqk = double(s.H) * double(s.K), cv = HV * double(s.V);
  double elems = p.use_h0 ? double(s.state_elems()) : 0.0;
  if (p.frontend)
    elems += B * T * (2 * cqk + cv) + 2 * B * T * HV + 2 * HV + (2 * cqk + cv) * (kConvWidth + 1) +
             (p.use_h0 ? B * (2 * cqk + cv) * kConvCache : 0.0);
  else
    elems += B * T * (2 * cqk + cv) + (p.use_gate ? 2 : 1) * B * T * HV;
  return 4.0 * elems;
}

std::string inputs_out_of_memory(const Problem& p, bool with_f64) {
  const GdnShape& s = p.shape;
  const double bytes = input_bytes(p);
  return fmt::format("out of host memory for the inputs of the problem {} B={} T={} H={} HV={} K={} V={}{}{}: "
                     "they take {:.4g} bytes as float32{}; use smaller B, T, H, HV, K or V",
                     dtype_name(p.dtype), s.B, s.T, s.H, s.HV, s.K, s.V, p.use_h0 ? " h0=on" : "",
                     p.frontend ? " frontend=on" : "", bytes,
                     with_f64 ? fmt::format(" and {:.4g} more as the float64 copies of the reference", 2 * bytes) : "");
}
