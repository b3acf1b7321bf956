// The CSV writer (harness/io/csv.h) and its schema document, reports/SCHEMA.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/rng.h"
#include "harness/runner.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "kernels/common/dtype.h"
#include "tests/common/test_util.h"


// ---- CSV ----

namespace {

ResultRow sample_row(Status status) {
  ResultRow r;
  r.problem.shape = GdnShape{2, 300, 4, 8, 128, 96};
  r.problem.dtype = DType::bf16;
  r.problem.use_h0 = true;
  r.problem.seed = 7;
  r.variant = "cpu_chunked";
  r.family = "gdn";
  r.backend = "cpu";
  r.precision = "fp32_math";
  r.status = status;
  r.device = "CPU: Example, \"quoted\" model";
  if (status == Status::skipped) {
    r.reason = "chunk 48 not supported (16, 32, 64)";
  } else {
    r.o = compare_to_reference({1, 2}, {1, 2.5}, DType::bf16);
    r.ht = compare_to_reference({1, 2}, {1, 2}, DType::f32);
    r.tol = tolerance_for(Precision::fp32_math, DType::bf16);
    if (status == Status::fail) r.reason = "o rel_l2 0.2 > 0.0025; line\nbreak";
    TimingStats t;
    t.samples = 10;
    t.median_ms = 2.0;
    t.min_ms = 1.5;
    r.timing = t;
    r.ceiling_gbps = 1000.0;
    r.ceiling_tflops = 50.0;
  }
  r.flops = gdn_flops(r.problem);
  r.bytes = gdn_min_bytes(r.problem);
  return r;
}

RunMeta sample_meta() {
  RunMeta m;
  m.run_id = "2025-01-01T00:00:00Z-7";
  m.timestamp = "2025-01-01T00:00:00Z";
  m.git_sha = "abc123";
  m.host = "host,with,commas";
  m.device = "CPU";
  m.command = "verify";
  m.suite = "suites/x.ini";
  m.seed = 7;
  return m;
}

size_t column_index(const std::string& name) {
  const std::vector<std::string> cols = csv_columns();
  return size_t(std::find(cols.begin(), cols.end(), name) - cols.begin());
}

std::map<std::string, std::string> as_record(const std::vector<std::string>& header,
                                             const std::vector<std::string>& fields) {
  std::map<std::string, std::string> m;
  for (size_t i = 0; i < header.size() && i < fields.size(); ++i) m[header[i]] = fields[i];
  return m;
}

}  // namespace

TEST_CASE("csv_escape quotes what needs quoting", "[harness][csv]") {
  CHECK(csv_escape("plain") == "plain");
  CHECK(csv_escape("") == "");
  CHECK(csv_escape("a,b") == "\"a,b\"");
  CHECK(csv_escape("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_escape("two\nlines") == "\"two\nlines\"");
  CHECK(csv_escape("cr\r") == "\"cr\r\"");
  // Whatever the field, parsing the escaped form gives it back.
  for (const std::string f : {"a,b", "say \"hi\", ok", "x\ny", "\"", ",,"}) {
    const auto rows = testutil::parse_csv(csv_escape(f) + "\n");
    REQUIRE(rows.size() == 1);
    REQUIRE(rows[0].size() == 1);
    CHECK(rows[0][0] == f);
  }
}

TEST_CASE("CSV header and rows follow the column list", "[harness][csv]") {
  const std::vector<std::string> cols = csv_columns();
  REQUIRE(!cols.empty());
  CHECK(cols.front() == "schema_version");
  CHECK(std::set<std::string>(cols.begin(), cols.end()).size() == cols.size());  // unique
  std::string joined;
  for (const std::string& c : cols) joined += (joined.empty() ? "" : ",") + c;
  CHECK(csv_header_line() == joined + "\n");

  for (Status st : {Status::pass, Status::fail, Status::skipped}) {
    INFO("status " << status_name(st));
    const ResultRow row = sample_row(st);
    const auto parsed = testutil::parse_csv(csv_row_line(sample_meta(), row));
    REQUIRE(parsed.size() == 1);
    REQUIRE(parsed[0].size() == cols.size());
    auto rec = as_record(cols, parsed[0]);
    CHECK(rec["schema_version"] == std::to_string(kCsvSchemaVersion));
    CHECK(rec["status"] == status_name(st));
    CHECK(rec["host"] == "host,with,commas");
    CHECK(rec["device"] == row.device);
    CHECK(rec["reason"] == row.reason);
    CHECK(rec["variant"] == "cpu_chunked");
    CHECK(rec["dtype"] == "bf16");
    CHECK(rec["T"] == "300");
    CHECK(rec["HV"] == "8");
    CHECK(rec["h0"] == "on");
    CHECK(rec["seed"] == "7");
    CHECK(std::stod(rec["flops"]) == Approx(row.flops).epsilon(1e-5));
    if (st == Status::skipped) {
      // Not applicable: empty cells.
      for (const char* c : {"o_rel_l2", "o_unwritten", "ht_rel_l2", "tol_o", "samples",
                            "time_median_ms", "tflops", "gbps", "ceiling_gbps", "frac_bw",
                            "frac_flops", "peak_device_bytes"})
        CHECK(rec[c] == "");
    } else {
      CHECK(std::stod(rec["o_rel_l2"]) == Approx(row.o.rel_l2).epsilon(1e-5));
      CHECK(rec["o_worst_index"] == "1");
      CHECK(rec["o_unwritten"] == "0");
      CHECK(rec["samples"] == "10");
      CHECK(std::stod(rec["tflops"]) == Approx(row.flops / 2e9).epsilon(1e-5));
      CHECK(std::stod(rec["gbps"]) == Approx(row.bytes / 2e6).epsilon(1e-5));
      CHECK(std::stod(rec["frac_bw"]) == Approx(row.bytes / 2e6 / 1000.0).epsilon(1e-5));
      CHECK(std::stod(rec["frac_flops"]) == Approx(row.flops / 2e9 / 50.0).epsilon(1e-5));
      CHECK(rec["peak_device_bytes"] == "");  // a CPU row allocates no device memory
    }
  }
}

namespace {
// The first backticked cell of every table row of reports/SCHEMA.md.
std::vector<std::string> schema_doc_columns() {
  const std::string text = testutil::read_text(std::string(GDNBENCH_SOURCE_DIR) + "/reports/SCHEMA.md");
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|", 0) != 0) continue;
    const size_t end = line.find('|', 1);
    if (end == std::string::npos) continue;
    std::string cell = line.substr(1, end - 1);
    cell.erase(0, cell.find_first_not_of(" \t"));
    cell.erase(cell.find_last_not_of(" \t") + 1);
    if (cell.size() > 2 && cell.front() == '`' && cell.back() == '`')
      names.push_back(cell.substr(1, cell.size() - 2));
  }
  return names;
}
}  // namespace

TEST_CASE("reports/SCHEMA.md documents exactly the CSV columns", "[harness][csv][schema]") {
  const std::vector<std::string> documented = schema_doc_columns();
  REQUIRE(!documented.empty());
  const std::vector<std::string> cols = csv_columns();
  const std::set<std::string> doc_set(documented.begin(), documented.end()), col_set(cols.begin(), cols.end());
  CHECK(doc_set.size() == documented.size());  // no column documented twice
  for (const std::string& c : cols) {
    INFO("CSV column " << c);
    CHECK(doc_set.count(c) == 1);
  }
  for (const std::string& d : documented) {
    INFO("SCHEMA.md row " << d);
    CHECK(col_set.count(d) == 1);
  }
  const std::string text = testutil::read_text(std::string(GDNBENCH_SOURCE_DIR) + "/reports/SCHEMA.md");
  CHECK(text.find("v" + std::to_string(kCsvSchemaVersion)) != std::string::npos);
}

TEST_CASE("CsvWriter leaves a valid CSV after every append", "[harness][csv]") {
  testutil::TempDir dir;
  const std::string path = dir.file("out.csv");
  CsvWriter w(path, sample_meta());
  CHECK(w.path() == path);
  CHECK(testutil::read_text(path) == csv_header_line());
  const size_t ncols = csv_columns().size();
  const Status order[] = {Status::pass, Status::fail, Status::skipped, Status::pass};
  for (size_t n = 0; n < 4; ++n) {
    w.append(sample_row(order[n]));
    const auto rows = testutil::parse_csv(testutil::read_text(path));
    REQUIRE(rows.size() == n + 2);
    for (const auto& r : rows) CHECK(r.size() == ncols);
    CHECK(rows[n + 1][column_index("status")] == status_name(order[n]));
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));  // renamed into place
  }
  CHECK_THROWS_AS(CsvWriter(dir.file("no/such/dir/x.csv"), sample_meta()), std::runtime_error);
}
