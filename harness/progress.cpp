#include "harness/progress.h"

#include <fmt/format.h>

#include "harness/cost.h"

double progress_work(const Case& c) {
  const CaseCost cost = case_cost(*c.variant, c.problem);
  return cost.flops + cost.bytes + 1e7;
}

double progress_seconds_left(double elapsed, double done, double total) {
  if (!(done > 0) || !(total > done) || !(elapsed > 0)) return 0.0;
  return elapsed / done * (total - done);
}

Progress::Progress(const std::vector<Case>& cases, bool enabled, bool terminal, double interval_s)
    : cases_(cases), enabled_(enabled && !cases.empty()), terminal_(terminal), interval_s_(interval_s) {
  done_before_.reserve(cases.size());
  for (const Case& c : cases) {
    done_before_.push_back(total_);
    total_ += progress_work(c);
  }
}

std::string Progress::line(size_t i, double elapsed) const {
  const Case& c = cases_[i];
  return fmt::format("[{}/{}] {} {} T={} elapsed {:.0f}s, about {:.0f}s left", i + 1, cases_.size(), c.variant->name,
                     dtype_name(c.problem.dtype), c.problem.shape.T, elapsed,
                     progress_seconds_left(elapsed, done_before_[i], total_));
}

void Progress::before(size_t i) {
  if (!enabled_ || i >= cases_.size()) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) {
    fmt::print(stderr, "\r{}   ", line(i, elapsed));
    return;
  }
  if (elapsed - last_print_ < interval_s_) return;
  last_print_ = elapsed;
  fmt::print(stderr, "{}\n", line(i, elapsed));
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) fmt::print(stderr, "\n");
  else fmt::print(stderr, "[{}/{}] done in {:.0f}s\n", cases_.size(), cases_.size(), elapsed);
}
