// Packed batches on the command line and in the rows: --seqlens given or drawn from the seed,
// its usage errors, the problem's key, the CSV's seqlens column, and what is SKIPPED.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/io/csv.h"
#include "harness/runner.h"
#include "harness/skip.h"
#include "tests/common/cli_test_util.h"

using clitest::parse;
using clitest::with_suite;

namespace {
Problem first_problem(const Invocation& inv) {
  REQUIRE(!inv.cases.empty());
  return inv.cases.front().problem;
}
}  // namespace

TEST_CASE("--seqlens makes a packed batch: B = 1, T the total, offsets per sequence", "[cli][packed]") {
  const testutil::SuiteFile empty("");
  const Problem p = first_problem(parse(with_suite(empty, {"verify", "--seqlens", "1,63,64,65,1000", "--seed", "7"})));
  CHECK(p.packed());
  CHECK(p.shape.B == 1);
  CHECK(p.shape.T == 1193);
  CHECK(p.shape.num_seqs == 5);
  CHECK(p.cu_seqlens == std::vector<int32_t>{0, 1, 64, 128, 193, 1193});
  CHECK(p.shape.state_elems() == 5 * p.shape.HV * p.shape.K * p.shape.V);
  CHECK(seqlens_text(p.cu_seqlens) == "1+63+64+65+1000");
  CHECK(seqlens_text({0, 64, 128, 192, 193}) == "64*3+1");
  // --T may be given when it is the total; LEN*COUNT repeats a length.
  CHECK(first_problem(parse(with_suite(empty, {"verify", "--seqlens", "2,3", "--T", "5"}))).shape.T == 5);
  CHECK(first_problem(parse(with_suite(empty, {"verify", "--seqlens", "2*3,5"}))).cu_seqlens ==
        std::vector<int32_t>{0, 2, 4, 6, 11});
  // A suite's packed line keeps its lengths where a command-line --T reduces the other lines' range;
  // a --T on the packed line itself must be the total.
  const testutil::SuiteFile suite("grid = --T 64\ngrid = --seqlens 3,4\n");
  const Invocation inv = parse(with_suite(suite, {"verify", "--T", "32", "--variants", "cpu_recurrent"}));
  REQUIRE(inv.cases.size() == 2);
  CHECK(inv.cases[0].problem.shape.T == 32);
  CHECK(inv.cases[1].problem.shape.T == 7);
  const testutil::SuiteFile bad("grid = --seqlens 3,4 --T 8\n");
  CHECK_THROWS_AS(parse(with_suite(bad, {"verify"})), UsageError);
}

TEST_CASE("--seqlens random:N:LO-HI draws N lengths in [LO, HI] from the seed", "[cli][packed]") {
  const testutil::SuiteFile empty("");
  const auto drawn = [&](const std::string& seed) {
    return first_problem(parse(with_suite(empty, {"verify", "--seqlens", "random:64:1-40", "--seed", seed}))).cu_seqlens;
  };
  const std::vector<int32_t> a = drawn("11"), b = drawn("11"), c = drawn("12");
  REQUIRE(a.size() == 65);
  CHECK(a == b);
  CHECK(a != c);
  bool low = false, high = false;
  for (size_t n = 0; n + 1 < a.size(); ++n) {
    const int32_t len = a[n + 1] - a[n];
    CHECK(len >= 1);
    CHECK(len <= 40);
    low = low || len <= 3;
    high = high || len >= 38;
  }
  CHECK(low);  // both ends of the range are reached (64 draws of 40 values)
  CHECK(high);
  CHECK(first_problem(parse(with_suite(empty, {"verify", "--seqlens", "random:3:7-7"}))).cu_seqlens ==
        std::vector<int32_t>{0, 7, 14, 21});
}

TEST_CASE("bad --seqlens values are usage errors that say what is wrong", "[cli][packed]") {
  const testutil::SuiteFile empty("");
  const auto error = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"verify"};
    args.insert(args.end(), extra.begin(), extra.end());
    try {
      parse(with_suite(empty, args));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error({"--seqlens", "1,0,5"}), Catch::Contains("'0', not a length of at least 1"));
  CHECK_THAT(error({"--seqlens", "1,x"}), Catch::Contains("'x', not a length"));
  CHECK_THAT(error({"--seqlens", "1,,2"}), Catch::Contains("not a length"));
  CHECK_THAT(error({"--seqlens", "4*0"}), Catch::Contains("'4*0', not a length"));
  CHECK_THAT(error({"--seqlens", "4*2*2"}), Catch::Contains("not a length"));
  CHECK_THAT(error({"--seqlens", "-3"}), Catch::Contains("not a length"));
  CHECK_THAT(error({"--seqlens", "random:4:9-2"}), Catch::Contains("is not random:N:LO-HI"));
  CHECK_THAT(error({"--seqlens", "random:0:1-2"}), Catch::Contains("is not random:N:LO-HI"));
  CHECK_THAT(error({"--seqlens", "random:4"}), Catch::Contains("is not random:N:LO-HI"));
  CHECK_THAT(error({"--seqlens", "2000000000,2000000000"}), Catch::Contains("totals more than"));
  CHECK_THAT(error({"--seqlens", "1,2", "--B", "2"}), Catch::Contains("B = 1"));
  CHECK_THAT(error({"--seqlens", "1,2", "--T", "4"}), Catch::Contains("total T = 3, not --T 4"));
  CHECK(error({"--seqlens", "1,2"}) == "no error");
}

TEST_CASE("packed and unpacked problems never share inputs or a reference", "[harness][packed]") {
  Problem unpacked;
  unpacked.shape = GdnShape{1, 130, 2, 2, 16, 16};
  Problem packed = unpacked, other = unpacked;
  packed.seqlens = "65,65";
  other.seqlens = "64,66";
  resolve_packed(packed);
  resolve_packed(other);
  REQUIRE(packed.shape.T == unpacked.shape.T);
  CHECK(packed.input_key() != unpacked.input_key());
  CHECK(packed.input_key() != other.input_key());
  ResultRow row;
  row.problem = packed;
  const std::vector<std::string> cols = csv_columns(), cells = csv_row_fields(RunMeta{}, row);
  const size_t at = size_t(std::find(cols.begin(), cols.end(), "seqlens") - cols.begin());
  REQUIRE(at < cols.size());
  CHECK(cells[at] == "65*2");
  row.problem = unpacked;
  CHECK(csv_row_fields(RunMeta{}, row)[at].empty());
}

TEST_CASE("a packed batch verifies on the CPU variants and is SKIPPED by attention and front ends", "[harness][packed]") {
  const testutil::SuiteFile empty("");
  for (const char* pass : {"fwd", "bwd"}) {
    INFO("pass " << pass);
    const Invocation inv = parse(with_suite(empty, {"verify", "--seqlens", "1,17,64,40", "--K", "16", "--V", "16",
                                                    "--chunk", "16", "--h0", "on", "--pass", pass, "--dtypes", "bf16"}));
    RunOptions opt;
    const RunSummary sum = execute_cases(inv.cases, opt, [](const ResultRow&) {});
    REQUIRE(sum.rows.size() == 2);
    for (const ResultRow& r : sum.rows) {
      INFO(r.variant << ": " << r.reason);
      CHECK(r.status == Status::pass);
      CHECK(r.ref_heads == 4 * 2);
      // The forwards are native; the backwards run a sequence at a time.
      CHECK((r.plan.find("(per sequence)") != std::string::npos) == (std::string(pass) == "bwd"));
    }
  }
  Problem p;
  p.seqlens = "3,4";
  resolve_packed(p);
  VariantInfo attention = *find_variant("cpu_recurrent");  // an entry of each kind, on any build
  CHECK(!skip_reason(attention, p, GpuInfo{}));
  attention.family = Family::attention;
  CHECK_THAT(*skip_reason(attention, p, GpuInfo{}), Catch::Contains("attention baselines take no packed batch"));
  p.frontend = true;
  VariantInfo fe = *find_variant("cpu_recurrent");
  fe.frontend = true;
  CHECK_THAT(*skip_reason(fe, p, GpuInfo{}), Catch::Contains("the front end's conv caches"));
}
