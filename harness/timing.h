// Timing: warm-up, repeated samples until the noise target or a cap is met, robust summary.
// CPU runs are timed with the host's steady clock; GPU runs with CUDA events (cuda_timing.cu).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/variant.h"

// What the L2 holds when a GPU sample starts (--l2-flush).
// - write: a buffer of twice the L2 size overwritten (a memset), the flush of Triton's do_bench
//   and nvbench: no input stays cached, and the L2 is left full of the memset's dirty lines, whose
//   write-back the timed kernel pays as its own traffic evicts them (3-5 us a sample on the H200:
//   11% of a 28 us decode step, run 89 in docs/log/runs-071-106.md).
// - clean: the same memset, then a read of the whole buffer, so the L2 holds clean lines of
//   nothing the kernel touches: it pays for its own traffic only.
// - off: nothing; the previous sample's lines stay, and the GPU idles between samples.
enum class L2Flush { write, clean, off };
const char* l2_flush_name(L2Flush f);
std::optional<L2Flush> parse_l2_flush(const std::string& text);

struct TimingConfig {
  int warmup = 2;
  int min_samples = 10;
  int max_samples = 200;
  double max_seconds = 2.0;  // cap on the sampling loop per case (excluding warm-up)
  double cv_target = 0.02;   // stop once stddev / mean of the samples is at or under this
  L2Flush l2_flush = L2Flush::write;  // GPU: the L2 before each sample
  bool cuda_graph = false;   // GPU: time replays of a captured graph of the launch
};

struct TimingStats {
  int samples = 0;
  double median_ms = 0, min_ms = 0, p20_ms = 0, p80_ms = 0, mean_ms = 0, cv = 0;
  // How the samples were taken, for the CSV: timer host (steady clock), events (CUDA events
  // around the launch) or graph (around a replay of its CUDA graph); l2_flush for GPU samples.
  std::string timer, l2_flush;
};

TimingStats summarize_samples(std::vector<double> samples_ms);
// True once enough samples are in and either the noise target or a cap is reached.
bool sampling_done(const std::vector<double>& samples_ms, double elapsed_s, const TimingConfig& c);

TimingStats time_cpu_run(VariantRun& run, const TimingConfig& cfg);
// The sampling loops (time_cpu_run, and time_gpu_run in cuda_runtime.cu) call this between
// samples: once SIGINT or SIGTERM arrived it throws Interrupted (harness/runner.h), so a long
// timed case stops at the next sample instead of running to its end.
void stop_if_interrupted();
