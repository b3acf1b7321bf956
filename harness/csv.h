// CSV writer, schema v2 (reports/SCHEMA.md). Every row is written through a temporary file and a
// rename, so an interrupted run leaves a valid CSV of the finished cases.
#pragma once
#include <string>
#include <vector>

#include "harness/result.h"

constexpr int kCsvSchemaVersion = 2;
// The oldest schema the readers (report, claims, compare) still read: v1 lacks the plan column.
constexpr int kCsvOldestReadableSchema = 1;

std::vector<std::string> csv_columns();
std::string csv_header_line();
std::string csv_row_line(const RunMeta& meta, const ResultRow& row);
std::vector<std::string> csv_row_fields(const RunMeta& meta, const ResultRow& row);  // unescaped
std::string csv_escape(const std::string& field);
std::string csv_line(const std::vector<std::string>& fields);  // escaped, comma separated, \n-terminated

class CsvWriter {
 public:
  // Throws std::runtime_error when the path cannot be written.
  CsvWriter(std::string path, RunMeta meta);
  // Continues a CSV (--resume): `existing` is its text, header included, which is kept as it is
  // and rewritten with every appended row.
  CsvWriter(std::string path, RunMeta meta, std::string existing);
  void append(const ResultRow& row);
  const std::string& path() const { return path_; }

 private:
  void flush_to_disk() const;
  std::string path_;
  RunMeta meta_;
  std::string contents_;
};
