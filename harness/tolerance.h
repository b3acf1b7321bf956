// The one table of pass bounds (rel_l2 against float64) and why each is what it is.
// docs/TOLERANCES.md carries the same table with the measurements behind it.
#pragma once
#include "kernels/dtype.h"

// How a variant rounds, which decides what error it may have.
enum class Precision {
  fp32_math,     // every product and sum in float32; only inputs/outputs rounded to the dtype
  tensor_core,   // bf16/fp16 operands on tensor cores, float32 accumulation
  // Front-end problems on tensor cores: q, k, v computed in float32 by the front end, then
  // rounded to the dtype once (the tensor cores take them so), then as tensor_core.
  tensor_core_frontend,
  // float32 math, the state stored in a bf16 pool between launches (fused_decode_bf16state):
  // the initial state and the final one each rounded to bf16 once.
  bf16_state,
};

struct Tolerance {
  double o_rel_l2;
  double ht_rel_l2;
  const char* reason;
};

Tolerance tolerance_for(Precision precision, DType dtype);
const char* precision_name(Precision p);
