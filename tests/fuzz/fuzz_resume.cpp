// libFuzzer target: arbitrary bytes as the existing --out CSV of `gdnbench verify --resume`
// through apply_resume_text, against the cases of `verify --suite smoke` (parsed once), as if
// --seed were given and as if not. A UsageError is the expected answer to bad input; any
// other exception escapes and libFuzzer reports it as a crash, as it does sanitizer findings.
// Built by scripts/fuzz.sh (GDNBENCH_FUZZ=ON, clang), run from the repository root so the suite
// name resolves.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/io/cli.h"
#include "harness/io/resume.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Invocation base = parse_invocation({"verify", "--suite", "smoke", "--resume", "--out", "fuzz.csv"}, false);
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool seed_given : {false, true}) {
    Invocation inv = base;
    inv.seed_given = seed_given;
    try {
      const ResumeState st = apply_resume_text(inv, text, inv.out_path);
      // What the runner relies on: the cases left are some of those asked for, the counts add up.
      if (inv.cases.size() + st.skipped_cases != base.cases.size() || st.kept_failed > st.kept_rows) __builtin_trap();
      if (!text.empty() && st.contents.empty()) __builtin_trap();
    } catch (const UsageError&) {
    }
  }
  return 0;
}
