// gdnbench: verify and time gated DeltaNet kernels against a float64 reference.
// Exit codes: 0 all checks passed, 1 a check failed, 2 usage error, 3 runtime error, 4 nothing
// verified (every case SKIPPED, without --allow-empty), 130 interrupted.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "harness/analysis/claims.h"
#include "harness/analysis/compare.h"
#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/external.h"
#include "harness/environment.h"
#include "harness/gpu_runtime.h"
#include "harness/io/json.h"
#include "harness/io/junit.h"
#include "harness/io/output_file.h"
#include "harness/analysis/report.h"
#include "harness/io/resume.h"
#include "harness/runner.h"
#include "harness/io/table.h"

#include "git_sha.h"  // generated at build time

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

// The --out CSV claimed before anything reads or writes it: refused (not a regular file) or in use
// (another run holds its lock): one line, exit 2, the file untouched. --resume reads it under the lock.
OutputFile claim_csv(const std::string& path) {
  try {
    return OutputFile(path, true);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--out: {}", e.what()));
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--out: cannot write '{}' ({})", path, e.what()));
  }
}

std::unique_ptr<CsvWriter> open_csv(OutputFile file, const RunMeta& meta, const std::string& existing) {
  const std::string path = file.path();
  try {
    return std::make_unique<CsvWriter>(std::move(file), meta, existing);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--out: {}", e.what()));
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--out: cannot write '{}' ({})", path, e.what()));
  }
}

int run_ceilings(const GpuInfo& gpu, const std::string& out_path, L2Flush l2_flush) {
  if (!gpu.available) throw std::runtime_error("ceilings need a CUDA device: " + gpu.why_not);
  // Claimed before measuring: a path that is refused or in use fails at once.
  std::optional<OutputFile> out;
  try {
    out.emplace(out_path, true);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--out: {}", e.what()));
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--out: cannot write '{}' ({})", out_path, e.what()));
  }
  TimingConfig cfg;
  cfg.min_samples = 20;
  cfg.l2_flush = l2_flush;
  const Ceilings c = measure_ceilings(cfg);
  struct Line {
    const char* what;
    double value;
    const char* unit;
    const TimingStats& t;
  };
  const Line lines[] = {{"copy", c.copy_gbps, "GB/s (read + write)", c.copy},
                        {"bf16_gemm", c.bf16_gemm_tflops, "TFLOP/s", c.bf16_gemm},
                        {"fp32_gemm", c.fp32_gemm_tflops, "TFLOP/s", c.fp32_gemm}};
  std::string csv = "device,what,value,unit,median_ms,min_ms,cv,samples,size,l2_flush\n";
  fmt::print("{} ({} SMs, L2 {} MiB)\n", gpu.name, gpu.sm_count, gpu.l2_bytes >> 20);
  for (const Line& l : lines) {
    const std::string size = std::string(l.what) == "copy" ? fmt::format("{} bytes", c.copy_bytes)
                                                           : fmt::format("{}^3", c.gemm_n);
    fmt::print("{:<10} {:>10.1f} {:<20} median {:.4f} ms, cv {:.3f}, {} samples, {}, L2 flush {}\n", l.what,
               l.value, l.unit, l.t.median_ms, l.t.cv, l.t.samples, size, l.t.l2_flush);
    csv += fmt::format("{},{},{:.2f},{},{:.5f},{:.5f},{:.4f},{},{},{}\n", csv_escape(gpu.name), l.what,
                       l.value, l.unit, l.t.median_ms, l.t.min_ms, l.t.cv, l.t.samples, size, l.t.l2_flush);
  }
  try {
    out->replace(csv);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--out: cannot write '{}' ({})", out_path, e.what()));
  }
  fmt::print("wrote {}\n", out_path);
  return 0;
}

// The source's sha (GDNBENCH_GIT_SHA in the environment overrides the one built in). No build
// knob chooses a kernel (kernels/plans/launch_plans.h), so the sha names the code that ran.
std::string rows_git_sha() {
  const char* env_sha = std::getenv("GDNBENCH_GIT_SHA");
  return env_sha ? env_sha : GDNBENCH_GIT_SHA;
}

// The facts the plans read of this GPU, at the production shapes (tests/kernels/test_plans.cpp keeps the
// H200's).
void print_plan_device_facts(std::FILE* out) {
  Problem p;
  p.dtype = DType::bf16;
  for (int64_t K : {64, 128, 256}) {
    p.shape = GdnShape{1, 4096, 32, 32, K, 128};
    const PlanDevice d = plan_device_for("wy_ut", p);
    fmt::print(out, "device facts: sms {} wy_ut_scan_resident[K={}] {}\n", d.sms, K,
               d.wy_ut_scan_resident[K == 64 ? 0 : K == 128 ? 1 : 2]);
  }
  for (int64_t T : {1, 2, 8}) {
    p.shape = GdnShape{64, T, 32, 32, 128, 128};
    const PlanDevice d = plan_device_for("fused_decode_bf16state", p);
    fmt::print(out, "device facts: T {} K = V = 128 decode_fe_row_resident {} decode_stream_per_sm {}\n", T,
               d.decode_fe_row_resident, d.decode_stream_per_sm);
  }
}

int run_main(const std::vector<std::string>& args) {
  // `report` reads CSVs only: no GPU query, no case grid.
  if (!args.empty() && args[0] == "report") return run_report({args.begin() + 1, args.end()});
  // `claims` reads CSVs; `dump` and `check` exchange .npy files with external kernels (CPU only).
  if (!args.empty() && args[0] == "claims") return run_claims({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "compare") return run_compare({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "dump") return run_dump({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "check") {
    RunMeta meta;
    meta.timestamp = utc_timestamp();
    meta.git_sha = rows_git_sha();
    meta.host = host_name();
    return run_check({args.begin() + 1, args.end()}, meta);
  }
  const GpuInfo gpu = query_gpu();
  Invocation inv = parse_invocation(args, gpu.available);
  if (inv.command == "help") {
    fmt::print("{}", inv.help_text.empty() ? usage_text() : inv.help_text);
    return 0;
  }
  if (inv.command == "list") {
    if (!inv.list_plans) {
      print_registry(stdout);
      return 0;
    }
    print_plans(stdout);
    if (gpu.available) print_plan_device_facts(stdout);
    return 0;
  }

  if (inv.command == "ceilings") return run_ceilings(gpu, inv.out_path, inv.timing.l2_flush);

  RunOptions opt;
  opt.timed = inv.command == "run";
  opt.cpu_threads = inv.cpu_threads;
  opt.progress = inv.progress;
  opt.timing = inv.timing;
  opt.cpu_name = cpu_model_name();
  opt.gpu = gpu;
  opt.check_determinism = inv.check_determinism;
  opt.attention_ref = inv.attention_ref;
  opt.gdn_ref = inv.gdn_ref;
  opt.tolerances = inv.tolerances;

  // --resume settles the seed (the CSV's, without --seed) and drops the cases already written.
  OutputFile out_file = claim_csv(inv.out_path);
  const ResumeState resumed = inv.resume ? apply_resume_text(inv, out_file.read_existing(), inv.out_path) : ResumeState{};
  if (inv.resume)
    fmt::print("resume: {} keeps {} rows; {} cases already there, {} to run\n", inv.out_path,
               resumed.kept_rows, resumed.skipped_cases, inv.cases.size());

  RunMeta meta;
  meta.timestamp = utc_timestamp();
  meta.run_id = fmt::format("{}-{:x}", meta.timestamp, inv.seed);
  meta.git_sha = rows_git_sha();
  meta.host = host_name();
  meta.device = gpu.available ? gpu.name : opt.cpu_name;
  meta.command = inv.command;
  meta.suite = inv.suite_path;
  meta.seed = inv.seed;
  meta.tolerances = inv.tolerances.name();
  meta.tolerances_hash = inv.tolerances.hash();

  // --junit is claimed (checked and locked) before the first case, not refused after the last.
  std::optional<OutputFile> junit;
  if (!inv.junit_path.empty()) {
    try {
      junit.emplace(inv.junit_path, true);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("--junit: {}", e.what()));
    }
  }
  // --json likewise; its context is collected now, the load average again at the end.
  std::optional<OutputFile> json;
  Environment environment;
  if (!inv.json_path.empty()) {
    try {
      json.emplace(inv.json_path, true);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("--json: {}", e.what()));
    }
    environment = collect_environment(gpu, opt.cpu_name);
    std::string line = "gdnbench";
    for (const std::string& a : args) line += " " + a;
    environment.emplace_back("command_line", line);
    environment.emplace_back("load_average_start", load_average());
  }
  std::unique_ptr<CsvWriter> csv = open_csv(std::move(out_file), meta, resumed.contents);
  const bool any_gpu_case = std::any_of(inv.cases.begin(), inv.cases.end(), [](const Case& c) {
    return c.variant->backend == Backend::cuda;
  });
  if (opt.timed && gpu.available && any_gpu_case && inv.measure_ceilings) {
    TimingConfig quick = inv.timing;
    quick.min_samples = 5;
    quick.max_samples = 20;
    opt.ceilings = measure_ceilings(quick);
    fmt::print("ceilings: copy {:.0f} GB/s, bf16 GEMM {:.1f} TFLOP/s, fp32 GEMM {:.1f} TFLOP/s\n",
               opt.ceilings.copy_gbps, opt.ceilings.bf16_gemm_tflops, opt.ceilings.fp32_gemm_tflops);
  }
  fmt::print("gdnbench {} | suite {} | seed {} | tolerances {} {} | {} cases | {}\n", inv.command, inv.suite_path,
             inv.seed, meta.tolerances, meta.tolerances_hash, inv.cases.size(),
             gpu.available ? gpu.name : "no GPU (" + gpu.why_not + ")");
  install_interrupt_handlers();
  const RunSummary summary = execute_cases(inv.cases, opt, [&](const ResultRow& row) { csv->append(row); });
  print_result_table(stdout, summary.rows);
  fmt::print("{} passed, {} failed, {} skipped; wrote {}\n", summary.passed, summary.failed,
             summary.skipped, csv->path());
  if (junit) {
    try {
      write_junit(*junit, inv.suite_path, summary.rows);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("--junit: {}", e.what()));
    }
  }
  if (json) {
    environment.emplace_back("load_average_end", load_average());
    try {
      json->replace(results_json(meta, environment, summary.rows));
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("--json: cannot write '{}' ({})", inv.json_path, e.what()));
    }
  }
  if (summary.interrupted) {
    fmt::print(stderr, "gdnbench: interrupted; {} holds the {} finished cases\n", csv->path(),
               summary.rows.size() + resumed.kept_rows);
    return 130;
  }
  if (summary.failed > 0 || resumed.kept_failed > 0) return 1;
  // A GPU variant named explicitly on a machine without a usable GPU: its rows are SKIPPED with
  // the reason, and the run did not do what was asked, so it is a runtime error, not a pass.
  for (const Case& c : inv.cases)
    if (c.explicit_variant && c.variant->backend == Backend::cuda && !gpu.available) {
      fmt::print(stderr, "gdnbench: runtime error: variant {} needs a CUDA device ({}); its rows are SKIPPED\n",
                 c.variant->name, gpu.why_not);
      return 3;
    }
  // A run that verified nothing (every case SKIPPED, none kept by --resume) did not do its job.
  if (summary.passed == 0 && resumed.kept_rows == 0 && !inv.allow_empty) {
    const auto first = std::find_if(summary.rows.begin(), summary.rows.end(),
                                    [](const ResultRow& r) { return r.status == Status::skipped; });
    fmt::print(stderr, "gdnbench: nothing verified: all {} cases were SKIPPED{}; --allow-empty accepts that (exit 4)\n",
               summary.rows.size(), first == summary.rows.end() ? "" : " (the first: " + first->reason + ")");
    return 4;
  }
  return 0;
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
