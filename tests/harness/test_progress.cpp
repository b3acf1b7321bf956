// Progress: the time left weighted by each case's work, and a line per interval off a terminal.
#include <catch2/catch.hpp>

#include <string>

#include "harness/progress.h"
#include "harness/variant.h"
#include "tests/common/test_util.h"

TEST_CASE("progress: time left from the work done, not the cases done", "[progress]") {
  CHECK(progress_seconds_left(10, 0, 100) == 0);  // no rate yet
  CHECK(progress_seconds_left(10, 100, 100) == 0);
  CHECK(progress_seconds_left(10, 25, 100) == Approx(30));
  // One case in ten done, but it was a tenth of a percent of the work: the estimate sees the rest.
  CHECK(progress_seconds_left(1, 1, 1000) == Approx(999));
  const VariantInfo* found = find_variant("cpu_recurrent");
  REQUIRE(found);
  const VariantInfo& v = *found;
  Problem small, large;
  small.shape = GdnShape{1, 64, 2, 2, 32, 32};
  large.shape = GdnShape{1, 8192, 2, 2, 128, 128};
  CHECK(progress_work(Case{large, &v, true}) > 100 * progress_work(Case{small, &v, true}));
  CHECK(progress_work(Case{small, &v, true}) > 0);
}

TEST_CASE("progress off a terminal: a line per interval and one at the end, in the log", "[progress][cli]") {
  // The binary's stderr is a file here, not a terminal.
  const auto r = testutil::run_gdnbench("verify --variants cpu_recurrent --T 16,32 --H 1 --K 8 --V 8 --dtypes fp32");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("[1/2] cpu_recurrent fp32 T=16 elapsed 0s, about 0s left\n"));
  CHECK_THAT(r.err, Catch::Contains("[2/2] done in"));
  CHECK(r.err.find('\r') == std::string::npos);
  const auto quiet = testutil::run_gdnbench("verify --variants cpu_recurrent --T 16 --H 1 --K 8 --V 8 --dtypes fp32 --no-progress");
  CHECK(quiet.err.find("[1/1]") == std::string::npos);
}
