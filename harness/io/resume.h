// --resume: continue an interrupted or partial run. The rows of the existing --out CSV are kept,
// the cases they already hold are not run again, and the rest are appended to the same file.
// A case is identified by (variant, dtype, B, T, H, HV, K, V, chunk, gate, delta, h0, gate_dist,
// beta_dist, distributions, scale, seed, plan_forced, pass, dht), each formatted exactly as in the CSV. A CSV of this
// schema version written before a column was added is continued too (its rows widened).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "harness/io/cli.h"

struct ResumeState {
  std::string contents;  // the existing CSV, header included; empty when there is none
  size_t kept_rows = 0;
  size_t kept_failed = 0;  // FAIL rows among them: verify still exits 1 for them
  size_t skipped_cases = 0;  // cases of the invocation already in the CSV, not run again
};

// Reads inv.out_path (a missing or empty file: nothing to resume). Without --seed, the seed of
// the CSV replaces the invocation's fresh one so the remaining cases see the same inputs. Then
// removes from inv.cases those already present. Throws UsageError, naming the file, when the
// header is neither this schema's nor an earlier one of its version, a row is malformed, a row was
// judged by another tolerance profile (name or hash) than inv.tolerances, or the CSV holds several
// seeds and no --seed was given.
ResumeState apply_resume(Invocation& inv);
// The same on `contents`, the text of the CSV at `path` (what apply_resume reads through).
ResumeState apply_resume_text(Invocation& inv, const std::string& contents, const std::string& path);

// The identity of a case, comparable with resume_row_key of a CSV row.
std::string resume_case_key(const Case& c);
