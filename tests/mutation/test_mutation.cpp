// The mutation check: each bug planted in the CPU kernels (kernels/cpu/cpu_mutation.h) must give the
// gate suite at least one FAIL row in every variant it is planted in, and the unmutated kernels
// must pass the same gate, so that a caught mutation means something. Built only into
// gdnbench_mutation_tests, which links gdn_kernels_cpu_mutable in place of gdn_kernels_cpu.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "harness/runner.h"
#include "kernels/cpu/cpu_mutation.h"
#include "tests/common/test_util.h"

namespace {

struct PlantedBug {
  CpuMutation mutation;
  const char* name;
  const char* variants;  // the variants it is planted in, as --variants takes them
  bool packed_only = false;  // a bug of packed batches: only the gate's --seqlens lines may fail
};

const char kBoth[] = "cpu_recurrent,cpu_chunked";
#define PLANTED_BUG(m, variants) \
  PlantedBug { CpuMutation::m, #m, variants }
#define PACKED_BUG(m, variants) \
  PlantedBug { CpuMutation::m, #m, variants, true }
const PlantedBug kPlantedBugs[] = {
    PLANTED_BUG(decay_after_delta, kBoth),
    PLANTED_BUG(h0_transposed, kBoth),
    PLANTED_BUG(no_beta, kBoth),
    PLANTED_BUG(gate_sign, kBoth),
    PLANTED_BUG(readout_before_update, kBoth),
    PLANTED_BUG(gva_head_interleaved, kBoth),
    PLANTED_BUG(g_ignores_batch, kBoth),
    PACKED_BUG(state_carried_across_sequences, "cpu_recurrent"),
    PACKED_BUG(chunks_on_packed_grid, "cpu_chunked"),
    PLANTED_BUG(state_in_dtype, kBoth),
    PLANTED_BUG(state_not_zeroed, kBoth),
    PLANTED_BUG(skip_tail_decay, "cpu_chunked"),
    PLANTED_BUG(drop_A_diagonal, "cpu_chunked"),
    PLANTED_BUG(chunk_off_by_one, "cpu_chunked"),
    PLANTED_BUG(tail_rows_leak, "cpu_chunked"),
    PLANTED_BUG(decay_ratio_underflow, "cpu_chunked"),
    PLANTED_BUG(A_rounded_bf16, "cpu_chunked"),
    // The backwards (the gate's --pass bwd and fwdbwd lines).
    PLANTED_BUG(bwd_decay_index, kBoth),
    PLANTED_BUG(bwd_drop_dht, kBoth),
    PLANTED_BUG(bwd_dbeta_no_residual, kBoth),
    PLANTED_BUG(bwd_dh0_not_propagated, kBoth),
    PLANTED_BUG(bwd_tail_cumsum_off_by_one, "cpu_chunked"),
};

// No planted bug is known to slip through the gate. state_not_zeroed did until the CPU runs
// poisoned their workspace with NaN before verifying (harness/cpu_variants.cpp), which no longer
// depends on how many heads each worker thread sees.

// Selects a mutation for the kernels for one scope; a failed REQUIRE cannot leave it set.
class MutationScope {
 public:
  explicit MutationScope(CpuMutation m) { set_cpu_mutation(m); }
  ~MutationScope() { set_cpu_mutation(CpuMutation::none); }
  MutationScope(const MutationScope&) = delete;
  MutationScope& operator=(const MutationScope&) = delete;
};

// The gate suite as it stands, less its long-sequence grid lines (a T above kMaxT; today
// T = 4096 and T = 65536 at K = V = 128): they would dominate a gate that runs once per
// mutation, and no planted bug needs a long sequence to show. The other lines keep every other
// axis of the gate, T = 1000 at K = V = 128 included. Front-end lines (--frontend on) go too:
// the CPU kernels take ready-made q, k, v, g, beta and are SKIPPED there; and the lines that force
// a GPU variant's launch plan (--plan): the CPU kernels have one plan each.
constexpr int64_t kMaxT = 1024;

bool has_long_sequence(const std::string& line) {
  std::istringstream in(line);
  for (std::string word; in >> word;)
    if (word == "--T" && in >> word)
      for (const int64_t T : parse_positive_list("T", word))
        if (T > kMaxT) return true;
  return false;
}

std::string write_reduced_gate(const testutil::TempDir& dir) {
  std::ifstream gate(std::string(GDNBENCH_SOURCE_DIR) + "/suites/gate.ini");
  REQUIRE(gate);
  std::string text;
  for (std::string line; std::getline(gate, line);)
    if (!has_long_sequence(line) && line.find("--frontend on") == std::string::npos &&
        line.find("--plan") == std::string::npos)
      text += line + "\n";
  const std::string path = dir.file("gate_reduced.ini");
  testutil::write_text(path, text);
  return path;
}

// One gate run over `variants` with mutation m selected. Both variants of a mutation share one
// invocation: execute_cases then builds the inputs and the float64 reference once per problem
// for the two of them; the FAIL rows are counted per variant. Two threads, fixed: the run time
// is meant for 2 cores, and whether state_not_zeroed shows depends on the thread count.
RunSummary run_gate(const std::string& suite, const std::string& variants, uint64_t seed,
                    CpuMutation m) {
  const Invocation inv = parse_invocation({"verify", "--suite", suite, "--variants", variants,
                                           "--seed", std::to_string(seed), "--threads", "2"},
                                          false);
  RunOptions opt;
  opt.cpu_threads = inv.cpu_threads;
  const MutationScope scope(m);
  RunSummary sum = execute_cases(inv.cases, opt, [](const ResultRow&) {});
  REQUIRE(sum.rows.size() == inv.cases.size());
  return sum;
}

int count_rows(const RunSummary& sum, const std::string& variant, Status status) {
  int n = 0;
  for (const ResultRow& r : sum.rows) n += r.variant == variant && r.status == status;
  return n;
}

// The seed must fit the --seed parser (a signed 64-bit integer).
uint64_t gate_seed() { return testutil::fresh_seed() >> 1; }

}  // namespace

TEST_CASE("mutation check: the unmutated kernels pass the reduced gate", "[mutation]") {
  const uint64_t seed = gate_seed();
  INFO("seed " << seed);
  testutil::TempDir dir;
  const RunSummary sum = run_gate(write_reduced_gate(dir), kBoth, seed, CpuMutation::none);
  for (const std::string& variant : split_list(kBoth)) {
    INFO("variant " << variant);
    CHECK(count_rows(sum, variant, Status::pass) > 0);
  }
  for (const ResultRow& r : sum.rows) {
    INFO(r.variant << " T=" << r.problem.shape.T << " K=" << r.problem.shape.K << " chunk="
                   << r.problem.chunk << ": " << r.reason);
    CHECK(r.status == Status::pass);
  }
}

TEST_CASE("mutation check: the gate fails every planted bug", "[mutation]") {
  const PlantedBug& bug = kPlantedBugs[GENERATE(range(size_t(0), std::size(kPlantedBugs)))];
  const uint64_t seed = gate_seed();
  INFO("mutation " << bug.name << ", seed " << seed);
  testutil::TempDir dir;
  const RunSummary sum = run_gate(write_reduced_gate(dir), bug.variants, seed, bug.mutation);
  for (const std::string& variant : split_list(bug.variants)) {
    INFO("variant " << variant);
    REQUIRE(count_rows(sum, variant, Status::pass) + count_rows(sum, variant, Status::fail) > 0);
    CHECK(count_rows(sum, variant, Status::fail) > 0);
  }
  // A packed-batch bug is invisible to a single sequence: the gate catches it by its packed lines
  // alone, which is what those lines are for, and by the split lines (--segments), whose passes
  // are packed runs of the segments.
  if (bug.packed_only)
    for (const ResultRow& r : sum.rows) {
      INFO(r.variant << " T=" << r.problem.shape.T << " seqlens=" << r.problem.seqlens << " segments="
                     << r.problem.segments << ": " << r.reason);
      CHECK((r.status != Status::fail || r.problem.packed() || r.problem.segments > 1));
    }
}

