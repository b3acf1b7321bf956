// Noise is reported, not mistaken for a finding: rows whose timing CV is above kNoisyCv are flagged
// in the console table, the CSV (time_noisy) and the report; a claim whose value lies within the
// noise of its bound is INCONCLUSIVE, while clean data still reproduces or misses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/analysis/claims.h"
#include "tests/common/claims_test_util.h"
#include "harness/io/csv.h"
#include "harness/analysis/report.h"
#include "harness/result.h"
#include "harness/io/table.h"
#include "harness/noise.h"
#include "tests/common/test_util.h"

namespace {

const std::vector<std::string> kHeader = {"schema_version", "variant", "family", "status", "device", "dtype",
                                          "B", "T", "H", "HV", "K", "V", "chunk", "gate", "delta", "h0",
                                          "context", "time_median_ms", "time_cv", "peak_device_bytes"};

// Rows of the B=1 H=32 K=V=128 bf16 shape of the shipped claims, each with its timing CV.
struct Rows {
  CsvTable t;
  Rows() {
    t.path = "noise.csv";
    t.header = kHeader;
  }
  void add(const std::string& variant, const std::string& family, int64_t T, double ms, double cv,
           int64_t context = 0, const std::string& h0 = "off") {
    t.rows.push_back({"2", variant, family, "PASS", "CPU X", "bf16", "1", std::to_string(T), "32", "32", "128",
                      "128", "64", "on", "on", h0, std::to_string(context), fmt::format("{}", ms),
                      fmt::format("{}", cv), ""});
  }
};

using claimstest::find;
using claimstest::shipped;

// One GDN series over the claims suite's Ts: time T^power ms scaled by `wobble` at T = 8192, every
// row with timing CV `cv`. Only the upper half (4096..16384) is fitted.
Rows forward(double power, double cv, double wobble = 1.0) {
  Rows r;
  for (int64_t T : {512, 1024, 2048, 4096, 8192, 16384})
    r.add("cpu_recurrent", "gdn", T, std::pow(double(T) / 1000.0, power) * (T == 8192 ? wobble : 1.0), cv);
  return r;
}

// GDN decode from its state at L = 2K..128K: `ms` per context, every row with timing CV `cv`.
Rows decode(const std::vector<double>& ms, double cv) {
  Rows r;
  const int64_t L[] = {2048, 8192, 32768, 131072};
  for (size_t i = 0; i < ms.size(); ++i) r.add("cpu_recurrent", "gdn", 1, ms[i], cv, L[i], "on");
  return r;
}

Verdict verdict(const Rows& r, const std::string& id, size_t check = 0) {
  return find(evaluate_claims(shipped(), {r.t}), id).checks.at(check).verdict;
}

}  // namespace

TEST_CASE("the noisy threshold: time_cv above 10%", "[noise]") {
  CHECK(kNoisyCv == 0.10);
  CHECK(timing_noisy(0.11));
  CHECK_FALSE(timing_noisy(0.10));
  CHECK_FALSE(timing_noisy(0.02));
  CHECK_FALSE(timing_noisy(NAN));
  CHECK(std::string(verdict_name(Verdict::inconclusive)) == "INCONCLUSIVE");
}

TEST_CASE("slope noise: the rows' CVs through the fit's weights and its residuals", "[noise][report]") {
  const double l2 = std::log(2.0);
  SECTION("points on the line, no CV: no noise") {
    const SlopeNoise n = slope_noise({1, 2, 4}, {1, 2, 4}, {0, 0, 0});
    CHECK(n.half_width == 0);
  }
  SECTION("points on the line, CV 10% each: 0.1 / sqrt(Sxx), Sxx = 2 ln(2)^2") {
    const SlopeNoise n = slope_noise({1, 2, 4}, {1, 2, 4}, {0.1, 0.1, 0.1});
    CHECK(n.from_rows == Approx(0.1 / (l2 * std::sqrt(2.0))));
    CHECK(n.from_residuals == Approx(0).margin(1e-12));
    CHECK(n.half_width == Approx(2 * n.from_rows));
  }
  SECTION("a point off the line: the residual standard error, sqrt(SS_res / (n - 2) / Sxx)") {
    // log y = 0, ln 2 + d, 2 ln 2: slope 1, residuals -d/3, 2d/3, -d/3, SS_res = 2 d^2 / 3.
    const double d = 0.3;
    const SlopeNoise n = slope_noise({1, 2, 4}, {1, 2 * std::exp(d), 4}, {});
    CHECK(n.from_rows == 0);
    CHECK(n.from_residuals == Approx(std::sqrt(2 * d * d / 3 / (2 * l2 * l2))));
    CHECK(n.half_width == Approx(2 * n.from_residuals));
  }
}

TEST_CASE("claims: a value within the noise of its bound is INCONCLUSIVE", "[claims][noise]") {
  SECTION("linear time: slope 1.35 on rows of CV 30% (a loaded 2-core machine)") {
    const Rows r = forward(1.35, 0.30);
    const ClaimResult res = find(evaluate_claims(shipped(), {r.t}), "linear_time");
    CHECK(res.checks[0].verdict == Verdict::inconclusive);
    // No attention on the CPU: the claim is inconclusive, not "not measurable" nor "not reproduced".
    CHECK(res.verdict == Verdict::inconclusive);
    // The interval beside the value, and the noisy rows counted.
    CHECK_THAT(res.checks[0].measured, Catch::Contains("cpu_recurrent 1.35 ["));
    CHECK_THAT(res.checks[0].lines[0], Catch::Contains("(3 points, 3 noisy): inconclusive"));
    const std::string text = claims_text({res});
    CHECK_THAT(text, Catch::Contains("[INCONCLUSIVE] linear_time"));
    CHECK_THAT(text, Catch::Contains("1 INCONCLUSIVE"));
  }
  SECTION("linear time on clean rows: REPRODUCED at slope 1, NOT REPRODUCED at 1.35 and at 1.5") {
    CHECK(verdict(forward(1.0, 0.005), "linear_time") == Verdict::reproduced);
    CHECK(verdict(forward(1.35, 0.005), "linear_time") == Verdict::not_reproduced);
    CHECK(verdict(forward(1.5, 0.01), "linear_time") == Verdict::not_reproduced);
    // The interval is printed beside a clean value too: 1.000 +- 2 x 0.005 / sqrt(Sxx) ~ 0.01.
    const ClaimResult res = find(evaluate_claims(shipped(), {forward(1.0, 0.005).t}), "linear_time");
    CHECK_THAT(res.checks[0].measured, Catch::Contains("cpu_recurrent 1.00 [0.99, 1.01]"));
  }
  SECTION("noise does not hide a value far outside its bound") {
    CHECK(verdict(forward(3.0, 0.30), "linear_time") == Verdict::not_reproduced);
  }
  SECTION("a fit under min_r2 whose scatter widens the slope past its bound decides nothing") {
    // The T = 8192 point 2.5x off the line: slope 1, R^2 ~ 0.6; the residuals put the slope's
    // interval across the bound, firm rows or not (as the decode claim's scattered points below).
    CHECK(verdict(forward(1.0, 0.01, 2.5), "linear_time") == Verdict::inconclusive);
    CHECK(verdict(forward(1.0, 0.20, 2.5), "linear_time") == Verdict::inconclusive);
  }
  SECTION("constant decode time: -28% on rows of CV 15% is noise") {
    const Rows r = decode({0.050, 0.047, 0.044, 0.036}, 0.15);
    const ClaimResult res = find(evaluate_claims(shipped(), {r.t}), "constant_decode_time");
    CHECK(res.checks[0].verdict == Verdict::inconclusive);
    CHECK(res.verdict == Verdict::inconclusive);
    CHECK_THAT(res.checks[0].measured, Catch::Contains("cpu_recurrent -28% ["));
    CHECK_THAT(res.checks[0].lines[0], Catch::Contains("(2 of 2 rows noisy): inconclusive"));
  }
  SECTION("constant decode time: firm rows whose points scatter (residuals) are noise too") {
    // CV 1%, but L = 8192 is 50% above its neighbours: the series' scatter widens the interval.
    CHECK(verdict(decode({0.050, 0.075, 0.044, 0.036}, 0.01), "constant_decode_time") == Verdict::inconclusive);
  }
  SECTION("constant decode time on clean rows: -28% misses, +2% meets") {
    CHECK(verdict(decode({0.050, 0.047, 0.042, 0.036}, 0.01), "constant_decode_time") == Verdict::not_reproduced);
    CHECK(verdict(decode({0.050, 0.0505, 0.0508, 0.051}, 0.01), "constant_decode_time") == Verdict::reproduced);
  }
  SECTION("speedup (a ratio): 8.0x against >= 8.3x") {
    const auto speedup = [](double cv) {
      Rows r;
      r.add("cpu_recurrent", "gdn", 8192, 1.0, cv);
      r.add("attn_x", "attention", 8192, 8.0, cv);
      return verdict(r, "speedup_8k");
    };
    CHECK(speedup(0.10) == Verdict::inconclusive);
    CHECK(speedup(0.002) == Verdict::not_reproduced);
  }
  SECTION("exact counts (peak memory) carry no noise") {
    Rows r;
    for (int64_t L : {2048, 8192, 32768, 131072}) {
      r.t.rows.push_back({"2", "cpu_recurrent", "gdn", "PASS", "CPU X", "bf16", "1", "1", "32", "32", "128", "128",
                          "64", "on", "on", "on", std::to_string(L), "0.05", "0.5",
                          fmt::format("{}", L == 131072 ? 4.3e6 : 4.2e6)});
    }
    CHECK(verdict(r, "fixed_state_decode") == Verdict::not_reproduced);  // +2.4% > +1%, whatever the CV
  }
}

namespace {

ResultRow timed(int64_t T, double ms, double cv) {
  ResultRow r;
  r.problem.shape = GdnShape{1, T, 4, 4, 64, 64};
  r.problem.dtype = DType::bf16;
  r.variant = "gdn_fake";
  r.family = "gdn";
  r.backend = "cpu";
  r.precision = "fp32_math";
  r.device = "CPU X";
  r.status = Status::pass;
  r.o = compare_to_reference({1, 2}, {1, 2.001}, DType::bf16);
  r.tol = tolerance_for(Precision::fp32_math, DType::bf16);
  TimingStats t;
  t.samples = 10;
  t.median_ms = t.min_ms = t.p20_ms = t.p80_ms = t.mean_ms = ms;
  t.cv = cv;
  r.timing = t;
  r.flops = 1e9;
  r.bytes = 1e6;
  return r;
}

}  // namespace

TEST_CASE("the console table marks noisy rows", "[noise][table]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  print_result_table(f, {timed(1024, 1.5, 0.01), timed(2048, 3.25, 0.25)});
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += char(c);
  std::fclose(f);
  CHECK_THAT(text, Catch::Contains(" 1.5000 "));
  CHECK_THAT(text, Catch::Contains("~3.2500"));
  CHECK_THAT(text, Catch::Contains("noisy: CV 25%"));
  CHECK_THAT(text, Catch::Contains("~ 1 noisy row: timing CV above 10%"));
  CHECK(text.find("~1.5000") == std::string::npos);
}

TEST_CASE("the report marks noisy rows and counts them behind each fit", "[noise][report]") {
  testutil::TempDir dir;
  {
    CsvWriter w(dir.file("n.csv"), RunMeta{});
    int i = 0;
    for (int64_t T : {1024, 2048, 4096, 8192}) w.append(timed(T, T / 1000.0, i++ == 3 ? 0.3 : 0.01));
  }
  const std::string md = build_report({read_gdnbench_csv(dir.file("n.csv"), report_required_columns())}, "r");
  CHECK_THAT(md, Catch::Contains("| 8192 | 8.192 | 30.00 noisy |"));
  CHECK_THAT(md, Catch::Contains("| 4096 | 4.096 | 1.00 |"));
  CHECK_THAT(md, Catch::Contains("1 of the 4 rows shown are noisy (CV above 10%)"));
  // The complexity fit: 1 noisy row of 4, 1 of the upper half's 2, and the slope's noise.
  CHECK_THAT(md, Catch::Contains("| 4096-8192 | ±"));
  CHECK_THAT(md, Catch::Contains("| 1 of 4, 1 of 2 |"));
}
