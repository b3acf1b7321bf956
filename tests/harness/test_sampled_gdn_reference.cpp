// The sampled GDN reference (--gdn-ref): which (b, hv) heads it covers, that those heads equal the
// full reference's, that a verification compares o and hT on them only while every element must
// still be written and finite, where `auto` switches, the CSV column `ref_heads` and the option.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/metrics.h"
#include "harness/reference_sample.h"
#include "harness/runner.h"
#include "tests/common/test_util.h"

namespace {

bool holds(const std::vector<int64_t>& heads, int64_t h) {
  return std::binary_search(heads.begin(), heads.end(), h);
}

Problem gdn_problem(int64_t B, int64_t T, int64_t H, int64_t HV, int64_t K, int64_t V, uint64_t seed) {
  Problem p;
  p.shape = GdnShape{B, T, H, HV, K, V};
  p.dtype = DType::bf16;
  p.use_h0 = true;
  p.seed = seed;
  return p;
}

// cpu_recurrent with one element of its o or hT spoiled after the run, as the test asks.
enum class Spoil { none, wrong_value, unwritten, nan };
Spoil g_spoil = Spoil::none;
bool g_spoil_state = false;  // false: o, true: hT
int64_t g_spoil_index = 0;

class SpoiledRun final : public VariantRun {
 public:
  explicit SpoiledRun(std::unique_ptr<VariantRun> run) : run_(std::move(run)) {}
  void poison_outputs() override { run_->poison_outputs(); }
  void launch() override { run_->launch(); }
  RunOutputs read_outputs() override {
    RunOutputs out = run_->read_outputs();
    if (g_spoil == Spoil::none) return out;
    float& x = (g_spoil_state ? out.hT : out.o)[size_t(g_spoil_index)];
    if (g_spoil == Spoil::wrong_value) x += 1000.0f;
    if (g_spoil == Spoil::unwritten) x = poison_value_f32();
    if (g_spoil == Spoil::nan) x = std::numeric_limits<float>::quiet_NaN();
    return out;
  }

 private:
  std::unique_ptr<VariantRun> run_;
};

std::optional<std::string> runs_anything(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_spoiled(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<SpoiledRun>(find_variant("cpu_recurrent")->create(p, in, ctx));
}
const VariantInfo kSpoiledRecurrent = {
    "spoiled_cpu_recurrent", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0, "fp32 bf16 fp16", "any",
    runs_anything, create_spoiled, "test double"};

ResultRow run_one(const Problem& p, RefMode mode, int64_t sample_heads) {
  RunOptions opt;
  opt.cpu_threads = 2;
  opt.gdn_ref = mode;
  opt.gdn_sample_heads = sample_heads;
  const RunSummary sum = execute_cases({Case{p, &kSpoiledRecurrent, true}}, opt, [](const ResultRow&) {});
  REQUIRE(sum.rows.size() == 1);
  return sum.rows[0];
}

}  // namespace

TEST_CASE("the head sample holds the first and the last head, evenly spaced heads between",
          "[reference][sampled][gdn]") {
  const int64_t B = GENERATE(1, 3), HV = GENERATE(2, 7, 256);
  const int64_t max_heads = GENERATE(2, 5, 16);
  INFO("B " << B << " HV " << HV << " max_heads " << max_heads);
  const GdnShape s{B, 100, 1, HV, 64, 64};
  const std::vector<int64_t> heads = gdn_sample_heads(s, max_heads);
  const int64_t all = B * HV;
  CHECK(int64_t(heads.size()) == std::min(all, max_heads));
  CHECK(std::is_sorted(heads.begin(), heads.end()));
  CHECK(std::adjacent_find(heads.begin(), heads.end()) == heads.end());
  CHECK(heads.front() == 0);
  CHECK(heads.back() == all - 1);  // the highest offsets of o and hT
  // Evenly spaced: no gap more than one step wider than the even one.
  for (size_t r = 1; r < heads.size(); ++r)
    CHECK(heads[r] - heads[r - 1] <= (all - 1) / int64_t(heads.size() - 1) + 1);
  // Deterministic, and a function of the shape alone.
  CHECK(gdn_sample_heads(s, max_heads) == heads);
  const uint64_t seed = testutil::fresh_seed();
  Problem a = gdn_problem(B, 100, 1, HV, 64, 64, seed), b = a;
  b.seed = seed + 1;
  CHECK(gdn_ref_heads(a, RefMode::sampled, max_heads) == gdn_ref_heads(b, RefMode::sampled, max_heads));
}

TEST_CASE("the head sample stays within the work budget but never drops the first and last head",
          "[reference][sampled][gdn]") {
  // suites/large.ini: T=65537 K=64 V=128, 5.4e8 state updates a head: 7 heads of 256 fit 2^32.
  const GdnShape large{1, 65537, 2, 256, 64, 128};
  const std::vector<int64_t> heads = gdn_sample_heads(large);
  CHECK(heads == std::vector<int64_t>{0, 42, 85, 127, 170, 212, 255});
  CHECK(double(heads.size()) * 65537.0 * 64 * 128 < kGdnRefFullBudget);
  // The scaling suite's longest line, T=131072 K=V=128: one head is 2^31, two are the budget.
  CHECK(gdn_sample_heads(GdnShape{1, 131072, 32, 32, 128, 128}) == std::vector<int64_t>{0, 31});
  // Longer still: one head alone passes the budget, the two ends are kept anyway.
  CHECK(gdn_sample_heads(GdnShape{2, 1 << 22, 4, 4, 128, 128}) == std::vector<int64_t>{0, 7});
  // Small heads: at most kGdnSampleHeads of them.
  CHECK(gdn_sample_heads(GdnShape{4, 300, 2, 64, 64, 64}).size() == size_t(kGdnSampleHeads));
}

TEST_CASE("auto keeps every gate and default-suite case full and samples above the budget",
          "[reference][sampled][gdn][suites]") {
  // B=1 H=32 K=V=128 (the scaling suite): the budget, B HV T K V = 2^32, is reached at T = 8192.
  const Problem under = gdn_problem(1, 8191, 32, 32, 128, 128, 1);
  const Problem over = gdn_problem(1, 8192, 32, 32, 128, 128, 1);
  REQUIRE(gdn_ref_work(under) < kGdnRefFullBudget);
  REQUIRE(gdn_ref_work(over) >= kGdnRefFullBudget);
  CHECK(gdn_ref_heads(under, RefMode::automatic).empty());
  CHECK(gdn_ref_heads(over, RefMode::automatic) == gdn_sample_heads(over.shape));
  CHECK(gdn_ref_heads(over, RefMode::automatic).size() == size_t(kGdnSampleHeads));
  CHECK(gdn_ref_heads(over, RefMode::full).empty());
  CHECK(gdn_ref_heads(under, RefMode::sampled) == gdn_sample_heads(under.shape));
  // A sample that would hold every head is the full reference, whatever the mode: one head, or
  // few heads of which the budget affords all.
  CHECK(gdn_ref_heads(gdn_problem(1, 1 << 20, 1, 1, 128, 128, 1), RefMode::sampled).empty());
  CHECK(gdn_ref_heads(gdn_problem(1, 1 << 16, 4, 4, 128, 128, 1), RefMode::automatic).empty());

  bool any_cuda = false;  // the front-end and attention lines of the gate need GPU variants to expand
  for (const VariantInfo& v : variant_registry()) any_cuda = any_cuda || v.backend == Backend::cuda;
  for (const char* suite : {"gate", "default"}) {
    INFO("suite " << suite);
    const std::string path = std::string(GDNBENCH_SOURCE_DIR) + "/suites/" + suite + ".ini";
    const Invocation inv = parse_invocation({"verify", "--suite", path, "--gdn-ref", "auto"}, any_cuda);
    REQUIRE(!inv.cases.empty());
    for (const Case& c : inv.cases) {
      INFO(c.variant->name << " B=" << c.problem.shape.B << " T=" << c.problem.shape.T
                           << " HV=" << c.problem.shape.HV << " K=" << c.problem.shape.K);
      CHECK(gdn_ref_heads(c.problem, RefMode::automatic).empty());
    }
  }
}

TEST_CASE("the reference over a subset of heads equals the full reference on those heads",
          "[reference][sampled][gdn]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const bool frontend = GENERATE(false, true);
  INFO("frontend " << frontend);
  Problem p = gdn_problem(2, 37, 2, 6, 16, 8, seed);
  p.frontend = frontend;
  const GdnShape& s = p.shape;
  const RefInputsF64 in = to_f64(make_inputs(p));
  const GdnRefOutputs full = gdn_reference_for(p, in, 2);
  const std::vector<int64_t> heads = {0, 4, 7, 11};
  const GdnRefOutputs part = gdn_reference_for(p, in, 3, heads);
  CHECK(part.heads == heads);
  REQUIRE(part.o.size() == heads.size() * size_t(s.T * s.V));
  REQUIRE(part.hT.size() == heads.size() * size_t(s.K * s.V));
  std::vector<double> o_picked, ht_picked;
  for (int64_t h : heads) {
    const int64_t b = h / s.HV, hv = h % s.HV;
    for (int64_t t = 0; t < s.T; ++t) {
      const auto at = full.o.begin() + ((b * s.T + t) * s.HV + hv) * s.V;
      o_picked.insert(o_picked.end(), at, at + s.V);
    }
    const auto at = full.hT.begin() + h * s.K * s.V;
    ht_picked.insert(ht_picked.end(), at, at + s.K * s.V);
  }
  CHECK(testutil::max_abs_diff(part.o, o_picked) == 0.0);  // the same code path: bit for bit
  CHECK(testutil::max_abs_diff(part.hT, ht_picked) == 0.0);
  CHECK(part.conv_cache == full.conv_cache);  // the front end runs in full
  CHECK_THROWS(gdn_reference_for(p, in, 1, {4, 0}));
  CHECK_THROWS(gdn_reference_for(p, in, 1, {s.B * s.HV}));
}

TEST_CASE("metrics over selected heads: errors on those heads, writes and finiteness everywhere",
          "[harness][metrics][sampled][gdn]") {
  // [B 2, T 3, HV 2, row_len 2]; the reference covers flat heads 1 (b 0, hv 1) and 2 (b 1, hv 0).
  const HeadSelection sel{2, 3, 2, 2, {1, 2}};
  std::vector<float> got(24);
  for (size_t i = 0; i < got.size(); ++i) got[i] = float(i % 5) + 0.25f;
  std::vector<double> ref;
  std::vector<float> got_sub;
  for (int64_t h : {1, 2})
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t c = 0; c < 2; ++c) {
        const size_t i = size_t((((h / 2) * 3 + t) * 2 + h % 2) * 2 + c);
        ref.push_back(double(got[i]) + 0.01 * double(t + c + 1) * (h == 2 ? 10.0 : 1.0));
        got_sub.push_back(got[i]);
      }
  const TensorMetrics m = compare_to_reference(got, ref, DType::f32, sel);
  const TensorMetrics plain = compare_to_reference(got_sub, ref, DType::f32);
  CHECK(m.rel_l2 == plain.rel_l2);
  CHECK(m.max_abs == plain.max_abs);
  CHECK(m.floor_rel_l2 == plain.floor_rel_l2);
  CHECK(m.worst_index == ((1 * 3 + 2) * 2 + 0) * 2 + 1);  // head 2, t 2, c 1: an index into got
  CHECK(m.finite_ok());

  std::vector<float> bad = got;
  bad[size_t(((0 * 3 + 1) * 2 + 0) * 2 + 1)] = poison_value_f32();  // head 0: no reference there
  bad[size_t(((1 * 3 + 2) * 2 + 1) * 2 + 0)] = std::numeric_limits<float>::infinity();  // head 3
  const TensorMetrics mb = compare_to_reference(bad, ref, DType::f32, sel);
  CHECK(mb.unwritten == 1);
  CHECK(mb.nan_count == 1);
  CHECK_FALSE(mb.finite_ok());

  CHECK_THROWS(compare_to_reference(got, ref, DType::f32, HeadSelection{2, 3, 2, 2, {2, 1}}));
  CHECK_THROWS(compare_to_reference(got, ref, DType::f32, HeadSelection{2, 3, 2, 2, {1, 4}}));
  CHECK_THROWS(compare_to_reference(got, ref, DType::f32, HeadSelection{2, 3, 2, 2, {1}}));
}

TEST_CASE("a sampled GDN verification fails a wrong sampled head and an unwritten or NaN element anywhere",
          "[harness][runner][sampled][gdn]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  // 2 x 8 heads, grouped value heads; a sample of 4: flat heads 0, 5, 10, 15.
  const Problem p = gdn_problem(2, 70, 2, 8, 32, 16, seed);
  const GdnShape& s = p.shape;
  const int64_t sample_heads = 4;
  const std::vector<int64_t> heads = gdn_ref_heads(p, RefMode::sampled, sample_heads);
  REQUIRE(heads == std::vector<int64_t>{0, 5, 10, 15});
  const auto o_index = [&](int64_t b, int64_t t, int64_t hv, int64_t j) {
    return ((b * s.T + t) * s.HV + hv) * s.V + j;
  };
  const auto ht_index = [&](int64_t b, int64_t hv, int64_t i, int64_t j) {
    return ((b * s.HV + hv) * s.K + i) * s.V + j;
  };
  g_spoil = Spoil::none;
  g_spoil_state = false;

  SECTION("a correct kernel passes with metrics close to the full reference's") {
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    const ResultRow f = run_one(p, RefMode::full, sample_heads);
    REQUIRE(r.status == Status::pass);
    REQUIRE(f.status == Status::pass);
    CHECK(r.ref_heads == 4);
    CHECK(r.ref_rows == s.T);
    CHECK(f.ref_heads == s.B * s.HV);
    CHECK(f.ref_rows == s.T);
    // A subset: the largest error cannot exceed the full one, and the relative errors agree in size.
    CHECK(r.o.max_abs <= f.o.max_abs);
    CHECK(r.ht.max_abs <= f.ht.max_abs);
    CHECK(r.o.rel_l2 > 0.0);
    CHECK(r.o.rel_l2 == Approx(f.o.rel_l2).epsilon(0.5));
    CHECK(r.ht.rel_l2 == Approx(f.ht.rel_l2).epsilon(0.5));
    CHECK(r.o.floor_rel_l2 == Approx(f.o.floor_rel_l2).epsilon(0.5));
    CHECK(r.o.err_vs_floor == Approx(f.o.err_vs_floor).epsilon(0.5));
    // The worst element lies in a sampled head.
    const int64_t worst_head = (r.o.worst_index / (s.T * s.HV * s.V)) * s.HV + (r.o.worst_index / s.V) % s.HV;
    CHECK(holds(heads, worst_head));
  }
  SECTION("a wrong value in the last head fails") {
    g_spoil = Spoil::wrong_value;
    g_spoil_index = o_index(1, 40, 7, 3);
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    CHECK(r.status == Status::fail);
    CHECK(r.reason.find("o rel_l2") != std::string::npos);
    CHECK(r.o.worst_index == g_spoil_index);
  }
  SECTION("a wrong state value in a sampled head fails") {
    g_spoil = Spoil::wrong_value;
    g_spoil_state = true;
    g_spoil_index = ht_index(0, 5, 7, 2);
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    CHECK(r.status == Status::fail);
    CHECK(r.reason.find("hT rel_l2") != std::string::npos);
    CHECK(r.ht.worst_index == g_spoil_index);
  }
  SECTION("a NaN in o of an unsampled head fails") {
    g_spoil = Spoil::nan;
    g_spoil_index = o_index(0, 69, 1, 0);
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    CHECK(r.status == Status::fail);
    CHECK(r.o.nan_count == 1);
  }
  SECTION("an unwritten element of o in an unsampled head fails") {
    g_spoil = Spoil::unwritten;
    g_spoil_index = o_index(1, 0, 6, 15);
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    CHECK(r.status == Status::fail);
    CHECK(r.o.unwritten == 1);
    CHECK(r.reason.find("unwritten") != std::string::npos);
  }
  SECTION("an unwritten state element in an unsampled head fails") {
    g_spoil = Spoil::unwritten;
    g_spoil_state = true;
    g_spoil_index = ht_index(1, 3, 31, 15);
    const ResultRow r = run_one(p, RefMode::sampled, sample_heads);
    CHECK(r.status == Status::fail);
    CHECK(r.ht.unwritten == 1);
  }
  SECTION("a finite wrong value in an unsampled head is what only the full reference sees") {
    g_spoil = Spoil::wrong_value;
    g_spoil_index = o_index(0, 10, 2, 4);
    CHECK(run_one(p, RefMode::sampled, sample_heads).status == Status::pass);
    CHECK(run_one(p, RefMode::full, sample_heads).status == Status::fail);
  }
  g_spoil = Spoil::none;
  g_spoil_state = false;
}

TEST_CASE("the CSV records the referenced heads in ref_heads", "[harness][csv][sampled][gdn]") {
  const std::vector<std::string> cols = csv_columns();
  const auto at = std::find(cols.begin(), cols.end(), "ref_heads");
  REQUIRE(at != cols.end());
  const size_t i = size_t(at - cols.begin());
  const size_t rows_col = size_t(std::find(cols.begin(), cols.end(), "ref_rows") - cols.begin());
  RunMeta meta;
  ResultRow skipped;
  skipped.problem = gdn_problem(1, 100, 2, 2, 64, 64, 1);
  CHECK(csv_row_fields(meta, skipped)[i] == "");  // not verified

  g_spoil = Spoil::none;
  const Problem p = gdn_problem(1, 50, 2, 6, 16, 16, testutil::fresh_seed());
  const ResultRow sampled = run_one(p, RefMode::sampled, 3);
  CHECK(csv_row_fields(meta, sampled)[i] == "3");
  CHECK(csv_row_fields(meta, sampled)[rows_col] == "50");
  const ResultRow full = run_one(p, RefMode::automatic, 3);
  CHECK(csv_row_fields(meta, full)[i] == "6");
  CHECK(csv_row_fields(meta, full)[rows_col] == "50");
}

// The option itself: tests/harness/test_sampled_reference.cpp, with --attention-ref.
TEST_CASE("the gate verifies against full references, the large suite against sampled ones",
          "[cli][sampled][gdn]") {
  const std::string suites = std::string(GDNBENCH_SOURCE_DIR) + "/suites/";
  const Invocation gate = parse_invocation({"verify", "--suite", suites + "gate.ini"}, false);
  CHECK(gate.gdn_ref == RefMode::full);
  CHECK(gate.attention_ref == RefMode::full);
  bool any_cuda = false;  // suites/large.ini names GPU variants
  for (const VariantInfo& v : variant_registry()) any_cuda = any_cuda || v.backend == Backend::cuda;
  if (any_cuda) {
    const Invocation large = parse_invocation({"verify", "--suite", suites + "large.ini"}, true);
    CHECK(large.gdn_ref == RefMode::sampled);
  }
}
