#include "kernels/cpu/cpu_grad_heads.h"

#include "kernels/common/dtype.h"
#include "kernels/common/gdn_sequence_params.h"

size_t cpu_grad_heads_floats(const GdnParams& p) { return size_t(2 * p.shape.B * p.shape.T * p.shape.HV * p.shape.K); }

CpuGradWorkspace cpu_grad_workspace(const GdnParams& p, float* workspace) {
  const int64_t per_tensor = p.shape.B * p.shape.T * p.shape.HV * p.shape.K;
  return {workspace, workspace + per_tensor, workspace + cpu_grad_heads_floats(p)};
}

CpuStatus cpu_backward_by_sequence(const GdnParams& p, const GdnGradParams& gp, float* workspace, int threads,
                                   CpuBackwardKernel backward) {
  CpuStatus status = CpuStatus::ok;
  for_each_sequence_view(p, gp, p.cu_seqlens, sizeof(float), [&](const GdnParams& view, const GdnGradParams& grad) {
    if (status == CpuStatus::ok) status = backward(view, grad, workspace, threads);
  });
  return status;
}

void cpu_sum_grad_heads(const GdnParams& p, const GdnGradParams& gp, const float* dq_heads, const float* dk_heads) {
  const GdnShape& s = p.shape;
  auto* dq = static_cast<float*>(gp.dq);
  auto* dk = static_cast<float*>(gp.dk);
  for (int64_t bt = 0; bt < s.B * s.T; ++bt)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.K; ++i) {
        float sq = 0.0f, sk = 0.0f;
        for (int64_t m = 0; m < s.group(); ++m) {
          const int64_t at = (bt * s.HV + h * s.group() + m) * s.K + i;
          sq += dq_heads[at];
          sk += dk_heads[at];
        }
        dq[(bt * s.H + h) * s.K + i] = round_to(p.dtype, sq);
        dk[(bt * s.H + h) * s.K + i] = round_to(p.dtype, sk);
      }
}
