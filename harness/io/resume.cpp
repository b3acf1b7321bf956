#include "harness/io/resume.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/io/csv.h"
#include "harness/io/csv_read.h"

namespace {

const std::vector<std::string>& key_columns() {
  static const std::vector<std::string> names = {"variant", "dtype", "B", "T", "seqlens", "context", "H", "HV", "K", "V", "frontend",
                                                 "chunk", "gate", "delta", "h0", "gate_dist",
                                                 "beta_dist", "distributions", "scale", "seed", "plan_forced",
                                                 "pass", "dht"};
  return names;
}

// Positions of the key columns in the schema's column order.
const std::vector<size_t>& key_indices() {
  static const std::vector<size_t> idx = [] {
    const std::vector<std::string> cols = csv_columns();
    std::vector<size_t> out;
    for (const std::string& k : key_columns())
      for (size_t i = 0; i < cols.size(); ++i)
        if (cols[i] == k) out.push_back(i);
    return out;
  }();
  return idx;
}

size_t column_index(const char* name) {
  const std::vector<std::string> cols = csv_columns();
  for (size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == name) return i;
  return cols.size();
}

std::string join_key(const std::vector<std::string>& fields) {
  std::string key;
  for (size_t i : key_indices()) key += fields[i] + '\x1f';  // unit separator: never in a field we write
  return key;
}

// The records of the CSV text (harness/io/csv_read.h), a quote left open being the user's problem.
std::vector<std::vector<std::string>> parse_records(const std::string& text, const std::string& path) {
  try {
    return parse_csv_text(text);
  } catch (const std::runtime_error&) {
    throw UsageError(fmt::format("--resume: '{}' ends inside a quoted field", path));
  }
}

// The records of a CSV whose header is this schema's or an older one of the same version, every
// record as wide as this header. The schema adds columns without a new version (reports/SCHEMA.md),
// so a header that is this one less some columns, in this order, and keeps every column resume
// reads, is an earlier v1 file: its records are widened (the new columns empty, "not applicable")
// and `contents` rewritten to match, so the rows appended next line up with the kept ones. Any
// other header, or a record of another width than its header, is a usage error.
std::vector<std::vector<std::string>> records_at_this_header(std::vector<std::vector<std::string>> records,
                                                             const std::string& path, std::string& contents) {
  const std::vector<std::string> cols = csv_columns();
  const auto refuse = [&] {
    return UsageError(fmt::format("--resume: '{}' does not have the CSV header of schema v{} "
                                  "(write to a new --out, or move the file away)", path, kCsvSchemaVersion));
  };
  if (records.empty()) throw refuse();
  const std::vector<std::string> header = records[0];  // a copy: records[0] is replaced below
  for (size_t r = 1; r < records.size(); ++r)
    if (records[r].size() != header.size())
      throw UsageError(fmt::format("--resume: '{}' record {} has {} fields, the header {}", path, r,
                                   records[r].size(), header.size()));
  if (header == cols) return records;
  // Where each of the file's columns stands in this schema's order: strictly increasing, or refused.
  std::vector<size_t> at;
  size_t next = 0;
  for (const std::string& name : header) {
    while (next < cols.size() && cols[next] != name) ++next;
    if (next == cols.size()) throw refuse();
    at.push_back(next++);
  }
  for (const std::string& needed : key_columns())
    if (std::find(header.begin(), header.end(), needed) == header.end()) throw refuse();
  for (const char* needed : {"schema_version", "status", "tolerances", "tolerances_hash"})
    if (std::find(header.begin(), header.end(), needed) == header.end()) throw refuse();
  records[0] = cols;
  std::string text = csv_line(cols);
  for (size_t r = 1; r < records.size(); ++r) {
    std::vector<std::string> wide(cols.size());
    for (size_t i = 0; i < at.size(); ++i) wide[at[i]] = std::move(records[r][i]);
    text += csv_line(wide);
    records[r] = std::move(wide);
  }
  contents = std::move(text);
  return records;
}

}  // namespace

std::string resume_case_key(const Case& c) {
  ResultRow row;
  row.problem = c.problem;
  row.variant = c.variant->name;
  RunMeta meta;
  meta.seed = c.problem.seed;
  return join_key(csv_row_fields(meta, row));
}

ResumeState apply_resume(Invocation& inv) {
  std::ifstream f(inv.out_path, std::ios::binary);
  if (!f) return ResumeState{};  // no CSV yet: a fresh run
  std::ostringstream text;
  text << f.rdbuf();
  return apply_resume_text(inv, text.str(), inv.out_path);
}

ResumeState apply_resume_text(Invocation& inv, const std::string& contents, const std::string& path) {
  ResumeState st;
  st.contents = contents;
  if (st.contents.empty()) return st;

  const std::vector<std::vector<std::string>> records =
      records_at_this_header(parse_records(st.contents, path), path, st.contents);
  const size_t version_col = column_index("schema_version"), seed_col = column_index("seed"),
               status_col = column_index("status");
  std::set<std::string> done, seeds;
  for (size_t r = 1; r < records.size(); ++r) {
    const std::vector<std::string>& rec = records[r];
    if (rec[version_col] != std::to_string(kCsvSchemaVersion))
      throw UsageError(fmt::format("--resume: '{}' record {} has schema_version '{}', not {}", path,
                                   r, rec[version_col], kCsvSchemaVersion));
    done.insert(join_key(rec));
    seeds.insert(rec[seed_col]);
    ++st.kept_rows;
    if (rec[status_col] == "FAIL") ++st.kept_failed;
  }

  // One CSV, one contract: rows judged by other bounds would sit beside these as if alike.
  const std::string other = first_row_of_another_profile(
      CsvTable{path, records[0], {records.begin() + 1, records.end()}}, inv.tolerances.name(), inv.tolerances.hash());
  if (!other.empty())
    throw UsageError(fmt::format("--resume: '{}' {}, this run by {} {} (give the --tolerances of that run, or "
                                 "write to a new --out)",
                                 path, other, inv.tolerances.name(), inv.tolerances.hash()));

  if (!inv.seed_given && !seeds.empty()) {
    if (seeds.size() > 1)
      throw UsageError(fmt::format("--resume: '{}' holds rows of {} seeds; give --seed to say which "
                                   "to continue", path, seeds.size()));
    const std::string& s = *seeds.begin();
    try {
      size_t used = 0;
      inv.seed = std::stoull(s, &used);
      if (used != s.size() || s.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument(s);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--resume: '{}' has the seed '{}', not an integer", path, s));
    }
    for (Case& c : inv.cases) {
      c.problem.seed = inv.seed;
      resolve_packed(c.problem);  // a drawn packed batch follows the seed
    }
  }

  std::vector<Case> remaining;
  for (const Case& c : inv.cases) {
    if (done.count(resume_case_key(c))) ++st.skipped_cases;
    else remaining.push_back(c);
  }
  inv.cases = std::move(remaining);
  return st;
}
