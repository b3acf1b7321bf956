// `gdnbench report`: the power-law fit, the crossover interpolation, the regression rule, the CSV
// reader, a report built from CSVs written by the real CsvWriter, and the refusal of bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "harness/cli.h"
#include "harness/csv.h"
#include "harness/report.h"
#include "tests/test_util.h"

namespace {

RunMeta report_meta(uint64_t seed) {
  RunMeta m;
  m.run_id = "2026-01-01T00:00:00Z-" + std::to_string(seed);
  m.timestamp = "2026-01-01T00:00:00Z";
  m.git_sha = "abc123";
  m.host = "host";
  m.command = "run";
  m.suite = "suites/x, with comma.ini";
  m.seed = seed;
  return m;
}

ResultRow timed_row(const std::string& variant, const std::string& family, int64_t T, double ms) {
  ResultRow r;
  r.problem.shape = GdnShape{1, T, 4, 4, 64, 64};
  r.problem.dtype = DType::bf16;
  r.variant = variant;
  r.family = family;
  r.backend = "cuda";
  r.precision = "tensor_core";
  r.device = "GPU \"X\", rev 2";
  r.status = Status::pass;
  r.o = compare_to_reference({1, 2}, {1, 2.001}, DType::bf16);
  r.tol = tolerance_for(Precision::tensor_core, DType::bf16);
  TimingStats t;
  t.samples = 10;
  t.median_ms = t.min_ms = t.p20_ms = t.p80_ms = t.mean_ms = ms;
  t.cv = 0.001;
  r.timing = t;
  r.flops = 1e9;
  r.bytes = 1e6;
  return r;
}

// GDN time T/1000 ms (linear), attention T^2/4e6 ms (quadratic): the ratio is 4000/T, so the GDN
// variant becomes faster at exactly T = 4000. `gdn_scale_8192` scales the GDN time at T = 8192.
void write_synthetic(const std::string& path, uint64_t seed, double gdn_scale_8192 = 1.0) {
  CsvWriter w(path, report_meta(seed));
  for (int64_t T : {1024, 2048, 4096, 8192}) {
    w.append(timed_row("gdn_fake", "gdn", T, T / 1000.0 * (T == 8192 ? gdn_scale_8192 : 1.0)));
    w.append(timed_row("attn_fake", "attention", T, double(T) * T / 4e6));
  }
  ResultRow skipped = timed_row("gdn_fake", "gdn", 100, 1.0);
  skipped.status = Status::skipped;
  skipped.timing.reset();
  skipped.o = TensorMetrics{};
  skipped.reason = "no GPU, sorry";
  w.append(skipped);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("power-law fit recovers exact exponents and tolerates noise", "[report]") {
  const std::vector<double> T = {512, 1024, 2048, 4096, 8192, 16384};
  SECTION("linear and quadratic laws give slopes 1 and 2 with R^2 = 1") {
    for (double p : {1.0, 2.0}) {
      std::vector<double> y;
      for (double t : T) y.push_back(3e-4 * std::pow(t, p));
      const PowerFit f = fit_power_law(T, y);
      CHECK(f.n == 6);
      CHECK(f.slope == Approx(p).epsilon(1e-12));
      CHECK(f.r2 == Approx(1.0).epsilon(1e-12));
      CHECK(std::exp(f.intercept) == Approx(3e-4).epsilon(1e-9));
    }
  }
  SECTION("multiplicative noise of a few percent moves the slope a little and R^2 below 1") {
    std::mt19937_64 rng(testutil::fresh_seed());
    std::uniform_real_distribution<double> noise(0.95, 1.05);
    std::vector<double> y;
    for (double t : T) y.push_back(2e-3 * t * noise(rng));
    const PowerFit f = fit_power_law(T, y);
    CHECK(f.slope == Approx(1.0).margin(0.05));
    CHECK(f.r2 > 0.99);
    CHECK(f.r2 < 1.0);
  }
  SECTION("non-positive points are dropped; one distinct x gives no slope") {
    const PowerFit f = fit_power_law({0, 10, 100}, {5, 1, 10});
    CHECK(f.n == 2);
    CHECK(f.slope == Approx(1.0));
    CHECK(std::isnan(fit_power_law({10, 10}, {1, 2}).slope));
  }
  SECTION("upper half: the largest ceil(n/2) distinct x, at least 2") {
    CHECK(upper_half({4096, 1024, 65536, 16384}) == std::vector<size_t>{3, 2});
    CHECK(upper_half({1, 2, 3, 4, 5}) == std::vector<size_t>{2, 3, 4});
    CHECK(upper_half({3, 1, 2}) == std::vector<size_t>{2, 0});
  }
}

TEST_CASE("crossover: log(time ratio) interpolated linearly in log(T)", "[report]") {
  SECTION("hand example") {
    // r = gdn / attn = 2 at T = 1000 and 1/4 at T = 8000. log T* = ln 1000 + (0 - ln 2) *
    // (ln 8000 - ln 1000) / (-2 ln 2 - ln 2) = ln 1000 + ln 2 * 3 ln 2 / (3 ln 2) = ln 2000.
    const Crossover c = find_crossover({1000, 8000}, {2, 1}, {1, 4});
    CHECK(c.kind == Crossover::becomes_faster);
    CHECK(c.t == Approx(2000.0).epsilon(1e-12));
    CHECK(crossover_text(c) == "faster from T ≈ 2000");
  }
  SECTION("the bracket is found among several Ts, in any input order") {
    // r = 2, 2, 1/2 at T = 100, 1000, 10000: the midpoint in log T of the last bracket, sqrt(1e7).
    const Crossover c = find_crossover({10000, 100, 1000}, {4, 1, 2}, {8, 0.5, 1});
    CHECK(c.kind == Crossover::becomes_faster);
    CHECK(c.t == Approx(std::sqrt(1e7)).epsilon(1e-12));
  }
  SECTION("always faster, never faster, equal is not faster, no data") {
    CHECK(find_crossover({1, 2, 3}, {1, 1, 1}, {2, 2, 2}).kind == Crossover::always_faster);
    CHECK(find_crossover({1, 2, 3}, {3, 3, 3}, {2, 2, 2}).kind == Crossover::never_faster);
    CHECK(find_crossover({1, 2}, {2, 2}, {2, 2}).kind == Crossover::never_faster);
    CHECK(find_crossover({}, {}, {}).kind == Crossover::no_data);
    CHECK(crossover_text(find_crossover({1}, {1}, {2})) == "always faster");
    CHECK(crossover_text(find_crossover({1}, {2}, {1})) == "never faster in range");
  }
  SECTION("faster at small T only") {
    const Crossover c = find_crossover({1000, 8000}, {1, 2}, {2, 1});
    CHECK(c.kind == Crossover::becomes_slower);
    CHECK(c.t == Approx(std::sqrt(8e6)).epsilon(1e-12));
  }
}

TEST_CASE("regression rule: max(3 cv_a m_a, 3 cv_b m_b, 2% of m_a)", "[report]") {
  // 3 * 0.01 * 10 = 0.3 beats 3 * 0.005 * ~10 = 0.15 and 2% of 10 = 0.2.
  CHECK(regression_threshold_ms(10, 0.01, 10.4, 0.005) == Approx(0.3));
  CHECK(compare_timing(10, 0.01, 10.25, 0.005) == Change::same);
  CHECK(compare_timing(10, 0.01, 10.31, 0.005) == Change::slower);
  CHECK(compare_timing(10, 0.01, 9.69, 0.005) == Change::faster);
  // Quiet timings: the 2% floor decides.
  CHECK(regression_threshold_ms(10, 0.001, 10, 0.001) == Approx(0.2));
  CHECK(compare_timing(10, 0.001, 10.19, 0.001) == Change::same);
  CHECK(compare_timing(10, 0.001, 10.21, 0.001) == Change::slower);
  // A noisy b widens the band: 3 * 0.1 * 12 = 3.6.
  CHECK(compare_timing(10, 0.001, 12, 0.1) == Change::same);
  CHECK(std::string(change_name(Change::slower)) == "SLOWER");
  CHECK(std::string(change_name(Change::faster)) == "FASTER");
}

TEST_CASE("CSV reader: quotes, commas, doubled quotes, line breaks", "[report][csv]") {
  const auto rows = parse_csv_text("a,\"b,c\",\"d \"\"q\"\"\",\r\n\"x\ny\",2\n");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == std::vector<std::string>{"a", "b,c", "d \"q\"", ""});
  CHECK(rows[1] == std::vector<std::string>{"x\ny", "2"});
  CHECK(parse_csv_text("1,2").size() == 1);  // no final line end
  CHECK(parse_csv_text("").empty());
  CHECK_THROWS_AS(parse_csv_text("a,\"open\n"), std::runtime_error);

  SECTION("a CsvWriter file reads back by column name") {
    testutil::TempDir dir;
    write_synthetic(dir.file("a.csv"), 7);
    const CsvTable t = read_gdnbench_csv(dir.file("a.csv"), report_required_columns());
    REQUIRE(t.rows.size() == 9);
    CHECK(t.header == csv_columns());
    CHECK(t.cell(0, "device") == "GPU \"X\", rev 2");
    CHECK(t.cell(0, "suite") == "suites/x, with comma.ini");
    CHECK(t.number(1, "time_median_ms") == Approx(1024.0 * 1024 / 4e6).epsilon(1e-5));
    CHECK(std::isnan(t.number(8, "time_median_ms")));  // SKIPPED: empty cell
    CHECK(t.cell(0, "no_such_column").empty());
  }
}

TEST_CASE("a report from synthetic CSVs has every section and the right numbers", "[report]") {
  testutil::TempDir dir;
  write_synthetic(dir.file("a.csv"), 7);
  write_synthetic(dir.file("b.csv"), 8, 1.5);  // gdn_fake 50% slower at T = 8192
  const CsvTable a = read_gdnbench_csv(dir.file("a.csv"), report_required_columns());
  const CsvTable b = read_gdnbench_csv(dir.file("b.csv"), report_required_columns());

  SECTION("one CSV") {
    const std::string md = build_report({a}, "gdnbench report a.csv");
    for (const char* s : {"## Environment", "## Accuracy", "## Timing", "## Complexity fit",
                          "## Speedups and crossovers", "## Regression check", "`abc123`", "`7`"})
      CHECK(contains(md, s));
    CHECK(contains(md, "Made by `gdnbench report a.csv`"));
    CHECK(contains(md, "| gdn_fake | bf16 | 5 | 4 | 0 | 1 |"));  // rows, PASS, FAIL, SKIPPED
    CHECK(contains(md, "| gdn_fake | bf16 | 1 | 4 | 4 | 64 | 64 | 64 | 1024-8192 | 1.000 | 1.0000 |"));
    CHECK(contains(md, "| attn_fake | bf16 | 1 | 4 | 4 | 64 | 64 | 64 | 1024-8192 | 2.000 | 1.0000 |"));
    CHECK(contains(md, "| gdn_fake | attn_fake | bf16 | 1 | 4 | 4 | 64 | 64 | 8192 | 8.192 | 16.78 | 2.05x |"));
    CHECK(contains(md, "faster from T ≈ 4000"));
    CHECK(contains(md, "One CSV given"));
    CHECK_FALSE(contains(md, "## Plots"));
  }
  SECTION("two CSVs: the slower row is flagged and the rule is stated") {
    const std::string md = build_report({a, b}, "gdnbench report a.csv b.csv", {"plots/x.png"});
    CHECK(contains(md, "max(3 cv_a median_a, 3 cv_b median_b, 2% of median_a)"));
    CHECK(contains(md, "8 matched: 1 SLOWER, 0 FASTER, 7 the same"));
    CHECK(contains(md, "| 8192 | 8.192 | 12.29 | 1.500 |"));
    CHECK(contains(md, "![x](plots/x.png)"));
  }
  SECTION("run_report writes --out and embeds --plots relative to it") {
    testutil::write_text(dir.file("plots_src.png"), "");
    std::filesystem::create_directories(dir.file("out/plots"));
    testutil::write_text(dir.file("out/plots/time.png"), "png");
    CHECK(run_report({dir.file("a.csv"), "--out", dir.file("out/r.md"), "--plots", dir.file("out/plots")}) == 0);
    const std::string md = testutil::read_text(dir.file("out/r.md"));
    CHECK(contains(md, "## Timing"));
    CHECK(contains(md, "![time](plots/time.png)"));
  }
}

TEST_CASE("report refuses bad input with a usage error", "[report]") {
  testutil::TempDir dir;
  write_synthetic(dir.file("good.csv"), 7);
  std::string text = testutil::read_text(dir.file("good.csv"));
  SECTION("missing file, no file, unknown flag, flag without value") {
    CHECK_THROWS_AS(run_report({dir.file("nope.csv")}), UsageError);
    CHECK_THROWS_AS(run_report({}), UsageError);
    CHECK_THROWS_AS(run_report({dir.file("good.csv"), "--bogus"}), UsageError);
    CHECK_THROWS_AS(run_report({dir.file("good.csv"), "--out"}), UsageError);
    CHECK_THROWS_AS(run_report({dir.file("good.csv"), "--plots", dir.file("no_dir")}), UsageError);
  }
  SECTION("wrong schema version") {
    const size_t eol = text.find('\n');
    REQUIRE(text.compare(eol + 1, 2, "1,") == 0);
    text.replace(eol + 1, 1, "2");
    testutil::write_text(dir.file("v2.csv"), text);
    CHECK_THROWS_WITH(run_report({dir.file("v2.csv")}), Catch::Contains("schema_version '2'"));
  }
  SECTION("a needed column missing, not a gdnbench CSV, empty") {
    testutil::write_text(dir.file("nocol.csv"), "schema_version,variant\n1,x\n");
    CHECK_THROWS_WITH(run_report({dir.file("nocol.csv")}), Catch::Contains("column 'run_id' missing"));
    testutil::write_text(dir.file("other.csv"), "a,b\n1,2\n");
    CHECK_THROWS_AS(run_report({dir.file("other.csv")}), UsageError);
    testutil::write_text(dir.file("empty.csv"), "");
    CHECK_THROWS_AS(run_report({dir.file("empty.csv")}), UsageError);
  }
  SECTION("the binary: exit 2 and one line on stderr") {
    const testutil::ProcessResult r = testutil::run_gdnbench("report '" + dir.file("nope.csv") + "'");
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines().size() == 1);
    CHECK(testutil::run_gdnbench("report '" + dir.file("good.csv") + "'").exit_code == 0);
  }
}
