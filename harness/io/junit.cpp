#include "harness/io/junit.h"

#include <stdexcept>

#include <fmt/format.h>

#include "harness/io/output_file.h"

namespace {
std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string case_name(const ResultRow& r) {
  const GdnShape& s = r.problem.shape;
  return fmt::format("{} B={} T={} H={} HV={} K={} V={} C={} gate={} delta={} h0={} g={} beta={}",
                     dtype_name(r.problem.dtype), s.B, s.T, s.H, s.HV, s.K, s.V, r.problem.chunk,
                     r.problem.use_gate ? "on" : "off", r.problem.use_delta ? "on" : "off",
                     r.problem.use_h0 ? "on" : "off", gate_dist_name(r.problem.gate_dist),
                     beta_dist_name(r.problem.beta_dist));
}
}  // namespace

std::string junit_xml(const std::string& suite_name, const std::vector<ResultRow>& rows) {
  int failures = 0, skipped = 0;
  for (const ResultRow& r : rows) {
    failures += r.status == Status::fail;
    skipped += r.status == Status::skipped;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                     xml_escape(suite_name), rows.size(), failures, skipped);
  for (const ResultRow& r : rows) {
    xml += fmt::format("  <testcase classname=\"gdnbench.{}\" name=\"{}\"", xml_escape(r.variant),
                       xml_escape(case_name(r)));
    if (r.status == Status::pass) {
      xml += "/>\n";
    } else if (r.status == Status::skipped) {
      xml += fmt::format("><skipped message=\"{}\"/></testcase>\n", xml_escape(r.reason));
    } else {
      xml += fmt::format("><failure message=\"{}\">o_rel_l2={} ht_rel_l2={}</failure></testcase>\n",
                         xml_escape(r.reason), r.o.rel_l2, r.ht.present ? r.ht.rel_l2 : 0.0);
    }
  }
  return xml + "</testsuite>\n";
}

void write_junit(OutputFile& out, const std::string& suite_name, const std::vector<ResultRow>& rows) {
  try {
    out.replace(junit_xml(suite_name, rows));
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("cannot write JUnit XML to '{}' ({})", out.path(), e.what()));
  }
}

void write_junit(const std::string& path, const std::string& suite_name, const std::vector<ResultRow>& rows) {
  OutputFile out(path);  // refused when not a regular file; locked; a temporary file and a rename
  write_junit(out, suite_name, rows);
}
