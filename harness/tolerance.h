// The one table of pass bounds (rel_l2 against float64) and why each is what it is.
// docs/TOLERANCES.md carries the same table with the measurements behind it.
#pragma once
#include "kernels/common/dtype.h"

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

// A float32 dot product o = sum_i x_i carries a rounding error of order u sum_i |x_i| (u = 2^-24),
// which relative to o has no bound where the terms cancel: with T = 1 and no h0, o = scale beta
// (q.k) v, and q.k near 0 made ~0.5% of one-head seeds fail a fixed 1e-5. So the o bound of a GDN
// row in float32 is max(table bound, kFp32CancellationFactor u kappa), with kappa = ||o_abs|| /
// ||o|| from the float64 reference (GdnRefOutputs::o_abs: the magnitudes of the terms of each
// output's last dot product). kappa is ~sqrt(K) for random signs, so the table's bound stands
// unless the outputs cancel by a factor of ~10 beyond that (docs/TOLERANCES.md, calibration).
constexpr double kFp32CancellationFactor = 8.0;
double fp32_cancellation_bound(double table_bound, double kappa);
// No o can be closer to the float64 answer than that answer rounded to the output dtype (the row's
// o floor_rel_l2). The table's bf16/fp16 bounds sit 1.5-2.3x above the typical floor, but where
// the outputs are tiny (T = 1 without h0 and q.k near 0) fp16 writes subnormals, whose rounding is
// relatively coarse, and the floor alone can pass the table (fp16: 9.5e-4 against 5e-4). So every
// row's o bound is at least kRoundingFloorFactor times its own floor; for float32 outputs
// (floor ~6e-8) the table's bound always stands.
constexpr double kRoundingFloorFactor = 1.5;
double rounding_floor_bound(double table_bound, double floor_rel_l2);
const char* precision_name(Precision p);
