// The one table of pass bounds (rel_l2 against float64) and why each is what it is, and the
// tolerance profile that judges rows: that table, or a file's entries in place of some of it.
// docs/TOLERANCES.md carries the same table with the measurements behind it.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>

#include "kernels/common/dtype.h"

// How a variant rounds, which decides what error it may have.
enum class Precision {
  fp32_math,     // every product and sum in float32; only inputs/outputs rounded to the dtype
  tensor_core,   // bf16/fp16 operands on tensor cores, float32 accumulation
  // Tensor-core products whose float32 operands are split hi/lo into dtype pairs (wy_ut's
  // split-precision plans): every intermediate carries ~1e-5, so the state is held near that
  // (docs/TOLERANCES.md), not to tensor_core's bound, under which losing one split would still pass.
  tensor_core_split,
  // Front-end problems on tensor cores: q, k, v computed in float32 by the front end, then
  // rounded to the dtype once (the tensor cores take them so), then as tensor_core.
  tensor_core_frontend,
  // float32 math, the state stored in a bf16 pool between launches (fused_decode_bf16state):
  // the initial state and the final one each rounded to bf16 once.
  bf16_state,
};

// The gradients of a backward pass (docs/BACKWARD.md), in the order of their CSV columns.
enum class Grad { dq, dk, dv, dg, dbeta, dh0 };
constexpr Grad kGrads[] = {Grad::dq, Grad::dk, Grad::dv, Grad::dg, Grad::dbeta, Grad::dh0};
constexpr size_t kGradCount = std::size(kGrads);
const char* grad_name(Grad g);
// What a gradient is written and compared in: dq, dk, dv in the problem's dtype (as q, k, v), dg,
// dbeta, dh0 in float32 (as g, beta and h0 are in every dtype).
DType grad_dtype(Grad g, DType problem_dtype);
// dq, dk, dv: their floor (the float64 gradient rounded to the dtype) is a bound worth the name, as
// o's; the float32 ones are compared as hT is.
inline bool grad_has_dtype_floor(Grad g) { return g == Grad::dq || g == Grad::dk || g == Grad::dv; }

struct Tolerance {
  double o_rel_l2;
  double ht_rel_l2;
  std::string reason;  // why the bound is what it is, or where a profile took it from
  // Backward passes: the bound on each gradient's rel_l2 (kGrads order); 0 where the table has none
  // (a precision class no backward has been measured in: such a row fails).
  std::array<double, kGradCount> grad_rel_l2 = {};
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
std::optional<Precision> parse_precision(const std::string& name);  // precision_name's names only
std::string precision_list();  // "fp32_math, tensor_core, ... or bf16_state", for messages

// Every precision class and every dtype, in the table's order.
constexpr Precision kPrecisions[] = {Precision::fp32_math, Precision::tensor_core, Precision::tensor_core_split,
                                     Precision::tensor_core_frontend, Precision::bf16_state};
constexpr DType kDtypes[] = {DType::f32, DType::bf16, DType::f16};

// One output's bound as a profile states it: a rel_l2, or a multiple of the row's own rounding floor
// (o_floor_rel_l2). Only o has a floor worth the name: hT is compared in float32, whose floor (~6e-8)
// says nothing of a kernel's bf16 intermediates, so a profile gives hT a rel_l2.
struct Bound {
  double value = 0.0;
  bool times_floor = false;
  double at(double floor_rel_l2) const { return times_floor ? value * floor_rel_l2 : value; }
};
std::string bound_text(const Bound& b);  // as a tolerance file writes it: "0.0025", "3x_floor"

// The contract rows are judged by: per (precision, dtype) a bound on o and on hT, then the rules
// every profile keeps (o at least fp32_cancellation_bound for GDN rows in float32, and at least
// rounding_floor_bound). builtin() is tolerance_for's table; a tolerance file
// (harness/io/tolerance_file.h) replaces some of its entries and names the result.
class ToleranceProfile {
 public:
  static constexpr const char* kBuiltinName = "builtin";
  static ToleranceProfile builtin();

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  Bound o_bound(Precision p, DType t) const { return entry(p, t).o; }
  Bound ht_bound(Precision p, DType t) const { return entry(p, t).ht; }
  // `source` says where the bound comes from (a file and line); it becomes Tolerance::reason.
  void set_o_bound(Precision p, DType t, Bound b, const std::string& source);
  void set_ht_bound(Precision p, DType t, Bound b, const std::string& source);
  // A gradient's bound as stated (value 0: none); set_grad_bound as set_o_bound.
  Bound grad_bound(Precision p, DType t, Grad g) const { return entry(p, t).grad[size_t(g)]; }
  void set_grad_bound(Precision p, DType t, Grad g, Bound b, const std::string& source);
  // The bound a backward row's gradient g is judged by: its entry on the gradient's own rounding
  // floor, at least rounding_floor_bound of it; 0 where the profile has no bound.
  double grad_bound_at(Precision p, DType t, Grad g, double floor_rel_l2) const;

  // The bounds one row is judged by: o from its entry on the row's floor, then widened by the float32
  // cancellation bound (o_kappa: cancellation_kappa of a GDN row in float32; NaN where that rule does
  // not apply) and by the floor minimum; hT as its entry says.
  Tolerance bounds(Precision p, DType t, double o_floor_rel_l2, double o_kappa = NAN) const;

  // Every entry, one line per (precision, dtype) in the table's order, in the tolerance file format,
  // after a comment line stating the rules: the whole contract, whatever file or build stated it.
  std::string canonical_text() const;
  // FNV-1a 64 of canonical_text(), 16 hex digits: the same for two profiles exactly when they judge
  // alike (comments and the order of a file's lines do not count; a changed rule or bound does).
  std::string hash() const;

 private:
  struct Entry {
    Bound o, ht;
    std::string o_source, ht_source;
    Bound grad[kGradCount];
    std::string grad_source;
  };
  const Entry& entry(Precision p, DType t) const;
  Entry& entry(Precision p, DType t);
  std::string name_;
  Entry entries_[std::size(kPrecisions)][std::size(kDtypes)];
};
