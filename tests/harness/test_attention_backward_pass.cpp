// Attention's backward in the harness: an attention variant with a backward is judged against the
// float64 attention backward (dq, dk, dv; no dg, dbeta or dh0), by the bounds of its backward's
// precision class, whole or on a sample of heads; a GDN variant on the same inputs keeps its own
// gradient reference. A CPU stand-in plays the variant (attn_naive's backward needs a GPU).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/reference_sample.h"
#include "harness/runner.h"
#include "reference/attention_backward_reference.h"
#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"

namespace {

Grad g_spoil = Grad::dg;  // dg: nothing spoiled (attention has none)
int64_t g_spoil_index = 0;

// The float64 answers rounded to the dtype, as a perfect kernel writing that dtype would give.
class ReferenceAttention final : public VariantRun {
 public:
  ReferenceAttention(const Problem& p, const HostInputs& in) : p_(p), in_(to_f64(in)) {}
  void poison_outputs() override {}
  void launch() override {}
  RunOutputs read_outputs() override {
    const GdnShape& s = p_.shape;
    RunOutputs out;
    const auto rounded = [&](const std::vector<double>& x) {
      std::vector<float> r(x.size());
      for (size_t i = 0; i < x.size(); ++i) r[i] = round_to(p_.dtype, float(x[i]));
      return r;
    };
    if (pass_has_forward(p_.pass))
      out.o = rounded(attention_ref(s.B, s.T, s.HV, s.K, s.V, in_.q.data(), in_.k.data(), in_.v.data(),
                                    p_.resolved_scale(), true));
    if (pass_has_backward(p_.pass)) {
      const AttentionRefGradients g = attention_backward_ref(s.B, s.T, s.HV, s.K, s.V, in_.q.data(), in_.k.data(),
                                                             in_.v.data(), in_.dout.data(), p_.resolved_scale(), true);
      out.dq = rounded(g.dq);
      out.dk = rounded(g.dk);
      out.dv = rounded(g.dv);
      std::vector<float>* spoil = g_spoil == Grad::dq ? &out.dq : g_spoil == Grad::dk ? &out.dk
                                  : g_spoil == Grad::dv ? &out.dv : nullptr;
      if (spoil) (*spoil)[size_t(g_spoil_index)] += 100.0f;
    }
    return out;
  }

 private:
  Problem p_;
  RefInputsF64 in_;
};

std::optional<std::string> runs_anything(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_reference(const Problem& p, const HostInputs& in, const RunContext&) {
  return std::make_unique<ReferenceAttention>(p, in);
}
VariantInfo reference_attention() {
  VariantInfo v = {"reference_attention", Family::attention, Backend::cpu, Precision::tensor_core, false, 0,
                   "fp32 bf16 fp16", "any", runs_anything, create_reference, "test double"};
  v.has_backward = true;
  v.backward_precision = Precision::fp32_math;
  return v;
}
const VariantInfo kAttention = reference_attention();

Problem attention_problem(Pass pass, int64_t B, int64_t H, uint64_t seed) {
  Problem p;
  p.shape = GdnShape{B, 40, H, H, 16, 8};
  p.dtype = DType::bf16;
  p.pass = pass;
  p.seed = seed;
  return p;
}

std::vector<ResultRow> run(const std::vector<Case>& cases, RefMode attention_ref = RefMode::full) {
  RunOptions opt;
  opt.cpu_threads = 2;
  opt.attention_ref = attention_ref;
  return execute_cases(cases, opt, [](const ResultRow&) {}).rows;
}

}  // namespace

TEST_CASE("an attention backward is judged on dq, dk, dv by its backward's precision class",
          "[harness][backward][attention]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  g_spoil = Grad::dg;
  const ResultRow bwd = run({Case{attention_problem(Pass::bwd, 2, 2, seed), &kAttention, true}})[0];
  INFO(bwd.reason);
  REQUIRE(bwd.status == Status::pass);
  CHECK(bwd.precision == "fp32_math");
  for (Grad g : {Grad::dq, Grad::dk, Grad::dv}) {
    CHECK(bwd.grad[size_t(g)].present);
    CHECK(bwd.grad[size_t(g)].err_vs_floor <= 1.0 + 1e-9);  // the rounding alone
  }
  for (Grad g : {Grad::dg, Grad::dbeta, Grad::dh0}) CHECK_FALSE(bwd.grad[size_t(g)].present);
  CHECK_FALSE(bwd.o.present);

  const ResultRow both = run({Case{attention_problem(Pass::fwdbwd, 2, 2, seed), &kAttention, true}})[0];
  CHECK(both.status == Status::pass);
  CHECK(both.precision == "tensor_core/fp32_math");
  CHECK(both.o.present);

  g_spoil = Grad::dk;
  g_spoil_index = 77;
  const ResultRow wrong = run({Case{attention_problem(Pass::bwd, 2, 2, seed), &kAttention, true}})[0];
  CHECK(wrong.status == Status::fail);
  CHECK(wrong.reason.find("dk") != std::string::npos);
  g_spoil = Grad::dg;
}

TEST_CASE("a GDN and an attention variant on the same inputs each get their own gradients",
          "[harness][backward][attention]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  g_spoil = Grad::dg;
  const Problem p = attention_problem(Pass::bwd, 1, 2, seed);
  for (const std::vector<Case>& order : {std::vector<Case>{{p, find_variant("cpu_recurrent"), true}, {p, &kAttention, true}},
                                         std::vector<Case>{{p, &kAttention, true}, {p, find_variant("cpu_recurrent"), true}}}) {
    const std::vector<ResultRow> rows = run(order);
    REQUIRE(rows.size() == 2);
    for (const ResultRow& r : rows) {
      INFO(r.variant << ": " << r.reason);
      CHECK(r.status == Status::pass);
    }
  }
}

TEST_CASE("a sampled attention backward judges whole heads", "[harness][backward][attention][sampled]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const Problem p = attention_problem(Pass::bwd, 2, 4, seed);
  const std::vector<int64_t> heads = attention_grad_heads(p, RefMode::sampled, 3);
  REQUIRE(heads == std::vector<int64_t>{0, 3, 7});  // first, spread, last of B H = 8
  CHECK(attention_grad_heads(p, RefMode::full).empty());
  CHECK(attention_grad_heads(p, RefMode::automatic).empty());  // far under the budget

  // The sample equals the whole reference on its heads, bit for bit.
  const RefInputsF64 in = to_f64(make_inputs(p));
  const GdnShape& s = p.shape;
  const AttentionRefGradients full = attention_backward_ref(s.B, s.T, s.H, s.K, s.V, in.q.data(), in.k.data(),
                                                            in.v.data(), in.dout.data(), 0.0, true, 3);
  const AttentionRefGradients part = attention_backward_ref(s.B, s.T, s.H, s.K, s.V, in.q.data(), in.k.data(),
                                                            in.v.data(), in.dout.data(), 0.0, true, 2, heads);
  std::vector<double> dv_picked;
  for (int64_t h : heads)
    for (int64_t t = 0; t < s.T; ++t) {
      const auto at = full.dv.begin() + ((h / s.H * s.T + t) * s.H + h % s.H) * s.V;
      dv_picked.insert(dv_picked.end(), at, at + s.V);
    }
  CHECK(part.dv == dv_picked);
  CHECK(part.dq.size() == heads.size() * size_t(s.T * s.K));

  // A run on a sample: 16 of B H = 20 heads (the most a sample takes); heads 4, 9, 14 and 18 are outside it.
  const Problem wide = attention_problem(Pass::bwd, 2, 10, seed);
  const std::vector<int64_t> sample = attention_grad_heads(wide, RefMode::sampled);
  REQUIRE(sample.size() == 16);
  REQUIRE(!std::binary_search(sample.begin(), sample.end(), int64_t(4)));
  REQUIRE(std::binary_search(sample.begin(), sample.end(), int64_t(19)));
  const auto dv_index = [&](int64_t flat, int64_t t, int64_t c) {
    return ((flat / 10 * wide.shape.T + t) * 10 + flat % 10) * wide.shape.V + c;
  };
  g_spoil = Grad::dg;
  const ResultRow ok = run({Case{wide, &kAttention, true}}, RefMode::sampled)[0];
  CHECK(ok.status == Status::pass);
  CHECK(ok.ref_heads == 16);
  g_spoil = Grad::dv;
  g_spoil_index = dv_index(19, 30, 2);
  CHECK(run({Case{wide, &kAttention, true}}, RefMode::sampled)[0].status == Status::fail);
  g_spoil_index = dv_index(4, 30, 2);  // finite and wrong outside the sample: only the whole reference sees it
  CHECK(run({Case{wide, &kAttention, true}}, RefMode::sampled)[0].status == Status::pass);
  CHECK(run({Case{wide, &kAttention, true}}, RefMode::full)[0].status == Status::fail);
  g_spoil = Grad::dg;
}
