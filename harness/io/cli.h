// Command line and suite files: one Boost.Program_options description for both. A suite is an
// option file; each `grid = ...` line in it is a further set of flags, and every grid is expanded
// into the cartesian product of its lists. Precedence: command line > grid line > suite > default.
#pragma once
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/io/errors.h"
#include "harness/reference_sample.h"
#include "harness/problem.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"

struct Case {
  Problem problem;
  const VariantInfo* variant;
  bool explicit_variant;  // named by --variants, not picked by "auto"
};

struct Invocation {
  std::string command;  // list | run | verify | ceilings | help
  std::string help_text;  // command "help": what to print (gdnbench --help, or one command's --help)
  std::string suite_path;
  std::string out_path;
  std::string junit_path;  // empty: no JUnit XML
  std::string json_path;   // empty: no JSON
  uint64_t seed = 0;
  bool seed_given = false;  // --seed (not "random"): --resume keeps it instead of the CSV's seed
  bool resume = false;      // --resume: keep the rows of --out, run only the cases it lacks
  int cpu_threads = 1;
  bool progress = true;
  bool list_plans = false;  // list --plans
  bool allow_empty = false;  // --allow-empty: a run whose every case was SKIPPED exits 0, not 4
  bool measure_ceilings = true;  // run on a GPU: measure ceilings first for the fraction columns
  bool check_determinism = false;  // --determinism (auto: verify only): launch passing cases twice
  RefMode attention_ref = RefMode::automatic;  // --attention-ref
  RefMode gdn_ref = RefMode::automatic;        // --gdn-ref
  ToleranceProfile tolerances = ToleranceProfile::builtin();  // --tolerances: the bounds rows are judged by
  TimingConfig timing;
  std::vector<Case> cases;
};

// cuda_available decides what "--variants auto" picks. Throws UsageError.
Invocation parse_invocation(const std::vector<std::string>& args, bool cuda_available);
// The same with the suite read from `suite` (named `suite_name` in messages) instead of the
// --suite file: what the suite-file fuzzer drives. Throws UsageError.
Invocation parse_invocation_with_suite(const std::vector<std::string>& args, bool cuda_available,
                                       std::istream& suite, const std::string& suite_name);
std::string usage_text();

// Helpers exposed for tests.
std::vector<int64_t> parse_positive_list(const std::string& flag, const std::string& value);
std::string resolve_suite_path(const std::string& name);
