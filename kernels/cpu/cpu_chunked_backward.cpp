// cpu_chunked's backward: the chunk adjoint of docs/BACKWARD.md ("The chunk and its adjoint") in
// float32, one (b, hv) head per task, chunks from the last. A forward sweep keeps the state
// entering each chunk (T / C states of K x V); each chunk's gamma, beta, A, Tm, W and U are then
// recomputed from it by the forward's own cpu_chunk_algebra. With dOs = scale dO and dS_C the
// gradient of the state leaving the chunk (dhT for the last chunk, else the dS0 of the next), the
// stages in the reverse order of the forward:
//   output:  dQ, dS0, dgamma from diag(E) Q S0;  dP = (dOs U^T) .* causal: dU, dQ, dK, dgamma
//   state:   dS0 += E_last dS_C;  dU += diag(r) K dS_C;  dK += diag(r) U dS_C^T;  dgamma
//   U = U0 - W S0, U0 = Tm diag(beta) V, W = Tm diag(beta E) K:  dTm (lower), dV, dbeta, dK, dgamma
//   Tm = (I + A)^-1:  dA = -Tm^T dTm Tm^T (strictly lower);  A:  dK, dbeta, dgamma
//   gamma = cumsum(g):  dg_j = sum_{i >= j} dgamma_i within the chunk
// Without the delta term A = W = 0, Tm = I and U = V: only the output and state stages apply and
// dbeta is zero. Rounding: float32 throughout; dq, dk, dv rounded to params.dtype on the way out.
// Workspace: dq and dk per value head ([B, T, HV, K] each, cpu_grad_heads.h), then per worker the
// entering states (ceil(T / C) x K x V), the forward tiles (cpu_chunk_tiles_floats), dS and dS0
// (K x V), dQ, dK, dW (C x K), dU (C x V), dTm and Z (C x C), dgamma (C) and a K-vector.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_chunk_algebra.h"
#include "kernels/cpu/cpu_grad_heads.h"
#include "kernels/cpu/cpu_mutation.h"

namespace {

size_t worker_floats(const GdnParams& p) {
  const int64_t C = p.chunk, K = p.shape.K, V = p.shape.V;
  const int64_t chunks = (p.shape.T + C - 1) / C;
  return size_t((chunks + 2) * K * V) + cpu_chunk_tiles_floats(C, K, V) + size_t(3 * C * K + C * V + 2 * C * C + C + K);
}

}  // namespace

size_t cpu_chunked_backward_workspace_floats(const GdnParams& p, int threads) {
  return cpu_grad_heads_floats(p) + size_t(std::max(1, threads)) * worker_floats(p);
}

CpuStatus run_cpu_chunked_backward(const GdnParams& p, const GdnGradParams& gp, float* workspace, int threads) {
  if (p.shape.num_seqs > 0) return cpu_backward_by_sequence(p, gp, workspace, threads, run_cpu_chunked_backward);
  const GdnShape s = p.shape;
  const int64_t C = p.chunk, K = s.K, V = s.V, KV = K * V;
  if (C != 16 && C != 32 && C != 64) return CpuStatus::unsupported;
  const auto* dout = static_cast<const float*>(gp.dout);
  auto* dv = static_cast<float*>(gp.dv);
  const CpuGradWorkspace gw = cpu_grad_workspace(p, workspace);
  float* dq_heads = gw.dq_heads;
  float* dk_heads = gw.dk_heads;
  float* workers = gw.workers;
  const size_t ws = worker_floats(p);
  const int64_t chunks = (s.T + C - 1) / C;
  cpu_parallel_for(s.B * s.HV, threads, [&](int64_t head, int worker) {
    const CpuChunkHead hd = cpu_chunk_head(p, head);
    float* S0s = workers + worker * ws;  // S0s + n KV: the state entering chunk n
    float* dS = S0s + chunks * KV;       // dL/dS_C of the chunk being differentiated
    float* dS0 = dS + KV;
    CpuChunkTiles c = cpu_chunk_tiles(dS0 + KV, C, K);
    float* dQ = dS0 + KV + cpu_chunk_tiles_floats(C, K, V);
    float* dK = dQ + C * K;
    float* dW = dK + C * K;
    float* dU = dW + C * K;
    float* dTm = dU + C * V;
    float* Z = dTm + C * C;
    float* dgamma = Z + C * C;
    float* tmpK = dgamma + C;

    // Forward sweep: the state entering every chunk.
    float* S = dS;  // scratch for the sweep
    cpu_chunk_initial_state(p, head, S);
    for (int64_t n = 0; n < chunks; ++n) {
      const int64_t t0 = n * C, L = std::min(C, s.T - t0);
      std::copy_n(S, KV, S0s + n * KV);
      cpu_chunk_algebra(hd, t0, L, S, c);
      cpu_chunk_state_update(hd, t0, L, c, S);
    }

    if (gp.dhT && GDN_MUTATE(bwd_drop_dht, true, false)) std::copy_n(gp.dhT + head * KV, KV, dS);
    else std::fill_n(dS, KV, 0.0f);
    for (int64_t n = chunks - 1; n >= 0; --n) {
      const int64_t t0 = n * C, L = std::min(C, s.T - t0);
      const float* S0 = S0s + n * KV;
      cpu_chunk_algebra(hd, t0, L, S0, c);
      const float* gamma = c.gamma;
      const float* beta = c.beta;
      const float g_last = gamma[L - 1];
      const auto D = [&](int64_t i, int64_t j) { return std::exp(gamma[i] - gamma[j]); };
      std::fill_n(dQ, L * K, 0.0f);
      std::fill_n(dK, L * K, 0.0f);
      std::fill_n(dU, L * V, 0.0f);
      std::fill_n(dgamma, L, 0.0f);
      std::fill_n(dS0, KV, 0.0f);
      const auto dOs = [&](int64_t i, int64_t x) { return p.scale * dout[hd.gidx(t0 + i) * V + x]; };

      // Output, inter-chunk: O += scale diag(E) Q S0.
      for (int64_t i = 0; i < L; ++i) {
        const float E = std::exp(gamma[i]);
        const float* qi = hd.q(t0 + i);
        float dgi = 0.0f;
        for (int64_t r = 0; r < K; ++r) {
          float acc = 0.0f;
          for (int64_t x = 0; x < V; ++x) {
            const float d = dOs(i, x);
            acc += S0[r * V + x] * d;
            dS0[r * V + x] += E * qi[r] * d;
          }
          dQ[i * K + r] += E * acc;
          dgi += qi[r] * acc;
        }
        dgamma[i] += E * dgi;
      }
      // Output, intra-chunk: O += scale P U, P = (Q K^T) .* D .* causal_incl_diag.
      for (int64_t i = 0; i < L; ++i) {
        const float* qi = hd.q(t0 + i);
        for (int64_t j = 0; j <= i; ++j) {
          const float* kj = hd.k(t0 + j);
          float qk = 0.0f, dP = 0.0f;
          for (int64_t r = 0; r < K; ++r) qk += qi[r] * kj[r];
          for (int64_t x = 0; x < V; ++x) dP += dOs(i, x) * c.U[j * V + x];
          const float d = D(i, j), P = qk * d;
          for (int64_t x = 0; x < V; ++x) dU[j * V + x] += P * dOs(i, x);
          for (int64_t r = 0; r < K; ++r) {
            dQ[i * K + r] += dP * d * kj[r];
            dK[j * K + r] += dP * d * qi[r];
          }
          // Row sum minus column sum: the diagonal's terms cancel, and are left out so that a large
          // dP_ii P_ii does not round away a small dgamma_i (strong decay: dg ~ exp(g) is tiny).
          if (j < i) {
            dgamma[i] += dP * P;
            dgamma[j] -= dP * P;
          }
        }
      }
      // State: S_C = E_last S0 + (diag(r) K)^T U.
      const float E_last = std::exp(GDN_MUTATE(bwd_decay_index, g_last, L >= 2 ? gamma[L - 2] : g_last));
      float s0_ds = 0.0f;
      for (int64_t x = 0; x < KV; ++x) {
        dS0[x] += E_last * dS[x];
        s0_ds += S0[x] * dS[x];
      }
      dgamma[L - 1] += E_last * s0_ds;
      for (int64_t j = 0; j < L; ++j) {
        const float rj = std::exp(g_last - gamma[j]);
        const float* kj = hd.k(t0 + j);
        float cj = 0.0f;
        for (int64_t r = 0; r < K; ++r) {
          float acc = 0.0f;  // (dS_C U_j)_r
          for (int64_t x = 0; x < V; ++x) {
            dU[j * V + x] += rj * kj[r] * dS[r * V + x];
            acc += dS[r * V + x] * c.U[j * V + x];
          }
          dK[j * K + r] += rj * acc;
          cj += rj * kj[r] * acc;
        }
        if (j < L - 1) {  // the last row's c cancels itself, as the diagonal above
          dgamma[L - 1] += cj;
          dgamma[j] -= cj;
        }
      }

      float* dvrow = nullptr;
      if (!p.use_delta) {  // U = V
        for (int64_t j = 0; j < L; ++j) {
          dvrow = dv + hd.gidx(t0 + j) * V;
          for (int64_t x = 0; x < V; ++x) dvrow[x] = round_to(p.dtype, dU[j * V + x]);
          gp.dbeta[hd.gidx(t0 + j)] = 0.0f;
        }
      } else {
        // U = U0 - W S0: dU0 = dU; dW = -dU S0^T; dS0 -= W^T dU.
        for (int64_t i = 0; i < L; ++i)
          for (int64_t r = 0; r < K; ++r) {
            float acc = 0.0f;
            const float w = c.W[i * K + r];
            for (int64_t x = 0; x < V; ++x) {
              acc += dU[i * V + x] * S0[r * V + x];
              dS0[r * V + x] -= w * dU[i * V + x];
            }
            dW[i * K + r] = -acc;
          }
        // dTm (lower triangle, diagonal included) from U0 = Tm diag(beta) V and W = Tm diag(beta E) K.
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j <= i; ++j) {
            const float* vj = hd.v(t0 + j);
            const float* kj = hd.k(t0 + j);
            float du0 = 0.0f, dw = 0.0f;
            for (int64_t x = 0; x < V; ++x) du0 += dU[i * V + x] * vj[x];
            for (int64_t r = 0; r < K; ++r) dw += dW[i * K + r] * kj[r];
            dTm[i * C + j] = beta[j] * du0 + beta[j] * std::exp(gamma[j]) * dw;
          }
        // Y = Tm^T dU0: dV = diag(beta) Y, dbeta_j += v_j . Y_j. X = Tm^T dW: dK += diag(beta E) X,
        // dbeta_j += E_j k_j . X_j, dgamma_j += beta_j E_j k_j . X_j.
        for (int64_t j = 0; j < L; ++j) {
          const float* vj = hd.v(t0 + j);
          const float* kj = hd.k(t0 + j);
          const float Ej = std::exp(gamma[j]);
          dvrow = dv + hd.gidx(t0 + j) * V;
          float dbeta = 0.0f;
          for (int64_t x = 0; x < V; ++x) {
            float y = 0.0f;
            for (int64_t i = j; i < L; ++i) y += c.Tm[i * C + j] * dU[i * V + x];
            dvrow[x] = round_to(p.dtype, beta[j] * y);  // dV is final: nothing below reads v
            dbeta += vj[x] * y;
          }
          float kx = 0.0f;
          for (int64_t r = 0; r < K; ++r) {
            float xr = 0.0f;
            for (int64_t i = j; i < L; ++i) xr += c.Tm[i * C + j] * dW[i * K + r];
            dK[j * K + r] += beta[j] * Ej * xr;
            kx += kj[r] * xr;
          }
          // The W term is the - S'^T k of the residual v - S'^T k: U = Tm diag(beta) (V - diag(E) K S0).
          dbeta += GDN_MUTATE(bwd_dbeta_no_residual, Ej * kx, 0.0f);
          dgamma[j] += beta[j] * Ej * kx;
          gp.dbeta[hd.gidx(t0 + j)] = dbeta;
        }
        // Tm = (I + A)^-1: dA = -Tm^T dTm Tm^T on the strictly lower triangle. Z = Tm^T dTm.
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < L; ++j) {
            float acc = 0.0f;
            for (int64_t m = std::max(i, j); m < L; ++m) acc += c.Tm[m * C + i] * dTm[m * C + j];
            Z[i * C + j] = acc;
          }
        // A_ij = beta_i (k_i . k_j) D_ij, i > j.
        for (int64_t i = 1; i < L; ++i) {
          const float* ki = hd.k(t0 + i);
          float dbeta_i = 0.0f;
          for (int64_t j = 0; j < i; ++j) {
            float zt = 0.0f;  // (Z Tm^T)_ij
            for (int64_t m = 0; m <= j; ++m) zt += Z[i * C + m] * c.Tm[j * C + m];
            const float dA = -zt;
            const float* kj = hd.k(t0 + j);
            float kk = 0.0f;
            for (int64_t r = 0; r < K; ++r) kk += ki[r] * kj[r];
            const float d = D(i, j);
            const float dKK = beta[i] * dA * d;
            for (int64_t r = 0; r < K; ++r) {
              dK[i * K + r] += dKK * kj[r];
              tmpK[r] = dKK * ki[r];
              dK[j * K + r] += tmpK[r];
            }
            dbeta_i += dA * kk * d;
            const float dAA = dA * c.A[i * C + j];
            dgamma[i] += dAA;
            dgamma[j] -= dAA;
          }
          gp.dbeta[hd.gidx(t0 + i)] += dbeta_i;
        }
      }

      // gamma = cumsum(g): dg_j = sum_{i >= j} dgamma_i.
      if (p.g) {
        const int64_t from = GDN_MUTATE(bwd_tail_cumsum_off_by_one, L - 1, L < C && L >= 2 ? L - 2 : L - 1);
        float acc = 0.0f;
        for (int64_t j = L - 1; j > from; --j) gp.dg[hd.gidx(t0 + j)] = dgamma[j];
        for (int64_t j = from; j >= 0; --j) {
          acc += dgamma[j];
          gp.dg[hd.gidx(t0 + j)] = acc;
        }
      }
      for (int64_t i = 0; i < L; ++i) {
        std::copy_n(dQ + i * K, K, dq_heads + hd.gidx(t0 + i) * K);
        std::copy_n(dK + i * K, K, dk_heads + hd.gidx(t0 + i) * K);
      }
      GDN_MUTANT_ONLY(bwd_dh0_not_propagated, if (n == 0 && gp.dh0) std::copy_n(dS, KV, gp.dh0 + head * KV));
      std::copy_n(dS0, KV, dS);
    }
    if (gp.dh0 && GDN_MUTATE(bwd_dh0_not_propagated, true, false)) std::copy_n(dS, KV, gp.dh0 + head * KV);
  });
  cpu_sum_grad_heads(p, gp, dq_heads, dk_heads);
  return CpuStatus::ok;
}
