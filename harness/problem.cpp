#include "harness/problem.h"

#include <cmath>

#include <fmt/format.h>

#include "harness/frontend_inputs.h"

const char* gate_dist_name(GateDist d) {
  switch (d) {
    case GateDist::logsigmoid: return "logsigmoid";
    case GateDist::zero: return "zero";
    case GateDist::strong: return "strong";
  }
  return "?";
}

const char* beta_dist_name(BetaDist d) {
  switch (d) {
    case BetaDist::sigmoid: return "sigmoid";
    case BetaDist::zero: return "zero";
    case BetaDist::one: return "one";
  }
  return "?";
}

const char* pass_name(Pass p) {
  switch (p) {
    case Pass::fwd: return "fwd";
    case Pass::bwd: return "bwd";
    case Pass::fwdbwd: return "fwdbwd";
  }
  return "?";
}

std::optional<Pass> parse_pass(const std::string& s) {
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwdbwd})
    if (s == pass_name(p)) return p;
  return std::nullopt;
}

std::optional<GateDist> parse_gate_dist(const std::string& s) {
  for (GateDist d : {GateDist::logsigmoid, GateDist::zero, GateDist::strong})
    if (s == gate_dist_name(d)) return d;
  return std::nullopt;
}

std::optional<BetaDist> parse_beta_dist(const std::string& s) {
  for (BetaDist d : {BetaDist::sigmoid, BetaDist::zero, BetaDist::one})
    if (s == beta_dist_name(d)) return d;
  return std::nullopt;
}

double Problem::resolved_scale() const {
  return scale != 0.0 ? scale : 1.0 / std::sqrt(double(shape.K));
}

std::string Problem::input_key() const {
  return fmt::format("{}/{}/{}/{}/{}/{}/{}/g{}/d{}/h{}/{}/{}/{}/{}", shape.B, shape.T, shape.H,
                     shape.HV, shape.K, shape.V, dtype_name(dtype), use_gate, use_delta, use_h0,
                     gate_dist_name(gate_dist), beta_dist_name(beta_dist), scale, seed) +
         fmt::format("/kn{}/h0s{}/ctx{}", k_norm, h0_scale, context) + (frontend ? "/fe" : "") +
         (pass_has_backward(pass) ? fmt::format("/grad/dht{}", use_dht) : "");
}

std::string Problem::distributions() const {
  if (frontend)
    return fmt::format("{} cache={} h0={}", frontend_distributions(), use_h0 ? "N" : "none",
                       !use_h0 ? "none" : h0_scale == 1.0 ? "N" : fmt::format("{}*N", h0_scale));
  std::string g = !use_gate ? "g=none"
                  : gate_dist == GateDist::logsigmoid ? "g=logsigmoid(N)/16 mask0.1"
                  : gate_dist == GateDist::zero       ? "g=0"
                                                      : "g=U[-30,-10]";
  std::string b = beta_dist == BetaDist::sigmoid ? "beta=sigmoid(N)"
                  : beta_dist == BetaDist::zero  ? "beta=0"
                                                 : "beta=1";
  const std::string k = k_norm == 1.0 ? "qk=l2norm(N)" : fmt::format("q=l2norm(N) k={}*l2norm(N)", k_norm);
  const std::string h0 = !use_h0 ? "none" : h0_scale == 1.0 ? "N" : fmt::format("{}*N", h0_scale);
  return fmt::format("{} v=N {} {} h0={}", k, g, b, h0);
}

std::string problem_option_error(double scale, double k_norm, double h0_scale) {
  if (!std::isfinite(scale) || scale < 0.0 || scale > kMaxScale)
    return fmt::format("--scale: {} is not 0 (K^-1/2) or a positive number up to {:g}", scale, kMaxScale);
  if (!std::isfinite(k_norm) || !(k_norm > 0.0) || k_norm > kMaxKNorm)
    return fmt::format("--k-norm: {} is not a positive number up to {:g}", k_norm, kMaxKNorm);
  if (!std::isfinite(h0_scale) || !(h0_scale > 0.0) || h0_scale > kMaxH0Scale)
    return fmt::format("--h0-scale: {} is not a positive number up to {:g}", h0_scale, kMaxH0Scale);
  return "";
}
