// `gdnbench compare BASE.csv NEW.csv`: a regression gate between two runs of the same suite on the
// same device. Rows are matched by case (variant, dtype, shape, options, plan); each match gets one
// verdict, and the command's exit status says whether anything regressed.
#pragma once
#include <string>
#include <vector>

#include "harness/io/csv_read.h"

enum class CompareVerdict {
  same,            // timed on both sides, the change within max(threshold, noise)
  faster,          // new faster by more than max(threshold, noise)
  slower,          // new slower by more than max(threshold, noise): a regression
  inconclusive,    // past the threshold but within the noise of the two sides: neither verdict
  not_comparable,  // timed another way (timer or L2 flush differ)
  new_fail,        // FAIL in new, not FAIL in base (or absent there): a regression
  still_fail,      // FAIL on both sides
  fixed,           // FAIL in base, PASS in new
  lost,            // PASS in base, SKIPPED in new: a check that no longer runs, a regression
  untimed,         // both checked, not both timed (verify rows, a SKIPPED pair)
  only_base,       // the case is in base alone
  only_new,        // the case is in new alone
};
const char* compare_verdict_name(CompareVerdict v);
bool is_regression(CompareVerdict v);

struct CompareOptions {
  double threshold = 0.05;      // fraction of base's median a change must pass to count
  bool allow_mismatch = false;  // compare files of different suites, devices or tolerance profiles
};

struct CompareRow {
  std::string key;  // the case, as text
  std::string base_status, new_status;
  double base_ms = 0, new_ms = 0, base_cv = 0, new_cv = 0;
  double noise_ms = 0;  // max(3 cv_base base_ms, 3 cv_new new_ms): where medians this apart are not told apart
  CompareVerdict verdict = CompareVerdict::same;
};

struct CompareResult {
  std::vector<CompareRow> rows;  // base's order, then new's unmatched cases
  int regressions = 0;
  int base_duplicates = 0, new_duplicates = 0;  // rows of a case after its first (the last one counts)
};

// Throws UsageError when the files differ in suite, device or tolerance profile (setup_difference)
// and !opt.allow_mismatch.
CompareResult compare_tables(const CsvTable& base, const CsvTable& fresh, const CompareOptions& opt);
// Markdown: the rule, a summary line, then one table row per case (only_* and untimed ones last).
std::string compare_markdown(const CompareResult& r, const CsvTable& base, const CsvTable& fresh,
                             const CompareOptions& opt);

// The command: exit 0 (no regression), 1 (a regression), UsageError (exit 2) on bad input.
int run_compare(const std::vector<std::string>& args);
std::string compare_usage_text();
