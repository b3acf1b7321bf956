// One CSV row per (problem, variant) and the run metadata shared by all rows of a run.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/metrics.h"
#include "harness/problem.h"
#include "harness/timing.h"
#include "harness/tolerance.h"

enum class Status { pass, fail, skipped };
const char* status_name(Status s);

struct RunMeta {
  std::string run_id;     // timestamp + seed, shared by every row of one invocation
  std::string timestamp;  // UTC, ISO 8601
  std::string git_sha;
  std::string host;
  std::string device;     // GPU name, or the CPU model for the CPU backend
  std::string command;    // run | verify
  std::string suite;
  uint64_t seed = 0;
  // The tolerance profile every row of the invocation is judged by: its name and hash
  // (ToleranceProfile::name, ::hash).
  std::string tolerances, tolerances_hash;
};

struct ResultRow {
  Problem problem;
  std::string variant, family, backend, precision;
  // The kernels the variant's launch plan chose for this problem on this device (its plan
  // function, or --plan): e.g. "quad_fe", "two_level G=4". Empty: SKIPPED before a plan was made.
  std::string plan;
  Status status = Status::skipped;
  std::string reason;  // why SKIPPED, or what failed
  TensorMetrics o, ht;
  // Front-end problems: the final conv caches (q, k, v concatenated) against the reference's.
  // They are copies of dtype inputs, so anything but an exact match fails.
  TensorMetrics conv;
  // Backward passes: each gradient (kGrads order) against the float64 reference gradient, in
  // grad_dtype. Not present for the forward, and where the gradient does not exist (dg without a
  // gate, dh0 without h0).
  std::array<TensorMetrics, kGradCount> grad;
  Tolerance tol{0, 0, ""};
  std::optional<TimingStats> timing;
  double flops = 0;    // documented FLOP count (docs/DESIGN.md section 4)
  double bytes = 0;    // minimum bytes: each input read once, each output written once
  int64_t peak_device_bytes = 0;
  double ceiling_gbps = 0;    // measured copy bandwidth of the device (GPU rows, run only)
  double ceiling_tflops = 0;  // measured GEMM rate for the row's dtype (bf16, or fp32 for fp32)
  std::string device;  // where this row ran
  // The determinism check (RunOptions::check_determinism): "yes" launched twice, o and hT
  // bitwise identical; "no" the variant declares itself non-deterministic, not checked; empty:
  // not checked (skipped, failed, or the check was off).
  std::string deterministic;
  // Query rows per referenced (b, h) head whose o was compared with the float64 reference: T when
  // every row was, fewer under a sampled attention reference (harness/reference_sample.h); 0: not
  // verified.
  int64_t ref_rows = 0;
  // (b, hv) heads whose o (and hT) were compared with the reference: B HV when every head was,
  // fewer under a sampled GDN reference; 0: not verified. Referenced rows: ref_heads x ref_rows.
  int64_t ref_heads = 0;
};
