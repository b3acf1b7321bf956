// The sampled gradient reference: a backward pass past the work budget (or under --gdn-ref sampled)
// is judged on whole groups of heads, the subset's gradients equal the whole reference's on those
// heads bit for bit, and every element must still be written and finite.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "harness/reference_sample.h"
#include "harness/runner.h"
#include "reference/gdn_backward_reference.h"
#include "tests/common/test_util.h"

namespace {

Problem backward_problem(int64_t B, int64_t T, int64_t H, int64_t HV, int64_t K, int64_t V, uint64_t seed) {
  Problem p;
  p.shape = GdnShape{B, T, H, HV, K, V};
  p.dtype = DType::bf16;
  p.use_h0 = true;
  p.pass = Pass::bwd;
  p.seed = seed;
  return p;
}

// The entries of `full` ([B, T, heads_per_b, row] or [B, heads_per_b, row] when T = 1) of the
// flat heads `heads`, head-major: the layout of a subset's gradient.
std::vector<double> pick(const std::vector<double>& full, int64_t B, int64_t T, int64_t per_b, int64_t row,
                         const std::vector<int64_t>& heads) {
  std::vector<double> out;
  for (int64_t h : heads) {
    const int64_t b = h / per_b, x = h % per_b;
    for (int64_t t = 0; t < T; ++t) {
      const auto at = full.begin() + ((b * T + t) * per_b + x) * row;
      out.insert(out.end(), at, at + row);
    }
  }
  return out;
}

// cpu_recurrent with one element of a gradient spoiled after the run.
enum class Spoil { none, wrong_value, nan };
Spoil g_spoil = Spoil::none;
Grad g_spoil_grad = Grad::dq;
int64_t g_spoil_index = 0;

class SpoiledGradients final : public VariantRun {
 public:
  explicit SpoiledGradients(std::unique_ptr<VariantRun> run) : run_(std::move(run)) {}
  void poison_outputs() override { run_->poison_outputs(); }
  void launch() override { run_->launch(); }
  RunOutputs read_outputs() override {
    RunOutputs out = run_->read_outputs();
    if (g_spoil == Spoil::none) return out;
    std::vector<float>* grads[] = {&out.dq, &out.dk, &out.dv, &out.dg, &out.dbeta, &out.dh0};
    float& x = (*grads[size_t(g_spoil_grad)])[size_t(g_spoil_index)];
    x = g_spoil == Spoil::nan ? std::numeric_limits<float>::quiet_NaN() : x + 1000.0f;
    return out;
  }

 private:
  std::unique_ptr<VariantRun> run_;
};

std::optional<std::string> runs_anything(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_spoiled(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<SpoiledGradients>(find_variant("cpu_recurrent")->create(p, in, ctx));
}
VariantInfo spoiled_recurrent() {
  VariantInfo v = {"spoiled_cpu_recurrent", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0,
                   "fp32 bf16 fp16", "any", runs_anything, create_spoiled, "test double"};
  v.has_backward = true;
  return v;
}
const VariantInfo kSpoiled = spoiled_recurrent();

ResultRow run_one(const Problem& p, RefMode mode, int64_t sample_heads) {
  RunOptions opt;
  opt.cpu_threads = 2;
  opt.gdn_ref = mode;
  opt.gdn_sample_heads = sample_heads;
  const RunSummary sum = execute_cases({Case{p, &kSpoiled, true}}, opt, [](const ResultRow&) {});
  REQUIRE(sum.rows.size() == 1);
  return sum.rows[0];
}

}  // namespace

TEST_CASE("a gradient sample holds whole groups, the first and the last", "[reference][sampled][backward]") {
  const int64_t B = GENERATE(1, 3), H = GENERATE(1, 2, 5), G = GENERATE(1, 2, 4);
  const int64_t max_heads = GENERATE(2, 6, 16);
  INFO("B " << B << " H " << H << " G " << G << " max_heads " << max_heads);
  const GdnShape s{B, 100, H, H * G, 32, 32};
  const std::vector<int64_t> heads = gdn_sample_heads(s, max_heads, true);
  REQUIRE(!heads.empty());
  CHECK(std::is_sorted(heads.begin(), heads.end()));
  CHECK(std::adjacent_find(heads.begin(), heads.end()) == heads.end());
  CHECK(heads.front() == 0);
  CHECK(heads.back() == B * H * G - 1);
  CHECK(heads.size() % size_t(G) == 0);
  for (size_t i = 0; i < heads.size(); i += size_t(G))
    for (int64_t j = 0; j < G; ++j) CHECK(heads[i + size_t(j)] == heads[i] + j);
  CHECK(heads[0] % G == 0);
  if (G == 1) CHECK(heads == gdn_sample_heads(s, max_heads));  // the forward's sample
  // The problem's backward pass takes it, its forward the value heads alone.
  Problem p = backward_problem(B, 100, H, H * G, 32, 32, 1);
  const std::vector<int64_t> want = int64_t(heads.size()) == B * H * G ? std::vector<int64_t>{} : heads;
  CHECK(gdn_ref_heads(p, RefMode::sampled, max_heads) == want);
  p.pass = Pass::fwdbwd;
  CHECK(gdn_ref_heads(p, RefMode::sampled, max_heads) == want);
  p.pass = Pass::fwd;
  CHECK(gdn_ref_heads(p, RefMode::sampled, max_heads) ==
        (int64_t(gdn_sample_heads(s, max_heads).size()) == B * H * G ? std::vector<int64_t>{}
                                                                     : gdn_sample_heads(s, max_heads)));
}

TEST_CASE("the gradients of a subset of heads equal the whole reference's on those heads",
          "[reference][sampled][backward]") {
  const uint64_t seed = testutil::fresh_seed();
  const bool chunked = GENERATE(false, true);
  INFO("seed " << seed << " chunked " << chunked);
  Problem p = backward_problem(2, 37, 2, 6, 16, 8, seed);
  const GdnShape& s = p.shape;
  const RefInputsF64 in = to_f64(make_inputs(p));
  GdnRefOptions ro;
  ro.scale = p.resolved_scale();
  ro.threads = 2;
  const auto backward = [&](const GdnRefOptions& o) {
    return chunked ? gdn_chunked_backward_ref(s, in.view(), in.grad_view(), o, 16)
                   : gdn_recurrent_backward_ref(s, in.view(), in.grad_view(), o);
  };
  const GdnRefGradients full = backward(ro);
  CHECK(full.heads.empty());
  ro.heads = {0, 1, 2, 9, 10, 11};  // q/k heads 0 (b 0, h 0) and 3 (b 1, h 1), 3 value heads each
  ro.threads = 3;
  const GdnRefGradients part = backward(ro);
  CHECK(part.heads == ro.heads);
  CHECK(part.qk_heads == std::vector<int64_t>{0, 3});
  // The same code path per head, and the group sum in the same order: bit for bit.
  CHECK(part.dq == pick(full.dq, s.B, s.T, s.H, s.K, part.qk_heads));
  CHECK(part.dk == pick(full.dk, s.B, s.T, s.H, s.K, part.qk_heads));
  CHECK(part.dv == pick(full.dv, s.B, s.T, s.HV, s.V, part.heads));
  CHECK(part.dg == pick(full.dg, s.B, s.T, s.HV, 1, part.heads));
  CHECK(part.dbeta == pick(full.dbeta, s.B, s.T, s.HV, 1, part.heads));
  CHECK(part.dh0 == pick(full.dh0, s.B, 1, s.HV, s.K * s.V, part.heads));
  CHECK(testutil::max_abs_diff(part.dq, std::vector<double>(part.dq.size(), 0.0)) > 0.0);

  for (const std::vector<int64_t>& bad : std::vector<std::vector<int64_t>>{
           {0, 1}, {1, 2, 3}, {3, 4, 5, 0, 1, 2}, {0, 0, 1, 2}, {9, 10, 11, 12}, {12, 13, 14}}) {
    ro.heads = bad;
    CHECK_THROWS_AS(backward(ro), std::invalid_argument);
  }
}

TEST_CASE("a sampled backward verification judges its heads, and every element's writes",
          "[harness][runner][sampled][backward]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  // 2 batch rows x 4 q/k heads x 2 value heads; 4 sampled value heads: q/k heads 0 and 7.
  const Problem p = backward_problem(2, 70, 4, 8, 16, 16, seed);
  const GdnShape& s = p.shape;
  const int64_t sample_heads = 4;
  REQUIRE(gdn_ref_heads(p, RefMode::sampled, sample_heads) == std::vector<int64_t>{0, 1, 14, 15});
  const auto qk_index = [&](int64_t b, int64_t t, int64_t h, int64_t i) { return ((b * s.T + t) * s.H + h) * s.K + i; };
  const auto v_index = [&](int64_t b, int64_t t, int64_t hv, int64_t j) { return ((b * s.T + t) * s.HV + hv) * s.V + j; };
  g_spoil = Spoil::none;

  SECTION("a correct backward passes on the sample") {
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    const ResultRow f = run_one(p, RefMode::full, sample_heads);
    REQUIRE(r.status == Status::pass);
    REQUIRE(f.status == Status::pass);
    CHECK(r.ref_heads == 4);
    CHECK(f.ref_heads == s.B * s.HV);
    for (Grad g : kGrads) {
      INFO(grad_name(g));
      CHECK(r.grad[size_t(g)].present);
      CHECK(r.grad[size_t(g)].max_abs <= f.grad[size_t(g)].max_abs);
    }
    CHECK(r.grad[size_t(Grad::dq)].rel_l2 == Approx(f.grad[size_t(Grad::dq)].rel_l2).epsilon(0.5));
  }
  SECTION("a wrong dq of a sampled q/k head fails") {
    g_spoil = Spoil::wrong_value;
    g_spoil_grad = Grad::dq;
    g_spoil_index = qk_index(1, 33, 3, 5);
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    CHECK(r.status == Status::fail);
    CHECK(r.reason.find("dq") != std::string::npos);
    CHECK(r.grad[size_t(Grad::dq)].worst_index == g_spoil_index);
  }
  SECTION("a wrong dv of a sampled value head fails") {
    g_spoil = Spoil::wrong_value;
    g_spoil_grad = Grad::dv;
    g_spoil_index = v_index(0, 69, 1, 2);
    CHECK(run_one(p, RefMode::sampled, sample_heads).status == Status::fail);
  }
  SECTION("a NaN dk of an unsampled head fails") {
    g_spoil = Spoil::nan;
    g_spoil_grad = Grad::dk;
    g_spoil_index = qk_index(0, 10, 2, 0);
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    CHECK(r.status == Status::fail);
    CHECK(r.grad[size_t(Grad::dk)].nan_count == 1);
  }
  SECTION("a finite wrong dbeta of an unsampled head is what only the whole reference sees") {
    g_spoil = Spoil::wrong_value;
    g_spoil_grad = Grad::dbeta;
    g_spoil_index = (1 * s.T + 5) * s.HV + 4;
    CHECK(run_one(p, RefMode::sampled, sample_heads).status == Status::pass);
    CHECK(run_one(p, RefMode::full, sample_heads).status == Status::fail);
  }
  g_spoil = Spoil::none;
}
