#include "harness/runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/cost.h"
#include "harness/frontend_inputs.h"
#include "harness/progress.h"
#include "harness/segments.h"
#include "harness/skip.h"
#include "reference/attention_backward_reference.h"

namespace {

// What breaks the finiteness rules of a tensor (harness/metrics.h, docs/TOLERANCES.md).
std::string finite_problem(const char* what, const TensorMetrics& m, DType dtype) {
  std::string text = fmt::format("{}: {} non-finite, {} unwritten", what, m.nan_count, m.unwritten);
  if (m.overflow_mismatch > 0)
    text += fmt::format(", {} not inf where the reference overflows {}", m.overflow_mismatch, dtype_name(dtype));
  return text;
}

}  // namespace

std::vector<std::string> output_problems(const ResultRow& row, DType dtype) {
  std::vector<std::string> problems;
  const auto judge = [&](const char* what, const TensorMetrics& m, DType dt, double bound) {
    if (!m.present) return;
    const std::string thin = coverage_problem(what, m, dt);
    if (!thin.empty()) problems.push_back(thin);
    if (!m.finite_ok()) problems.push_back(finite_problem(what, m, dt));
    else if (!(m.rel_l2 <= bound)) problems.push_back(fmt::format("{} rel_l2 {:.3g} > {:.3g}", what, m.rel_l2, bound));
  };
  if (pass_has_forward(row.problem.pass)) {
    if (!row.o.present) problems.push_back("o: not compared");
    judge("o", row.o, dtype, row.tol.o_rel_l2);
    judge("hT", row.ht, DType::f32, row.tol.ht_rel_l2);
  }
  if (pass_has_backward(row.problem.pass)) {
    // A backward PASS rests on a gradient at least (a variant's returns every one; `check` those given).
    if (std::none_of(row.grad.begin(), row.grad.end(), [](const TensorMetrics& m) { return m.present; }))
      problems.push_back("gradients: not compared");
    for (Grad g : kGrads) {
      const double bound = row.tol.grad_rel_l2[size_t(g)];
      if (row.grad[size_t(g)].present && !(bound > 0))
        problems.push_back(fmt::format("{}: the tolerance profile has no bound for {} {}", grad_name(g),
                                       row.precision, dtype_name(dtype)));
      else
        judge(grad_name(g), row.grad[size_t(g)], grad_dtype(g, dtype), bound);
    }
  }
  return problems;
}

namespace {

// A second launch of a run that verified, on the same inputs with its outputs poisoned again:
// o and hT must equal the first launch's bit for bit (RunOptions::check_determinism).
void check_determinism(const VariantInfo& v, VariantRun& run, const RunOutputs& first, ResultRow& row) {
  if (!v.deterministic) {
    row.deterministic = "no";
    return;
  }
  run.poison_outputs();
  run.launch();
  run.synchronize();
  const RunOutputs second = run.read_outputs();
  int64_t differ = 0;
  size_t total = 0;
  // o and hT, the conv caches of front-end variants and the gradients of backward passes (each
  // empty where it does not apply).
  for (auto field : {&RunOutputs::o, &RunOutputs::hT, &RunOutputs::conv_cache, &RunOutputs::dq, &RunOutputs::dk,
                     &RunOutputs::dv, &RunOutputs::dg, &RunOutputs::dbeta, &RunOutputs::dh0}) {
    differ += count_bit_differences(first.*field, second.*field);
    total += std::max((first.*field).size(), (second.*field).size());
  }
  if (differ == 0) {
    row.deterministic = "yes";
    return;
  }
  row.status = Status::fail;
  row.reason = fmt::format("not deterministic: {} of {} elements differ", differ, total);
}

}  // namespace

namespace {
std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_handlers_installed{false};

void set_interrupt_action(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  // Both blocked while the handler runs: a second signal is taken only once the default is back.
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Async-signal-safe: an atomic store and sigaction. The default action from now on, so a second
// SIGINT or SIGTERM ends the process at once.
extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
  set_interrupt_action(SIG_DFL);
}

// After the cases: a signal now ends the process (the CSV is complete or was already cut short).
void restore_default_interrupt_actions() {
  if (g_handlers_installed.exchange(false)) set_interrupt_action(SIG_DFL);
}
}  // namespace

void install_interrupt_handlers() {
  set_reference_cancel_flag(&g_interrupted);  // the float64 references stop between time steps
  g_handlers_installed.store(true);
  set_interrupt_action(on_interrupt);
}

bool interrupt_requested() { return g_interrupted.load(); }

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return "CPU: " + line.substr(colon + 2);
    }
  return "CPU";
}

double cancellation_kappa(const GdnRefOutputs& ref) {
  double o2 = 0.0, a2 = 0.0;
  for (size_t i = 0; i < ref.o.size(); ++i) {
    o2 += ref.o[i] * ref.o[i];
    a2 += ref.o_abs[i] * ref.o_abs[i];
  }
  return o2 > 0.0 ? std::sqrt(a2 / o2) : 0.0;
}

void set_verdict(ResultRow& row, const std::vector<std::string>& problems) {
  row.status = problems.empty() ? Status::pass : Status::fail;
  for (const std::string& p : problems) row.reason += (row.reason.empty() ? "" : "; ") + p;
}

Tolerance forward_bounds(const ToleranceProfile& tolerances, Precision precision, DType dtype,
                         double o_floor_rel_l2, const GdnRefOutputs* gdn_ref) {
  const bool cancellation_applies = gdn_ref && dtype == DType::f32 && !gdn_ref->o_abs.empty();
  return tolerances.bounds(precision, dtype, o_floor_rel_l2, cancellation_applies ? cancellation_kappa(*gdn_ref) : NAN);
}

namespace {

const std::vector<float>& output_gradient(const RunOutputs& out, Grad g) {
  switch (g) {
    case Grad::dq: return out.dq;
    case Grad::dk: return out.dk;
    case Grad::dv: return out.dv;
    case Grad::dg: return out.dg;
    case Grad::dbeta: return out.dbeta;
    case Grad::dh0: return out.dh0;
  }
  throw std::logic_error("gradient outside kGrads");
}

}  // namespace

const std::vector<double>& reference_gradient(const GdnRefGradients& ref, Grad g) {
  switch (g) {
    case Grad::dq: return ref.dq;
    case Grad::dk: return ref.dk;
    case Grad::dv: return ref.dv;
    case Grad::dg: return ref.dg;
    case Grad::dbeta: return ref.dbeta;
    case Grad::dh0: return ref.dh0;
  }
  throw std::logic_error("gradient outside kGrads");
}

std::vector<int64_t> gradient_shape(Grad g, const GdnShape& s) {
  switch (g) {
    case Grad::dq:
    case Grad::dk: return {s.B, s.T, s.H, s.K};
    case Grad::dv: return {s.B, s.T, s.HV, s.V};
    case Grad::dg:
    case Grad::dbeta: return {s.B, s.T, s.HV};
    case Grad::dh0: return {s.sequences(), s.HV, s.K, s.V};
  }
  throw std::logic_error("gradient outside kGrads");
}

namespace {

// The heads of a sampled gradient reference as metrics' selection over g's layout: q/k heads for
// dq and dk, value heads for the rest (dh0 one row of K V per head).
HeadSelection gradient_heads(const GdnShape& s, Grad g, const GdnRefGradients& ref) {
  switch (g) {
    case Grad::dq:
    case Grad::dk: return HeadSelection{s.B, s.T, s.H, s.K, ref.qk_heads};
    case Grad::dv: return HeadSelection{s.B, s.T, s.HV, s.V, ref.heads};
    case Grad::dg:
    case Grad::dbeta: return HeadSelection{s.B, s.T, s.HV, 1, ref.heads};
    case Grad::dh0: return HeadSelection{s.B, 1, s.HV, s.K * s.V, ref.heads};
  }
  return {};
}

}  // namespace

void compare_gradient(ResultRow& row, Grad g, const std::vector<float>& got, const GdnRefGradients& ref,
                      Precision precision, const ToleranceProfile& tolerances, std::vector<std::string>& problems) {
  const std::vector<double>& want = reference_gradient(ref, g);
  TensorMetrics& m = row.grad[size_t(g)];
  m = TensorMetrics{};
  const GdnShape& s = row.problem.shape;
  const bool sampled = !ref.heads.empty();
  // The elements a full reference of g would hold: want's size unless sampled.
  size_t expected = want.size();
  if (sampled && !want.empty()) {
    expected = 1;
    for (int64_t d : gradient_shape(g, s)) expected *= size_t(d);
  }
  if (got.size() != expected)
    problems.push_back(fmt::format("{}: {} elements returned, {} expected", grad_name(g), got.size(), expected));
  else if (!want.empty() && !sampled)
    m = compare_to_reference(got, want, grad_dtype(g, row.problem.dtype));
  else if (!want.empty())
    m = compare_to_reference(got, want, grad_dtype(g, row.problem.dtype), gradient_heads(s, g, ref));
  row.tol.grad_rel_l2[size_t(g)] =
      tolerances.grad_bound_at(precision, row.problem.dtype, g, m.present ? m.floor_rel_l2 : NAN);
}

ResultRow run_case(const Case& c, const HostInputs& inputs, const GdnRefOutputs& gdn_ref,
                   const AttentionRef& attention_ref, const RunOptions& opt, const GdnRefGradients& grad_ref) {
  const VariantInfo& v = *c.variant;
  ResultRow row;
  row.problem = c.problem;
  row.variant = v.name;
  row.family = family_name(v.family);
  row.backend = backend_name(v.backend);
  // A row names the class that judged it: the backward's alone for bwd, both when they differ;
  // the forward's is the chosen plan's where plans differ in it (set again once the plan is known).
  const Precision grad_precision = v.backward_precision.value_or(v.precision);
  auto precision_text = [&](Precision forward) {
    return c.problem.pass == Pass::bwd ? std::string(precision_name(grad_precision))
           : pass_has_backward(c.problem.pass) && grad_precision != forward
               ? fmt::format("{}/{}", precision_name(forward), precision_name(grad_precision))
               : std::string(precision_name(forward));
  };
  row.precision = precision_text(v.precision);
  row.device = v.backend == Backend::cuda && opt.gpu.available ? opt.gpu.name : opt.cpu_name;
  const bool is_gdn = v.family == Family::gdn;
  const CaseCost cost = case_cost(v, c.problem);
  row.flops = cost.flops;
  row.bytes = cost.bytes;

  if (const std::optional<std::string> skip = skip_reason(v, c.problem, opt.gpu)) {
    row.status = Status::skipped;
    row.reason = *skip;
    return row;
  }

  try {
    RunContext ctx;
    ctx.cpu_threads = opt.cpu_threads;
    // The plan: the variant's own choice on this device, or the forced one where it can run.
    // (A variant outside the plan table, as tests build, has one path and no plan to force; every
    // registered variant has an entry: tests/kernels/test_plans.cpp.)
    const VariantPlans* plans = find_variant_plans(v.name);
    PlanChoice plan;
    if (plans) plan = plans->choose(c.problem, plan_device_for(v.name, c.problem), ctx.plan);
    else if (c.problem.plan != "auto") plan.unsupported = fmt::format("--plan: {} has no plans", v.name);
    if (!plan.unsupported.empty()) {
      row.status = Status::skipped;
      row.reason = plan.unsupported;
      return row;
    }
    const Precision precision = v.plan_precision ? v.plan_precision(plan) : v.precision;
    row.precision = precision_text(precision);
    row.plan = plan.name() + (runs_by_sequence(v, c.problem) ? " (per sequence)" : "") +
               (c.problem.segments > 1 ? fmt::format(" ({} segments)", c.problem.segments) : "");
    std::unique_ptr<VariantRun> run = c.problem.segments > 1 ? create_segmented_run(v, c.problem, inputs, ctx)
                                                             : v.create(c.problem, inputs, ctx);
    run->poison_outputs();
    run->launch();
    run->synchronize();
    RunOutputs out = run->read_outputs();
    row.peak_device_bytes = run->peak_device_bytes();
    const GdnShape& s = c.problem.shape;
    row.ref_rows = s.T;
    row.ref_heads = s.sequences() * s.HV;
    const bool forward = pass_has_forward(c.problem.pass);
    // A sampled reference: its rows or heads only, but every element must still be written and finite.
    if (!forward) {
      // A backward pass alone writes no o or hT: its gradients are compared below.
    } else if (is_gdn && !gdn_ref.heads.empty()) {
      row.o = compare_to_reference(out.o, gdn_ref.o, c.problem.dtype,
                                   HeadSelection{s.B, s.T, s.HV, s.V, gdn_ref.heads});
      row.ht = compare_to_reference(out.hT, gdn_ref.hT, DType::f32,
                                    HeadSelection{s.B, 1, s.HV, s.K * s.V, gdn_ref.heads});
      row.ref_heads = int64_t(gdn_ref.heads.size());
    } else if (is_gdn) {
      row.o = compare_to_reference(out.o, gdn_ref.o, c.problem.dtype);
      row.ht = compare_to_reference(out.hT, gdn_ref.hT, DType::f32);
    } else if (attention_ref.rows.empty()) {
      row.o = compare_to_reference(out.o, attention_ref.o, c.problem.dtype);
    } else {
      row.o = compare_to_reference(out.o, attention_ref.o, c.problem.dtype,
                                   RowSelection{s.B, s.T, s.HV * s.V, attention_ref.rows});
      row.ref_rows = int64_t(attention_ref.rows.size());
    }

    row.tol = forward_bounds(opt.tolerances, precision, c.problem.dtype, row.o.floor_rel_l2,
                             is_gdn ? &gdn_ref : nullptr);

    std::vector<std::string> problems;
    if (pass_has_backward(c.problem.pass)) {
      if (!grad_ref.heads.empty()) row.ref_heads = int64_t(grad_ref.heads.size());
      for (Grad g : kGrads)
        compare_gradient(row, g, output_gradient(out, g), grad_ref, grad_precision, opt.tolerances, problems);
    }
    for (std::string& p : output_problems(row, c.problem.dtype)) problems.push_back(std::move(p));
    if (c.problem.frontend && is_gdn) {  // the final conv caches: copies of inputs, exact or wrong
      if (out.conv_cache.size() != gdn_ref.conv_cache.size()) {
        problems.push_back(fmt::format("conv cache: {} elements returned, {} expected", out.conv_cache.size(),
                                       gdn_ref.conv_cache.size()));
      } else {
        row.conv = compare_to_reference(out.conv_cache, gdn_ref.conv_cache, c.problem.dtype);
        if (!row.conv.finite_ok())
          problems.push_back(finite_problem("conv cache", row.conv, c.problem.dtype));
        else if (row.conv.rel_l2 != 0.0)
          problems.push_back(fmt::format("conv cache rel_l2 {:.3g}, must be exact", row.conv.rel_l2));
      }
    }
    set_verdict(row, problems);
    if (opt.check_determinism && row.status == Status::pass) check_determinism(v, *run, out, row);

    // A variant is timed only after it verified: a wrong kernel has no speed. A split run
    // (--segments) is not timed: its exchange runs on the host between the passes and each launch
    // sets up its seeded pass anew (harness/segments.h), so a time would be of the harness.
    if (opt.timed && row.status == Status::pass && c.problem.segments == 1) {
      row.timing = v.backend == Backend::cpu ? time_cpu_run(*run, opt.timing)
                                             : time_gpu_run(*run, opt.timing);
      if (v.backend == Backend::cuda && opt.ceilings.measured) {
        row.ceiling_gbps = opt.ceilings.copy_gbps;
        row.ceiling_tflops = c.problem.dtype == DType::f32 ? opt.ceilings.fp32_gemm_tflops
                                                           : opt.ceilings.bf16_gemm_tflops;
      }
    }
  } catch (const std::exception& e) {
    row.status = Status::fail;
    row.reason = fmt::format("error: {}", e.what());
  }
  return row;
}

GdnRefOutputs gdn_reference_for(const Problem& p, const RefInputsF64& in, int threads,
                                const std::vector<int64_t>& heads) {
  if (p.frontend) return frontend_reference_for(p, in.fe, in.h0, threads, heads);
  GdnRefOptions ro;
  ro.scale = p.resolved_scale();
  ro.use_delta = p.use_delta;
  ro.threads = threads;
  ro.heads = heads;
  ro.o_magnitude = p.dtype == DType::f32;  // the float32 bound's cancellation term
  return gdn_recurrent_ref(p.shape, in.view(), ro);
}

GdnRefGradients gdn_gradients_for(const Problem& p, const RefInputsF64& in, int threads,
                                  const std::vector<int64_t>& heads) {
  GdnRefOptions ro;
  ro.scale = p.resolved_scale();
  ro.use_delta = p.use_delta;
  ro.threads = threads;
  ro.heads = heads;
  return gdn_recurrent_backward_ref(p.shape, in.view(), in.grad_view(), ro);
}

GdnRefGradients attention_gradients_for(const Problem& p, const RefInputsF64& in, int threads,
                                        const std::vector<int64_t>& heads) {
  const GdnShape& s = p.shape;
  if (p.context > 0) throw std::logic_error("attention gradients: prefill only (context 0)");
  AttentionRefGradients a = attention_backward_ref(s.B, s.T, s.HV, s.K, s.V, in.q.data(), in.k.data(), in.v.data(),
                                                   in.dout.data(), p.resolved_scale(), true, threads, heads);
  GdnRefGradients g;
  g.heads = g.qk_heads = heads;  // H = HV: a head's q, k and v rows are its own
  g.dq = std::move(a.dq);
  g.dk = std::move(a.dk);
  g.dv = std::move(a.dv);
  return g;
}

std::vector<double> attention_reference_for(const Problem& p, const RefInputsF64& in, int threads) {
  const GdnShape& s = p.shape;
  if (p.context > 0) {
    if (!in.k_cache || !in.v_cache || int64_t(in.k_cache->size()) != s.B * p.context * s.H * s.K ||
        int64_t(in.v_cache->size()) != s.B * p.context * s.HV * s.V)
      throw std::logic_error("attention reference with context: the KV cache was not generated (add_kv_cache)");
    return attention_cache_ref(s.B, s.T, p.context, s.HV, s.K, s.V, in.q.data(), in.k.data(),
                               in.v.data(), in.k_cache->data(), in.v_cache->data(),
                               p.resolved_scale(), threads);
  }
  return attention_ref(s.B, s.T, s.HV, s.K, s.V, in.q.data(), in.k.data(), in.v.data(),
                       p.resolved_scale(), true, threads);
}

AttentionRef attention_reference_rows_for(const Problem& p, const RefInputsF64& in,
                                          const std::vector<int64_t>& rows, int threads) {
  if (rows.empty()) return AttentionRef{attention_reference_for(p, in, threads), {}};
  const GdnShape& s = p.shape;
  if (p.context > 0 && (!in.k_cache || !in.v_cache))
    throw std::logic_error("attention reference with context: the KV cache was not generated (add_kv_cache)");
  AttentionRef ref;
  ref.rows = rows;
  ref.o = attention_cache_rows_ref(s.B, s.T, p.context, s.HV, s.K, s.V, in.q.data(), in.k.data(), in.v.data(),
                                   p.context > 0 ? in.k_cache->data() : nullptr,
                                   p.context > 0 ? in.v_cache->data() : nullptr, p.resolved_scale(), rows,
                                   threads);
  return ref;
}

ResultRow verify_single_case(const Case& c, const RunOptions& opt, const HostInputs& given) {
  const bool is_gdn = c.variant->family == Family::gdn;
  HostInputs with_cache;
  // The cache only for a case that will run (a SKIPPED one may be skipped for its size).
  const bool needs_cache = !is_gdn && c.problem.context > 0 && given.k_cache.empty() &&
                           !skip_reason(*c.variant, c.problem, opt.gpu);
  if (needs_cache) {
    with_cache = given;
    add_kv_cache(c.problem, with_cache);
  }
  const HostInputs& inputs = needs_cache ? with_cache : given;
  const RefInputsF64 ref_in = to_f64(inputs);
  const bool runnable = !skip_reason(*c.variant, c.problem, opt.gpu);
  const std::vector<int64_t> heads =
      is_gdn ? gdn_ref_heads(c.problem, opt.gdn_ref, opt.gdn_sample_heads) : std::vector<int64_t>{};
  const GdnRefOutputs gdn_ref = is_gdn && pass_has_forward(c.problem.pass)
                                    ? gdn_reference_for(c.problem, ref_in, opt.cpu_threads, heads)
                                    : GdnRefOutputs{};
  const bool backward = runnable && pass_has_backward(c.problem.pass);
  const GdnRefGradients grad_ref = backward && is_gdn ? gdn_gradients_for(c.problem, ref_in, opt.cpu_threads, heads)
                                   : backward         ? attention_gradients_for(c.problem, ref_in, opt.cpu_threads,
                                                                                attention_grad_heads(c.problem, opt.attention_ref))
                                                      : GdnRefGradients{};
  const bool have_cache = c.problem.context == 0 || !inputs.k_cache.empty();
  const AttentionRef attn_ref =
      is_gdn || !have_cache
          ? AttentionRef{}
          : attention_reference_rows_for(c.problem, ref_in,
                                         attention_ref_rows(c.problem, opt.attention_ref, opt.attention_sample_rows),
                                         opt.cpu_threads);
  return run_case(c, inputs, gdn_ref, attn_ref, opt, grad_ref);
}

RunSummary execute_cases(const std::vector<Case>& cases, const RunOptions& opt,
                         const std::function<void(const ResultRow&)>& on_row) {
  RunSummary summary;
  Progress progress(cases, opt.progress, isatty(fileno(stderr)));
  std::string cached_key;
  HostInputs inputs;
  RefInputsF64 ref_in;
  GdnRefOutputs gdn_ref;
  GdnRefGradients grad_ref, attn_grad_ref;  // the same inputs' gradients of either family
  AttentionRef attn_ref;
  bool have_gdn_ref = false, have_grad_ref = false, have_attn_ref = false, have_attn_grad_ref = false;

  for (size_t i = 0; i < cases.size() && !summary.interrupted; ++i) {
    if (interrupt_requested()) {
      summary.interrupted = true;
      break;
    }
    const Case& c = cases[i];
    progress.before(i);
    const bool runnable = !skip_reason(*c.variant, c.problem, opt.gpu);
    // A signal during the case abandons it: the references throw ReferenceCancelled, the sampling
    // loops Interrupted (which run_case reports as an error row), and the row is not written.
    try {
      if (runnable && c.problem.input_key() != cached_key) {
        cached_key = c.problem.input_key();
        // The previous problem's tensors go first: those of a problem past 2^31 elements
        // (suites/large.ini) fit in host memory once, not twice.
        inputs = HostInputs{};
        ref_in = RefInputsF64{};
        gdn_ref = GdnRefOutputs{};
        grad_ref = GdnRefGradients{};
        attn_grad_ref = GdnRefGradients{};
        attn_ref = AttentionRef{};
        try {
          inputs = make_inputs(c.problem);
          ref_in = to_f64(inputs);
        } catch (const std::bad_alloc&) {  // say which problem and how many bytes, in one line
          throw std::runtime_error(inputs_out_of_memory(c.problem, true));
        }
        have_gdn_ref = have_grad_ref = have_attn_ref = have_attn_grad_ref = false;
      }
      // Each reference only where a case needs it: a backward pass alone compares no o.
      const bool is_gdn = c.variant->family == Family::gdn;
      if (runnable && is_gdn && pass_has_backward(c.problem.pass) && !have_grad_ref) {
        grad_ref = gdn_gradients_for(c.problem, ref_in, opt.cpu_threads,
                                     gdn_ref_heads(c.problem, opt.gdn_ref, opt.gdn_sample_heads));
        have_grad_ref = true;
      }
      if (runnable && !is_gdn && pass_has_backward(c.problem.pass) && !have_attn_grad_ref) {
        attn_grad_ref = attention_gradients_for(c.problem, ref_in, opt.cpu_threads,
                                                attention_grad_heads(c.problem, opt.attention_ref));
        have_attn_grad_ref = true;
      }
      if (runnable && is_gdn && pass_has_forward(c.problem.pass) && !have_gdn_ref) {
        gdn_ref = gdn_reference_for(c.problem, ref_in, opt.cpu_threads,
                                    gdn_ref_heads(c.problem, opt.gdn_ref, opt.gdn_sample_heads));
        have_gdn_ref = true;
      }
      if (runnable && c.variant->family == Family::attention && !have_attn_ref) {
        add_kv_cache(c.problem, inputs);  // generated only for attention: GDN ignores the context
        attn_ref = attention_reference_rows_for(
            c.problem, ref_in, attention_ref_rows(c.problem, opt.attention_ref, opt.attention_sample_rows),
            opt.cpu_threads);
        have_attn_ref = true;
      }
      ResultRow row = run_case(c, inputs, gdn_ref, attn_ref, opt, is_gdn ? grad_ref : attn_grad_ref);
      if (interrupt_requested()) {
        summary.interrupted = true;
        break;
      }
      if (row.status == Status::pass) ++summary.passed;
      else if (row.status == Status::fail) ++summary.failed;
      else ++summary.skipped;
      on_row(row);
      summary.rows.push_back(std::move(row));
    } catch (const ReferenceCancelled&) {
      summary.interrupted = true;
    } catch (const Interrupted&) {
      summary.interrupted = true;
    }
  }
  if (interrupt_requested()) summary.interrupted = true;
  restore_default_interrupt_actions();
  progress.finish();
  return summary;
}
