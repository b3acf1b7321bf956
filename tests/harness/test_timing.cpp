// Timing summaries and the sampling rule (harness/timing.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/rng.h"
#include "harness/runner.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "kernels/common/dtype.h"
#include "tests/common/test_util.h"


// ---- timing ----

TEST_CASE("timing summary on a known list", "[harness][timing]") {
  // Sorted: 1 2 3 4 5. Quantiles interpolate linearly at q (n - 1): p20 at 0.8 -> 1.8, p80 at
  // 3.2 -> 4.2. Mean 3, sample variance (4 + 1 + 0 + 1 + 4) / 4 = 2.5.
  const TimingStats t = summarize_samples({5, 1, 4, 2, 3});
  CHECK(t.samples == 5);
  CHECK(t.median_ms == Approx(3.0));
  CHECK(t.min_ms == 1.0);
  CHECK(t.p20_ms == Approx(1.8));
  CHECK(t.p80_ms == Approx(4.2));
  CHECK(t.mean_ms == Approx(3.0));
  CHECK(t.cv == Approx(std::sqrt(2.5) / 3.0));
  // Even count: the median is the mean of the middle two.
  CHECK(summarize_samples({4, 1, 3, 2}).median_ms == Approx(2.5));
  const TimingStats one = summarize_samples({7});
  CHECK(one.samples == 1);
  CHECK(one.median_ms == 7.0);
  CHECK(one.cv == 0.0);
  CHECK(summarize_samples({}).samples == 0);
}

TEST_CASE("sampling stops at the noise target or a cap, never before the minimum", "[harness][timing]") {
  TimingConfig c;
  c.min_samples = 5;
  c.max_samples = 8;
  c.max_seconds = 1.0;
  c.cv_target = 0.02;
  const std::vector<double> quiet = {1, 1, 1, 1, 1};
  const std::vector<double> noisy = {1, 2, 1, 2, 1};
  CHECK_FALSE(sampling_done({1, 1, 1, 1}, 100.0, c));  // too few, whatever the time
  CHECK(sampling_done(quiet, 0.0, c));                 // noise target met
  CHECK_FALSE(sampling_done(noisy, 0.5, c));           // noisy and time left
  CHECK(sampling_done(noisy, 1.0, c));                 // time cap
  CHECK(sampling_done({1, 2, 1, 2, 1, 2, 1, 2}, 0.0, c));  // sample cap
}

namespace {
class CountingRun final : public VariantRun {
 public:
  int launches = 0;
  void poison_outputs() override {}
  void launch() override { ++launches; }
  RunOutputs read_outputs() override { return {}; }
};
}  // namespace

TEST_CASE("time_cpu_run warms up, then samples between the minimum and the cap", "[harness][timing]") {
  TimingConfig c;
  c.warmup = 3;
  c.min_samples = 4;
  c.max_samples = 9;
  c.max_seconds = 5.0;
  CountingRun run;
  const TimingStats t = time_cpu_run(run, c);
  CHECK(run.launches == c.warmup + t.samples);
  CHECK(t.samples >= c.min_samples);
  CHECK(t.samples <= c.max_samples);
  CHECK(t.min_ms <= t.median_ms);
  CHECK(t.median_ms <= t.p80_ms);
}
