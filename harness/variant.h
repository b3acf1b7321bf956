// The variant registry: one explicit table of every kernel variant the harness can run, with its
// capabilities, how to prepare a run, and a one-line summary. Order is fixed (gdnbench list).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/inputs.h"
#include "harness/plans.h"
#include "harness/problem.h"
#include "harness/tolerance.h"

enum class Family { gdn, attention };
enum class Backend { cpu, cuda };
const char* family_name(Family f);
const char* backend_name(Backend b);

struct RunOutputs {
  std::vector<float> o;   // [B, T, HV, V] as float; unwritten elements hold the poison bits
  std::vector<float> hT;  // [B, HV, K, V]; empty when the variant has no state
  // Front-end variants: the final q, k, v conv caches concatenated ([B, H*K, 3], [B, H*K, 3],
  // [B, HV*V, 3]); empty otherwise.
  std::vector<float> conv_cache = {};
  // Backward passes: the gradients of every input (kernels/common/gdn_grad_params.h) as float;
  // dq, dk [B, T, H, K], dv [B, T, HV, V], dg and dbeta [B, T, HV], dh0 [B, HV, K, V]. dg is
  // empty without a gate, dh0 without h0; all of them empty for the forward.
  std::vector<float> dq = {}, dk = {}, dv = {}, dg = {}, dbeta = {}, dh0 = {};
};

// One prepared execution of a variant on one problem: owns its buffers (host or device).
class VariantRun {
 public:
  virtual ~VariantRun() = default;
  virtual void poison_outputs() = 0;
  virtual void launch() = 0;       // CPU: runs to completion; GPU: enqueued on stream()
  virtual void synchronize() {}
  virtual RunOutputs read_outputs() = 0;
  virtual int64_t peak_device_bytes() const { return 0; }
  virtual void* stream() const { return nullptr; }  // cudaStream_t of GPU runs
};

struct RunContext {
  int cpu_threads = 1;
  PlanLaunch plan;  // what the variant's plan chose for this problem (harness/plans.h)
};

struct VariantInfo {
  const char* name;
  Family family;
  Backend backend;
  Precision precision;
  bool uses_chunk;       // only chunked variants multiply over --chunk
  int fixed_chunk;       // > 0: the variant always runs at this chunk size (the --chunk axis is moot)
  const char* dtypes;    // for `gdnbench list`
  const char* shapes;    // head dims, chunk sizes, other limits
  // A reason when the variant cannot run this problem (the row is SKIPPED), else nullopt.
  std::optional<std::string> (*unsupported)(const Problem&);
  std::unique_ptr<VariantRun> (*create)(const Problem&, const HostInputs&, const RunContext&);
  const char* summary;
  // Two launches on the same inputs give bitwise-identical o and hT (`verify` checks it; the CSV's
  // `deterministic` column). A variant whose reductions depend on scheduling (atomics, split-K
  // with a run-time split) sets false and is not checked. Last, with a default, so table entries
  // that leave it out still compile.
  bool deterministic = true;
  // Takes a front-end problem's raw projections (Problem::frontend) instead of q, k, v, g, beta;
  // the runner SKIPs a variant whose kind differs from the problem's. With a default, as above.
  bool frontend = false;
  // Minimum bytes when they differ from the family's count (a front-end problem, a bf16 state);
  // nullptr: gdn_min_bytes / attention_min_bytes.
  double (*min_bytes)(const Problem&) = nullptr;
  // Runs the backward (--pass bwd, fwdbwd) as well as the forward; without one a backward case is
  // SKIPPED ("no backward pass"). With a default, as above: forward only.
  bool has_backward = false;
  // The precision class of the backward's arithmetic when it is not the forward's (attn_naive's
  // forward rounds P to the dtype, its backward is float32 math): its gradients are judged by that
  // class's bounds. nullopt: the forward's. With a default, as above.
  std::optional<Precision> backward_precision = std::nullopt;
  // Runs a packed batch's forward (Problem::packed) in one launch over its sequences. Otherwise, and
  // for every backward, the variant runs one launch per sequence on views of the packed buffers
  // (kernels/common/gdn_sequence_params.h), timed as the whole batch; the row's plan says
  // "(per sequence)". With a default, as above.
  bool packed_native = false;
  // The precision class of the plan chosen for a row's forward when plans differ in it (wy_ut:
  // the split-precision plans against the fp16 chain); nullptr: `precision` for every plan. A
  // backward is judged by backward_precision (or precision) whatever the plan. With a default, as above.
  Precision (*plan_precision)(const PlanChoice&) = nullptr;
};

// Whether variant v runs packed problem p one sequence at a time (VariantInfo::packed_native).
inline bool runs_by_sequence(const VariantInfo& v, const Problem& p) {
  return p.packed() && (!v.packed_native || pass_has_backward(p.pass));
}

const std::vector<VariantInfo>& variant_registry();
const VariantInfo* find_variant(const std::string& name);
