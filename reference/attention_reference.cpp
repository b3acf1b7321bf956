#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#include "reference/gdn_reference.h"

namespace {
// Softmax-weighted sum of value rows for one query, with the row max subtracted for stability.
void attend_one(const double* q, const double* k_base, const double* v_base, int64_t n_keys,
                int64_t key_stride, int64_t D, int64_t Dv, double scale, double* o) {
  std::vector<double> logits(n_keys);
  double row_max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n_keys; ++j) {
    double dot = 0.0;
    for (int64_t c = 0; c < D; ++c) dot += q[c] * k_base[j * key_stride * D + c];
    logits[j] = scale * dot;
    row_max = std::max(row_max, logits[j]);
  }
  double denom = 0.0;
  std::fill(o, o + Dv, 0.0);
  for (int64_t j = 0; j < n_keys; ++j) {
    const double p = std::exp(logits[j] - row_max);
    denom += p;
    for (int64_t c = 0; c < Dv; ++c) o[c] += p * v_base[j * key_stride * Dv + c];
  }
  for (int64_t c = 0; c < Dv; ++c) o[c] /= denom;
}
// attend_one over keys in two parts, the cached ones (float storage) first, then the new ones.
void attend_two_parts(const double* q, const float* kc, const float* vc, int64_t n_cached,
                      const double* kn, const double* vn, int64_t n_new, int64_t key_stride,
                      int64_t D, int64_t Dv, double scale, double* o) {
  const int64_t n = n_cached + n_new;
  std::vector<double> logits(n);
  double row_max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    double dot = 0.0;
    if (j < n_cached)
      for (int64_t c = 0; c < D; ++c) dot += q[c] * double(kc[j * key_stride * D + c]);
    else
      for (int64_t c = 0; c < D; ++c) dot += q[c] * kn[(j - n_cached) * key_stride * D + c];
    logits[j] = scale * dot;
    row_max = std::max(row_max, logits[j]);
  }
  double denom = 0.0;
  std::fill(o, o + Dv, 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const double p = std::exp(logits[j] - row_max);
    denom += p;
    if (j < n_cached)
      for (int64_t c = 0; c < Dv; ++c) o[c] += p * double(vc[j * key_stride * Dv + c]);
    else
      for (int64_t c = 0; c < Dv; ++c) o[c] += p * vn[(j - n_cached) * key_stride * Dv + c];
  }
  for (int64_t c = 0; c < Dv; ++c) o[c] /= denom;
}
}  // namespace

std::vector<double> attention_cache_rows_ref(int64_t B, int64_t T, int64_t context, int64_t H,
                                             int64_t D, int64_t Dv, const double* q,
                                             const double* k, const double* v,
                                             const float* k_cache, const float* v_cache,
                                             double scale, const std::vector<int64_t>& rows,
                                             int threads) {
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] < 0 || rows[r] >= T || (r > 0 && rows[r] <= rows[r - 1]))
      throw std::invalid_argument("attention_cache_rows_ref: rows must be sorted, distinct and in [0, T)");
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(D));
  const int64_t R = int64_t(rows.size());
  std::vector<double> o(B * R * H * Dv);
  // Rows differ in cost (row t reads context + t + 1 keys), so workers take the next (b, h, row)
  // from a shared counter instead of a fixed stride.
  const int64_t items = B * H * R;
  std::atomic<int64_t> next{0};
  const int n = int(std::max<int64_t>(1, std::min<int64_t>(threads, items)));
  std::vector<std::thread> pool;
  for (int w = 0; w < n; ++w)
    pool.emplace_back([&] {
      for (int64_t i = next++; i < items; i = next++) {
        if (reference_cancel_requested()) return;  // thrown below, after the join
        const int64_t r = i % R, h = (i / R) % H, b = i / (R * H);
        const int64_t t = rows[r];
        const int64_t cached = (b * context * H + h);  // first cached row of (b, h)
        attend_two_parts(q + ((b * T + t) * H + h) * D, context > 0 ? k_cache + cached * D : nullptr,
                         context > 0 ? v_cache + cached * Dv : nullptr, context, k + (b * T * H + h) * D,
                         v + (b * T * H + h) * Dv, t + 1, H, D, Dv, scale,
                         o.data() + ((b * R + r) * H + h) * Dv);
      }
    });
  for (auto& th : pool) th.join();
  if (reference_cancel_requested()) throw ReferenceCancelled();
  return o;
}

std::vector<double> attention_cache_ref(int64_t B, int64_t T, int64_t context, int64_t H,
                                        int64_t D, int64_t Dv, const double* q, const double* k,
                                        const double* v, const float* k_cache,
                                        const float* v_cache, double scale, int threads) {
  std::vector<int64_t> every_row(T);
  for (int64_t t = 0; t < T; ++t) every_row[t] = t;
  return attention_cache_rows_ref(B, T, context, H, D, Dv, q, k, v, k_cache, v_cache, scale, every_row, threads);
}

std::vector<double> attention_ref(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Dv,
                                  const double* q, const double* k, const double* v, double scale,
                                  bool causal, int threads) {
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(D));
  std::vector<double> o(B * T * H * Dv);
  // Query rows are independent: worker w takes rows w, w + n, ... (balanced under the causal mask).
  const int64_t rows = B * H * T;
  const int n = int(std::max<int64_t>(1, std::min<int64_t>(threads, rows)));
  std::vector<std::thread> pool;
  for (int w = 0; w < n; ++w)
    pool.emplace_back([&, w] {
      for (int64_t r = w; r < rows; r += n) {
        if (reference_cancel_requested()) return;  // thrown below, after the join
        const int64_t t = r % T, h = (r / T) % H, b = r / (T * H);
        const int64_t n_keys = causal ? t + 1 : T;
        attend_one(q + ((b * T + t) * H + h) * D, k + (b * T * H + h) * D,
                   v + (b * T * H + h) * Dv, n_keys, H, D, Dv, scale,
                   o.data() + ((b * T + t) * H + h) * Dv);
      }
    });
  for (auto& th : pool) th.join();
  if (reference_cancel_requested()) throw ReferenceCancelled();
  return o;
}

std::vector<double> attention_decode_ref(int64_t B, int64_t L, int64_t H, int64_t D, int64_t Dv,
                                         const double* q, const double* k_cache,
                                         const double* v_cache, double scale) {
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(D));
  std::vector<double> o(B * H * Dv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      attend_one(q + (b * H + h) * D, k_cache + (b * L * H + h) * D,
                 v_cache + (b * L * H + h) * Dv, L, H, D, Dv, scale, o.data() + (b * H + h) * Dv);
  return o;
}
