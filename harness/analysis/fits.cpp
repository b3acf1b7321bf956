// Power-law fits of a series and the noise of their slopes (harness/analysis/fits.h).
#include "harness/analysis/fits.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <set>

#include "harness/noise.h"

PowerFit fit_power_law(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> lx, ly;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i]) && x[i] > 0 && y[i] > 0) {
      lx.push_back(std::log(x[i]));
      ly.push_back(std::log(y[i]));
    }
  PowerFit f;
  f.n = int(lx.size());
  const double n = double(lx.size());
  const double mx = f.n ? std::accumulate(lx.begin(), lx.end(), 0.0) / n : 0.0;
  const double my = f.n ? std::accumulate(ly.begin(), ly.end(), 0.0) / n : 0.0;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < lx.size(); ++i) {
    sxx += (lx[i] - mx) * (lx[i] - mx);
    sxy += (lx[i] - mx) * (ly[i] - my);
    syy += (ly[i] - my) * (ly[i] - my);
  }
  if (f.n < 2 || sxx <= 0) {
    f.slope = f.intercept = f.r2 = NAN;
    return f;
  }
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  // R^2 = 1 - SS_res / SS_tot = sxy^2 / (sxx syy); a constant y lies exactly on its fit.
  f.r2 = syy > 0 ? sxy * sxy / (sxx * syy) : 1.0;
  return f;
}

SlopeNoise slope_noise(const std::vector<double>& x, const std::vector<double>& y,
                       const std::vector<double>& rel_sigma) {
  std::vector<double> lx, ly, sig;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i]) && x[i] > 0 && y[i] > 0) {
      lx.push_back(std::log(x[i]));
      ly.push_back(std::log(y[i]));
      const double s = i < rel_sigma.size() ? rel_sigma[i] : 0.0;
      sig.push_back(std::isfinite(s) && s > 0 ? s : 0.0);
    }
  SlopeNoise out;
  const size_t n = lx.size();
  if (n < 2) return out;
  const double mx = std::accumulate(lx.begin(), lx.end(), 0.0) / double(n);
  const double my = std::accumulate(ly.begin(), ly.end(), 0.0) / double(n);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (lx[i] - mx) * (lx[i] - mx);
    sxy += (lx[i] - mx) * (ly[i] - my);
  }
  if (!(sxx > 0)) return out;
  double var_rows = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = (lx[i] - mx) / sxx;
    var_rows += w * w * sig[i] * sig[i];
  }
  out.from_rows = std::sqrt(var_rows);
  if (n >= 3) {
    const double slope = sxy / sxx;
    double ss_res = 0;
    for (size_t i = 0; i < n; ++i) {
      const double e = ly[i] - (my + slope * (lx[i] - mx));
      ss_res += e * e;
    }
    out.from_residuals = std::sqrt(ss_res / double(n - 2) / sxx);
  }
  out.half_width = kNoiseSigmas * std::hypot(out.from_rows, out.from_residuals);
  return out;
}

std::vector<size_t> upper_half(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), size_t(0));
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  const std::set<double> distinct(x.begin(), x.end());
  const size_t keep = std::max<size_t>(2, (distinct.size() + 1) / 2);
  if (distinct.size() <= keep) return idx;
  const double cut = *std::next(distinct.begin(), long(distinct.size() - keep));
  std::vector<size_t> out;
  for (size_t i : idx)
    if (x[i] >= cut) out.push_back(i);
  return out;
}
