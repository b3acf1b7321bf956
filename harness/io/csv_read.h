// Reading gdnbench CSVs back (schema v1 to v5, reports/SCHEMA.md): an RFC 4180 parser and a table whose
// columns are looked up by header name, as the schema asks.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

// RFC 4180: quoted fields may hold commas, doubled quotes, CR and LF; a trailing line end is not
// a row. Throws std::runtime_error on a quote left open at the end of the text.
std::vector<std::vector<std::string>> parse_csv_text(const std::string& text);

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as wide as the header

  // Index of column `name`, or -1.
  int column(const std::string& name) const;
  // Cell of row i in column `name`; "" when the column is absent.
  const std::string& cell(size_t i, const std::string& name) const;
  // The cell as a number; NaN when empty (the schema's "not applicable") or not a number.
  double number(size_t i, const std::string& name) const;
  // The distinct cells of column `name` ("" among them where rows leave it empty).
  std::set<std::string> distinct(const std::string& name) const;
};

// The pass of row i (fwd, bwd, fwdbwd): its `pass` cell, or fwd for a row of a schema before the
// column (v1 to v3 ran the forward only). Every reader asks this, so old and new rows match.
std::string row_pass(const CsvTable& t, size_t i);

// Whether row i is a packed batch (its `seqlens` cell; rows of a schema before v5 are not): the T of
// such a row is the total of several sequences, no point of a single sequence's T series.
bool row_packed(const CsvTable& t, size_t i);

// The tolerance profiles that judged the rows of `t`, "NAME HASH" each (" " for a row of a schema
// before the columns).
std::set<std::string> tolerance_profiles(const CsvTable& t);

// Where two CSVs were not made alike: the first of suite, device and tolerance profile whose
// distinct values differ between `a` and `b`, and those values (a profile as "NAME HASH", under the
// column "tolerances"). The profile counts only where both files record it (schema v3 on; an older
// file's profile is not known). What compare refuses and report does not compare.
struct SetupDifference {
  std::string column;
  std::set<std::string> a, b;
};
std::optional<SetupDifference> setup_difference(const CsvTable& a, const CsvTable& b);

// The first row of `t` judged by another tolerance profile than (name, hash), as "row N was judged
// by tolerances NAME HASH"; empty when every row was judged by that one. What --resume and check
// --csv refuse: one CSV, one contract.
std::string first_row_of_another_profile(const CsvTable& t, const std::string& name, const std::string& hash);

// Whether a row of this schema_version can be read (kCsvOldestReadableSchema .. kCsvSchemaVersion).
bool csv_schema_readable(const std::string& version);

// Reads a gdnbench CSV and checks that every row's schema_version is readable and that every column in
// `required` exists. Throws UsageError (harness/io/errors.h) with one line naming the file otherwise;
// the line starts with `command` (the sub-command that read it).
CsvTable read_gdnbench_csv(const std::string& path, const std::vector<std::string>& required,
                           const std::string& command = "report");
// The same checks on the text of such a CSV (what read_gdnbench_csv reads through); `path` names it.
CsvTable parse_gdnbench_csv(const std::string& text, const std::string& path,
                            const std::vector<std::string>& required, const std::string& command = "report");
