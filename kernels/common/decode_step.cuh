// One token of the GDN step form for one head, in the work split of the decode kernels
// (kernels/recurrent/recurrent.cu's decode shape and kernels/decode/): a block of kWarps warps over 32
// value columns; lane = column j, warp w holds state rows [w kRows, w kRows + kRows) of that
// column in registers (float32). Every state row is read and written as 128 contiguous bytes per
// warp and a thread holds only kRows floats.
//   S' = alpha S;  u = beta (v - S'^T k);  S = S' + k u^T;  o = scale S^T q
// One pass over the registers gives the partial dot products S^T k, S^T q and k.q; warp 0 sums
// the kWarps partials; the output uses S_new^T q = alpha S^T q + u (k.q), so it needs no second
// reduction after the update. Shared memory: 3 x kWarps x 32 partials + 32 u values.
#pragma once

template <int kWarps>
struct DecodeStepShared {
  float partial[3][kWarps][32];
  float u[32];
  float alpha;
};

// kKeepK: k stays in registers from the dot products to the update (k read from global memory
// once); false reads it again through load_kq for the update (k in shared memory: kRows fewer
// live registers across the reductions, which keeps a kernel with a front end under its cap).
// load_kq(n, k, q): this thread's k and q at state row n of its warp (0 past K).
// column(PS, alpha) -> u: called by warp 0 only, with PS = (S^T k)_j of the old state; sets the
// token's alpha = exp(g) and returns u_j (beta (v_j - alpha PS) with the delta term, else v_j).
// emit(o_j): warp 0 only, the column's output scale (alpha S^T q + u k.q).
template <int kRows, int kWarps, bool kKeepK = true, typename LoadKQ, typename Column, typename Emit>
__device__ __forceinline__ void decode_token_step(float (&S)[kRows], DecodeStepShared<kWarps>& sh, float scale,
                                                  LoadKQ load_kq, Column column, Emit emit) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float kreg[kKeepK ? kRows : 1];
  float ps = 0.0f, pq = 0.0f, kq = 0.0f;
  __syncthreads();  // the previous token's (or head's) partials and u are consumed
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    float kv, qv;
    load_kq(n, kv, qv);
    if constexpr (kKeepK) kreg[n] = kv;
    ps += S[n] * kv;
    pq += S[n] * qv;
    kq += kv * qv;
  }
  sh.partial[0][warp][lane] = ps;
  sh.partial[1][warp][lane] = pq;
  sh.partial[2][warp][lane] = kq;
  __syncthreads();
  if (warp == 0) {
    float PS = 0.0f, PQ = 0.0f, KQ = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      PS += sh.partial[0][w][lane];
      PQ += sh.partial[1][w][lane];
      KQ += sh.partial[2][w][lane];
    }
    float alpha;
    const float u = column(PS, alpha);
    emit(scale * (alpha * PQ + u * KQ));
    sh.u[lane] = u;
    if (lane == 0) sh.alpha = alpha;
  }
  __syncthreads();
  const float u = sh.u[lane], alpha = sh.alpha;
#pragma unroll
  for (int n = 0; n < kRows; ++n) {
    float kv;
    if constexpr (kKeepK) {
      kv = kreg[n];
    } else {
      float unused_q;
      load_kq(n, kv, unused_q);
    }
    S[n] = alpha * S[n] + kv * u;
  }
}
