#include "harness/frontend_inputs.h"

#include <algorithm>
#include <cmath>

#include "harness/rng.h"
#include "kernels/frontend/frontend.h"
#include "reference/frontend_reference.h"

namespace {

// Streams of the front-end tensors, apart from make_inputs' so either list can grow.
enum FrontEndStream : uint32_t {
  kXq = 96, kXk, kXv, kA, kB, kALog, kDtBias, kWq, kWk, kWv, kBiasQ, kBiasK, kBiasV,
  kCacheQ, kCacheK, kCacheV
};

std::vector<float> normal(const Problem& p, uint32_t stream, int64_t n, double scale) {
  const uint64_t seed = p.seed;
  const DType dt = p.dtype;
  return counter_tensor(n, [=](int64_t i) { return round_to(dt, float(scale * counter_normal(seed, stream, uint64_t(i)))); });
}

std::vector<double> up(const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); }

const double* ptr(const std::vector<double>& x) { return x.empty() ? nullptr : x.data(); }

}  // namespace

FrontEndHost make_frontend_inputs(const Problem& p) {
  const GdnShape& s = p.shape;
  const int64_t cqk = s.H * s.K, cv = s.HV * s.V;
  FrontEndHost in;
  in.x_q = normal(p, kXq, s.B * s.T * cqk, 1.0);
  in.x_k = normal(p, kXk, s.B * s.T * cqk, 1.0);
  in.x_v = normal(p, kXv, s.B * s.T * cv, 1.0);
  in.a = normal(p, kA, s.gate_elems(), 1.0);
  in.b = normal(p, kB, s.gate_elems(), 1.0);
  in.w_q = normal(p, kWq, cqk * kConvWidth, 0.5);
  in.w_k = normal(p, kWk, cqk * kConvWidth, 0.5);
  in.w_v = normal(p, kWv, cv * kConvWidth, 0.5);
  in.bias_q = normal(p, kBiasQ, cqk, 0.1);
  in.bias_k = normal(p, kBiasK, cqk, 0.1);
  in.bias_v = normal(p, kBiasV, cv, 0.1);
  if (p.use_h0) {
    in.cache_q = normal(p, kCacheQ, s.B * cqk * kConvCache, 1.0);
    in.cache_k = normal(p, kCacheK, s.B * cqk * kConvCache, 1.0);
    in.cache_v = normal(p, kCacheV, s.B * cv * kConvCache, 1.0);
  }
  const uint64_t seed = p.seed;
  in.A_log = counter_tensor(s.HV, [=](int64_t i) {
    return float(std::log(1.0 + 15.0 * counter_uniform(seed, kALog, uint64_t(i))));
  });
  in.dt_bias = counter_tensor(s.HV, [=](int64_t i) {
    const double lo = std::log(1e-3), hi = std::log(0.1);
    const double dt = std::exp(lo + (hi - lo) * counter_uniform(seed, kDtBias, uint64_t(i)));
    return float(std::log(std::expm1(dt)));  // softplus(dt_bias) = dt
  });
  return in;
}

FrontEndF64 frontend_to_f64(const FrontEndHost& in) {
  FrontEndF64 r;
  r.x_q = up(in.x_q);
  r.x_k = up(in.x_k);
  r.x_v = up(in.x_v);
  r.a = up(in.a);
  r.b = up(in.b);
  r.A_log = up(in.A_log);
  r.dt_bias = up(in.dt_bias);
  r.w_q = up(in.w_q);
  r.w_k = up(in.w_k);
  r.w_v = up(in.w_v);
  r.bias_q = up(in.bias_q);
  r.bias_k = up(in.bias_k);
  r.bias_v = up(in.bias_v);
  r.cache_q = up(in.cache_q);
  r.cache_k = up(in.cache_k);
  r.cache_v = up(in.cache_v);
  return r;
}

const char* frontend_distributions() {
  return "frontend: x=N w=N/2 bias=N/10 a=N b=N A_log=log U[1,16] dt_bias=softplus^-1(logU[1e-3,0.1])";
}

GdnRefOutputs frontend_reference_for(const Problem& p, const FrontEndF64& in,
                                     const std::vector<double>& h0, int threads,
                                     const std::vector<int64_t>& heads) {
  FrontEndInputs fi;
  fi.q_proj = ptr(in.x_q);
  fi.k_proj = ptr(in.x_k);
  fi.v_proj = ptr(in.x_v);
  fi.q_conv_w = ptr(in.w_q);
  fi.k_conv_w = ptr(in.w_k);
  fi.v_conv_w = ptr(in.w_v);
  fi.q_conv_bias = ptr(in.bias_q);
  fi.k_conv_bias = ptr(in.bias_k);
  fi.v_conv_bias = ptr(in.bias_v);
  fi.q_conv_cache = ptr(in.cache_q);
  fi.k_conv_cache = ptr(in.cache_k);
  fi.v_conv_cache = ptr(in.cache_v);
  fi.a = ptr(in.a);
  fi.b = ptr(in.b);
  fi.A_log = ptr(in.A_log);
  fi.dt_bias = ptr(in.dt_bias);
  fi.h0 = ptr(h0);
  FrontEndOptions fo;
  fo.conv_width = kConvWidth;
  fo.gdn.scale = p.resolved_scale();
  fo.gdn.use_delta = p.use_delta;
  fo.gdn.threads = threads;
  fo.gdn.heads = heads;
  fo.gdn.o_magnitude = p.dtype == DType::f32;  // the float32 bound's cancellation term
  FrontEndOutputs fe = gdn_frontend_ref(p.shape, fi, fo);
  GdnRefOutputs out = std::move(fe.gdn);
  out.conv_cache = std::move(fe.q_conv_cache);
  out.conv_cache.insert(out.conv_cache.end(), fe.k_conv_cache.begin(), fe.k_conv_cache.end());
  out.conv_cache.insert(out.conv_cache.end(), fe.v_conv_cache.begin(), fe.v_conv_cache.end());
  return out;
}

int64_t frontend_conv_cache_elems(const GdnShape& s) {
  return s.B * (2 * s.H * s.K + s.HV * s.V) * kConvCache;
}

double frontend_min_bytes(const Problem& p, int state_bytes) {
  const GdnShape& s = p.shape;
  const double e = double(dtype_bytes(p.dtype));
  const double channels = double(2 * s.H * s.K + s.HV * s.V);
  double bytes = e * double(2 * s.qk_elems() + 2 * s.v_elems());  // projections in, o out
  bytes += e * 2.0 * double(s.gate_elems());                      // a, b
  bytes += 4.0 * 2.0 * double(s.HV);                              // A_log, dt_bias
  bytes += e * channels * (kConvWidth + 1);                       // conv weights and bias
  bytes += e * double(s.B) * channels * kConvCache * (p.use_h0 ? 2 : 1);  // caches out (and in)
  bytes += double(state_bytes) * double(s.state_elems()) * (p.use_h0 ? 2 : 1);
  return bytes;
}

double frontend_min_bytes_f32_state(const Problem& p) { return frontend_min_bytes(p, 4); }
double frontend_min_bytes_bf16_state(const Problem& p) { return frontend_min_bytes(p, 2); }

std::string frontend_mismatch_reason(bool variant_takes_frontend) {
  return variant_takes_frontend
             ? "takes raw projections and front-end parameters; this problem gives q, k, v, g, beta (--frontend off)"
             : "takes ready-made q, k, v, g, beta; this problem gives raw projections (--frontend on)";
}
