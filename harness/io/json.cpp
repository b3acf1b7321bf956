#include "harness/io/json.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "harness/io/csv.h"

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) out += fmt::format("\\u{:04x}", unsigned(c));
    else out += char(c);
  }
  return out + "\"";
}

std::string json_value(const std::string& cell) {
  if (cell.empty()) return "null";
  // A number only when the whole cell is one, finite, and written as JSON writes numbers (no
  // leading '+', no hex, no "inf"): anything else keeps its text.
  const bool json_number_chars = cell.find_first_not_of("0123456789+-.eE") == std::string::npos &&
                                 cell[0] != '+' && cell[0] != '.' && cell.back() != '.';
  if (json_number_chars) {
    char* end = nullptr;
    const double x = std::strtod(cell.c_str(), &end);
    if (end == cell.c_str() + cell.size() && std::isfinite(x) &&
        !(cell.size() > 1 && cell[0] == '0' && cell[1] != '.' && cell[1] != 'e' && cell[1] != 'E') &&
        !(cell.size() > 2 && cell[0] == '-' && cell[1] == '0' && cell[2] != '.' && cell[2] != 'e' && cell[2] != 'E'))
      return cell;
  }
  return json_string(cell);
}

namespace {
// A seed is a uint64 (past a double's 53 bits) and a git sha or a profile's hash may be all digits:
// always text.
std::string field_value(const std::string& name, const std::string& cell) {
  return name == "seed" || name == "git_sha" || name == "tolerances_hash" ? json_string(cell) : json_value(cell);
}
}  // namespace

std::string results_json(const RunMeta& meta, const Environment& context, const std::vector<ResultRow>& rows) {
  std::string out = fmt::format("{{\n  \"format\": {},\n  \"schema_version\": {},\n  \"context\": {{\n",
                                json_string(kJsonFormat), kCsvSchemaVersion);
  Environment all = {{"run_id", meta.run_id}, {"timestamp", meta.timestamp}, {"git_sha", meta.git_sha},
                     {"host", meta.host},     {"device", meta.device},       {"command", meta.command},
                     {"suite", meta.suite},   {"seed", std::to_string(meta.seed)},
                     {"tolerances", meta.tolerances}, {"tolerances_hash", meta.tolerances_hash}};
  all.insert(all.end(), context.begin(), context.end());
  for (size_t i = 0; i < all.size(); ++i)
    out += fmt::format("    {}: {}{}\n", json_string(all[i].first),
                       field_value(all[i].first, all[i].second),
                       i + 1 < all.size() ? "," : "");
  out += "  },\n  \"rows\": [";
  const std::vector<std::string> columns = csv_columns();
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::vector<std::string> fields = csv_row_fields(meta, rows[r]);
    out += r ? ",\n    {" : "\n    {";
    for (size_t c = 0; c < columns.size() && c < fields.size(); ++c)
      out += fmt::format("{}{}: {}", c ? ", " : "", json_string(columns[c]),
                         field_value(columns[c], fields[c]));
    out += "}";
  }
  out += rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}
