#include "harness/cpu_variants.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/metrics.h"
#include "kernels/cpu/cpu_backend.h"

namespace {

using CpuKernel = CpuStatus (*)(const GdnParams&, float*, int);
using CpuWorkspace = size_t (*)(const GdnParams&);

// Host buffers for one CPU run. Inputs are borrowed from HostInputs (they are already float
// holding dtype-rounded values); outputs and workspace are owned.
class CpuGdnRun final : public VariantRun {
 public:
  CpuGdnRun(const Problem& p, const HostInputs& in, const RunContext& ctx, CpuKernel kernel,
            CpuWorkspace workspace_floats)
      : kernel_(kernel), threads_(std::max(1, ctx.cpu_threads)) {
    const GdnShape& s = p.shape;
    o_.resize(s.v_elems());
    hT_.resize(s.state_elems());
    params_.shape = s;
    params_.dtype = p.dtype;
    params_.q = in.q.data();
    params_.k = in.k.data();
    params_.v = in.v.data();
    params_.g = in.g.empty() ? nullptr : in.g.data();
    params_.beta = in.beta.data();
    params_.h0 = in.h0.empty() ? nullptr : in.h0.data();
    params_.o = o_.data();
    params_.hT = hT_.data();
    params_.scale = float(p.resolved_scale());
    params_.use_delta = p.use_delta;
    params_.chunk = p.chunk;
    workspace_.resize(workspace_floats(params_) * threads_);
  }
  void poison_outputs() override {
    std::fill(o_.begin(), o_.end(), poison_value_f32());
    std::fill(hT_.begin(), hT_.end(), poison_value_f32());
    // Scratch too: a kernel that reads workspace it did not write (say, a state never zeroed)
    // then fails however many heads each worker thread happens to see.
    std::fill(workspace_.begin(), workspace_.end(), poison_value_f32());
  }
  void launch() override {
    if (kernel_(params_, workspace_.data(), threads_) != CpuStatus::ok)
      throw std::runtime_error("CPU kernel rejected its parameters");
  }
  RunOutputs read_outputs() override { return {o_, hT_}; }

 private:
  CpuKernel kernel_;
  int threads_;
  GdnParams params_;
  std::vector<float> o_, hT_, workspace_;
};

}  // namespace

std::optional<std::string> cpu_recurrent_unsupported(const Problem&) { return std::nullopt; }

std::optional<std::string> cpu_chunked_unsupported(const Problem& p) {
  if (p.chunk != 16 && p.chunk != 32 && p.chunk != 64)
    return fmt::format("chunk {} not supported (16, 32, 64)", p.chunk);
  return std::nullopt;
}

std::unique_ptr<VariantRun> create_cpu_recurrent(const Problem& p, const HostInputs& in,
                                                 const RunContext& ctx) {
  return std::make_unique<CpuGdnRun>(p, in, ctx, run_cpu_recurrent, cpu_recurrent_workspace_floats);
}

std::unique_ptr<VariantRun> create_cpu_chunked(const Problem& p, const HostInputs& in,
                                               const RunContext& ctx) {
  return std::make_unique<CpuGdnRun>(p, in, ctx, run_cpu_chunked, cpu_chunked_workspace_floats);
}
