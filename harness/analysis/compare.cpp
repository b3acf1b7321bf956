// `gdnbench compare`: the case key, the verdict rule, the markdown and the command line.
#include "harness/analysis/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "harness/io/errors.h"
#include "harness/io/output_file.h"

namespace {

// The columns that make a case, with the pass (case_key). The plan is part of it: a run that chose
// another kernel is another case, listed as unmatched rather than passed off as the same one.
const char* const kCaseColumns[] = {"variant", "dtype",      "B",     "T",         "seqlens",   "context",   "H",
                                    "HV",      "K",          "V",     "chunk",     "gate",      "delta",
                                    "h0",      "frontend",   "scale", "gate_dist", "beta_dist", "distributions",
                                    "plan",    "plan_forced"};

std::string case_key(const CsvTable& t, size_t i) {
  std::string key;
  for (const char* c : kCaseColumns) {
    const std::string& v = t.cell(i, c);
    if (v.empty()) continue;
    if (!key.empty()) key += ' ';
    key += std::string(c) == "variant" ? v : fmt::format("{}={}", c, v);
  }
  // The pass: a forward row of a schema before the column and one of today are the same case.
  key += " pass=" + row_pass(t, i);
  if (const std::string& dht = t.cell(i, "dht"); !dht.empty()) key += " dht=" + dht;
  return key;
}

// Each case's last row (a resumed or repeated run appends); the keys in first-seen order.
struct Cases {
  std::vector<std::string> order;
  std::map<std::string, size_t> row;
  int duplicates = 0;
};

Cases cases_of(const CsvTable& t) {
  Cases c;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const std::string k = case_key(t, i);
    const auto [it, fresh] = c.row.emplace(k, i);
    if (fresh)
      c.order.push_back(k);
    else
      it->second = i, ++c.duplicates;
  }
  return c;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& v : s) out += (out.empty() ? "" : ", ") + (v.empty() ? std::string("(none)") : v);
  return out;
}

// The tolerance profiles that judged a file's rows, "NAME HASH" each.
std::string profiles(const CsvTable& t) {
  if (t.column("tolerances_hash") < 0) return "not recorded (schema v1 or v2)";
  const std::set<std::string> s = tolerance_profiles(t);
  return s.empty() ? std::string("none (no rows)") : joined(s);
}

bool timed(const CsvTable& t, size_t i) {
  const double ms = t.number(i, "time_median_ms");
  return t.cell(i, "status") == "PASS" && std::isfinite(ms) && ms > 0;
}

std::string protocol(const CsvTable& t, size_t i) { return t.cell(i, "timer") + "/" + t.cell(i, "l2_flush"); }

CompareRow judge(const CsvTable& base, size_t a, const CsvTable& fresh, size_t b, const CompareOptions& opt) {
  CompareRow r;
  r.base_status = base.cell(a, "status");
  r.new_status = fresh.cell(b, "status");
  const bool fail_a = r.base_status == "FAIL", fail_b = r.new_status == "FAIL";
  if (fail_b) {
    r.verdict = fail_a ? CompareVerdict::still_fail : CompareVerdict::new_fail;
    return r;
  }
  if (fail_a) {
    r.verdict = r.new_status == "PASS" ? CompareVerdict::fixed : CompareVerdict::untimed;
    return r;
  }
  if (r.base_status == "PASS" && r.new_status == "SKIPPED") {
    r.verdict = CompareVerdict::lost;
    return r;
  }
  if (!timed(base, a) || !timed(fresh, b)) {
    r.verdict = CompareVerdict::untimed;
    return r;
  }
  r.base_ms = base.number(a, "time_median_ms");
  r.new_ms = fresh.number(b, "time_median_ms");
  const auto cv = [](const CsvTable& t, size_t i) {
    const double c = t.number(i, "time_cv");
    return std::isfinite(c) && c > 0 ? c : 0.0;
  };
  r.base_cv = cv(base, a);
  r.new_cv = cv(fresh, b);
  // Older CSVs say nothing of how they timed: compared as they are.
  const std::string pa = protocol(base, a), pb = protocol(fresh, b);
  if (pa != "/" && pb != "/" && pa != pb) {
    r.verdict = CompareVerdict::not_comparable;
    return r;
  }
  r.noise_ms = std::max(3.0 * r.base_cv * r.base_ms, 3.0 * r.new_cv * r.new_ms);
  const double d = r.new_ms - r.base_ms, limit = opt.threshold * r.base_ms;
  if (std::fabs(d) <= limit)
    r.verdict = CompareVerdict::same;
  else if (std::fabs(d) <= r.noise_ms)
    r.verdict = CompareVerdict::inconclusive;
  else
    r.verdict = d > 0 ? CompareVerdict::slower : CompareVerdict::faster;
  return r;
}

double parse_threshold(const std::string& text) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  double x = 0;
  size_t used = 0;
  try {
    x = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !std::isfinite(x))
    throw UsageError(fmt::format("compare: --threshold: '{}' is not a fraction or a percentage", text));
  if (percent) x /= 100.0;
  if (!(x >= 0 && x <= 10)) throw UsageError(fmt::format("compare: --threshold: '{}' is outside 0% .. 1000%", text));
  return x;
}

// What the rows of a CSV need for a comparison (the timing columns may be empty on verify rows).
const std::vector<std::string>& compare_required_columns() {
  static const std::vector<std::string> cols = {
      "schema_version", "device",         "suite",  "variant", "dtype", "B", "T", "H", "HV", "K", "V",
      "status",         "time_median_ms", "time_cv"};
  return cols;
}

std::string ms_cell(double ms) { return ms > 0 ? fmt::format("{:.4f}", ms) : std::string("-"); }

}  // namespace

const char* compare_verdict_name(CompareVerdict v) {
  switch (v) {
    case CompareVerdict::same:
      return "same";
    case CompareVerdict::faster:
      return "FASTER";
    case CompareVerdict::slower:
      return "SLOWER";
    case CompareVerdict::inconclusive:
      return "INCONCLUSIVE";
    case CompareVerdict::not_comparable:
      return "NOT COMPARABLE";
    case CompareVerdict::new_fail:
      return "NEW FAIL";
    case CompareVerdict::still_fail:
      return "still FAIL";
    case CompareVerdict::fixed:
      return "FIXED";
    case CompareVerdict::lost:
      return "LOST (now SKIPPED)";
    case CompareVerdict::untimed:
      return "untimed";
    case CompareVerdict::only_base:
      return "only in base";
    case CompareVerdict::only_new:
      return "only in new";
  }
  return "?";
}

bool is_regression(CompareVerdict v) {
  return v == CompareVerdict::slower || v == CompareVerdict::new_fail || v == CompareVerdict::lost;
}

CompareResult compare_tables(const CsvTable& base, const CsvTable& fresh, const CompareOptions& opt) {
  if (!opt.allow_mismatch)
    if (const std::optional<SetupDifference> d = setup_difference(base, fresh))
      throw UsageError(fmt::format("compare: {} is {} '{}', {} is '{}'; give --allow-mismatch to compare them anyway",
                                   base.path, d->column, joined(d->a), fresh.path, joined(d->b)));
  const Cases ca = cases_of(base), cb = cases_of(fresh);
  CompareResult out;
  out.base_duplicates = ca.duplicates;
  out.new_duplicates = cb.duplicates;
  for (const std::string& k : ca.order) {
    const size_t a = ca.row.at(k);
    const auto b = cb.row.find(k);
    CompareRow r;
    if (b == cb.row.end()) {
      r.base_status = base.cell(a, "status");
      r.verdict = CompareVerdict::only_base;
    } else {
      r = judge(base, a, fresh, b->second, opt);
    }
    r.key = k;
    out.rows.push_back(r);
  }
  for (const std::string& k : cb.order) {
    if (ca.row.count(k)) continue;
    CompareRow r;
    r.key = k;
    r.new_status = fresh.cell(cb.row.at(k), "status");
    // A FAIL of a case base never ran is a new FAIL all the same.
    r.verdict = r.new_status == "FAIL" ? CompareVerdict::new_fail : CompareVerdict::only_new;
    out.rows.push_back(r);
  }
  for (const CompareRow& r : out.rows) out.regressions += is_regression(r.verdict);
  return out;
}

std::string compare_markdown(const CompareResult& r, const CsvTable& base, const CsvTable& fresh,
                             const CompareOptions& opt) {
  std::map<CompareVerdict, int> count;
  for (const CompareRow& row : r.rows) ++count[row.verdict];
  std::string md = fmt::format(
      "# gdnbench compare\n\nbase `{}` ({} rows, tolerances {}), new `{}` ({} rows, tolerances {}).\n\n", base.path,
      base.rows.size(), profiles(base), fresh.path, fresh.rows.size(), profiles(fresh));
  md += fmt::format(
      "Cases matched on ({}). Timed on both sides (PASS, same timer and L2 flush): with d = new - base "
      "median and noise = max(3 cv_base base, 3 cv_new new), SLOWER or FASTER when |d| > max({:g}% of "
      "base, noise); INCONCLUSIVE when |d| is past the threshold but within the noise; otherwise the "
      "same. Regressions (exit 1): SLOWER, NEW FAIL (a FAIL in new that base did not have) and LOST "
      "(a PASS in base that new SKIPPED). A case's last row counts where a file has several ({} in "
      "base, {} in new).\n\n",
      [] {
        std::string s;
        for (const char* c : kCaseColumns) s += (s.empty() ? "" : ", ") + std::string(c);
        return s + ", pass (fwd for a file before the column), dht";
      }(),
      opt.threshold * 100.0, r.base_duplicates, r.new_duplicates);
  std::string summary;
  for (const auto& [v, n] : count)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, compare_verdict_name(v));
  md += fmt::format("{} cases: {}. {} regression{}.\n\n", r.rows.size(), summary.empty() ? "none" : summary,
                    r.regressions, r.regressions == 1 ? "" : "s");
  if (r.rows.empty()) return md;
  md +=
      "| case | base | new | base (ms) | new (ms) | new / base | noise (ms) | verdict |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  // Regressions first, then the other timed verdicts, then what could not be compared.
  const auto rank = [](CompareVerdict v) {
    return is_regression(v)                                                  ? 0
           : v == CompareVerdict::only_base || v == CompareVerdict::only_new ? 3
           : v == CompareVerdict::untimed                                    ? 2
                                                                             : 1;
  };
  std::vector<const CompareRow*> rows;
  for (const CompareRow& row : r.rows) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [&](auto* a, auto* b) { return rank(a->verdict) < rank(b->verdict); });
  for (const CompareRow* row : rows)
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n", row->key, row->base_status.empty() ? "-" : row->base_status,
        row->new_status.empty() ? "-" : row->new_status, ms_cell(row->base_ms), ms_cell(row->new_ms),
        row->base_ms > 0 && row->new_ms > 0 ? fmt::format("{:.3f}", row->new_ms / row->base_ms) : "-",
        row->base_ms > 0 ? fmt::format("{:.4f}", row->noise_ms) : "-", compare_verdict_name(row->verdict));
  return md;
}

std::string compare_usage_text() {
  return "usage: gdnbench compare BASE.csv NEW.csv [--threshold 5%] [--allow-mismatch] [--out FILE.md]\n"
         "  Matches the rows of two gdnbench CSVs by case (variant, dtype, shape, options, plan) and gives\n"
         "  each a verdict: SLOWER / FASTER past max(threshold, the noise of both sides' CVs), INCONCLUSIVE\n"
         "  within the noise, NEW FAIL, FIXED, LOST (PASS, then SKIPPED), unmatched cases listed. Refuses\n"
         "  files of different suites, devices or tolerance profiles (the bounds that judged PASS and\n"
         "  FAIL) unless --allow-mismatch. --threshold: a fraction (0.05)\n"
         "  or a percentage (5%). --out: write the markdown to a file (default: stdout).\n"
         "  Exit status: 0 no regression, 1 a regression (SLOWER, NEW FAIL or LOST), 2 usage error.\n";
}

int run_compare(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string out;
  CompareOptions opt;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&](const std::string& flag, std::string& dst) {
      return take_flag_value(args, i, flag, dst, "compare");
    };
    std::string threshold;
    if (a == "--help" || a == "-h") {
      fmt::print("{}", compare_usage_text());
      return 0;
    }
    if (a == "--allow-mismatch") {
      opt.allow_mismatch = true;
      continue;
    }
    if (value("--threshold", threshold)) {
      opt.threshold = parse_threshold(threshold);
      continue;
    }
    if (value("--out", out)) continue;
    if (a.size() > 1 && a[0] == '-')
      throw UsageError("compare: unknown flag '" + a + "'; see gdnbench compare --help");
    files.push_back(a);
  }
  if (files.size() != 2)
    throw UsageError(
        fmt::format("compare: needs two CSVs (BASE NEW), got {}; see gdnbench compare --help", files.size()));
  // --out is claimed before any work: refused when not a regular file, or one of the inputs.
  std::optional<OutputFile> out_file;
  if (!out.empty()) {
    for (const std::string& f : files)
      if (out == f) throw UsageError("compare: --out '" + out + "' is one of the CSVs compared");
    try {
      out_file.emplace(out, true);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("compare: --out: {}", e.what()));
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("compare: --out: cannot write '{}' ({})", out, e.what()));
    }
  }
  const CsvTable base = read_gdnbench_csv(files[0], compare_required_columns(), "compare");
  const CsvTable fresh = read_gdnbench_csv(files[1], compare_required_columns(), "compare");
  const CompareResult r = compare_tables(base, fresh, opt);
  const std::string md = compare_markdown(r, base, fresh, opt);
  if (out.empty()) {
    fmt::print("{}", md);
  } else {
    try {
      out_file->replace(md);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("compare: --out: cannot write '{}' ({})", out, e.what()));
    }
    fmt::print("wrote {}: {} cases, {} regression{}\n", out, r.rows.size(), r.regressions,
               r.regressions == 1 ? "" : "s");
  }
  return r.regressions > 0 ? 1 : 0;
}
