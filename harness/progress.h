// Progress of a run over its cases, in every context: on a terminal one line rewritten in place;
// elsewhere (a CI log, a pipe) one line every `interval_s` and at the end. The time left is weighted
// by each case's work (its FLOPs and bytes, case_cost), not a mean per case: a suite's last, longest
// cases are what the estimate must see coming.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/runner.h"

// A case's weight for the estimate: its FLOPs plus its bytes plus a fixed cost (setup, launch,
// the reference's overheads) that keeps tiny cases from counting as nothing.
double progress_work(const Case& c);
// Seconds left at `elapsed` s when `done` of `total` work is finished; 0 before any work is done
// (no rate yet) and after all of it.
double progress_seconds_left(double elapsed, double done, double total);

class Progress {
 public:
  Progress(const std::vector<Case>& cases, bool enabled, bool terminal, double interval_s = 10.0);
  // Before case i: prints when due (always on a terminal).
  void before(size_t i);
  // After the last case (or an interruption).
  void finish();

 private:
  std::string line(size_t i, double elapsed) const;
  const std::vector<Case>& cases_;
  std::vector<double> done_before_;  // work of the cases before each one
  double total_ = 0;
  bool enabled_, terminal_;
  double interval_s_, last_print_ = -1e300;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};
