#include "harness/io/table.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/noise.h"

void print_registry(std::FILE* out) {
  fmt::print(out, "{:<16} {:<10} {:<8} {:<12} {:<28} {:<34} {}\n", "variant", "family",
             "backend", "precision", "dtypes", "shapes", "summary");
  for (const VariantInfo& v : variant_registry())
    fmt::print(out, "{:<16} {:<10} {:<8} {:<12} {:<28} {:<34} {}\n", v.name, family_name(v.family),
               backend_name(v.backend), precision_name(v.precision), v.dtypes, v.shapes, v.summary);
}

void print_plans(std::FILE* out) {
  fmt::print(out, "{:<24} {:<10} {:<26} {}\n", "variant", "stage", "option", "dtypes");
  for (const VariantPlans& vp : variant_plans())
    for (const PlanStage& st : vp.stages())
      for (const PlanOption& o : st.options) {
        std::string dtypes;
        for (DType d : o.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
        fmt::print(out, "{:<24} {:<10} {:<26} {}\n", vp.variant, st.name, o.name, dtypes);
      }
}

namespace {
std::string sci(const TensorMetrics& m, double v) { return m.present ? fmt::format("{:.2e}", v) : "-"; }

// A backward row's worst gradient: its name and rel_l2 / bound (1 at the bound), "-" for the forward.
std::string worst_gradient(const ResultRow& r) {
  std::string worst = "-";
  double ratio = -1.0;
  for (Grad g : kGrads) {
    const TensorMetrics& m = r.grad[size_t(g)];
    if (!m.present) continue;
    const double bound = r.tol.grad_rel_l2[size_t(g)];
    const double x = bound > 0 ? m.rel_l2 / bound : INFINITY;
    if (!(x <= ratio)) {  // NaN counts as worst
      ratio = x;
      worst = fmt::format("{} {:.2f}", grad_name(g), x);
    }
  }
  return worst;
}
}  // namespace

void print_result_table(std::FILE* out, const std::vector<ResultRow>& rows) {
  fmt::print(out, "{:<14} {:<5} {:>3} {:>6} {:>3} {:>3} {:>4} {:>4} {:>3} {:<9} {:<6} {:<7} {:>9} {:>7} {:>9} {:>11} {:>10} {:>9}\n",
             "variant", "dtype", "B", "T", "H", "HV", "K", "V", "C", "g/d/h0", "pass", "status",
             "o_rel_l2", "o/floor", "hT_rel_l2", "grad/bound", "median_ms", "GFLOP/s");
  for (const ResultRow& r : rows) {
    const GdnShape& s = r.problem.shape;
    const std::string flags = fmt::format("{}/{}/{}", r.problem.use_gate ? "g" : "-",
                                          r.problem.use_delta ? "d" : "-", r.problem.use_h0 ? "h" : "-");
    // A noisy row (time_cv above kNoisyCv): its median marked `~`, its CV named after the row.
    const bool noisy = r.timing && timing_noisy(r.timing->cv);
    const std::string median = r.timing ? fmt::format("{}{:.4f}", noisy ? "~" : "", r.timing->median_ms) : "-";
    const std::string rate = r.timing && r.timing->median_ms > 0
                                 ? fmt::format("{:.1f}", r.flops / (r.timing->median_ms * 1e6)) : "-";
    fmt::print(out, "{:<14} {:<5} {:>3} {:>6} {:>3} {:>3} {:>4} {:>4} {:>3} {:<9} {:<6} {:<7} {:>9} {:>7} {:>9} {:>11} {:>10} {:>9}",
               r.variant, dtype_name(r.problem.dtype), s.B, s.T, s.H, s.HV, s.K, s.V, r.problem.chunk,
               flags, pass_name(r.problem.pass), status_name(r.status), sci(r.o, r.o.rel_l2),
               r.o.present ? fmt::format("{:.2f}", r.o.err_vs_floor) : "-", sci(r.ht, r.ht.rel_l2),
               worst_gradient(r), median, rate);
    if (!r.reason.empty()) fmt::print(out, "  {}", r.reason);
    if (noisy) fmt::print(out, "  noisy: CV {:.0f}%", 100 * r.timing->cv);
    fmt::print(out, "\n");
  }
  const auto noisy_rows = std::count_if(rows.begin(), rows.end(),
                                        [](const ResultRow& r) { return r.timing && timing_noisy(r.timing->cv); });
  if (noisy_rows)
    fmt::print(out, "~ {} noisy row{}: timing CV above {:.0f}% (time_noisy in the CSV); the median is no firm figure\n",
               noisy_rows, noisy_rows == 1 ? "" : "s", 100 * kNoisyCv);
}
