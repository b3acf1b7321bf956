// gdnbench_bench: a Google Benchmark front end over the same registry and timing engine, so
// --benchmark_filter, --benchmark_format and --benchmark_out work as users expect. Each variant is
// verified against the float64 reference before its first timed iteration; a failing variant is
// reported as an error, never timed. Iteration time is manual: one L2-flushed event-timed
// sample (GPU) or one host-timed run (CPU) per iteration.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <thread>

#include "harness/cost.h"
#include "harness/gpu_runtime.h"
#include "harness/runner.h"
#include "harness/skip.h"

namespace {

void bench_case(benchmark::State& state, const VariantInfo* variant, Problem problem) {
  RunOptions opt;
  opt.cpu_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  opt.gpu = query_gpu();
  opt.cpu_name = cpu_model_name();
  const HostInputs inputs = make_inputs(problem);
  const ResultRow verdict = verify_single_case(Case{problem, variant, true}, opt, inputs);
  if (verdict.status != Status::pass) {
    state.SkipWithError((std::string(status_name(verdict.status)) + ": " + verdict.reason).c_str());
    return;
  }
  RunContext ctx;
  ctx.cpu_threads = opt.cpu_threads;
  std::unique_ptr<VariantRun> run = variant->create(problem, inputs, ctx);
  TimingConfig one;
  one.warmup = 0;
  one.min_samples = one.max_samples = 1;
  for (int i = 0; i < 2; ++i) run->launch();  // warm-up
  run->synchronize();
  for (auto _ : state) {
    const TimingStats t = variant->backend == Backend::cuda ? time_gpu_run(*run, one) : time_cpu_run(*run, one);
    state.SetIterationTime(t.median_ms * 1e-3);
  }
  const CaseCost cost = case_cost(*variant, problem);
  state.counters["TFLOP"] = benchmark::Counter(cost.flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB"] = benchmark::Counter(cost.bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  const GpuInfo gpu_info = query_gpu();
  const bool gpu = gpu_info.available;
  // GPU: the production head size over T; CPU: a small shape so the front end runs anywhere.
  const std::vector<int64_t> Ts = gpu ? std::vector<int64_t>{1024, 4096, 16384} : std::vector<int64_t>{256, 1024};
  const GdnShape base = gpu ? GdnShape{1, 0, 32, 32, 128, 128} : GdnShape{1, 0, 2, 2, 64, 64};
  std::vector<std::string> registered;  // variants with at least one benchmark here
  for (const VariantInfo& v : variant_registry()) {
    if ((v.backend == Backend::cuda) != gpu) continue;
    for (DType dt : {DType::bf16, DType::f32})
      for (int64_t T : Ts) {
        Problem p;
        p.shape = base;
        p.shape.T = T;
        p.dtype = dt;
        p.seed = 0x5EED;
        if (skip_reason(v, p, gpu_info)) continue;
        benchmark::RegisterBenchmark(fmt::format("{}/{}/B{}_T{}_H{}_K{}_V{}", v.name, dtype_name(dt),
                                                 p.shape.B, T, p.shape.H, p.shape.K, p.shape.V).c_str(),
                                     bench_case, &v, p)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
        if (registered.empty() || registered.back() != v.name) registered.push_back(v.name);
      }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  const size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Nothing ran (a filter that matches no benchmark of this machine): say so and fail, as verify's
  // exit 4 does, rather than exit 0 on an empty run.
  if (ran == 0) {
    std::string names;
    for (const std::string& n : registered) names += (names.empty() ? "" : ", ") + n;
    fmt::print(stderr, "gdnbench_bench: no benchmark ran; this machine ({}) has benchmarks of {}\n",
               gpu ? gpu_info.name : std::string("no GPU"), names.empty() ? std::string("no variant") : names);
    return 4;
  }
  return 0;
}
