#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "harness/runner.h"

namespace {
double quantile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return 0.0;
  const double pos = q * double(s.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - double(lo));
}
}  // namespace

TimingStats summarize_samples(std::vector<double> samples_ms) {
  TimingStats t;
  t.samples = int(samples_ms.size());
  if (samples_ms.empty()) return t;
  std::sort(samples_ms.begin(), samples_ms.end());
  double sum = 0.0;
  for (double x : samples_ms) sum += x;
  t.mean_ms = sum / double(samples_ms.size());
  double var = 0.0;
  for (double x : samples_ms) var += (x - t.mean_ms) * (x - t.mean_ms);
  var = samples_ms.size() > 1 ? var / double(samples_ms.size() - 1) : 0.0;
  t.cv = t.mean_ms > 0.0 ? std::sqrt(var) / t.mean_ms : 0.0;
  t.min_ms = samples_ms.front();
  t.median_ms = quantile_sorted(samples_ms, 0.5);
  t.p20_ms = quantile_sorted(samples_ms, 0.2);
  t.p80_ms = quantile_sorted(samples_ms, 0.8);
  return t;
}

bool sampling_done(const std::vector<double>& samples_ms, double elapsed_s,
                   const TimingConfig& c) {
  const int n = int(samples_ms.size());
  if (n >= c.max_samples) return true;
  if (n < c.min_samples) return false;
  if (elapsed_s >= c.max_seconds) return true;
  return summarize_samples(samples_ms).cv <= c.cv_target;
}

const char* l2_flush_name(L2Flush f) {
  switch (f) {
    case L2Flush::write: return "write";
    case L2Flush::clean: return "clean";
    case L2Flush::off: return "off";
  }
  return "?";
}

std::optional<L2Flush> parse_l2_flush(const std::string& text) {
  for (L2Flush f : {L2Flush::write, L2Flush::clean, L2Flush::off})
    if (text == l2_flush_name(f)) return f;
  return std::nullopt;
}

void stop_if_interrupted() {
  if (interrupt_requested()) throw Interrupted();
}

TimingStats time_cpu_run(VariantRun& run, const TimingConfig& cfg) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < cfg.warmup; ++i) {
    stop_if_interrupted();
    run.launch();
  }
  std::vector<double> samples;
  const auto start = clock::now();
  for (;;) {
    stop_if_interrupted();
    const auto t0 = clock::now();
    run.launch();
    const auto t1 = clock::now();
    samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    const double elapsed = std::chrono::duration<double>(t1 - start).count();
    if (sampling_done(samples, elapsed, cfg)) break;
  }
  TimingStats stats = summarize_samples(samples);
  stats.timer = "host";
  return stats;
}
