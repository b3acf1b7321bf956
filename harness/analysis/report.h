// `gdnbench report A.csv [B.csv ...] [--out report.md] [--plots DIR] [--claims FILE] [--anchors FILE]
// [--note TEXT]`: markdown from schema-v1 CSVs (environment, accuracy, timing against the floor,
// forward times beside an anchors file, complexity fits, speedups and crossovers against the
// attention baselines, and a regression check of the first CSV against each later one).
// The numerical pieces are free functions so the tests can pin them.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/analysis/fits.h"
#include "harness/io/csv_read.h"
#include "harness/noise.h"

// Where the GDN variant becomes faster than the attention baseline. With r = t_gdn / t_attn at the
// common Ts (ascending), the crossover is the T where log r reaches 0, linear in log T between the
// two bracketing Ts: log T* = log T0 + (0 - log r0) (log T1 - log T0) / (log r1 - log r0).
struct Crossover {
  enum Kind {
    becomes_faster,  // slower below t, faster above it (the first such bracket)
    becomes_slower,  // faster below t, slower above it (no slower->faster bracket exists)
    always_faster,   // faster at every common T
    never_faster,    // slower or equal at every common T
    no_data,         // no common T
  };
  Kind kind = no_data;
  double t = 0;  // the crossover T for becomes_faster / becomes_slower
};
Crossover find_crossover(const std::vector<double>& T, const std::vector<double>& gdn_ms,
                         const std::vector<double>& attn_ms);
std::string crossover_text(const Crossover& c);

// The floor of a case (docs/DESIGN.md section 4): the time it takes at the measured GEMM rate or at the
// measured copy bandwidth, whichever is slower, in ms: max(flops / ceiling_tflops, min_bytes /
// ceiling_gbps), with TFLOP/s = 1e9 FLOP per ms and GB/s = 1e6 bytes per ms. NaN unless all four
// are positive and finite. A row's time / floor is 1 / max(frac_flops, frac_bw).
double floor_ms(double flops, double min_bytes, double ceiling_tflops, double ceiling_gbps);

// The floor of row `row` of `t`, one of `tables`: on the row's own ceilings; for a row timed
// without them (--no-ceilings) on those the first timed PASS row of the same device and dtype in
// `tables` recorded (`borrowed`: the ceilings belong to the device and the dtype, not the shape).
// NaN when neither exists or the row's counts are missing.
struct RowFloor {
  double ms = NAN;
  bool borrowed = false;
};
RowFloor row_floor(const std::vector<CsvTable>& tables, const CsvTable& t, size_t row);

// A timed PASS forward row (context 0) of `dtype`: the rows the anchors table and the ceilings read.
bool timed_forward_row(const CsvTable& t, size_t row, const std::string& dtype);

// The GEMM rate and copy bandwidth the first timed PASS forward row (context 0) of `dtype` recorded,
// on `device` (empty: any device); NaN when no such row recorded both.
struct RecordedCeilings {
  double tflops = NAN, gbps = NAN;
  std::string device;
};
RecordedCeilings first_recorded_ceilings(const std::vector<CsvTable>& tables, const std::string& dtype,
                                         const std::string& device = "");

// Regression rule: b (a later CSV) against a (the first) differs when
// |median_b - median_a| > max(3 cv_a median_a, 3 cv_b median_b, 0.02 median_a).
enum class Change { same, slower, faster };
double regression_threshold_ms(double median_a, double cv_a, double median_b, double cv_b);
Change compare_timing(double median_a, double cv_a, double median_b, double cv_b);
const char* change_name(Change c);

// Columns `report` needs (reports/SCHEMA.md); a CSV without one of them is refused.
const std::vector<std::string>& report_required_columns();

// One forward time from an anchors file (rows with what=fwd; the README beside the file): an
// implementation timed outside this harness (PyTorch, FLA), at B, H = HV heads, K = V = D, T.
struct AnchorRow {
  std::string impl;  // fla_chunk, fla_fused_recurrent, sdpa_flash, sdpa_cudnn, ...
  std::string dtype = "bf16";  // the file's dtype column when a row fills it, else bf16
  int64_t B = 0, H = 0, D = 0, T = 0;
  double ms = NAN;
};

// The fwd rows of an anchors file; rows with another `what` are not read. Strict, since the figures
// land beside measured ones: a missing column (what, impl, B, H, D, T, ms), a row of another width
// than the header, a fwd row whose impl is empty, whose B, H, D, T are not positive integers, whose
// ms is not a positive number or whose dtype is unknown, a repeated (impl, dtype, B, H, D, T), or no
// fwd row at all throws UsageError with one line naming the file and the row.
std::vector<AnchorRow> read_anchors(const std::string& path);

// What problem an anchor implementation solves, for its floor: "gdn" (fla_*), "attention"
// (sdpa_*), "" when the name says neither (shown without a floor).
std::string anchor_family(const std::string& impl);

// The anchors section: per anchor shape, the forward times of this harness's series of that shape
// and of the anchors side by side over T, each with its time / floor (harness/analysis/report_anchors.cpp).
std::string anchors_section(const std::vector<CsvTable>& tables, const std::vector<AnchorRow>& anchors,
                            const std::string& anchors_path);

// What the report holds besides the CSVs. `plots` are image paths as the markdown should link them
// (relative to the report), embedded in a last section that names `plots_command` as their maker.
// `claims_path` non-empty: a last section with the verdicts of that claims file (harness/analysis/claims.h).
// `anchors` non-empty: the anchors section, read from `anchors_path`. `note`: a paragraph under the
// title (where the CSVs came from, what was left out of them).
struct ReportExtras {
  std::vector<std::string> plots;
  std::string plots_command = "scripts/plot.py";
  std::string claims_path;
  std::vector<AnchorRow> anchors;
  std::string anchors_path;
  std::string note;
};

// The markdown report. `command` is the line recorded as having made it.
std::string build_report(const std::vector<CsvTable>& tables, const std::string& command,
                         const ReportExtras& extras = {});

// The decode section: rows with a context (KV-cache tokens) > 0, latency and peak memory against
// the context L per series, and attention time / GDN time at each L (harness/analysis/report_decode.cpp).
// Empty when no row has a context.
std::string decode_section(const std::vector<CsvTable>& tables);

// The sub-command; args are those after "report". Throws UsageError on bad use or input.
int run_report(const std::vector<std::string>& args);
std::string report_usage_text();
