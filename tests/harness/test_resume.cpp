// --resume through parse_invocation and the real binary: a limited or interrupted run completed,
// every case exactly once and one seed; an older CSV continued; another header refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/gpu_runtime.h"
#include "tests/common/cli_test_util.h"
#include "tests/common/test_util.h"

namespace {

using testutil::Csv;
using testutil::read_csv;
using testutil::SuiteFile;

using clitest::parse;

using clitest::with_suite;

}  // namespace

namespace {
// The identity of each row (the columns --resume matches on), and how often each occurs.
std::map<std::string, int> row_identities(const Csv& csv) {
  std::map<std::string, int> n;
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    std::string key;
    for (const char* col : {"variant", "dtype", "B", "T", "H", "HV", "K", "V", "chunk", "gate", "delta",
                            "h0", "gate_dist", "beta_dist", "scale", "seed"})
      key += csv.cell(i, col) + "|";
    ++n[key];
  }
  return n;
}
std::set<std::string> column_values(const Csv& csv, const std::string& column) {
  std::set<std::string> v;
  for (size_t i = 0; i < csv.rows.size(); ++i) v.insert(csv.cell(i, column));
  return v;
}
}  // namespace

TEST_CASE("--resume and a seed of 64 bits parse", "[cli][resume]") {
  const SuiteFile empty("");
  const Invocation plain = parse(with_suite(empty, {"verify", "--T", "4"}));
  CHECK_FALSE(plain.resume);
  CHECK_FALSE(plain.seed_given);
  const Invocation r = parse(with_suite(empty, {"verify", "--T", "4", "--resume", "--seed", "18446744073709551615"}));
  CHECK(r.resume);
  CHECK(r.seed_given);
  CHECK(r.seed == 18446744073709551615ull);  // random seeds use all 64 bits; --seed must take them back
  CHECK_THROWS_AS(parse(with_suite(empty, {"verify", "--seed", "-1"})), UsageError);
  CHECK_THROWS_AS(parse(with_suite(empty, {"verify", "--seed", "18446744073709551616"})), UsageError);
}

TEST_CASE("the binary: --resume completes a limited run; every case once, one seed", "[cli][binary][resume]") {
  testutil::TempDir dir;
  const SuiteFile empty("");
  const std::string out = dir.file("r.csv");
  const std::string base = "verify --suite '" + empty.path + "' --variants cpu_recurrent,cpu_chunked "
                           "--chunk 16 --K 8 --V 8 --no-progress --out '" + out + "' ";
  // No --seed: the first run draws one, the resumed run must take it from the CSV.
  const testutil::ProcessResult first = testutil::run_gdnbench(base + "--T 3,17");
  REQUIRE(first.exit_code == 0);
  REQUIRE(read_csv(out).rows.size() == 4);
  const testutil::ProcessResult second = testutil::run_gdnbench(base + "--T 3,17,40 --B 1,2 --resume");
  INFO("stdout: " << second.out << "\nstderr: " << second.err);
  CHECK(second.exit_code == 0);
  CHECK(second.out.find("4 cases already there, 8 to run") != std::string::npos);
  const Csv csv = read_csv(out);
  CHECK(csv.rows.size() == 12);  // 3 T x 2 B x 2 variants
  const auto ids = row_identities(csv);
  CHECK(ids.size() == 12);
  for (const auto& [key, n] : ids) {
    INFO(key);
    CHECK(n == 1);
  }
  CHECK(column_values(csv, "seed").size() == 1);
  CHECK(column_values(csv, "T") == std::set<std::string>{"3", "17", "40"});

  SECTION("resuming a complete CSV runs nothing and leaves the file as it was") {
    const std::string before = testutil::read_text(out);
    const testutil::ProcessResult again = testutil::run_gdnbench(base + "--T 3,17,40 --B 1,2 --resume");
    CHECK(again.exit_code == 0);
    CHECK(again.out.find("12 cases already there, 0 to run") != std::string::npos);
    CHECK(again.out.find("0 passed, 0 failed, 0 skipped") != std::string::npos);
    CHECK(testutil::read_text(out) == before);
  }
  SECTION("an explicit --seed that differs runs every case again, beside the old rows") {
    const testutil::ProcessResult other = testutil::run_gdnbench(base + "--T 3 --resume --seed 7");
    CHECK(other.exit_code == 0);
    const Csv more = read_csv(out);
    CHECK(more.rows.size() == 14);
    CHECK(column_values(more, "seed").size() == 2);
    SECTION("and then several seeds without --seed is a usage error") {
      const testutil::ProcessResult r = testutil::run_gdnbench(base + "--T 3 --resume");
      CHECK(r.exit_code == 2);
      CHECK(r.err_lines().size() == 1);
      CHECK(r.err.find("seeds") != std::string::npos);
      CHECK(read_csv(out).rows.size() == 14);  // untouched
    }
  }
}

TEST_CASE("the binary: an interrupted run, resumed, holds every case exactly once", "[cli][binary][resume]") {
  testutil::TempDir tmp;
  const std::string csv_path = tmp.file("partial.csv");
  const std::string args = "run --variants cpu_recurrent --dtypes fp32 --T 64 --K 16 --V 16 --B 1,2,3,4 --H 1,2,3,4,5,6,7,8 "
                           "--min-samples 50 --cv-target 0 --max-seconds 0.05 --no-progress --out '" +
                           csv_path + "'";
  const std::string cmd = std::string("cd '") + GDNBENCH_SOURCE_DIR + "' && ('" + GDNBENCH_BINARY + "' " +
                          args + " >/dev/null 2>&1 & pid=$!; " + testutil::wait_for_csv_rows_shell(csv_path) +
                          "kill -INT $pid; wait $pid; exit $?)";
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const size_t partial = read_csv(csv_path).rows.size();
  CHECK(partial < 32);
  const testutil::ProcessResult r = testutil::run_gdnbench(args + " --resume");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);
  const Csv csv = read_csv(csv_path);
  CHECK(csv.rows.size() == 32);
  const auto ids = row_identities(csv);
  CHECK(ids.size() == 32);
  for (const auto& [key, n] : ids) {
    INFO(key);
    CHECK(n == 1);
  }
  CHECK(column_values(csv, "seed").size() == 1);
  for (const auto& row : csv.rows) CHECK(row.size() == csv.header.size());
}

TEST_CASE("the binary: --resume continues a CSV written before a column was added", "[cli][binary][resume]") {
  // The schema adds columns within a version (reports/SCHEMA.md): a file of the same version
  // without the newer ones is continued, its rows widened with empty cells, the header rewritten.
  testutil::TempDir dir;
  const SuiteFile empty("");
  const std::string out = dir.file("older.csv");
  const std::string base =
      "verify --suite '" + empty.path + "' --variants cpu_recurrent --K 8 --V 8 --seed 5 --no-progress --out '" + out + "' ";
  REQUIRE(testutil::run_gdnbench(base + "--T 3").exit_code == 0);
  const Csv first = read_csv(out);
  REQUIRE(first.rows.size() == 1);
  // The same file as an older binary wrote it: without ref_heads.
  const size_t dropped = size_t(std::find(first.header.begin(), first.header.end(), "ref_heads") - first.header.begin());
  REQUIRE(dropped < first.header.size());
  std::string older;
  for (const auto* record : {&first.header, &first.rows[0]}) {
    for (size_t i = 0, n = 0; i < record->size(); ++i)
      if (i != dropped) older += (n++ ? "," : "") + csv_escape((*record)[i]);
    older += "\n";
  }
  testutil::write_text(out, older);

  const testutil::ProcessResult r = testutil::run_gdnbench(base + "--T 3,17 --resume");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);
  const Csv csv = read_csv(out);
  CHECK(csv.header == first.header);
  REQUIRE(csv.rows.size() == 2);
  for (const auto& row : csv.rows) CHECK(row.size() == csv.header.size());
  CHECK(csv.cell(0, "T") == "3");
  CHECK(csv.cell(0, "ref_heads").empty());  // not recorded by the older file: not applicable
  CHECK(csv.cell(0, "o_rel_l2") == first.cell(0, "o_rel_l2"));
  CHECK(csv.cell(1, "T") == "17");
  CHECK_FALSE(csv.cell(1, "ref_heads").empty());

  SECTION("a header with a column this schema does not know is still refused") {
    testutil::write_text(out, "schema_version,no_such_column\n1,x\n");
    const testutil::ProcessResult w = testutil::run_gdnbench(base + "--T 3 --resume");
    CHECK(w.exit_code == 2);
    CHECK(w.err.find(out) != std::string::npos);
  }
  SECTION("so is an older header without a column resume matches on") {
    std::string no_seed;
    const size_t seed_col = size_t(std::find(first.header.begin(), first.header.end(), "seed") - first.header.begin());
    for (size_t i = 0, n = 0; i < first.header.size(); ++i)
      if (i != seed_col) no_seed += (n++ ? "," : "") + first.header[i];
    testutil::write_text(out, no_seed + "\n");
    const testutil::ProcessResult w = testutil::run_gdnbench(base + "--T 3 --resume");
    CHECK(w.exit_code == 2);
    CHECK(w.err.find(out) != std::string::npos);
  }
}

TEST_CASE("the binary: --resume on a CSV with another header is a usage error naming it", "[cli][binary][resume]") {
  testutil::TempDir dir;
  const SuiteFile empty("");
  const std::string out = dir.file("other.csv");
  const std::string foreign = "device,what,value\nx,copy,1\n";
  testutil::write_text(out, foreign);
  const testutil::ProcessResult r = testutil::run_gdnbench(
      "verify --suite '" + empty.path + "' --variants cpu_recurrent --T 3 --K 8 --V 8 --resume --out '" + out + "'");
  CHECK(r.exit_code == 2);
  const std::vector<std::string> lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("gdnbench: error: ", 0) == 0);
  CHECK(lines[0].find(out) != std::string::npos);
  CHECK(testutil::read_text(out) == foreign);  // not overwritten

  SECTION("so is a row of the wrong width") {
    testutil::write_text(out, csv_header_line() + "1,2,3\n");
    const testutil::ProcessResult w = testutil::run_gdnbench(
        "verify --suite '" + empty.path + "' --variants cpu_recurrent --T 3 --K 8 --V 8 --resume --out '" + out + "'");
    CHECK(w.exit_code == 2);
    CHECK(w.err.find(out) != std::string::npos);
  }
}
