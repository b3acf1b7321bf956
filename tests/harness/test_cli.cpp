// The command line: parse_invocation (lists, suites, grids, precedence, usage errors) and the real
// gdnbench binary (exit codes, one-line errors, the CSV it writes).
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

TEST_CASE("list and help need no suite", "[cli]") {
  CHECK(parse({"list"}).command == "list");
  CHECK(parse({"list"}).cases.empty());
  CHECK(parse({"--help"}).command == "help");
  CHECK(parse({"verify", "--help"}).command == "help");
  CHECK(usage_text().find("verify") != std::string::npos);
}

TEST_CASE("lists expand to the cartesian product", "[cli]") {
  const SuiteFile empty("# nothing\n");
  SECTION("every axis multiplies; the chunk axis only chunked variants") {
    const Invocation inv = parse(with_suite(empty, {"verify", "--variants", "cpu_recurrent,cpu_chunked",
                                                    "--T", "1,2,3", "--K", "16,32", "--dtypes", "fp32,bf16",
                                                    "--chunk", "16,32"}));
    // 3 T x 2 K x 2 dtypes x (recurrent once + chunked per chunk = 3) = 36.
    REQUIRE(inv.cases.size() == 36);
    std::set<std::tuple<int64_t, int64_t, int, std::string, int>> distinct;
    for (const Case& c : inv.cases) {
      distinct.insert({c.problem.shape.T, c.problem.shape.K, int(c.problem.dtype), c.variant->name,
                       c.variant->uses_chunk ? c.problem.chunk : 0});
      CHECK(c.explicit_variant);
      CHECK(c.problem.seed == inv.seed);
    }
    CHECK(distinct.size() == 36);
  }
  SECTION("gate distributions multiply only when the gate is on") {
    const Invocation inv = parse(with_suite(empty, {"verify", "--variants", "cpu_recurrent", "--T", "4",
                                                    "--gate", "on,off", "--gate-dist", "logsigmoid,strong"}));
    CHECK(inv.cases.size() == 3);
  }
  SECTION("the remaining axes") {
    const Invocation inv = parse(with_suite(empty, {"verify", "--variants", "cpu_recurrent", "--B", "1,2",
                                                    "--V", "8,16,24", "--delta", "on,off", "--h0", "on,off",
                                                    "--beta-dist", "zero,one"}));
    // B x V x h0 x (delta on: two beta distributions; delta off: beta is unused, one case).
    CHECK(inv.cases.size() == 2 * 3 * 2 * (2 + 1));
  }
  SECTION("auto picks the CPU variants on a machine without a GPU") {
    const Invocation inv = parse(with_suite(empty, {"verify", "--T", "8"}));
    REQUIRE(!inv.cases.empty());
    for (const Case& c : inv.cases) {
      CHECK(c.variant->backend == Backend::cpu);
      CHECK_FALSE(c.explicit_variant);
    }
  }
}

TEST_CASE("the command line overrides the suite file", "[cli]") {
  const SuiteFile suite("variants = cpu_recurrent\nT = 7\nK = 32\nV = 24\ndtypes = bf16\nseed = 99\n"
                        "threads = 3\n");
  const Invocation from_suite = parse(with_suite(suite, {"verify"}));
  REQUIRE(from_suite.cases.size() == 1);
  CHECK(from_suite.cases[0].problem.shape.T == 7);
  CHECK(from_suite.seed == 99);
  CHECK(from_suite.cpu_threads == 3);
  CHECK(from_suite.suite_path == suite.path);

  const Invocation inv = parse(with_suite(suite, {"verify", "--T", "9,10", "--seed", "5", "--out", "x.csv"}));
  REQUIRE(inv.cases.size() == 2);
  for (const Case& c : inv.cases) {
    CHECK((c.problem.shape.T == 9 || c.problem.shape.T == 10));
    CHECK(c.problem.shape.K == 32);  // not on the command line: the suite's value
    CHECK(c.problem.shape.V == 24);
    CHECK(c.problem.dtype == DType::bf16);
    CHECK(c.problem.seed == 5);
  }
  CHECK(inv.seed == 5);
  CHECK(inv.out_path == "x.csv");
}

TEST_CASE("grid lines in a suite give their own cases; the command line still wins", "[cli]") {
  const SuiteFile suite("variants = cpu_recurrent\nK = 48\nV = 8\n"
                        "grid = --T 5 --K 16\n"
                        "grid = --T 3,4\n");
  const Invocation inv = parse(with_suite(suite, {"verify"}));
  std::multiset<std::pair<int64_t, int64_t>> tk;
  for (const Case& c : inv.cases) {
    tk.insert({c.problem.shape.T, c.problem.shape.K});
    CHECK(c.problem.shape.V == 8);  // suite settings reach into every grid
  }
  CHECK(tk == std::multiset<std::pair<int64_t, int64_t>>{{5, 16}, {3, 48}, {4, 48}});

  const Invocation over = parse(with_suite(suite, {"verify", "--T", "11"}));
  std::multiset<std::pair<int64_t, int64_t>> tk2;
  for (const Case& c : over.cases) tk2.insert({c.problem.shape.T, c.problem.shape.K});
  CHECK(tk2 == std::multiset<std::pair<int64_t, int64_t>>{{11, 16}, {11, 48}});

  const Invocation over_k = parse(with_suite(suite, {"verify", "--K", "64"}));
  for (const Case& c : over_k.cases) CHECK(c.problem.shape.K == 64);
  CHECK(over_k.cases.size() == 3);
}

TEST_CASE("HV omitted means HV = H; HV must be a multiple of H", "[cli]") {
  const SuiteFile empty("");
  const Invocation inv = parse(with_suite(empty, {"verify", "--variants", "cpu_recurrent", "--H", "1,3"}));
  REQUIRE(inv.cases.size() == 2);
  for (const Case& c : inv.cases) CHECK(c.problem.shape.HV == c.problem.shape.H);
  const Invocation gva = parse(with_suite(empty, {"verify", "--variants", "cpu_recurrent", "--H", "1,2", "--HV", "4"}));
  REQUIRE(gva.cases.size() == 2);
  for (const Case& c : gva.cases) CHECK(c.problem.shape.HV == 4);
  CHECK_THROWS_AS(parse(with_suite(empty, {"verify", "--H", "2", "--HV", "3"})), UsageError);
}

TEST_CASE("list helpers", "[cli]") {
  CHECK(split_list("1, 2,,3 ") == std::vector<std::string>{"1", "2", "3"});
  CHECK(split_list("").empty());
  CHECK(parse_positive_list("T", "1,64,4096") == std::vector<int64_t>{1, 64, 4096});
  CHECK_THROWS_AS(parse_positive_list("T", ""), UsageError);
  CHECK_THROWS_AS(parse_positive_list("T", "5x"), UsageError);
  CHECK_THROWS_AS(parse_positive_list("T", "1e3"), UsageError);
  CHECK_THROWS_AS(parse_positive_list("T", "99999999999999999999999"), UsageError);
  CHECK(resolve_suite_path("smoke").find("smoke.ini") != std::string::npos);
}

namespace {
// Mistakes of the user: each is a UsageError from parse_invocation and exit code 2 from the binary.
struct BadInput {
  const char* what;
  std::vector<std::string> args;  // after the command; "{suite}" is replaced by an empty suite
};
const std::vector<BadInput>& bad_inputs() {
  static const std::vector<BadInput> list = {
      {"unknown flag", {"verify", "--suite", "{suite}", "--bogus", "1"}},
      {"unknown variant", {"verify", "--suite", "{suite}", "--variants", "cpu_recurrent,warp_drive"}},
      {"missing suite file", {"verify", "--suite", "/nonexistent/dir/suite.ini"}},
      {"missing suite name", {"verify", "--suite", "no_such_suite_anywhere"}},
      {"non-numeric size", {"verify", "--suite", "{suite}", "--T", "abc"}},
      {"non-positive size", {"verify", "--suite", "{suite}", "--K", "0"}},
      {"negative size", {"verify", "--suite", "{suite}", "--V", "-4"}},
      {"empty list", {"verify", "--suite", "{suite}", "--T", ","}},
      {"HV not a multiple of H", {"verify", "--suite", "{suite}", "--H", "2", "--HV", "3"}},
      {"unknown dtype", {"verify", "--suite", "{suite}", "--dtypes", "fp8"}},
      {"bad on/off", {"verify", "--suite", "{suite}", "--h0", "maybe"}},
      {"unknown gate distribution", {"verify", "--suite", "{suite}", "--gate-dist", "gentle"}},
      // Found by tests/fuzz: a few bytes of list once expanded to billions of cases (out of
      // memory), and int settings were truncated (--chunk 4294967312 ran C = 16).
      {"grid of too many cases", {"verify", "--suite", "{suite}", "--T", "1,2,3,4,5,6,7,8,9,10", "--B",
                                  "1,2,3,4,5,6,7,8,9,10", "--K", "1,2,3,4,5,6,7,8,9,10", "--V",
                                  "1,2,3,4,5,6,7,8,9,10", "--H", "1,2,3,4,5,6,7,8,9,10"}},
      {"chunk beyond int", {"verify", "--suite", "{suite}", "--chunk", "4294967312"}},
      {"samples beyond int", {"verify", "--suite", "{suite}", "--max-samples", "4294967297"}},
      {"warmup beyond int", {"verify", "--suite", "{suite}", "--warmup", "4294967296"}},
      {"threads beyond int", {"verify", "--suite", "{suite}", "--threads", "4294967297"}},
      {"tensor beyond 2^53 elements", {"verify", "--suite", "{suite}", "--T", "1000000000", "--B", "1000000000"}},
      {"negative seed", {"verify", "--suite", "{suite}", "--seed", "-3"}},
      // Boost.Program_options' what() looped forever on typed text holding a placeholder.
      {"placeholder in a flag", {"verify", "--suite", "{suite}", "--h%original_token%", "1"}},
      {"placeholder in a flag's value", {"verify", "--suite", "{suite}", "--help=%canonical_option%"}},
      {"placeholder in a repeated flag", {"verify", "--suite", "{suite}", "--T=%option%", "--T=%option%"}},
      {"unknown L2 flush", {"verify", "--suite", "{suite}", "--l2-flush", "dirty"}},
      {"--no-flush against --l2-flush clean", {"verify", "--suite", "{suite}", "--no-flush", "--l2-flush", "clean"}},
      {"ceilings with an unknown L2 flush", {"ceilings", "--l2-flush", "none"}},
      {"unknown command", {"frobnicate"}},
      {"no command", {}},
  };
  return list;
}
std::vector<std::string> substitute(std::vector<std::string> args, const std::string& suite) {
  for (std::string& a : args)
    if (a == "{suite}") a = suite;
  return args;
}
}  // namespace

TEST_CASE("bad input is a UsageError", "[cli][errors]") {
  const SuiteFile empty("");
  for (const BadInput& b : bad_inputs()) {
    INFO(b.what);
    CHECK_THROWS_AS(parse(substitute(b.args, empty.path)), UsageError);
  }
  SECTION("bad lines inside a suite file") {
    const SuiteFile unknown_key("warp = 9\n");
    CHECK_THROWS_AS(parse(with_suite(unknown_key, {"verify"})), UsageError);
    const SuiteFile bad_grid("grid = --T 5 --bogus 2\n");
    CHECK_THROWS_AS(parse(with_suite(bad_grid, {"verify"})), UsageError);
    const SuiteFile bad_value("T = 0\n");
    CHECK_THROWS_AS(parse(with_suite(bad_value, {"verify"})), UsageError);
    const SuiteFile placeholder("a%original_token% = 1\n");
    CHECK_THROWS_AS(parse(with_suite(placeholder, {"verify"})), UsageError);
    const SuiteFile grid_placeholder("grid = --T=%option% --T=%option%\n");
    CHECK_THROWS_AS(parse(with_suite(grid_placeholder, {"verify"})), UsageError);
  }
}

TEST_CASE("--l2-flush: write by default, clean, off; --no-flush is off", "[cli]") {
  const SuiteFile empty("");
  CHECK(parse(with_suite(empty, {"run"})).timing.l2_flush == L2Flush::write);
  CHECK(parse(with_suite(empty, {"run", "--l2-flush", "clean"})).timing.l2_flush == L2Flush::clean);
  CHECK(parse(with_suite(empty, {"run", "--l2-flush", "off"})).timing.l2_flush == L2Flush::off);
  CHECK(parse(with_suite(empty, {"run", "--no-flush"})).timing.l2_flush == L2Flush::off);
  CHECK(parse(with_suite(empty, {"run", "--no-flush", "--l2-flush", "off"})).timing.l2_flush == L2Flush::off);
  const SuiteFile in_suite("l2-flush = clean\n");
  CHECK(parse(with_suite(in_suite, {"run"})).timing.l2_flush == L2Flush::clean);
  CHECK(parse({"ceilings", "--l2-flush", "clean"}).timing.l2_flush == L2Flush::clean);
  CHECK(parse({"ceilings"}).timing.l2_flush == L2Flush::write);
  for (L2Flush f : {L2Flush::write, L2Flush::clean, L2Flush::off}) CHECK(parse_l2_flush(l2_flush_name(f)) == f);
}

TEST_CASE("the binary: run records how each row was timed (timer, l2_flush)", "[cli][binary]") {
  testutil::TempDir dir;
  const SuiteFile empty("");
  const std::string out = dir.file("timed.csv");
  const testutil::ProcessResult r = testutil::run_gdnbench(
      "run --suite '" + empty.path + "' --variants cpu_recurrent --T 5 --K 8 --V 8 --max-seconds 0.01 --l2-flush clean "
      "--no-progress --out '" + out + "'");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const Csv csv = read_csv(out);
  REQUIRE(csv.rows.size() == 1);
  CHECK(csv.cell(0, "status") == "PASS");
  CHECK(csv.cell(0, "timer") == "host");  // a CPU variant: the steady clock, no L2 flush
  CHECK(csv.cell(0, "l2_flush") == "");
  CHECK(csv.cell(0, "samples") != "");
}

TEST_CASE("the binary: bad input exits 2 with one line on stderr", "[cli][errors][binary]") {
  const SuiteFile empty("");
  std::vector<std::pair<std::string, std::string>> cases;  // (what, shell args)
  for (const BadInput& b : bad_inputs()) {
    std::string args;
    for (const std::string& a : substitute(b.args, empty.path)) args += " '" + a + "'";
    cases.push_back({b.what, args});
  }
  cases.push_back({"unwritable --out", " verify --suite '" + empty.path +
                                           "' --variants cpu_recurrent --T 3 --K 8 --V 8 --out /proc/forbidden/x.csv"});
  for (const auto& [what, args] : cases) {
    INFO(what << ": gdnbench" << args);
    const testutil::ProcessResult r = testutil::run_gdnbench(args);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 2);
    const std::vector<std::string> lines = r.err_lines();
    CHECK(lines.size() == 1);
    if (!lines.empty()) CHECK(lines[0].rfind("gdnbench: error: ", 0) == 0);
  }
}

TEST_CASE("a flag or suite key given twice is a usage error, exit 2", "[cli][errors]") {
  // Boost.Program_options throws multiple_occurrences from po::store, which parse_invocation
  // calls outside its po::error -> UsageError translation.
  const SuiteFile empty(""), twice("T = 5\nT = 6\n"), grid_twice("grid = --T 5 --T 6\n");
  CHECK_THROWS_AS(parse(with_suite(empty, {"verify", "--T", "5", "--T", "6"})), UsageError);
  CHECK_THROWS_AS(parse(with_suite(twice, {"verify"})), UsageError);
  CHECK_THROWS_AS(parse(with_suite(grid_twice, {"verify"})), UsageError);
  for (const SuiteFile* suite : {&empty, &twice, &grid_twice}) {
    const std::string extra = suite == &empty ? " --T 5 --T 6" : "";
    const testutil::ProcessResult r =
        testutil::run_gdnbench("verify --suite '" + suite->path + "' --variants cpu_recurrent" + extra);
    INFO("suite:\n" << testutil::read_text(suite->path) << "stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines().size() == 1);
  }
}

TEST_CASE("the binary: list and help", "[cli][binary]") {
  const testutil::ProcessResult list = testutil::run_gdnbench("list");
  CHECK(list.exit_code == 0);
  CHECK(list.err.empty());
  for (const VariantInfo& v : variant_registry()) {
    INFO("variant " << v.name);
    CHECK(list.out.find(v.name) != std::string::npos);
  }
  const testutil::ProcessResult help = testutil::run_gdnbench("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("usage: gdnbench") != std::string::npos);
}

TEST_CASE("the binary: verify --suite smoke passes and writes the schema's CSV", "[cli][binary]") {
  testutil::TempDir dir;
  const std::string out = dir.file("smoke.csv");
  // suites/smoke.ini when it exists; otherwise an equivalent small suite.
  std::string suite = "smoke";
  const bool have_smoke = std::filesystem::exists(std::string(GDNBENCH_SOURCE_DIR) + "/suites/smoke.ini");
  if (!have_smoke) {
    suite = dir.file("smoke.ini");
    testutil::write_text(suite, "dtypes = fp32,bf16,fp16\nH = 1\nHV = 2\nK = 32\nV = 48\n"
                                "T = 1,31,32,33,100\nchunk = 32\nh0 = off,on\n");
  }
  INFO("suite " << suite);
  const testutil::ProcessResult r =
      testutil::run_gdnbench("verify --suite '" + suite + "' --no-progress --threads 2 --out '" + out + "'");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);
  const std::string text = testutil::read_text(out);
  REQUIRE(!text.empty());
  CHECK(text.substr(0, text.find('\n') + 1) == csv_header_line());

  // One row per case of the same invocation, each as wide as the header.
  const Invocation inv = parse_invocation({"verify", "--suite", suite}, query_gpu().available);
  const Csv csv = read_csv(out);
  CHECK(csv.rows.size() == inv.cases.size());
  const std::string run_id = csv.rows.empty() ? "" : csv.cell(0, "run_id");
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    INFO("row " << i);
    CHECK(csv.rows[i].size() == csv.header.size());
    const std::string st = csv.cell(i, "status");
    CHECK((st == "PASS" || st == "SKIPPED"));
    CHECK(csv.cell(i, "command") == "verify");
    CHECK(csv.cell(i, "run_id") == run_id);
    CHECK(csv.cell(i, "samples") == "");  // verify never times
  }
  CHECK_FALSE(std::filesystem::exists(out + ".tmp"));
}

TEST_CASE("the binary: an unsupported chunk gives a SKIPPED row; with --allow-empty exit 0", "[cli][binary]") {
  testutil::TempDir dir;
  const SuiteFile empty("");
  const std::string out = dir.file("skip.csv");
  const testutil::ProcessResult r = testutil::run_gdnbench(
      "verify --suite '" + empty.path + "' --variants cpu_chunked --chunk 48 --T 5 --K 16 --V 16 "
      "--no-progress --allow-empty --out '" + out + "'");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);  // without --allow-empty: 4 (tests/harness/test_nothing_unchecked.cpp)
  const Csv csv = read_csv(out);
  REQUIRE(csv.rows.size() == 1);
  CHECK(csv.cell(0, "status") == "SKIPPED");
  CHECK(csv.cell(0, "chunk") == "48");
  CHECK(csv.cell(0, "reason").find("48") != std::string::npos);
  CHECK(csv.cell(0, "o_rel_l2") == "");
}

TEST_CASE("the binary: verify exits 1 when a check fails", "[cli][binary]") {
  // The binary has no mutation hooks (only gdnbench_mutation_tests does). An honest failure: with
  // --scale 1e-44 the exact outputs (|o| ~ 1e-44) are float32 subnormals with a few significant
  // bits, so rounding the float64 o to float32 alone costs rel_l2 ~5e-2 and the bound becomes 1.5
  // times that floor (harness/tolerance.h, rounding_floor_bound). cpu_chunked, whose subnormal
  // arithmetic loses little more (1.1 floors over 40 seeds), passes; cpu_recurrent, whose per-token
  // steps each round in subnormals, lands at ~5 floors (4.6-5.4) and fails.
  // (An fp16 overflow no longer fails: where the float64 o is past fp16's range the kernel's inf
  // is the right answer, docs/TOLERANCES.md.)
  testutil::TempDir dir;
  const SuiteFile empty("");
  const std::string out = dir.file("fail.csv");
  const testutil::ProcessResult r = testutil::run_gdnbench(
      "verify --suite '" + empty.path + "' --variants cpu_recurrent,cpu_chunked --dtypes fp32 "
      "--scale 1e-44 --h0 on --T 9 --K 16 --V 16 --no-progress --out '" + out + "'");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 1);
  const Csv csv = read_csv(out);
  REQUIRE(csv.rows.size() == 2);
  REQUIRE(csv.cell(0, "variant") == "cpu_recurrent");
  CHECK(csv.cell(0, "status") == "FAIL");
  CHECK(std::stod(csv.cell(0, "o_rel_l2")) > 1e-3);
  CHECK(std::stod(csv.cell(0, "o_rel_l2")) > std::stod(csv.cell(0, "tol_o")));
  CHECK(csv.cell(0, "reason").find("o rel_l2") != std::string::npos);
  CHECK(csv.cell(0, "deterministic") == "");  // a failed case is not launched again
  CHECK(csv.cell(1, "status") == "PASS");
  CHECK(std::stod(csv.cell(1, "tol_o")) > 1e-5);  // judged against its floor, not the table's 1e-5
}

TEST_CASE("the binary: a fixed seed reproduces the run", "[cli][binary]") {
  testutil::TempDir dir;
  const SuiteFile empty("");
  const uint64_t seed = testutil::fresh_seed() >> 1;
  INFO("seed " << seed);
  const std::string args = "verify --suite '" + empty.path + "' --variants cpu_chunked --T 40 --K 16 "
                           "--V 24 --chunk 16 --h0 on --no-progress --seed " + std::to_string(seed) + " --out ";
  const testutil::ProcessResult a = testutil::run_gdnbench(args + "'" + dir.file("a.csv") + "'");
  const testutil::ProcessResult b = testutil::run_gdnbench(args + "'" + dir.file("b.csv") + "'");
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  const Csv ca = read_csv(dir.file("a.csv")), cb = read_csv(dir.file("b.csv"));
  REQUIRE(ca.rows.size() == 1);
  REQUIRE(cb.rows.size() == 1);
  CHECK(ca.cell(0, "seed") == std::to_string(seed));
  for (const char* col : {"o_rel_l2", "o_max_abs", "o_worst_index", "ht_rel_l2", "ht_worst_index"}) {
    INFO("column " << col);
    CHECK(ca.cell(0, col) == cb.cell(0, col));
  }
}

TEST_CASE("the binary: ceilings without a GPU is a runtime error", "[cli][binary]") {
  if (query_gpu().available) {
    WARN("a GPU is present: `ceilings` would measure it; nothing to check here");
    return;
  }
  const testutil::ProcessResult r = testutil::run_gdnbench("ceilings --out /tmp/gdnbench_unused_ceilings.csv");
  CHECK(r.exit_code == 3);
  CHECK(r.err_lines().size() == 1);
}

TEST_CASE("SIGINT stops a run between cases: exit 130 and a valid CSV of the finished ones", "[cli]") {
  testutil::TempDir tmp;
  const std::string csv = tmp.file("partial.csv");
  // Many small timed cases, interrupted after the first ones are written.
  const std::string cmd = std::string("cd '") + GDNBENCH_SOURCE_DIR + "' && ('" + GDNBENCH_BINARY +
                          "' run --variants cpu_recurrent --T 64 --K 16 --V 16 --B 1,2,3,4,5,6,7,8 "
                          "--H 1,2,3,4,5,6,7,8 --min-samples 50 --cv-target 0 --max-seconds 0.05 "
                          "--no-progress --out '" + csv + "' >/dev/null 2>&1 & pid=$!; " +
                          testutil::wait_for_csv_rows_shell(csv) + "kill -INT $pid; wait $pid; exit $?)";
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const auto rows = testutil::parse_csv(testutil::read_text(csv));
  REQUIRE(rows.size() >= 2);           // the header and at least one finished case
  CHECK(rows.size() < 1 + 64);         // stopped before the end
  for (const auto& r : rows) CHECK(r.size() == rows.front().size());
}

TEST_CASE("verify --junit writes one testcase per row with failures and skips", "[cli]") {
  testutil::TempDir tmp;
  const std::string xml = tmp.file("v.xml");
  const auto r = testutil::run_gdnbench("verify --variants cpu_recurrent,cpu_chunked --dtypes fp32 --T 9 --K 8 --V 8 "
                                        "--chunk 16,48 --out '" + tmp.file("v.csv") + "' --junit '" + xml + "'");
  CHECK(r.exit_code == 0);
  const std::string text = testutil::read_text(xml);
  CHECK(text.find("tests=\"3\"") != std::string::npos);   // recurrent once, chunked at C=16 and 48
  CHECK(text.find("failures=\"0\"") != std::string::npos);
  CHECK(text.find("skipped=\"1\"") != std::string::npos);  // C = 48 is not supported
  CHECK(text.find("<skipped message=\"chunk 48 not supported") != std::string::npos);
}
