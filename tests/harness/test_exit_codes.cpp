// The exit codes of the binary, as README.md and `gdnbench --help` document them: 0 every check
// passed, 1 a check failed, 2 usage error, 3 runtime error (such as no device when one was
// required). Exit 1 is pinned in tests/harness/test_cli.cpp ("verify exits 1 when a check fails").
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "harness/io/cli.h"
#include "harness/gpu_runtime.h"
#include "harness/variant.h"
#include "tests/common/test_util.h"

namespace {

std::string empty_suite(const testutil::TempDir& dir) {
  const std::string path = dir.file("empty.ini");
  testutil::write_text(path, "");
  return path;
}

const char* first_cuda_variant() {
  for (const VariantInfo& v : variant_registry())
    if (v.backend == Backend::cuda) return v.name;
  return nullptr;
}

}  // namespace

TEST_CASE("exit codes are documented in the usage text and the README", "[cli][exit]") {
  const std::string usage = usage_text();
  CHECK(usage.find("exit codes: 0 all checks passed, 1 a check failed, 2 usage error, 3 runtime error") !=
        std::string::npos);
  const std::string readme = testutil::read_text(std::string(GDNBENCH_SOURCE_DIR) + "/README.md");
  for (const char* text : {"0 every check passed", "1 a check failed", "2 usage error", "3 runtime error"}) {
    INFO(text);
    CHECK(readme.find(text) != std::string::npos);
  }
}

TEST_CASE("the binary: a passing verify exits 0, a bad option 2", "[cli][binary][exit]") {
  testutil::TempDir dir;
  const std::string suite = empty_suite(dir);
  const testutil::ProcessResult ok = testutil::run_gdnbench(
      "verify --suite '" + suite + "' --variants cpu_recurrent --T 5 --K 8 --V 8 --no-progress --out '" +
      dir.file("ok.csv") + "'");
  INFO("stderr: " << ok.err);
  CHECK(ok.exit_code == 0);
  const testutil::ProcessResult bad = testutil::run_gdnbench("verify --suite '" + suite + "' --no-such-flag");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err_lines().size() == 1);
}

TEST_CASE("the binary: a GPU variant named without a GPU exits 3 with one line; its rows are SKIPPED",
          "[cli][binary][exit]") {
  const char* gpu_variant = first_cuda_variant();
  if (!gpu_variant) {
    WARN("built without CUDA: no GPU variant to name");
    return;
  }
  if (query_gpu().available) {
    WARN("a GPU is present: the variant would run; nothing to check here");
    return;
  }
  testutil::TempDir dir;
  const std::string out = dir.file("nogpu.csv");
  const testutil::ProcessResult r = testutil::run_gdnbench(
      "verify --suite '" + empty_suite(dir) + "' --variants cpu_recurrent," + gpu_variant +
      " --dtypes bf16 --T 5 --K 64 --V 64 --no-progress --out '" + out + "'");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 3);
  const std::vector<std::string> lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("gdnbench: runtime error: ", 0) == 0);
  CHECK(lines[0].find(gpu_variant) != std::string::npos);
  const auto rows = testutil::parse_csv(testutil::read_text(out));
  REQUIRE(rows.size() == 3);  // header, the CPU row, the GPU row
  const auto& header = rows[0];
  const size_t status = size_t(std::find(header.begin(), header.end(), "status") - header.begin());
  REQUIRE(status < header.size());
  CHECK(rows[1][status] == "PASS");
  CHECK(rows[2][status] == "SKIPPED");

  SECTION("picked by auto, GPU variants are simply not selected: exit 0") {
    const testutil::ProcessResult a = testutil::run_gdnbench(
        "verify --suite '" + empty_suite(dir) + "' --T 5 --K 8 --V 8 --no-progress --out '" +
        dir.file("auto.csv") + "'");
    INFO("stderr: " << a.err);
    CHECK(a.exit_code == 0);
  }
}
