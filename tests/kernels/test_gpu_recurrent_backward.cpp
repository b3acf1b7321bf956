// Tests of the recurrent backward (kernels/recurrent_backward/): every gradient against the
// float64 reverse mode (reference/gdn_backward_reference.h) over dtypes, head dims, lengths that
// end inside and on the kernel's 16- and 64-token state windows, grouped value heads, the gate,
// the delta term, h0 and dhT; unwritten outputs are poisoned, and two launches give the same bits.
// Without a GPU each [gpu] test says why in a warning and checks nothing else.
#include <catch2/catch.hpp>

#ifdef GDNBENCH_HAVE_CUDA

#include <algorithm>
#include <cstdint>
#include <vector>

#include "harness/cuda_check.h"
#include "harness/device_buffer.h"
#include "harness/metrics.h"
#include "kernels/common/cuda_kernels.h"
#include "reference/gdn_backward_reference.h"
#include "harness/runner.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/test_util.h"

namespace {

using gputest::from_device;
using gputest::gpu_or_warn;
using gputest::to_device;

// float32 arithmetic against float64 over up to a few hundred dependent steps, far below this,
// which a wrong term (~1e-1) or a dropped token exceeds; dq, dk, dv are written in the dtype, so
// their bound is also at least 1.5x the rounding floor (the harness's rule, harness/tolerance.h).
constexpr double kGradientBound = 1e-4;

std::vector<float> as_float(const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); }
// x rounded to dtype and back, as double: what the kernel reads.
std::vector<double> rounded(const std::vector<double>& x, DType dt) {
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = round_to(dt, float(x[i]));
  return r;
}

struct BackwardCase {
  GdnShape shape;
  DType dtype;
  bool gate, delta, h0, dhT;
};

struct Gradients {
  std::vector<float> dq, dk, dv, dg, dbeta, dh0;
};

// One launch on the device, every output poisoned first.
Gradients run_backward(const BackwardCase& c, const testutil::GdnData& d, const std::vector<double>& dout,
                       const std::vector<double>& dhT) {
  const GdnShape& s = c.shape;
  DeviceBuffer q = to_device(as_float(d.q), c.dtype), k = to_device(as_float(d.k), c.dtype),
               v = to_device(as_float(d.v), c.dtype), g = to_device(as_float(d.g)),
               beta = to_device(as_float(d.beta)), h0 = to_device(as_float(d.h0)),
               dO = to_device(as_float(dout), c.dtype), dH = to_device(as_float(dhT));
  const auto poisoned = [](int64_t n) { return to_device(std::vector<float>(size_t(n), poison_value_f32())); };
  const auto poisoned_as = [&](int64_t n) {  // in the dtype: its poison bits
    if (c.dtype == DType::f32) return poisoned(n);
    DeviceBuffer buf(size_t(n) * 2);
    const std::vector<uint16_t> bits(size_t(n), c.dtype == DType::bf16 ? kPoisonBitsBf16 : kPoisonBitsF16);
    CUDA_CHECK(cudaMemcpy(buf.get(), bits.data(), buf.bytes(), cudaMemcpyHostToDevice));
    return buf;
  };
  DeviceBuffer dq = poisoned_as(s.qk_elems()), dk = poisoned_as(s.qk_elems()), dv = poisoned_as(s.v_elems()),
               dg = poisoned(s.gate_elems()), dbeta = poisoned(s.gate_elems()), dh0 = poisoned(s.state_elems());
  GdnParams p;
  p.shape = s;
  p.dtype = c.dtype;
  p.q = q.get();
  p.k = k.get();
  p.v = v.get();
  p.g = c.gate ? g.as<float>() : nullptr;
  p.beta = beta.as<float>();
  p.h0 = c.h0 ? h0.as<float>() : nullptr;
  p.scale = float(gdn_default_scale(s));
  p.use_delta = c.delta;
  GdnGradParams gp;
  gp.dout = dO.get();
  gp.dhT = c.dhT ? dH.as<float>() : nullptr;
  gp.dq = dq.get();
  gp.dk = dk.get();
  gp.dv = dv.get();
  gp.dg = c.gate ? dg.as<float>() : nullptr;
  gp.dbeta = dbeta.as<float>();
  gp.dh0 = c.h0 ? dh0.as<float>() : nullptr;
  DeviceBuffer ws(gdn_recurrent_backward_workspace_bytes(p));
  CUDA_CHECK(cudaError_t(launch_gdn_recurrent_backward(p, gp, ws.get(), nullptr)));
  CUDA_CHECK(cudaDeviceSynchronize());
  Gradients out;
  out.dq = from_device(dq.get(), s.qk_elems(), c.dtype);
  out.dk = from_device(dk.get(), s.qk_elems(), c.dtype);
  out.dv = from_device(dv.get(), s.v_elems(), c.dtype);
  if (c.gate) out.dg = from_device(dg.get(), s.gate_elems());
  out.dbeta = from_device(dbeta.get(), s.gate_elems());
  if (c.h0) out.dh0 = from_device(dh0.get(), s.state_elems());
  return out;
}

void check_gradient(const char* name, const std::vector<float>& got, const std::vector<double>& want,
                    DType written = DType::f32) {
  INFO(name);
  REQUIRE(got.size() == want.size());
  const TensorMetrics m = compare_to_reference(got, want, written);
  INFO("rel_l2 " << m.rel_l2 << ", floor " << m.floor_rel_l2 << ", unwritten " << m.unwritten << ", non-finite "
                 << m.nan_count);
  CHECK(m.unwritten == 0);
  CHECK(m.nan_count == 0);
  CHECK(m.rel_l2 <= std::max(kGradientBound, 1.5 * m.floor_rel_l2));
}

}  // namespace

TEST_CASE("recurrent backward matches the float64 reverse mode", "[gpu][backward]") {
  if (!gpu_or_warn()) return;
  // Lengths: one token, inside the first 16-token window, on and past the 64-token interval.
  const int64_t T = GENERATE(1, 15, 16, 64, 65, 150);
  const auto kv = GENERATE(std::make_pair(16, 16), std::make_pair(64, 48), std::make_pair(128, 128),
                           std::make_pair(256, 40));
  const DType dtype = GENERATE(DType::f32, DType::bf16);
  const int config = GENERATE(range(0, 5));
  // config: 0 everything on; 1 GVA, B = 2, no dhT; 2 no gate; 3 no delta; 4 no h0, no dhT.
  BackwardCase c{GdnShape{config == 1 ? 2 : 1, T, config == 1 ? 2 : 1, config == 1 ? 4 : 1, kv.first, kv.second},
         dtype, config != 2, config != 3, config != 4, config != 1 && config != 4};
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " T " << T << " K " << kv.first << " V " << kv.second << " " << dtype_name(dtype)
               << " config " << config);
  testutil::GdnData d = testutil::random_gdn(c.shape, seed);
  d.q = rounded(d.q, dtype);
  d.k = rounded(d.k, dtype);
  d.v = rounded(d.v, dtype);
  // dout in the dtype, as the kernel reads it; dhT and the gates float32.
  std::vector<double> dout = rounded(testutil::random_gdn(GdnShape{c.shape.B, T, c.shape.HV, c.shape.HV,
                                                                    c.shape.V, c.shape.V}, seed + 1).v, dtype);
  std::vector<double> dhT = testutil::random_gdn(c.shape, seed + 2).h0;
  for (double& x : d.g) x = float(x);
  for (double& x : d.beta) x = float(x);
  for (double& x : d.h0) x = float(x);
  for (double& x : dhT) x = float(x);

  GdnRefOptions opt;
  opt.use_delta = c.delta;
  opt.scale = double(float(gdn_default_scale(c.shape)));
  GdnRefGradInputs gi;
  gi.dout = dout.data();
  gi.dhT = c.dhT ? dhT.data() : nullptr;
  const GdnRefGradients ref = gdn_recurrent_backward_ref(c.shape, d.view(c.gate, c.h0), gi, opt);
  const Gradients got = run_backward(c, d, dout, dhT);
  check_gradient("dq", got.dq, ref.dq, dtype);
  check_gradient("dk", got.dk, ref.dk, dtype);
  check_gradient("dv", got.dv, ref.dv, dtype);
  if (c.gate) check_gradient("dg", got.dg, ref.dg);
  if (c.delta) check_gradient("dbeta", got.dbeta, ref.dbeta);
  else CHECK(std::all_of(got.dbeta.begin(), got.dbeta.end(), [](float x) { return x == 0.0f; }));
  if (c.h0) check_gradient("dh0", got.dh0, ref.dh0);

  // Deterministic: a second launch writes the same bits.
  const Gradients again = run_backward(c, d, dout, dhT);
  CHECK(again.dq == got.dq);
  CHECK(again.dk == got.dk);
  CHECK(again.dg == got.dg);
  CHECK(again.dbeta == got.dbeta);
}

TEST_CASE("a training step's peak device memory holds all it keeps live: inputs, dO, dhT, gradients, workspace",
          "[gpu][backward]") {
  if (!gputest::gpu_or_warn()) return;
  const DType dt = GENERATE(DType::f32, DType::bf16);
  const Pass pass = GENERATE(Pass::bwd, Pass::fwdbwd);
  Problem p;
  p.shape = GdnShape{2, 100, 1, 2, 100, 72};
  p.dtype = dt;
  p.use_h0 = true;
  p.pass = pass;
  p.seed = 7;
  INFO(dtype_name(dt) << " " << pass_name(pass));
  const ResultRow row = gputest::verify_on_gpu("recurrent", p);
  INFO(row.reason);
  REQUIRE(row.status == Status::pass);
  const GdnShape& s = p.shape;
  const int64_t e = dtype_bytes(dt), qk = s.qk_elems(), v = s.v_elems(), gates = s.gate_elems(), state = s.state_elems();
  GdnParams gp;
  gp.shape = s;
  gp.dtype = dt;
  const int64_t inputs = e * (2 * qk + v) + 4 * (2 * gates + state);    // q, k, v; g, beta, h0
  const int64_t upstream = e * v + 4 * state;                            // dO, dhT
  const int64_t gradients = e * (2 * qk + v) + 4 * (2 * gates + state);  // dq, dk, dv; dg, dbeta, dh0
  const int64_t workspace = int64_t(gdn_recurrent_backward_workspace_bytes(gp));  // stored states, partials
  const int64_t forward_outputs = pass == Pass::fwdbwd ? e * v + 4 * state : 0;  // o, hT
  CHECK(row.peak_device_bytes == inputs + upstream + gradients + workspace + forward_outputs);
}

#else

TEST_CASE("recurrent backward needs CUDA", "[gpu][backward]") { WARN("skipped: built without CUDA"); }

#endif
