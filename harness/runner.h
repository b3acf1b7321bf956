// Executes the cases of an invocation: inputs (seeded) -> float64 reference (cached per problem)
// -> each variant verified (poisoned outputs) -> timed if it passed and timing is on -> CSV row.
#pragma once
#include <functional>
#include <stdexcept>
#include <vector>

#include "harness/reference_sample.h"
#include "harness/io/cli.h"
#include "harness/gpu_runtime.h"
#include "harness/result.h"

struct RunOptions {
  bool timed = false;     // run: time passing cases; verify: never time
  int cpu_threads = 1;
  bool progress = false;  // progress lines on stderr
  TimingConfig timing;
  std::string cpu_name;
  GpuInfo gpu;
  Ceilings ceilings;  // measured before a GPU run; unmeasured: no fraction columns
  // Launch every passing case a second time on the same inputs (outputs poisoned again) and
  // compare o and hT bitwise; a difference fails a variant that declares itself deterministic.
  bool check_determinism = false;
  // Attention cases: the float64 reference for every query row, or for a sample of rows per
  // (b, h) (harness/reference_sample.h); automatic decides by the reference's cost.
  RefMode attention_ref = RefMode::automatic;
  int64_t attention_sample_rows = kAttentionSampleRows;
  // GDN cases: the float64 recurrence for every (b, hv) head, or for a sample of heads
  // (gdn_sample_heads, at most gdn_sample_heads of them); automatic decides by the cost.
  RefMode gdn_ref = RefMode::automatic;
  int64_t gdn_sample_heads = kGdnSampleHeads;
  ToleranceProfile tolerances = ToleranceProfile::builtin();  // the bounds every row is judged by
};

// The float64 attention answer of a problem, for every query row or for a sample of them.
struct AttentionRef {
  std::vector<double> o;      // [B, T, HV, V]; sampled: [B, rows.size(), HV, V]
  std::vector<int64_t> rows;  // the query rows o holds, sorted; empty: all T (the full reference)
};

struct RunSummary {
  int passed = 0, failed = 0, skipped = 0;
  bool interrupted = false;  // SIGINT/SIGTERM arrived; rows hold the cases finished before it
  std::vector<ResultRow> rows;
};

// SIGINT and SIGTERM stop the run: the flag is checked between cases, between timing samples
// (stop_if_interrupted, harness/timing.h) and inside the float64 references (their cancel hook,
// reference/gdn_reference.h). The case in flight is abandoned and writes no row; execute_cases
// returns with RunSummary::interrupted. The first signal restores the default action of both, so
// a second one ends the process at once. execute_cases puts the default actions back when it
// returns: a signal after the cases ends the process too, so an interrupted run never exits 0.
void install_interrupt_handlers();
bool interrupt_requested();
// Thrown where a long case notices the flag (the sampling loops); execute_cases catches it.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted (SIGINT or SIGTERM)") {}
};

// on_row is called after each case (the CSV writer appends there).
RunSummary execute_cases(const std::vector<Case>& cases, const RunOptions& opt,
                         const std::function<void(const ResultRow&)>& on_row);

// Verifies (and optionally times) one variant on one problem against a given reference: o and hT
// against gdn_ref (or attention_ref) where the pass has the forward, the gradients against grad_ref
// (gdn_gradients_for) where it has the backward.
ResultRow run_case(const Case& c, const HostInputs& inputs, const GdnRefOutputs& gdn_ref,
                   const AttentionRef& attention_ref, const RunOptions& opt,
                   const GdnRefGradients& grad_ref = GdnRefGradients{});

// ||o_abs|| / ||o|| of a GDN reference with o_abs (over the heads it holds, when sampled): how
// much the terms of the outputs' dot products cancel (fp32_cancellation_bound); 0 where o is all
// zero.
double cancellation_kappa(const GdnRefOutputs& ref);

// The float64 answers for a problem: the GDN recurrence, or causal attention over its q, k, v.
// For a float32 problem the GDN answer carries o_abs too (the float32 bound's cancellation term).
// `heads` (flat b HV + hv, sorted): the GDN answer for those heads only (GdnRefOptions::heads);
// empty: every head.
GdnRefOutputs gdn_reference_for(const Problem& p, const RefInputsF64& in, int threads,
                                const std::vector<int64_t>& heads = {});
// The float64 gradients of a backward pass (gdn_recurrent_backward_ref) from the inputs and the
// upstream gradients in `in`; `heads` as for gdn_reference_for, in whole groups (gdn_ref_heads).
GdnRefGradients gdn_gradients_for(const Problem& p, const RefInputsF64& in, int threads,
                                  const std::vector<int64_t>& heads = {});
// The float64 gradients dq, dk, dv of causal attention (attention_backward_ref) from the inputs
// and dout in `in` (dhT is not read: attention has no state); the other gradients empty. `heads`
// (flat b H + h, attention_grad_heads): those heads only.
GdnRefGradients attention_gradients_for(const Problem& p, const RefInputsF64& in, int threads,
                                        const std::vector<int64_t>& heads = {});
std::vector<double> attention_reference_for(const Problem& p, const RefInputsF64& in, int threads);
// The attention answer for the query rows `rows` only (empty: every row, attention_reference_for).
AttentionRef attention_reference_rows_for(const Problem& p, const RefInputsF64& in,
                                          const std::vector<int64_t>& rows, int threads);

// Inputs, the reference of the variant's family and the verdict of one case, from scratch (no
// cache): for callers that verify a single case (the benchmark front end, tests).
ResultRow verify_single_case(const Case& c, const RunOptions& opt, const HostInputs& inputs);

// The bounds a forward row is judged by, as `verify` judges: the profile's entry for (precision,
// dtype) on the row's o floor, widened for a float32 GDN row by the cancellation rule when gdn_ref
// carries o_abs (nullptr: attention, or no magnitudes). The one place `verify`, `check` and the
// Python module take them from.
Tolerance forward_bounds(const ToleranceProfile& tolerances, Precision precision, DType dtype,
                         double o_floor_rel_l2, const GdnRefOutputs* gdn_ref);

std::string cpu_model_name();
// The reference's gradient g (kGrads order; empty where it does not exist: dg without a gate, dh0
// without h0).
const std::vector<double>& reference_gradient(const GdnRefGradients& ref, Grad g);
// Where gradient g lives, over every head: dq, dk as q, k [B, T, H, K]; dv as v; dg, dbeta as g,
// beta [B, T, HV]; dh0 as h0 [B or sequences, HV, K, V].
std::vector<int64_t> gradient_shape(Grad g, const GdnShape& s);
// Gradient g against the float64 reference's, into row.grad[g], with the bound of `tolerances` for
// `precision` on its floor in row.tol.grad_rel_l2[g]: absent from both it is not compared; returned
// where none exists, or missing where one does, it is a problem. A sampled reference (ref.heads) is
// compared on its heads only, every element still written and finite. The one comparison of a gradient
// in `verify` and `check`; output_problems then judges it.
void compare_gradient(ResultRow& row, Grad g, const std::vector<float>& got, const GdnRefGradients& ref,
                      Precision precision, const ToleranceProfile& tolerances, std::vector<std::string>& problems);
// What keeps o (dtype) and hT (float32) of a judged row, or the gradients of a backward pass (in
// grad_dtype), from passing against row.tol: too little compared (coverage_problem), an unwritten or
// non-finite element, rel_l2 past the bound. The one judgement of `verify` and `check`.
std::vector<std::string> output_problems(const ResultRow& row, DType dtype);
// The verdict from every problem found: PASS when there is none, else FAIL, the problems appended
// to row.reason ("; " between them).
void set_verdict(ResultRow& row, const std::vector<std::string>& problems);
