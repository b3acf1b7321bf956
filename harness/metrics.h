// Comparison of a kernel's output against the float64 reference (DESIGN.md section 3).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/dtype.h"

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
  int64_t nan_count = 0;      // non-finite elements that were written
  int64_t unwritten = 0;      // elements still holding the poison
  bool finite_ok() const { return nan_count == 0 && unwritten == 0; }
};

// `got` as float (values representable in out_dtype); ref in float64, same layout.
TensorMetrics compare_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                   DType out_dtype);
