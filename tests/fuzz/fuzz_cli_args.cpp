// libFuzzer target: arbitrary bytes split at NUL into argv tokens (what a shell can hand over)
// through parse_invocation(args, false). A UsageError is the expected answer to bad input; any
// other exception escapes and libFuzzer reports it as a crash, as it does sanitizer findings.
// Built by scripts/fuzz.sh (GDNBENCH_FUZZ=ON, clang), run from the repository root so suite
// names resolve.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/io/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string token;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(token);
      token.clear();
    } else {
      token += char(data[i]);
    }
  }
  if (!token.empty() || size == 0) args.push_back(token);
  // --suite reads the file it names: keep the fuzzer off special files that block or never end.
  for (const std::string& a : args)
    if (a.find("/proc") != std::string::npos || a.find("/sys") != std::string::npos ||
        a.find("/dev") != std::string::npos)
      return 0;
  try {
    const Invocation inv = parse_invocation(args, false);
    for (const Case& c : inv.cases)  // what the runner relies on
      if (!c.variant || c.problem.shape.HV % c.problem.shape.H != 0 || c.problem.chunk <= 0) __builtin_trap();
  } catch (const UsageError&) {
  }
  return 0;
}
