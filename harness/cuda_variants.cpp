#include "harness/cuda_variants.h"

#include <cublas_v2.h>

#include <fmt/format.h>

#include "harness/cuda_run.h"
#include "kernels/common/cuda_kernels.h"
#include "kernels/common/gdn_sequence_params.h"
#include "kernels/plans/launch_plans.h"
#include "kernels/wy_ut/wy_ut.h"

namespace {

// A GDN kernel's backward: its launcher and workspace (kernels/common/cuda_kernels.h).
struct CudaBackward {
  int (*launch)(const GdnParams&, const GdnGradParams&, void* workspace, cudaStream_t) = nullptr;
  size_t (*workspace_bytes)(const GdnParams&) = nullptr;
};

// Inputs, outputs, workspace and the launch parameters of a GDN kernel on the device; with a
// backward, the pass decides what runs (fwdbwd: the forward, then the backward, one launch). A
// packed batch runs in one launch where the kernel takes cu_seqlens (packed_native: the forward),
// else as one launch per sequence on views of the packed buffers, the whole batch one timed region.
class CudaGdnRun : public CudaRunBase {
 public:
  using Launcher = int (*)(const GdnParams&, void* workspace, cudaStream_t);
  using WorkspaceBytes = size_t (*)(const GdnParams&);
  CudaGdnRun(const Problem& p, const HostInputs& in, const PlanLaunch& plan, Launcher launcher,
             WorkspaceBytes workspace_bytes = nullptr, CudaBackward backward = {}, bool packed_native = false)
      : launcher_(launcher), backward_(backward), pass_(backward.launch ? p.pass : Pass::fwd),
        forward_by_sequence_(p.packed() && !packed_native), backward_by_sequence_(p.packed()),
        host_cu_seqlens_(in.cu_seqlens) {
    const GdnShape& s = p.shape;
    dtype_ = p.dtype;
    q_ = upload(in.q, p.dtype);
    k_ = upload(in.k, p.dtype);
    v_ = upload(in.v, p.dtype);
    g_ = upload(in.g, DType::f32);
    beta_ = upload(in.beta, DType::f32);
    h0_ = upload(in.h0, DType::f32);
    if (pass_has_forward(pass_)) {
      o_elems_ = s.v_elems();
      ht_elems_ = s.state_elems();
      o_ = allocate(size_t(o_elems_) * dtype_bytes(p.dtype));
      hT_ = allocate(size_t(ht_elems_) * 4);
    }
    params_.shape = s;
    params_.dtype = p.dtype;
    params_.q = q_.get();
    params_.k = k_.get();
    params_.v = v_.get();
    params_.g = in.g.empty() ? nullptr : g_.as<float>();
    params_.beta = beta_.as<float>();
    params_.h0 = in.h0.empty() ? nullptr : h0_.as<float>();
    params_.o = o_.get();
    params_.hT = hT_.as<float>();
    params_.scale = float(p.resolved_scale());
    params_.use_delta = p.use_delta;
    params_.chunk = p.chunk;
    params_.recurrent_form = plan.recurrent_form;
    params_.scan_groups = plan.scan_groups;
    params_.wy_ut_output = plan.wy_ut_output;
    if (p.packed()) {
      cu_seqlens_ = allocate(host_cu_seqlens_.size() * sizeof(int32_t));
      copy_to_device(cu_seqlens_.get(), host_cu_seqlens_.data(), cu_seqlens_.bytes());
      params_.cu_seqlens = cu_seqlens_.as<int32_t>();
    }
    // One sequence at a time, each takes its own plan unless one was forced: the plan chosen for
    // the whole batch's T need not suit a sequence of it.
    if (p.packed() && p.plan == "auto") {
      view_plan_ = params_;
      view_plan_.recurrent_form = RecurrentForm::automatic;
      view_plan_.scan_groups = 0;
      view_plan_.wy_ut_output = WyUtOutput::automatic;
    } else {
      view_plan_ = params_;
    }
    if (pass_has_forward(pass_) && workspace_bytes)
      workspace_ = allocate(forward_by_sequence_ ? largest_view_bytes(workspace_bytes) : workspace_bytes(params_));
    if (pass_has_backward(pass_)) {
      dout_ = upload(in.dout, p.dtype);
      dhT_ = upload(in.dhT, DType::f32);
      grads_ = {Grad{s.qk_elems(), p.dtype}, Grad{s.qk_elems(), p.dtype}, Grad{s.v_elems(), p.dtype},
                Grad{in.g.empty() ? 0 : s.gate_elems(), DType::f32}, Grad{s.gate_elems(), DType::f32},
                Grad{in.h0.empty() ? 0 : s.state_elems(), DType::f32}};
      for (size_t i = 0; i < grads_.size(); ++i) grad_buffers_[i] = allocate(size_t(grads_[i].n) * dtype_bytes(grads_[i].dtype));
      grad_.dout = dout_.get();
      grad_.dhT = in.dhT.empty() ? nullptr : dhT_.as<float>();
      grad_.dq = grad_buffers_[0].get();
      grad_.dk = grad_buffers_[1].get();
      grad_.dv = grad_buffers_[2].get();
      grad_.dg = grads_[3].n ? grad_buffers_[3].as<float>() : nullptr;
      grad_.dbeta = grad_buffers_[4].as<float>();
      grad_.dh0 = grads_[5].n ? grad_buffers_[5].as<float>() : nullptr;
      backward_workspace_ = allocate(backward_by_sequence_ ? largest_view_bytes(backward_.workspace_bytes)
                                                           : backward_.workspace_bytes(params_));
    }
  }
  void poison_outputs() override {
    poison(o_, o_elems_, dtype_);
    poison(hT_, ht_elems_, DType::f32);
    for (size_t i = 0; i < grads_.size(); ++i) poison(grad_buffers_[i], grads_[i].n, grads_[i].dtype);
  }
  void launch() override {
    if (pass_has_forward(pass_)) {
      if (forward_by_sequence_)
        for_each_view([&](const GdnParams& view, const GdnGradParams&) {
          CUDA_CHECK(cudaError_t(launcher_(view, workspace_.get(), stream_)));
        });
      else
        CUDA_CHECK(cudaError_t(launcher_(params_, workspace_.get(), stream_)));
    }
    if (pass_has_backward(pass_)) {
      if (backward_by_sequence_)
        for_each_view([&](const GdnParams& view, const GdnGradParams& grad) {
          CUDA_CHECK(cudaError_t(backward_.launch(view, grad, backward_workspace_.get(), stream_)));
        });
      else
        CUDA_CHECK(cudaError_t(backward_.launch(params_, grad_, backward_workspace_.get(), stream_)));
    }
  }
  RunOutputs read_outputs() override {
    synchronize();
    RunOutputs out;
    if (pass_has_forward(pass_)) {
      out.o = download(o_, o_elems_, dtype_);
      out.hT = download(hT_, ht_elems_, DType::f32);
    }
    if (pass_has_backward(pass_)) {
      std::vector<float>* dst[] = {&out.dq, &out.dk, &out.dv, &out.dg, &out.dbeta, &out.dh0};
      for (size_t i = 0; i < grads_.size(); ++i)
        if (grads_[i].n) *dst[i] = download(grad_buffers_[i], grads_[i].n, grads_[i].dtype);
    }
    return out;
  }

 private:
  // One gradient output: elements (0: not written) and storage type.
  struct Grad {
    int64_t n;
    DType dtype;
  };
  template <typename Fn>
  void for_each_view(Fn&& fn) const {
    for_each_sequence_view(view_plan_, grad_, host_cu_seqlens_.data(), dtype_bytes(dtype_), fn);
  }
  // The workspace of the most demanding sequence, which every view then reuses in turn.
  size_t largest_view_bytes(WorkspaceBytes bytes) const {
    size_t most = 0;
    for_each_view([&](const GdnParams& view, const GdnGradParams&) { most = std::max(most, bytes(view)); });
    return most;
  }

  Launcher launcher_;
  CudaBackward backward_;
  Pass pass_;
  bool forward_by_sequence_, backward_by_sequence_;
  std::vector<int32_t> host_cu_seqlens_;
  GdnParams view_plan_;  // params_ with the plan each sequence launches under
  DType dtype_;
  GdnParams params_;
  GdnGradParams grad_;
  std::vector<Grad> grads_;  // dq, dk, dv, dg, dbeta, dh0
  int64_t o_elems_ = 0, ht_elems_ = 0;
  DeviceBuffer q_, k_, v_, g_, beta_, h0_, o_, hT_, workspace_, dout_, dhT_, backward_workspace_, cu_seqlens_;
  DeviceBuffer grad_buffers_[6];
};

// cuBLAS handle with an explicit workspace, so its memory is counted in the run's peak.
class CublasHandle {
 public:
  CublasHandle() { CUBLAS_CHECK(cublasCreate(&handle_)); }
  ~CublasHandle() { cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

constexpr size_t kCublasWorkspaceBytes = 32u << 20;

// attn_naive's forward, its backward (--pass bwd: dq, dk, dv from dout), or both (fwdbwd).
class AttnNaiveRun : public CudaRunBase {
 public:
  AttnNaiveRun(const Problem& p, const HostInputs& in) : pass_(p.pass) {
    const GdnShape& s = p.shape;
    q_ = upload(in.q, p.dtype);
    k_ = upload(in.k, p.dtype);
    v_ = upload(in.v, p.dtype);
    if (pass_has_forward(pass_)) {
      o_elems_ = s.v_elems();
      o_ = allocate(size_t(o_elems_) * dtype_bytes(p.dtype));
    }
    params_ = AttnParams{p.dtype, s.B, s.T, s.HV, s.K, s.V, q_.get(), k_.get(), v_.get(), o_.get(),
                         float(p.resolved_scale()), true};
    if (pass_has_forward(pass_)) workspace_ = allocate(attn_naive_workspace_bytes(params_));
    if (pass_has_backward(pass_)) {
      dout_ = upload(in.dout, p.dtype);
      qk_elems_ = s.qk_elems();
      dq_ = allocate(size_t(qk_elems_) * dtype_bytes(p.dtype));
      dk_ = allocate(size_t(qk_elems_) * dtype_bytes(p.dtype));
      dv_ = allocate(size_t(s.v_elems()) * dtype_bytes(p.dtype));
      backward_workspace_ = allocate(attn_naive_backward_workspace_bytes(params_));
    }
    cublas_workspace_ = allocate(kCublasWorkspaceBytes);
    CUBLAS_CHECK(cublasSetStream(cublas_.get(), stream_));
    CUBLAS_CHECK(cublasSetWorkspace(cublas_.get(), cublas_workspace_.get(), kCublasWorkspaceBytes));
  }
  // The scores too: the softmax reads what the cuBLAS GEMM wrote, so a score it left unwritten
  // (compute-sanitizer's initcheck reported such reads, docs/log/runs-001-033.md, "Sanitizers") becomes a
  // NaN in o and a FAIL, not a silent stale value. Batches after the first reuse the buffer. The
  // backward's squares and float32 copies likewise.
  void poison_outputs() override {
    const DType dt = params_.dtype;
    poison(o_, o_elems_, dt);
    poison(workspace_, int64_t(workspace_.bytes() / 4), DType::f32);
    poison(dq_, qk_elems_, dt);
    poison(dk_, qk_elems_, dt);
    poison(dv_, int64_t(dv_.bytes() / dtype_bytes(dt)), dt);
    poison(backward_workspace_, int64_t(backward_workspace_.bytes() / 4), DType::f32);
  }
  void launch() override {
    if (pass_has_forward(pass_))
      CUDA_CHECK(cudaError_t(launch_attn_naive(params_, workspace_.get(), cublas_.get(), stream_)));
    if (pass_has_backward(pass_))
      CUDA_CHECK(cudaError_t(launch_attn_naive_backward(params_, dout_.get(), dq_.get(), dk_.get(), dv_.get(),
                                                        backward_workspace_.get(), cublas_.get(), stream_)));
  }
  RunOutputs read_outputs() override {
    synchronize();
    RunOutputs out;
    if (pass_has_forward(pass_)) out.o = download(o_, o_elems_, params_.dtype);
    if (pass_has_backward(pass_)) {
      out.dq = download(dq_, qk_elems_, params_.dtype);
      out.dk = download(dk_, qk_elems_, params_.dtype);
      out.dv = download(dv_, int64_t(dv_.bytes() / dtype_bytes(params_.dtype)), params_.dtype);
    }
    return out;
  }

 private:
  CublasHandle cublas_;
  Pass pass_;
  AttnParams params_;
  int64_t o_elems_ = 0, qk_elems_ = 0;
  DeviceBuffer q_, k_, v_, o_, workspace_, dout_, dq_, dk_, dv_, backward_workspace_, cublas_workspace_;
};

}  // namespace


std::unique_ptr<VariantRun> create_recurrent(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<CudaGdnRun>(p, in, ctx.plan, launch_gdn_recurrent, nullptr,
                                      CudaBackward{launch_gdn_recurrent_backward, gdn_recurrent_backward_workspace_bytes},
                                      /*packed_native=*/true);
}

namespace {
GdnParams params_for_sizing(const Problem& p) {
  GdnParams gp;
  gp.shape = p.shape;
  gp.dtype = p.dtype;
  gp.chunk = p.chunk;
  gp.use_delta = p.use_delta;
  return gp;
}

// A SKIPPED reason when inputs, outputs and workspace would not fit in free device memory.
std::optional<std::string> gdn_memory_shortfall(const Problem& p, size_t (*workspace_bytes)(const GdnParams&),
                                                const char* workspace_what) {
  const GdnShape& s = p.shape;
  const double need = double(workspace_bytes(params_for_sizing(p))) +
                      double(dtype_bytes(p.dtype)) * double(2 * s.qk_elems() + 2 * s.v_elems()) +
                      4.0 * double(2 * s.gate_elems() + 2 * s.state_elems());
  return device_memory_shortfall(need, workspace_what);
}
}  // namespace

std::optional<std::string> recurrent_unsupported(const Problem& p) {
  if (p.shape.K > kRecurrentMaxHeadDim || p.shape.V > kRecurrentMaxHeadDim)
    return fmt::format("K and V must be <= {}", kRecurrentMaxHeadDim);
  if (p.shape.sequences() > 65535 || p.shape.HV > 65535) return std::string("B (sequences) and HV must be <= 65535");
  if (pass_has_backward(p.pass))
    return gdn_memory_shortfall(p, gdn_recurrent_backward_workspace_bytes, "the backward's stored states and partials");
  return gdn_memory_shortfall(p, [](const GdnParams&) -> size_t { return 0; }, "no workspace");
}

std::optional<std::string> chunked_unsupported(const Problem& p) {
  if (p.shape.K > kChunkedMaxHeadDim || p.shape.V > kChunkedMaxHeadDim)
    return fmt::format("K and V must be <= {}", kChunkedMaxHeadDim);
  if (p.chunk != 16 && p.chunk != 32 && p.chunk != 64)
    return fmt::format("chunk {} not supported (16, 32, 64)", p.chunk);
  if (p.shape.B > 65535 || p.shape.HV > 65535) return std::string("B and HV must be <= 65535");
  return gdn_memory_shortfall(p, gdn_chunked_workspace_bytes, "float32 intermediates of every chunk");
}

std::unique_ptr<VariantRun> create_chunked(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<CudaGdnRun>(p, in, ctx.plan, launch_gdn_chunked, gdn_chunked_workspace_bytes);
}

std::optional<std::string> wy_ut_unsupported(const Problem& p) {
  if (p.shape.B > 65535 || p.shape.HV > 65535) return std::string("B and HV must be <= 65535");
  if (const char* why = gdn_wy_ut_shape_unsupported(params_for_sizing(p))) return std::string(why);
  // |k| > sqrt(2) lets the transition expand (eigenvalue 1 - beta |k|^2 < -1), so the state may
  // leave fp16's range; wy_ut's fp16 path splits the state into fp16 hi/lo operands and cannot
  // represent it there (bf16 has float32's range).
  if (p.dtype == DType::f16 && p.use_delta && p.k_norm * p.k_norm > 2.0)
    return std::string("wy_ut fp16 splits the state into fp16 operands: a growing state (|k| > sqrt 2) leaves their range; use bf16");
  // Sized for the most scan groups any plan may take: a forced two-level scan is SKIPPED here, not
  // refused by the allocator.
  const auto largest = [](const GdnParams& gp) {
    return gdn_wy_ut_workspace_bytes(gp, wy_ut_largest_scan_groups(gp.shape));
  };
  return gdn_memory_shortfall(p, largest, "float32 W, U and chunk states");
}

std::unique_ptr<VariantRun> create_wy_ut(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<CudaGdnRun>(p, in, ctx.plan, launch_gdn_wy_ut,
                                      static_cast<size_t (*)(const GdnParams&)>(gdn_wy_ut_workspace_bytes));
}

std::optional<std::string> attn_naive_unsupported(const Problem& p) {
  const GdnShape& s = p.shape;
  if (p.context > 0)
    return std::string("attn_naive is prefill without a KV cache (context 0); decode over a cache is attn_decode");
  if (s.T > 46340) return std::string("T * T must fit in a 32-bit cuBLAS dimension product");
  AttnParams ap{p.dtype, s.B, s.T, s.HV, s.K, s.V};
  const double e = double(dtype_bytes(p.dtype));
  double need = double(kCublasWorkspaceBytes) + e * double(2 * s.qk_elems() + 2 * s.v_elems());
  if (pass_has_forward(p.pass)) need += double(attn_naive_workspace_bytes(ap));
  if (pass_has_backward(p.pass))  // dout, dq, dk, dv, and the float32 squares and copies
    need += e * double(2 * s.qk_elems() + 2 * s.v_elems()) + double(attn_naive_backward_workspace_bytes(ap));
  return device_memory_shortfall(need, pass_has_backward(p.pass) ? "T x T scores and the backward's float32 squares"
                                                                 : "T x T scores");
}

std::unique_ptr<VariantRun> create_attn_naive(const Problem& p, const HostInputs& in, const RunContext&) {
  return std::make_unique<AttnNaiveRun>(p, in);
}
