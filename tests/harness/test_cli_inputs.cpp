// Inputs that once crashed or misled: a front-end dump (SIGSEGV after q.npy) and its round trip
// through check; stray words, unbalanced quotes in grid lines, abbreviated flags, empty list items
// and negative timing settings (all accepted before); running out of host memory (reported
// against --out, or without sizes); and each command's --help, with run --help showing the values
// of the suite that runs rather than the options' own defaults.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "harness/external.h"
#include "harness/inputs.h"
#include "harness/io/npy.h"
#include "harness/runner.h"
#include "tests/common/cli_test_util.h"
#include "tests/common/test_util.h"

namespace {

using testutil::SuiteFile;

using clitest::parse;

// The UsageError's message of parse(args), or "" when it parses.
std::string usage_error(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// The one line a usage error prints: exit 2, one line on stderr.
void check_one_line_error(const std::string& args, int code, const std::string& needle) {
  INFO("gdnbench " << args);
  const testutil::ProcessResult r = testutil::run_gdnbench(args);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == code);
  const std::vector<std::string> lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(needle) != std::string::npos);
}

std::string q(const std::string& path) { return "'" + path + "'"; }

// An external front-end kernel's answer: the float64 reference of the dumped inputs, rounded as a
// kernel writes it (o in the dtype, hT and the final conv caches in float32).
struct FrontEndAnswer {
  std::string o, ht, cache[3];
};
FrontEndAnswer write_answer(const DumpedProblem& d, const testutil::TempDir& dir) {
  const Problem& p = d.problem;
  const GdnShape& s = p.shape;
  const GdnRefOutputs ref = gdn_reference_for(p, to_f64(d.inputs), 2);
  FrontEndAnswer a{dir.file("o.npy"), dir.file("hT.npy"), {dir.file("cq.npy"), dir.file("ck.npy"), dir.file("cv.npy")}};
  write_npy(a.o, {s.B, s.T, s.HV, s.V}, ref.o.data(), p.dtype == DType::bf16 ? NpyType::bf16_u2 : NpyType::f4);
  write_npy(a.ht, {s.B, s.HV, s.K, s.V}, ref.hT.data(), NpyType::f4);
  const int64_t channels[3] = {s.H * s.K, s.H * s.K, s.HV * s.V};
  REQUIRE(int64_t(ref.conv_cache.size()) == s.B * (channels[0] + channels[1] + channels[2]) * 3);
  const double* at = ref.conv_cache.data();
  for (int i = 0; i < 3; ++i) {
    write_npy(a.cache[i], {s.B, channels[i], 3}, at, NpyType::f4);
    at += s.B * channels[i] * 3;
  }
  return a;
}

}  // namespace

TEST_CASE("dump --frontend on writes the front-end inputs and check judges them", "[cli][external]") {
  testutil::TempDir dir;
  SECTION("the command that crashed: T = 8, default sizes, h0 off") {
    const std::string dump = dir.file("fe");
    const testutil::ProcessResult r = testutil::run_gdnbench("dump --T 8 --frontend on --seed 4 --out " + q(dump));
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const std::string manifest = testutil::read_text(dump + "/manifest.json");
    CHECK(manifest.find("\"frontend\": true") != std::string::npos);
    for (const char* f : {"x_q", "x_k", "x_v", "a", "b", "A_log", "dt_bias", "w_q", "w_k", "w_v", "bias_q",
                          "bias_k", "bias_v"}) {
      INFO(f);
      CHECK(std::filesystem::is_regular_file(dump + "/" + f + ".npy"));
    }
    for (const char* f : {"q", "k", "v", "g", "beta", "h0", "cache_q"})
      CHECK_FALSE(std::filesystem::exists(dump + "/" + f + ".npy"));

    const DumpedProblem d = read_dump(dump);
    CHECK(d.problem.frontend);
    CHECK(d.problem.shape.T == 8);
    CHECK(d.problem.shape.K == 64);
    CHECK(d.problem.seed == 4);
    CHECK(d.inputs.fe.x_q == make_inputs(d.problem).fe.x_q);
    const FrontEndAnswer a = write_answer(d, dir);
    const testutil::ProcessResult c = testutil::run_gdnbench(
        "check " + q(dump) + " --o " + q(a.o) + " --ht " + q(a.ht) + " --variant-name ext:fe");
    INFO("stdout: " << c.out << "\nstderr: " << c.err);
    CHECK(c.exit_code == 0);
    CHECK(c.out.rfind("PASS ext:fe", 0) == 0);
    CHECK(c.out.find("frontend=on") != std::string::npos);
    // No conv caches were dumped (h0 off), but the final ones are still outputs to judge.
    const testutil::ProcessResult cc = testutil::run_gdnbench("check " + q(dump) + " --o " + q(a.o) + " --cache-q " +
                                                              q(a.cache[0]) + " --cache-k " + q(a.cache[1]) +
                                                              " --cache-v " + q(a.cache[2]));
    CHECK(cc.exit_code == 0);
  }

  SECTION("bf16, GVA, h0 on: the conv caches are dumped too; the files are what make_inputs made") {
    const std::string dump = dir.file("fe");
    const testutil::ProcessResult r = testutil::run_gdnbench(
        "dump --T 13 --B 2 --H 1 --HV 2 --K 16 --V 32 --dtypes bf16 --h0 on --frontend on --seed 9 --out " + q(dump));
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const DumpedProblem d = read_dump(dump);
    REQUIRE(d.problem.frontend);
    CHECK(d.problem.dtype == DType::bf16);
    CHECK(d.inputs.q.empty());
    const HostInputs made = make_inputs(d.problem);
    for (auto member : {&FrontEndHost::x_q, &FrontEndHost::x_k, &FrontEndHost::x_v, &FrontEndHost::a,
                        &FrontEndHost::b, &FrontEndHost::A_log, &FrontEndHost::dt_bias, &FrontEndHost::w_q,
                        &FrontEndHost::w_k, &FrontEndHost::w_v, &FrontEndHost::bias_q, &FrontEndHost::bias_k,
                        &FrontEndHost::bias_v, &FrontEndHost::cache_q, &FrontEndHost::cache_k,
                        &FrontEndHost::cache_v}) {
      CHECK_FALSE((made.fe.*member).empty());
      CHECK(d.inputs.fe.*member == made.fe.*member);  // bit for bit: float32 files of dtype values
    }
    CHECK(d.inputs.h0 == made.h0);

    const FrontEndAnswer a = write_answer(d, dir);
    const std::string caches =
        " --cache-q " + q(a.cache[0]) + " --cache-k " + q(a.cache[1]) + " --cache-v " + q(a.cache[2]);
    const std::string base = "check " + q(dump) + " --o " + q(a.o) + " --ht " + q(a.ht);
    testutil::ProcessResult c = testutil::run_gdnbench(base + caches + " --csv " + q(dir.file("fe.csv")));
    INFO("stdout: " << c.out << "\nstderr: " << c.err);
    CHECK(c.exit_code == 0);
    CHECK(c.out.rfind("PASS", 0) == 0);
    CHECK(testutil::read_text(dir.file("fe.csv")).find("tensor_core_frontend") != std::string::npos);

    // One element of the final v cache off: the caches are copies, exact or wrong.
    NpyArray cv = read_npy(a.cache[2]);
    cv.values[5] += 1.0;
    write_npy(dir.file("cv_bad.npy"), cv.shape, cv.values.data(), NpyType::f4);
    c = testutil::run_gdnbench(base + " --cache-q " + q(a.cache[0]) + " --cache-k " + q(a.cache[1]) +
                               " --cache-v " + q(dir.file("cv_bad.npy")));
    CHECK(c.exit_code == 1);
    CHECK(c.out.rfind("FAIL", 0) == 0);
    CHECK(c.out.find("conv cache") != std::string::npos);

    NpyArray o = read_npy(a.o);
    for (double& x : o.values) x = -x;
    write_npy(dir.file("o_bad.npy"), o.shape, o.values.data(), NpyType::f4);
    c = testutil::run_gdnbench("check " + q(dump) + " --o " + q(dir.file("o_bad.npy")));
    CHECK(c.exit_code == 1);

    check_one_line_error("check " + q(dump) + " --o " + q(a.o) + " --family attention", 2, "front-end");
    check_one_line_error("check " + q(dump) + " --o " + q(a.o) + " --cache-q " + q(a.cache[0]), 2, "--cache-v");
    check_one_line_error("check " + q(dump) + " --o " + q(a.o) + " --cache-q " + q(a.cache[1]) + " --cache-k " +
                             q(a.cache[1]) + " --cache-v " + q(a.cache[1]),
                         2, "--cache-v");  // [B, H*K, 3] where [B, HV*V, 3] belongs

    const std::string plain = dir.file("plain");
    REQUIRE(testutil::run_gdnbench("dump --T 13 --B 2 --H 1 --HV 2 --K 16 --V 32 --out " + q(plain)).exit_code == 0);
    check_one_line_error("check " + q(plain) + " --o " + q(a.o) + caches, 2, "front-end dumps");
  }
}

TEST_CASE("a word that is not a flag is refused, on the command line and in grid lines", "[cli][errors]") {
  const SuiteFile empty("");
  CHECK(usage_error({"verify", "--suite", empty.path, "T=64"}).find("'T=64'") != std::string::npos);
  CHECK(usage_error({"verify", "--suite", empty.path, "--T", "5", "6"}).find("'6'") != std::string::npos);
  const SuiteFile grid("grid = --T 5 H=2\n");
  CHECK(usage_error({"verify", "--suite", grid.path}).find("'H=2'") != std::string::npos);
  CHECK(usage_error({"verify", "--suite", empty.path, "--T", "5"}).empty());
  check_one_line_error("verify --suite smoke T=64", 2, "unexpected argument 'T=64'");
  check_one_line_error("dump --T 8 stray --out /nonexistent/x", 2, "'stray'");
}

TEST_CASE("a grid line with a quote left open is refused; quoted words keep their blanks", "[cli][errors]") {
  // Before: `"--T` and `5` were taken for positional words and ignored, so the grid ran the defaults.
  const SuiteFile open_quote("grid = \"--T 5\n");
  CHECK(usage_error({"verify", "--suite", open_quote.path}).find("unbalanced") != std::string::npos);
  const SuiteFile open_single("grid = --T 5 --B '2\n");
  CHECK(usage_error({"verify", "--suite", open_single.path}).find("unbalanced") != std::string::npos);
  check_one_line_error("verify --suite " + q(open_quote.path), 2, "unbalanced double quote");

  const SuiteFile quoted("grid = --T '5, 6' --K 8 --V 8 --variants cpu_recurrent --dtypes fp32\n");
  const Invocation inv = parse({"verify", "--suite", quoted.path});
  std::set<int64_t> Ts;
  for (const Case& c : inv.cases) Ts.insert(c.problem.shape.T);
  CHECK(Ts == std::set<int64_t>{5, 6});
}

TEST_CASE("--cv-target and --max-seconds must be finite, not negative, --max-seconds positive", "[cli][errors]") {
  const SuiteFile empty("");
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--cv-target", "-1"}, {"--max-seconds", "-1"}, {"--max-seconds", "0"},
        {"--cv-target", "nan"}, {"--cv-target", "inf"}, {"--max-seconds", "inf"}}) {
    std::vector<std::string> args = {"run", "--suite", empty.path, "--variants", "cpu_recurrent"};
    args.insert(args.end(), bad.begin(), bad.end());
    INFO(bad[0] << " " << bad[1]);
    CHECK(usage_error(args).rfind(bad[0] + ":", 0) == 0);
  }
  const SuiteFile in_suite("cv-target = -0.5\n");
  CHECK(usage_error({"run", "--suite", in_suite.path}).rfind("--cv-target:", 0) == 0);
  const Invocation ok = parse({"run", "--suite", empty.path, "--cv-target", "0", "--max-seconds", "0.5"});
  CHECK(ok.timing.cv_target == 0.0);
  CHECK(ok.timing.max_seconds == 0.5);
  check_one_line_error("run --suite " + q(empty.path) + " --cv-target -1", 2, "--cv-target");
  check_one_line_error("run --suite " + q(empty.path) + " --max-seconds -1", 2, "--max-seconds");
}

TEST_CASE("an empty item in any list is refused, as an empty list is", "[cli][errors]") {
  const SuiteFile empty("");
  CHECK(usage_error({"verify", "--suite", empty.path, "--T", "32,,64"}) == "--T: empty item in '32,,64'");
  CHECK(usage_error({"verify", "--suite", empty.path, "--T", ",,"}) == "--T: empty item in ',,'");
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--T", "64,"}, {"--T", ",64"}, {"--B", "1, ,2"}, {"--H", "1,,2"},
        {"--HV", "2,,4"}, {"--K", "8,,16"}, {"--V", "8,"}, {"--chunk", "16,,32"}, {"--context", "0,,4"},
        {"--dtypes", "fp32,,bf16"}, {"--variants", "cpu_recurrent,,cpu_chunked"}, {"--gate", "on,,off"},
        {"--delta", "on,"}, {"--h0", ",off"}, {"--frontend", "off,,on"}, {"--gate-dist", "zero,,strong"},
        {"--beta-dist", "one,,zero"}, {"--plan", "auto,,"}, {"--min-samples", "3,,"}, {"--max-samples", ",9"}}) {
    std::vector<std::string> args = {"verify", "--suite", empty.path};
    args.insert(args.end(), bad.begin(), bad.end());
    INFO(bad[0] << " " << bad[1]);
    CHECK(usage_error(args) == bad[0] + ": empty item in '" + bad[1] + "'");
  }
  const SuiteFile in_grid("grid = --T 4,,8\n");
  CHECK(usage_error({"verify", "--suite", in_grid.path}) == "--T: empty item in '4,,8'");
  CHECK(parse({"verify", "--suite", empty.path, "--T", "32, 64"}).cases.size() > 0);  // blanks are fine
  check_one_line_error("verify --suite " + q(empty.path) + " --T 32,,64", 2, "--T: empty item in '32,,64'");
}

TEST_CASE("abbreviated flags are unknown, not guessed", "[cli][errors]") {
  const SuiteFile empty("");
  for (const char* abbreviation : {"--va", "--variant", "--dtype", "--max-sec", "--cv"}) {
    INFO(abbreviation);
    CHECK(usage_error({"verify", "--suite", empty.path, abbreviation, "1"}).find(abbreviation) != std::string::npos);
  }
  CHECK(usage_error({"list", "--pl"}) != "");
  CHECK(usage_error({"ceilings", "--l2", "off"}) != "");
  // A suite file never guessed (kept so).
  const SuiteFile suite("va = cpu_recurrent\n");
  CHECK(usage_error({"verify", "--suite", suite.path}) != "");
  check_one_line_error("verify --suite " + q(empty.path) + " --va cpu_recurrent", 2, "'--va'");
}

TEST_CASE("running out of host memory names the problem and the bytes", "[cli][errors]") {
  // 1000 x 2e9 x 64 floats of q alone: past any address space, so the allocation fails at once.
  testutil::TempDir dir;
  const std::string big = "--T 2000000000 --B 1000 --H 1 --K 64 --V 1 --dtypes fp32";
  const std::string dump = dir.file("big");
  check_one_line_error("dump " + big + " --out " + q(dump), 3,
                       "out of host memory for the inputs of the problem fp32 B=1000 T=2000000000 H=1 HV=1 K=64 V=1");
  const testutil::ProcessResult r = testutil::run_gdnbench("dump " + big + " --out " + q(dump));
  CHECK(r.err.find("--out") == std::string::npos);  // not the output's fault
  CHECK(r.err.find("1.048e+15 bytes") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dump));  // nothing written
  check_one_line_error("verify --suite smoke " + big + " --HV 1 --h0 off --variants cpu_recurrent --no-progress --out " +
                           q(dir.file("big.csv")),
                       3, "bytes as float32 and");
  Problem p;
  p.shape = GdnShape{1000, 2000000000, 1, 1, 64, 1};
  CHECK(input_bytes(p) == 4.0 * (1000.0 * 2e9 * (64 + 64 + 1) + 2 * 1000.0 * 2e9));
}

TEST_CASE("every command has its own --help; command errors list them all", "[cli][binary]") {
  const std::vector<std::string> commands = {"list", "run", "verify", "ceilings", "report", "claims", "dump", "check"};
  for (const std::string& c : commands) {
    INFO(c);
    const testutil::ProcessResult r = testutil::run_gdnbench(c + " --help");
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("usage: gdnbench " + c, 0) == 0);
    CHECK(r.err.empty());
  }
  for (const std::string& args : {std::string(""), std::string("frobnicate")}) {
    INFO("gdnbench " << args);
    const testutil::ProcessResult r = testutil::run_gdnbench(args);
    CHECK(r.exit_code == 2);
    REQUIRE(r.err_lines().size() == 1);
    for (const std::string& c : commands) CHECK(r.err.find(c) != std::string::npos);
  }
  CHECK(parse({"list", "--help"}).help_text.rfind("usage: gdnbench list", 0) == 0);
  CHECK(parse({"--help"}).help_text == usage_text());
}

namespace {
// The value `run --help` shows for --name: "X" of "--name arg (=X" up to ", from" or ")".
std::string shown_value(const std::string& help, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(help, m, std::regex("--" + name + " arg \\(=([^,)]*(,[^ ,)][^,)]*)*)")) ) return "<none>";
  return m[1];
}
std::string joined(const std::set<std::string>& xs) {
  std::string out;
  for (const std::string& x : xs) out += (out.empty() ? "" : ",") + x;
  return out;
}
}  // namespace

TEST_CASE("run --help and verify --help show the values that run", "[cli][binary]") {
  // Without --suite, suites/default.ini replaces the options' defaults (T 256 became 512,2048):
  // the help shows the suite's values, and they are the ones parse_invocation runs.
  for (const char* command : {"run", "verify"}) {
    INFO(command);
    const testutil::ProcessResult r = testutil::run_gdnbench(std::string(command) + " --help");
    REQUIRE(r.exit_code == 0);
    const std::string& help = r.out;
    CHECK(help.find("from suites/default.ini") != std::string::npos);
    CHECK(help.find("--T arg (=256)") == std::string::npos);

    const Invocation inv = parse_invocation({command}, false);  // what runs
    std::set<std::string> Ts, Ks, Vs, Hs, Bs, dtypes;
    for (const Case& c : inv.cases) {
      Ts.insert(std::to_string(c.problem.shape.T));
      Ks.insert(std::to_string(c.problem.shape.K));
      Vs.insert(std::to_string(c.problem.shape.V));
      Hs.insert(std::to_string(c.problem.shape.H));
      Bs.insert(std::to_string(c.problem.shape.B));
      dtypes.insert(dtype_name(c.problem.dtype));
    }
    const auto as_set = [](const std::string& list) {
      std::set<std::string> out;
      for (const std::string& x : split_list(list)) out.insert(x);
      return joined(out);
    };
    CHECK(as_set(shown_value(help, "T")) == joined(Ts));
    CHECK(as_set(shown_value(help, "K")) == joined(Ks));
    CHECK(as_set(shown_value(help, "V")) == joined(Vs));
    CHECK(as_set(shown_value(help, "H")) == joined(Hs));
    CHECK(as_set(shown_value(help, "B")) == joined(Bs));
    CHECK(as_set(shown_value(help, "dtypes")) == joined(dtypes));
    CHECK(shown_value(help, "chunk") == "64");  // not set by the suite: the option's default
  }
  SECTION("another suite: its values and its grid lines") {
    const SuiteFile suite("T = 7\nK = 8\ngrid = --V 16 --T 3\n");
    const testutil::ProcessResult r = testutil::run_gdnbench("run --suite " + q(suite.path) + " --help");
    REQUIRE(r.exit_code == 0);
    CHECK(shown_value(r.out, "T") == "7");
    CHECK(shown_value(r.out, "K") == "8");
    CHECK(shown_value(r.out, "V") == "64");
    CHECK(r.out.find("grid = --V 16 --T 3") != std::string::npos);
    CHECK(r.out.find("from " + suite.path) != std::string::npos);
  }
}
