// The anchors of `gdnbench report` (harness/analysis/report.h): forward times measured outside this harness
// (PyTorch SDPA, FLA's Triton kernels), read strictly from their CSV and set beside the CSVs' own
// timed rows of the same shape, each against the floor of the problem it solves.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "harness/cost.h"
#include "harness/io/errors.h"
#include "harness/analysis/report.h"
#include "harness/result.h"

namespace {

constexpr const char* kAnchorLabel = "anchor (PyTorch/FLA run, not this harness)";

// A whole-cell decimal integer > 0: "1.0", "1e3", " 1" and "" are refused, so a shifted column
// cannot pass as a size.
bool positive_int(const std::string& s, int64_t& out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || x <= 0) return false;
  out = int64_t(x);
  return true;
}

bool positive_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (*end != '\0' || !std::isfinite(x) || !(x > 0)) return false;
  out = x;
  return true;
}

std::string num(double x, const char* spec = "{:.4g}") { return std::isfinite(x) ? fmt::format(spec, x) : "-"; }

// An anchor shape: the anchors give B, H and D only, so HV = H and K = V = D.
struct AnchorShape {
  std::string dtype;
  int64_t B, H, D;
  auto tie() const { return std::tie(dtype, B, H, D); }
  bool operator==(const AnchorShape& o) const { return tie() == o.tie(); }
};

// One column of the table: a series of this harness (variant and the case fields but T) or an
// anchor implementation, its times by T and the floor each time is divided by.
struct Column {
  std::string label, family;
  bool anchor = false;
  std::map<int64_t, std::pair<double, double>> by_T;  // T -> (median ms, floor ms)
};

// The floor of the problem an anchor solves at T, with this harness's counts (harness/result.h) and
// its measured ceilings. GDN: gate and delta on (the anchors pass g and beta), no initial state,
// the final state written, as this harness's own forward rows count it.
double problem_floor(const std::string& family, const AnchorShape& s, int64_t T, double tflops, double gbps) {
  Problem p;
  p.shape = GdnShape{s.B, T, s.H, s.H, s.D, s.D};
  p.dtype = *parse_dtype(s.dtype);
  p.use_gate = p.use_delta = true;
  p.use_h0 = false;
  if (family == "gdn") return floor_ms(gdn_flops(p), gdn_min_bytes(p), tflops, gbps);
  if (family == "attention") return floor_ms(attention_flops(p), attention_min_bytes(p), tflops, gbps);
  return NAN;
}

std::string cell(double ms, double floor) {
  if (!std::isfinite(ms)) return "-";
  return std::isfinite(floor) ? fmt::format("{:.4g} ({:.3g}x)", ms, ms / floor) : fmt::format("{:.4g}", ms);
}

}  // namespace

std::string anchor_family(const std::string& impl) {
  if (impl.rfind("fla_", 0) == 0) return "gdn";
  if (impl.rfind("sdpa_", 0) == 0) return "attention";
  return "";
}

std::vector<AnchorRow> read_anchors(const std::string& path) {
  const std::string where = "report: --anchors " + path;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("report: --anchors: cannot read '{}'", path));
  std::ostringstream text;
  text << f.rdbuf();
  std::vector<std::vector<std::string>> lines;
  try {
    lines = parse_csv_text(text.str());
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: {}", where, e.what()));
  }
  if (lines.empty()) throw UsageError(where + ": empty file, no CSV header");
  CsvTable t;
  t.path = path;
  t.header = std::move(lines[0]);
  for (const char* c : {"what", "impl", "B", "H", "D", "T", "ms"})
    if (t.column(c) < 0)
      throw UsageError(
          fmt::format("{}: column '{}' missing; an anchors file has what, impl, B, H, D, T, ms", where, c));
  std::vector<AnchorRow> out;
  std::map<std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int64_t>, size_t> seen;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t line = i + 1;
    if (lines[i].size() != t.header.size())
      throw UsageError(fmt::format("{}: row {} has {} fields, the header {}", where, line, lines[i].size(),
                                   t.header.size()));
    t.rows.push_back(std::move(lines[i]));
    const size_t r = t.rows.size() - 1;
    if (t.cell(r, "what") != "fwd") continue;
    AnchorRow a;
    a.impl = t.cell(r, "impl");
    if (a.impl.empty()) throw UsageError(fmt::format("{}: row {} (what=fwd) has no impl", where, line));
    const std::pair<const char*, int64_t*> sizes[] = {{"B", &a.B}, {"H", &a.H}, {"D", &a.D}, {"T", &a.T}};
    for (const auto& [name, dst] : sizes)
      if (!positive_int(t.cell(r, name), *dst))
        throw UsageError(fmt::format("{}: row {} (what=fwd, {}): {} '{}' is not a positive integer", where, line,
                                     a.impl, name, t.cell(r, name)));
    if (!positive_number(t.cell(r, "ms"), a.ms))
      throw UsageError(fmt::format("{}: row {} (what=fwd, {}): ms '{}' is not a positive number", where, line,
                                   a.impl, t.cell(r, "ms")));
    const std::string& dtype = t.cell(r, "dtype");
    if (!dtype.empty()) {
      const auto d = parse_dtype(dtype);
      if (!d) throw UsageError(fmt::format("{}: row {}: dtype '{}' unknown (bf16, fp16, fp32)", where, line, dtype));
      a.dtype = dtype_name(*d);
    }
    const auto key = std::make_tuple(a.impl, a.dtype, a.B, a.H, a.D, a.T);
    if (!seen.emplace(key, line).second)
      throw UsageError(fmt::format("{}: row {} repeats {} at B={} H={} D={} T={} of row {}", where, line, a.impl,
                                   a.B, a.H, a.D, a.T, seen[key]));
    out.push_back(std::move(a));
  }
  if (out.empty()) throw UsageError(where + ": no row with what=fwd");
  return out;
}

std::string anchors_section(const std::vector<CsvTable>& tables, const std::vector<AnchorRow>& anchors,
                            const std::string& anchors_path) {
  std::string md = fmt::format(
      "## Forward time beside the anchors\n\n"
      "Columns marked (anchor): {}, read from `{}` (rows with what=fwd; its README says how they were "
      "timed), beside this harness's timed PASS rows of the same dtype, B, H = HV and K = V = D. Each "
      "cell: median ms (time / floor). Floor as in the timing table. For this harness's rows it is "
      "the timing table's; for an anchor, and in the floor columns, it is the floor of the same problem as "
      "this harness counts it (GDN: gate and delta on, no initial state, the final state written; "
      "attention: causal) on the ceilings named below each table. `-`: not timed at that T.\n\n",
      kAnchorLabel, anchors_path);
  std::vector<AnchorShape> shapes;
  for (const AnchorRow& a : anchors) {
    const AnchorShape s{a.dtype, a.B, a.H, a.D};
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  }
  for (const AnchorShape& s : shapes) {
    // Ceilings for the anchors and the floor columns: the first timed row of the dtype that
    // recorded both; they belong to the device and the dtype, not to the shape.
    const RecordedCeilings ceilings = first_recorded_ceilings(tables, s.dtype);
    const double tflops = ceilings.tflops, gbps = ceilings.gbps;
    const std::string& device = ceilings.device;
    // This harness's series of the shape, in order of appearance; the first row of a (series, T) wins.
    std::vector<std::pair<std::string, Column>> ours;  // (series key, column)
    for (const CsvTable& t : tables)
      for (size_t i = 0; i < t.rows.size(); ++i) {
        if (!timed_forward_row(t, i, s.dtype)) continue;
        const double T = t.number(i, "T");
        if (!(T >= 1 && T <= 1e15)) continue;  // not a length (a cast of it would be undefined)
        const double ms = t.number(i, "time_median_ms");
        const auto is = [&](const char* c, int64_t v) { return t.number(i, c) == double(v); };
        if (!is("B", s.B) || !is("H", s.H) || !is("HV", s.H) || !is("K", s.D) || !is("V", s.D)) continue;
        const std::string key = fmt::format("{} C={} {}/{}/{}", t.cell(i, "variant"), t.cell(i, "chunk"),
                                            t.cell(i, "gate"), t.cell(i, "delta"), t.cell(i, "h0"));
        auto it = std::find_if(ours.begin(), ours.end(), [&](const auto& p) { return p.first == key; });
        if (it == ours.end()) {
          Column c;
          c.label = t.cell(i, "variant");
          c.family = t.cell(i, "family");
          it = ours.insert(ours.end(), {key, std::move(c)});
        }
        it->second.by_T.emplace(int64_t(T), std::make_pair(ms, row_floor(tables, t, i).ms));
      }
    std::vector<Column> columns;
    for (auto& [key, c] : ours) {
      // A variant with several series here (chunk sizes, terms) names the one each column holds.
      // (A named copy of the label: lambdas cannot capture structured bindings before C++20.)
      const std::string label = c.label;
      const auto n = std::count_if(ours.begin(), ours.end(), [&](const auto& p) { return p.second.label == label; });
      if (n > 1) c.label = key;
      columns.push_back(c);
    }
    for (const AnchorRow& a : anchors) {
      if (!(AnchorShape{a.dtype, a.B, a.H, a.D} == s)) continue;
      const std::string label = a.impl + " (anchor)";
      auto it = std::find_if(columns.begin(), columns.end(), [&](const Column& c) { return c.label == label; });
      if (it == columns.end()) {
        Column c;
        c.label = label;
        c.family = anchor_family(a.impl);
        c.anchor = true;
        it = columns.insert(columns.end(), std::move(c));
      }
      it->by_T.emplace(a.T, std::make_pair(a.ms, problem_floor(it->family, s, a.T, tflops, gbps)));
    }
    std::vector<int64_t> Ts;
    bool attention = false;
    for (const Column& c : columns) {
      attention = attention || c.family == "attention";
      for (const auto& [T, v] : c.by_T) Ts.push_back(T);
    }
    std::sort(Ts.begin(), Ts.end());
    Ts.erase(std::unique(Ts.begin(), Ts.end()), Ts.end());

    md += fmt::format("### {}, B={} H=HV={} K=V={}\n\n", s.dtype, s.B, s.H, s.D);
    if (ours.empty())
      md += "No timed row of this harness has this shape; the anchors alone.\n\n";
    std::string head = "| T | GDN floor (ms) |", rule = "| --- | --- |";
    if (attention) {
      head += " attention floor (ms) |";
      rule += " --- |";
    }
    for (const Column& c : columns) {
      head += " " + c.label + " |";
      rule += " --- |";
    }
    md += head + "\n" + rule + "\n";
    for (int64_t T : Ts) {
      std::string line = fmt::format("| {} | {} |", T, num(problem_floor("gdn", s, T, tflops, gbps)));
      if (attention) line += fmt::format(" {} |", num(problem_floor("attention", s, T, tflops, gbps)));
      for (const Column& c : columns) {
        const auto it = c.by_T.find(T);
        line += " " + (it == c.by_T.end() ? std::string("-") : cell(it->second.first, it->second.second)) + " |";
      }
      md += line + "\n";
    }
    md += std::isfinite(tflops)
              ? fmt::format("\nCeilings for the floor columns and the anchors: {:.4g} TFLOP/s {} GEMM, {:.4g} GB/s "
                            "copy, measured by this harness on `{}` (the first timed {} row that recorded them).\n\n",
                            tflops, s.dtype, gbps, device, s.dtype)
              : fmt::format("\nNo timed {} row recorded ceilings: no floor for the anchors.\n\n", s.dtype);
  }
  return md;
}
