// CPU backend: float32 GDN kernels, multithreaded over (B, HV). Inputs are float storage holding
// values already rounded to params.dtype; outputs are rounded to it on the way out.
#pragma once
#include <cstddef>

#include "kernels/common/gdn_grad_params.h"
#include "kernels/common/gdn_params.h"

enum class CpuStatus { ok, unsupported };

// Floats of scratch one worker needs; the caller provides threads * this.
size_t cpu_recurrent_workspace_floats(const GdnParams& p);
size_t cpu_chunked_workspace_floats(const GdnParams& p);

CpuStatus run_cpu_recurrent(const GdnParams& p, float* workspace, int threads);
CpuStatus run_cpu_chunked(const GdnParams& p, float* workspace, int threads);

// The backwards (docs/BACKWARD.md): every gradient of gp from the inputs of p and gp.dout (and
// gp.dhT); p.o and p.hT are not read. Each recomputes the forward it needs (cpu_recurrent from
// state checkpoints, cpu_chunked from the state entering each chunk). Workspace: the floats for
// `threads` workers, what they share included.
size_t cpu_recurrent_backward_workspace_floats(const GdnParams& p, int threads);
size_t cpu_chunked_backward_workspace_floats(const GdnParams& p, int threads);
CpuStatus run_cpu_recurrent_backward(const GdnParams& p, const GdnGradParams& gp, float* workspace, int threads);
CpuStatus run_cpu_chunked_backward(const GdnParams& p, const GdnGradParams& gp, float* workspace, int threads);

// Runs work(item, worker) for item in [0, items) on `threads` workers (static round robin).
template <typename Fn>
void cpu_parallel_for(int64_t items, int threads, Fn&& work);
#include "kernels/cpu/cpu_parallel.inl"
