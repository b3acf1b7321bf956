#include "harness/io/csv.h"
#include "harness/noise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/io/csv_read.h"

namespace {

std::string num(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", x);
}
std::string onoff(bool b) { return b ? "on" : "off"; }

struct Column {
  std::string name;
  std::function<std::string(const RunMeta&, const ResultRow&)> value;
};

std::string metric(const TensorMetrics& m, double TensorMetrics::*field) {
  return m.present ? num(m.*field) : "";
}
std::string count(const TensorMetrics& m, int64_t TensorMetrics::*field) {
  return m.present ? std::to_string(m.*field) : "";
}
std::string timing(const ResultRow& r, double TimingStats::*field) {
  return r.timing ? num((*r.timing).*field) : "";
}

// The schema: one entry per column, in order. reports/SCHEMA.md documents each name.
const std::vector<Column>& columns() {
  using M = RunMeta;
  using R = ResultRow;
  static const std::vector<Column> cols = [] {
    std::vector<Column> c = {
      {"schema_version", [](const M&, const R&) { return std::to_string(kCsvSchemaVersion); }},
      {"run_id", [](const M& m, const R&) { return m.run_id; }},
      {"timestamp", [](const M& m, const R&) { return m.timestamp; }},
      {"git_sha", [](const M& m, const R&) { return m.git_sha; }},
      {"host", [](const M& m, const R&) { return m.host; }},
      {"device", [](const M&, const R& r) { return r.device; }},
      {"command", [](const M& m, const R&) { return m.command; }},
      {"suite", [](const M& m, const R&) { return m.suite; }},
      {"seed", [](const M& m, const R&) { return std::to_string(m.seed); }},
      {"tolerances", [](const M& m, const R&) { return m.tolerances; }},
      {"tolerances_hash", [](const M& m, const R&) { return m.tolerances_hash; }},
      {"variant", [](const M&, const R& r) { return r.variant; }},
      {"family", [](const M&, const R& r) { return r.family; }},
      {"backend", [](const M&, const R& r) { return r.backend; }},
      {"precision", [](const M&, const R& r) { return r.precision; }},
      {"plan", [](const M&, const R& r) { return r.plan; }},
      // The plan forced, and a forced sequence split (--segments) with it: "segments=3", "plain segments=3".
      {"plan_forced", [](const M&, const R& r) {
         std::string f = r.problem.plan == "auto" ? std::string() : r.problem.plan;
         if (r.problem.segments > 1) f += (f.empty() ? "" : " ") + fmt::format("segments={}", r.problem.segments);
         return f;
       }},
      {"dtype", [](const M&, const R& r) { return std::string(dtype_name(r.problem.dtype)); }},
      {"B", [](const M&, const R& r) { return std::to_string(r.problem.shape.B); }},
      {"T", [](const M&, const R& r) { return std::to_string(r.problem.shape.T); }},
      {"seqlens", [](const M&, const R& r) { return seqlens_text(r.problem.cu_seqlens); }},
      {"context", [](const M&, const R& r) { return std::to_string(r.problem.context); }},
      {"H", [](const M&, const R& r) { return std::to_string(r.problem.shape.H); }},
      {"HV", [](const M&, const R& r) { return std::to_string(r.problem.shape.HV); }},
      {"K", [](const M&, const R& r) { return std::to_string(r.problem.shape.K); }},
      {"V", [](const M&, const R& r) { return std::to_string(r.problem.shape.V); }},
      {"chunk", [](const M&, const R& r) { return std::to_string(r.problem.chunk); }},
      {"gate", [](const M&, const R& r) { return onoff(r.problem.use_gate); }},
      {"delta", [](const M&, const R& r) { return onoff(r.problem.use_delta); }},
      {"h0", [](const M&, const R& r) { return onoff(r.problem.use_h0); }},
      {"frontend", [](const M&, const R& r) { return onoff(r.problem.frontend); }},
      {"pass", [](const M&, const R& r) { return std::string(pass_name(r.problem.pass)); }},
      {"dht", [](const M&, const R& r) {
         return pass_has_backward(r.problem.pass) ? onoff(r.problem.use_dht) : std::string();
       }},
      {"scale", [](const M&, const R& r) { return num(r.problem.resolved_scale()); }},
      {"gate_dist", [](const M&, const R& r) {
         if (r.problem.frontend) return std::string("frontend");  // g = -exp(A_log) softplus(a + dt_bias)
         return std::string(r.problem.use_gate ? gate_dist_name(r.problem.gate_dist) : "none");
       }},
      {"beta_dist", [](const M&, const R& r) {
         if (r.problem.frontend && r.problem.use_delta) return std::string("frontend");  // sigmoid(b)
         return std::string(r.problem.use_delta ? beta_dist_name(r.problem.beta_dist) : "none");
       }},
      {"distributions", [](const M&, const R& r) { return r.problem.distributions(); }},
      {"status", [](const M&, const R& r) { return std::string(status_name(r.status)); }},
      {"reason", [](const M&, const R& r) { return r.reason; }},
      {"tol_o", [](const M&, const R& r) { return r.o.present ? num(r.tol.o_rel_l2) : ""; }},
      {"tol_ht", [](const M&, const R& r) { return r.ht.present ? num(r.tol.ht_rel_l2) : ""; }},
      {"ref_rows", [](const M&, const R& r) {
         return r.o.present && r.ref_rows > 0 ? std::to_string(r.ref_rows) : "";
       }},
      {"ref_heads", [](const M&, const R& r) {
         return r.o.present && r.ref_heads > 0 ? std::to_string(r.ref_heads) : "";
       }},
      {"o_rel_l2", [](const M&, const R& r) { return metric(r.o, &TensorMetrics::rel_l2); }},
      {"o_max_abs", [](const M&, const R& r) { return metric(r.o, &TensorMetrics::max_abs); }},
      {"o_worst_index", [](const M&, const R& r) { return count(r.o, &TensorMetrics::worst_index); }},
      {"o_floor_rel_l2", [](const M&, const R& r) { return metric(r.o, &TensorMetrics::floor_rel_l2); }},
      {"o_err_vs_floor", [](const M&, const R& r) { return metric(r.o, &TensorMetrics::err_vs_floor); }},
      {"o_nan", [](const M&, const R& r) { return count(r.o, &TensorMetrics::nan_count); }},
      {"o_unwritten", [](const M&, const R& r) { return count(r.o, &TensorMetrics::unwritten); }},
      {"o_ref_overflow", [](const M&, const R& r) { return count(r.o, &TensorMetrics::ref_overflow); }},
      {"ht_rel_l2", [](const M&, const R& r) { return metric(r.ht, &TensorMetrics::rel_l2); }},
      {"ht_max_abs", [](const M&, const R& r) { return metric(r.ht, &TensorMetrics::max_abs); }},
      {"ht_worst_index", [](const M&, const R& r) { return count(r.ht, &TensorMetrics::worst_index); }},
      {"ht_floor_rel_l2", [](const M&, const R& r) { return metric(r.ht, &TensorMetrics::floor_rel_l2); }},
      {"ht_err_vs_floor", [](const M&, const R& r) { return metric(r.ht, &TensorMetrics::err_vs_floor); }},
      {"ht_nan", [](const M&, const R& r) { return count(r.ht, &TensorMetrics::nan_count); }},
      {"ht_unwritten", [](const M&, const R& r) { return count(r.ht, &TensorMetrics::unwritten); }},
      {"ht_ref_overflow", [](const M&, const R& r) { return count(r.ht, &TensorMetrics::ref_overflow); }},
      {"conv_rel_l2", [](const M&, const R& r) { return metric(r.conv, &TensorMetrics::rel_l2); }},
    };
    // Per gradient of a backward pass: its bound, its error and its rounding floor.
    for (Grad g : kGrads) {
      const size_t i = size_t(g);
      const std::string name = grad_name(g);
      c.push_back({"tol_" + name, [i](const M&, const R& r) {
                     return r.grad[i].present ? num(r.tol.grad_rel_l2[i]) : std::string();
                   }});
      c.push_back({name + "_rel_l2",
                   [i](const M&, const R& r) { return metric(r.grad[i], &TensorMetrics::rel_l2); }});
      c.push_back({name + "_floor_rel_l2",
                   [i](const M&, const R& r) { return metric(r.grad[i], &TensorMetrics::floor_rel_l2); }});
    }
    c.insert(c.end(), {
      {"deterministic", [](const M&, const R& r) { return r.deterministic; }},
      {"samples", [](const M&, const R& r) { return r.timing ? std::to_string(r.timing->samples) : ""; }},
      {"time_median_ms", [](const M&, const R& r) { return timing(r, &TimingStats::median_ms); }},
      {"time_min_ms", [](const M&, const R& r) { return timing(r, &TimingStats::min_ms); }},
      {"time_p20_ms", [](const M&, const R& r) { return timing(r, &TimingStats::p20_ms); }},
      {"time_p80_ms", [](const M&, const R& r) { return timing(r, &TimingStats::p80_ms); }},
      {"time_cv", [](const M&, const R& r) { return timing(r, &TimingStats::cv); }},
      {"time_noisy", [](const M&, const R& r) {
         return r.timing ? std::string(timing_noisy(r.timing->cv) ? "yes" : "no") : std::string();
       }},
      {"timer", [](const M&, const R& r) { return r.timing ? r.timing->timer : std::string(); }},
      {"l2_flush", [](const M&, const R& r) { return r.timing ? r.timing->l2_flush : std::string(); }},
      {"flops", [](const M&, const R& r) { return num(r.flops); }},
      {"min_bytes", [](const M&, const R& r) { return num(r.bytes); }},
      {"tflops", [](const M&, const R& r) {
         return r.timing && r.timing->median_ms > 0 ? num(r.flops / (r.timing->median_ms * 1e9)) : "";
       }},
      {"gbps", [](const M&, const R& r) {
         return r.timing && r.timing->median_ms > 0 ? num(r.bytes / (r.timing->median_ms * 1e6)) : "";
       }},
      {"ceiling_gbps", [](const M&, const R& r) { return r.ceiling_gbps > 0 ? num(r.ceiling_gbps) : ""; }},
      {"ceiling_tflops", [](const M&, const R& r) { return r.ceiling_tflops > 0 ? num(r.ceiling_tflops) : ""; }},
      {"frac_bw", [](const M&, const R& r) {
         return r.timing && r.ceiling_gbps > 0 ? num(r.bytes / (r.timing->median_ms * 1e6) / r.ceiling_gbps) : "";
       }},
      {"frac_flops", [](const M&, const R& r) {
         return r.timing && r.ceiling_tflops > 0 ? num(r.flops / (r.timing->median_ms * 1e9) / r.ceiling_tflops) : "";
       }},
      {"peak_device_bytes", [](const M&, const R& r) {
         return r.peak_device_bytes > 0 ? std::to_string(r.peak_device_bytes) : "";
       }},
    });
    return c;
  }();
  return cols;
}

}  // namespace

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<std::string> csv_columns() {
  std::vector<std::string> names;
  for (const Column& c : columns()) names.push_back(c.name);
  return names;
}

std::string csv_header_line() { return csv_line(csv_columns()); }

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csv_escape(fields[i]);
  return line + "\n";
}

std::string csv_row_line(const RunMeta& meta, const ResultRow& row) { return csv_line(csv_row_fields(meta, row)); }

std::vector<std::string> csv_row_fields(const RunMeta& meta, const ResultRow& row) {
  std::vector<std::string> fields;
  for (const Column& c : columns()) fields.push_back(c.value(meta, row));
  return fields;
}

CsvWriter::CsvWriter(std::string path, RunMeta meta)
    : CsvWriter(std::move(path), std::move(meta), csv_header_line()) {}

CsvWriter::CsvWriter(std::string path, RunMeta meta, std::string existing)
    : CsvWriter(OutputFile(std::move(path)), std::move(meta), std::move(existing)) {}

CsvWriter::CsvWriter(OutputFile file, RunMeta meta, std::string existing)
    : file_(std::move(file)), meta_(std::move(meta)), contents_(std::move(existing)) {
  if (contents_.empty()) contents_ = csv_header_line();
  if (contents_.back() != '\n') contents_ += '\n';
  flush_to_disk();
}

void CsvWriter::append(const ResultRow& row) {
  contents_ += csv_row_line(meta_, row);
  flush_to_disk();
}

void CsvWriter::flush_to_disk() { file_.replace(contents_); }

void CsvWriter::check_appendable(const std::string& text) {
  if (text.empty() || text.back() != '\n') throw std::runtime_error("it does not end with a line end (cut short?)");
  const std::vector<std::vector<std::string>> records = parse_csv_text(text);
  if (records.empty() || records.front() != csv_columns())
    throw std::runtime_error(fmt::format("it does not have the CSV header of schema v{} that this gdnbench writes",
                                         kCsvSchemaVersion));
  const std::vector<std::string>& header = records.front();
  const size_t version = size_t(std::find(header.begin(), header.end(), "schema_version") - header.begin());
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != header.size())
      throw std::runtime_error(fmt::format("row {} has {} fields, the header {}", r, records[r].size(), header.size()));
    if (version < header.size() && records[r][version] != std::to_string(kCsvSchemaVersion))
      throw std::runtime_error(fmt::format("row {} has schema_version '{}', not {}", r, records[r][version],
                                           kCsvSchemaVersion));
  }
}
