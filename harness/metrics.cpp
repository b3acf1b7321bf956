#include "harness/metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

float poison_value_f32() { return bits_float(kPoisonBitsF32); }
bool is_poison(float x) { return float_bits(x) == kPoisonBitsF32; }

double overflow_threshold(DType t) {
  switch (t) {
    case DType::f32: return std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
    case DType::bf16: return std::ldexp(2.0 - std::ldexp(1.0, -8), 127);
    case DType::f16: return 65520.0;
  }
  return INFINITY;
}

int64_t count_bit_differences(const std::vector<float>& a, const std::vector<float>& b) {
  const size_t n = std::min(a.size(), b.size());
  int64_t differ = int64_t(std::max(a.size(), b.size()) - n);
  for (size_t i = 0; i < n; ++i) differ += float_bits(a[i]) != float_bits(b[i]);
  return differ;
}

namespace {

double largest_finite(DType t) {
  switch (t) {
    case DType::f32: return std::ldexp(2.0 - std::ldexp(1.0, -23), 127);
    case DType::bf16: return std::ldexp(2.0 - std::ldexp(1.0, -7), 127);
    case DType::f16: return 65504.0;
  }
  return INFINITY;
}

// Where the reference is past the range an ideal kernel writes inf of the reference's sign. NaN
// is accepted too: past the range a kernel may meet inf - inf, and NaN still reports the overflow.
// A NaN reference (inf - inf in float64) accepts any non-finite value.
bool overflow_consistent(float x, double r) {
  if (std::isnan(x)) return true;
  if (!std::isinf(x)) return false;
  return std::isnan(r) || std::signbit(x) == std::signbit(r);
}

}  // namespace

TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype) {
  if (got.size() != ref.size())
    throw std::logic_error("compare_to_reference: output and reference sizes differ");
  TensorMetrics m;
  m.present = true;
  const double edge_lo = overflow_threshold(out_dtype) / (1.0 + kOverflowBand);
  const double edge_hi = overflow_threshold(out_dtype) * (1.0 + kOverflowBand);
  const double max_finite = largest_finite(out_dtype);
  double err2 = 0.0, ref2 = 0.0, floor2 = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = ref[i];
    const float x = got[i];
    const double a = std::fabs(r);
    const bool beyond = !(a < edge_hi);  // NaN and inf references too
    const bool at_edge = !beyond && a >= edge_lo;
    if (beyond || (at_edge && !is_poison(x) && !std::isfinite(x))) {
      ++m.ref_overflow;
      if (is_poison(x)) ++m.unwritten;
      else if (!overflow_consistent(x, r)) ++m.overflow_mismatch;
      continue;
    }
    ref2 += r * r;
    double rounded = round_to(out_dtype, float(r));
    if (!std::isfinite(rounded)) rounded = std::copysign(max_finite, r);  // at the edge, finite
    floor2 += (rounded - r) * (rounded - r);
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
