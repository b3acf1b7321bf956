// --json: values typed as JSON, strings escaped, and the document a run writes: its context and one
// object per CSV row with the CSV's columns, read back by Python's json module.
#include <catch2/catch.hpp>

#include <string>

#include "harness/io/csv.h"
#include "harness/io/json.h"
#include "tests/common/test_util.h"

TEST_CASE("json values: numbers as numbers, empty as null, the rest as escaped strings", "[json]") {
  CHECK(json_value("") == "null");
  CHECK(json_value("1.5e-3") == "1.5e-3");
  CHECK(json_value("-2") == "-2");
  CHECK(json_value("0") == "0");
  CHECK(json_value("0.25") == "0.25");
  for (const char* text : {"007", "+1", "inf", "nan", "1.", ".5", "0x10", "PASS", "1e999"})
    CHECK(json_value(text) == json_string(text));
  CHECK(json_string("a\"b\\c\nd\x01") == "\"a\\\"b\\\\c\\nd\\u0001\"");
}

TEST_CASE("verify --json: the context and every row, as the CSV has them", "[json][cli]") {
  testutil::TempDir d;
  const std::string json = d.file("r.json"), csv = d.file("r.csv");
  const auto r = testutil::run_gdnbench("verify --variants cpu_recurrent,cpu_chunked --T 16,65 --H 1 --K 8 --V 8 "
                                        "--dtypes fp32 --seed 5 --no-progress --out '" + csv + "' --json '" + json + "'");
  REQUIRE(r.exit_code == 0);
  const auto rows = testutil::read_csv(csv);
  // Python checks the document's shape: it must parse, carry the context, and hold the CSV's rows.
  const std::string check = d.file("check.py");
  testutil::write_text(check, R"(import csv, json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "gdnbench-results" and doc["schema_version"] == int(sys.argv[3]), doc.keys()
ctx = doc["context"]
for k in ("git_sha", "command", "suite", "seed", "tolerances", "tolerances_hash", "cuda_compiled",
          "cuda_runtime_version", "gpu", "cpu", "cpu_threads", "command_line", "load_average_start", "load_average_end"):
    assert k in ctx, k
assert ctx["seed"] == "5" and ctx["command"] == "verify" and "--json" in ctx["command_line"]
assert ctx["tolerances"] == "builtin" and isinstance(ctx["tolerances_hash"], str) and len(ctx["tolerances_hash"]) == 16
table = list(csv.DictReader(open(sys.argv[2])))
assert len(doc["rows"]) == len(table) == 4, (len(doc["rows"]), len(table))
for j, c in zip(doc["rows"], table):
    assert list(j.keys()) == list(c.keys())
    assert j["status"] == c["status"] == "PASS"
    assert isinstance(j["T"], int) and j["T"] == int(c["T"])
    assert isinstance(j["o_rel_l2"], float) and abs(j["o_rel_l2"] - float(c["o_rel_l2"])) == 0
    assert j["time_median_ms"] is None and c["time_median_ms"] == ""
    assert j["tolerances_hash"] == c["tolerances_hash"] == ctx["tolerances_hash"]
print("ok")
)");
  const int rc = std::system(("/usr/bin/python3 '" + check + "' '" + json + "' '" + csv + "' " +
                              std::to_string(kCsvSchemaVersion) + " > '" + d.file("py.out") +
                              "' 2>&1").c_str());
  INFO(testutil::read_text(d.file("py.out")));
  CHECK(rc == 0);
  CHECK(rows.rows.size() == 4);
  // A --json that cannot be claimed is a usage error before any case runs.
  const auto bad = testutil::run_gdnbench("verify --variants cpu_recurrent --T 16 --H 1 --K 8 --V 8 --json '" +
                                          d.path() + "'");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--json"));
}
