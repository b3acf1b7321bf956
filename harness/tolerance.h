// The one table of pass bounds (rel_l2 against float64) and why each is what it is.
// docs/TOLERANCES.md carries the same table with the measurements behind it.
#pragma once
#include "kernels/dtype.h"

// How a variant rounds, which decides what error it may have.
enum class Precision {
  fp32_math,     // every product and sum in float32; only inputs/outputs rounded to the dtype
  tensor_core,   // bf16/fp16 operands on tensor cores, float32 accumulation
};

struct Tolerance {
  double o_rel_l2;
  double ht_rel_l2;
  const char* reason;
};

Tolerance tolerance_for(Precision precision, DType dtype);
const char* precision_name(Precision p);
