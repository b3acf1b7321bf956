#include "harness/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

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

namespace {

// Accumulates the comparison of one tensor element by element: the one place the rules live.
class Comparison {
 public:
  explicit Comparison(DType out_dtype)
      : edge_lo_(overflow_threshold(out_dtype) / (1.0 + kOverflowBand)),
        edge_hi_(overflow_threshold(out_dtype) * (1.0 + kOverflowBand)),
        max_finite_(largest_finite(out_dtype)),
        dtype_(out_dtype) {
    m_.present = true;
  }

  // Element i of the output against its float64 reference r.
  void against(int64_t i, float x, double r) {
    ++m_.referenced;
    if (!std::isfinite(r)) ++m_.ref_nonfinite;
    const double a = std::fabs(r);
    const bool beyond = !(a < edge_hi_);  // NaN and inf references too
    const bool at_edge = !beyond && a >= edge_lo_;
    if (beyond || (at_edge && !is_poison(x) && !std::isfinite(x))) {
      ++m_.ref_overflow;
      if (is_poison(x)) ++m_.unwritten;
      else if (!overflow_consistent(x, r)) ++m_.overflow_mismatch;
      return;
    }
    ++m_.compared;
    ref2_ += r * r;
    double rounded = round_to(dtype_, float(r));
    if (!std::isfinite(rounded)) rounded = std::copysign(max_finite_, r);  // at the edge, finite
    floor2_ += (rounded - r) * (rounded - r);
    if (is_poison(x)) {
      ++m_.unwritten;
      return;
    }
    if (!std::isfinite(x)) {
      ++m_.nan_count;
      return;
    }
    const double d = double(x) - r;
    err2_ += d * d;
    if (std::fabs(d) > m_.max_abs || m_.worst_index < 0) {
      m_.max_abs = std::fabs(d);
      m_.worst_index = i;
    }
  }

  // An element without a reference: it must still be written and finite.
  void unreferenced(float x) {
    if (is_poison(x)) ++m_.unwritten;
    else if (!std::isfinite(x)) ++m_.nan_count;
  }

  TensorMetrics finish() {
    const double denom = ref2_ > 0.0 ? std::sqrt(ref2_) : 1.0;
    m_.rel_l2 = std::sqrt(err2_) / denom;
    if (!m_.finite_ok()) m_.rel_l2 = INFINITY;  // never let a partial comparison look good
    m_.floor_rel_l2 = std::sqrt(floor2_) / denom;
    m_.err_vs_floor = m_.floor_rel_l2 > 0.0 ? m_.rel_l2 / m_.floor_rel_l2 : (m_.rel_l2 == 0.0 ? 0.0 : INFINITY);
    return m_;
  }

 private:
  double edge_lo_, edge_hi_, max_finite_;
  DType dtype_;
  double err2_ = 0.0, ref2_ = 0.0, floor2_ = 0.0;
  TensorMetrics m_;
};

}  // namespace

std::string coverage_problem(const char* what, const TensorMetrics& m, DType dtype) {
  if (!m.present) return "";
  if (m.referenced == 0) return std::string(what) + ": no element was compared (the reference covers none)";
  if (m.ref_nonfinite > 0)
    return std::string(what) + ": the float64 reference is non-finite at " + std::to_string(m.ref_nonfinite) + " of " +
           std::to_string(m.referenced) + " elements (the problem overflows float64: nothing to compare there)";
  if (double(m.compared) < kMinComparedShare * double(m.referenced)) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * double(m.compared) / double(m.referenced));
    return std::string(what) + ": only " + share + " of its elements compared by value (the reference lies past " +
           dtype_name(dtype) + "'s range at the rest; at least " + std::to_string(int(kMinComparedShare * 100)) +
           "% needed)";
  }
  return "";
}

TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype) {
  if (got.size() != ref.size())
    throw std::logic_error("compare_to_reference: output and reference sizes differ");
  Comparison cmp(out_dtype);
  for (size_t i = 0; i < got.size(); ++i) cmp.against(int64_t(i), got[i], ref[i]);
  return cmp.finish();
}

namespace {

// The slot of each of `count` indices in `selected` (sorted, distinct, in [0, count)), -1 for the
// indices not selected. Throws with `what` when `selected` breaks those rules.
std::vector<int64_t> slots_of(const std::vector<int64_t>& selected, int64_t count, const char* what) {
  std::vector<int64_t> slot(size_t(count), -1);
  for (size_t r = 0; r < selected.size(); ++r) {
    const int64_t i = selected[r];
    if (i < 0 || i >= count || (r > 0 && i <= selected[r - 1]))
      throw std::logic_error(std::string("compare_to_reference: ") + what +
                             " must be sorted, distinct and in range");
    slot[size_t(i)] = int64_t(r);
  }
  return slot;
}

// Walks `got` in blocks of block_len contiguous elements; ref_offset(block) is where the block's
// reference starts in `ref`, or -1 where there is none (then only the checks that need no
// reference apply). The one loop behind every partial comparison.
template <typename RefOffset>
TensorMetrics compare_blocks(const std::vector<float>& got, const std::vector<double>& ref, DType out_dtype,
                             int64_t block_len, RefOffset&& ref_offset) {
  Comparison cmp(out_dtype);
  const int64_t blocks = block_len > 0 ? int64_t(got.size()) / block_len : 0;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t base = blk * block_len;
    const int64_t at = ref_offset(blk);
    if (at < 0) {
      for (int64_t c = 0; c < block_len; ++c) cmp.unreferenced(got[size_t(base + c)]);
      continue;
    }
    for (int64_t c = 0; c < block_len; ++c) cmp.against(base + c, got[size_t(base + c)], ref[size_t(at + c)]);
  }
  return cmp.finish();
}

}  // namespace

TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype, const RowSelection& sel) {
  const int64_t R = int64_t(sel.selected.size());
  if (sel.outer < 0 || sel.rows < 0 || sel.row_len < 0 || int64_t(got.size()) != sel.outer * sel.rows * sel.row_len ||
      int64_t(ref.size()) != sel.outer * R * sel.row_len)
    throw std::logic_error("compare_to_reference: sizes do not match the row selection");
  // slot[t]: the reference row of row t, or -1 where none was computed.
  const std::vector<int64_t> slot = slots_of(sel.selected, sel.rows, "selected rows");
  return compare_blocks(got, ref, out_dtype, sel.row_len, [&](int64_t blk) -> int64_t {
    const int64_t b = blk / sel.rows, r = slot[size_t(blk % sel.rows)];
    return r < 0 ? -1 : (b * R + r) * sel.row_len;
  });
}

TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype, const HeadSelection& sel) {
  const int64_t n = int64_t(sel.heads.size());
  if (sel.B < 0 || sel.T < 0 || sel.HV < 0 || sel.row_len < 0 ||
      int64_t(got.size()) != sel.B * sel.T * sel.HV * sel.row_len ||
      int64_t(ref.size()) != n * sel.T * sel.row_len)
    throw std::logic_error("compare_to_reference: sizes do not match the head selection");
  // slot[b HV + hv]: the head's place in the reference, or -1 where none was computed.
  const std::vector<int64_t> slot = slots_of(sel.heads, sel.B * sel.HV, "selected heads");
  // Block (b T + t) HV + hv is token t of head (b, hv); the reference holds it at (slot T + t).
  return compare_blocks(got, ref, out_dtype, sel.row_len, [&](int64_t blk) -> int64_t {
    const int64_t hv = blk % sel.HV, bt = blk / sel.HV, b = bt / sel.T, t = bt % sel.T;
    const int64_t r = slot[size_t(b * sel.HV + hv)];
    return r < 0 ? -1 : (r * sel.T + t) * sel.row_len;
  });
}
