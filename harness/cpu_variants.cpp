#include "harness/cpu_variants.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/metrics.h"
#include "kernels/cpu/cpu_backend.h"

namespace {

using CpuKernel = CpuStatus (*)(const GdnParams&, float*, int);
using CpuWorkspace = size_t (*)(const GdnParams&);
using CpuBackwardKernel = CpuStatus (*)(const GdnParams&, const GdnGradParams&, float*, int);
using CpuBackwardWorkspace = size_t (*)(const GdnParams&, int threads);

// A CPU variant's kernels: the forward and the backward.
struct CpuKernels {
  CpuKernel forward;
  CpuWorkspace forward_workspace;  // floats per worker
  CpuBackwardKernel backward;
  CpuBackwardWorkspace backward_workspace;  // floats for all workers
};

// Host buffers for one CPU run. Inputs are borrowed from HostInputs (they are already float
// holding dtype-rounded values); outputs and workspace are owned.
class CpuGdnRun final : public VariantRun {
 public:
  CpuGdnRun(const Problem& p, const HostInputs& in, const RunContext& ctx, const CpuKernels& kernels)
      : kernels_(kernels), pass_(p.pass), threads_(std::max(1, ctx.cpu_threads)) {
    const GdnShape& s = p.shape;
    if (pass_has_forward(pass_)) {
      o_.resize(s.v_elems());
      hT_.resize(s.state_elems());
    }
    params_.shape = s;
    params_.dtype = p.dtype;
    params_.q = in.q.data();
    params_.k = in.k.data();
    params_.v = in.v.data();
    params_.g = in.g.empty() ? nullptr : in.g.data();
    params_.beta = in.beta.data();
    params_.h0 = in.h0.empty() ? nullptr : in.h0.data();
    params_.cu_seqlens = in.cu_seqlens.empty() ? nullptr : in.cu_seqlens.data();
    params_.o = o_.empty() ? nullptr : o_.data();
    params_.hT = hT_.empty() ? nullptr : hT_.data();
    params_.scale = float(p.resolved_scale());
    params_.use_delta = p.use_delta;
    params_.chunk = p.chunk;
    if (pass_has_forward(pass_)) workspace_.resize(kernels_.forward_workspace(params_) * threads_);
    if (pass_has_backward(pass_)) {
      grad_.dout = in.dout.data();
      grad_.dhT = in.dhT.empty() ? nullptr : in.dhT.data();
      out_.dq.resize(s.qk_elems());
      out_.dk.resize(s.qk_elems());
      out_.dv.resize(s.v_elems());
      out_.dbeta.resize(s.gate_elems());
      if (params_.g) out_.dg.resize(s.gate_elems());
      if (params_.h0) out_.dh0.resize(s.state_elems());
      grad_.dq = out_.dq.data();
      grad_.dk = out_.dk.data();
      grad_.dv = out_.dv.data();
      grad_.dg = params_.g ? out_.dg.data() : nullptr;
      grad_.dbeta = out_.dbeta.data();
      grad_.dh0 = params_.h0 ? out_.dh0.data() : nullptr;
      backward_workspace_.resize(kernels_.backward_workspace(params_, threads_));
    }
  }
  void poison_outputs() override {
    for (std::vector<float>* x : {&o_, &hT_, &out_.dq, &out_.dk, &out_.dv, &out_.dg, &out_.dbeta, &out_.dh0})
      std::fill(x->begin(), x->end(), poison_value_f32());
    // Scratch too: a kernel that reads workspace it did not write (say, a state never zeroed)
    // then fails however many heads each worker thread happens to see.
    std::fill(workspace_.begin(), workspace_.end(), poison_value_f32());
    std::fill(backward_workspace_.begin(), backward_workspace_.end(), poison_value_f32());
  }
  // fwdbwd: the forward, then the backward (which recomputes the states it needs itself), in one
  // launch, so the timer covers both.
  void launch() override {
    if (pass_has_forward(pass_) && kernels_.forward(params_, workspace_.data(), threads_) != CpuStatus::ok)
      throw std::runtime_error("CPU kernel rejected its parameters");
    if (pass_has_backward(pass_) &&
        kernels_.backward(params_, grad_, backward_workspace_.data(), threads_) != CpuStatus::ok)
      throw std::runtime_error("CPU backward kernel rejected its parameters");
  }
  RunOutputs read_outputs() override {
    RunOutputs out = out_;
    out.o = o_;
    out.hT = hT_;
    return out;
  }

 private:
  CpuKernels kernels_;
  Pass pass_;
  int threads_;
  GdnParams params_;
  GdnGradParams grad_;
  RunOutputs out_;  // the gradients (o and hT live in o_ and hT_, which params_ points at)
  std::vector<float> o_, hT_, workspace_, backward_workspace_;
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
  return std::make_unique<CpuGdnRun>(p, in, ctx,
                                     CpuKernels{run_cpu_recurrent, cpu_recurrent_workspace_floats,
                                                run_cpu_recurrent_backward, cpu_recurrent_backward_workspace_floats});
}

std::unique_ptr<VariantRun> create_cpu_chunked(const Problem& p, const HostInputs& in,
                                               const RunContext& ctx) {
  return std::make_unique<CpuGdnRun>(p, in, ctx,
                                     CpuKernels{run_cpu_chunked, cpu_chunked_workspace_floats, run_cpu_chunked_backward,
                                                cpu_chunked_backward_workspace_floats});
}
