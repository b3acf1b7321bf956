// Every committed suite parses and expands into cases, on a machine with and without a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

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

TEST_CASE("the scaling and claims suites time the training step of every variant with a backward", "[cli][suites]") {
  // linear_time_training (claims/gdn_claims.ini) fits fwdbwd time against T over the upper half of
  // each series' Ts at bf16, gate and delta on, h0 off: at least 6 Ts give it 3 points.
  for (const char* suite : {"scaling", "claims"}) {
    for (bool gpu : {false, true}) {
      INFO(suite << (gpu ? " as on a GPU machine" : " as on a CPU one"));
      const Invocation inv = parse_invocation({"verify", "--suite", suite, "--seed", "1"}, gpu);
      std::map<std::string, std::set<int64_t>> training_ts;
      for (const Case& c : inv.cases) {
        const Problem& p = c.problem;
        if (p.pass == Pass::fwdbwd && c.variant->has_backward && p.dtype == DType::bf16 && p.use_gate &&
            p.use_delta && !p.use_h0 && p.context == 0)
          training_ts[c.variant->name].insert(p.shape.T);
      }
      for (const VariantInfo& v : variant_registry()) {
        if (!v.has_backward || (v.backend == Backend::cuda) != gpu) continue;
        INFO(v.name);
        CHECK(training_ts[v.name].size() >= 6);
      }
    }
  }
}
