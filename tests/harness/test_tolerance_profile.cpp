// Tolerance profiles (harness/tolerance.h) and their files (harness/io/tolerance_file.h): the
// parser and each way a file can be wrong, the bounds a profile judges by (both ways against the
// built-in table), the hash, the shipped bf16_intermediates profile on the measured FLA rows, and
// --tolerances through the binary: the rows name their profile, --resume and check --csv refuse
// another one, a bad file is one line and exit 2.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "harness/io/errors.h"
#include "harness/io/tolerance_file.h"
#include "harness/runner.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "tests/common/test_util.h"

namespace {

// A row of `dtype` with o (and hT) measured: what output_problems judges, against `profile`.
Status judge(const ToleranceProfile& profile, Precision precision, DType dtype, double o_rel_l2, double o_floor,
             double ht_rel_l2) {
  ResultRow row;
  for (TensorMetrics* m : {&row.o, &row.ht}) {
    m->present = true;
    m->referenced = m->compared = 1000;
  }
  row.o.rel_l2 = o_rel_l2;
  row.o.floor_rel_l2 = o_floor;
  row.ht.rel_l2 = ht_rel_l2;
  row.ht.floor_rel_l2 = 2.5e-8;
  row.tol = profile.bounds(precision, dtype, o_floor);
  return output_problems(row, dtype).empty() ? Status::pass : Status::fail;
}

const char* const kProfile =
    "# a profile for tests\n"
    "tensor_core  bf16  o=3x_floor  hT=4e-3   # FLA-like\n"
    "\n"
    "tensor_core\tfp16\thT=6e-4\n"
    "fp32_math fp32 o=2e-5\n";

}  // namespace

TEST_CASE("a tolerance file replaces the entries it names and keeps the built-in rest", "[tolerance][profile]") {
  const ToleranceProfile builtin = ToleranceProfile::builtin();
  const ToleranceProfile p = parse_tolerance_text(kProfile, "some/dir/fla_like.txt");
  CHECK(p.name() == "fla_like");
  CHECK(builtin.name() == "builtin");
  CHECK(p.o_bound(Precision::tensor_core, DType::bf16).times_floor);
  CHECK(p.o_bound(Precision::tensor_core, DType::bf16).value == 3.0);
  CHECK(p.ht_bound(Precision::tensor_core, DType::bf16).value == 4e-3);
  CHECK(p.ht_bound(Precision::tensor_core, DType::f16).value == 6e-4);
  CHECK(p.o_bound(Precision::fp32_math, DType::f32).value == 2e-5);
  // Not named: the built-in bound, the o of tensor_core fp16 included.
  CHECK(p.o_bound(Precision::tensor_core, DType::f16).value == builtin.o_bound(Precision::tensor_core, DType::f16).value);
  CHECK_FALSE(p.o_bound(Precision::tensor_core, DType::f16).times_floor);
  for (Precision pr : kPrecisions)
    for (DType t : kDtypes) {
      if (pr == Precision::tensor_core || (pr == Precision::fp32_math && t == DType::f32)) continue;
      INFO(precision_name(pr) << " " << dtype_name(t));
      CHECK(p.bounds(pr, t, 1e-3).o_rel_l2 == builtin.bounds(pr, t, 1e-3).o_rel_l2);
      CHECK(p.bounds(pr, t, 1e-3).ht_rel_l2 == builtin.bounds(pr, t, 1e-3).ht_rel_l2);
    }
  // The built-in profile is tolerance_for's table.
  for (Precision pr : kPrecisions)
    for (DType t : kDtypes) {
      CHECK(builtin.o_bound(pr, t).value == tolerance_for(pr, t).o_rel_l2);
      CHECK(builtin.ht_bound(pr, t).value == tolerance_for(pr, t).ht_rel_l2);
    }
}

TEST_CASE("a floor multiple is taken of each row's own floor; the widening rules still apply",
          "[tolerance][profile][floor][cancellation]") {
  const ToleranceProfile p = parse_tolerance_text(kProfile, "fla_like.txt");
  CHECK(p.bounds(Precision::tensor_core, DType::bf16, 1.66e-3).o_rel_l2 == Approx(4.98e-3));
  CHECK(p.bounds(Precision::tensor_core, DType::bf16, 1.4e-3).o_rel_l2 == Approx(4.2e-3));
  CHECK(p.bounds(Precision::tensor_core, DType::bf16, 1.4e-3).ht_rel_l2 == 4e-3);
  // The floor minimum: an absolute bound under 1.5 floors gives way to them.
  CHECK(p.bounds(Precision::fp32_math, DType::f32, 1e-4).o_rel_l2 == Approx(kRoundingFloorFactor * 1e-4));
  // The float32 cancellation bound, where a kappa is given.
  CHECK(p.bounds(Precision::fp32_math, DType::f32, 6e-8, 11.3).o_rel_l2 == 2e-5);
  CHECK(p.bounds(Precision::fp32_math, DType::f32, 6e-8, 1e5).o_rel_l2 ==
        Approx(fp32_cancellation_bound(2e-5, 1e5)));
  CHECK(p.bounds(Precision::fp32_math, DType::f32, 6e-8, 1e5).o_rel_l2 > 2e-5);
}

TEST_CASE("bf16_intermediates passes FLA's and FlashQLA's measured rows, which the built-in table fails",
          "[tolerance][profile]") {
  const ToleranceProfile builtin = ToleranceProfile::builtin();
  const ToleranceProfile fla = read_tolerance_profile("bf16_intermediates");
  CHECK(fla.name() == "bf16_intermediates");
  // reports/results/h200/2026-12-02_peers/ext.csv (T = 2048) and ext_fla_sdpa_T1024_T8192.csv (T = 8192):
  // (o rel_l2, o floor, hT rel_l2).
  const auto [o, floor, ht] = GENERATE(std::make_tuple(3.7776e-3, 1.65806e-3, 2.95729e-3),   // FLA chunk, T = 2048
                                       std::make_tuple(3.75716e-3, 1.65806e-3, 2.93685e-3),  // FlashQLA, T = 2048
                                       std::make_tuple(3.78363e-3, 1.65842e-3, 2.95584e-3));  // FLA chunk, T = 8192
  INFO("o " << o << " floor " << floor << " hT " << ht);
  CHECK(judge(builtin, Precision::tensor_core, DType::bf16, o, floor, ht) == Status::fail);
  CHECK(judge(fla, Precision::tensor_core, DType::bf16, o, floor, ht) == Status::pass);
  // Its bounds are still a gate: twice FLA's error fails, in o or in hT.
  CHECK(judge(fla, Precision::tensor_core, DType::bf16, 2 * o, floor, ht) == Status::fail);
  CHECK(judge(fla, Precision::tensor_core, DType::bf16, o, floor, 2 * ht) == Status::fail);
  // wy_ut's row (1.00 floors, hT 5.3e-6) passes both.
  CHECK(judge(builtin, Precision::tensor_core, DType::bf16, floor, floor, 5.3e-6) == Status::pass);
  CHECK(judge(fla, Precision::tensor_core, DType::bf16, floor, floor, 5.3e-6) == Status::pass);
}

TEST_CASE("bf16_intermediates bounds FLA's and FlashQLA's measured gradients; the built-in table does not",
          "[tolerance][profile][backward]") {
  const ToleranceProfile builtin = ToleranceProfile::builtin();
  const ToleranceProfile fla = read_tolerance_profile("bf16_intermediates");
  // reports/results/h200/2026-12-03_peer_gradients/ext.csv (T = 2048, bf16, h0 off): rel_l2 and floor.
  struct Measured {
    const char* who;
    Grad g;
    double rel, floor;
  };
  const Measured rows[] = {
      {"FlashQLA", Grad::dq, 3.69919e-3, 1.65853e-3}, {"FlashQLA", Grad::dk, 3.77691e-3, 1.66788e-3},
      {"FlashQLA", Grad::dv, 3.35785e-3, 1.64993e-3}, {"FlashQLA", Grad::dg, 3.21344e-3, 2.63159e-8},
      {"FlashQLA", Grad::dbeta, 3.24319e-3, 2.58581e-8}, {"FLA", Grad::dq, 3.77446e-3, 1.65853e-3},
      {"FLA", Grad::dk, 4.21639e-3, 1.66788e-3},     {"FLA", Grad::dv, 2.97807e-3, 1.64993e-3},
      {"FLA", Grad::dg, 3.33395e-3, 2.63159e-8},     {"FLA", Grad::dbeta, 2.46576e-3, 2.58581e-8}};
  int builtin_fails = 0;
  for (const Measured& m : rows) {
    INFO(m.who << " " << grad_name(m.g));
    const double tight = builtin.grad_bound_at(Precision::tensor_core, DType::bf16, m.g, m.floor);
    const double loose = fla.grad_bound_at(Precision::tensor_core, DType::bf16, m.g, m.floor);
    CHECK(tight > 0);
    CHECK(m.rel <= loose);
    builtin_fails += m.rel > tight;
  }
  // Still a gate: twice the worst of the two fails, gradient by gradient.
  for (Grad g : {Grad::dq, Grad::dk, Grad::dv, Grad::dg, Grad::dbeta}) {
    double worst = 0, floor = 0;
    for (const Measured& m : rows)
      if (m.g == g && m.rel > worst) worst = m.rel, floor = m.floor;
    INFO(grad_name(g));
    CHECK(2 * worst > fla.grad_bound_at(Precision::tensor_core, DType::bf16, g, floor));
  }
  CHECK(builtin_fails == 9);  // all but FLA's dbeta (2.47e-3 under 2.5e-3)
  // A gradient at its floor passes both.
  CHECK(builtin.grad_bound_at(Precision::tensor_core, DType::bf16, Grad::dk, 1.66788e-3) >= 1.66788e-3);
}

TEST_CASE("a tighter profile fails what the built-in table passes", "[tolerance][profile][runner]") {
  const ToleranceProfile builtin = ToleranceProfile::builtin();
  const ToleranceProfile tight = parse_tolerance_text("tensor_core bf16 o=2e-3\nfp32_math fp32 hT=1e-9\n", "tight.txt");
  // o 2.2e-3 on a floor of 1.2e-3: under 2.5e-3, over 2e-3 (and 1.5 floors, 1.8e-3, do not lift the bound).
  CHECK(judge(builtin, Precision::tensor_core, DType::bf16, 2.2e-3, 1.2e-3, 0) == Status::pass);
  CHECK(judge(tight, Precision::tensor_core, DType::bf16, 2.2e-3, 1.2e-3, 0) == Status::fail);
  // Through the runner: cpu_recurrent's float32 state errs by ~1e-7, which 1e-9 fails (o's bound would
  // widen to the float32 cancellation bound, 8 u kappa >= 4.8e-7; hT's does not).
  Problem p;
  p.shape = GdnShape{1, 16, 1, 1, 8, 8};
  p.dtype = DType::f32;
  p.chunk = 16;
  p.seed = 7;
  RunOptions opt;
  const auto verdict = [&](const ToleranceProfile& profile) {
    opt.tolerances = profile;
    const RunSummary s = execute_cases({Case{p, find_variant("cpu_recurrent"), true}}, opt, [](const ResultRow&) {});
    REQUIRE(s.rows.size() == 1);
    INFO(s.rows[0].reason);
    return s.rows[0].status;
  };
  CHECK(verdict(builtin) == Status::pass);
  CHECK(verdict(tight) == Status::fail);
}

TEST_CASE("a malformed tolerance file is a UsageError naming the file and the line", "[tolerance][profile][cli]") {
  const auto [text, line, says] = GENERATE(
      std::make_tuple("tensor_core bf16\n", 1, "expected PRECISION DTYPE"),
      std::make_tuple("# ok\nfast_math bf16 o=1e-3\n", 2, "unknown precision class 'fast_math'"),
      std::make_tuple("tensor_core bfloat16 o=1e-3\n", 1, "unknown dtype 'bfloat16'"),
      std::make_tuple("tensor_core bf16 ht=1e-3\n", 1, "unknown output 'ht' (use o, hT, dq, dk, dv, dg, dbeta or dh0)"),
      std::make_tuple("tensor_core bf16 o 1e-3\n", 1, "'o' is not o=BOUND or hT=BOUND"),
      std::make_tuple("tensor_core bf16 o=-1e-3\n", 1, "must be positive"),
      std::make_tuple("tensor_core bf16 o=0\n", 1, "must be positive"),
      std::make_tuple("tensor_core bf16 o=nan\n", 1, "'nan' is not a number"),
      std::make_tuple("tensor_core bf16 o=inf\n", 1, "'inf' is not a number"),
      std::make_tuple("tensor_core bf16 o=1e999\n", 1, "'1e999' is not a number"),
      std::make_tuple("tensor_core bf16 o=0x1p-8\n", 1, "'0x1p-8' is not a number"),
      std::make_tuple("tensor_core bf16 o=\n", 1, "'' is not a number"),
      std::make_tuple("tensor_core bf16 o=1.5\n", 1, "passes an output of zeros"),
      std::make_tuple("tensor_core bf16 o=1x_floor\n", 1, "below 1.5x_floor"),
      std::make_tuple("tensor_core bf16 o=nanx_floor\n", 1, "'nan' is not a number"),
      std::make_tuple("tensor_core bf16 hT=3x_floor\n", 1, "give it a rel_l2"),
      std::make_tuple("tensor_core bf16 o=3x_floor\n\ntensor_core bf16 o=4e-3\n", 3, "given twice (lines 1 and 3)"),
      std::make_tuple("tensor_core bf16 hT=1e-3 hT=2e-3\n", 1, "given twice (lines 1 and 1)"));
  INFO(text);
  const std::string where = "dir/p.txt:" + std::to_string(line) + ": ";
  CHECK_THROWS_AS(parse_tolerance_text(text, "dir/p.txt"), UsageError);
  CHECK_THROWS_WITH(parse_tolerance_text(text, "dir/p.txt"), Catch::StartsWith("--tolerances: " + where) &&
                                                                 Catch::Contains(says));
}

TEST_CASE("a tolerance file with no entry, named builtin, or missing is refused", "[tolerance][profile][cli]") {
  CHECK_THROWS_WITH(parse_tolerance_text("# nothing\n\n", "p.txt"), Catch::Contains("p.txt: no entry"));
  CHECK_THROWS_WITH(parse_tolerance_text("", "p.txt"), Catch::Contains("no entry"));
  CHECK_THROWS_WITH(parse_tolerance_text("tensor_core bf16 o=3x_floor\n", "x/builtin.txt"),
                    Catch::Contains("rename the file"));
  CHECK_THROWS_WITH(read_tolerance_profile("no_such_profile"), Catch::Contains("no tolerance file 'no_such_profile'"));
  CHECK_THROWS_AS(read_tolerance_profile("/no/such/dir/p.txt"), UsageError);
  CHECK(read_tolerance_profile("builtin").hash() == ToleranceProfile::builtin().hash());
  // CRLF line ends and tabs are blanks.
  CHECK(parse_tolerance_text("tensor_core\tbf16\to=3x_floor\r\n", "p.txt").o_bound(Precision::tensor_core, DType::bf16).value ==
        3.0);
}

TEST_CASE("the profile hash changes with the contract, not with comments or order", "[tolerance][profile][hash]") {
  const ToleranceProfile builtin = ToleranceProfile::builtin();
  const std::string h = builtin.hash();
  CHECK(h.size() == 16);
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
  // The canonical text is itself a (complete) tolerance file: read back, the same contract.
  CHECK(parse_tolerance_text(builtin.canonical_text(), "copy.txt").hash() == h);
  const ToleranceProfile a = parse_tolerance_text("tensor_core bf16 o=3x_floor hT=4e-3\ntensor_core fp16 o=3x_floor\n", "a.txt");
  const ToleranceProfile same = parse_tolerance_text(
      "# reordered, commented\ntensor_core fp16 o=3x_floor  # fp16\n\ntensor_core bf16 hT=4e-3 o=3.0x_floor\n", "b.txt");
  CHECK(a.hash() != h);
  CHECK(same.hash() == a.hash());
  CHECK(parse_tolerance_text("tensor_core bf16 o=3x_floor hT=4.5e-3\ntensor_core fp16 o=3x_floor\n", "a.txt").hash() !=
        a.hash());
  CHECK(parse_tolerance_text("tensor_core bf16 o=3x_floor hT=4e-3\ntensor_core fp16 o=3.5x_floor\n", "a.txt").hash() !=
        a.hash());
  // A floor multiple is not the absolute bound of the same number.
  CHECK(parse_tolerance_text("tensor_core bf16 o=3x_floor\n", "c.txt").hash() !=
        parse_tolerance_text("tensor_core bf16 o=0.003\n", "c.txt").hash());
}

TEST_CASE("the binary: --tolerances names the profile in every row, and a bad file is one line, exit 2",
          "[tolerance][profile][cli][binary]") {
  testutil::TempDir dir;
  const testutil::SuiteFile empty("");
  const std::string tight = dir.file("tight.txt");
  testutil::write_text(tight, "fp32_math fp32 hT=1e-9\n");  // the float32 state errs by ~1e-7
  const std::string cases = "verify --suite '" + empty.path + "' --variants cpu_recurrent,cpu_chunked --H 1 "
                            "--K 8 --V 8 --dtypes fp32 --seed 3 --no-progress ";
  const std::string base = cases + "--T 17 ";
  const auto rows_of = [&](const std::string& csv) { return testutil::read_csv(csv); };

  const testutil::ProcessResult plain = testutil::run_gdnbench(base + "--out '" + dir.file("plain.csv") + "'");
  REQUIRE(plain.exit_code == 0);
  const testutil::ProcessResult judged =
      testutil::run_gdnbench(base + "--tolerances '" + tight + "' --out '" + dir.file("tight.csv") + "'");
  CHECK(judged.exit_code == 1);
  CHECK_THAT(judged.out, Catch::Contains("tolerances tight " + read_tolerance_profile(tight).hash()));
  const testutil::Csv a = rows_of(dir.file("plain.csv")), b = rows_of(dir.file("tight.csv"));
  REQUIRE(a.rows.size() == 2);
  REQUIRE(b.rows.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(a.cell(i, "tolerances") == "builtin");
    CHECK(a.cell(i, "tolerances_hash") == ToleranceProfile::builtin().hash());
    CHECK(a.cell(i, "status") == "PASS");
    CHECK(b.cell(i, "tolerances") == "tight");
    CHECK(b.cell(i, "tolerances_hash") == read_tolerance_profile(tight).hash());
    CHECK(b.cell(i, "status") == "FAIL");
    CHECK(b.cell(i, "tol_ht") == "1e-09");
  }

  SECTION("a profile by name from tolerances/") {
    const testutil::ProcessResult r =
        testutil::run_gdnbench(base + "--tolerances bf16_intermediates --out '" + dir.file("named.csv") + "'");
    CHECK(r.exit_code == 0);
    CHECK(rows_of(dir.file("named.csv")).cell(0, "tolerances") == "bf16_intermediates");
  }
  SECTION("a malformed file, a missing one") {
    const std::string bad = dir.file("bad.txt");
    testutil::write_text(bad, "# fine\ntensor_core bf16 o=-3e-3\n");
    for (const std::string& file : {bad, dir.file("missing.txt")}) {
      const testutil::ProcessResult r =
          testutil::run_gdnbench(base + "--tolerances '" + file + "' --out '" + dir.file("never.csv") + "'");
      CHECK(r.exit_code == 2);
      const std::vector<std::string> lines = r.err_lines();
      REQUIRE(lines.size() == 1);
      CHECK_THAT(lines[0], Catch::StartsWith("gdnbench: error: --tolerances: ") && Catch::Contains(file));
      if (file == bad) CHECK_THAT(lines[0], Catch::Contains(bad + ":2: "));
      CHECK_FALSE(std::filesystem::exists(dir.file("never.csv")));
    }
  }
  SECTION("--resume refuses a CSV judged by another profile, and continues one of the same") {
    const std::string csv = dir.file("plain.csv");
    const std::string before = testutil::read_text(csv);
    const testutil::ProcessResult r =
        testutil::run_gdnbench(cases + "--T 17,18 --resume --tolerances '" + tight + "' --out '" + csv + "'");
    CHECK(r.exit_code == 2);
    const std::vector<std::string> lines = r.err_lines();
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Catch::Contains("--resume: '" + csv + "' row 1 was judged by tolerances builtin") &&
                             Catch::Contains("this run by tight"));
    CHECK(testutil::read_text(csv) == before);
    const testutil::ProcessResult same = testutil::run_gdnbench(cases + "--T 17,18 --resume --out '" + csv + "'");
    INFO(same.out << same.err);
    CHECK(same.exit_code == 0);
    CHECK(rows_of(csv).rows.size() == 4);
  }
  SECTION("check --tolerances: the verdict and the row name the profile; --csv keeps one profile") {
    const std::string dump = dir.file("dump");
    REQUIRE(testutil::run_gdnbench("dump --T 8 --H 1 --K 8 --V 8 --dtypes bf16 --seed 3 --out '" + dump + "'")
                .exit_code == 0);
    // The dump's v as o is wrong, which is all this needs: a row, judged by a named profile.
    const std::string check = "check '" + dump + "' --o '" + dump + "/v.npy' --csv '" + dir.file("ext.csv") + "' ";
    const testutil::ProcessResult r = testutil::run_gdnbench(check + "--tolerances '" + tight + "'");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("; tolerances tight " + read_tolerance_profile(tight).hash()));
    CHECK(rows_of(dir.file("ext.csv")).cell(0, "tolerances") == "tight");
    const std::string before = testutil::read_text(dir.file("ext.csv"));
    const testutil::ProcessResult other = testutil::run_gdnbench(check);
    CHECK(other.exit_code == 2);
    REQUIRE(other.err_lines().size() == 1);
    CHECK_THAT(other.err, Catch::Contains("row 1 was judged by tolerances tight") &&
                              Catch::Contains("this check by builtin"));
    CHECK(testutil::read_text(dir.file("ext.csv")) == before);
    const testutil::ProcessResult bad = testutil::run_gdnbench(check + "--tolerances '" + dir.file("missing.txt") + "'");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::StartsWith("gdnbench: error: check: --tolerances: no tolerance file"));
  }
}
