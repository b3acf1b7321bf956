// `gdnbench claims`: the verdicts as text and as a markdown section (harness/analysis/claims.h).
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "harness/analysis/claims.h"
#include "harness/io/errors.h"

const std::vector<std::string>& claims_required_columns() {
  static const std::vector<std::string> cols = {"schema_version", "variant", "family", "status", "device",
                                                "dtype", "B", "T", "H", "HV", "K", "V"};
  return cols;
}

namespace {

std::string setup_text(const ClaimResult& r) {
  std::string s = r.claim.where_text.empty() ? "all rows" : r.claim.where_text;
  s += r.devices.empty() ? "; device: none measured" : fmt::format("; device: {}", fmt::join(r.devices, ", "));
  return s;
}

std::string summary(const std::vector<ClaimResult>& results) {
  const auto n = [&](Verdict v) {
    return std::count_if(results.begin(), results.end(), [&](const ClaimResult& r) { return r.verdict == v; });
  };
  return fmt::format("{} REPRODUCED, {} NOT REPRODUCED, {} INCONCLUSIVE, {} NOT MEASURABLE HERE",
                     n(Verdict::reproduced), n(Verdict::not_reproduced), n(Verdict::inconclusive),
                     n(Verdict::not_measurable));
}

std::string md_cell(std::string s) {
  for (size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.replace(i, 1, "\\|");
  return s;
}

}  // namespace

std::string claims_text(const std::vector<ClaimResult>& results) {
  std::string out;
  for (const ClaimResult& r : results) {
    out += fmt::format("[{}] {}\n", verdict_name(r.verdict), r.claim.id);
    out += fmt::format("  claim:  {}\n  source: {}\n", r.claim.statement, r.claim.source);
    if (!r.claim.proxy.empty()) out += fmt::format("  proxy:  {}\n", r.claim.proxy);
    out += fmt::format("  setup:  {}\n", setup_text(r));
    for (const CheckResult& c : r.checks) {
      out += fmt::format("  check {} [{}]: {}\n", c.check.name, verdict_name(c.verdict), c.rule);
      out += fmt::format("    measured: {}\n", c.measured.empty() ? "-" : c.measured);
      for (const std::string& l : c.lines) out += "    " + l + "\n";
    }
    out += "\n";
  }
  return out + "summary: " + summary(results) + "\n";
}

std::string claims_markdown(const std::vector<ClaimResult>& results, const std::string& claims_path) {
  std::string md = fmt::format(
      "## Claims\n\nThe claims of `{}`, judged from the rows above (`gdnbench claims`). A timed value is "
      "judged with its noise interval (in brackets: 2 standard deviations from the rows' timing CVs and "
      "the scatter of the points, harness/analysis/claims.h). REPRODUCED: every check met its bound, interval "
      "included; NOT REPRODUCED: a check missed it, interval included; INCONCLUSIVE: a check's interval "
      "straddles its bound (noise, not a finding); NOT MEASURABLE HERE: a check found no data (e.g. memory "
      "on the CPU backend). Summary: {}.\n\n",
      claims_path, summary(results));
  md += "| claim | verdict | measured | setup |\n| --- | --- | --- | --- |\n";
  for (const ClaimResult& r : results) {
    std::string measured;
    for (const CheckResult& c : r.checks)
      measured += (measured.empty() ? "" : "; ") + fmt::format("{}: {}", c.check.name, c.measured.empty() ? "-" : c.measured);
    md += fmt::format("| {} | **{}** | {} | {} |\n", r.claim.id, verdict_name(r.verdict), md_cell(measured),
                      md_cell(setup_text(r)));
  }
  md += "\n";
  for (const ClaimResult& r : results) {
    md += fmt::format("### {}: {}\n\n{}\n\n- source: {}\n", r.claim.id, verdict_name(r.verdict), r.claim.statement,
                      r.claim.source);
    if (!r.claim.proxy.empty()) md += fmt::format("- proxy: {}\n", r.claim.proxy);
    md += fmt::format("- setup: {}\n", setup_text(r));
    for (const CheckResult& c : r.checks) {
      md += fmt::format("- check `{}` ({}): {}\n", c.check.name, verdict_name(c.verdict), c.rule);
      if (c.lines.empty()) md += fmt::format("  - {}\n", c.measured);
      for (const std::string& l : c.lines) md += "  - " + l + "\n";
    }
    md += "\n";
  }
  return md;
}

std::string claims_usage_text() {
  return "usage: gdnbench claims A.csv [B.csv ...] [--claims FILE]\n"
         "  Judges each claim of FILE (default: claims/gdn_claims.ini) from the rows of the CSVs and\n"
         "  prints REPRODUCED, NOT REPRODUCED, INCONCLUSIVE or NOT MEASURABLE HERE with the measured\n"
         "  values and the setup (variant, shape, dtype, device). `gdnbench run --suite claims` measures\n"
         "  what they need.\n"
         "  A timed value is judged with its noise interval [lo, hi] (2 standard deviations, from the rows'\n"
         "  time_cv and the scatter of the points): REPRODUCED when it lies wholly within the bound, NOT\n"
         "  REPRODUCED when wholly outside, INCONCLUSIVE when it straddles the bound (noise, not a finding).\n"
         "  A case measured in several CSVs is judged by its row in the last of them (give them oldest first).\n"
         "  Exit 0 whatever the verdicts (they are findings), 2 on a usage error.\n";
}

int run_claims(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string claims_name = kDefaultClaims;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      fmt::print("{}", claims_usage_text());
      return 0;
    }
    if (take_flag_value(args, i, "--claims", claims_name, "claims")) {
      continue;
    } else if (a.size() > 1 && a[0] == '-') {
      throw UsageError("claims: unknown flag '" + a + "'; see gdnbench claims --help");
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) throw UsageError("claims: no CSV given; usage: gdnbench claims A.csv [--claims FILE]");
  const std::string path = resolve_claims_path(claims_name);
  const std::vector<Claim> claims = read_claims_file(path);
  std::vector<CsvTable> tables;
  size_t rows = 0;
  for (const std::string& f : files) {
    tables.push_back(read_gdnbench_csv(f, claims_required_columns(), "claims"));
    rows += tables.back().rows.size();
  }
  fmt::print("claims of {} against {} ({} rows)\n\n", path, fmt::join(files, ", "), rows);
  fmt::print("{}", claims_text(evaluate_claims(claims, tables)));
  return 0;
}
