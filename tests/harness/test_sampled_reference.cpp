// The sampled attention reference (--attention-ref): which query rows it covers, that those rows
// equal the full reference's, that the metrics compare only them while every element must still
// be written and finite, the CSV column `ref_rows`, the CLI option and where `auto` switches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "harness/reference_sample.h"
#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/metrics.h"
#include "harness/runner.h"
#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"

namespace {

bool holds(const std::vector<int64_t>& rows, int64_t t) { return std::binary_search(rows.begin(), rows.end(), t); }

Problem attention_problem(int64_t B, int64_t T, int64_t H, int64_t D, uint64_t seed) {
  Problem p;
  p.shape = GdnShape{B, T, H, H, D, D};
  p.dtype = DType::bf16;
  p.seed = seed;
  return p;
}

// A CPU stand-in for an attention kernel: it writes the float64 answer rounded to the dtype (an
// ideal kernel), then spoils one element as the test asks.
enum class Spoil { none, wrong_value, unwritten, nan };
Spoil g_spoil = Spoil::none;
int64_t g_spoil_index = 0;

class IdealAttentionRun final : public VariantRun {
 public:
  IdealAttentionRun(const Problem& p, const HostInputs& in) : o_(size_t(p.shape.v_elems())) {
    const std::vector<double> ref = attention_reference_for(p, to_f64(in), 2);
    for (size_t i = 0; i < ref.size(); ++i) ideal_.push_back(round_to(p.dtype, float(ref[i])));
  }
  void poison_outputs() override { std::fill(o_.begin(), o_.end(), poison_value_f32()); }
  void launch() override {
    o_ = ideal_;
    if (g_spoil == Spoil::none) return;
    float& x = o_[size_t(g_spoil_index)];
    if (g_spoil == Spoil::wrong_value) x += 1000.0f;
    if (g_spoil == Spoil::unwritten) x = poison_value_f32();
    if (g_spoil == Spoil::nan) x = std::numeric_limits<float>::quiet_NaN();
  }
  RunOutputs read_outputs() override { return {o_, {}}; }

 private:
  std::vector<float> ideal_, o_;
};

std::optional<std::string> runs_anything(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_ideal(const Problem& p, const HostInputs& in, const RunContext&) {
  return std::make_unique<IdealAttentionRun>(p, in);
}
const VariantInfo kIdealAttention = {"ideal_attention", Family::attention, Backend::cpu, Precision::tensor_core,
                                     false, 0, "bf16", "any", runs_anything, create_ideal, "test double"};

ResultRow run_one(const Problem& p, RefMode mode, int64_t sample_rows) {
  RunOptions opt;
  opt.cpu_threads = 2;
  opt.attention_ref = mode;
  opt.attention_sample_rows = sample_rows;
  const RunSummary sum = execute_cases({Case{p, &kIdealAttention, true}}, opt, [](const ResultRow&) {});
  REQUIRE(sum.rows.size() == 1);
  return sum.rows[0];
}

}  // namespace

TEST_CASE("the sample holds the first and last rows and the rows around tile edges, within its budget",
          "[reference][sampled]") {
  const int64_t T = GENERATE(513, 1000, 4097, 16384, 65536, 100003);
  INFO("T " << T);
  const std::vector<int64_t> rows = attention_sample_rows(T, 512);
  CHECK(rows.size() <= 512);
  CHECK(rows.size() >= 400);  // the budget is used, not left idle
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end());
  CHECK(rows.front() == 0);
  CHECK(rows.back() == T - 1);
  for (int64_t t = 0; t < 64; ++t) {
    CHECK(holds(rows, t));          // the start: few keys, the first tile
    CHECK(holds(rows, T - 1 - t));  // the tail tile and the diagonal at the longest rows
  }
  // The rows around the last tile edges (the latest 16 boundaries of 64), where a tail tile of
  // the query or key loop begins or ends.
  const int64_t last = (T - 1) / 64;
  for (int64_t k = last; k > std::max<int64_t>(0, last - 16); --k)
    for (int64_t t : {k * 64 - 1, k * 64, k * 64 + 1})
      if (t < T) CHECK(holds(rows, t));
  // Tile edges spread over the whole sequence, and strided rows in every eighth of it.
  int64_t edges_early = 0;
  for (int64_t k = 1; k <= last / 2; ++k) edges_early += holds(rows, k * 64) && holds(rows, k * 64 - 1);
  CHECK(edges_early >= std::min<int64_t>(8, last / 2));
  for (int64_t e = 0; e < 8; ++e) {
    const auto lo = std::lower_bound(rows.begin(), rows.end(), e * T / 8);
    CHECK((lo != rows.end() && *lo < (e + 1) * T / 8));
  }
  // The late rows cost the reference most and carry the most error: the sample leans to them.
  if (T >= 4096) {  // (shorter: nearly every row is taken anyway)
    const auto late = std::count_if(rows.begin(), rows.end(), [&](int64_t t) { return t >= T / 2; });
    CHECK(late > int64_t(rows.size()) / 2);
  }
}

TEST_CASE("the sample depends on T and the budget only", "[reference][sampled]") {
  CHECK(attention_sample_rows(5000, 512) == attention_sample_rows(5000, 512));
  CHECK(attention_sample_rows(5000, 512) != attention_sample_rows(5001, 512));
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const Problem a = attention_problem(1, 3000, 2, 64, seed), b = attention_problem(1, 3000, 2, 64, seed + 1);
  CHECK(attention_ref_rows(a, RefMode::sampled) == attention_ref_rows(b, RefMode::sampled));
  CHECK(attention_ref_rows(a, RefMode::sampled) == attention_sample_rows(3000));

  // Up to the budget, every row: the sample is the full reference.
  std::vector<int64_t> all(300);
  for (int64_t t = 0; t < 300; ++t) all[size_t(t)] = t;
  CHECK(attention_sample_rows(300, 300) == all);
  CHECK(attention_ref_rows(attention_problem(1, 300, 2, 64, seed), RefMode::sampled, 300).empty());
  // Decode against a KV cache is one query row: always full.
  Problem decode = attention_problem(4, 1, 32, 128, seed);
  decode.context = 1 << 20;
  CHECK(attention_ref_rows(decode, RefMode::sampled).empty());
  CHECK(attention_ref_rows(decode, RefMode::automatic).empty());
}

TEST_CASE("auto is full under the work budget and sampled from it on", "[reference][sampled]") {
  // B=1 H=32 D=128: B H T^2 D multiply-adds.
  CHECK(attention_ref_work(attention_problem(1, 8192, 32, 128, 1)) == 32.0 * 8192 * 8192 * 128);
  // One head of D = 64: the budget is reached at T^2 64 = kAttentionRefFullBudget.
  const int64_t at = int64_t(std::ceil(std::sqrt(kAttentionRefFullBudget / 64.0)));
  const Problem under = attention_problem(1, at - 1, 1, 64, 1), over = attention_problem(1, at, 1, 64, 1);
  REQUIRE(attention_ref_work(under) < kAttentionRefFullBudget);
  REQUIRE(attention_ref_work(over) >= kAttentionRefFullBudget);
  CHECK(attention_ref_rows(under, RefMode::automatic).empty());
  CHECK(attention_ref_rows(over, RefMode::automatic) == attention_sample_rows(at));
  // The modes that do not look at the cost.
  CHECK(attention_ref_rows(over, RefMode::full).empty());
  CHECK(attention_ref_rows(attention_problem(1, 1000, 1, 64, 1), RefMode::sampled).size() <= 512);
  CHECK_FALSE(attention_ref_rows(attention_problem(1, 1000, 1, 64, 1), RefMode::sampled).empty());
  // The CPU gate's largest attention-eligible problem (T = 65536, one head) is far over the budget;
  // its small ones (T <= 1000, H = 2, D = 128) stay full.
  CHECK(attention_ref_rows(attention_problem(1, 1000, 2, 128, 1), RefMode::automatic).empty());
}

TEST_CASE("the sampled reference equals the full reference on its rows", "[reference][sampled]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const int64_t B = 2, T = 200, H = 3, D = 16, Dv = 8;
  const int64_t context = GENERATE(0, 7);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  auto draw = [&](int64_t n) {
    std::vector<double> x(static_cast<size_t>(n));
    for (double& e : x) e = n01(rng);
    return x;
  };
  const std::vector<double> q = draw(B * T * H * D), k = draw(B * T * H * D), v = draw(B * T * H * Dv);
  std::vector<float> kc(size_t(B * context * H * D)), vc(size_t(B * context * H * Dv));
  for (float& e : kc) e = float(n01(rng));
  for (float& e : vc) e = float(n01(rng));
  const std::vector<double> full =
      context == 0 ? attention_ref(B, T, H, D, Dv, q.data(), k.data(), v.data(), 0.0, true, 2)
                   : attention_cache_ref(B, T, context, H, D, Dv, q.data(), k.data(), v.data(), kc.data(),
                                         vc.data(), 0.0, 2);
  const std::vector<int64_t> rows = attention_sample_rows(T, 64);
  REQUIRE(rows.size() < size_t(T));
  const std::vector<double> part = attention_cache_rows_ref(B, T, context, H, D, Dv, q.data(), k.data(), v.data(),
                                                            kc.data(), vc.data(), 0.0, rows, 3);
  REQUIRE(part.size() == size_t(B) * rows.size() * H * Dv);
  std::vector<double> picked;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t : rows)
      picked.insert(picked.end(), full.begin() + ((b * T + t) * H) * Dv, full.begin() + ((b * T + t + 1) * H) * Dv);
  CHECK(testutil::max_abs_diff(part, picked) == 0.0);  // the same code path: bit for bit

  CHECK_THROWS(attention_cache_rows_ref(B, T, context, H, D, Dv, q.data(), k.data(), v.data(), kc.data(),
                                        vc.data(), 0.0, {5, 3}, 1));
  CHECK_THROWS(attention_cache_rows_ref(B, T, context, H, D, Dv, q.data(), k.data(), v.data(), kc.data(),
                                        vc.data(), 0.0, {T}, 1));
}

TEST_CASE("metrics over selected rows: errors on those rows, writes and finiteness everywhere",
          "[harness][metrics][sampled]") {
  // [outer 2, rows 5, row_len 3]; the reference covers rows 1 and 4.
  const RowSelection sel{2, 5, 3, {1, 4}};
  std::vector<float> got(30);
  for (size_t i = 0; i < got.size(); ++i) got[i] = float(i % 7) + 0.5f;
  std::vector<double> ref, got_sub_d;
  std::vector<float> got_sub;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t : {1, 4})
      for (int64_t c = 0; c < 3; ++c) {
        const size_t i = size_t((b * 5 + t) * 3 + c);
        ref.push_back(double(got[i]) + 0.01 * double(c + 1) * (b == 1 && t == 4 ? 10.0 : 1.0));
        got_sub.push_back(got[i]);
      }
  const TensorMetrics m = compare_to_reference(got, ref, DType::f32, sel);
  const TensorMetrics plain = compare_to_reference(got_sub, ref, DType::f32);
  CHECK(m.present);
  CHECK(m.rel_l2 == plain.rel_l2);
  CHECK(m.max_abs == plain.max_abs);
  CHECK(m.floor_rel_l2 == plain.floor_rel_l2);
  CHECK(m.err_vs_floor == plain.err_vs_floor);
  CHECK(m.worst_index == (1 * 5 + 4) * 3 + 2);  // into got, not into the sample
  CHECK(m.finite_ok());

  std::vector<float> bad = got;
  bad[size_t((0 * 5 + 2) * 3 + 1)] = poison_value_f32();  // row 2: no reference there
  bad[size_t((1 * 5 + 0) * 3 + 0)] = std::numeric_limits<float>::infinity();  // row 0
  const TensorMetrics mb = compare_to_reference(bad, ref, DType::f32, sel);
  CHECK(mb.unwritten == 1);
  CHECK(mb.nan_count == 1);
  CHECK_FALSE(mb.finite_ok());
  CHECK(std::isinf(mb.rel_l2));

  // Every row selected: the same verdict as the plain comparison.
  std::vector<double> whole(30);
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = double(got[i]) * (1.0 + 1e-3 * double(i % 3));
  const TensorMetrics all = compare_to_reference(got, whole, DType::bf16, RowSelection{2, 5, 3, {0, 1, 2, 3, 4}});
  const TensorMetrics direct = compare_to_reference(got, whole, DType::bf16);
  CHECK(all.rel_l2 == direct.rel_l2);
  CHECK(all.worst_index == direct.worst_index);
  CHECK(all.floor_rel_l2 == direct.floor_rel_l2);

  CHECK_THROWS(compare_to_reference(got, ref, DType::f32, RowSelection{2, 5, 3, {4, 1}}));
  CHECK_THROWS(compare_to_reference(got, ref, DType::f32, RowSelection{2, 5, 3, {1, 5}}));
  CHECK_THROWS(compare_to_reference(got, ref, DType::f32, RowSelection{2, 5, 4, {1, 4}}));
}

TEST_CASE("a sampled verification fails a wrong sampled row and an unwritten element anywhere",
          "[harness][runner][sampled]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const Problem p = attention_problem(2, 300, 2, 64, seed);
  const int64_t sample_rows = 96;
  const std::vector<int64_t> rows = attention_sample_rows(p.shape.T, sample_rows);
  REQUIRE(rows.size() < size_t(p.shape.T));
  int64_t unsampled = 0;
  while (holds(rows, unsampled)) ++unsampled;
  const int64_t row_len = p.shape.HV * p.shape.V;
  // An element of batch 1, head 1, in the last row (sampled) and in an unsampled row.
  const int64_t on_sampled = ((1 * p.shape.T + (p.shape.T - 1)) * p.shape.HV + 1) * p.shape.V + 5;
  const int64_t off_sample = (1 * p.shape.T + unsampled) * row_len + 70;

  SECTION("an ideal kernel passes, on the sampled rows") {
    g_spoil = Spoil::none;
    const ResultRow r = run_one(p, RefMode::sampled, sample_rows);
    CHECK(r.status == Status::pass);
    CHECK(r.ref_rows == int64_t(rows.size()));
    CHECK(r.o.err_vs_floor == Approx(1.0).margin(1e-9));  // it writes the rounded reference
    const ResultRow f = run_one(p, RefMode::full, sample_rows);
    CHECK(f.status == Status::pass);
    CHECK(f.ref_rows == p.shape.T);
  }
  SECTION("after a KV cache too") {
    g_spoil = Spoil::none;
    Problem pc = p;
    pc.context = 40;
    const ResultRow r = run_one(pc, RefMode::sampled, sample_rows);
    CHECK(r.status == Status::pass);
    CHECK(r.ref_rows == int64_t(rows.size()));
    CHECK(r.o.err_vs_floor == Approx(1.0).margin(1e-9));
  }
  SECTION("a wrong value on a sampled row fails") {
    g_spoil = Spoil::wrong_value;
    g_spoil_index = on_sampled;
    const ResultRow r = run_one(p, RefMode::sampled, sample_rows);
    CHECK(r.status == Status::fail);
    CHECK(r.reason.find("rel_l2") != std::string::npos);
    CHECK(r.o.worst_index == on_sampled);
  }
  SECTION("an unwritten element on an unsampled row fails") {
    g_spoil = Spoil::unwritten;
    g_spoil_index = off_sample;
    const ResultRow r = run_one(p, RefMode::sampled, sample_rows);
    CHECK(r.status == Status::fail);
    CHECK(r.o.unwritten == 1);
    CHECK(r.reason.find("unwritten") != std::string::npos);
  }
  SECTION("a NaN on an unsampled row fails") {
    g_spoil = Spoil::nan;
    g_spoil_index = off_sample;
    const ResultRow r = run_one(p, RefMode::sampled, sample_rows);
    CHECK(r.status == Status::fail);
    CHECK(r.o.nan_count == 1);
  }
  SECTION("a finite wrong value on an unsampled row is what only the full reference sees") {
    g_spoil = Spoil::wrong_value;
    g_spoil_index = off_sample;
    CHECK(run_one(p, RefMode::sampled, sample_rows).status == Status::pass);
    CHECK(run_one(p, RefMode::full, sample_rows).status == Status::fail);
  }
  g_spoil = Spoil::none;
}

TEST_CASE("the CSV records the verified rows in ref_rows", "[harness][csv][sampled]") {
  const std::vector<std::string> cols = csv_columns();
  const auto at = std::find(cols.begin(), cols.end(), "ref_rows");
  REQUIRE(at != cols.end());
  const size_t i = size_t(at - cols.begin());
  RunMeta meta;
  ResultRow row;
  row.problem = attention_problem(1, 70000, 32, 128, 1);
  CHECK(csv_row_fields(meta, row)[i] == "");  // not verified (SKIPPED)
  row.o.present = true;
  row.ref_rows = 512;
  CHECK(csv_row_fields(meta, row)[i] == "512");

  g_spoil = Spoil::none;
  const ResultRow ran =
      run_one(attention_problem(1, 200, 2, 64, testutil::fresh_seed()), RefMode::sampled, 64);
  CHECK(csv_row_fields(meta, ran)[i] == std::to_string(attention_sample_rows(200, 64).size()));
  const ResultRow full =
      run_one(attention_problem(1, 200, 2, 64, testutil::fresh_seed()), RefMode::automatic, 64);
  CHECK(csv_row_fields(meta, full)[i] == "200");
}

TEST_CASE("--attention-ref and --gdn-ref take full, sampled or auto (the default)", "[cli][sampled]") {
  const std::string flag = GENERATE("attention-ref", "gdn-ref");
  const auto mode = [&](const Invocation& inv) { return flag == "gdn-ref" ? inv.gdn_ref : inv.attention_ref; };
  testutil::TempDir dir;
  const std::string suite = dir.file("suite.ini");
  testutil::write_text(suite, "");
  auto parse = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"verify", "--suite", suite, "--variants", "cpu_recurrent"};
    args.insert(args.end(), extra.begin(), extra.end());
    return mode(parse_invocation(args, false));
  };
  INFO("--" << flag);
  CHECK(parse({}) == RefMode::automatic);
  CHECK(parse({"--" + flag, "full"}) == RefMode::full);
  CHECK(parse({"--" + flag, "sampled"}) == RefMode::sampled);
  CHECK(parse({"--" + flag, "auto"}) == RefMode::automatic);
  CHECK_THROWS_AS(parse({"--" + flag, "some"}), UsageError);
  testutil::write_text(suite, flag + " = sampled\n");
  CHECK(parse({}) == RefMode::sampled);
  CHECK(parse({"--" + flag, "full"}) == RefMode::full);  // the command line wins
}
