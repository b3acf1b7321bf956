// [gpu] tests: every CUDA variant against the float64 reference over a shape grid. Without a
// GPU (or in a build without CUDA) each test says why in a warning and checks nothing else.
#include <catch2/catch.hpp>

#include <random>

#include "harness/gpu_runtime.h"
#include "harness/runner.h"

namespace {

bool gpu_or_warn() {
  static const GpuInfo gpu = query_gpu();
  if (!gpu.available) WARN("skipped: no GPU (" << gpu.why_not << ")");
  return gpu.available;
}

ResultRow verify_on_gpu(const char* variant_name, const Problem& p) {
  const VariantInfo* v = find_variant(variant_name);
  REQUIRE(v != nullptr);
  RunOptions opt;
  opt.gpu = query_gpu();
  opt.cpu_threads = 4;
  const HostInputs in = make_inputs(p);
  const RefInputsF64 ref_in = to_f64(in);
  GdnRefOutputs gdn_ref;
  std::vector<double> attn_ref;
  const GdnShape& s = p.shape;
  if (v->family == Family::gdn) {
    GdnRefOptions ro;
    ro.scale = p.resolved_scale();
    ro.use_delta = p.use_delta;
    gdn_ref = gdn_recurrent_ref(s, ref_in.view(), ro);
  } else {
    attn_ref = attention_ref(s.B, s.T, s.HV, s.K, s.V, ref_in.q.data(), ref_in.k.data(),
                             ref_in.v.data(), p.resolved_scale(), true);
  }
  return run_case(Case{p, v, true}, in, gdn_ref, attn_ref, opt);
}

uint64_t fresh_seed() { return (uint64_t(std::random_device{}()) << 32) | std::random_device{}(); }

}  // namespace

TEST_CASE("recurrent matches the float64 reference on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::f32, DType::bf16, DType::f16);
  const int64_t T = GENERATE(1, 15, 16, 17, 100);
  const auto KV = GENERATE(std::pair<int64_t, int64_t>{64, 64}, std::pair<int64_t, int64_t>{100, 72},
                           std::pair<int64_t, int64_t>{128, 128}, std::pair<int64_t, int64_t>{256, 256});
  const bool h0 = GENERATE(false, true);
  Problem p;
  p.shape = GdnShape{2, T, 1, 2, KV.first, KV.second};
  p.dtype = dt;
  p.use_h0 = h0;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " dtype " << dtype_name(dt) << " T " << T << " K " << KV.first);
  const ResultRow row = verify_on_gpu("recurrent", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
  CHECK(row.ht.unwritten == 0);
}

TEST_CASE("recurrent covers DeltaNet and gated linear attention on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const bool gate = GENERATE(false, true);
  const bool delta = GENERATE(false, true);
  Problem p;
  p.shape = GdnShape{1, 70, 2, 2, 64, 64};
  p.use_gate = gate;
  p.use_delta = delta;
  p.use_h0 = true;
  p.seed = fresh_seed();
  INFO("seed " << p.seed);
  const ResultRow row = verify_on_gpu("recurrent", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
}

TEST_CASE("attn_naive matches float64 causal attention on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::f32, DType::bf16, DType::f16);
  const int64_t T = GENERATE(1, 7, 64, 257);
  Problem p;
  p.shape = GdnShape{2, T, 3, 3, 64, 64};
  p.dtype = dt;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " T " << T);
  const ResultRow row = verify_on_gpu("attn_naive", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
}
