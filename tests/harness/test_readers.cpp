// The readers of outside input through their text entry points (what tests/fuzz drives): each
// gives what its path version gives, and refuses bad input with its documented exception.
#include <catch2/catch.hpp>

#include <sstream>

#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/io/csv_read.h"
#include "harness/external.h"
#include "harness/io/npy.h"
#include "harness/analysis/report.h"
#include "harness/io/resume.h"
#include "tests/common/test_util.h"

namespace {

std::string npy_bytes(const std::string& header_dict, const std::string& data) {
  std::string h = header_dict;
  h.append((10 + h.size() + 1 + 63) / 64 * 64 - 10 - h.size() - 1, ' ');
  h += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += char(h.size() & 0xFF);
  out += char(h.size() >> 8);
  return out + h + data;
}

}  // namespace

TEST_CASE("read_npy from a stream reads what the path version reads", "[npy][readers]") {
  testutil::TempDir dir;
  const std::vector<double> x = {1.0, -2.5, 0.125, 3.0, 0.0, -0.0};
  for (NpyType t : {NpyType::f4, NpyType::f8, NpyType::f2, NpyType::bf16_u2}) {
    INFO(npy_descr(t));
    write_npy(dir.file("a.npy"), {2, 3}, x.data(), t);
    std::istringstream in(testutil::read_text(dir.file("a.npy")), std::ios::binary);
    const NpyArray s = read_npy(in, "a.npy"), f = read_npy(dir.file("a.npy"));
    CHECK(s.type == f.type);
    CHECK(s.shape == f.shape);
    CHECK(s.values == x);
    CHECK(f.values == x);
  }
}

TEST_CASE("read_npy refuses a shape its data does not hold before allocating", "[npy][readers]") {
  // 2^60 and 2^40 x 2^20 elements claimed, 8 bytes given: an NpyError, not a bad_alloc.
  for (const char* shape : {"(1152921504606846976,)", "(1099511627776, 1048576)", "(999999999999999, 999999999999999)"}) {
    INFO(shape);
    std::istringstream in(npy_bytes(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }",
                                    std::string(8, '\0')),
                          std::ios::binary);
    CHECK_THROWS_AS(read_npy(in, "big.npy"), NpyError);
  }
}

TEST_CASE("parse_dump_manifest: the manifest of gdnbench dump, errors worded as read_dump's", "[external][readers]") {
  testutil::TempDir dir;
  Problem p;
  p.shape = GdnShape{1, 3, 1, 2, 4, 4};
  p.use_h0 = true;
  dump_problem(p, dir.path());
  const std::string manifest = dir.file("manifest.json");
  const DumpManifest m = parse_dump_manifest(testutil::read_text(manifest), manifest);
  const DumpedProblem d = read_dump(dir.path());
  CHECK(m.problem.shape.HV == 2);
  CHECK(m.problem.distributions() == d.problem.distributions());
  CHECK(m.files.at("q") == "q.npy");
  CHECK(m.files.at("h0") == "h0.npy");
  CHECK(m.files.at("g") == (p.use_gate ? "g.npy" : ""));
  testutil::write_text(manifest, "{\n\"format\": 1,\n");
  CHECK_THROWS_WITH(read_dump(dir.path()), Catch::StartsWith("check: " + manifest + ": not valid JSON (" + manifest + "(3): "));
  CHECK_THROWS_WITH(parse_dump_manifest("{\n\"format\": 1,\n", "m.json"), Catch::StartsWith("check: m.json: not valid JSON (m.json(3): "));
  CHECK_THROWS_AS(parse_dump_manifest("[1, 2]", "m.json"), UsageError);
  // Found by fuzzing: the JSON parser recursed once per level and a deeply nested file overflowed
  // the stack. Now refused; brackets inside strings do not count.
  CHECK_THROWS_WITH(parse_dump_manifest(std::string(1000000, '['), "m.json"), Catch::Contains("nested deeper than"));
  CHECK_THROWS_WITH(parse_dump_manifest("{\"a\": " + std::string(100000, '{'), "m.json"), Catch::Contains("nested deeper than"));
  CHECK_THROWS_WITH(parse_dump_manifest("{\"format\": \"" + std::string(100000, '[') + "\"}", "m.json"),
                    Catch::Contains("not a gdnbench-dump"));
  CHECK_THROWS_AS(parse_dump_manifest("", "m.json"), UsageError);
}

TEST_CASE("parse_gdnbench_csv checks what read_gdnbench_csv checks", "[report][readers]") {
  testutil::TempDir dir;
  std::vector<std::string> row(csv_columns().size());
  row[0] = std::to_string(kCsvSchemaVersion);
  const std::string text = csv_header_line() + csv_line(row);
  testutil::write_text(dir.file("a.csv"), text);
  const CsvTable f = read_gdnbench_csv(dir.file("a.csv"), report_required_columns());
  const CsvTable t = parse_gdnbench_csv(text, dir.file("a.csv"), report_required_columns());
  CHECK(t.path == f.path);
  CHECK(t.header == f.header);
  CHECK(t.rows == f.rows);
  CHECK_THROWS_WITH(parse_gdnbench_csv("a,b\n", "x.csv", {}, "claims"), Catch::StartsWith("claims: x.csv: no schema_version"));
  CHECK_THROWS_AS(parse_gdnbench_csv("", "x.csv", {}), UsageError);
  CHECK_THROWS_AS(parse_gdnbench_csv("schema_version\n\"", "x.csv", {}), UsageError);
}

TEST_CASE("apply_resume_text resumes as apply_resume does", "[resume][readers]") {
  testutil::TempDir dir;
  Invocation inv = parse_invocation({"verify", "--variants", "cpu_recurrent", "--T", "2", "--H", "1", "--HV", "1", "--K", "4",
                                     "--V", "4", "--dtypes", "fp32", "--seed", "5", "--resume", "--out", dir.file("r.csv")},
                                    false);
  REQUIRE(inv.cases.size() == 1);
  ResultRow done;
  done.problem = inv.cases[0].problem;
  done.variant = inv.cases[0].variant->name;
  RunMeta meta;
  meta.seed = 5;
  meta.tolerances = inv.tolerances.name();
  meta.tolerances_hash = inv.tolerances.hash();
  const std::string text = csv_header_line() + csv_row_line(meta, done);
  testutil::write_text(dir.file("r.csv"), text);
  Invocation a = inv, b = inv;
  const ResumeState sf = apply_resume(a);
  const ResumeState st = apply_resume_text(b, text, dir.file("r.csv"));
  CHECK(sf.kept_rows == 1);
  CHECK(st.kept_rows == 1);
  CHECK(st.skipped_cases == 1);
  CHECK(st.contents == sf.contents);
  CHECK(b.cases.empty());
  Invocation c = inv;
  CHECK(apply_resume_text(c, "", "r.csv").kept_rows == 0);
  CHECK(c.cases.size() == 1);
  CHECK_THROWS_AS(apply_resume_text(c, "schema_version\n\"", "r.csv"), UsageError);
  CHECK_THROWS_AS(apply_resume_text(c, "a,b\n", "r.csv"), UsageError);
}
