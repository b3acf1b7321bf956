// CSV writer, schema v5 (reports/SCHEMA.md). Every row is written through a temporary file and a
// rename (harness/io/output_file.h), so an interrupted run leaves a valid CSV of the finished cases.
#pragma once
#include <string>
#include <vector>

#include "harness/io/output_file.h"
#include "harness/result.h"

constexpr int kCsvSchemaVersion = 5;
// The oldest schema the readers (report, claims, compare) still read: v1 lacks the plan column, v1
// and v2 the tolerance profile, v1 to v3 the pass (every row of theirs is a forward), v1 to v4 the
// seqlens (every row of theirs is unpacked).
constexpr int kCsvOldestReadableSchema = 1;

std::vector<std::string> csv_columns();
std::string csv_header_line();
std::string csv_row_line(const RunMeta& meta, const ResultRow& row);
std::vector<std::string> csv_row_fields(const RunMeta& meta, const ResultRow& row);  // unescaped
std::string csv_escape(const std::string& field);
std::string csv_line(const std::vector<std::string>& fields);  // escaped, comma separated, \n-terminated

class CsvWriter {
 public:
  // Claims the path (OutputFile: refused when it is not a regular file, locked while the writer
  // lives) and writes the header. Throws UsageError (refused, in use) or std::runtime_error (cannot
  // be written).
  CsvWriter(std::string path, RunMeta meta);
  // Continues a CSV (--resume): `existing` is its text, header included, which is kept as it is
  // and rewritten with every appended row.
  CsvWriter(std::string path, RunMeta meta, std::string existing);
  // The same on a file already claimed (check --csv reads it under the lock first).
  CsvWriter(OutputFile file, RunMeta meta, std::string existing);
  void append(const ResultRow& row);
  const std::string& path() const { return file_.path(); }

  // Throws std::runtime_error saying why unless `text` is a whole CSV that rows of this gdnbench
  // can be appended to: this schema's header, every row as wide with schema_version
  // kCsvSchemaVersion, and a line end at the end (a file cut short has none).
  static void check_appendable(const std::string& text);

 private:
  void flush_to_disk();
  OutputFile file_;
  RunMeta meta_;
  std::string contents_;
};
