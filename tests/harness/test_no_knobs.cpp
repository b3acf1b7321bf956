// No preprocessor knob of its own chooses a kernel, so a git sha names the code that ran.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/rng.h"
#include "harness/runner.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "kernels/common/dtype.h"
#include "tests/common/test_util.h"


TEST_CASE("no preprocessor knob chooses a kernel: the git_sha names the code that ran", "[harness][plans]") {
  // A kernel file that reads a macro of its own (#ifndef GDNBENCH_..., #if GDN_...) could build two
  // programs from one sha; plans (kernels/plans/launch_plans.h) and --plan choose kernels instead.
  namespace fs = std::filesystem;
  const std::regex knob(R"(^\s*#\s*(if|ifdef|ifndef|elif)\b.*\b(GDNBENCH|GDN)_[A-Z0-9_]+)");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(std::string(GDNBENCH_SOURCE_DIR) + "/kernels")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cu" && ext != ".cuh" && ext != ".h" && ext != ".cpp" && ext != ".inl") continue;
    ++files;
    std::ifstream in(entry.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      // GDNBENCH_MUTATION_HOOKS plants the CPU mutation check's bugs (never in the CLI's kernels).
      if (line.find("GDNBENCH_MUTATION_HOOKS") != std::string::npos) continue;
      INFO(entry.path().string() << ":" << line_no << ": " << line);
      CHECK_FALSE(std::regex_search(line, knob));
    }
  }
  CHECK(files > 10);
}
