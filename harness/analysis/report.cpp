// `gdnbench report`: the markdown sections (harness/analysis/report.h); the command line is report_cmd.cpp.
#include "harness/analysis/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "harness/analysis/claims.h"
#include "harness/io/errors.h"
#include "harness/io/csv.h"
#include "harness/noise.h"

const std::vector<std::string>& report_required_columns() {
  static const std::vector<std::string> cols = {
      "schema_version", "run_id", "git_sha", "device", "command", "suite", "seed", "variant",
      "family", "dtype", "B", "T", "H", "HV", "K", "V", "chunk", "gate", "delta", "h0", "status",
      "o_rel_l2", "o_err_vs_floor", "ht_rel_l2", "time_median_ms", "time_cv", "tflops", "gbps"};
  return cols;
}

namespace {

struct Shape {
  std::string dtype;
  int64_t B, H, HV, K, V;
  auto tie() const { return std::tie(dtype, B, H, HV, K, V); }
  bool operator<(const Shape& o) const { return tie() < o.tie(); }
  bool operator==(const Shape& o) const { return tie() == o.tie(); }
};

// Everything but T: one timing series.
struct SeriesKey {
  std::string variant;
  Shape shape;
  int64_t chunk;
  std::string gate, delta, h0;
  auto tie() const { return std::tie(variant, shape, chunk, gate, delta, h0); }
  bool operator<(const SeriesKey& o) const { return tie() < o.tie(); }
};

struct Row {
  size_t file = 0;
  SeriesKey key;
  std::string family, status;
  int64_t T = 0;
  int64_t context = 0;  // KV-cache tokens: decode rows (> 0) have their own section
  double median = NAN, cv = NAN, tflops = NAN, gbps = NAN, frac_flops = NAN, frac_bw = NAN;
  double floor = NAN;  // ms at the better of the measured ceilings (row_floor); NaN unmeasured
  bool floor_borrowed = false;  // on another row's ceilings (the row was timed with --no-ceilings)
  double o_rel = NAN, o_vs_floor = NAN, ht_rel = NAN;
  // Verified against a float64 reference of a sample of query rows (ref_rows < T) or of
  // (b, hv) heads (ref_heads < B HV); absent columns (older CSVs): full.
  bool sampled_ref = false;
  // How it was timed: "timer l2_flush" (e.g. "events write"); empty in CSVs older than the columns.
  std::string protocol;
  bool timed() const { return status == "PASS" && std::isfinite(median) && median > 0; }
  bool noisy() const { return timed() && timing_noisy(cv); }  // time_cv above kNoisyCv
};

std::vector<Row> load_rows(const std::vector<CsvTable>& tables, size_t file) {
  const CsvTable& t = tables[file];
  std::vector<Row> rows;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto integer = [&](const char* c) {
      const double x = t.number(i, c);
      return std::isfinite(x) ? int64_t(x) : int64_t(0);
    };
    Row r;
    r.file = file;
    // A backward row is a series of its own: "cpu_chunked (bwd)" beside the forward's "cpu_chunked";
    // so is each packed batch, whose T is the total of its sequences: "cpu_chunked (packed 1024*16)".
    const std::string pass = row_pass(t, i);
    r.key.variant = t.cell(i, "variant") + (pass == "fwd" ? "" : " (" + pass + ")") +
                    (row_packed(t, i) ? " (packed " + t.cell(i, "seqlens") + ")" : "");
    r.key.shape = {t.cell(i, "dtype"), integer("B"), integer("H"), integer("HV"), integer("K"), integer("V")};
    r.key.chunk = integer("chunk");
    r.key.gate = t.cell(i, "gate");
    r.key.delta = t.cell(i, "delta");
    r.key.h0 = t.cell(i, "h0");
    r.family = t.cell(i, "family");
    r.status = t.cell(i, "status");
    r.T = integer("T");
    r.context = integer("context");  // absent column: 0
    r.median = t.number(i, "time_median_ms");
    r.cv = t.number(i, "time_cv");
    if (!t.cell(i, "timer").empty()) r.protocol = t.cell(i, "timer") + " " + t.cell(i, "l2_flush");
    r.tflops = t.number(i, "tflops");
    r.gbps = t.number(i, "gbps");
    r.frac_flops = t.number(i, "frac_flops");  // absent column: NaN, shown as "-"
    r.frac_bw = t.number(i, "frac_bw");
    // No ceilings of the row or of its device and dtype (CPU rows) leave the floor NaN, shown as "-".
    const RowFloor floor = row_floor(tables, t, i);
    r.floor = floor.ms;
    r.floor_borrowed = floor.borrowed;
    r.o_rel = t.number(i, "o_rel_l2");
    const double ref_rows = t.number(i, "ref_rows"), ref_heads = t.number(i, "ref_heads");
    r.sampled_ref = (std::isfinite(ref_rows) && ref_rows < double(r.T)) ||
                    (std::isfinite(ref_heads) && ref_heads < double(r.key.shape.B * r.key.shape.HV));
    r.o_vs_floor = t.number(i, "o_err_vs_floor");
    r.ht_rel = t.number(i, "ht_rel_l2");
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string num(double x, const char* spec = "{:.4g}") {
  if (std::isnan(x)) return "-";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format(spec, x);
}

std::string shape_cells(const Shape& s) {
  return fmt::format("{} | {} | {} | {} | {} | {}", s.dtype, s.B, s.H, s.HV, s.K, s.V);
}
std::string terms(const SeriesKey& k) { return fmt::format("{}/{}/{}", k.gate, k.delta, k.h0); }

// Max over the finite-or-inf values (NaN, the empty cells, ignored).
void take_max(double& m, double x) {
  if (!std::isnan(x)) m = std::isnan(m) ? x : std::max(m, x);
}

// Timing series of the timed rows, T ascending. The first row of a (series, T) wins; `shadowed`
// counts the later duplicates.
using Series = std::map<SeriesKey, std::map<int64_t, const Row*>>;
Series timed_series(const std::vector<Row>& rows, size_t* shadowed) {
  Series s;
  for (const Row& r : rows)
    if (r.timed() && r.context == 0 && !s[r.key].emplace(r.T, &r).second && shadowed) ++*shadowed;
  return s;
}

// Series in the order their variant first appears in the CSVs (the registry's order in practice).
std::vector<const Series::value_type*> ordered(const Series& s, const std::vector<Row>& rows) {
  std::vector<std::string> order;
  for (const Row& r : rows)
    if (std::find(order.begin(), order.end(), r.key.variant) == order.end()) order.push_back(r.key.variant);
  std::vector<const Series::value_type*> out;
  for (const auto& kv : s) out.push_back(&kv);
  std::stable_sort(out.begin(), out.end(), [&](auto* a, auto* b) {
    const auto ia = std::find(order.begin(), order.end(), a->first.variant) - order.begin();
    const auto ib = std::find(order.begin(), order.end(), b->first.variant) - order.begin();
    return std::tie(ia, a->first.shape, a->first.chunk) < std::tie(ib, b->first.shape, b->first.chunk);
  });
  return out;
}

void environment(std::string& md, const std::vector<CsvTable>& tables) {
  md += "## Environment\n\n";
  md += "| file | rows |\n| --- | --- |\n";
  for (const CsvTable& t : tables) md += fmt::format("| `{}` | {} |\n", t.path, t.rows.size());
  md += "\n| field | distinct values |\n| --- | --- |\n";
  for (const char* col : {"device", "git_sha", "seed", "run_id", "command", "suite", "tolerances", "tolerances_hash",
                          "timer", "l2_flush"}) {
    // Empty cells there: untimed rows, CPU rows' l2_flush, CSVs older than the column.
    const bool may_be_empty = std::string(col) == "timer" || std::string(col) == "l2_flush" ||
                            std::string(col) == "tolerances" || std::string(col) == "tolerances_hash";
    std::vector<std::string> seen;
    for (const CsvTable& t : tables)
      for (size_t i = 0; i < t.rows.size(); ++i) {
        const std::string& v = t.cell(i, col);
        if (may_be_empty && v.empty()) continue;
        if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
      }
    std::string cell;
    for (const std::string& v : seen) cell += (cell.empty() ? "" : ", ") + ("`" + v + "`");
    md += fmt::format("| {} | {} |\n", col, cell.empty() ? "-" : cell);
  }
  md += "\n";
}

void accuracy(std::string& md, const std::vector<Row>& rows) {
  struct Acc {
    int rows = 0, pass = 0, fail = 0, skipped = 0, sampled = 0;
    double o = NAN, floor = NAN, ht = NAN;
  };
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Acc> acc;
  for (const Row& r : rows) {
    const auto k = std::make_pair(r.key.variant, r.key.shape.dtype);
    if (!acc.count(k)) order.push_back(k);
    Acc& a = acc[k];
    ++a.rows;
    a.pass += r.status == "PASS";
    a.fail += r.status == "FAIL";
    a.skipped += r.status == "SKIPPED";
    a.sampled += r.sampled_ref;
    take_max(a.o, r.o_rel);
    take_max(a.floor, r.o_vs_floor);
    take_max(a.ht, r.ht_rel);
  }
  md += "## Accuracy\n\nOver every row, timed or not. Bounds: the tolerance profile of the Environment table "
        "(`builtin`: `docs/TOLERANCES.md`); "
        "`o_err_vs_floor` is the error in units of the dtype's own rounding error. sampled ref: rows "
        "judged against a float64 reference of a sample of query rows or (b, hv) heads (large "
        "problems; every element still checked for being written and finite, docs/TOLERANCES.md).\n\n";
  md += "| variant | dtype | rows | PASS | FAIL | SKIPPED | sampled ref | max o_rel_l2 | max o_err_vs_floor | "
        "max ht_rel_l2 |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& k : order) {
    const Acc& a = acc[k];
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", k.first, k.second, a.rows,
                      a.pass, a.fail, a.skipped, a.sampled, num(a.o, "{:.3g}"), num(a.floor, "{:.3g}"),
                      num(a.ht, "{:.3g}"));
  }
  md += "\n";
}

void timing(std::string& md, const Series& series, const std::vector<Row>& rows, size_t shadowed) {
  md += "## Timing\n\nPASS rows that were timed; one block per (variant, dtype, B, H, HV, K, V, C, "
        "gate/delta/h0), T ascending. frac: fraction of the GEMM rate / copy bandwidth measured at "
        "the start of the run (`-` where not measured). floor: the time at the better of those two "
        "ceilings, max(flops / GEMM rate, min_bytes / copy bandwidth) with the row's own counts "
        "(docs/DESIGN.md section 4); x floor = median / floor = 1 / max(frac FLOP/s, frac BW). A floor "
        "marked † is on the ceilings that the first timed row of the same device and dtype in these "
        "CSVs recorded: its own row was timed with `--no-ceilings`. A CV marked noisy is above "
        "10% (`time_noisy`): that median is no firm figure.\n\n";
  if (series.empty()) {
    md += "No timed rows (a `verify` CSV has no timing).\n\n";
    return;
  }
  if (shadowed)
    md += fmt::format("{} timed rows repeat a case of an earlier row or file; the first is shown.\n\n",
                      shadowed);
  size_t shown = 0, noisy = 0;
  for (const auto& kv : series)
    for (const auto& [T, r] : kv.second) ++shown, noisy += r->noisy();
  if (noisy)
    md += fmt::format("{} of the {} rows shown are noisy (CV above {:.0f}%).\n\n", noisy, shown, 100 * kNoisyCv);
  md += "| variant | dtype | B | H | HV | K | V | C | gate/delta/h0 | T | median (ms) | CV (%) | "
        "TFLOP/s | GB/s | frac FLOP/s | frac BW | floor (ms) | x floor |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- | --- |\n";
  for (const auto* kv : ordered(series, rows))
    for (const auto& [T, r] : kv->second)
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                        kv->first.variant, shape_cells(kv->first.shape), kv->first.chunk,
                        terms(kv->first), T, num(r->median),
                        num(100 * r->cv, "{:.2f}") + (r->noisy() ? " noisy" : ""), num(r->tflops, "{:.3g}"),
                        num(r->gbps, "{:.4g}"), num(r->frac_flops, "{:.3f}"), num(r->frac_bw, "{:.3f}"),
                        num(r->floor) + (r->floor_borrowed ? " †" : ""), num(r->median / r->floor, "{:.3g}"));
  md += "\n";
}

void complexity(std::string& md, const Series& series, const std::vector<Row>& rows) {
  md += "## Complexity fit\n\nLeast-squares slope of log(median ms) against log(T) for series with at "
        "least 3 distinct T: 1 is linear in T, 2 quadratic. Small T is launch-bound and flattens the "
        "slope, so it is also fitted over the upper half of the Ts (the largest ceil(n/2), at least 2). "
        "± upper half: the noise of that slope, 2 standard errors from the rows' CVs and the fit's "
        "residuals (harness/analysis/fits.h, what `claims` judges with); noisy rows: those with a CV above "
        "10%, of all the points and of the upper half.\n\n";
  std::string table =
      "| variant | dtype | B | H | HV | K | V | C | Ts | slope | R² | slope, upper half | R², upper half "
      "| upper Ts | ± upper half | noisy rows |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  int n = 0;
  for (const auto* kv : ordered(series, rows)) {
    if (kv->second.size() < 3) continue;
    std::vector<double> T, ms, cv;
    std::vector<bool> noisy;
    for (const auto& [t, r] : kv->second) {
      T.push_back(double(t));
      ms.push_back(r->median);
      cv.push_back(r->cv);
      noisy.push_back(r->noisy());
    }
    const PowerFit all = fit_power_law(T, ms);
    std::vector<double> uT, ums, ucv;
    int noisy_all = int(std::count(noisy.begin(), noisy.end(), true)), noisy_up = 0;
    for (size_t i : upper_half(T)) {
      uT.push_back(T[i]);
      ums.push_back(ms[i]);
      ucv.push_back(cv[i]);
      noisy_up += noisy[i];
    }
    const PowerFit up = fit_power_law(uT, ums);
    const SlopeNoise up_noise = slope_noise(uT, ums, ucv);
    table += fmt::format("| {} | {} | {} | {:.0f}-{:.0f} | {:.3f} | {:.4f} | {:.3f} | {:.4f} | {:.0f}-{:.0f} | ±{:.3f} | "
                         "{} of {}, {} of {} |\n",
                         kv->first.variant, shape_cells(kv->first.shape), kv->first.chunk, T.front(),
                         T.back(), all.slope, all.r2, up.slope, up.r2, uT.front(), uT.back(), up_noise.half_width,
                         noisy_all, T.size(), noisy_up, uT.size());
    ++n;
  }
  md += n ? table : std::string("No series with 3 or more distinct T.\n");
  md += "\n";
}

void speedups(std::string& md, const Series& series, const std::vector<Row>& rows) {
  md += "## Speedups and crossovers\n\nEach GDN variant (family `gdn`) against each attention "
        "variant (family `attention`) of the same dtype, B, H, HV, K, V: speedup = attention time / "
        "GDN time at each T both timed. Crossover: the T where the GDN variant becomes faster, by "
        "linear interpolation of log(time ratio) in log(T) between the bracketing Ts.\n\n";
  std::map<SeriesKey, std::string> family;
  for (const Row& r : rows) family.emplace(r.key, r.family);
  std::string table = "| GDN | attention | dtype | B | H | HV | K | V | T | GDN (ms) | attention (ms) "
                      "| speedup |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  std::string cross = "| GDN | attention | dtype | B | H | HV | K | V | common Ts | crossover |\n"
                      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  int pairs = 0;
  const auto all = ordered(series, rows);
  for (const auto* g : all) {
    if (family[g->first] != "gdn") continue;
    for (const auto* a : all) {
      if (family[a->first] != "attention" || !(a->first.shape == g->first.shape)) continue;
      std::vector<double> T, tg, ta;
      for (const auto& [t, rg] : g->second) {
        const auto it = a->second.find(t);
        if (it == a->second.end()) continue;
        T.push_back(double(t));
        tg.push_back(rg->median);
        ta.push_back(it->second->median);
        table += fmt::format("| {} | {} | {} | {} | {} | {} | {:.2f}x |\n", g->first.variant,
                             a->first.variant, shape_cells(g->first.shape), t, num(rg->median),
                             num(it->second->median), it->second->median / rg->median);
      }
      if (T.empty()) continue;
      cross += fmt::format("| {} | {} | {} | {:.0f}-{:.0f} ({}) | {} |\n", g->first.variant,
                           a->first.variant, shape_cells(g->first.shape), T.front(), T.back(), T.size(),
                           crossover_text(find_crossover(T, tg, ta)));
      ++pairs;
    }
  }
  md += pairs ? table + "\n" + cross : std::string("No GDN and attention series share a shape and a T.\n");
  md += "\n";
}

void regression(std::string& md, const std::vector<CsvTable>& tables,
                const std::vector<std::vector<Row>>& per_file) {
  md += "## Regression check\n\n";
  if (tables.size() < 2) {
    md += "One CSV given; give two or more to compare the first against each later one.\n\n";
    return;
  }
  md += "Rows matched on (variant, dtype, B, T, H, HV, K, V, chunk, gate, delta, h0), both timed. "
        "Rule: with a the first CSV and b the later one and threshold = max(3 cv_a median_a, "
        "3 cv_b median_b, 2% of median_a), b is SLOWER when median_b - median_a > threshold, FASTER "
        "when median_a - median_b > threshold, otherwise the same. Rows timed another way (the CSV's "
        "timer or l2_flush differ) are NOT COMPARABLE: the L2 flush alone moves a short kernel by 3-5 us.\n\n";
  const Series a = timed_series(per_file[0], nullptr);
  for (size_t j = 1; j < tables.size(); ++j) {
    md += fmt::format("### `{}` (a) against `{}` (b)\n\n", tables[0].path, tables[j].path);
    // Runs of other suites, devices or tolerance profiles are other experiments, not a baseline and its rerun.
    if (const std::optional<SetupDifference> d = setup_difference(tables[0], tables[j])) {
      md += fmt::format("Not compared: another {} (`gdnbench compare --allow-mismatch` compares them).\n\n", d->column);
      continue;
    }
    const Series b = timed_series(per_file[j], nullptr);
    std::string table = "| variant | dtype | B | H | HV | K | V | C | gate/delta/h0 | T | a (ms) | b (ms) "
                        "| b / a | threshold (ms) | verdict |\n"
                        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    int matched = 0, slower = 0, faster = 0, apart = 0, only_a = 0, only_b = 0;
    for (const auto* kv : ordered(a, per_file[0]))
      for (const auto& [T, ra] : kv->second) {
        const auto sb = b.find(kv->first);
        const auto rb = sb == b.end() ? nullptr : sb->second.count(T) ? sb->second.at(T) : nullptr;
        if (!rb) {
          ++only_a;
          continue;
        }
        const Change c = compare_timing(ra->median, ra->cv, rb->median, rb->cv);
        // Older CSVs say nothing of how they timed: compared as before.
        const bool comparable = ra->protocol.empty() || rb->protocol.empty() || ra->protocol == rb->protocol;
        ++matched;
        apart += !comparable;
        slower += comparable && c == Change::slower;
        faster += comparable && c == Change::faster;
        const std::string verdict =
            comparable ? std::string(change_name(c))
                       : fmt::format("NOT COMPARABLE (a `{}`, b `{}`)", ra->protocol, rb->protocol);
        table += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.3f} | {} | {} |\n",
                             kv->first.variant, shape_cells(kv->first.shape), kv->first.chunk,
                             terms(kv->first), T, num(ra->median), num(rb->median), rb->median / ra->median,
                             num(regression_threshold_ms(ra->median, ra->cv, rb->median, rb->cv)), verdict);
      }
    for (const auto& [key, byT] : b)
      for (const auto& [T, rb] : byT) {
        const auto sa = a.find(key);
        only_b += sa == a.end() || !sa->second.count(T);
      }
    md += fmt::format("{} matched: {} SLOWER, {} FASTER, {} the same{}; {} timed only in a, {} only in b.\n\n",
                      matched, slower, faster, matched - slower - faster - apart,
                      apart ? fmt::format(", {} NOT COMPARABLE (timed another way)", apart) : std::string(),
                      only_a, only_b);
    if (matched) md += table + "\n";
  }
}

}  // namespace

std::string build_report(const std::vector<CsvTable>& tables, const std::string& command,
                         const ReportExtras& extras) {
  std::vector<std::vector<Row>> per_file;
  std::vector<Row> rows;
  for (size_t f = 0; f < tables.size(); ++f) {
    per_file.push_back(load_rows(tables, f));
    rows.insert(rows.end(), per_file.back().begin(), per_file.back().end());
  }
  size_t shadowed = 0;
  const Series series = timed_series(rows, &shadowed);

  std::string md = "# gdnbench report\n\n";
  md += fmt::format("Made by `{}` from {} CSV file{} (schema v{}, `reports/SCHEMA.md`).\n\n", command,
                    tables.size(), tables.size() == 1 ? "" : "s", kCsvSchemaVersion);
  if (!extras.note.empty()) md += extras.note + "\n\n";
  environment(md, tables);
  accuracy(md, rows);
  timing(md, series, rows, shadowed);
  if (!extras.anchors.empty()) md += anchors_section(tables, extras.anchors, extras.anchors_path);
  complexity(md, series, rows);
  speedups(md, series, rows);
  md += decode_section(tables);
  regression(md, tables, per_file);
  if (!extras.claims_path.empty())
    md += claims_markdown(evaluate_claims(read_claims_file(extras.claims_path), tables), extras.claims_path);
  if (!extras.plots.empty()) {
    md += fmt::format("## Plots\n\nMade by `{}`.\n\n", extras.plots_command);
    for (const std::string& p : extras.plots)
      md += fmt::format("![{}]({})\n\n", std::filesystem::path(p).stem().string(), p);
  }
  return md;
}
