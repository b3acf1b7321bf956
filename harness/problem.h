// One GDN problem: shapes, dtype, which terms of the recurrence are on, and how inputs are drawn.
// A problem fixes the inputs (with the seed) and so the float64 reference; variants run on it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"
#include "reference/gdn_shape.h"

// How the log decay g is drawn (docs/DESIGN.md section 3).
enum class GateDist {
  logsigmoid,  // g = logsigmoid(x) / 16, x ~ N(0, 1), 10% of entries masked to exactly 0
  zero,        // g = 0 everywhere: DeltaNet's transition inside a gated kernel
  strong,      // g in [-30, -10]: the state is wiped each step; exp must underflow to 0 cleanly
};
// How beta is drawn.
enum class BetaDist {
  sigmoid,  // beta = sigmoid(x), x ~ N(0, 1)
  zero,     // beta = 0: the delta update is a no-op
  one,      // beta = 1: full replacement of the recalled value
};

// Which pass of the layer a case runs: the forward (o, hT from the inputs), the backward (every
// input's gradient from the inputs and a seeded upstream gradient dO, and dhT unless --dht off;
// docs/BACKWARD.md), or the forward then the backward, timed as one region.
enum class Pass { fwd, bwd, fwdbwd };
const char* pass_name(Pass p);
std::optional<Pass> parse_pass(const std::string& s);
inline bool pass_has_forward(Pass p) { return p != Pass::bwd; }
inline bool pass_has_backward(Pass p) { return p != Pass::fwd; }

const char* gate_dist_name(GateDist d);
const char* beta_dist_name(BetaDist d);
std::optional<GateDist> parse_gate_dist(const std::string& s);
std::optional<BetaDist> parse_beta_dist(const std::string& s);

// The ranges of the real-valued problem options, for the command line and dump manifests alike:
// past them a problem's reference overflows or says nothing (a usage error, never a PASS).
// scale: 0 (K^-1/2) or in (0, kMaxScale]; k_norm in (0, kMaxKNorm]; h0_scale in (0, kMaxH0Scale].
constexpr double kMaxScale = 1e3, kMaxKNorm = 100.0, kMaxH0Scale = 1e6;
// The first of scale, k_norm, h0_scale out of its range, as "--scale: ..." (the flag's name), or "".
std::string problem_option_error(double scale, double k_norm, double h0_scale);

// --seqlens: the lengths of a packed batch's sequences, given ("1,63,64,65,1000"; "1024*16" for 16
// of 1024) or drawn from the problem's seed ("random:N:LO-HI": N lengths uniform in [LO, HI]). Every length is at least 1 and
// the total at most kMaxPackedTokens (cu_seqlens are int32, as FLA's and FlashInfer's).
struct SeqlensSpec {
  std::vector<int64_t> lengths;  // given lengths; empty for a drawn batch
  int64_t count = 0, lo = 0, hi = 0;  // a drawn batch
};
constexpr int64_t kMaxPackedTokens = 2147483647;
// The spec of `text`, or a one-line reason why not (as "--seqlens: ...").
SeqlensSpec parse_seqlens(const std::string& text, std::string* error);
// The lengths of `spec` under `seed` (a drawn batch is a pure function of the two).
std::vector<int64_t> seqlens_lengths(const SeqlensSpec& spec, uint64_t seed);
// "1+63+64*3": a packed batch's lengths in the order of the batch, a run of equal ones as LEN*COUNT;
// "" when not packed. The CSV's seqlens column.
std::string seqlens_text(const std::vector<int32_t>& cu_seqlens);

struct Problem {
  GdnShape shape;
  DType dtype = DType::f32;
  bool use_gate = true;   // false: no g tensor at all (DeltaNet)
  bool use_delta = true;  // false: gated linear attention
  bool use_h0 = false;
  GateDist gate_dist = GateDist::logsigmoid;
  BetaDist beta_dist = BetaDist::sigmoid;
  int chunk = 64;
  double scale = 0.0;  // 0: K^-1/2
  // Adversarial inputs: |k| = k_norm (with beta = 1 and k_norm > sqrt(2) the transition has an
  // eigenvalue 1 - k_norm^2 < -1 and the state grows), h0 drawn as h0_scale * N(0, 1).
  double k_norm = 1.0;
  double h0_scale = 1.0;
  // Tokens already in the KV cache before the T new ones (attention decode): keys and values
  // cover context + T positions and the T queries are the last T. GDN variants ignore it (their
  // state, h0, stands for the past).
  int64_t context = 0;
  uint64_t seed = 0;
  // The inputs are raw projections and front-end parameters (harness/frontend_inputs.h): the
  // kernel runs the short conv, SiLU, L2 norm and gates itself (docs/DESIGN.md section 1, "Fused front
  // end"), and returns the final conv caches too. gate_dist, beta_dist and k_norm do not apply.
  bool frontend = false;
  // --plan: the plan to force (harness/plans.h, kernels/plans/launch_plans.h); "auto": the variant's
  // own choice. Not part of the inputs: the same inputs and reference serve every plan.
  std::string plan = "auto";
  // --segments R: run the forward as R segments of each row with the exchange between them
  // (harness/segments.h); 1: whole. Not part of the inputs.
  int64_t segments = 1;
  Pass pass = Pass::fwd;
  // Backward passes: the loss reads hT too (L = sum(dO .* o) + sum(dhT .* hT), dhT drawn from the
  // seed); false: L = sum(dO .* o), dhT = 0. Moot for the forward.
  bool use_dht = true;
  // A packed batch (--seqlens; shape.num_seqs > 0, B = 1, T the total): the spec as given ("" not
  // packed) and, once resolved for the seed (resolve_packed), the num_seqs + 1 offsets of its
  // sequences. h0 and hT hold one state per sequence.
  std::string seqlens;
  std::vector<int32_t> cu_seqlens;

  double resolved_scale() const;
  // Inputs and reference depend on these fields only (not on chunk or plan): problems with equal
  // keys share one input set and one float64 reference. A backward pass adds its upstream
  // gradients (dO, dhT), drawn from streams of their own: its forward inputs are the forward's.
  std::string input_key() const;
  // One-line description of the input distributions, recorded in the CSV.
  std::string distributions() const;
  bool packed() const { return shape.num_seqs > 0; }
};

// Fills p.cu_seqlens, shape.num_seqs and shape.T from p.seqlens and p.seed, with B = 1 (a no-op when
// p.seqlens is empty); again after the seed changes (a drawn batch depends on it). Throws
// std::invalid_argument with parse_seqlens's reason for a bad spec.
void resolve_packed(Problem& p);
