// dq and dk of the CPU backwards, kept per value head while the heads (b, hv) run on their own
// threads (several value heads read one q/k head under GVA, so they cannot add into one row), then
// summed over each group in head order: the result does not depend on the thread count.
#pragma once
#include <cstddef>

#include "kernels/common/gdn_grad_params.h"
#include "kernels/common/gdn_params.h"
#include "kernels/cpu/cpu_backend.h"

// Floats of the per-value-head dq and dk, [B, T, HV, K] each, at the front of a backward's workspace.
size_t cpu_grad_heads_floats(const GdnParams& p);
// A backward's workspace: the per-value-head dq and dk, then the workers' scratch.
struct CpuGradWorkspace {
  float* dq_heads;
  float* dk_heads;
  float* workers;
};
CpuGradWorkspace cpu_grad_workspace(const GdnParams& p, float* workspace);
// A packed batch's backward (p.shape.num_seqs > 0): `backward` on each sequence in turn as a batch of
// its own (kernels/common/gdn_sequence_params.h), on the same workspace, which the packed batch's
// size covers. The forwards run a packed batch natively; the backwards recompute states per head
// and keep T-sized scratch, which a per-sequence view gives them unchanged.
using CpuBackwardKernel = CpuStatus (*)(const GdnParams&, const GdnGradParams&, float*, int);
CpuStatus cpu_backward_by_sequence(const GdnParams& p, const GdnGradParams& gp, float* workspace, int threads,
                                   CpuBackwardKernel backward);
// dq[b, t, h] = sum over the value heads hv of h of dq_heads[b, t, hv], rounded to p.dtype; dk alike.
void cpu_sum_grad_heads(const GdnParams& p, const GdnGradParams& gp, const float* dq_heads, const float* dk_heads);
