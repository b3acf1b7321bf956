// The gate's reach of every kernel path's edges: for every plan option of every variant (the kernel
// a launcher runs), each edge of the problem that some problem taking that option can have (a
// partial chunk after full ones, T = 1, B > 1, grouped value heads, h0 on and off, V != K, K
// between buckets, a packed batch, ...) is run by a gate case that takes the option too, on the H200's facts. The probes
// are a grid of shapes around the chunk size and the K buckets; an edge no probe reaches with an
// option (fused_decode's T <= 8 has no chunk tail) is not asked of the gate, nor a front-end
// problem without h0 below 8 tokens, which the gate cannot judge.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/gpu_runtime.h"
#include "harness/io/cli.h"
#include "harness/plans.h"
#include "harness/skip.h"
#include "harness/variant.h"
#include "tests/kernels/plan_test_util.h"

namespace {

struct Edge {
  const char* name;
  std::function<bool(const Problem&)> holds;
};

// What a kernel's indexing gets wrong first. The chunk is 64 for every chunked GPU kernel.
const std::vector<Edge>& edges() {
  static const std::vector<Edge> e = {
      {"T = 1", [](const Problem& p) { return p.shape.T == 1; }},
      {"one partial chunk (1 < T < 64)", [](const Problem& p) { return p.shape.T > 1 && p.shape.T < 64; }},
      {"a partial chunk after full ones", [](const Problem& p) { return p.shape.T > 64 && p.shape.T % 64 != 0; }},
      {"whole chunks only", [](const Problem& p) { return p.shape.T >= 64 && p.shape.T % 64 == 0; }},
      {"four chunks or more", [](const Problem& p) { return p.shape.T > 3 * 64; }},
      {"B > 1", [](const Problem& p) { return p.shape.B > 1; }},
      {"grouped value heads (HV > H)", [](const Problem& p) { return p.shape.HV > p.shape.H; }},
      {"h0 on", [](const Problem& p) { return p.use_h0; }},
      {"h0 off", [](const Problem& p) { return !p.use_h0; }},
      {"V != K", [](const Problem& p) { return p.shape.V != p.shape.K; }},
      // A K bucket part-filled (K = 100 in the 128 instance), a block of value columns part-empty.
      {"K between buckets", [](const Problem& p) { return p.shape.K != 64 && p.shape.K != 128 && p.shape.K != 256; }},
      {"V no multiple of 32", [](const Problem& p) { return p.shape.V % 32 != 0; }},
      {"a packed batch", [](const Problem& p) { return p.packed(); }},
  };
  return e;
}

struct Key {
  std::string variant, option;
  size_t edge;
  bool operator<(const Key& o) const { return std::tie(variant, option, edge) < std::tie(o.variant, o.option, o.edge); }
};

// Every (variant, option, edge) the problems run on the H200's facts.
void collect(const Case& c, std::set<Key>& into) {
  // The gate's rule for the front end: without h0, o of fewer than 8 fresh tokens is a few q.k
  // products, where a relative bound on rounded q and k breaks down (docs/TOLERANCES.md).
  if (c.problem.frontend && !c.problem.use_h0 && c.problem.shape.T < 8) return;
  GpuInfo as_if_gpu;
  as_if_gpu.available = true;
  if (skip_reason(*c.variant, c.problem, as_if_gpu)) return;
  const VariantPlans* vp = find_variant_plans(c.variant->name);
  if (!vp) return;
  PlanLaunch launch;
  const PlanChoice choice = vp->choose(c.problem, plan_test::h200_facts(), launch);
  if (!choice.unsupported.empty()) return;
  for (const std::string& option : choice.options)
    for (size_t e = 0; e < edges().size(); ++e)
      if (edges()[e].holds(c.problem)) into.insert({c.variant->name, option, e});
}

// The probes: a grid around the chunk and the K buckets, under auto and every plan option forced,
// forward and backward, front end on and off, packed and not; each plan's grid expands apart.
void probe(std::set<Key>& into) {
  std::set<std::string> plans = {"auto"};  // each name once: several variants share some
  for (const VariantPlans& vp : variant_plans())
    for (const PlanStage& st : vp.stages())
      for (const PlanOption& o : st.options) plans.insert(o.name);
  const std::vector<std::vector<std::string>> grids = {
      {"--T", "1,2,8,63,64,65,128,300", "--B", "1,2", "--H", "2", "--HV", "2,4", "--K", "64,100,128,256",
       "--V", "40,64,96"},
      {"--seqlens", "1,63,64,65,200", "--H", "2", "--HV", "2,4", "--K", "64,100,128,256", "--V", "40,64,96"},
  };
  for (const std::string& plan : plans)
    for (const auto& grid : grids) {
      std::vector<std::string> args = {"verify", "--dtypes", "fp32,bf16,fp16", "--h0", "on,off", "--frontend", "on,off",
                                       "--pass", "fwd,bwd", "--plan", plan};
      args.insert(args.end(), grid.begin(), grid.end());
      for (const Case& c : parse_invocation(args, true).cases) collect(c, into);
    }
}

}  // namespace

TEST_CASE("the gate reaches every edge every plan option can meet", "[plans][gate][edges]") {
  if (!cuda_compiled()) {
    WARN("built without CUDA: the gate's CUDA cases are not expanded here (CI builds with nvcc)");
    return;
  }
  std::set<Key> possible, reached;
  probe(possible);
  for (const Case& c : plan_test::gate_cases()) collect(c, reached);
  std::ostringstream missing;
  int missed = 0;
  for (const Key& k : possible)
    if (!reached.count(k)) {
      ++missed;
      missing << "  " << k.variant << " " << k.option << ": " << edges()[k.edge].name << "\n";
    }
  INFO("edges no gate case reaches with the option:\n" << missing.str());
  CHECK(missed == 0);
  CHECK(possible.size() > 100);  // the probes reach the plans at all
}
