// Every committed suite parses and expands into cases, on a machine with and without a GPU.
#include <catch2/catch.hpp>

#include <filesystem>

#include "harness/cli.h"

TEST_CASE("every suite in suites/ parses and expands", "[cli][suites]") {
  namespace fs = std::filesystem;
  int suites = 0;
  for (const auto& entry : fs::directory_iterator(std::string(GDNBENCH_SOURCE_DIR) + "/suites")) {
    if (entry.path().extension() != ".ini") continue;
    ++suites;
    const std::string path = entry.path().string();
    INFO(path);
    for (bool gpu : {false, true}) {
      const Invocation inv = parse_invocation({"verify", "--suite", path, "--seed", "1"}, gpu);
      CHECK(inv.suite_path == path);
      // A GPU build may list no CUDA variant at all (built without nvcc): only the CPU side must
      // always yield cases.
      if (!gpu) CHECK_FALSE(inv.cases.empty());
      for (const Case& c : inv.cases) CHECK(c.problem.shape.HV % c.problem.shape.H == 0);
    }
  }
  CHECK(suites >= 6);
}
