// libFuzzer target: arbitrary bytes as a gdnbench CSV through parse_gdnbench_csv, the reader of
// `gdnbench report` and `gdnbench claims` (parse_csv_text, then the header, width and
// schema_version checks), once with the columns each of them requires. A UsageError is the
// expected answer to bad input; any other exception escapes and libFuzzer reports it as a crash,
// as it does sanitizer findings. Built by scripts/fuzz.sh (GDNBENCH_FUZZ=ON, clang).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/analysis/claims.h"
#include "harness/io/cli.h"
#include "harness/io/csv_read.h"
#include "harness/analysis/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const std::vector<std::string>* required :
       {&report_required_columns(), &claims_required_columns(), static_cast<const std::vector<std::string>*>(nullptr)}) {
    try {
      const CsvTable t = parse_gdnbench_csv(text, "fuzz.csv", required ? *required : std::vector<std::string>{});
      if (t.column("schema_version") < 0) __builtin_trap();  // what the readers of the table rely on
      for (size_t i = 0; i < t.rows.size(); ++i) {
        if (t.rows[i].size() != t.header.size() || !csv_schema_readable(t.cell(i, "schema_version")))
          __builtin_trap();
        for (const std::string& name : t.header) (void)t.number(i, name);
      }
    } catch (const UsageError&) {
    }
  }
  return 0;
}
