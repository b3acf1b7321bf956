// The one-device sequence split (--segments, harness/segments.h): where the segments lie, the
// exchange against a float64 composition, and the CPU variants split into 2, 3 and 4 segments
// judged as the whole runs are (R dividing the chunks and not, segments dropped when empty).
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "harness/io/csv.h"
#include "harness/runner.h"
#include "harness/segments.h"
#include "harness/skip.h"
#include "tests/common/test_util.h"

TEST_CASE("segments lie on chunk boundaries, the empty ones dropped", "[harness][segments]") {
  CHECK(segment_offsets(300, 3, 64) == std::vector<int64_t>{0, 128, 256, 300});  // 5 chunks: 2 + 2 + 1
  CHECK(segment_offsets(640, 4, 64) == std::vector<int64_t>{0, 192, 384, 576, 640});
  CHECK(segment_offsets(256, 4, 64) == std::vector<int64_t>{0, 64, 128, 192, 256});
  CHECK(segment_offsets(65, 3, 64) == std::vector<int64_t>{0, 64, 65});  // 2 chunks: 2 segments
  CHECK(segment_offsets(1, 4, 64) == std::vector<int64_t>{0, 1});
  CHECK(segment_offsets(300, 1, 16) == std::vector<int64_t>{0, 300});
  CHECK(segment_offsets(300, 2, 16) == std::vector<int64_t>{0, 160, 300});  // 19 chunks of 16: 10 + 9
  CHECK_THROWS(segment_offsets(0, 2, 64));
}

TEST_CASE("the exchange composes S_{r+1} = A_r S_r + B_r from h0", "[harness][segments]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int64_t rows = 2, segs = 3, HV = 2, K = 5, V = 3;
  std::vector<float> A(size_t(rows * segs * HV * K * K)), B(size_t(rows * segs * HV * K * V)), h0(size_t(rows * HV * K * V));
  for (auto* x : {&A, &B, &h0}) for (float& e : *x) e = n(rng) * 0.5f;
  for (bool with_h0 : {true, false}) {
    std::vector<float> final;
    const std::vector<float> entry =
        segment_entry_states(rows, segs, HV, K, V, A.data(), B.data(), with_h0 ? h0.data() : nullptr, &final);
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t h = 0; h < HV; ++h) {
        std::vector<double> S(size_t(K * V), 0.0);
        if (with_h0) for (int64_t i = 0; i < K * V; ++i) S[size_t(i)] = h0[size_t((b * HV + h) * K * V + i)];
        for (int64_t r = 0; r < segs; ++r) {
          const int64_t seg = (b * segs + r) * HV + h;
          for (int64_t i = 0; i < K * V; ++i) CHECK(entry[size_t(seg * K * V + i)] == Approx(S[size_t(i)]).margin(1e-5));
          std::vector<double> next(size_t(K * V));
          for (int64_t i = 0; i < K; ++i)
            for (int64_t x = 0; x < V; ++x) {
              double acc = B[size_t(seg * K * V + i * V + x)];
              for (int64_t m = 0; m < K; ++m) acc += double(A[size_t(seg * K * K + i * K + m)]) * S[size_t(m * V + x)];
              next[size_t(i * V + x)] = acc;
            }
          S = next;
        }
        for (int64_t i = 0; i < K * V; ++i) CHECK(final[size_t((b * HV + h) * K * V + i)] == Approx(S[size_t(i)]).margin(1e-5));
      }
  }
}

namespace {
Problem split_problem(int64_t T, int64_t segments, bool h0, uint64_t seed) {
  Problem p;
  p.shape = GdnShape{2, T, 2, 4, 32, 16};
  p.dtype = DType::f32;
  p.use_h0 = h0;
  p.segments = segments;
  p.seed = seed;
  return p;
}
}  // namespace

TEST_CASE("the CPU variants split into segments pass as the whole runs do", "[harness][segments]") {
  const uint64_t seed = testutil::fresh_seed();
  const char* variant = GENERATE("cpu_recurrent", "cpu_chunked");
  const int64_t T = GENERATE(1, 65, 300);
  const int64_t R = GENERATE(2, 3, 4);
  const bool h0 = GENERATE(true, false);
  INFO("seed " << seed << " " << variant << " T " << T << " R " << R << " h0 " << h0);
  RunOptions opt;
  opt.cpu_threads = 2;
  const Problem whole = split_problem(T, 1, h0, seed), split = split_problem(T, R, h0, seed);
  const RunSummary sum = execute_cases({Case{whole, find_variant(variant), true}, Case{split, find_variant(variant), true}},
                                       opt, [](const ResultRow&) {});
  REQUIRE(sum.rows.size() == 2);
  const ResultRow& w = sum.rows[0];
  const ResultRow& s = sum.rows[1];
  INFO(s.reason);
  REQUIRE(s.status == Status::pass);
  CHECK(w.status == Status::pass);
  CHECK(s.plan.find("(" + std::to_string(R) + " segments)") != std::string::npos);
  const std::vector<std::string> cols = csv_columns();
  const size_t forced = size_t(std::find(cols.begin(), cols.end(), "plan_forced") - cols.begin());
  CHECK(csv_row_fields(RunMeta{}, s)[forced] == "segments=" + std::to_string(R));
  // float32 through one more product a segment: the same error as the whole run, within float32's.
  CHECK(s.o.rel_l2 < 2e-6);
  CHECK(s.ht.rel_l2 < 2e-6);
}

TEST_CASE("a split the variant or the problem cannot take is SKIPPED with its reason", "[harness][segments]") {
  GpuInfo no_gpu;
  const VariantInfo& cpu = *find_variant("cpu_chunked");
  Problem p = split_problem(100, 2, true, 1);
  CHECK_FALSE(skip_reason(cpu, p, no_gpu));
  Problem bwd = p;
  bwd.pass = Pass::bwd;
  CHECK(skip_reason(cpu, bwd, no_gpu)->find("the forward only") != std::string::npos);
  Problem packed = p;
  packed.seqlens = "40,60";
  packed.shape.B = 1;
  resolve_packed(packed);
  CHECK(skip_reason(cpu, packed, no_gpu)->find("packed batch") != std::string::npos);
  Problem fe = p;
  fe.frontend = true;
  CHECK(skip_reason(cpu, fe, no_gpu));  // the CPU variants take no front end at all
}

TEST_CASE("a split run is verified but not timed", "[harness][segments]") {
  RunOptions opt;
  opt.cpu_threads = 2;
  opt.timed = true;
  opt.timing.warmup = 0;
  opt.timing.min_samples = 2;
  opt.timing.max_seconds = 0.1;
  const Problem whole = split_problem(70, 1, true, 3), split = split_problem(70, 2, true, 3);
  const RunSummary sum = execute_cases({Case{whole, find_variant("cpu_chunked"), true}, Case{split, find_variant("cpu_chunked"), true}},
                                       opt, [](const ResultRow&) {});
  REQUIRE(sum.rows.size() == 2);
  CHECK(sum.rows[0].status == Status::pass);
  CHECK(sum.rows[0].timing.has_value());
  CHECK(sum.rows[1].status == Status::pass);
  CHECK_FALSE(sum.rows[1].timing.has_value());
}
