// `gdnbench report` on the command line: its flags, the plots folder, the recorded command.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "harness/analysis/claims.h"
#include "harness/io/errors.h"
#include "harness/io/output_file.h"
#include "harness/analysis/report.h"

namespace {

// A word as a POSIX shell reads it back: as is when it holds only safe characters, else in single
// quotes, so the recorded command line (a --note with spaces) can be pasted to rerun the report.
std::string shell_word(const std::string& a) {
  const bool safe = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                      "0123456789_./=:,+-@%") == std::string::npos;
  if (safe) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string join_args(const std::vector<std::string>& args) {
  std::string s = "gdnbench report";
  for (const std::string& a : args) s += " " + shell_word(a);
  return s;
}

}  // namespace

std::string report_usage_text() {
  return "usage: gdnbench report A.csv [B.csv ...] [--out report.md] [--plots DIR] [--claims FILE]\n"
         "                       [--anchors FILE] [--note TEXT]\n"
         "  Markdown from gdnbench CSVs (schema v1 to v3): environment, accuracy, timing against the floor,\n"
         "  complexity fits, speedups and crossovers against attention, and a regression check of the\n"
         "  first CSV against each later one. --out: write to a file (default: stdout). --plots: embed\n"
         "  the PNG files of DIR (made first by scripts/plot.py), linked relative to the report.\n"
         "  --claims: add the verdicts of a claims file (a path, or a name in claims/, e.g.\n"
         "  gdn_claims). --anchors: forward times measured outside this harness (CSV with what, impl,\n"
         "  B, H, D, T, ms; rows with what=fwd are read) beside the CSVs' own, each against its floor.\n"
         "  --note: a paragraph under the title (where the CSVs came from, what was left out).\n";
}

int run_report(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::string out, plots_dir, claims, anchors_path, note;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&](const std::string& flag, std::string& dst) {
      return take_flag_value(args, i, flag, dst, "report");
    };
    if (a == "--help" || a == "-h") {
      fmt::print("{}", report_usage_text());
      return 0;
    }
    if (value("--out", out) || value("--plots", plots_dir) || value("--claims", claims) ||
        value("--anchors", anchors_path) || value("--note", note))
      continue;
    if (a.size() > 1 && a[0] == '-')
      throw UsageError("report: unknown flag '" + a + "'; see gdnbench report --help");
    files.push_back(a);
  }
  if (files.empty())
    throw UsageError("report: no CSV given; usage: gdnbench report A.csv [B.csv ...] [--out report.md]");
  // --out is claimed before any work: refused when not a regular file, locked while the report is made.
  std::optional<OutputFile> out_file;
  if (!out.empty()) {
    try {
      out_file.emplace(out, true);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("report: --out: {}", e.what()));
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("report: --out: cannot write '{}' ({})", out, e.what()));
    }
  }
  std::vector<CsvTable> tables;
  for (const std::string& f : files) tables.push_back(read_gdnbench_csv(f, report_required_columns()));

  std::vector<std::string> plots;
  if (!plots_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(plots_dir, ec)) throw UsageError("report: --plots: no directory '" + plots_dir + "'");
    // The report's folder ("." for an --out without a directory part, or for stdout).
    const fs::path out_dir = out.empty() ? fs::path() : fs::path(out).parent_path();
    const fs::path base = fs::absolute(out_dir.empty() ? fs::path(".") : out_dir);
    for (const auto& e : fs::directory_iterator(plots_dir))
      if (e.path().extension() == ".png")
        plots.push_back(fs::absolute(e.path()).lexically_normal().lexically_relative(base.lexically_normal()).string());
    // An empty folder would leave the report silently without its plots section.
    if (plots.empty())
      throw UsageError("report: --plots: no PNG files in '" + plots_dir +
                       "'; make them first: scripts/plot.py CSV... --outdir " + plots_dir);
    // scripts/plot.py's figures in reading order, anything else after them.
    const auto rank = [](const std::string& p) {
      const std::string stem = fs::path(p).stem().string();
      const char* order[] = {"time_vs_T", "speedup_vs_T", "o_rel_l2_vs_T", "peak_memory_vs_T",
                             "decode_latency_vs_L", "decode_memory_vs_L", "step_latency_vs_B",
                             "step_bandwidth_vs_B"};
      return std::find(std::begin(order), std::end(order), stem) - std::begin(order);
    };
    std::sort(plots.begin(), plots.end(), [&](const std::string& a, const std::string& b) {
      return std::make_pair(rank(a), a) < std::make_pair(rank(b), b);
    });
  }
  ReportExtras extras;
  if (!anchors_path.empty()) {
    extras.anchors = read_anchors(anchors_path);
    extras.anchors_path = anchors_path;
  }
  extras.plots = plots;
  extras.plots_command = "scripts/plot.py";
  for (const std::string& f : files) extras.plots_command += " " + shell_word(f);
  extras.plots_command += " --outdir " + shell_word(plots_dir);
  if (!anchors_path.empty()) extras.plots_command += " --anchors " + shell_word(anchors_path);
  extras.claims_path = claims.empty() ? "" : resolve_claims_path(claims);
  extras.note = note;
  const std::string md = build_report(tables, join_args(args), extras);
  if (out.empty()) {
    fmt::print("{}", md);
    return 0;
  }
  try {
    out_file->replace(md);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("report: --out: cannot write '{}' ({})", out, e.what()));
  }
  fmt::print("wrote {}\n", out);
  return 0;
}
