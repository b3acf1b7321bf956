// libFuzzer target: arbitrary bytes as a suite file (an option file with grid lines) through
// parse_invocation_with_suite, the path `gdnbench verify --suite FILE` takes. A UsageError is the
// expected answer to bad input; any other exception escapes and libFuzzer reports it as a crash,
// as it does sanitizer findings. Built by scripts/fuzz.sh (GDNBENCH_FUZZ=ON, clang).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "harness/io/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream suite(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const Invocation inv = parse_invocation_with_suite({"verify"}, false, suite, "fuzz.ini");
    for (const Case& c : inv.cases)  // what the runner relies on
      if (!c.variant || c.problem.shape.HV % c.problem.shape.H != 0 || c.problem.chunk <= 0) __builtin_trap();
  } catch (const UsageError&) {
  }
  return 0;
}
