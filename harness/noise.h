// Noise in timings: when a row is noisy, and how wide the intervals the claims judge with are.
#pragma once
#include <cmath>

// A timed row whose samples spread more than this (time_cv = stddev / mean above 10%) is noisy:
// its median is no firm figure. The console table marks it `~`, the CSV says so in `time_noisy`,
// `report` marks and counts such rows, and `claims` widens its intervals by the rows' CVs.
constexpr double kNoisyCv = 0.10;
inline bool timing_noisy(double cv) { return std::isfinite(cv) && cv > kNoisyCv; }

// The noise interval of a measured value (`claims`, the complexity fit of `report`): this many
// standard deviations either side of it (about 95% for a normal error).
constexpr double kNoiseSigmas = 2.0;
