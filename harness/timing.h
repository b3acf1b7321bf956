// Timing: warm-up, repeated samples until the noise target or a cap is met, robust summary.
// CPU runs are timed with the host's steady clock; GPU runs with CUDA events (cuda_timing.cu).
#pragma once
#include <vector>

#include "harness/variant.h"

struct TimingConfig {
  int warmup = 2;
  int min_samples = 10;
  int max_samples = 200;
  double max_seconds = 2.0;  // cap on the sampling loop per case (excluding warm-up)
  double cv_target = 0.02;   // stop once stddev / mean of the samples is at or under this
  bool flush_l2 = true;      // GPU: overwrite a buffer of twice the L2 size before each sample
  bool cuda_graph = false;   // GPU: time replays of a captured graph of the launch
};

struct TimingStats {
  int samples = 0;
  double median_ms = 0, min_ms = 0, p20_ms = 0, p80_ms = 0, mean_ms = 0, cv = 0;
};

TimingStats summarize_samples(std::vector<double> samples_ms);
// True once enough samples are in and either the noise target or a cap is reached.
bool sampling_done(const std::vector<double>& samples_ms, double elapsed_s, const TimingConfig& c);

TimingStats time_cpu_run(VariantRun& run, const TimingConfig& cfg);
