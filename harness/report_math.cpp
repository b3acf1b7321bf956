// The numerical pieces of `gdnbench report` (harness/report.h): power-law fit, crossover, floor,
// regression rule.
#include "harness/report.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>


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

Crossover find_crossover(const std::vector<double>& T, const std::vector<double>& gdn_ms,
                         const std::vector<double>& attn_ms) {
  std::vector<std::pair<double, double>> pts;  // (log T, log r)
  for (size_t i = 0; i < T.size() && i < gdn_ms.size() && i < attn_ms.size(); ++i)
    if (T[i] > 0 && gdn_ms[i] > 0 && attn_ms[i] > 0 && std::isfinite(gdn_ms[i]) &&
        std::isfinite(attn_ms[i]))
      pts.emplace_back(std::log(T[i]), std::log(gdn_ms[i] / attn_ms[i]));
  std::sort(pts.begin(), pts.end());
  Crossover c;
  if (pts.empty()) return c;
  const auto faster = [](const std::pair<double, double>& p) { return p.second < 0; };
  if (std::all_of(pts.begin(), pts.end(), faster)) {
    c.kind = Crossover::always_faster;
    return c;
  }
  if (std::none_of(pts.begin(), pts.end(), faster)) {
    c.kind = Crossover::never_faster;
    return c;
  }
  const auto interpolate = [](const std::pair<double, double>& a, const std::pair<double, double>& b) {
    return std::exp(a.first + (0.0 - a.second) * (b.first - a.first) / (b.second - a.second));
  };
  for (size_t i = 0; i + 1 < pts.size(); ++i)
    if (!faster(pts[i]) && faster(pts[i + 1])) {
      c.kind = Crossover::becomes_faster;
      c.t = interpolate(pts[i], pts[i + 1]);
      return c;
    }
  for (size_t i = 0; i + 1 < pts.size(); ++i)
    if (faster(pts[i]) && !faster(pts[i + 1])) {
      c.kind = Crossover::becomes_slower;
      c.t = interpolate(pts[i], pts[i + 1]);
      return c;
    }
  return c;  // unreachable: mixed signs always have a bracket
}

std::string crossover_text(const Crossover& c) {
  switch (c.kind) {
    case Crossover::becomes_faster: return fmt::format("faster from T ≈ {:.0f}", c.t);
    case Crossover::becomes_slower: return fmt::format("faster only below T ≈ {:.0f}", c.t);
    case Crossover::always_faster: return "always faster";
    case Crossover::never_faster: return "never faster in range";
    case Crossover::no_data: break;
  }
  return "no common T";
}

double floor_ms(double flops, double min_bytes, double ceiling_tflops, double ceiling_gbps) {
  for (double x : {flops, min_bytes, ceiling_tflops, ceiling_gbps})
    if (!(std::isfinite(x) && x > 0)) return NAN;
  return std::max(flops / (ceiling_tflops * 1e9), min_bytes / (ceiling_gbps * 1e6));
}

bool timed_forward_row(const CsvTable& t, size_t row, const std::string& dtype) {
  const double ms = t.number(row, "time_median_ms");
  return t.cell(row, "status") == "PASS" && ms > 0 && std::isfinite(ms) && !(t.number(row, "context") > 0) &&
         t.cell(row, "dtype") == dtype;
}

RecordedCeilings first_recorded_ceilings(const std::vector<CsvTable>& tables, const std::string& dtype,
                                         const std::string& device) {
  for (const CsvTable& t : tables)
    for (size_t i = 0; i < t.rows.size(); ++i) {
      if (!timed_forward_row(t, i, dtype) || (!device.empty() && t.cell(i, "device") != device)) continue;
      const double tflops = t.number(i, "ceiling_tflops"), gbps = t.number(i, "ceiling_gbps");
      if (tflops > 0 && gbps > 0) return {tflops, gbps, t.cell(i, "device")};
    }
  return {};
}

RowFloor row_floor(const std::vector<CsvTable>& tables, const CsvTable& t, size_t row) {
  const double flops = t.number(row, "flops"), bytes = t.number(row, "min_bytes");
  RowFloor f;
  f.ms = floor_ms(flops, bytes, t.number(row, "ceiling_tflops"), t.number(row, "ceiling_gbps"));
  if (!std::isnan(f.ms)) return f;
  const std::string device = t.cell(row, "device");
  if (device.empty()) return f;  // no device named: nothing to borrow from
  const RecordedCeilings c = first_recorded_ceilings(tables, t.cell(row, "dtype"), device);
  f.ms = floor_ms(flops, bytes, c.tflops, c.gbps);
  f.borrowed = !std::isnan(f.ms);
  return f;
}

double regression_threshold_ms(double median_a, double cv_a, double median_b, double cv_b) {
  return std::max({3.0 * cv_a * median_a, 3.0 * cv_b * median_b, 0.02 * median_a});
}

Change compare_timing(double median_a, double cv_a, double median_b, double cv_b) {
  const double d = median_b - median_a;
  if (std::fabs(d) <= regression_threshold_ms(median_a, cv_a, median_b, cv_b)) return Change::same;
  return d > 0 ? Change::slower : Change::faster;
}

const char* change_name(Change c) {
  return c == Change::slower ? "SLOWER" : c == Change::faster ? "FASTER" : "same";
}
