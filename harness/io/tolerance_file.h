// --tolerances: a tolerance profile (harness/tolerance.h) read from a file that mirrors the built-in
// table, one line per (precision, dtype) it changes:
//
//     # comment (from '#' to the end of the line); blank lines are skipped
//     tensor_core  bf16  o=3x_floor  hT=4e-3
//     tensor_core  fp16  o=3x_floor
//
// The words: a precision class (fp32_math, tensor_core, tensor_core_split, tensor_core_frontend,
// bf16_state), a dtype (fp32, bf16, fp16), then o=BOUND and/or hT=BOUND, and the backward's gradients dq=, dk=, dv=,
// dg=, dbeta=, dh0= alike. A BOUND is a rel_l2 in (0, 1), or for o, dq, dk and dv (compared in the
// row's dtype) a multiple of each row's rounding floor, NUMBERx_floor with NUMBER >= kRoundingFloorFactor (less
// could never judge a row: every o bound is at least that many floors). An output a file does not
// name keeps the built-in bound; the rules of every profile stay (the float32 cancellation bound,
// the floor minimum). The profile is named after the file (its name without directory and
// extension) and identified by ToleranceProfile::hash(). Strict: an unknown word, a malformed or
// out-of-range bound, an entry given twice or a file with no entry is a UsageError naming the file
// and the line.
#pragma once
#include <string>

#include "harness/tolerance.h"

// `text` is the file at `path`. Throws UsageError as above.
ToleranceProfile parse_tolerance_text(const std::string& text, const std::string& path);
// What --tolerances names: "builtin" (the built-in table), a path, or a name NAME for
// tolerances/NAME.txt (in the working directory or the source tree). Throws UsageError when no such
// file can be read, or as parse_tolerance_text.
ToleranceProfile read_tolerance_profile(const std::string& name_or_path);
