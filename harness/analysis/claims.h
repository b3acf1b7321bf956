// Claims of the GDN literature, each tied to a measurement in gdnbench CSVs and judged
// REPRODUCED / NOT REPRODUCED / INCONCLUSIVE / NOT MEASURABLE HERE (`gdnbench claims`,
// `gdnbench report --claims`).
//
// A claims file (claims/gdn_claims.ini) is an option file read by Boost.Program_options, one
// section per claim and one sub-section per check of that claim:
//
//   [linear_time]                      the claim id
//   statement = ...                    what the source says, and the proxy measured here
//   source = ...                       where it is said
//   proxy = ...                        (optional) how the measurement stands in for the claim
//   where = dtype=bf16 B=1 H=32 ...    rows every check reads: CSV column=value, space-separated
//                                      (a value 0 also matches an empty or missing column);
//                                      pass=fwd|bwd|fwdbwd the pass they ran (fwd without it, and for
//                                      a CSV before the pass column)
//   [linear_time.gdn]                  one check; the claim is REPRODUCED when every check is
//   measure = slope                    slope:  log-log slope of `metric` against `x` per series
//   family = gdn                               (fit = upper_half | all, min_points, min_r2)
//   ...                                growth: metric(x = to) / metric(x = from) - 1 per series
//                                              (over = all | best: the smallest metric at `to`)
//                                      ratio:  best `numerator` family / best `denominator`
//                                              family at x = at (best: the smallest metric)
//   min = 0.8 / max = 1.2              the bounds the value must meet (either or both)
//   variants = a,b  where = ...        (optional) narrow the rows further
//   metric = time_median_ms, x = T     (defaults) any numeric CSV column
//
// A series is every case column but x (variant, dtype, shape, chunk, gate/delta/h0, context, ...).
// Only PASS rows with a positive finite metric count. A check that finds no data is NOT
// MEASURABLE HERE (e.g. memory on the CPU backend, attention without a GPU), and says why: the
// SKIPPED rows it would have read, by reason, and for a backward pass of a family none of whose
// variants has a backward (attention's training step), that there is no baseline to judge.
//
// Noise. A timed metric (time_*, tflops, gbps, frac_*) is judged with an interval of kNoiseSigmas
// (2) standard deviations around its value; counts (peak_device_bytes) are exact. A row's relative
// standard deviation is its time_cv (the spread the regression rule of `report` reads too).
//   slope:  slope_noise (harness/analysis/fits.h): the rows' CVs through the least-squares weights and the
//           residual standard error of the fit (3 points or more), in quadrature.
//   growth: log(y1 / y0) has variance cv0^2 + cv1^2 + 2 sd^2, sd the residual standard deviation of
//           the series' log-log line over its points from `from` to `to` (3 points or more).
//   ratio:  log(n / d) has variance cv_n^2 + cv_d^2.
// A series meets its bound when the interval lies wholly inside it, misses it when wholly outside,
// and is inconclusive when it straddles; a fit under min_r2 misses when every row of it is firm
// (time_cv <= kNoisyCv, harness/noise.h) and is inconclusive when a row is noisy. A check misses
// when any series misses, else is INCONCLUSIVE when any is. A claim is NOT REPRODUCED when any
// check misses, else INCONCLUSIVE when any check is, else NOT MEASURABLE HERE when any check lacks
// data, else REPRODUCED.
#pragma once
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "harness/io/csv_read.h"

struct ClaimCheck {
  std::string name;     // the sub-section
  std::string measure;  // slope | growth | ratio
  std::string family;   // slope, growth: the family measured
  std::string numerator, denominator;  // ratio: families
  std::vector<std::string> variants;   // empty: every variant of the family
  std::vector<std::pair<std::string, std::string>> where;
  std::string metric = "time_median_ms";
  std::string x = "T";
  double at = 0, from = 0, to = 0;
  std::string fit = "upper_half";  // slope: upper_half | all
  int min_points = 3;
  double min = -1e300, max = 1e300, min_r2 = 0;
  std::string over = "all";  // growth: all | best
};

struct Claim {
  std::string id, statement, source, proxy, where_text;
  std::vector<std::pair<std::string, std::string>> where;
  std::vector<ClaimCheck> checks;
};

// Throws UsageError (harness/io/errors.h) with one line naming `name` on a malformed file.
std::vector<Claim> parse_claims(std::istream& in, const std::string& name);
std::vector<Claim> read_claims_file(const std::string& path);
// A path, or a name in claims/ ("gdn_claims"); throws UsageError when there is none.
std::string resolve_claims_path(const std::string& name);
constexpr const char* kDefaultClaims = "gdn_claims";

enum class Verdict { reproduced, not_reproduced, not_measurable, inconclusive };
const char* verdict_name(Verdict v);  // REPRODUCED, NOT REPRODUCED, NOT MEASURABLE HERE, INCONCLUSIVE

struct CheckResult {
  ClaimCheck check;
  Verdict verdict = Verdict::not_measurable;
  std::string rule;                // the comparison, in words
  std::string measured;            // the value(s) with their noise intervals, one line
  std::vector<std::string> lines;  // one per series: variant, setup, value, verdict
};

struct ClaimResult {
  Claim claim;
  Verdict verdict = Verdict::not_measurable;
  std::vector<std::string> devices;  // of the rows used
  std::vector<CheckResult> checks;
};

// Tables are read in order; where two PASS rows measure the same case (same series and x), the
// later one is used, so a re-measurement supersedes an older CSV given before it.
std::vector<ClaimResult> evaluate_claims(const std::vector<Claim>& claims, const std::vector<CsvTable>& tables);
std::string claims_text(const std::vector<ClaimResult>& results);
std::string claims_markdown(const std::vector<ClaimResult>& results, const std::string& claims_path);

// Columns `claims` needs in every CSV.
const std::vector<std::string>& claims_required_columns();

// The sub-command; args are those after "claims". Exit 0 whatever the verdicts (they are
// findings); throws UsageError on bad use or input.
int run_claims(const std::vector<std::string>& args);
std::string claims_usage_text();
