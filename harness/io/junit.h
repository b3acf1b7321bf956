// JUnit XML of a run's rows, for CI systems: one testcase per row; FAIL rows carry a <failure>,
// SKIPPED rows a <skipped> with the reason.
#pragma once
#include <string>
#include <vector>

#include "harness/result.h"

std::string junit_xml(const std::string& suite_name, const std::vector<ResultRow>& rows);
void write_junit(const std::string& path, const std::string& suite_name, const std::vector<ResultRow>& rows);
// To an output already claimed (harness/io/output_file.h): `run` and `verify` claim --junit before
// their first case, so a path that cannot be written is refused before any work.
class OutputFile;
void write_junit(OutputFile& out, const std::string& suite_name, const std::vector<ResultRow>& rows);
