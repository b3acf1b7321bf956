// Claims: the file format and the evaluation against CSV rows (harness/analysis/claims.h).
#include "harness/analysis/claims.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "harness/analysis/fits.h"
#include "harness/io/errors.h"
#include "harness/noise.h"
#include "harness/problem.h"
#include "harness/variant.h"

namespace po = boost::program_options;

namespace {

bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && std::isfinite(out);
}

std::vector<std::pair<std::string, std::string>> parse_where(const std::string& text, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text);
  for (std::string item; in >> item;) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw UsageError(fmt::format("{}: where: '{}' is not column=value", where, item));
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

double number_field(const std::string& value, const std::string& where) {
  double x = 0;
  if (!parse_number(value, x)) throw UsageError(fmt::format("{}: '{}' is not a number", where, value));
  return x;
}

void set_check_field(ClaimCheck& c, const std::string& key, const std::string& value, const std::string& where) {
  if (key == "measure") c.measure = value;
  else if (key == "family") c.family = value;
  else if (key == "numerator") c.numerator = value;
  else if (key == "denominator") c.denominator = value;
  else if (key == "variants") c.variants = split_list(value);
  else if (key == "where") c.where = parse_where(value, where);
  else if (key == "metric") c.metric = value;
  else if (key == "x") c.x = value;
  else if (key == "at") c.at = number_field(value, where);
  else if (key == "from") c.from = number_field(value, where);
  else if (key == "to") c.to = number_field(value, where);
  else if (key == "fit") c.fit = value;
  else if (key == "min_points") {
    // Range-checked before the cast: a double outside int's range is undefined behaviour to convert.
    const double n = number_field(value, where);
    if (!(n >= 2 && n <= 1e6) || n != double(long(n)))
      throw UsageError(fmt::format("{}: min_points must be a whole number from 2 to 1000000, not '{}'", where, value));
    c.min_points = int(n);
  }
  else if (key == "min") c.min = number_field(value, where);
  else if (key == "max") c.max = number_field(value, where);
  else if (key == "min_r2") c.min_r2 = number_field(value, where);
  else if (key == "over") c.over = value;
  else throw UsageError(fmt::format("{}: unknown check field '{}'", where, key));
}

// A where's pass=..., which selects rows by the pass they ran (fwd for a CSV before the column).
void validate_pass(const std::vector<std::pair<std::string, std::string>>& where, const std::string& w) {
  for (const auto& [column, value] : where)
    if (column == "pass" && !parse_pass(value))
      throw UsageError(fmt::format("{}: where: pass={} is not fwd, bwd or fwdbwd", w, value));
}

void validate(const Claim& cl, const std::string& name) {
  const std::string where = fmt::format("{}: claim '{}'", name, cl.id);
  if (cl.statement.empty() || cl.source.empty()) throw UsageError(where + ": needs a statement and a source");
  if (cl.checks.empty()) throw UsageError(where + ": has no check ([" + cl.id + ".NAME] sections)");
  validate_pass(cl.where, where);
  for (const ClaimCheck& c : cl.checks) {
    const std::string w = fmt::format("{}.{}", where, c.name);
    validate_pass(c.where, w);
    const auto family_ok = [](const std::string& f) { return f == "gdn" || f == "attention"; };
    if (c.measure == "slope" || c.measure == "growth") {
      if (!family_ok(c.family)) throw UsageError(w + ": family must be gdn or attention");
    } else if (c.measure == "ratio") {
      if (!family_ok(c.numerator) || !family_ok(c.denominator))
        throw UsageError(w + ": ratio needs numerator and denominator, each gdn or attention");
      if (!(c.at > 0)) throw UsageError(w + ": ratio needs at (the x where both are read)");
    } else {
      throw UsageError(w + ": measure must be slope, growth or ratio");
    }
    if (c.measure == "growth" && !(c.from > 0 && c.to > c.from)) throw UsageError(w + ": growth needs 0 < from < to");
    if (c.fit != "upper_half" && c.fit != "all") throw UsageError(w + ": fit must be upper_half or all");
    if (c.over != "all" && c.over != "best") throw UsageError(w + ": over must be all or best");
    if (c.min_points < 2) throw UsageError(w + ": min_points must be at least 2");
    if (c.min <= -1e300 && c.max >= 1e300) throw UsageError(w + ": give min, max or both");
  }
}

// ---- evaluation ----

// Case columns that make a series (x is left out of the key). The pass is a filter (the check's
// pass), not a series column; dht is empty on forward rows.
const char* const kSeriesColumns[] = {"variant", "dtype", "B", "T", "H", "HV", "K", "V", "chunk", "gate",
                                      "delta", "h0", "gate_dist", "beta_dist", "context", "frontend", "dht"};

// The pass whose rows a check reads: its own where's pass=..., else its claim's, else the forward.
std::string check_pass(const Claim& cl, const ClaimCheck& c) {
  std::string pass = "fwd";
  for (const auto* where : {&cl.where, &c.where})
    for (const auto& [column, value] : *where)
      if (column == "pass") pass = value;
  return pass;
}

bool cell_matches(const std::string& cell, const std::string& want) {
  if (cell == want) return true;
  double a = 0, b = 0;
  if (parse_number(cell, a) && parse_number(want, b)) return a == b;
  return cell.empty() && want == "0";  // a column absent from an older CSV means "none"
}

struct Point {
  double x, y;
  std::string device;
  double cv;  // the row's time_cv; NaN when absent
};
struct Series {
  std::string variant, label;
  std::map<double, Point> by_x;  // first row of an x wins
  std::vector<std::string> cells;  // of kSeriesColumns (x left empty)
};

bool has_column(const std::vector<CsvTable>& tables, const std::string& c) {
  return std::any_of(tables.begin(), tables.end(), [&](const CsvTable& t) { return t.column(c) >= 0; });
}

// Whether row i of t is one the check reads for `family`, whatever its status: of the check's pass
// (a forward claim reads no backward row), its variants and every where filter.
bool row_selected(const CsvTable& t, size_t i, const Claim& cl, const ClaimCheck& c, const std::string& family) {
  // A packed batch is no point of a claim's series (one sequence of T tokens).
  if (t.cell(i, "family") != family || row_pass(t, i) != check_pass(cl, c) || row_packed(t, i)) return false;
  const std::string& variant = t.cell(i, "variant");
  if (!c.variants.empty() && std::find(c.variants.begin(), c.variants.end(), variant) == c.variants.end()) return false;
  const auto matches = [&](const auto& w) { return w.first == "pass" || cell_matches(t.cell(i, w.first), w.second); };
  return std::all_of(cl.where.begin(), cl.where.end(), matches) && std::all_of(c.where.begin(), c.where.end(), matches);
}

// Series of `family` (and `variants`) among the rows that pass every filter, in order of appearance.
std::vector<Series> collect(const std::vector<CsvTable>& tables, const Claim& cl, const ClaimCheck& c,
                            const std::string& family) {
  std::vector<Series> out;
  std::map<std::string, size_t> index;
  for (const CsvTable& t : tables)
    for (size_t i = 0; i < t.rows.size(); ++i) {
      if (t.cell(i, "status") != "PASS" || !row_selected(t, i, cl, c, family)) continue;
      const std::string& variant = t.cell(i, "variant");
      const double x = t.number(i, c.x), y = t.number(i, c.metric);
      if (!std::isfinite(x) || !std::isfinite(y) || y <= 0) continue;
      std::string key;
      std::vector<std::string> cells;
      for (const char* col : kSeriesColumns) {
        const std::string& v = col == c.x ? std::string() : t.cell(i, col);
        key += v + "|";
        cells.push_back(v);
      }
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, out.size()).first;
        out.push_back({variant, variant, {}, cells});
      }
      // The same case measured again (a later row, or a later CSV on the command line) replaces
      // the earlier measurement: pass the CSVs oldest first to judge the newest kernels.
      out[it->second].by_x.insert_or_assign(x, Point{x, y, t.cell(i, "device"), t.number(i, "time_cv")});
    }
  // Labels: the variant, plus each case column whose value differs between the series found.
  for (size_t col = 1; col < std::size(kSeriesColumns); ++col)
    if (std::any_of(out.begin(), out.end(), [&](const Series& s) { return s.cells[col] != out.front().cells[col]; }))
      for (Series& s : out) s.label += fmt::format(" {}={}", kSeriesColumns[col], s.cells[col]);
  return out;
}

// Why a check of `family` found nothing to judge. A pass with a backward of a family none of whose
// variants has one lacks the baseline itself (attention's training step, today): that is said, not
// measured. Otherwise `generic`; either way the SKIPPED rows it would have read, by reason.
std::string no_data_text(const std::vector<CsvTable>& tables, const Claim& cl, const ClaimCheck& c,
                         const std::string& family, const std::string& generic) {
  const std::string pass = check_pass(cl, c);
  const bool has_backward = std::any_of(variant_registry().begin(), variant_registry().end(), [&](const VariantInfo& v) {
    return family_name(v.family) == family && v.has_backward;
  });
  std::string text = pass != "fwd" && !has_backward
                         ? fmt::format("not judged: no {} variant has a backward pass, so there is no {} baseline "
                                       "for --pass {}",
                                       family, family, pass)
                         : generic;
  std::map<std::string, int> skipped;
  for (const CsvTable& t : tables)
    for (size_t i = 0; i < t.rows.size(); ++i)
      if (t.cell(i, "status") == "SKIPPED" && row_selected(t, i, cl, c, family)) ++skipped[t.cell(i, "reason")];
  for (const auto& [reason, n] : skipped) text += fmt::format("; {} SKIPPED: {}", n, reason);
  return text;
}

// Values in the unit of the measure: growth in percent, ratio as a factor, slope plain.
std::string show(const ClaimCheck& c, double v) {
  if (c.measure == "growth") return fmt::format("{:+.0f}%", 100 * v);
  if (c.measure == "ratio") return fmt::format("{:.2f}x", v);
  return fmt::format("{:.3f}", v);
}

// The noise interval beside a value, " [lo, hi]"; empty where the value has no known noise.
std::string interval(const ClaimCheck& c, double v, double lo, double hi) {
  if (!(hi - lo > 1e-9 * std::max(1.0, std::fabs(v)))) return "";  // exact, or rounding only
  if (c.measure == "slope") return fmt::format(" [{:.2f}, {:.2f}]", lo, hi);
  return fmt::format(" [{}, {}]", show(c, lo), show(c, hi));
}

std::string noisy_text(int noisy) { return noisy ? fmt::format(", {} noisy", noisy) : ""; }

// ---- noise ----

// Metrics read from the samples' timing, whose rows carry a time_cv: the claims on them are judged
// against their noise. Counts (peak_device_bytes, flops, ...) are exact.
bool timed_metric(const std::string& m) {
  return (m.rfind("time_", 0) == 0 && m != "time_cv") || m == "tflops" || m == "gbps" || m == "frac_bw" ||
         m == "frac_flops";
}

// A row's relative noise, one standard deviation of its metric: its timing CV (0 when unknown).
double row_sigma(const Point& p) { return std::isfinite(p.cv) && p.cv > 0 ? p.cv : 0.0; }

// The scatter of a series' log metric about its log-log line over [lo, hi] in x: the residual
// standard deviation sqrt(SS_res / (n - 2)) over its n >= 3 points; 0 with fewer.
double residual_sd(const Series& s, double lo, double hi) {
  std::vector<double> xs, ys;
  for (const auto& [x, p] : s.by_x)
    if (x >= lo && x <= hi) xs.push_back(x), ys.push_back(p.y);
  if (xs.size() < 3) return 0.0;
  const PowerFit f = fit_power_law(xs, ys);
  if (!std::isfinite(f.slope)) return 0.0;
  double ss = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double e = std::log(ys[i]) - (f.intercept + f.slope * std::log(xs[i]));
    ss += e * e;
  }
  return std::sqrt(ss / double(xs.size() - 2));
}

// The value against the bounds with its noise interval [lo, hi]: REPRODUCED when the interval lies
// wholly inside them, NOT REPRODUCED when wholly outside, INCONCLUSIVE when it straddles one.
Verdict judge(const ClaimCheck& c, double lo, double hi) {
  if (lo >= c.min && hi <= c.max) return Verdict::reproduced;
  if (hi < c.min || lo > c.max) return Verdict::not_reproduced;
  return Verdict::inconclusive;
}

const char* word(Verdict v) {
  return v == Verdict::reproduced ? "meets" : v == Verdict::not_reproduced ? "misses" : "inconclusive, within the noise of the bound";
}

std::string rule_text(const ClaimCheck& c) {
  std::string bound;
  if (c.min > -1e300 && c.max < 1e300) bound = fmt::format("in [{}, {}]", show(c, c.min), show(c, c.max));
  else if (c.min > -1e300) bound = ">= " + show(c, c.min);
  else bound = "<= " + show(c, c.max);
  const std::string vs = c.variants.empty() ? "" : fmt::format(" ({})", fmt::join(c.variants, ", "));
  if (c.measure == "slope")
    return fmt::format("log-log slope of {} vs {} over {} of each {} series{} (>= {} points) {}{}", c.metric, c.x,
                       c.fit == "all" ? "all the points" : "the upper half of the points", c.family, vs,
                       c.min_points, bound, c.min_r2 > 0 ? fmt::format(" with R² >= {}", c.min_r2) : "");
  if (c.measure == "growth")
    return fmt::format("growth of {} from {}={:g} to {}={:g}, {} {} series{} {}", c.metric, c.x, c.from, c.x, c.to,
                       c.over == "best" ? "the best" : "each", c.family, vs, bound);
  return fmt::format("best {} / best {} {} at {}={:g} {}", c.numerator, c.denominator, c.metric, c.x, c.at, bound);
}

CheckResult evaluate_check(const std::vector<CsvTable>& tables, const Claim& cl, const ClaimCheck& c,
                           std::set<std::string>& devices) {
  CheckResult r;
  r.check = c;
  r.rule = rule_text(c);
  std::vector<std::string> missing;
  for (const std::string& col : {c.x, c.metric}) if (!has_column(tables, col)) missing.push_back(col);
  // pass needs no column: a CSV before it holds forward rows only (row_pass).
  for (const auto* where : {&cl.where, &c.where})
    for (const auto& w : *where)
      if (w.second != "0" && w.first != "pass" && !has_column(tables, w.first)) missing.push_back(w.first);
  if (!missing.empty()) {
    r.measured = fmt::format("the CSV has no column '{}'", missing.front());
    return r;
  }
  const bool noisy_metric = timed_metric(c.metric);
  int measured = 0, failed = 0, unsure = 0;
  const auto count = [&](Verdict v) {
    ++measured;
    failed += v == Verdict::not_reproduced;
    unsure += v == Verdict::inconclusive;
  };
  if (c.measure == "slope") {
    for (const Series& s : collect(tables, cl, c, c.family)) {
      std::vector<double> xs, ys;
      for (const auto& [x, p] : s.by_x) xs.push_back(x), ys.push_back(p.y);
      std::vector<size_t> use(xs.size());
      for (size_t i = 0; i < use.size(); ++i) use[i] = i;
      if (c.fit == "upper_half") use = upper_half(xs);
      if (int(use.size()) < c.min_points) {
        r.lines.push_back(fmt::format("{}: {} points in the fit range, fewer than {}; not judged", s.label, use.size(), c.min_points));
        continue;
      }
      std::vector<double> fx, fy, fsig;
      int noisy = 0;
      for (size_t i : use) {
        const Point& p = s.by_x.at(xs[i]);
        fx.push_back(xs[i]);
        fy.push_back(ys[i]);
        fsig.push_back(noisy_metric ? row_sigma(p) : 0.0);
        noisy += noisy_metric && timing_noisy(p.cv);
        devices.insert(p.device);
      }
      const PowerFit f = fit_power_law(fx, fy);
      const double hw = noisy_metric ? slope_noise(fx, fy, fsig).half_width : 0.0;
      Verdict v = judge(c, f.slope - hw, f.slope + hw);
      // A fit below min_r2 whose slope is otherwise within the bound: its points do not lie on a
      // power law. Firm rows make that a miss; with a noisy row among them the scatter may be the
      // noise's, so it decides nothing. Where the slope's interval (the residuals are in it)
      // already straddles the bound, the low R² is that same scatter: still inconclusive.
      if (!(f.r2 >= c.min_r2) && v == Verdict::reproduced)
        v = noisy ? Verdict::inconclusive : Verdict::not_reproduced;
      count(v);
      const std::string iv = interval(c, f.slope, f.slope - hw, f.slope + hw);
      r.lines.push_back(fmt::format("{}: slope {:.3f}{}, R² {:.4f} over {}={:g}..{:g} ({} points{}): {}", s.label,
                                    f.slope, iv, f.r2, c.x, fx.front(), fx.back(), fx.size(), noisy_text(noisy),
                                    word(v)));
      r.measured += (r.measured.empty() ? "" : ", ") + fmt::format("{} {:.2f}{}", s.variant, f.slope, iv);
    }
  } else if (c.measure == "growth") {
    struct G { const Series* s; double y0, y1; };
    std::vector<G> gs;
    const std::vector<Series> series = collect(tables, cl, c, c.family);
    for (const Series& s : series) {
      const auto a = s.by_x.find(c.from), b = s.by_x.find(c.to);
      if (a == s.by_x.end() || b == s.by_x.end()) {
        r.lines.push_back(fmt::format("{}: no PASS row at both {}={:g} and {:g}; not judged", s.label, c.x, c.from, c.to));
        continue;
      }
      gs.push_back({&s, a->second.y, b->second.y});
    }
    if (c.over == "best" && !gs.empty())
      gs = {*std::min_element(gs.begin(), gs.end(), [](const G& a, const G& b) { return a.y1 < b.y1; })};
    for (const G& g : gs) {
      const double v = g.y1 / g.y0 - 1.0;
      const Point& p0 = g.s->by_x.at(c.from);
      const Point& p1 = g.s->by_x.at(c.to);
      // log(y1 / y0) has the variance of both rows (their CVs) and, where the series has points
      // from `from` to `to` to tell it, twice their scatter about its log-log line.
      double sigma = 0;
      int noisy = 0;
      if (noisy_metric) {
        const double sd = residual_sd(*g.s, c.from, c.to);
        sigma = std::sqrt(row_sigma(p0) * row_sigma(p0) + row_sigma(p1) * row_sigma(p1) + 2 * sd * sd);
        noisy = timing_noisy(p0.cv) + timing_noisy(p1.cv);
      }
      const double lo = (1 + v) * std::exp(-kNoiseSigmas * sigma) - 1, hi = (1 + v) * std::exp(kNoiseSigmas * sigma) - 1;
      const Verdict verdict = sigma > 0 ? judge(c, lo, hi) : judge(c, v, v);
      count(verdict);
      devices.insert(p0.device);
      devices.insert(p1.device);
      const std::string iv = sigma > 0 ? interval(c, v, lo, hi) : "";
      r.lines.push_back(fmt::format("{}: {} {:.6g} at {}={:g} -> {:.6g} at {}={:g}, growth {}{}{}: {}", g.s->label,
                                    c.metric, g.y0, c.x, c.from, g.y1, c.x, c.to, show(c, v), iv,
                                    noisy ? fmt::format(" ({} of 2 rows noisy)", noisy) : "", word(verdict)));
      r.measured += (r.measured.empty() ? "" : ", ") + fmt::format("{} {}{}", g.s->variant, show(c, v), iv);
    }
  } else {  // ratio
    struct Best {
      double y = INFINITY;
      std::optional<Series> s;
    };
    const auto best = [&](const std::string& family) {
      Best b;
      for (const Series& s : collect(tables, cl, c, family)) {
        const auto it = s.by_x.find(c.at);
        if (it != s.by_x.end() && it->second.y < b.y) {
          b.y = it->second.y;
          b.s = s;
        }
      }
      return b;
    };
    const Best nb = best(c.numerator), db = best(c.denominator);
    if (!nb.s || !db.s) {
      const std::string& family = !nb.s ? c.numerator : c.denominator;
      r.measured = no_data_text(tables, cl, c, family, fmt::format("no PASS {} row at {}={:g}", family, c.x, c.at));
      r.verdict = Verdict::not_measurable;
      return r;
    }
    const Series* ns = &*nb.s;
    const Series* ds = &*db.s;
    const double ny = nb.y, dy = db.y;
    const double v = ny / dy;
    const Point& pn = ns->by_x.at(c.at);
    const Point& pd = ds->by_x.at(c.at);
    const double sigma = noisy_metric ? std::hypot(row_sigma(pn), row_sigma(pd)) : 0.0;
    const int noisy = noisy_metric ? timing_noisy(pn.cv) + timing_noisy(pd.cv) : 0;
    const double lo = v * std::exp(-kNoiseSigmas * sigma), hi = v * std::exp(kNoiseSigmas * sigma);
    const Verdict verdict = sigma > 0 ? judge(c, lo, hi) : judge(c, v, v);
    count(verdict);
    devices.insert(pn.device);
    devices.insert(pd.device);
    const std::string iv = sigma > 0 ? interval(c, v, lo, hi) : "";
    r.lines.push_back(fmt::format("best {}: {} ({} = {:.6g}); best {}: {} ({} = {:.6g}); ratio {}{}{}: {}", c.numerator,
                                  ns->label, c.metric, ny, c.denominator, ds->label, c.metric, dy, show(c, v), iv,
                                  noisy ? fmt::format(" ({} of 2 rows noisy)", noisy) : "", word(verdict)));
    r.measured = fmt::format("{}{} ({} / {})", show(c, v), iv, ns->variant, ds->variant);
  }
  if (measured == 0) {
    r.measured = no_data_text(tables, cl, c, c.family, fmt::format("no {} series with the data this check needs", c.family));
    r.verdict = Verdict::not_measurable;
  } else {
    r.verdict = failed ? Verdict::not_reproduced : unsure ? Verdict::inconclusive : Verdict::reproduced;
  }
  return r;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::reproduced: return "REPRODUCED";
    case Verdict::not_reproduced: return "NOT REPRODUCED";
    case Verdict::not_measurable: return "NOT MEASURABLE HERE";
    case Verdict::inconclusive: return "INCONCLUSIVE";
  }
  return "?";
}

std::vector<Claim> parse_claims(std::istream& in, const std::string& name) {
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<po::option> options;
  try {
    std::istringstream s(text.str());
    options = po::parse_config_file(s, po::options_description(), true).options;
  } catch (const po::error& e) {
    throw UsageError(fmt::format("{}: {}", name, text.str().find('%') != std::string::npos ? "malformed line" : e.what()));
  }
  std::vector<Claim> claims;
  std::set<std::string> seen;
  for (const po::option& o : options) {
    const std::string& key = o.string_key;
    const std::string value = o.value.empty() ? "" : o.value.front();
    const auto dot1 = key.find('.');
    if (dot1 == std::string::npos) throw UsageError(fmt::format("{}: '{}' is outside a [claim] section", name, key));
    if (!seen.insert(key).second) throw UsageError(fmt::format("{}: '{}' is given twice", name, key));
    const std::string id = key.substr(0, dot1), rest = key.substr(dot1 + 1);
    if (id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
      throw UsageError(fmt::format("{}: claim id '{}' may hold letters, digits, _ and - only", name, id));
    if (claims.empty() || claims.back().id != id) {
      if (std::any_of(claims.begin(), claims.end(), [&](const Claim& c) { return c.id == id; }))
        throw UsageError(fmt::format("{}: claim '{}' appears in two places", name, id));
      claims.push_back(Claim{});
      claims.back().id = id;
    }
    Claim& cl = claims.back();
    const auto dot2 = rest.find('.');
    const std::string where = fmt::format("{}: {}", name, key);
    if (dot2 == std::string::npos) {
      if (rest == "statement") cl.statement = value;
      else if (rest == "source") cl.source = value;
      else if (rest == "proxy") cl.proxy = value;
      else if (rest == "where") {
        cl.where = parse_where(value, where);
        cl.where_text = value;
      } else throw UsageError(fmt::format("{}: unknown claim field '{}'", name, rest));
      continue;
    }
    const std::string check = rest.substr(0, dot2), field = rest.substr(dot2 + 1);
    if (cl.checks.empty() || cl.checks.back().name != check) {
      cl.checks.push_back(ClaimCheck{});
      cl.checks.back().name = check;
    }
    set_check_field(cl.checks.back(), field, value, where);
  }
  if (claims.empty()) throw UsageError(fmt::format("{}: no claims", name));
  for (const Claim& cl : claims) validate(cl, name);
  return claims;
}

std::vector<Claim> read_claims_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UsageError(fmt::format("--claims: cannot read '{}'", path));
  return parse_claims(f, path);
}

std::string resolve_claims_path(const std::string& name) {
  const std::string path = find_named_file(name, "claims", ".ini");
  if (path.empty()) throw UsageError(fmt::format("--claims: no claims file '{}' (see claims/)", name));
  return path;
}

std::vector<ClaimResult> evaluate_claims(const std::vector<Claim>& claims, const std::vector<CsvTable>& tables) {
  std::vector<ClaimResult> out;
  for (const Claim& cl : claims) {
    ClaimResult r;
    r.claim = cl;
    std::set<std::string> devices;
    bool any_fail = false, any_unsure = false, any_missing = false;
    for (const ClaimCheck& c : cl.checks) {
      r.checks.push_back(evaluate_check(tables, cl, c, devices));
      any_fail |= r.checks.back().verdict == Verdict::not_reproduced;
      any_unsure |= r.checks.back().verdict == Verdict::inconclusive;
      any_missing |= r.checks.back().verdict == Verdict::not_measurable;
    }
    r.verdict = any_fail     ? Verdict::not_reproduced
                : any_unsure ? Verdict::inconclusive
                : any_missing ? Verdict::not_measurable
                              : Verdict::reproduced;
    r.devices.assign(devices.begin(), devices.end());
    out.push_back(std::move(r));
  }
  return out;
}
