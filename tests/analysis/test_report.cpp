// `gdnbench report`: the power-law fit, the crossover interpolation, the floor, the regression rule,
// the CSV reader, a report built from CSVs written by the real CsvWriter, the anchors beside it,
// and the refusal of bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/analysis/report.h"
#include "harness/result.h"
#include "tests/common/test_util.h"

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
  m.tolerances = "builtin";
  m.tolerances_hash = "00ff00ff00ff00ff";
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
// `l2_flush` non-empty: the timed rows say they were timed with CUDA events and that flush.
void write_synthetic(const std::string& path, uint64_t seed, double gdn_scale_8192 = 1.0,
                     const std::string& l2_flush = "") {
  CsvWriter w(path, report_meta(seed));
  for (int64_t T : {1024, 2048, 4096, 8192}) {
    for (ResultRow r : {timed_row("gdn_fake", "gdn", T, T / 1000.0 * (T == 8192 ? gdn_scale_8192 : 1.0)),
                        timed_row("attn_fake", "attention", T, double(T) * T / 4e6)}) {
      if (!l2_flush.empty()) {
        r.timing->timer = "events";
        r.timing->l2_flush = l2_flush;
      }
      w.append(r);
    }
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

TEST_CASE("floor: max(flops / GEMM rate, bytes / copy bandwidth) in ms", "[report]") {
  // 1e12 FLOP at 100 TFLOP/s = 10 ms; 1e9 bytes at 1000 GB/s = 1 ms: compute-bound, 10 ms.
  CHECK(floor_ms(1e12, 1e9, 100, 1000) == Approx(10.0));
  // 4e10 bytes at 1000 GB/s = 40 ms beats the 10 ms of arithmetic: bandwidth-bound.
  CHECK(floor_ms(1e12, 4e10, 100, 1000) == Approx(40.0));
  // Not measured (empty cell, CPU row) or not counted: no floor.
  CHECK(std::isnan(floor_ms(1e12, 1e9, NAN, 1000)));
  CHECK(std::isnan(floor_ms(1e12, 1e9, 100, 0)));
  CHECK(std::isnan(floor_ms(0, 1e9, 100, 1000)));
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
    ReportExtras extras;
    extras.plots = {"plots/x.png"};
    const std::string md = build_report({a, b}, "gdnbench report a.csv b.csv", extras);
    CHECK(contains(md, "max(3 cv_a median_a, 3 cv_b median_b, 2% of median_a)"));
    CHECK(contains(md, "8 matched: 1 SLOWER, 0 FASTER, 7 the same"));
    CHECK(contains(md, "| 8192 | 8.192 | 12.29 | 1.500 |"));
    CHECK(contains(md, "![x](plots/x.png)"));
  }
  SECTION("two CSVs timed with different L2 flushes are not compared") {
    write_synthetic(dir.file("write.csv"), 7, 1.0, "write");
    write_synthetic(dir.file("clean.csv"), 8, 1.5, "clean");
    const CsvTable w = read_gdnbench_csv(dir.file("write.csv"), report_required_columns());
    const CsvTable c = read_gdnbench_csv(dir.file("clean.csv"), report_required_columns());
    const std::string md = build_report({w, c}, "gdnbench report write.csv clean.csv");
    CHECK(contains(md, "| l2_flush | `write`, `clean` |"));
    CHECK(contains(md, "| timer | `events` |"));
    CHECK(contains(md, "8 matched: 0 SLOWER, 0 FASTER, 0 the same, 8 NOT COMPARABLE (timed another way)"));
    CHECK(contains(md, "| 8192 | 8.192 | 12.29 | 1.500 | 0.1638 | NOT COMPARABLE (a `events write`, b `events clean`) |"));
    // The same flush on both sides compares as before; an older CSV (no columns) compares with either.
    write_synthetic(dir.file("write2.csv"), 9, 1.5, "write");
    const CsvTable w2 = read_gdnbench_csv(dir.file("write2.csv"), report_required_columns());
    CHECK(contains(build_report({w, w2}, "r"), "8 matched: 1 SLOWER, 0 FASTER, 7 the same;"));
    CHECK(contains(build_report({a, c}, "r"), "8 matched: 1 SLOWER, 0 FASTER, 7 the same;"));
  }
  SECTION("a CSV of another suite is no baseline: the regression check leaves it out") {
    CsvTable other = b;
    const int suite = other.column("suite");
    REQUIRE(suite >= 0);
    for (auto& row : other.rows) row[size_t(suite)] = "suites/scaling.ini";
    const std::string md = build_report({a, other}, "r");
    CHECK(contains(md, "Not compared: another suite ("));
    CHECK_FALSE(contains(md, "SLOWER, 0 FASTER"));
  }
  SECTION("so is a CSV judged by another tolerance profile; the environment names each") {
    CsvTable other = b;
    const int hash = other.column("tolerances_hash");
    REQUIRE(hash >= 0);
    for (auto& row : other.rows) row[size_t(hash)] = "1234567890abcdef";
    const std::string md = build_report({a, other}, "r");
    CHECK(contains(md, "Not compared: another tolerances ("));
    CHECK(contains(md, "| tolerances | `builtin` |"));
    CHECK(contains(md, "| tolerances_hash | `00ff00ff00ff00ff`, `1234567890abcdef` |"));
    CHECK_FALSE(contains(md, "SLOWER, 0 FASTER"));
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
  SECTION("--out without a directory part: --plots relative to the working directory") {
    std::filesystem::create_directories(dir.file("cwd/plots"));
    testutil::write_text(dir.file("cwd/plots/step_latency_vs_B.png"), "png");
    const std::filesystem::path saved = std::filesystem::current_path();
    std::filesystem::current_path(dir.file("cwd"));
    int rc = -1;
    try {
      rc = run_report({dir.file("a.csv"), "--out", "r.md", "--plots", "plots"});
    } catch (...) {
      std::filesystem::current_path(saved);
      throw;
    }
    std::filesystem::current_path(saved);
    CHECK(rc == 0);
    CHECK(contains(testutil::read_text(dir.file("cwd/r.md")), "![step_latency_vs_B](plots/step_latency_vs_B.png)"));
  }
}

namespace {

// gdn_fake at T = 1024 and 4096 with measured ceilings and the harness's own counts, B=1 H=HV=4
// K=V=64 bf16; `with_ceilings` false leaves them empty as a CPU or --no-ceilings row does;
// `device` non-empty renames the device.
void write_with_ceilings(const std::string& path, bool with_ceilings = true, const std::string& device = "") {
  CsvWriter w(path, report_meta(9));
  for (int64_t T : {1024, 4096}) {
    ResultRow r = timed_row("gdn_fake", "gdn", T, T / 1000.0);
    if (!device.empty()) r.device = device;
    r.flops = gdn_flops(r.problem);
    r.bytes = gdn_min_bytes(r.problem);
    if (with_ceilings) {
      r.ceiling_tflops = 100;
      r.ceiling_gbps = 1000;
    }
    w.append(r);
  }
}

// One line of a markdown table: the one that starts with `start`.
std::string table_line(const std::string& md, const std::string& start) {
  const size_t at = md.find("\n" + start);
  if (at == std::string::npos) return "";
  return md.substr(at + 1, md.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST_CASE("the timing table shows each row's floor and time / floor", "[report]") {
  testutil::TempDir dir;
  SECTION("a row with ceilings: floor from its flops, min_bytes and ceilings") {
    write_with_ceilings(dir.file("c.csv"));
    const CsvTable t = read_gdnbench_csv(dir.file("c.csv"), report_required_columns());
    // T = 1024, B=1 H=HV=4 K=V=64: flops = 1024 * 4 * (6*64*64 * 2 + 4*64*64) = 268435456, 2.684e-3 ms
    // at 100 TFLOP/s; bytes = 2 * (2 * 262144 + 2 * 262144) + 4 * 4096 * 2 + 4 * 16384 = 2195456,
    // 2.195e-3 ms at 1000 GB/s. Floor 2.684e-3 ms (compute), x floor = 1.024 / 2.684e-3 = 381.5.
    REQUIRE(t.number(0, "flops") == Approx(268435456.0).epsilon(1e-5));
    REQUIRE(t.number(0, "min_bytes") == Approx(2195456.0).epsilon(1e-5));
    const std::string md = build_report({t}, "gdnbench report c.csv");
    CHECK(contains(md, "| floor (ms) | x floor |"));
    const std::string line = table_line(md, "| gdn_fake | bf16 | 1 | 4 | 4 | 64 | 64 | 64 | on/on/off | 1024 |");
    CHECK(line.size() > 0);
    CHECK(contains(line, "| 0.002684 | 381 |"));
    // The same relation through the CSV's fractions: x floor = 1 / max(frac_flops, frac_bw).
    CHECK(1.0 / std::max(t.number(0, "frac_flops"), t.number(0, "frac_bw")) == Approx(381.5).epsilon(1e-3));
    // T = 4096: both counts 4x (the state's 65536 bytes once): floor 0.01074 ms, x floor 381.
    CHECK(contains(table_line(md, "| gdn_fake | bf16 | 1 | 4 | 4 | 64 | 64 | 64 | on/on/off | 4096 |"),
                   "| 0.01074 | 381 |"));
  }
  SECTION("a row without ceilings has no floor") {
    write_with_ceilings(dir.file("n.csv"), false);
    const std::string md = build_report({read_gdnbench_csv(dir.file("n.csv"), report_required_columns())}, "r");
    CHECK(contains(table_line(md, "| gdn_fake | bf16 | 1 | 4 | 4 | 64 | 64 | 64 | on/on/off | 1024 |"),
                   "| - | - | - | - |"));
  }
  const auto read = [&](const char* name) { return read_gdnbench_csv(dir.file(name), report_required_columns()); };
  const std::string row_1024 = "| gdn_fake | bf16 | 1 | 4 | 4 | 64 | 64 | 64 | on/on/off | 1024 |";
  SECTION("a row timed with --no-ceilings takes those its device recorded for the dtype, marked") {
    write_with_ceilings(dir.file("n.csv"), false);
    write_with_ceilings(dir.file("c.csv"));
    // The first file's row is shown (the same case in both); its floor is the second file's.
    const std::string md = build_report({read("n.csv"), read("c.csv")}, "r");
    CHECK(contains(table_line(md, row_1024), "| - | - | 0.002684 † | 381 |"));
    CHECK(contains(md, "marked † is on the ceilings"));
  }
  SECTION("but not the ceilings of another device") {
    write_with_ceilings(dir.file("n.csv"), false);
    write_with_ceilings(dir.file("c.csv"), true, "another GPU");
    const std::string md = build_report({read("n.csv"), read("c.csv")}, "r");
    CHECK(contains(table_line(md, row_1024), "| - | - | - | - |"));
  }
}

TEST_CASE("anchors: read strictly, shown beside the CSV's rows against the floor", "[report][anchors]") {
  testutil::TempDir dir;
  write_with_ceilings(dir.file("c.csv"));
  // The layout of the real anchors file: empty cells where a field does not apply, a dtype column
  // filled only on accuracy rows, other `what` rows the reader skips.
  const std::string header = "B,D,GBps,H,T,dtype,impl,ms,what\n";
  testutil::write_text(dir.file("anchors.csv"), header +
                                                    ",,4272.1,,,,,,ceiling_copy\n"
                                                    ",,,,2048,float32,fla_chunk,,accuracy\n"
                                                    "1,64,,4,1024,,fla_chunk,0.5,fwd\n"
                                                    "1,64,,4,2048,,fla_chunk,0.75,fwd\n"
                                                    "1,64,,4,1024,,sdpa_flash,0.05,fwd\n"
                                                    "2,64,,4,1024,,fla_chunk,0.9,fwd\n");
  SECTION("the reader keeps the fwd rows, bf16 unless the row says otherwise") {
    const auto a = read_anchors(dir.file("anchors.csv"));
    REQUIRE(a.size() == 4);
    CHECK(a[0].impl == "fla_chunk");
    CHECK(a[0].dtype == "bf16");
    CHECK((a[0].B == 1 && a[0].H == 4 && a[0].D == 64 && a[0].T == 1024));
    CHECK(a[0].ms == 0.5);
    CHECK(anchor_family("fla_fused_recurrent") == "gdn");
    CHECK(anchor_family("sdpa_cudnn") == "attention");
    CHECK(anchor_family("flashinfer").empty());
  }
  SECTION("the section: labelled columns, floors of the same problem, cells ms (x floor)") {
    CHECK(run_report({dir.file("c.csv"), "--anchors", dir.file("anchors.csv"), "--out", dir.file("r.md"),
                      "--note", "Rows of two runs; the older wy_ut rows left out."}) == 0);
    const std::string md = testutil::read_text(dir.file("r.md"));
    CHECK(contains(md, "## Forward time beside the anchors"));
    CHECK(contains(md, "anchor (PyTorch/FLA run, not this harness)"));
    CHECK(contains(md, "\n\nRows of two runs; the older wy_ut rows left out.\n\n## Environment"));
    CHECK(contains(md, "--note 'Rows of two runs; the older wy_ut rows left out.'"));
    CHECK(contains(md, "### bf16, B=1 H=HV=4 K=V=64"));
    CHECK(contains(md, "| T | GDN floor (ms) | attention floor (ms) | gdn_fake | fla_chunk (anchor) | "
                       "sdpa_flash (anchor) |"));
    // T = 1024: the GDN floor of the harness's own row, 2.684e-3 ms; fla_chunk 0.5 / 2.684e-3 = 186.3;
    // attention: 2 (T^2 / 2) (K + V) H = 5.369e8 FLOP, 5.369e-3 ms at 100 TFLOP/s (bytes 2.1e-3 ms),
    // sdpa_flash 0.05 / 5.369e-3 = 9.31.
    CHECK(contains(md, "| 1024 | 0.002684 | 0.005369 | 1.024 (381x) | 0.5 (186x) | 0.05 (9.31x) |"));
    // T = 2048: no harness row; the GDN floor is the same problem's, 5.369e-3 ms (compute-bound).
    CHECK(contains(md, "| 2048 | 0.005369 | 0.02147 | - | 0.75 (140x) | - |"));
    CHECK(contains(md, "| 4096 | 0.01074 | 0.0859 | 4.096 (381x) | - | - |"));
    // A shape of the anchors that no harness row has gets its own table, still with floors.
    CHECK(contains(md, "### bf16, B=2 H=HV=4 K=V=64"));
    CHECK(contains(md, "No timed row of this harness has this shape"));
    CHECK(contains(md, "| 1024 | 0.005369 | 0.9 (168x) |"));
    CHECK(contains(md, "100 TFLOP/s bf16 GEMM, 1000 GB/s copy"));
  }
  SECTION("malformed anchors: one usage error naming the file and row") {
    const auto refused = [&](const std::string& text, const std::string& message) {
      testutil::write_text(dir.file("bad.csv"), text);
      CHECK_THROWS_WITH(read_anchors(dir.file("bad.csv")), Catch::Contains(message));
      CHECK_THROWS_AS(run_report({dir.file("c.csv"), "--anchors", dir.file("bad.csv")}), UsageError);
    };
    refused("B,D,H,T,impl,what\n1,64,4,1024,fla_chunk,fwd\n", "column 'ms' missing");
    refused(header + "1,64,,4,1024,,fla_chunk,0.5\n", "row 2 has 8 fields, the header 9");
    refused(header + "1,64,,4,1024,,fla_chunk,fast,fwd\n", "row 2 (what=fwd, fla_chunk): ms 'fast'");
    refused(header + "1,64,,4,1024,,fla_chunk,-1,fwd\n", "ms '-1' is not a positive number");
    refused(header + "1,64,,4,1024.5,,fla_chunk,0.5,fwd\n", "T '1024.5' is not a positive integer");
    refused(header + "1,,,4,1024,,fla_chunk,0.5,fwd\n", "D '' is not a positive integer");
    refused(header + "1,64,,4,1024,,,0.5,fwd\n", "row 2 (what=fwd) has no impl");
    refused(header + "1,64,,4,1024,int8,fla_chunk,0.5,fwd\n", "dtype 'int8' unknown");
    refused(header + "1,64,,4,1024,,fla_chunk,0.5,fwd\n1,64,,4,1024,,fla_chunk,0.6,fwd\n",
            "row 3 repeats fla_chunk at B=1 H=4 D=64 T=1024 of row 2");
    refused(header + ",,4272.1,,,,,,ceiling_copy\n", "no row with what=fwd");
    refused("", "empty file");
    CHECK_THROWS_WITH(read_anchors(dir.file("none.csv")), Catch::Contains("cannot read"));
  }
  SECTION("the binary: a malformed anchors file is exit 2 and one line on stderr") {
    testutil::write_text(dir.file("bad.csv"), header + "1,64,,4,1024,,fla_chunk,fast,fwd\n");
    const testutil::ProcessResult r =
        testutil::run_gdnbench("report '" + dir.file("c.csv") + "' --anchors '" + dir.file("bad.csv") + "'");
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines().size() == 1);
    CHECK(testutil::run_gdnbench("report '" + dir.file("c.csv") + "' --anchors '" + dir.file("anchors.csv") + "'")
              .exit_code == 0);
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
  SECTION("a --plots folder without PNG files (plot.py not run yet)") {
    std::filesystem::create_directories(dir.file("empty_plots"));
    testutil::write_text(dir.file("empty_plots/time.svg"), "svg");
    CHECK_THROWS_WITH(run_report({dir.file("good.csv"), "--plots", dir.file("empty_plots")}),
                      Catch::Contains("no PNG files in") && Catch::Contains("scripts/plot.py"));
  }
  SECTION("wrong schema version") {
    const size_t eol = text.find('\n');
    const std::string version = std::to_string(kCsvSchemaVersion), later = std::to_string(kCsvSchemaVersion + 1);
    REQUIRE(text.compare(eol + 1, version.size() + 1, version + ",") == 0);
    text.replace(eol + 1, version.size(), later);
    testutil::write_text(dir.file("later.csv"), text);
    CHECK_THROWS_WITH(run_report({dir.file("later.csv")}), Catch::Contains("schema_version '" + later + "'"));
    text.replace(eol + 1, later.size(), "1");  // v1 (before the plan column) is still read
    testutil::write_text(dir.file("v1.csv"), text);
    CHECK_NOTHROW(run_report({dir.file("v1.csv"), "--out", dir.file("v1.md")}));
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

TEST_CASE("the accuracy table counts the rows judged against a sampled reference", "[report]") {
  testutil::TempDir dir;
  {
    CsvWriter w(dir.file("s.csv"), report_meta(3));
    ResultRow full = timed_row("gdn_fake", "gdn", 1024, 1.0);
    full.ref_rows = 1024;
    full.ref_heads = 4;  // B HV
    ResultRow heads = timed_row("gdn_fake", "gdn", 2048, 2.0);
    heads.ref_rows = 2048;
    heads.ref_heads = 2;  // 2 of the 4 (b, hv) heads
    ResultRow rows = timed_row("attn_fake", "attention", 2048, 3.0);
    rows.ref_rows = 500;  // 500 of 2048 query rows
    rows.ref_heads = 4;
    w.append(full);
    w.append(heads);
    w.append(rows);
  }
  const std::string md =
      build_report({read_gdnbench_csv(dir.file("s.csv"), report_required_columns())}, "gdnbench report s.csv");
  CHECK(contains(md, "| gdn_fake | bf16 | 2 | 2 | 0 | 0 | 1 |"));  // rows, PASS, FAIL, SKIPPED, sampled
  CHECK(contains(md, "| attn_fake | bf16 | 1 | 1 | 0 | 0 | 1 |"));
}
