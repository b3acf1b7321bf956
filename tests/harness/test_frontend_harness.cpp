// Front-end problems in the harness (Problem::frontend): their inputs, the reference the runner
// picks for them, the conv-cache check, SKIP reasons, the CLI axis; and the float64 fact the
// decode kernels rest on: T one-token steps (caches and state carried) equal the forward over T.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "harness/io/cli.h"
#include "harness/frontend_inputs.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/io/resume.h"
#include "harness/runner.h"
#include "kernels/frontend/frontend.h"
#include "reference/frontend_reference.h"
#include "tests/common/test_util.h"
#ifdef GDNBENCH_HAVE_CUDA
#include "harness/cuda_frontend_variants.h"
#endif

namespace {

Problem frontend_problem(GdnShape shape, DType dt, bool h0, uint64_t seed) {
  Problem p;
  p.shape = shape;
  p.dtype = dt;
  p.use_h0 = h0;
  p.frontend = true;
  p.seed = seed;
  return p;
}

bool representable(const std::vector<float>& x, DType dt) {
  return std::all_of(x.begin(), x.end(), [dt](float v) { return round_to(dt, v) == v; });
}

// A front-end variant that answers with the float64 reference itself (rounded to float), or with
// one conv-cache element changed: what the runner must pass, and what it must fail.
bool g_corrupt_cache = false;

class ReferenceRun final : public VariantRun {
 public:
  ReferenceRun(const Problem& p, const HostInputs& in) : p_(p), in_(in) {}
  void poison_outputs() override { out_ = RunOutputs{}; }
  void launch() override {
    const GdnRefOutputs ref = frontend_reference_for(p_, frontend_to_f64(in_.fe),
                                                     std::vector<double>(in_.h0.begin(), in_.h0.end()), 1);
    out_.o.assign(ref.o.begin(), ref.o.end());
    for (float& x : out_.o) x = round_to(p_.dtype, x);
    out_.hT.assign(ref.hT.begin(), ref.hT.end());
    out_.conv_cache.assign(ref.conv_cache.begin(), ref.conv_cache.end());
    if (g_corrupt_cache) out_.conv_cache.back() += 1.0f;
  }
  RunOutputs read_outputs() override { return out_; }

 private:
  Problem p_;
  const HostInputs& in_;
  RunOutputs out_;
};

std::optional<std::string> never_unsupported(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_reference_run(const Problem& p, const HostInputs& in, const RunContext&) {
  return std::make_unique<ReferenceRun>(p, in);
}
VariantInfo reference_variant() {
  VariantInfo v{"frontend_reference_double", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0,
                "fp32 bf16 fp16", "any", never_unsupported, create_reference_run, "test double"};
  v.frontend = true;
  v.min_bytes = frontend_min_bytes_f32_state;
  return v;
}

}  // namespace

TEST_CASE("front-end inputs: raw tensors only, dtype-rounded, a pure function of the seed",
          "[harness][frontend]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const DType dt = GENERATE(DType::f32, DType::bf16, DType::f16);
  const bool h0 = GENERATE(false, true);
  const GdnShape s{2, 5, 2, 4, 8, 6};
  const Problem p = frontend_problem(s, dt, h0, seed);
  const HostInputs in = make_inputs(p);
  CHECK(in.q.empty());
  CHECK(in.k.empty());
  CHECK(in.v.empty());
  CHECK(in.g.empty());
  CHECK(in.beta.empty());
  const FrontEndHost& fe = in.fe;
  const int64_t cqk = s.H * s.K, cv = s.HV * s.V;
  CHECK(int64_t(fe.x_q.size()) == s.B * s.T * cqk);
  CHECK(int64_t(fe.x_k.size()) == s.B * s.T * cqk);
  CHECK(int64_t(fe.x_v.size()) == s.B * s.T * cv);
  CHECK(int64_t(fe.a.size()) == s.gate_elems());
  CHECK(int64_t(fe.b.size()) == s.gate_elems());
  CHECK(int64_t(fe.w_q.size()) == cqk * kConvWidth);
  CHECK(int64_t(fe.w_v.size()) == cv * kConvWidth);
  CHECK(int64_t(fe.bias_k.size()) == cqk);
  CHECK(int64_t(fe.A_log.size()) == s.HV);
  CHECK(int64_t(fe.dt_bias.size()) == s.HV);
  // A problem with h0 continues a sequence: its conv caches come with it.
  CHECK(int64_t(fe.cache_q.size()) == (h0 ? s.B * cqk * kConvCache : 0));
  CHECK(int64_t(fe.cache_v.size()) == (h0 ? s.B * cv * kConvCache : 0));
  CHECK(int64_t(in.h0.size()) == (h0 ? s.state_elems() : 0));
  for (const auto* t : {&fe.x_q, &fe.x_k, &fe.x_v, &fe.a, &fe.b, &fe.w_q, &fe.w_k, &fe.w_v, &fe.bias_q,
                        &fe.bias_k, &fe.bias_v, &fe.cache_q, &fe.cache_k, &fe.cache_v})
    CHECK(representable(*t, dt));
  for (size_t i = 0; i < fe.A_log.size(); ++i) {
    CHECK(fe.A_log[i] >= 0.0f);
    CHECK(fe.A_log[i] <= float(std::log(16.0)) + 1e-6f);
    const double dt_value = std::log1p(std::exp(double(fe.dt_bias[i])));  // softplus
    CHECK(dt_value >= 1e-3 * 0.999);
    CHECK(dt_value <= 0.1 * 1.001);
  }
  const HostInputs again = make_inputs(p);
  CHECK(again.fe.x_v == fe.x_v);
  CHECK(again.fe.cache_k == fe.cache_k);
  Problem other = p;
  other.seed = seed + 1;
  CHECK(make_inputs(other).fe.x_q != fe.x_q);
  // h0 is drawn as for the plain problem of the same seed.
  Problem plain = p;
  plain.frontend = false;
  CHECK(make_inputs(plain).h0 == in.h0);
  CHECK(p.input_key() != plain.input_key());
  CHECK(p.distributions().find("frontend") != std::string::npos);
}

TEST_CASE("front-end reference: the runner's one helper runs the front end, then the recurrence",
          "[harness][frontend][reference]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const bool h0 = GENERATE(false, true);
  const GdnShape s{2, 7, 1, 2, 8, 8};
  const Problem p = frontend_problem(s, DType::bf16, h0, seed);
  const HostInputs in = make_inputs(p);
  const RefInputsF64 f64 = to_f64(in);
  const GdnRefOutputs got = gdn_reference_for(p, f64, 2);

  FrontEndInputs fi;
  fi.q_proj = f64.fe.x_q.data();
  fi.k_proj = f64.fe.x_k.data();
  fi.v_proj = f64.fe.x_v.data();
  fi.q_conv_w = f64.fe.w_q.data();
  fi.k_conv_w = f64.fe.w_k.data();
  fi.v_conv_w = f64.fe.w_v.data();
  fi.q_conv_bias = f64.fe.bias_q.data();
  fi.k_conv_bias = f64.fe.bias_k.data();
  fi.v_conv_bias = f64.fe.bias_v.data();
  if (h0) {
    fi.q_conv_cache = f64.fe.cache_q.data();
    fi.k_conv_cache = f64.fe.cache_k.data();
    fi.v_conv_cache = f64.fe.cache_v.data();
    fi.h0 = f64.h0.data();
  }
  fi.a = f64.fe.a.data();
  fi.b = f64.fe.b.data();
  fi.A_log = f64.fe.A_log.data();
  fi.dt_bias = f64.fe.dt_bias.data();
  FrontEndOptions fo;
  fo.gdn.scale = p.resolved_scale();
  const FrontEndOutputs want = gdn_frontend_ref(s, fi, fo);
  CHECK(got.o == want.gdn.o);
  CHECK(got.hT == want.gdn.hT);
  REQUIRE(int64_t(got.conv_cache.size()) == frontend_conv_cache_elems(s));
  std::vector<double> caches = want.q_conv_cache;
  caches.insert(caches.end(), want.k_conv_cache.begin(), want.k_conv_cache.end());
  caches.insert(caches.end(), want.v_conv_cache.begin(), want.v_conv_cache.end());
  CHECK(got.conv_cache == caches);
  // The gates it derived are decays and betas.
  for (double g : want.g) CHECK(g < 0.0);
  for (double b : want.beta) CHECK((b > 0.0 && b < 1.0));

  Problem plain = p;
  plain.frontend = false;
  CHECK(gdn_reference_for(plain, to_f64(make_inputs(plain)), 1).conv_cache.empty());
}

TEST_CASE("decode in float64: T one-token steps with caches and state carried equal the forward over T",
          "[harness][frontend][reference]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const int64_t T = GENERATE(1, 2, 5, 8);
  const GdnShape s{3, T, 2, 4, 8, 6};  // grouped value heads, B > 1
  const Problem p = frontend_problem(s, DType::bf16, true, seed);
  const HostInputs in = make_inputs(p);
  const FrontEndF64 fe = frontend_to_f64(in.fe);
  const GdnRefOutputs whole = frontend_reference_for(p, fe, std::vector<double>(in.h0.begin(), in.h0.end()), 1);

  const int64_t cqk = s.H * s.K, cv = s.HV * s.V;
  FrontEndF64 step = fe;
  std::vector<double> state(in.h0.begin(), in.h0.end());
  Problem one = p;
  one.shape.T = 1;
  std::vector<double> o_steps(whole.o.size());
  for (int64_t t = 0; t < T; ++t) {
    step.x_q = testutil::slice_tokens(fe.x_q, s.B, T, cqk, t, t + 1);
    step.x_k = testutil::slice_tokens(fe.x_k, s.B, T, cqk, t, t + 1);
    step.x_v = testutil::slice_tokens(fe.x_v, s.B, T, cv, t, t + 1);
    step.a = testutil::slice_tokens(fe.a, s.B, T, s.HV, t, t + 1);
    step.b = testutil::slice_tokens(fe.b, s.B, T, s.HV, t, t + 1);
    const GdnRefOutputs r = frontend_reference_for(one, step, state, 1);
    for (int64_t b = 0; b < s.B; ++b)
      std::copy(r.o.begin() + b * cv, r.o.begin() + (b + 1) * cv, o_steps.begin() + (b * T + t) * cv);
    state = r.hT;
    // The next step starts from this step's final caches (q, k, v in the concatenation order).
    const auto c = r.conv_cache.begin();
    const int64_t nqk = s.B * cqk * kConvCache;
    step.cache_q.assign(c, c + nqk);
    step.cache_k.assign(c + nqk, c + 2 * nqk);
    step.cache_v.assign(c + 2 * nqk, r.conv_cache.end());
  }
  CHECK(testutil::max_abs_diff(o_steps, whole.o) < 1e-12);
  CHECK(testutil::max_abs_diff(state, whole.hT) < 1e-12);
  std::vector<double> caches = step.cache_q;
  caches.insert(caches.end(), step.cache_k.begin(), step.cache_k.end());
  caches.insert(caches.end(), step.cache_v.begin(), step.cache_v.end());
  CHECK(caches == whole.conv_cache);  // copies of inputs: exact
}

TEST_CASE("the runner checks the final conv caches exactly", "[harness][frontend][runner]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const Problem p = frontend_problem(GdnShape{2, 6, 1, 2, 8, 8}, DType::f32, true, seed);
  const HostInputs in = make_inputs(p);
  const GdnRefOutputs ref = gdn_reference_for(p, to_f64(in), 1);
  const VariantInfo v = reference_variant();
  RunOptions opt;
  g_corrupt_cache = false;
  ResultRow row = run_case(Case{p, &v, true}, in, ref, {}, opt);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.conv.present);
  CHECK(row.conv.rel_l2 == 0.0);
  CHECK(row.bytes == frontend_min_bytes(p, 4));
  g_corrupt_cache = true;
  row = run_case(Case{p, &v, true}, in, ref, {}, opt);
  g_corrupt_cache = false;
  CHECK(row.status == Status::fail);
  CHECK(row.reason.find("conv cache") != std::string::npos);
  CHECK(row.conv.rel_l2 > 0.0);
}

TEST_CASE("variants of the other input kind are SKIPPED with a reason", "[harness][frontend][runner]") {
  const uint64_t seed = testutil::fresh_seed();
  Problem fe = frontend_problem(GdnShape{1, 4, 1, 1, 8, 8}, DType::bf16, false, seed);
  RunOptions opt;
  opt.gpu.available = true;  // so the input kind, not the missing device, is what skips
  for (const VariantInfo& v : variant_registry()) {
    INFO("variant " << v.name);
    if (v.frontend) continue;
    const ResultRow row = run_case(Case{fe, &v, true}, HostInputs{}, GdnRefOutputs{}, {}, opt);
    CHECK(row.status == Status::skipped);
    CHECK(row.reason.find("--frontend on") != std::string::npos);
  }
  Problem plain = fe;
  plain.frontend = false;
  const VariantInfo double_variant = reference_variant();
  std::vector<const VariantInfo*> frontend_variants = {&double_variant};
  for (const VariantInfo& v : variant_registry())
    if (v.frontend) frontend_variants.push_back(&v);
#ifdef GDNBENCH_HAVE_CUDA
  // float64 reference, unfused_conv, fused_conv, fused_decode, fused_decode_bf16state
  CHECK(frontend_variants.size() == 5);
#endif
  for (const VariantInfo* v : frontend_variants) {
    INFO("variant " << v->name);
    const ResultRow row = run_case(Case{plain, v, true}, HostInputs{}, GdnRefOutputs{}, {}, opt);
    CHECK(row.status == Status::skipped);
    CHECK(row.reason.find("--frontend off") != std::string::npos);
  }
}

TEST_CASE("execute_cases on a front-end problem: CPU variants skipped, no reference computed",
          "[harness][frontend][runner]") {
  // T large enough that generating inputs and a reference would show; nothing may run.
  const Problem p = frontend_problem(GdnShape{1, 1 << 20, 4, 4, 128, 128}, DType::f32, true, 1);
  std::vector<Case> cases;
  for (const char* name : {"cpu_recurrent", "cpu_chunked"}) cases.push_back({p, find_variant(name), true});
  RunOptions opt;
  const RunSummary sum = execute_cases(cases, opt, [](const ResultRow&) {});
  CHECK(sum.skipped == 2);
  for (const ResultRow& r : sum.rows) {
    CHECK(r.status == Status::skipped);
    CHECK(r.reason.find("raw projections") != std::string::npos);
  }
}

TEST_CASE("--frontend is an axis; front-end cases drop gate off and other gate distributions",
          "[harness][frontend][cli]") {
  const Invocation inv = parse_invocation(
      {"verify", "--suite", "default", "--frontend", "on,off", "--gate", "on,off", "--T", "4",
       "--variants", "cpu_recurrent"}, false);
  int fe = 0, plain = 0;
  for (const Case& c : inv.cases) {
    if (c.problem.frontend) {
      ++fe;
      CHECK(c.problem.use_gate);
    } else {
      ++plain;
    }
  }
  CHECK(fe > 0);
  CHECK(plain == 2 * fe);  // plain: gate on and off; front end: gate on only
}

TEST_CASE("every new precision has a bound with a reason", "[harness][frontend][tolerance]") {
  for (Precision p : {Precision::tensor_core_frontend, Precision::bf16_state})
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      INFO(precision_name(p) << " " << dtype_name(t));
      const Tolerance tol = tolerance_for(p, t);
      CHECK(tol.o_rel_l2 > 0.0);
      CHECK(tol.ht_rel_l2 > 0.0);
      CHECK(tol.o_rel_l2 < 1e-2);
      CHECK(std::string(tol.reason).size() > 10);
    }
  // A bf16 state cannot be held to float32's hT bound; rounded q, k, v not to plain tensor_core's o.
  CHECK(tolerance_for(Precision::bf16_state, DType::bf16).ht_rel_l2 >
        tolerance_for(Precision::fp32_math, DType::bf16).ht_rel_l2);
  CHECK(tolerance_for(Precision::tensor_core_frontend, DType::bf16).o_rel_l2 >
        tolerance_for(Precision::tensor_core, DType::bf16).o_rel_l2);
  CHECK(std::string(precision_name(Precision::bf16_state)) == "bf16_state");
}

#ifdef GDNBENCH_HAVE_CUDA
TEST_CASE("decode slots: distinct, inside a larger pool, a function of the seed", "[harness][frontend]") {
  const int64_t B = GENERATE(1, 2, 7, 64, 512);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " B " << B);
  const std::vector<int32_t> slots = decode_slots(B, seed);
  REQUIRE(int64_t(slots.size()) == B);
  CHECK(decode_pool_slots(B) > B);
  const std::set<int32_t> unique(slots.begin(), slots.end());
  CHECK(int64_t(unique.size()) == B);
  CHECK(*unique.begin() >= 0);
  CHECK(*unique.rbegin() < decode_pool_slots(B));
  CHECK(decode_slots(B, seed) == slots);
  if (B >= 64) {  // a shuffle, not the identity
    int moved = 0;
    for (int64_t b = 0; b < B; ++b) moved += slots[size_t(b)] != b;
    CHECK(moved > B / 2);
  }
}
#endif

TEST_CASE("resume tells a front-end problem from the plain one of the same shape", "[harness][frontend][resume]") {
  const VariantInfo* v = find_variant("cpu_recurrent");
  REQUIRE(v != nullptr);
  Problem plain;
  plain.shape = GdnShape{1, 64, 2, 2, 64, 64};
  plain.dtype = DType::bf16;
  plain.seed = 7;
  Problem fe = plain;
  fe.frontend = true;
  CHECK(resume_case_key(Case{plain, v, true}) != resume_case_key(Case{fe, v, true}));
}
