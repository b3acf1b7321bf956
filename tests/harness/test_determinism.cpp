// The determinism check: with RunOptions::check_determinism every passing case is launched a
// second time on the same inputs, and o and hT must match the first launch bit for bit unless the
// variant declares itself non-deterministic. The test doubles below live only in the test binary.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/runner.h"
#include "tests/common/test_util.h"

namespace {

// A correct kernel (cpu_recurrent underneath) whose later launches flip the lowest bit of a few
// elements: what a kernel with an order-dependent reduction (atomics) looks like from outside.
int g_flaky_flips = 1;  // elements of o changed on every launch after the first

class FlakyRun final : public VariantRun {
 public:
  FlakyRun(const Problem& p, const HostInputs& in, const RunContext& ctx)
      : inner_(find_variant("cpu_recurrent")->create(p, in, ctx)) {}
  void poison_outputs() override { inner_->poison_outputs(); }
  void launch() override {
    inner_->launch();
    ++launches_;
  }
  RunOutputs read_outputs() override {
    RunOutputs out = inner_->read_outputs();
    if (launches_ > 1)
      for (int i = 0; i < g_flaky_flips && i < int(out.o.size()); ++i)
        out.o[size_t(i)] = bits_float(float_bits(out.o[size_t(i)]) ^ 1u);
    return out;
  }

 private:
  std::unique_ptr<VariantRun> inner_;
  int launches_ = 0;
};

std::optional<std::string> never_unsupported(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_flaky(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<FlakyRun>(p, in, ctx);
}

const VariantInfo kFlakyDeclaredDeterministic = {
    "flaky", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0, "fp32", "any",
    never_unsupported, create_flaky, "test double: later launches differ in the last bit"};
const VariantInfo kFlakyDeclaredNondeterministic = {
    "flaky_declared", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0, "fp32", "any",
    never_unsupported, create_flaky, "test double: declares what it does", false};

Problem small_problem() {
  Problem p;
  p.shape = GdnShape{1, 20, 2, 2, 16, 16};
  p.use_h0 = true;
  p.seed = testutil::fresh_seed();
  return p;
}

ResultRow run_checked(const VariantInfo& v, const Problem& p, bool check) {
  RunOptions opt;
  opt.cpu_threads = 2;
  opt.check_determinism = check;
  return verify_single_case(Case{p, &v, true}, opt, make_inputs(p));
}

}  // namespace

TEST_CASE("determinism: a second launch that differs fails a variant declared deterministic",
          "[harness][runner][determinism]") {
  const Problem p = small_problem();
  INFO("seed " << p.seed);
  const int64_t total = p.shape.v_elems() + p.shape.state_elems();
  g_flaky_flips = GENERATE(1, 3);
  const ResultRow r = run_checked(kFlakyDeclaredDeterministic, p, true);
  CHECK(r.status == Status::fail);
  CHECK(r.reason == "not deterministic: " + std::to_string(g_flaky_flips) + " of " +
                        std::to_string(total) + " elements differ");
  CHECK(r.deterministic.empty());
  CHECK_FALSE(r.timing.has_value());
}

TEST_CASE("determinism: without the check the same kernel passes (its values are right)",
          "[harness][runner][determinism]") {
  g_flaky_flips = 1;
  const ResultRow r = run_checked(kFlakyDeclaredDeterministic, small_problem(), false);
  CHECK(r.status == Status::pass);
  CHECK(r.deterministic.empty());
}

TEST_CASE("determinism: a variant declared non-deterministic is not checked and says so",
          "[harness][runner][determinism]") {
  g_flaky_flips = 1;
  const ResultRow r = run_checked(kFlakyDeclaredNondeterministic, small_problem(), true);
  CHECK(r.status == Status::pass);
  CHECK(r.deterministic == "no");
}

TEST_CASE("determinism: the CPU variants launch twice with identical bits", "[harness][runner][determinism]") {
  const char* name = GENERATE("cpu_recurrent", "cpu_chunked");
  const DType dt = GENERATE(DType::f32, DType::bf16);
  Problem p = small_problem();
  p.dtype = dt;
  p.chunk = 16;
  INFO(name << " seed " << p.seed);
  const ResultRow r = run_checked(*find_variant(name), p, true);
  CHECK(r.status == Status::pass);
  CHECK(r.deterministic == "yes");
}

TEST_CASE("count_bit_differences compares bits, not values", "[harness][metrics][determinism]") {
  const float nan1 = bits_float(0x7FC00001u), nan2 = bits_float(0x7FC00002u);
  CHECK(count_bit_differences({1.0f, 2.0f}, {1.0f, 2.0f}) == 0);
  CHECK(count_bit_differences({0.0f, 2.0f}, {-0.0f, 2.0f}) == 1);  // equal values, other bits
  CHECK(count_bit_differences({nan1, nan1}, {nan1, nan2}) == 1);
  CHECK(count_bit_differences({1.0f}, {1.0f, 3.0f, 4.0f}) == 2);  // missing elements differ
  CHECK(count_bit_differences({}, {}) == 0);
}

TEST_CASE("--determinism: on for verify, off for run, unless given", "[cli][determinism]") {
  auto parse = [](std::vector<std::string> args) { return parse_invocation(args, false).check_determinism; };
  CHECK(parse({"verify", "--suite", "smoke"}));
  CHECK_FALSE(parse({"run", "--suite", "smoke"}));
  CHECK(parse({"run", "--suite", "smoke", "--determinism", "on"}));
  CHECK_FALSE(parse({"verify", "--suite", "smoke", "--determinism", "off"}));
  CHECK_THROWS_AS(parse({"verify", "--suite", "smoke", "--determinism", "maybe"}), UsageError);
}

TEST_CASE("the binary: verify writes deterministic = yes on passing rows", "[cli][binary][determinism]") {
  testutil::TempDir dir;
  const std::string out = dir.file("det.csv"), suite = dir.file("empty.ini");
  testutil::write_text(suite, "");
  const testutil::ProcessResult r = testutil::run_gdnbench(
      "verify --suite '" + suite + "' --variants cpu_recurrent,cpu_chunked --chunk 16,48 --T 17 --K 16 --V 16 "
      "--no-progress --out '" + out + "'");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = testutil::parse_csv(testutil::read_text(out));
  REQUIRE(rows.size() > 2);
  const std::vector<std::string>& header = rows[0];
  const auto col = [&](const char* name) {
    return size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  REQUIRE(col("deterministic") < header.size());
  int checked = 0, skipped = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::string& status = rows[i][col("status")];
    INFO("row " << i << " " << status);
    if (status == "PASS") {
      CHECK(rows[i][col("deterministic")] == "yes");
      ++checked;
    } else {
      CHECK(status == "SKIPPED");  // cpu_chunked at chunk 48
      CHECK(rows[i][col("deterministic")] == "");
      ++skipped;
    }
  }
  CHECK(checked > 0);
  CHECK(skipped > 0);
}
