#include "harness/io/csv_read.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/io/errors.h"
#include "harness/io/csv.h"

std::vector<std::vector<std::string>> parse_csv_text(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  bool pending = false;  // a row has started (some character since the last line end)
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    pending = true;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      pending = false;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) throw std::runtime_error("a quoted field is not closed at the end of the file");
  if (pending) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

int CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return int(i);
  return -1;
}

const std::string& CsvTable::cell(size_t i, const std::string& name) const {
  static const std::string empty;
  const int c = column(name);
  return c < 0 ? empty : rows.at(i)[size_t(c)];
}

double CsvTable::number(size_t i, const std::string& name) const {
  const std::string& s = cell(i, name);
  if (s.empty()) return NAN;
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? x : NAN;
}

bool csv_schema_readable(const std::string& version) {
  for (int v = kCsvOldestReadableSchema; v <= kCsvSchemaVersion; ++v)
    if (version == std::to_string(v)) return true;
  return false;
}

CsvTable read_gdnbench_csv(const std::string& path, const std::vector<std::string>& required,
                           const std::string& command) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("{}: cannot read '{}'", command, path));
  std::ostringstream s;
  s << f.rdbuf();
  return parse_gdnbench_csv(s.str(), path, required, command);
}

CsvTable parse_gdnbench_csv(const std::string& text, const std::string& path,
                            const std::vector<std::string>& required, const std::string& command) {
  std::vector<std::vector<std::string>> lines;
  try {
    lines = parse_csv_text(text);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: {}: {}", command, path, e.what()));
  }
  if (lines.empty()) throw UsageError(fmt::format("{}: {}: empty file, no CSV header", command, path));
  CsvTable t;
  t.path = path;
  t.header = std::move(lines[0]);
  if (t.column("schema_version") < 0)
    throw UsageError(fmt::format("{}: {}: no schema_version column; not a gdnbench CSV", command, path));
  for (const std::string& name : required)
    if (t.column(name) < 0)
      throw UsageError(fmt::format("{}: {}: column '{}' missing (schema v{} has it)", command, path, name,
                                   kCsvSchemaVersion));
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].size() != t.header.size())
      throw UsageError(fmt::format("{}: {}: row {} has {} fields, the header {}", command, path, i + 1,
                                   lines[i].size(), t.header.size()));
    t.rows.push_back(std::move(lines[i]));
    const std::string& v = t.cell(t.rows.size() - 1, "schema_version");
    if (!csv_schema_readable(v))
      throw UsageError(fmt::format("{}: {}: row {} has schema_version '{}'; this gdnbench reads {} to {}",
                                   command, path, i + 1, v, kCsvOldestReadableSchema, kCsvSchemaVersion));
  }
  return t;
}

std::set<std::string> CsvTable::distinct(const std::string& name) const {
  std::set<std::string> out;
  for (size_t i = 0; i < rows.size(); ++i) out.insert(cell(i, name));
  return out;
}

std::string row_pass(const CsvTable& t, size_t i) {
  const std::string& pass = t.cell(i, "pass");
  return pass.empty() ? "fwd" : pass;
}

bool row_packed(const CsvTable& t, size_t i) { return !t.cell(i, "seqlens").empty(); }

std::set<std::string> tolerance_profiles(const CsvTable& t) {
  std::set<std::string> s;
  for (size_t i = 0; i < t.rows.size(); ++i) s.insert(t.cell(i, "tolerances") + " " + t.cell(i, "tolerances_hash"));
  return s;
}

std::optional<SetupDifference> setup_difference(const CsvTable& a, const CsvTable& b) {
  for (const char* column : {"suite", "device"}) {
    SetupDifference d{column, a.distinct(column), b.distinct(column)};
    if (d.a != d.b) return d;
  }
  if (a.column("tolerances_hash") < 0 || b.column("tolerances_hash") < 0) return std::nullopt;
  SetupDifference d{"tolerances", tolerance_profiles(a), tolerance_profiles(b)};
  if (d.a != d.b) return d;
  return std::nullopt;
}

std::string first_row_of_another_profile(const CsvTable& t, const std::string& name, const std::string& hash) {
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (t.cell(i, "tolerances") != name || t.cell(i, "tolerances_hash") != hash)
      return fmt::format("row {} was judged by tolerances {} {}", i + 1, t.cell(i, "tolerances"),
                         t.cell(i, "tolerances_hash"));
  return "";
}
