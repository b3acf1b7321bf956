// Every committed suite parses and expands into cases, on a machine with and without a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "harness/io/cli.h"

TEST_CASE("every suite in suites/ parses and expands", "[cli][suites]") {
  namespace fs = std::filesystem;
  int suites = 0;
  for (const auto& entry : fs::directory_iterator(std::string(GDNBENCH_SOURCE_DIR) + "/suites")) {
    if (entry.path().extension() != ".ini") continue;
    ++suites;
    const std::string path = entry.path().string();
    INFO(path);
    // suites/large.ini names GPU variants, which a build without CUDA does not have.
    const bool cuda_build = std::any_of(variant_registry().begin(), variant_registry().end(),
                                        [](const VariantInfo& v) { return v.backend == Backend::cuda; });
    if (!cuda_build && entry.path().filename() == "large.ini") continue;
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
