// Fits of a measured series y(x) as a power law, and the noise of the fitted slope: what the
// complexity table of `report` and the slope checks of `claims` both judge with.
#pragma once
#include <cstddef>
#include <vector>

// Least-squares fit of log(y) = intercept + slope * log(x): y ~ x^slope. Points with x or y not
// positive and finite are dropped; n is the number of points used. slope/r2 are NaN for fewer than
// two distinct x; r2 is 1 when the points lie on the line (also when y is constant).
struct PowerFit {
  double slope = 0, intercept = 0, r2 = 0;
  int n = 0;
};
PowerFit fit_power_law(const std::vector<double>& x, const std::vector<double>& y);

// The noise of a fitted slope (`claims`, the complexity table): kNoiseSigmas standard errors of the
// least-squares slope of log y against log x, two sources added in quadrature. Rows: log y_i has
// standard deviation rel_sigma_i (a row's timing CV; NaN or missing counts as 0), so the slope's is
// sqrt(sum w_i^2 rel_sigma_i^2) with w_i = (log x_i - mean) / Sxx. Residuals: the scatter of the
// points about the line, sqrt(SS_res / (n - 2) / Sxx), for n >= 3 points (0 below). The points
// fit_power_law drops are dropped here too. half_width is 0 when neither source is known.
struct SlopeNoise {
  double from_rows = 0, from_residuals = 0;  // standard errors of the slope
  double half_width = 0;                     // kNoiseSigmas * sqrt(from_rows^2 + from_residuals^2)
};
SlopeNoise slope_noise(const std::vector<double>& x, const std::vector<double>& y,
                       const std::vector<double>& rel_sigma);

// The upper half of a series for the fit that ignores launch-bound small T: the largest
// ceil(n / 2) distinct x, at least 2 (all of them when n < 4). Indices into x, ascending in x.
std::vector<size_t> upper_half(const std::vector<double>& x);
