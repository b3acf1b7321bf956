// A PASS means a kernel was compared with float64 and was right: a check that compared nothing,
// or whose reference is non-finite or mostly past the dtype's range, is no PASS; a non-finite or
// absurd option value is a usage error; a run or verify that verified nothing does not exit 0.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "harness/external.h"
#include "harness/metrics.h"
#include "harness/io/npy.h"
#include "harness/runner.h"
#include "tests/common/test_util.h"

namespace {

std::string empty_suite(const testutil::TempDir& dir) {
  const std::string path = dir.file("empty.ini");
  testutil::write_text(path, "");
  return path;
}

testutil::ProcessResult verify(const testutil::TempDir& dir, const std::string& args) {
  return testutil::run_gdnbench("verify --suite '" + empty_suite(dir) + "' --no-progress --out '" +
                                dir.file("out.csv") + "' " + args);
}

}  // namespace

TEST_CASE("coverage: nothing referenced, a non-finite reference or a reference past the range fails",
          "[metrics][coverage]") {
  const std::vector<float> out(8, 1.0f);
  SECTION("in range: compared by value, no objection") {
    const TensorMetrics m = compare_to_reference(out, std::vector<double>(8, 1.0), DType::f32);
    CHECK(m.referenced == 8);
    CHECK(m.compared == 8);
    CHECK(coverage_problem("o", m, DType::f32).empty());
  }
  SECTION("past fp32's range everywhere: the ideal kernel writes inf, and that tests nothing") {
    const std::vector<float> infs(8, std::numeric_limits<float>::infinity());
    const TensorMetrics m = compare_to_reference(infs, std::vector<double>(8, 1e300), DType::f32);
    CHECK(m.finite_ok());  // the overflow rule alone accepts it
    CHECK(m.compared == 0);
    CHECK_THAT(coverage_problem("o", m, DType::f32), Catch::Contains("only 0.0% of its elements compared by value"));
  }
  SECTION("an overflowing minority is checked for inf, not held against the case") {
    std::vector<double> ref(8, 1.0);
    std::vector<float> got(8, 1.0f);
    ref[0] = 1e6;  // past fp16's 65504
    got[0] = std::numeric_limits<float>::infinity();
    const TensorMetrics m = compare_to_reference(got, ref, DType::f16);
    CHECK(m.compared == 7);
    CHECK(coverage_problem("o", m, DType::f16).empty());
  }
  SECTION("a NaN reference") {
    std::vector<double> ref(8, 1.0);
    ref[3] = std::nan("");
    const TensorMetrics m = compare_to_reference(out, ref, DType::f32);
    CHECK(m.ref_nonfinite == 1);
    CHECK_THAT(coverage_problem("o", m, DType::f32), Catch::Contains("non-finite at 1 of 8"));
  }
  SECTION("nothing referenced") {
    const TensorMetrics m = compare_to_reference({}, {}, DType::f32);
    CHECK_THAT(coverage_problem("o", m, DType::f32), Catch::Contains("no element was compared"));
  }
  SECTION("the verdict of verify and check") {
    ResultRow row;
    row.tol = Tolerance{1e-3, 1e-3, ""};
    const std::vector<float> infs(8, std::numeric_limits<float>::infinity());
    row.o = compare_to_reference(infs, std::vector<double>(8, 1e300), DType::f32);
    CHECK_FALSE(output_problems(row, DType::f32).empty());
    row.o = compare_to_reference(out, std::vector<double>(8, 1.0), DType::f32);
    CHECK(output_problems(row, DType::f32).empty());
    row.o = TensorMetrics{};
    CHECK_THAT(output_problems(row, DType::f32).front(), Catch::Contains("not compared"));
  }
}

TEST_CASE("the binary: a non-finite or absurd option value is a usage error", "[cli][coverage][binary]") {
  testutil::TempDir dir;
  for (const char* flags : {"--scale nan", "--scale inf", "--scale 1e300", "--scale -1", "--k-norm 1e5",
                            "--h0-scale 1e30", "--k-norm nan", "--variants ''"}) {
    INFO(flags);
    const testutil::ProcessResult r = verify(dir, std::string("--variants cpu_recurrent --T 5 --K 8 --V 8 ") + flags);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines().size() == 1);
  }
  const testutil::ProcessResult ok = verify(dir, "--variants cpu_recurrent --T 5 --K 8 --V 8 --scale 0.5");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("the binary: a verify that verified nothing exits 4 unless --allow-empty", "[cli][coverage][binary]") {
  testutil::TempDir dir;
  const testutil::ProcessResult none = verify(dir, "--variants cpu_chunked --chunk 17 --T 5 --K 8 --V 8");
  INFO(none.out << none.err);
  CHECK(none.exit_code == 4);
  REQUIRE(none.err_lines().size() == 1);
  CHECK_THAT(none.err_lines()[0], Catch::Contains("nothing verified") && Catch::Contains("chunk 17"));
  CHECK(verify(dir, "--variants cpu_chunked --chunk 17 --T 5 --K 8 --V 8 --allow-empty").exit_code == 0);
  // A front-end problem on the CPU: no CPU variant takes it, all SKIPPED.
  CHECK(verify(dir, "--frontend on --T 8 --K 8 --V 8").exit_code == 4);
  // One case verified among skipped ones: the run did something.
  CHECK(verify(dir, "--variants cpu_chunked,cpu_recurrent --chunk 17 --T 5 --K 8 --V 8").exit_code == 0);
}

TEST_CASE("check: a manifest past the option ranges is a usage error; a reference past the range a FAIL",
          "[external][coverage]") {
  testutil::TempDir dir;
  const std::string dump = dir.file("dump");
  const testutil::ProcessResult d = testutil::run_gdnbench("dump --T 4 --H 1 --K 8 --V 8 --dtypes fp32 --seed 3 --out '" +
                                                           dump + "'");
  REQUIRE(d.exit_code == 0);
  const std::vector<float> nans(4 * 8, std::nanf(""));
  write_npy(dir.file("o.npy"), {1, 4, 1, 8}, nans.data(), NpyType::f4);
  SECTION("scale 1e300 in the manifest") {
    std::string m = testutil::read_text(dump + "/manifest.json");
    const size_t at = m.find("\"scale\": ");
    REQUIRE(at != std::string::npos);
    m.replace(at, m.find(',', at) - at, "\"scale\": 1e300");
    testutil::write_text(dump + "/manifest.json", m);
    const testutil::ProcessResult r = testutil::run_gdnbench("check '" + dump + "' --o '" + dir.file("o.npy") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--scale") || Catch::Contains("scale"));
  }
  SECTION("an all-NaN o against a float64 o past fp32's range (--ref-o)") {
    const std::vector<double> huge(4 * 8, 1e300);
    write_npy(dir.file("ref.npy"), {1, 4, 1, 8}, huge.data(), NpyType::f8);
    CheckOptions opt;
    opt.dir = dump;
    opt.o_path = dir.file("o.npy");
    opt.ref_o_path = dir.file("ref.npy");
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK_THAT(row.reason, Catch::Contains("compared by value"));
  }
}
