// The numerical pieces of `gdnbench report` (harness/analysis/report.h): crossover, floor, regression
// rule (the fits are harness/analysis/fits.cpp).
#include "harness/analysis/report.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>

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
         t.cell(row, "dtype") == dtype && row_pass(t, row) == "fwd" && !row_packed(t, row);
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
