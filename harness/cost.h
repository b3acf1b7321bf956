// The work of a case (docs/DESIGN.md section 4): its FLOPs and the minimum bytes it must move, the
// counts behind the CSV's flops, min_bytes, tflops, gbps and frac_* columns. The runner, the
// Google Benchmark front end and `check` (harness/external.cpp) all count with case_cost.
#pragma once
#include "harness/problem.h"
#include "harness/variant.h"

struct CaseCost {
  double flops = 0;
  double bytes = 0;  // minimum bytes read and written
};

// The family's FLOPs; the bytes `min_bytes` counts (a variant's own, VariantInfo::min_bytes: a
// front-end problem, a bf16 state), or the family's when it is nullptr.
CaseCost case_cost(Family family, double (*min_bytes)(const Problem&), const Problem& p);
inline CaseCost case_cost(const VariantInfo& v, const Problem& p) { return case_cost(v.family, v.min_bytes, p); }

// The families' counts.
double gdn_flops(const Problem& p);
double gdn_min_bytes(const Problem& p);
double attention_flops(const Problem& p);
double attention_min_bytes(const Problem& p);
