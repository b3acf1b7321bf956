// Human-readable output: the registry (`gdnbench list`) and the result summary table.
#pragma once
#include <cstdio>
#include <vector>

#include "harness/result.h"
#include "harness/variant.h"

void print_registry(std::FILE* out);
// Every variant's launch plans (harness/plans.h): one line per (variant, stage, option) with the
// input dtypes the option takes.
void print_plans(std::FILE* out);
void print_result_table(std::FILE* out, const std::vector<ResultRow>& rows);
