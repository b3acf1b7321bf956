// Comparison of a kernel's output against the float64 reference (docs/DESIGN.md section 3).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/dtype.h"

// Outputs are filled with this NaN before each run; an element still holding these bits after
// the run was never written. 16-bit outputs are mapped to it when read back.
constexpr uint32_t kPoisonBitsF32 = 0x7FC5A5A5u;
constexpr uint16_t kPoisonBitsBf16 = 0x7FA5u;
constexpr uint16_t kPoisonBitsF16 = 0x7EA5u;
float poison_value_f32();
bool is_poison(float x);

struct TensorMetrics {
  bool present = false;       // false: the tensor was not produced / not compared
  double rel_l2 = 0.0;        // ||x - ref|| / ||ref|| (||x - ref|| when ref is all zero)
  double max_abs = 0.0;       // max |x - ref| over finite elements
  int64_t worst_index = -1;   // flat index of max_abs
  double floor_rel_l2 = 0.0;  // rel_l2 of ref rounded to the output dtype: the ideal kernel
  double err_vs_floor = 0.0;  // rel_l2 / floor_rel_l2
  int64_t nan_count = 0;      // non-finite elements written where the reference is in range
  int64_t unwritten = 0;      // elements still holding the poison
  // Elements whose reference lies beyond the output dtype's range (or is itself non-finite): the
  // ideal kernel writes +-inf there. They are left out of rel_l2, max_abs and the floor; each
  // must come back as inf of the reference's sign, or NaN (rule: docs/TOLERANCES.md).
  int64_t ref_overflow = 0;
  int64_t overflow_mismatch = 0;  // of those, elements written finite or as the other inf
  // What the comparison covered: elements that had a reference, those compared by value (the
  // reference in the dtype's range: they make rel_l2), and those whose float64 reference is
  // itself non-finite (nothing to compare with). coverage_problem() judges these.
  int64_t referenced = 0;
  int64_t compared = 0;
  int64_t ref_nonfinite = 0;
  bool finite_ok() const { return nan_count == 0 && unwritten == 0 && overflow_mismatch == 0; }
};

// A PASS must rest on a comparison: at least this share of a tensor's referenced elements compared
// by value. The rest may lie past the dtype's range (the kernel must write the matching inf there,
// docs/TOLERANCES.md), as in the gate's growing-state case (15% of o past fp16's range), but a
// problem whose reference is mostly past the range tests nothing.
constexpr double kMinComparedShare = 0.5;
// Why the comparison of `what` covered too little to judge it (nothing referenced, a non-finite
// float64 reference, or under kMinComparedShare compared by value), or "" when it covered enough.
std::string coverage_problem(const char* what, const TensorMetrics& m, DType dtype);

// The smallest magnitude that rounds to infinity in dtype t (round to nearest even): 65520 for
// fp16, (2 - 2^-8) 2^127 for bf16, (2 - 2^-24) 2^127 for fp32.
double overflow_threshold(DType t);
// A reference element within this relative distance of the overflow threshold may come back
// either finite (compared as usual) or as the matching inf: a kernel's own rounding error decides
// which side of the threshold it lands, and either is right.
constexpr double kOverflowBand = 1.0 / 64.0;

// Elements whose bits differ (the determinism check); size differences count as differing.
int64_t count_bit_differences(const std::vector<float>& a, const std::vector<float>& b);

// `got` as float (values representable in out_dtype); ref in float64, same layout.
TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype);

// Which rows of a tensor laid out [outer, rows, row_len] a reference covers: `selected` (sorted,
// distinct, in [0, rows)); the reference holds only those, as [outer, selected.size(), row_len].
// Attention o [B, T, HV, V] sampled by query row: outer B, rows T, row_len HV V.
struct RowSelection {
  int64_t outer = 1;
  int64_t rows = 0;
  int64_t row_len = 0;
  std::vector<int64_t> selected;
};

// compare_to_reference where the reference covers only the selected rows: rel_l2, max_abs, the
// floor and err_vs_floor are over those rows (worst_index still indexes `got`), while the checks
// that need no reference run over every element: an element still holding the poison counts in
// `unwritten`, a non-finite one in `nan_count` (no reference there, so no overflow is expected;
// use it only where outputs are bounded by the inputs, as attention's convex combinations are).
TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype, const RowSelection& sel);

// Which (b, hv) heads of a tensor laid out [B, T, HV, row_len] a reference covers: `heads`, as flat
// indices b HV + hv (sorted, distinct, in [0, B HV)); the reference holds only those, as
// [heads.size(), T, row_len]. GDN o [B, T, HV, V] sampled by head: row_len V; hT [B, HV, K, V]:
// T 1, row_len K V.
struct HeadSelection {
  int64_t B = 1;
  int64_t T = 0;
  int64_t HV = 0;
  int64_t row_len = 0;
  std::vector<int64_t> heads;
};

// compare_to_reference where the reference covers only the selected heads, with the rules of the
// RowSelection form: rel_l2, max_abs, the floor, err_vs_floor and the overflow checks over those
// heads (worst_index indexes `got`), written and finite over every element. Outside the selected
// heads an inf is a FAIL even where the float64 answer would overflow the dtype (there is no
// reference to tell): sample only problems whose outputs stay in range.
TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype, const HeadSelection& sel);

