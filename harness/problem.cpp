#include "harness/problem.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/frontend_inputs.h"
#include "harness/rng.h"

namespace {
// The stream of a drawn batch's lengths (harness/rng.h).
constexpr uint32_t kSeqlensStream = 10;

// A positive integer of at most kMaxPackedTokens, digits only.
bool parse_length(const std::string& text, int64_t& out) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(text);
  return out >= 1 && out <= kMaxPackedTokens;
}

std::vector<std::string> split_on(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + 1) parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  return parts;
}
}  // namespace

SeqlensSpec parse_seqlens(const std::string& text, std::string* error) {
  SeqlensSpec spec;
  const auto fail = [&](const std::string& why) {
    *error = fmt::format("--seqlens: '{}' {}", text, why);
    return SeqlensSpec{};
  };
  error->clear();
  if (text.rfind("random:", 0) == 0) {
    const std::vector<std::string> parts = split_on(text.substr(7), ':');
    const std::vector<std::string> range = parts.size() == 2 ? split_on(parts[1], '-') : std::vector<std::string>{};
    if (range.size() != 2 || !parse_length(parts[0], spec.count) || !parse_length(range[0], spec.lo) ||
        !parse_length(range[1], spec.hi) || spec.lo > spec.hi)
      return fail("is not random:N:LO-HI (N lengths drawn uniformly in [LO, HI], 1 <= LO <= HI)");
    if (spec.count * spec.hi > kMaxPackedTokens)
      return fail(fmt::format("may total more than {} tokens", kMaxPackedTokens));
    return spec;
  }
  int64_t total = 0;
  for (const std::string& item : split_on(text, ',')) {
    // LEN or LEN*COUNT (COUNT sequences of LEN, as the CSV's seqlens column writes a run).
    const std::vector<std::string> run = split_on(item, '*');
    int64_t n = 0, count = 1;
    if (run.size() > 2 || !parse_length(run[0], n) || (run.size() == 2 && !parse_length(run[1], count)))
      return fail(fmt::format("has '{}', not a length of at least 1 (give lengths as 1,63,64 or 1024*16, or "
                              "random:N:LO-HI)", item));
    total += n * count;
    if (total > kMaxPackedTokens) return fail(fmt::format("totals more than {} tokens", kMaxPackedTokens));
    spec.lengths.insert(spec.lengths.end(), size_t(count), n);
  }
  return spec;
}

std::vector<int64_t> seqlens_lengths(const SeqlensSpec& spec, uint64_t seed) {
  if (!spec.lengths.empty()) return spec.lengths;
  std::vector<int64_t> lengths;
  const int64_t span = spec.hi - spec.lo + 1;
  for (int64_t n = 0; n < spec.count; ++n)  // uniform (0, 1] to [lo, hi]
    lengths.push_back(spec.hi - std::min(span - 1, int64_t((1.0 - counter_uniform(seed, kSeqlensStream, uint64_t(n))) * double(span))));
  return lengths;
}

std::string seqlens_text(const std::vector<int32_t>& cu_seqlens) {
  std::string text;
  for (size_t n = 0; n + 1 < cu_seqlens.size();) {
    const int32_t len = cu_seqlens[n + 1] - cu_seqlens[n];
    size_t run = 1;
    while (n + run + 1 < cu_seqlens.size() && cu_seqlens[n + run + 1] - cu_seqlens[n + run] == len) ++run;
    text += (text.empty() ? "" : "+") + (run > 1 ? fmt::format("{}*{}", len, run) : std::to_string(len));
    n += run;
  }
  return text;
}

void resolve_packed(Problem& p) {
  if (p.seqlens.empty()) return;
  std::string error;
  const SeqlensSpec spec = parse_seqlens(p.seqlens, &error);
  if (!error.empty()) throw std::invalid_argument(error);
  p.cu_seqlens.assign(1, 0);
  for (int64_t len : seqlens_lengths(spec, p.seed)) p.cu_seqlens.push_back(int32_t(p.cu_seqlens.back() + len));
  p.shape.B = 1;
  p.shape.T = p.cu_seqlens.back();
  p.shape.num_seqs = int64_t(p.cu_seqlens.size()) - 1;
}

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
         (pass_has_backward(pass) ? fmt::format("/grad/dht{}", use_dht) : "") +
         (packed() ? "/packed" + seqlens_text(cu_seqlens) : "");
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
