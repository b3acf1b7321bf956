// Float64 backward references of gated DeltaNet; the formulas are derived in docs/BACKWARD.md.
#include "reference/gdn_backward_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reference/gdn_reference_internal.h"

using namespace gdn_ref_internal;

namespace {

void check_backward_args(const GdnShape& s, const GdnRefGradInputs& grad_in,
                         const GdnRefOptions& opt, const char* what, const int32_t* cu_seqlens) {
  check_shape(s, cu_seqlens);
  if (!grad_in.dout) throw std::invalid_argument(std::string(what) + ": dout is required");
  if (opt.heads.empty()) return;
  if (s.num_seqs > 0)
    throw std::invalid_argument(std::string(what) + ": a packed batch computes every head; leave opt.heads empty");
  // dq and dk of a q/k head sum over its group of value heads: a subset takes whole groups.
  const int64_t G = s.group();
  for (size_t i = 0; i < opt.heads.size(); ++i) {
    const int64_t h = opt.heads[i];
    if (h < 0 || h >= s.B * s.HV || (i > 0 && h <= opt.heads[i - 1]))
      throw std::invalid_argument(std::string(what) + ": opt.heads must be sorted, distinct and in [0, B HV)");
    if (h % G == 0 && (i + size_t(G) > opt.heads.size() || opt.heads[i + size_t(G) - 1] != h + G - 1))
      throw std::invalid_argument(std::string(what) + ": opt.heads must hold whole groups of HV / H value heads");
    if (h % G != 0 && (i == 0 || opt.heads[i - 1] != h - 1))
      throw std::invalid_argument(std::string(what) + ": opt.heads must hold whole groups of HV / H value heads");
  }
}

// Every gradient of one problem, or of a subset of its heads (GdnRefOptions::heads), each head's
// rows then packed by its place in the subset ([heads, T, ...], GdnRefGradients). A value head
// writes only its own rows: dq and dk go first to per-value-head rows (the final layout itself when
// HV = H) and are summed over each group in head order afterwards, so the heads need no lock and
// the sum does not depend on the threads.
class GradientBuffers {
 public:
  GradientBuffers(const GdnShape& s, const GdnRefInputs& in, const std::vector<int64_t>& heads) : s_(s) {
    const int64_t n = heads.empty() ? s.B * s.HV : int64_t(heads.size());
    slot_.assign(size_t(s.B * s.HV), -1);
    for (int64_t i = 0; i < n; ++i) slot_[size_t(heads.empty() ? i : heads[size_t(i)])] = i;
    if (!heads.empty()) {
      out_.heads = heads;
      for (int64_t h : heads)
        if (h % s.group() == 0) out_.qk_heads.push_back(h / s.group());
    }
    // In slot order: the full layouts [B, T, HV, .] when every head is computed, else [heads, T, .].
    rows_ = heads.empty() ? s.B * s.T * s.HV : n * s.T;
    const int64_t qk_rows = heads.empty() ? s.B * s.T * s.H : int64_t(out_.qk_heads.size()) * s.T;
    out_.dq.assign(size_t(qk_rows * s.K), 0.0);
    out_.dk.assign(out_.dq.size(), 0.0);
    if (s.group() > 1) {
      dq_heads_.assign(size_t(rows_ * s.K), 0.0);
      dk_heads_.assign(dq_heads_.size(), 0.0);
    }
    out_.dv.assign(size_t(rows_ * s.V), 0.0);
    if (in.g) out_.dg.assign(size_t(rows_), 0.0);
    out_.dbeta.assign(size_t(rows_), 0.0);
    if (in.h0) out_.dh0.assign(size_t(n * s.K * s.V), 0.0);
  }
  double* dq(const HeadView& hd, int64_t t) { return qk_rows(out_.dq, dq_heads_) + row(hd, t) * s_.K; }
  double* dk(const HeadView& hd, int64_t t) { return qk_rows(out_.dk, dk_heads_) + row(hd, t) * s_.K; }
  double* dv(const HeadView& hd, int64_t t) { return out_.dv.data() + row(hd, t) * s_.V; }
  double* dg(const HeadView& hd, int64_t t) {  // nullptr without a gate
    return out_.dg.empty() ? nullptr : out_.dg.data() + row(hd, t);
  }
  double* dbeta(const HeadView& hd, int64_t t) { return out_.dbeta.data() + row(hd, t); }
  double* dh0(const HeadView& hd) {  // nullptr without h0
    return out_.dh0.empty() ? nullptr : out_.dh0.data() + slot(hd) * s_.K * s_.V;
  }

  GdnRefGradients finish() {
    if (s_.group() > 1) {
      sum_over_groups(dq_heads_, out_.dq);
      sum_over_groups(dk_heads_, out_.dk);
    }
    return std::move(out_);
  }

 private:
  int64_t slot(const HeadView& hd) const { return slot_[size_t(hd.b * s_.HV + hd.hv)]; }
  // Row of token t of the head: (b T + t) HV + hv in the full layout, slot T + t in a subset's.
  int64_t row(const HeadView& hd, int64_t t) const {
    return out_.heads.empty() ? (hd.b * s_.T + t) * s_.HV + hd.hv : slot(hd) * s_.T + t;
  }
  double* qk_rows(std::vector<double>& final_rows, std::vector<double>& head_rows) {
    return s_.group() > 1 ? head_rows.data() : final_rows.data();
  }
  // Each q/k head's row of token t is the sum of its group's value-head rows; a subset holds whole
  // groups, consecutive in slot order.
  void sum_over_groups(const std::vector<double>& per_value_head, std::vector<double>& sum) const {
    const int64_t G = s_.group(), K = s_.K;
    const bool subset = !out_.heads.empty();
    const int64_t blocks = subset ? int64_t(out_.qk_heads.size()) : s_.B * s_.T;
    const int64_t per_block = subset ? s_.T : s_.H;
    for (int64_t a = 0; a < blocks; ++a)
      for (int64_t c = 0; c < per_block; ++c) {
        double* dst = sum.data() + (a * per_block + c) * K;
        for (int64_t j = 0; j < G; ++j) {
          // full: block bt, head c, value head c G + j; subset: group a, token c, slot a G + j
          const int64_t src_row = subset ? (a * G + j) * s_.T + c : a * s_.HV + c * G + j;
          const double* part = per_value_head.data() + src_row * K;
          for (int64_t r = 0; r < K; ++r) dst[r] += part[r];
        }
      }
  }

  const GdnShape& s_;
  GdnRefGradients out_;
  std::vector<int64_t> slot_;
  int64_t rows_ = 0;
  std::vector<double> dq_heads_, dk_heads_;
};

void load_state(const double* src, int64_t offset, std::vector<double>& S) {
  if (src) std::copy_n(src + offset, S.size(), S.begin());
  else std::fill(S.begin(), S.end(), 0.0);
}

// ---- recurrent ----

// One head, reverse mode through recurrent_step. Returns early when cancelled.
void recurrent_head_backward(const HeadView& hd, const GdnRefGradInputs& grad_in,
                             const GdnRefOptions& opt, double scale, int64_t interval,
                             GradientBuffers& grads) {
  const int64_t T = hd.s.T, K = hd.s.K, V = hd.s.V, KV = K * V;
  const int64_t checkpoints = (T + interval - 1) / interval;

  // Forward sweep: the state before tokens 0, interval, 2 interval, ...
  std::vector<double> checkpoint(checkpoints * KV), S(KV), u(V);
  load_state(hd.in.h0, hd.state_offset(), S);
  for (int64_t t = 0; t < T; ++t) {
    if (t % interval == 0) {
      if (reference_cancel_requested()) return;
      std::copy(S.begin(), S.end(), checkpoint.begin() + (t / interval) * KV);
    }
    recurrent_step(hd, t, opt.use_delta, S.data(), u.data());
  }

  // Backward sweep. states[i]: the state before token t0 + i, recomputed from the checkpoint;
  // us, residuals: u and v - S'^T k of each token. dS: dL/d(state after the current token).
  std::vector<double> states((interval + 1) * KV), us(interval * V), residuals(interval * V);
  std::vector<double> dS(KV), du(V), dk(K);
  load_state(grad_in.dhT, hd.state_offset(), dS);
  for (int64_t c = checkpoints - 1; c >= 0; --c) {
    if (reference_cancel_requested()) return;
    const int64_t t0 = c * interval, L = std::min(interval, T - t0);
    std::copy_n(checkpoint.begin() + c * KV, KV, states.begin());
    for (int64_t i = 0; i < L; ++i) {
      std::copy_n(states.begin() + i * KV, KV, states.begin() + (i + 1) * KV);
      recurrent_step(hd, t0 + i, opt.use_delta, states.data() + (i + 1) * KV, us.data() + i * V,
                     residuals.data() + i * V);
    }
    for (int64_t i = L - 1; i >= 0; --i) {
      const int64_t t = t0 + i;
      const double* S_t = states.data() + (i + 1) * KV;
      const double* S_prev = states.data() + i * KV;
      const double* q = hd.q(t);
      const double* k = hd.k(t);
      const double* dout = grad_in.dout + hd.o_offset(t);
      const double alpha = std::exp(hd.g(t));
      // o = scale S^T q.
      double* dq = grads.dq(hd, t);
      for (int64_t r = 0; r < K; ++r) {
        double acc = 0.0;
        for (int64_t x = 0; x < V; ++x) acc += S_t[r * V + x] * dout[x];
        dq[r] = scale * acc;
        for (int64_t x = 0; x < V; ++x) dS[r * V + x] += scale * q[r] * dout[x];
      }
      // S = S' + k u^T.
      const double* u_t = us.data() + i * V;
      for (int64_t x = 0; x < V; ++x) {
        double acc = 0.0;
        for (int64_t r = 0; r < K; ++r) acc += dS[r * V + x] * k[r];
        du[x] = acc;
      }
      for (int64_t r = 0; r < K; ++r) {
        double acc = 0.0;
        for (int64_t x = 0; x < V; ++x) acc += dS[r * V + x] * u_t[x];
        dk[r] = acc;
      }
      double* dv = grads.dv(hd, t);
      if (opt.use_delta) {
        // u = beta (v - S'^T k): v gets beta du; S' and k get the outer product with -beta du.
        const double beta = hd.beta(t);
        const double* residual = residuals.data() + i * V;
        double dbeta = 0.0;
        for (int64_t x = 0; x < V; ++x) {
          dv[x] = beta * du[x];
          dbeta += du[x] * residual[x];
        }
        *grads.dbeta(hd, t) = dbeta;
        for (int64_t r = 0; r < K; ++r) {
          double acc = 0.0;
          for (int64_t x = 0; x < V; ++x) acc += S_prev[r * V + x] * du[x];
          dk[r] -= beta * alpha * acc;  // S' = alpha S_prev
          for (int64_t x = 0; x < V; ++x) dS[r * V + x] -= beta * k[r] * du[x];
        }
      } else {
        std::copy(du.begin(), du.end(), dv);
      }
      std::copy(dk.begin(), dk.end(), grads.dk(hd, t));
      // S' = exp(g) S_prev: dS now holds dL/dS'.
      if (double* dg = grads.dg(hd, t)) {
        double acc = 0.0;
        for (int64_t x = 0; x < KV; ++x) acc += dS[x] * S_prev[x];
        *dg = alpha * acc;
      }
      for (double& x : dS) x *= alpha;
    }
  }
  if (double* dh0 = grads.dh0(hd)) std::copy(dS.begin(), dS.end(), dh0);
}

// ---- chunked ----

// Adjoints of one chunk's rows (C rows; rows past the chunk's length stay zero).
struct ChunkAdjoints {
  std::vector<double> dq, dk, dW;     // [C, K]
  std::vector<double> dv, dU;         // [C, V]
  std::vector<double> dT_inv, G_Tt;   // [C, C]: dL/dT_inv; dT_inv T_inv^T
  std::vector<double> dA;             // [C, C]
  std::vector<double> dgamma, dbeta;  // [C]
  std::vector<double> row_K, row_V;   // scratch
  ChunkAdjoints(int64_t C, int64_t K, int64_t V)
      : dq(C * K), dk(C * K), dW(C * K), dv(C * V), dU(C * V), dT_inv(C * C), G_Tt(C * C),
        dA(C * C), dgamma(C), dbeta(C), row_K(K), row_V(V) {}
  void clear() {
    for (auto* x : {&dq, &dk, &dW, &dv, &dU, &dT_inv, &G_Tt, &dA, &dgamma, &dbeta})
      std::fill(x->begin(), x->end(), 0.0);
  }
};

double dot(const double* a, const double* b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// Reverse mode through one chunk [t0, t0 + L) of gdn_chunked_ref, given its algebra `c` (from
// the entering state S0), dout (the whole [B, T, HV, V] tensor) and dS_next = dL/d(state leaving the chunk). Fills `adj` and
// dS0 = dL/dS0. The steps run in the reverse order of the forward's.
void chunk_backward(const HeadView& hd, int64_t t0, int64_t L, bool use_delta, double scale,
                    const ChunkAlgebra& c, const double* S0, const double* dout,
                    const double* dS_next, double* dS0, ChunkAdjoints& adj) {
  const int64_t C = c.C, K = c.K, V = c.V;
  const std::vector<double>& gamma = c.gamma;
  const std::vector<double>& beta = c.beta;
  const std::vector<double>& Ti = c.T_inv;
  auto q = [&](int64_t i) { return hd.q(t0 + i); };
  auto k = [&](int64_t i) { return hd.k(t0 + i); };
  auto v = [&](int64_t i) { return hd.v(t0 + i); };
  double* dq = adj.dq.data();
  double* dk = adj.dk.data();
  double* dU = adj.dU.data();
  double* dW = adj.dW.data();
  double* dTi = adj.dT_inv.data();
  double* dgamma = adj.dgamma.data();
  double* dbeta = adj.dbeta.data();
  double* row_V = adj.row_V.data();
  double* row_K = adj.row_K.data();
  adj.clear();
  std::fill(dS0, dS0 + K * V, 0.0);

  // O = scale (diag(exp(gamma)) Q S0 + P U), P = (Q K^T) .* D .* causal (diagonal included).
  for (int64_t i = 0; i < L; ++i) {
    const double* dout_i = dout + hd.o_offset(t0 + i);
    for (int64_t x = 0; x < V; ++x) row_V[x] = scale * dout_i[x];  // scale folded into dL/dO_i
    const double E_i = std::exp(gamma[i]);
    double q_S0_dout = 0.0;
    for (int64_t r = 0; r < K; ++r) {
      const double S0_dout = dot(S0 + r * V, row_V, V);
      dq[i * K + r] += E_i * S0_dout;
      q_S0_dout += q(i)[r] * S0_dout;
      for (int64_t x = 0; x < V; ++x) dS0[r * V + x] += E_i * q(i)[r] * row_V[x];
    }
    dgamma[i] += E_i * q_S0_dout;
    for (int64_t j = 0; j <= i; ++j) {
      const double D = std::exp(gamma[i] - gamma[j]);
      const double P = dot(q(i), k(j), K) * D;
      const double dP = dot(row_V, c.U.data() + j * V, V);
      for (int64_t x = 0; x < V; ++x) dU[j * V + x] += P * row_V[x];
      const double dqk = dP * D;
      for (int64_t r = 0; r < K; ++r) {
        dq[i * K + r] += dqk * k(j)[r];
        dk[j * K + r] += dqk * q(i)[r];
      }
      dgamma[i] += dP * P;  // D_ij = exp(gamma_i - gamma_j)
      dgamma[j] -= dP * P;
    }
  }

  // S_next = exp(gamma_last) S0 + sum_j exp(gamma_last - gamma_j) k_j U_j^T.
  const double E_last = std::exp(gamma[L - 1]);
  dgamma[L - 1] += E_last * dot(S0, dS_next, K * V);
  for (int64_t x = 0; x < K * V; ++x) dS0[x] += E_last * dS_next[x];
  for (int64_t j = 0; j < L; ++j) {
    const double decay = std::exp(gamma[L - 1] - gamma[j]);
    for (int64_t x = 0; x < V; ++x) {
      double acc = 0.0;
      for (int64_t r = 0; r < K; ++r) acc += k(j)[r] * dS_next[r * V + x];
      dU[j * V + x] += decay * acc;
    }
    double k_dS_U = 0.0;
    for (int64_t r = 0; r < K; ++r) {
      const double dS_U = dot(dS_next + r * V, c.U.data() + j * V, V);
      dk[j * K + r] += decay * dS_U;
      k_dS_U += k(j)[r] * dS_U;
    }
    dgamma[L - 1] += decay * k_dS_U;
    dgamma[j] -= decay * k_dS_U;
  }

  // U = U0 - W S0 (W is zero without the delta term).
  if (use_delta)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t r = 0; r < K; ++r) {
        dW[i * K + r] = -dot(S0 + r * V, dU + i * V, V);
        for (int64_t x = 0; x < V; ++x) dS0[r * V + x] -= c.W[i * K + r] * dU[i * V + x];
      }

  // U0 = T_inv diag(beta) V, with dL/dU0 = dU.
  for (int64_t j = 0; j < L; ++j) {
    std::fill(row_V, row_V + V, 0.0);  // T_inv^T dU, row j
    for (int64_t i = j; i < L; ++i) {
      dTi[i * C + j] += beta[j] * dot(dU + i * V, v(j), V);
      for (int64_t x = 0; x < V; ++x) row_V[x] += Ti[i * C + j] * dU[i * V + x];
    }
    for (int64_t x = 0; x < V; ++x) adj.dv[j * V + x] = beta[j] * row_V[x];
    if (use_delta) dbeta[j] += dot(v(j), row_V, V);
  }
  if (use_delta) {
    // W = T_inv diag(beta exp(gamma)) K.
    for (int64_t j = 0; j < L; ++j) {
      const double E_j = std::exp(gamma[j]), beta_E = beta[j] * E_j;
      std::fill(row_K, row_K + K, 0.0);  // T_inv^T dW, row j
      for (int64_t i = j; i < L; ++i) {
        dTi[i * C + j] += beta_E * dot(dW + i * K, k(j), K);
        for (int64_t r = 0; r < K; ++r) row_K[r] += Ti[i * C + j] * dW[i * K + r];
      }
      for (int64_t r = 0; r < K; ++r) dk[j * K + r] += beta_E * row_K[r];
      const double k_row = dot(k(j), row_K, K);
      dbeta[j] += E_j * k_row;
      dgamma[j] += beta_E * k_row;
    }
    // T_inv = (I + A)^-1: dA = -T_inv^T dT_inv T_inv^T on the strictly lower triangle, where A
    // lives. All three are lower triangular, which bounds the sums.
    double* G_Tt = adj.G_Tt.data();
    for (int64_t m = 0; m < L; ++m)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0.0;
        for (int64_t n = 0; n <= j; ++n) acc += dTi[m * C + n] * Ti[j * C + n];
        G_Tt[m * C + j] = acc;
      }
    double* dA = adj.dA.data();
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < i; ++j) {
        double acc = 0.0;
        for (int64_t m = i; m < L; ++m) acc += Ti[m * C + i] * G_Tt[m * C + j];
        dA[i * C + j] = -acc;
      }
    // A_ij = beta_i (k_i . k_j) D_ij, j < i.
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < i; ++j) {
        const double D = std::exp(gamma[i] - gamma[j]);
        const double kk = dot(k(i), k(j), K);
        dbeta[i] += dA[i * C + j] * kk * D;
        const double dkk = dA[i * C + j] * beta[i] * D;
        for (int64_t r = 0; r < K; ++r) {
          dk[i * K + r] += dkk * k(j)[r];
          dk[j * K + r] += dkk * k(i)[r];
        }
        const double dD = dA[i * C + j] * c.A[i * C + j];
        dgamma[i] += dD;
        dgamma[j] -= dD;
      }
  }
}

// One head, chunk by chunk backwards. Returns early when cancelled.
void chunked_head_backward(const HeadView& hd, const GdnRefGradInputs& grad_in,
                           const GdnRefOptions& opt, double scale, int64_t C,
                           GradientBuffers& grads) {
  const int64_t T = hd.s.T, K = hd.s.K, V = hd.s.V, KV = K * V;
  const int64_t N = (T + C - 1) / C;
  ChunkAlgebra c(C, K, V);

  // Forward sweep: the state entering each chunk.
  std::vector<double> chunk_states(N * KV), S(KV), S_next(KV);
  load_state(hd.in.h0, hd.state_offset(), S);
  for (int64_t n = 0; n < N; ++n) {
    if (reference_cancel_requested()) return;
    const int64_t t0 = n * C, L = std::min(C, T - t0);
    std::copy(S.begin(), S.end(), chunk_states.begin() + n * KV);
    compute_chunk_algebra(hd, t0, L, opt.use_delta, S.data(), c);
    chunk_next_state(hd, t0, L, c, S.data(), S_next.data());
    S.swap(S_next);
  }

  // Backward: dS holds dL/d(state leaving chunk n), dS0 receives dL/d(state entering it).
  ChunkAdjoints adj(C, K, V);
  std::vector<double> dS(KV), dS0(KV);
  load_state(grad_in.dhT, hd.state_offset(), dS);
  for (int64_t n = N - 1; n >= 0; --n) {
    if (reference_cancel_requested()) return;
    const int64_t t0 = n * C, L = std::min(C, T - t0);
    const double* S0 = chunk_states.data() + n * KV;
    compute_chunk_algebra(hd, t0, L, opt.use_delta, S0, c);
    chunk_backward(hd, t0, L, opt.use_delta, scale, c, S0, grad_in.dout, dS.data(), dS0.data(),
                   adj);
    double dg_suffix = 0.0;  // gamma_i = sum_{j <= i} g_j, so dg_j = sum_{i >= j} dgamma_i
    for (int64_t i = L - 1; i >= 0; --i) {
      const int64_t t = t0 + i;
      std::copy_n(adj.dq.begin() + i * K, K, grads.dq(hd, t));
      std::copy_n(adj.dk.begin() + i * K, K, grads.dk(hd, t));
      std::copy_n(adj.dv.begin() + i * V, V, grads.dv(hd, t));
      dg_suffix += adj.dgamma[i];
      if (double* dg = grads.dg(hd, t)) *dg = dg_suffix;
      if (opt.use_delta) *grads.dbeta(hd, t) = adj.dbeta[i];
    }
    dS.swap(dS0);
  }
  if (double* dh0 = grads.dh0(hd)) std::copy(dS.begin(), dS.end(), dh0);
}

// A packed batch's gradients: `one(shape, inputs, grad inputs)` on every sequence in turn, as a
// batch of its own (packed_forward_ref's counterpart), each gradient placed at the sequence's
// offsets: the tokens of a sequence, its h0's gradient at its state.
template <typename Fn>
GdnRefGradients packed_backward_ref(const GdnShape& s, const GdnRefInputs& in, const GdnRefGradInputs& grad_in,
                                    Fn&& one) {
  GdnRefGradients out;
  out.dq.assign(size_t(s.qk_elems()), 0.0);
  out.dk.assign(size_t(s.qk_elems()), 0.0);
  out.dv.assign(size_t(s.v_elems()), 0.0);
  if (in.g) out.dg.assign(size_t(s.gate_elems()), 0.0);
  out.dbeta.assign(size_t(s.gate_elems()), 0.0);
  if (in.h0) out.dh0.assign(size_t(s.state_elems()), 0.0);
  for (int64_t n = 0; n < s.num_seqs; ++n) {
    const GdnSequenceView view = gdn_sequence_view(s, in.cu_seqlens, n);
    const GdnRefGradInputs one_grad{grad_in.dout + view.v, grad_in.dhT ? grad_in.dhT + view.state : nullptr};
    const GdnRefGradients r = one(view.shape, sequence_inputs(in, view), one_grad);
    std::copy(r.dq.begin(), r.dq.end(), out.dq.begin() + view.qk);
    std::copy(r.dk.begin(), r.dk.end(), out.dk.begin() + view.qk);
    std::copy(r.dv.begin(), r.dv.end(), out.dv.begin() + view.v);
    std::copy(r.dg.begin(), r.dg.end(), out.dg.begin() + (r.dg.empty() ? 0 : view.gate));
    std::copy(r.dbeta.begin(), r.dbeta.end(), out.dbeta.begin() + view.gate);
    std::copy(r.dh0.begin(), r.dh0.end(), out.dh0.begin() + (r.dh0.empty() ? 0 : view.state));
  }
  return out;
}

}  // namespace

GdnRefGradients gdn_recurrent_backward_ref(const GdnShape& s, const GdnRefInputs& in,
                                           const GdnRefGradInputs& grad_in,
                                           const GdnRefOptions& opt, int64_t checkpoint_interval) {
  check_backward_args(s, grad_in, opt, "gdn_recurrent_backward_ref", in.cu_seqlens);
  if (checkpoint_interval < 1)
    throw std::invalid_argument("gdn_recurrent_backward_ref: checkpoint_interval must be positive");
  if (s.num_seqs > 0)
    return packed_backward_ref(s, in, grad_in, [&](const GdnShape& one, const GdnRefInputs& one_in,
                                                   const GdnRefGradInputs& one_grad) {
      return gdn_recurrent_backward_ref(one, one_in, one_grad, opt, checkpoint_interval);
    });
  const double scale = resolve_scale(opt, s.K);
  GradientBuffers grads(s, in, opt.heads);
  for_each_head(s, opt.heads, opt.threads, [&](int64_t, int64_t b, int64_t hv) {
    recurrent_head_backward(HeadView{s, in, b, hv}, grad_in, opt, scale, checkpoint_interval, grads);
  });
  if (reference_cancel_requested()) throw ReferenceCancelled();
  return grads.finish();
}

GdnRefGradients gdn_chunked_backward_ref(const GdnShape& s, const GdnRefInputs& in,
                                         const GdnRefGradInputs& grad_in, const GdnRefOptions& opt,
                                         int64_t chunk) {
  check_backward_args(s, grad_in, opt, "gdn_chunked_backward_ref", in.cu_seqlens);
  if (chunk < 1) throw std::invalid_argument("gdn_chunked_backward_ref: chunk must be positive");
  if (s.num_seqs > 0)
    return packed_backward_ref(s, in, grad_in, [&](const GdnShape& one, const GdnRefInputs& one_in,
                                                   const GdnRefGradInputs& one_grad) {
      return gdn_chunked_backward_ref(one, one_in, one_grad, opt, chunk);
    });
  const double scale = resolve_scale(opt, s.K);
  GradientBuffers grads(s, in, opt.heads);
  for_each_head(s, opt.heads, opt.threads, [&](int64_t, int64_t b, int64_t hv) {
    chunked_head_backward(HeadView{s, in, b, hv}, grad_in, opt, scale, chunk, grads);
  });
  if (reference_cancel_requested()) throw ReferenceCancelled();
  return grads.finish();
}
