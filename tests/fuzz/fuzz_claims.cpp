// libFuzzer target: arbitrary bytes as a claims file (claims/*.ini) through parse_claims, the
// reader of `gdnbench claims` and `gdnbench report --claims`. A UsageError is the expected answer
// to bad input; any other exception escapes and libFuzzer reports it as a crash, as it does
// sanitizer findings. Built by scripts/fuzz.sh (GDNBENCH_FUZZ=ON, clang).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "harness/analysis/claims.h"
#include "harness/io/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    for (const Claim& c : parse_claims(in, "fuzz.ini"))  // what the verdicts rely on
      if (c.id.empty() || c.checks.empty()) __builtin_trap();
  } catch (const UsageError&) {
  }
  return 0;
}
