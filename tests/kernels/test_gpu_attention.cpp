// [gpu] tests of the fused softmax-attention baselines against the float64 reference: attn_flash
// (prefill, causal) over tile boundaries and head dims, attn_decode over cache lengths, batch and
// split counts. Without a GPU (or in a build without CUDA) each test says why in a warning and
// checks nothing else.
#include <catch2/catch.hpp>

#include "harness/gpu_runtime.h"
#include "harness/runner.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/test_util.h"

namespace {

using gputest::gpu_or_warn;

// The float64 attention references are the slow part of these tests: give them more threads.
ResultRow verify_on_gpu(const char* variant_name, const Problem& p) {
  return gputest::verify_on_gpu(variant_name, p, 8);
}

Problem attention_problem(int64_t B, int64_t T, int64_t H, int64_t D, DType dt, int64_t context = 0) {
  Problem p;
  p.shape = GdnShape{B, T, H, H, D, D};
  p.dtype = dt;
  p.context = context;
  p.seed = testutil::fresh_seed();
  return p;
}

void check_pass(const ResultRow& row) {
  INFO(row.reason << " (o rel_l2 " << row.o.rel_l2 << ", floor " << row.o.floor_rel_l2 << ")");
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
  CHECK(row.o.nan_count == 0);
  // Rounding only P (as attn_naive does, 1.4x the floor on the gate) and o: within 3x the floor.
  CHECK(row.o.err_vs_floor < 3.0);
}

}  // namespace

TEST_CASE("attn_flash matches float64 causal attention on the GPU", "[gpu][attention]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t D = GENERATE(64, 128, 256);
  const int64_t T = GENERATE(1, 63, 64, 65, 127, 128, 129, 200, 1000);
  const Problem p = attention_problem(2, T, 2, D, dt);
  INFO("seed " << p.seed << " dtype " << dtype_name(dt) << " T " << T << " D " << D);
  check_pass(verify_on_gpu("attn_flash", p));
}

TEST_CASE("attn_flash covers many query tiles, odd head counts and batches on the GPU", "[gpu][attention]") {
  if (!gpu_or_warn()) return;
  const auto shape = GENERATE(std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 4100, 1, 128},
                              std::tuple<int64_t, int64_t, int64_t, int64_t>{3, 300, 5, 64},
                              std::tuple<int64_t, int64_t, int64_t, int64_t>{4, 777, 3, 256});
  const auto [B, T, H, D] = shape;
  const Problem p = attention_problem(B, T, H, D, DType::bf16);
  INFO("seed " << p.seed << " B " << B << " T " << T << " H " << H << " D " << D);
  check_pass(verify_on_gpu("attn_flash", p));
}

TEST_CASE("attn_flash gives the same o as attn_naive up to rounding on the GPU", "[gpu][attention]") {
  if (!gpu_or_warn()) return;
  const Problem p = attention_problem(1, 513, 2, 128, DType::f16);
  INFO("seed " << p.seed);
  const ResultRow flash = verify_on_gpu("attn_flash", p);
  const ResultRow naive = verify_on_gpu("attn_naive", p);
  check_pass(flash);
  CHECK(naive.status == Status::pass);
  CHECK(flash.o.rel_l2 < 2.0 * naive.o.rel_l2 + 1e-4);
}

TEST_CASE("attn_decode matches float64 attention over a KV cache on the GPU", "[gpu][attention][decode]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t D = GENERATE(64, 128, 256);
  const int64_t context = GENERATE(0, 1, 63, 64, 99, 255, 256, 257, 4999);
  const int64_t B = GENERATE(1, 3);
  const Problem p = attention_problem(B, 1, 2, D, dt, context);
  INFO("seed " << p.seed << " dtype " << dtype_name(dt) << " D " << D << " context " << context << " B " << B);
  check_pass(verify_on_gpu("attn_decode", p));
}

TEST_CASE("attn_decode merges hundreds of splits and large batches on the GPU", "[gpu][attention][decode]") {
  if (!gpu_or_warn()) return;
  const auto shape = GENERATE(std::tuple<int64_t, int64_t, int64_t>{1, 1, 100000},  // ~1000 splits
                              std::tuple<int64_t, int64_t, int64_t>{1, 32, 20000},
                              std::tuple<int64_t, int64_t, int64_t>{64, 4, 3000},
                              std::tuple<int64_t, int64_t, int64_t>{256, 2, 40});  // one split
  const auto [B, H, context] = shape;
  const Problem p = attention_problem(B, 1, H, 128, DType::bf16, context);
  INFO("seed " << p.seed << " B " << B << " H " << H << " context " << context);
  check_pass(verify_on_gpu("attn_decode", p));
}

TEST_CASE("attn_flash, attn_naive and attn_decode skip what they do not run, with a reason", "[gpu][attention]") {
  if (!gpu_or_warn()) return;
  const ResultRow prefill_with_cache = verify_on_gpu("attn_flash", attention_problem(1, 16, 2, 64, DType::bf16, 10));
  CHECK(prefill_with_cache.status == Status::skipped);
  CHECK(prefill_with_cache.reason.find("attn_decode") != std::string::npos);
  const ResultRow decode_prefill = verify_on_gpu("attn_decode", attention_problem(1, 16, 2, 64, DType::bf16, 10));
  CHECK(decode_prefill.status == Status::skipped);
  CHECK(decode_prefill.reason.find("T = 1") != std::string::npos);
  const ResultRow fp32 = verify_on_gpu("attn_flash", attention_problem(1, 16, 2, 64, DType::f32));
  CHECK(fp32.status == Status::skipped);
  CHECK(fp32.reason.find("fp32") != std::string::npos);
}

TEST_CASE("attn_naive's backward matches the float64 attention backward on the GPU", "[gpu][attention][backward]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::f32, DType::bf16, DType::f16);
  const Pass pass = GENERATE(Pass::bwd, Pass::fwdbwd);
  const auto shape = GENERATE(std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 64, 64},
                              std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{2, 65, 2, 100, 40},
                              std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{1, 300, 3, 128, 128});
  const auto [B, T, H, D, Dv] = shape;
  Problem p = attention_problem(B, T, H, D, dt);
  p.shape.V = Dv;
  p.pass = pass;
  INFO("seed " << p.seed << " " << dtype_name(dt) << " " << pass_name(pass) << " B " << B << " T " << T << " H " << H
               << " D " << D << " Dv " << Dv);
  const ResultRow row = verify_on_gpu("attn_naive", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  // Float32 math: each gradient within a hair of its rounding floor (fp32: of the float32 bound).
  for (Grad g : {Grad::dq, Grad::dk, Grad::dv}) {
    INFO(grad_name(g) << " rel_l2 " << row.grad[size_t(g)].rel_l2);
    CHECK(row.grad[size_t(g)].present);
    CHECK(row.grad[size_t(g)].unwritten == 0);
    if (dt != DType::f32) CHECK(row.grad[size_t(g)].err_vs_floor < 1.05);
  }
}
