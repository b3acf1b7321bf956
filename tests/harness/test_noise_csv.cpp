// The CSV flags noisy rows: time_noisy, right after time_cv, says yes when the row's timing CV is
// above kNoisyCv (harness/noise.h), no when it is not, and nothing on an untimed row.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "harness/io/csv.h"
#include "harness/result.h"
#include "harness/noise.h"

TEST_CASE("the CSV says time_noisy right after time_cv", "[noise][csv]") {
  const std::vector<std::string> cols = csv_columns();
  const auto at = [&](const char* c) { return std::find(cols.begin(), cols.end(), c) - cols.begin(); };
  REQUIRE(at("time_noisy") < long(cols.size()));
  CHECK(at("time_noisy") == at("time_cv") + 1);
  const auto cell = [&](std::optional<double> cv) {
    ResultRow r;
    r.variant = "cpu_recurrent";
    r.status = cv ? Status::pass : Status::skipped;
    if (cv) {
      TimingStats t;
      t.samples = 10;
      t.median_ms = 1;
      t.cv = *cv;
      r.timing = t;
    }
    return csv_row_fields(RunMeta{}, r).at(size_t(at("time_noisy")));
  };
  CHECK(cell(0.25) == "yes");
  CHECK(cell(0.05) == "no");
  CHECK(cell(std::nullopt) == "");
}
