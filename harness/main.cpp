// gdnbench: verify and time gated DeltaNet kernels against a float64 reference.
// Exit codes: 0 all checks passed, 1 a check failed, 2 usage error, 3 runtime error.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "harness/cli.h"
#include "harness/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/runner.h"
#include "harness/table.h"

#ifndef GDNBENCH_GIT_SHA
#define GDNBENCH_GIT_SHA "unknown"
#endif

namespace {

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

std::unique_ptr<CsvWriter> open_csv(const std::string& path, const RunMeta& meta) {
  namespace fs = std::filesystem;
  try {
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    return std::make_unique<CsvWriter>(path, meta);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--out: cannot write '{}' ({})", path, e.what()));
  }
}

int run_main(const std::vector<std::string>& args) {
  const GpuInfo gpu = query_gpu();
  const Invocation inv = parse_invocation(args, gpu.available);
  if (inv.command == "help") {
    fmt::print("{}", usage_text());
    return 0;
  }
  if (inv.command == "list") {
    print_registry(stdout);
    return 0;
  }

  RunOptions opt;
  opt.timed = inv.command == "run";
  opt.cpu_threads = inv.cpu_threads;
  opt.progress = inv.progress;
  opt.timing = inv.timing;
  opt.cpu_name = cpu_model_name();
  opt.gpu = gpu;

  RunMeta meta;
  meta.timestamp = utc_timestamp();
  meta.run_id = fmt::format("{}-{:x}", meta.timestamp, inv.seed);
  const char* env_sha = std::getenv("GDNBENCH_GIT_SHA");
  meta.git_sha = env_sha ? env_sha : GDNBENCH_GIT_SHA;
  meta.host = host_name();
  meta.device = gpu.available ? gpu.name : opt.cpu_name;
  meta.command = inv.command;
  meta.suite = inv.suite_path;
  meta.seed = inv.seed;

  std::unique_ptr<CsvWriter> csv = open_csv(inv.out_path, meta);
  fmt::print("gdnbench {} | suite {} | seed {} | {} cases | {}\n", inv.command, inv.suite_path,
             inv.seed, inv.cases.size(), gpu.available ? gpu.name : "no GPU (" + gpu.why_not + ")");
  const RunSummary summary = execute_cases(inv.cases, opt, [&](const ResultRow& row) { csv->append(row); });
  print_result_table(stdout, summary.rows);
  fmt::print("{} passed, {} failed, {} skipped; wrote {}\n", summary.passed, summary.failed,
             summary.skipped, csv->path());
  return summary.failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    fmt::print(stderr, "gdnbench: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "gdnbench: runtime error: {}\n", e.what());
    return 3;
  }
}
