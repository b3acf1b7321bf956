// The decode section of `gdnbench report` (harness/analysis/report.h): rows with a KV-cache context.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "harness/analysis/report.h"

namespace {

struct DecodeRow {
  std::string variant, family, device;
  double ms = NAN, bytes = NAN;
};

// Everything that makes a decode series but the variant and the context.
struct DecodeShape {
  std::string dtype, B, T, H, HV, K, V, h0;
  auto tie() const { return std::tie(dtype, B, T, H, HV, K, V, h0); }
  bool operator<(const DecodeShape& o) const { return tie() < o.tie(); }
};

std::string cell(double x, const char* spec) { return std::isfinite(x) ? fmt::format(spec, x) : "-"; }

}  // namespace

std::string decode_section(const std::vector<CsvTable>& tables) {
  // shape -> variant (in order of appearance) -> context -> row; the first row of a case wins.
  std::map<DecodeShape, std::vector<std::pair<std::string, std::map<int64_t, DecodeRow>>>> by_shape;
  for (const CsvTable& t : tables) {
    if (t.column("context") < 0) continue;
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const double ctx = t.number(i, "context");
      if (!(ctx > 0) || t.cell(i, "status") != "PASS" || row_pass(t, i) != "fwd") continue;
      const DecodeShape s{t.cell(i, "dtype"), t.cell(i, "B"), t.cell(i, "T"), t.cell(i, "H"), t.cell(i, "HV"),
                          t.cell(i, "K"), t.cell(i, "V"), t.cell(i, "h0")};
      auto& variants = by_shape[s];
      const std::string& v = t.cell(i, "variant");
      auto it = std::find_if(variants.begin(), variants.end(), [&](const auto& p) { return p.first == v; });
      if (it == variants.end()) it = variants.insert(variants.end(), {v, {}});
      it->second.emplace(int64_t(ctx), DecodeRow{v, t.cell(i, "family"), t.cell(i, "device"),
                                                 t.number(i, "time_median_ms"), t.number(i, "peak_device_bytes")});
    }
  }
  if (by_shape.empty()) return "";
  std::string md =
      "## Decode\n\nRows with a context L > 0 (tokens already in the KV cache; `--context`), PASS only: "
      "one step's median time and peak device memory against L. GDN variants decode from their state "
      "(h0 on), whose size does not depend on L; attention reads a KV cache of L tokens. Speedup: "
      "attention time / GDN time at the same L, B, H, K, V (GDN rows with h0 on).\n\n";
  md += "| variant | dtype | B | T | H | HV | K | V | h0 | L | median (ms) | peak memory (MiB) |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& [s, variants] : by_shape)
    for (const auto& [v, byL] : variants)
      for (const auto& [L, r] : byL)
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", v, s.dtype, s.B, s.T,
                          s.H, s.HV, s.K, s.V, s.h0, L, cell(r.ms, "{:.4g}"), cell(r.bytes / 1048576.0, "{:.1f}"));
  std::string speed;
  for (const auto& [gs, gv] : by_shape) {
    if (gs.h0 != "on") continue;
    for (const auto& [as, av] : by_shape) {
      if (std::tie(as.dtype, as.B, as.T, as.H, as.HV, as.K, as.V) != std::tie(gs.dtype, gs.B, gs.T, gs.H, gs.HV, gs.K, gs.V))
        continue;
      for (const auto& [g, gL] : gv)
        for (const auto& [a, aL] : av) {
          if (gL.empty() || aL.empty() || gL.begin()->second.family != "gdn" || aL.begin()->second.family != "attention")
            continue;
          for (const auto& [L, gr] : gL) {
            const auto it = aL.find(L);
            if (it == aL.end() || !(gr.ms > 0) || !(it->second.ms > 0)) continue;
            speed += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.2f}x |\n", g, a, gs.dtype, gs.B, gs.H, L,
                                 cell(gr.ms, "{:.4g}") + " / " + cell(it->second.ms, "{:.4g}"), it->second.ms / gr.ms);
          }
        }
    }
  }
  if (!speed.empty())
    md += "\n| GDN | attention | dtype | B | H | L | GDN / attention (ms) | speedup |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |\n" + speed;
  return md + "\n";
}
