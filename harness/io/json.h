// --json: a run's rows and the context they were measured in, one JSON document. The rows carry
// the CSV's columns under the same names (reports/SCHEMA.md), numbers as numbers, empty cells as
// null; the context holds the run's metadata and harness/environment.h's entries.
#pragma once
#include <string>
#include <vector>

#include "harness/environment.h"
#include "harness/result.h"

constexpr const char* kJsonFormat = "gdnbench-results";

std::string json_string(const std::string& s);  // quoted and escaped (RFC 8259)
// A CSV cell as a JSON value: a finite number as itself, "" as null, anything else a string.
std::string json_value(const std::string& cell);
std::string results_json(const RunMeta& meta, const Environment& context, const std::vector<ResultRow>& rows);
