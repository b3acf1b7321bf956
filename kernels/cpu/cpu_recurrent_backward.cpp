// cpu_recurrent's backward: reverse mode through the step form in float32, one (b, hv) head per
// task (docs/BACKWARD.md, "The recurrent step and its adjoint"). For t = T-1 down to 0, with
// dS = dL/dS_t (dhT at the start, zero without it) and S' = a S_{t-1}, a = exp(g_t):
//   dS += scale q_t dO_t^T;  dq_t = scale S_t dO_t;  du = dS^T k_t;  dk_t = dS u
//   delta: r = v_t - S'^T k_t;  dv_t = beta du;  dbeta_t = du . r;  dk_t -= beta S' du;
//          dS -= beta k_t du^T          (no delta: dv_t = du, dbeta_t = 0)
//   dg_t = a <dS, S_{t-1}>;  dS = a dS
// and dh0 = dS after token 0. The states come from checkpoints: a forward sweep keeps the state
// before every kCheckpointInterval-th token, then each interval's states are recomputed from its
// checkpoint with the forward's own step (cpu_recurrent_step.h), so they are the forward's bit for
// bit. Differs from the float64 reference only in the arithmetic: float32 throughout; dq, dk, dv
// rounded to params.dtype on the way out, dg, dbeta, dh0 kept in float32.
// Workspace: dq and dk per value head ([B, T, HV, K] each, cpu_grad_heads.h), then per worker
// ceil(T / interval) checkpoints and interval + 1 states of K x V, dS, and four vectors.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_grad_heads.h"
#include "kernels/cpu/cpu_mutation.h"
#include "kernels/cpu/cpu_recurrent_step.h"

namespace {

// States kept a head: T / 64 checkpoints and 65 interval states, as the float64 reference.
constexpr int64_t kCheckpointInterval = 64;

size_t worker_floats(const GdnParams& p) {
  const int64_t KV = p.shape.K * p.shape.V;
  const int64_t checkpoints = (p.shape.T + kCheckpointInterval - 1) / kCheckpointInterval;
  return size_t((checkpoints + kCheckpointInterval + 2) * KV + 3 * p.shape.V + p.shape.K);
}

}  // namespace

size_t cpu_recurrent_backward_workspace_floats(const GdnParams& p, int threads) {
  return cpu_grad_heads_floats(p) + size_t(std::max(1, threads)) * worker_floats(p);
}

CpuStatus run_cpu_recurrent_backward(const GdnParams& p, const GdnGradParams& gp, float* workspace, int threads) {
  if (p.shape.num_seqs > 0) return cpu_backward_by_sequence(p, gp, workspace, threads, run_cpu_recurrent_backward);
  const GdnShape s = p.shape;
  const int64_t K = s.K, V = s.V, KV = K * V;
  const auto* q = static_cast<const float*>(p.q);
  const auto* k = static_cast<const float*>(p.k);
  const auto* v = static_cast<const float*>(p.v);
  const auto* dout = static_cast<const float*>(gp.dout);
  auto* dv = static_cast<float*>(gp.dv);
  const CpuGradWorkspace gw = cpu_grad_workspace(p, workspace);
  float* dq_heads = gw.dq_heads;
  float* dk_heads = gw.dk_heads;
  float* workers = gw.workers;
  const size_t ws = worker_floats(p);
  const int64_t checkpoints = (s.T + kCheckpointInterval - 1) / kCheckpointInterval;
  cpu_parallel_for(s.B * s.HV, threads, [&](int64_t head, int worker) {
    const int64_t b = head / s.HV, hv = head % s.HV;
    const int64_t h = cpu_qk_head(s, hv);
    float* ck = workers + worker * ws;             // checkpoints: the state before token c * interval
    float* states = ck + checkpoints * KV;         // states[j]: the state after token t0 + j - 1
    float* dS = states + (kCheckpointInterval + 1) * KV;
    float* u = dS + KV;
    float* r = u + V;
    float* du = r + V;
    float* dk_delta = du + V;  // S' du, K floats
    auto krow = [&](int64_t t) { return k + ((b * s.T + t) * s.H + h) * K; };
    auto qrow = [&](int64_t t) { return q + ((b * s.T + t) * s.H + h) * K; };
    auto gidx = [&](int64_t t) { return (b * s.T + t) * s.HV + hv; };
    auto decay = [&](int64_t t) { return p.g ? std::exp(p.g[gidx(t)]) : 1.0f; };

    // Forward sweep: the checkpoints (the last interval's states are recomputed with the others).
    float* S = states;  // scratch for the sweep
    cpu_initial_state(p, head, S);
    for (int64_t t = 0; t < s.T; ++t) {
      if (t % kCheckpointInterval == 0) std::copy_n(S, KV, ck + (t / kCheckpointInterval) * KV);
      cpu_recurrent_step(p, b, t, hv, krow(t), S, u);
    }

    if (gp.dhT && GDN_MUTATE(bwd_drop_dht, true, false)) std::copy_n(gp.dhT + head * KV, KV, dS);
    else std::fill_n(dS, KV, 0.0f);
    for (int64_t c = checkpoints - 1; c >= 0; --c) {
      const int64_t t0 = c * kCheckpointInterval, t1 = std::min(s.T, t0 + kCheckpointInterval);
      std::copy_n(ck + c * KV, KV, states);
      for (int64_t t = t0; t < t1; ++t) {
        float* next = states + (t - t0 + 1) * KV;
        std::copy_n(states + (t - t0) * KV, KV, next);
        cpu_recurrent_step(p, b, t, hv, krow(t), next, u);
      }
      for (int64_t t = t1 - 1; t >= t0; --t) {
        GDN_MUTANT_ONLY(bwd_dh0_not_propagated, if (t == 0 && gp.dh0) std::copy_n(dS, KV, gp.dh0 + head * KV));
        const float* S_prev = states + (t - t0) * KV;
        const float* S_t = S_prev + KV;
        const float* kt = krow(t);
        const float* qt = qrow(t);
        const float* vt = v + gidx(t) * V;
        const float* dot = dout + gidx(t) * V;
        const float a = decay(t);
        const float beta = p.use_delta ? p.beta[gidx(t)] : 1.0f;
        if (p.use_delta) {  // r = v - S'^T k, u = beta r
          std::copy_n(vt, V, r);
          for (int64_t i = 0; i < K; ++i) {
            const float ak = a * kt[i];
            for (int64_t j = 0; j < V; ++j) r[j] -= S_prev[i * V + j] * ak;
          }
          for (int64_t j = 0; j < V; ++j) u[j] = beta * r[j];
        } else {
          std::copy_n(vt, V, u);
        }
        // o_t = scale S_t^T q_t: dS += scale q_t dO_t^T; dq_t = scale S_t dO_t.
        float* dqt = dq_heads + gidx(t) * K;
        for (int64_t i = 0; i < K; ++i) {
          const float qi = p.scale * qt[i];
          float acc = 0.0f;
          for (int64_t j = 0; j < V; ++j) {
            dS[i * V + j] += qi * dot[j];
            acc += S_t[i * V + j] * dot[j];
          }
          dqt[i] = p.scale * acc;
        }
        // S_t = S' + k_t u^T: du = dS^T k_t; dk_t = dS u.
        std::fill_n(du, V, 0.0f);
        float* dkt = dk_heads + gidx(t) * K;
        for (int64_t i = 0; i < K; ++i) {
          float acc = 0.0f;
          for (int64_t j = 0; j < V; ++j) {
            du[j] += dS[i * V + j] * kt[i];
            acc += dS[i * V + j] * u[j];
          }
          dkt[i] = acc;
        }
        float* dvt = dv + gidx(t) * V;
        if (p.use_delta) {  // u = beta (v - S'^T k)
          float dbeta = 0.0f;
          for (int64_t j = 0; j < V; ++j) {
            dvt[j] = round_to(p.dtype, beta * du[j]);
            dbeta += du[j] * GDN_MUTATE(bwd_dbeta_no_residual, r[j], vt[j]);
          }
          gp.dbeta[gidx(t)] = dbeta;
          for (int64_t i = 0; i < K; ++i) {
            float acc = 0.0f;
            for (int64_t j = 0; j < V; ++j) acc += S_prev[i * V + j] * du[j];
            dk_delta[i] = a * acc;
          }
          for (int64_t i = 0; i < K; ++i) {
            dkt[i] -= beta * dk_delta[i];
            const float bk = beta * kt[i];
            for (int64_t j = 0; j < V; ++j) dS[i * V + j] -= bk * du[j];
          }
        } else {
          for (int64_t j = 0; j < V; ++j) dvt[j] = round_to(p.dtype, du[j]);
          gp.dbeta[gidx(t)] = 0.0f;
        }
        // S' = a S_{t-1}: dg_t = a <dS, S_{t-1}>; dS = a dS.
        if (p.g) {
          float acc = 0.0f;
          for (int64_t x = 0; x < KV; ++x) acc += dS[x] * S_prev[x];
          gp.dg[gidx(t)] = a * acc;
        }
        const float carry = GDN_MUTATE(bwd_decay_index, a, decay(t > 0 ? t - 1 : t));
        for (int64_t x = 0; x < KV; ++x) dS[x] *= carry;
      }
    }
    if (gp.dh0 && GDN_MUTATE(bwd_dh0_not_propagated, true, false)) std::copy_n(dS, KV, gp.dh0 + head * KV);
  });
  cpu_sum_grad_heads(p, gp, dq_heads, dk_heads);
  return CpuStatus::ok;
}
