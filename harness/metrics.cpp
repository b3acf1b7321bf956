#include "harness/metrics.h"

#include <cmath>
#include <stdexcept>

float poison_value_f32() { return bits_float(kPoisonBitsF32); }
bool is_poison(float x) { return float_bits(x) == kPoisonBitsF32; }

TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype) {
  if (got.size() != ref.size())
    throw std::logic_error("compare_to_reference: output and reference sizes differ");
  TensorMetrics m;
  m.present = true;
  double err2 = 0.0, ref2 = 0.0, floor2 = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = ref[i];
    ref2 += r * r;
    const double rounded = round_to(out_dtype, float(r));
    floor2 += (rounded - r) * (rounded - r);
    const float x = got[i];
    if (is_poison(x)) {
      ++m.unwritten;
      continue;
    }
    if (!std::isfinite(x)) {
      ++m.nan_count;
      continue;
    }
    const double d = double(x) - r;
    err2 += d * d;
    if (std::fabs(d) > m.max_abs || m.worst_index < 0) {
      m.max_abs = std::fabs(d);
      m.worst_index = int64_t(i);
    }
  }
  const double denom = ref2 > 0.0 ? std::sqrt(ref2) : 1.0;
  m.rel_l2 = std::sqrt(err2) / denom;
  if (!m.finite_ok()) m.rel_l2 = INFINITY;  // never let a partial comparison look good
  m.floor_rel_l2 = std::sqrt(floor2) / denom;
  m.err_vs_floor = m.floor_rel_l2 > 0.0 ? m.rel_l2 / m.floor_rel_l2 : (m.rel_l2 == 0.0 ? 0.0 : INFINITY);
  return m;
}
