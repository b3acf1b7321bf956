// Helpers of the command-line tests: an invocation parsed as on a machine without CUDA, and a
// command line given a suite file.
#pragma once
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "tests/common/test_util.h"

namespace clitest {

inline Invocation parse(std::vector<std::string> args) { return parse_invocation(args, false); }

inline std::vector<std::string> with_suite(const testutil::SuiteFile& s, std::vector<std::string> args) {
  args.insert(args.begin() + 1, {"--suite", s.path});
  return args;
}

}  // namespace clitest
