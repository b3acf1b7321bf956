// cpu_chunked: the chunked UT-transform form of docs/DESIGN.md section 1 in float32, one (b, hv) head
// per task, chunks in sequence (the state is carried from one chunk to the next). A packed batch:
// one (sequence, hv) head a task, its chunks counted from the sequence's first token.
//   A = strictly_lower(diag(beta) K K^T .* D); Tm = (I + A)^-1 by forward substitution
//   W = Tm diag(beta exp(gamma)) K; U = Tm diag(beta) V - W S0
//   O = scale (diag(exp(gamma)) Q S0 + (Q K^T .* D .* causal) U)
//   S = exp(gamma_last) S0 + (K .* exp(gamma_last - gamma))^T U
// Differs from cpu_recurrent: matrix products per chunk instead of T rank-1 updates, so its
// rounding differs and it pins the chunk algebra apart from any GPU code. Without the delta term
// beta is 1 and A, W vanish. A tail chunk shorter than C is handled by its length L.
// Workspace per worker: gamma, beta (C each), A and Tm (C x C each), W (C x K), U (C x V), S (K x V).
// The chunk algebra and the state update live in cpu_chunk_algebra.h, shared with the backward.
// GDN_MUTATE / GDN_MUTANT_ONLY: planted bugs of the mutation check (kernels/cpu/cpu_mutation.h); in
// release builds they are the original expression and nothing.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_chunk_algebra.h"
#include "kernels/cpu/cpu_mutation.h"

size_t cpu_chunked_workspace_floats(const GdnParams& p) {
  const int64_t C = p.chunk, K = p.shape.K, V = p.shape.V;
  return cpu_chunk_tiles_floats(C, K, V) + size_t(K * V);
}

CpuStatus run_cpu_chunked(const GdnParams& p, float* workspace, int threads) {
  const GdnShape s = p.shape;
  const int64_t C = p.chunk, K = s.K, V = s.V;
  if (C != 16 && C != 32 && C != 64) return CpuStatus::unsupported;
  auto* o = static_cast<float*>(p.o);
  const size_t ws = cpu_chunked_workspace_floats(p);
  cpu_parallel_for(s.sequences() * s.HV, threads, [&](int64_t head, int worker) {
    const CpuChunkHead hd = cpu_chunk_head(p, head);
    const GdnSequence seq = gdn_sequence(s, p.cu_seqlens, head / s.HV);
    CpuChunkTiles c = cpu_chunk_tiles(workspace + worker * ws, C, K);
    float* S = workspace + worker * ws + cpu_chunk_tiles_floats(C, K, V);
    cpu_chunk_initial_state(p, head, S);
    // Chunks start at the sequence's first token, wherever it lies in a packed batch: a chunk never
    // holds tokens of two sequences.
    const int64_t first = GDN_MUTATE(chunks_on_packed_grid, seq.begin, seq.begin - seq.begin % C);
    for (int64_t t0 = first; t0 < seq.end; t0 += GDN_MUTATE(chunk_off_by_one, C, C - 1)) {
      const int64_t L = std::min(C, seq.end - t0);
      cpu_chunk_algebra(hd, t0, L, S, c);
      // O = scale (diag(exp(gamma)) Q S0 + (Q K^T .* D .* causal) U), from the entering state.
      for (int64_t i = GDN_MUTATE(chunks_on_packed_grid, 0, std::max<int64_t>(0, seq.begin - t0)); i < L; ++i) {
        const float* qi = hd.q(t0 + i);
        float* oi = o + hd.gidx(t0 + i) * V;
        std::fill_n(oi, V, 0.0f);
        const float decay = std::exp(c.gamma[i]);
        for (int64_t r = 0; r < K; ++r) {
          const float qr = decay * qi[r];
          for (int64_t x = 0; x < V; ++x) oi[x] += qr * S[r * V + x];
        }
        for (int64_t j = 0; j <= GDN_MUTATE(readout_before_update, i, i - 1); ++j) {
          float qk = 0.0f;
          const float* kj = hd.k(t0 + j);
          for (int64_t r = 0; r < K; ++r) qk += qi[r] * kj[r];
          const float w = qk * GDN_MUTATE(decay_ratio_underflow, std::exp(c.gamma[i] - c.gamma[j]),
                                          std::exp(c.gamma[i]) / std::exp(c.gamma[j]));
          for (int64_t x = 0; x < V; ++x) oi[x] += w * c.U[j * V + x];
        }
        for (int64_t x = 0; x < V; ++x) oi[x] = round_to(p.dtype, p.scale * oi[x]);
      }
      cpu_chunk_state_update(hd, t0, L, c, S);
    }
    if (p.hT) std::copy_n(S, K * V, p.hT + head * K * V);
  });
  return CpuStatus::ok;
}
