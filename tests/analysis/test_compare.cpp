// `gdnbench compare`: matching by case, the verdict rule (threshold and noise), FAIL/SKIPPED
// transitions, refusals, and the exit codes of the real binary.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "harness/analysis/compare.h"
#include "harness/io/csv.h"
#include "harness/io/errors.h"
#include "harness/result.h"
#include "harness/tolerance.h"
#include "tests/common/test_util.h"

namespace {

ResultRow row(int64_t T, double ms, double cv = 0.001, Status status = Status::pass) {
  ResultRow r;
  r.problem.shape = GdnShape{1, T, 4, 4, 64, 64};
  r.problem.dtype = DType::bf16;
  r.variant = "gdn_fake";
  r.family = "gdn";
  r.backend = "cuda";
  r.precision = "tensor_core";
  r.device = "GPU X";
  r.plan = "plain_k64";
  r.status = status;
  r.o = compare_to_reference({1, 2}, {1, 2.001}, DType::bf16);
  r.tol = tolerance_for(Precision::tensor_core, DType::bf16);
  if (status == Status::pass && ms > 0) {
    TimingStats t;
    t.samples = 10;
    t.median_ms = t.min_ms = t.p20_ms = t.p80_ms = t.mean_ms = ms;
    t.cv = cv;
    t.timer = "events";
    t.l2_flush = "write";
    r.timing = t;
  }
  if (status == Status::skipped) r.reason = "no GPU";
  if (status == Status::fail) r.reason = "o rel_l2 2 > 0.00254";
  return r;
}

std::string write(const testutil::TempDir& dir, const std::string& name, const std::vector<ResultRow>& rows,
                  const std::string& suite = "suites/gate.ini",
                  const ToleranceProfile& tolerances = ToleranceProfile::builtin()) {
  RunMeta m;
  m.tolerances = tolerances.name();
  m.tolerances_hash = tolerances.hash();
  m.run_id = "r";
  m.timestamp = "2026-01-01T00:00:00Z";
  m.git_sha = "abc";
  m.host = "h";
  m.command = "run";
  m.suite = suite;
  const std::string path = dir.file(name);
  CsvWriter w(path, m);
  for (const ResultRow& r : rows) w.append(r);
  return path;
}

CompareResult compare_files(const std::string& a, const std::string& b, CompareOptions opt = {}) {
  const std::vector<std::string> cols = {"variant", "status"};
  return compare_tables(read_gdnbench_csv(a, cols), read_gdnbench_csv(b, cols), opt);
}

CompareVerdict only_verdict(const CompareResult& r) {
  REQUIRE(r.rows.size() == 1);
  return r.rows[0].verdict;
}

}  // namespace

TEST_CASE("compare: a timed change counts past max(threshold, both sides' noise)", "[compare]") {
  testutil::TempDir d;
  const std::string base = write(d, "a.csv", {row(1024, 1.0)});
  CHECK(only_verdict(compare_files(base, write(d, "same.csv", {row(1024, 1.03)}))) == CompareVerdict::same);
  CHECK(only_verdict(compare_files(base, write(d, "slow.csv", {row(1024, 1.20)}))) == CompareVerdict::slower);
  CHECK(only_verdict(compare_files(base, write(d, "fast.csv", {row(1024, 0.80)}))) == CompareVerdict::faster);
  // 3% slower: within 5%, past 1%.
  CompareOptions tight;
  tight.threshold = 0.01;
  CHECK(only_verdict(compare_files(base, write(d, "slow3.csv", {row(1024, 1.03)}), tight)) == CompareVerdict::slower);
  // 20% slower on a side with a CV of 10%: 3 x 10% of 1.2 ms = 0.36 ms of noise, more than the change.
  const CompareResult noisy = compare_files(base, write(d, "noisy.csv", {row(1024, 1.20, 0.10)}));
  CHECK(only_verdict(noisy) == CompareVerdict::inconclusive);
  CHECK(noisy.rows[0].noise_ms == Approx(0.36));
  CHECK(noisy.regressions == 0);
  // Timed another way: no verdict on the times.
  ResultRow graph = row(1024, 1.5);
  graph.timing->timer = "graph";
  CHECK(only_verdict(compare_files(base, write(d, "graph.csv", {graph}))) == CompareVerdict::not_comparable);
}

TEST_CASE("compare: FAIL and SKIPPED transitions; unmatched cases; the last row of a case", "[compare]") {
  testutil::TempDir d;
  const std::string base = write(d, "a.csv", {row(1024, 1.0), row(2048, 2.0, 0.001, Status::fail), row(4096, 4.0)});
  const std::string fresh = write(d, "b.csv",
                                  {row(1024, 0, 0, Status::fail), row(2048, 2.0), row(4096, 0, 0, Status::skipped),
                                   row(8192, 0, 0, Status::fail), row(16384, 9.0)});
  const CompareResult r = compare_files(base, fresh);
  REQUIRE(r.rows.size() == 5);
  CHECK(r.rows[0].verdict == CompareVerdict::new_fail);
  CHECK(r.rows[1].verdict == CompareVerdict::fixed);
  CHECK(r.rows[2].verdict == CompareVerdict::lost);
  CHECK(r.rows[3].verdict == CompareVerdict::new_fail);  // a FAIL base never ran
  CHECK(r.rows[4].verdict == CompareVerdict::only_new);
  CHECK(r.regressions == 3);
  // A case only in base, and a case whose plan changed: another case, on each side.
  ResultRow other_plan = row(1024, 1.0);
  other_plan.plan = "two_level_k64 (G=4)";
  const CompareResult moved =
      compare_files(write(d, "c.csv", {row(1024, 1.0), row(2048, 2.0)}), write(d, "e.csv", {other_plan}));
  REQUIRE(moved.rows.size() == 3);
  CHECK(moved.rows[0].verdict == CompareVerdict::only_base);
  CHECK(moved.rows[1].verdict == CompareVerdict::only_base);
  CHECK(moved.rows[2].verdict == CompareVerdict::only_new);
  CHECK(moved.regressions == 0);
  // A resumed file with a case twice: its last row counts.
  const CompareResult dup = compare_files(base, write(d, "dup.csv", {row(1024, 5.0), row(1024, 1.0)}));
  CHECK(dup.new_duplicates == 1);
  CHECK(dup.rows[0].verdict == CompareVerdict::same);
}

TEST_CASE("compare: files of different suites or devices are refused unless asked", "[compare]") {
  testutil::TempDir d;
  const std::string base = write(d, "a.csv", {row(1024, 1.0)});
  const std::string other_suite = write(d, "b.csv", {row(1024, 1.0)}, "suites/scaling.ini");
  CHECK_THROWS_WITH(compare_files(base, other_suite), Catch::Contains("--allow-mismatch"));
  ResultRow elsewhere = row(1024, 1.0);
  elsewhere.device = "GPU Y";
  CHECK_THROWS_AS(compare_files(base, write(d, "c.csv", {elsewhere})), UsageError);
  CompareOptions allow;
  allow.allow_mismatch = true;
  CHECK(only_verdict(compare_files(base, other_suite, allow)) == CompareVerdict::same);
}

TEST_CASE("compare: rows judged by different tolerance profiles are refused unless asked", "[compare][profile]") {
  testutil::TempDir d;
  ToleranceProfile loose = ToleranceProfile::builtin();
  loose.set_o_bound(Precision::tensor_core, DType::bf16, {3.0, true}, "test");
  loose.set_name("loose");
  ToleranceProfile renamed = ToleranceProfile::builtin();
  renamed.set_name("renamed");
  const std::string base = write(d, "a.csv", {row(1024, 1.0)});
  const std::string other = write(d, "b.csv", {row(1024, 1.0)}, "suites/gate.ini", loose);
  CHECK_THROWS_WITH(compare_files(base, other),
                    Catch::Contains("is tolerances 'builtin " + ToleranceProfile::builtin().hash() + "'") &&
                        Catch::Contains("'loose " + loose.hash() + "'") && Catch::Contains("--allow-mismatch"));
  // The same bounds under another name are refused too: a CSV's profile is its name and hash.
  CHECK_THROWS_WITH(compare_files(base, write(d, "c.csv", {row(1024, 1.0)}, "suites/gate.ini", renamed)),
                    Catch::Contains("'renamed " + ToleranceProfile::builtin().hash() + "'"));
  CompareOptions allow;
  allow.allow_mismatch = true;
  CHECK(only_verdict(compare_files(base, other, allow)) == CompareVerdict::same);
  // The markdown says which profile judged each side.
  const std::vector<std::string> cols = {"variant", "status"};
  const CsvTable a = read_gdnbench_csv(base, cols), b = read_gdnbench_csv(other, cols);
  CHECK_THAT(compare_markdown(compare_tables(a, b, allow), a, b, allow),
             Catch::Contains("tolerances builtin " + ToleranceProfile::builtin().hash()) &&
                 Catch::Contains("tolerances loose " + loose.hash()));
  // A file older than the columns (schema v2) says nothing of its profile: compared as it is.
  CsvTable older = read_gdnbench_csv(other, cols);
  for (const char* column : {"tolerances_hash", "tolerances"}) {
    const size_t c = size_t(older.column(column));
    older.header.erase(older.header.begin() + long(c));
    for (auto& r : older.rows) r.erase(r.begin() + long(c));
  }
  CHECK(only_verdict(compare_tables(a, older, {})) == CompareVerdict::same);
  CHECK_THAT(compare_markdown(compare_tables(a, older, {}), a, older, {}), Catch::Contains("not recorded"));
}

TEST_CASE("gdnbench compare: exit 0 without a regression, 1 with one, 2 on bad input", "[compare][cli]") {
  testutil::TempDir d;
  const std::string base = write(d, "a.csv", {row(1024, 1.0), row(2048, 2.0)});
  const std::string same = write(d, "same.csv", {row(1024, 1.01), row(2048, 2.0)});
  const std::string slow = write(d, "slow.csv", {row(1024, 1.5), row(2048, 2.0)});
  const auto run = [](const std::string& args) { return testutil::run_gdnbench("compare " + args); };
  auto r = run("'" + base + "' '" + same + "'");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("2 same") && Catch::Contains("0 regressions"));
  r = run("'" + base + "' '" + slow + "' --out '" + d.file("c.md") + "'");
  CHECK(r.exit_code == 1);
  CHECK_THAT(testutil::read_text(d.file("c.md")), Catch::Contains("SLOWER") && Catch::Contains("1.500"));
  CHECK(run("'" + base + "' '" + slow + "' --threshold 60%").exit_code == 0);
  for (const std::string& bad :
       {std::string("'") + base + "'", "'" + base + "' '" + same + "' --threshold x",
        "'" + base + "' '" + same + "' --threshold -1%", "'" + base + "' '" + same + "' --bogus",
        "'" + base + "' '" + same + "' --out '" + same + "'", "'" + base + "' '" + d.file("missing.csv") + "'"}) {
    INFO(bad);
    const auto e = run(bad);
    CHECK(e.exit_code == 2);
    CHECK(e.err_lines().size() == 1);
  }
  // The file named as --out of a refused comparison is left as it was.
  CHECK(testutil::read_text(same).find("gdn_fake") != std::string::npos);
}
