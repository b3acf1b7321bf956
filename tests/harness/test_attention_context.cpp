// Attention with a KV cache (--context), without a GPU: the CLI axis, the CSV column and resume
// key, the cached inputs, the float64 reference at an offset, FLOP and byte counts, the SKIP
// reasons of the fused attention variants and the decode split count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/inputs.h"
#include "harness/io/resume.h"
#include "harness/result.h"
#include "harness/runner.h"
#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"
#ifdef GDNBENCH_HAVE_CUDA
#include "harness/cuda_variants.h"
#include "kernels/common/cuda_kernels.h"
#endif

namespace {

Invocation parse_with_empty_suite(std::vector<std::string> args) {
  testutil::TempDir dir;
  const std::string suite = dir.file("suite.ini");
  testutil::write_text(suite, "");
  args.insert(args.begin() + 1, {"--suite", suite});
  return parse_invocation(args, false);
}

Problem attention_problem(int64_t B, int64_t T, int64_t context, int64_t H, int64_t D, uint64_t seed) {
  Problem p;
  p.shape = GdnShape{B, T, H, H, D, D};
  p.dtype = DType::bf16;
  p.context = context;
  p.seed = seed;
  return p;
}

// x[B, n, H, D] from rows of a and then b along the token axis (a: na tokens, b: nb tokens).
template <typename A, typename Bt>
std::vector<double> concat_tokens(const std::vector<A>& a, int64_t na, const std::vector<Bt>& b, int64_t nb,
                                  int64_t B, int64_t H, int64_t D) {
  std::vector<double> out;
  out.reserve(size_t(B * (na + nb) * H * D));
  for (int64_t bi = 0; bi < B; ++bi) {
    out.insert(out.end(), a.begin() + bi * na * H * D, a.begin() + (bi + 1) * na * H * D);
    out.insert(out.end(), b.begin() + bi * nb * H * D, b.begin() + (bi + 1) * nb * H * D);
  }
  return out;
}

}  // namespace

TEST_CASE("--context is a list axis, default 0, and refuses negative values", "[cli][context]") {
  const Invocation plain = parse_with_empty_suite({"verify", "--variants", "cpu_recurrent", "--T", "1"});
  REQUIRE(plain.cases.size() == 1);
  CHECK(plain.cases[0].problem.context == 0);

  const Invocation inv = parse_with_empty_suite({"verify", "--variants", "cpu_recurrent", "--T", "1,3",
                                                 "--context", "0,64,1000"});
  REQUIRE(inv.cases.size() == 6);
  std::vector<std::pair<int64_t, int64_t>> seen;
  for (const Case& c : inv.cases) seen.push_back({c.problem.shape.T, c.problem.context});
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {1, 64}, {1, 1000}, {3, 0}, {3, 64}, {3, 1000}});

  CHECK_THROWS_AS(parse_with_empty_suite({"verify", "--context", "-1"}), UsageError);
  CHECK_THROWS_AS(parse_with_empty_suite({"verify", "--context", "many"}), UsageError);
  // The cache counts toward the largest tensor: B * (T + context) * H * K past 2^53 is refused.
  CHECK_THROWS_AS(parse_with_empty_suite({"verify", "--B", "1000000", "--H", "1000", "--K", "1000",
                                          "--T", "1", "--context", "100000"}),
                  UsageError);
}

TEST_CASE("the CSV records context after T, and resume tells contexts apart", "[harness][csv][context]") {
  const std::vector<std::string> cols = csv_columns();
  const auto t = std::find(cols.begin(), cols.end(), "T");
  REQUIRE(t != cols.end());
  const auto c = std::find(cols.begin(), cols.end(), "context");  // after T (and the packed lengths)
  REQUIRE(c != cols.end());
  CHECK(c > t);

  ResultRow row;
  row.problem = attention_problem(1, 1, 4096, 2, 64, 5);
  RunMeta meta;
  const std::vector<std::string> fields = csv_row_fields(meta, row);
  CHECK(fields[size_t(c - cols.begin())] == "4096");

  const VariantInfo* v = find_variant("cpu_recurrent");
  REQUIRE(v != nullptr);
  Case a{attention_problem(1, 1, 0, 2, 64, 5), v, true};
  Case b{attention_problem(1, 1, 4096, 2, 64, 5), v, true};
  CHECK(resume_case_key(a) != resume_case_key(b));
  CHECK(a.problem.input_key() != b.problem.input_key());
}

TEST_CASE("the KV cache is seeded, drawn like k and v, and only made on request", "[harness][inputs][context]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const Problem p = attention_problem(2, 3, 17, 2, 64, seed);
  HostInputs in = make_inputs(p);
  CHECK(in.k_cache.empty());
  CHECK(in.v_cache.empty());
  add_kv_cache(p, in);
  REQUIRE(in.k_cache.size() == size_t(2 * 17 * 2 * 64));
  REQUIRE(in.v_cache.size() == size_t(2 * 17 * 2 * 64));
  for (size_t r = 0; r < in.k_cache.size(); r += 64) {
    double ss = 0.0;
    for (size_t c = 0; c < 64; ++c) ss += double(in.k_cache[r + c]) * in.k_cache[r + c];
    CHECK(std::sqrt(ss) == Approx(1.0).epsilon(1e-2));  // unit rows, up to bf16 rounding
  }
  for (float x : in.v_cache) CHECK(round_to(DType::bf16, x) == x);
  CHECK(testutil::all_finite(in.k_cache));
  // The cache is not a copy of the new tokens' k, v.
  CHECK(!std::equal(in.k.begin(), in.k.begin() + 64, in.k_cache.begin()));

  HostInputs again = make_inputs(p);
  add_kv_cache(p, again);
  CHECK(again.k_cache == in.k_cache);
  CHECK(again.v_cache == in.v_cache);
  Problem other = p;
  other.seed = seed + 1;
  HostInputs different = make_inputs(other);
  add_kv_cache(other, different);
  CHECK(different.k_cache != in.k_cache);
}

TEST_CASE("attention at an offset is the tail of causal attention over context + T", "[reference][context]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const int64_t B = 2, H = 3, D = 16, Dv = 8;
  const int64_t context = GENERATE(1, 7, 40);
  const int64_t T = GENERATE(1, 5);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  auto draw = [&](int64_t n) {
    std::vector<double> x(n);
    for (double& v : x) v = n01(rng);
    return x;
  };
  auto draw_f = [&](int64_t n) {
    std::vector<float> x(n);
    for (float& v : x) v = float(n01(rng));
    return x;
  };
  const std::vector<double> q = draw(B * T * H * D), k = draw(B * T * H * D), v = draw(B * T * H * Dv);
  const std::vector<float> kc = draw_f(B * context * H * D), vc = draw_f(B * context * H * Dv);
  const std::vector<double> o = attention_cache_ref(B, T, context, H, D, Dv, q.data(), k.data(), v.data(),
                                                    kc.data(), vc.data(), 0.0, 3);

  // Full causal attention over the concatenated sequence; queries before the new ones are zero.
  const int64_t L = context + T;
  const std::vector<double> k_all = concat_tokens(kc, context, k, T, B, H, D);
  const std::vector<double> v_all = concat_tokens(vc, context, v, T, B, H, Dv);
  const std::vector<double> q_all = concat_tokens(std::vector<double>(B * context * H * D, 0.0), context, q, T, B, H, D);
  const std::vector<double> full = attention_ref(B, L, H, D, Dv, q_all.data(), k_all.data(), v_all.data(), 0.0, true, 2);
  std::vector<double> tail;
  for (int64_t b = 0; b < B; ++b)
    tail.insert(tail.end(), full.begin() + (b * L + context) * H * Dv, full.begin() + (b + 1) * L * H * Dv);
  CHECK(testutil::max_abs_diff(o, tail) < 1e-12);

  if (T == 1) {
    // The one-query decode reference over a cache of L = context + 1 positions gives the same.
    const std::vector<double> dec = attention_decode_ref(B, L, H, D, Dv, q.data(), k_all.data(), v_all.data(), 0.0);
    CHECK(testutil::max_abs_diff(o, dec) < 1e-12);
  }
}

TEST_CASE("attention with context 0 is plain causal attention", "[reference][context]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  const int64_t B = 1, T = 9, H = 2, D = 8;
  std::vector<double> q(B * T * H * D), k(q.size()), v(q.size());
  for (auto* x : {&q, &k, &v})
    for (double& e : *x) e = n01(rng);
  const std::vector<double> a = attention_cache_ref(B, T, 0, H, D, D, q.data(), k.data(), v.data(), nullptr,
                                                    nullptr, 0.0, 2);
  const std::vector<double> b = attention_ref(B, T, H, D, D, q.data(), k.data(), v.data(), 0.0, true, 1);
  CHECK(testutil::max_abs_diff(a, b) == 0.0);
}

TEST_CASE("the runner's attention reference reads the KV cache", "[runner][context]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const Problem p = attention_problem(1, 1, 30, 2, 64, seed);
  HostInputs in = make_inputs(p);
  RefInputsF64 ref_in = to_f64(in);
  CHECK_THROWS(attention_reference_for(p, ref_in, 1));  // no cache generated yet
  add_kv_cache(p, in);
  const std::vector<double> o = attention_reference_for(p, ref_in, 2);
  const std::vector<double> q(in.q.begin(), in.q.end());
  const std::vector<double> k_all = concat_tokens(in.k_cache, 30, in.k, 1, 1, 2, 64);
  const std::vector<double> v_all = concat_tokens(in.v_cache, 30, in.v, 1, 1, 2, 64);
  const std::vector<double> dec = attention_decode_ref(1, 31, 2, 64, 64, q.data(), k_all.data(), v_all.data(),
                                                       p.resolved_scale());
  CHECK(testutil::max_abs_diff(o, dec) < 1e-12);
}

TEST_CASE("attention FLOPs and bytes count the cached positions", "[harness][context]") {
  Problem p = attention_problem(2, 100, 0, 4, 128, 1);
  const double flops0 = attention_flops(p), bytes0 = attention_min_bytes(p);
  CHECK(flops0 == 2.0 * 100 * 100 * 128 * 2 * 4);  // 2 T^2 D per head, B HV heads
  CHECK(bytes0 == 2.0 * 2 * 100 * 4 * (4 * 128));
  p.context = 1000;
  CHECK(attention_flops(p) == flops0 + 2.0 * 100 * 1000 * (128 + 128) * 2 * 4);
  CHECK(attention_min_bytes(p) == bytes0 + 2.0 * 2 * 4 * 1000 * (128 + 128));
  // Decode, B = 64, H = 32, D = 128, L = 8192: ~8.6 GB of K and V dominate.
  Problem d = attention_problem(64, 1, 8191, 32, 128, 1);
  CHECK(attention_min_bytes(d) == Approx(2.0 * 64 * 32 * 8192 * 256 + 2.0 * 64 * 32 * 256).epsilon(1e-12));
}

TEST_CASE("GDN variants ignore the context", "[runner][context]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  Problem p = attention_problem(1, 5, 0, 2, 64, seed);
  p.dtype = DType::f32;
  const VariantInfo* v = find_variant("cpu_recurrent");
  REQUIRE(v != nullptr);
  RunOptions opt;
  opt.cpu_threads = 2;
  const ResultRow plain = verify_single_case(Case{p, v, true}, opt, make_inputs(p));
  p.context = 5000;
  const HostInputs in = make_inputs(p);
  CHECK(in.k_cache.empty());  // GDN rows never pay for the cache
  const ResultRow with_context = verify_single_case(Case{p, v, true}, opt, in);
  CHECK(plain.status == Status::pass);
  CHECK(with_context.status == Status::pass);
  CHECK(with_context.o.rel_l2 == plain.o.rel_l2);
  CHECK(gdn_flops(p) == gdn_flops(attention_problem(1, 5, 0, 2, 64, seed)));
}

#ifdef GDNBENCH_HAVE_CUDA
TEST_CASE("the fused attention variants say why they cannot run a problem", "[context][skip]") {
  // These reasons come before any device query, so they hold without a GPU.
  Problem p = attention_problem(1, 64, 100, 2, 128, 1);
  const auto flash = attn_flash_unsupported(p);
  REQUIRE(flash);
  CHECK(flash->find("attn_decode") != std::string::npos);
  const auto naive = attn_naive_unsupported(p);
  REQUIRE(naive);
  CHECK(naive->find("context") != std::string::npos);
  const auto decode = attn_decode_unsupported(p);
  REQUIRE(decode);
  CHECK(decode->find("T = 1") != std::string::npos);

  p.context = 0;
  p.dtype = DType::f32;
  const auto flash32 = attn_flash_unsupported(p);
  REQUIRE(flash32);
  CHECK(flash32->find("fp32") != std::string::npos);
  p.dtype = DType::bf16;
  p.shape.K = p.shape.V = 96;
  const auto flash96 = attn_flash_unsupported(p);
  REQUIRE(flash96);
  CHECK(flash96->find("64, 128 or 256") != std::string::npos);
  p.shape.T = 1;
  p.shape.V = 128;
  const auto decode_kv = attn_decode_unsupported(p);
  REQUIRE(decode_kv);
  CHECK(decode_kv->find("K and V") != std::string::npos);
}

TEST_CASE("attn_decode splits the keys to fill the SMs, never below 256 keys a split", "[context][decode]") {
  CHECK(attn_decode_num_splits(64, 32, 8192, 132) == 3);
  CHECK(attn_decode_num_splits(1, 32, 131072, 132) == 132);
  CHECK(attn_decode_num_splits(1, 32, 8192, 132) == 32);   // 256 keys each
  CHECK(attn_decode_num_splits(1, 1, 1, 132) == 1);
  CHECK(attn_decode_num_splits(256, 32, 100000, 132) == 1);  // B H alone fills the GPU
  CHECK(attn_decode_num_splits(1, 1, 10000000, 132) == 1024);
  AttnDecodeParams dp;
  dp.B = 2;
  dp.H = 3;
  dp.D = 128;
  dp.num_splits = 1;
  CHECK(attn_decode_workspace_bytes(dp) == 0);
  dp.num_splits = 5;
  CHECK(attn_decode_workspace_bytes(dp) == size_t(2 * 3 * 5) * (128 * 4 + 8));
}
#endif
