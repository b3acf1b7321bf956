// Tests of the wy_ut variant (kernels/wy_ut/). [gpu]: its three stages against the float64
// chunked reference's intermediates, and the whole launcher against the float64 recurrence over
// dtypes, sequence lengths (tail chunks), head dims, h0, grouped value heads and the gate and delta
// terms. Without a GPU each [gpu] test says why in a warning and checks nothing else; the support
// checks and the workspace layout are host code and always run.
// Over 600 lines on purpose: one file per variant, and wy_ut has three stages and a launcher to pin.
#include <catch2/catch.hpp>

#ifdef GDNBENCH_HAVE_CUDA

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "harness/cuda_check.h"
#include "harness/device_buffer.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/tolerance.h"
#include "kernels/wy_ut/wy_ut.h"
#include "reference/gdn_reference.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/test_util.h"

namespace {

// Every operand that is not an input is split into two dtype values (kernels/wy_ut/), so the
// intermediates and the float32 state carry ~1e-5 relative error (measured on a CPU emulation of
// the kernels: <= 4e-6), far below what rounding them to bf16 would cost (~2e-3).
constexpr double kIntermediateBound = 1e-4;
constexpr double kStateBound = 1e-4;

using gputest::gpu_or_warn;
using gputest::selected_by_env;

using gputest::from_device;
using gputest::to_device;

// Inputs and outputs of one problem on the device (outputs poisoned), and the params for them.
struct DeviceGdn {
  DeviceBuffer q, k, v, g, beta, h0, o, hT;
  GdnParams params;
  DeviceGdn(const Problem& pr, const HostInputs& in)
      : q(to_device(in.q, pr.dtype)), k(to_device(in.k, pr.dtype)), v(to_device(in.v, pr.dtype)),
        g(to_device(in.g, DType::f32)), beta(to_device(in.beta, DType::f32)),
        h0(to_device(in.h0, DType::f32)),
        o(size_t(pr.shape.v_elems()) * dtype_bytes(pr.dtype)),
        hT(size_t(pr.shape.state_elems()) * 4) {
    poison_device_buffer(o.get(), pr.shape.v_elems(), pr.dtype, nullptr);
    poison_device_buffer(hT.get(), pr.shape.state_elems(), DType::f32, nullptr);
    params.shape = pr.shape;
    params.dtype = pr.dtype;
    params.q = q.get();
    params.k = k.get();
    params.v = v.get();
    params.g = in.g.empty() ? nullptr : g.as<float>();
    params.beta = beta.as<float>();
    params.h0 = in.h0.empty() ? nullptr : h0.as<float>();
    params.o = o.get();
    params.hT = hT.as<float>();
    params.scale = float(pr.resolved_scale());
    params.use_delta = pr.use_delta;
    params.chunk = kWyUtChunk;
  }
};

GdnRefOptions ref_options(const Problem& pr) {
  GdnRefOptions ro;
  ro.scale = pr.resolved_scale();
  ro.use_delta = pr.use_delta;
  ro.threads = 4;
  return ro;
}

struct Outcome {
  TensorMetrics o, ht;
};

// The whole launcher on one problem, against the float64 recurrence. scan_groups > 0: the three
// stages with the state scan forced to that many groups (two-level above 1), which it must take.
Outcome run_wy_ut(const Problem& pr, int64_t scan_groups = 0) {
  const HostInputs in = make_inputs(pr);
  DeviceGdn d(pr, in);
  REQUIRE(gdn_wy_ut_unsupported(d.params) == nullptr);
  DeviceBuffer ws(gdn_wy_ut_workspace_bytes(d.params, scan_groups));
  poison_device_buffer(ws.get(), int64_t(ws.bytes() / 4), DType::f32, nullptr);
  if (scan_groups == 0) {
    REQUIRE(launch_gdn_wy_ut(d.params, ws.get(), nullptr) == 0);
  } else {
    const GdnWyUtWorkspace view = gdn_wy_ut_workspace_view(d.params, ws.get(), scan_groups);
    REQUIRE(view.scan_groups == scan_groups);
    REQUIRE(launch_gdn_wy_ut_prepare(d.params, view, nullptr) == 0);
    REQUIRE(launch_gdn_wy_ut_states(d.params, view, nullptr) == 0);
    REQUIRE(launch_gdn_wy_ut_output(d.params, view, nullptr) == 0);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const GdnRefOutputs ref = gdn_recurrent_ref(pr.shape, to_f64(in).view(), ref_options(pr));
  const GdnShape& s = pr.shape;
  return {compare_to_reference(from_device(d.o.get(), s.v_elems(), pr.dtype), ref.o, pr.dtype),
          compare_to_reference(from_device(d.hT.get(), s.state_elems(), DType::f32), ref.hT, DType::f32)};
}

void check_outcome(const Problem& pr, const Outcome& r) {
  const Tolerance tol = tolerance_for(Precision::tensor_core, pr.dtype);
  INFO("o rel_l2 " << r.o.rel_l2 << " (floor " << r.o.floor_rel_l2 << ", bound " << tol.o_rel_l2
                   << "), hT rel_l2 " << r.ht.rel_l2 << " (bound " << kStateBound << ")");
  CHECK(r.o.unwritten == 0);
  CHECK(r.o.nan_count == 0);
  CHECK(r.ht.unwritten == 0);
  CHECK(r.ht.nan_count == 0);
  CHECK(r.o.rel_l2 <= tol.o_rel_l2);
  CHECK(r.ht.rel_l2 <= kStateBound);
}

// A float32 workspace part of n elements, read back.
std::vector<float> part(const float* ptr, int64_t n) { return from_device(ptr, n, DType::f32); }

// bf16 parameters of one head, T = 100, whose pointers are set but never dereferenced: for the
// refusals a launcher decides before it touches the device.
GdnParams params_for_refusals(int64_t K, int64_t V) {
  static int dummy = 0;
  GdnParams p;
  p.shape = GdnShape{1, 100, 1, 1, K, V};
  p.q = p.k = p.v = &dummy;
  p.o = &dummy;
  p.beta = reinterpret_cast<const float*>(&dummy);
  p.chunk = 64;
  p.dtype = DType::bf16;
  return p;
}

}  // namespace

TEST_CASE("wy_ut refuses fp32 and shapes it does not support, without touching the device", "[wy_ut]") {
  GdnParams p = params_for_refusals(128, 128);
  CHECK(gdn_wy_ut_unsupported(p) == nullptr);
  p.dtype = DType::f16;
  CHECK(gdn_wy_ut_unsupported(p) == nullptr);

  SECTION("fp32 inputs") { p.dtype = DType::f32; }
  SECTION("a chunk other than 64") { p.chunk = 32; }
  SECTION("K outside {64, 128, 256}") { p.shape.K = 96; }
  SECTION("V not a multiple of 32") { p.shape.V = 48; }
  SECTION("V past 256") { p.shape.V = 288; }
  SECTION("HV not a multiple of H") { p.shape.H = 2; p.shape.HV = 3; }
  SECTION("no beta with the delta term") { p.beta = nullptr; }
  CHECK(gdn_wy_ut_unsupported(p) != nullptr);
  std::vector<char> ws(1 << 20);
  CHECK(launch_gdn_wy_ut(p, ws.data(), nullptr) == int(cudaErrorInvalidValue));
}

TEST_CASE("wy_ut's workspace parts are aligned, disjoint and inside the workspace", "[wy_ut]") {
  const int64_t K = GENERATE(128, 256);
  const int64_t groups = GENERATE(1, 3);  // the plain scan; the two-level scan's group buffers
  GdnParams p;
  p.shape = GdnShape{2, 130, 1, 3, K, 96};
  p.dtype = DType::bf16;
  p.chunk = kWyUtChunk;
  const size_t bytes = gdn_wy_ut_workspace_bytes(p, groups);
  std::vector<unsigned char> buffer(bytes + 256);
  unsigned char* base = buffer.data() + (256 - reinterpret_cast<uintptr_t>(buffer.data()) % 256);
  const GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(p, base, groups);
  const int64_t chunks = 2 * 3 * 3, heads = 2 * 3;  // B HV ceil(130 / 64)
  INFO("K " << K << " groups " << groups);
  CHECK(ws.num_chunks == 3);
  CHECK(ws.scan_groups == groups);
  struct Part { const float* ptr; int64_t elems; };
  std::vector<Part> parts = {{ws.gamma, chunks * 64}, {ws.W, chunks * 64 * K}, {ws.U, chunks * 64 * 96},
                             {ws.states, chunks * K * 96}};
  if (groups > 1) {
    parts.push_back({ws.group_ends, heads * groups * K * (96 + K)});
    parts.push_back({ws.group_enters, heads * groups * K * 96});
  } else {
    CHECK(ws.group_ends == nullptr);
    CHECK(ws.group_enters == nullptr);
  }
  const auto at = [&](const float* x) { return reinterpret_cast<const unsigned char*>(x) - base; };
  int64_t end = 0;
  for (const Part& pt : parts) {
    REQUIRE(pt.ptr != nullptr);
    CHECK(at(pt.ptr) % 256 == 0);
    CHECK(at(pt.ptr) >= end);
    end = at(pt.ptr) + pt.elems * 4;
  }
  CHECK(end <= int64_t(bytes));
  CHECK(int64_t(bytes) - end < 256);  // nothing unaccounted for
  CHECK(ws.A == nullptr);
  CHECK(ws.Tm == nullptr);
}

TEST_CASE("wy_ut stages match the float64 chunked intermediates", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const int64_t K = GENERATE(64, 128, 256);
  Problem pr;
  pr.shape = GdnShape{1, 150, 1, 2, K, 64};  // 3 chunks, the last one 22 rows
  pr.dtype = DType::bf16;
  pr.use_h0 = true;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " K " << K);
  const HostInputs in = make_inputs(pr);
  DeviceGdn d(pr, in);
  GdnChunkIntermediates im;
  const RefInputsF64 ref_in = to_f64(in);
  gdn_chunked_ref(pr.shape, ref_in.view(), ref_options(pr), kWyUtChunk, &im);
  const GdnRefOutputs ref = gdn_recurrent_ref(pr.shape, ref_in.view(), ref_options(pr));

  const GdnShape& s = pr.shape;
  const int64_t C = kWyUtChunk, chunks = s.B * s.HV * im.num_chunks;
  DeviceBuffer ws_buf(gdn_wy_ut_workspace_bytes(d.params));
  DeviceBuffer A_buf(size_t(chunks * C * C) * 4), Tm_buf(size_t(chunks * C * C) * 4);
  // Stages 2 and 3 need the chunk states; the test provides them so that it can poison them.
  DeviceBuffer states_buf(size_t(chunks * s.K * s.V) * 4);
  // Poisoned, so a part a stage leaves unwritten shows as such.
  poison_device_buffer(ws_buf.get(), int64_t(ws_buf.bytes() / 4), DType::f32, nullptr);
  poison_device_buffer(A_buf.get(), chunks * C * C, DType::f32, nullptr);
  poison_device_buffer(Tm_buf.get(), chunks * C * C, DType::f32, nullptr);
  poison_device_buffer(states_buf.get(), chunks * s.K * s.V, DType::f32, nullptr);
  GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(d.params, ws_buf.get());
  REQUIRE(ws.states != nullptr);
  ws.states = states_buf.as<float>();
  ws.A = A_buf.as<float>();
  ws.Tm = Tm_buf.as<float>();
  REQUIRE(ws.num_chunks == im.num_chunks);

  auto check = [](const char* name, const std::vector<float>& got, const std::vector<double>& want,
                  double bound) {
    const TensorMetrics m = compare_to_reference(got, want, DType::f32);
    INFO(name << ": rel_l2 " << m.rel_l2 << ", max_abs " << m.max_abs << " at " << m.worst_index
              << ", unwritten " << m.unwritten << ", non-finite " << m.nan_count);
    CHECK(m.unwritten == 0);
    CHECK(m.nan_count == 0);
    CHECK(m.rel_l2 <= bound);
  };

  REQUIRE(launch_gdn_wy_ut_prepare(d.params, ws, nullptr) == 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  check("gamma", part(ws.gamma, chunks * C), im.gamma, kIntermediateBound);
  check("A", part(ws.A, chunks * C * C), im.A, kIntermediateBound);
  check("Tm", part(ws.Tm, chunks * C * C), im.T_inv, kIntermediateBound);
  check("W", part(ws.W, chunks * C * s.K), im.W, kIntermediateBound);
  check("U0", part(ws.U, chunks * C * s.V), im.U0, kIntermediateBound);

  REQUIRE(launch_gdn_wy_ut_states(d.params, ws, nullptr) == 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  check("U", part(ws.U, chunks * C * s.V), im.U, kIntermediateBound);
  check("chunk states", part(ws.states, chunks * s.K * s.V), im.chunk_states, kIntermediateBound);
  check("hT", part(d.params.hT, s.state_elems()), ref.hT, kStateBound);

  REQUIRE(launch_gdn_wy_ut_output(d.params, ws, nullptr) == 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const TensorMetrics o = compare_to_reference(from_device(d.o.get(), s.v_elems(), pr.dtype), ref.o, pr.dtype);
  INFO("o: rel_l2 " << o.rel_l2 << ", floor " << o.floor_rel_l2);
  CHECK(o.unwritten == 0);
  CHECK(o.nan_count == 0);
  CHECK(o.rel_l2 <= tolerance_for(Precision::tensor_core, pr.dtype).o_rel_l2);
}

TEST_CASE("wy_ut's pipelined output kernel writes version 2's o bit for bit, whatever its blocks per head",
          "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t K = GENERATE(64, 128, 256);
  const int64_t V = GENERATE(32, 96);  // V = 32 at K = 64: one slice per chunk
  const int64_t T = GENERATE(1, 65, 200, 1000);  // 1 to 16 chunks, tails of 1, 1, 8 and 40 rows
  Problem pr;
  pr.shape = GdnShape{2, T, 2, 4, K, V};
  pr.dtype = dt;
  pr.use_h0 = true;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " dtype " << dtype_name(dt) << " T " << T << " K " << K << " V " << V);
  const HostInputs in = make_inputs(pr);
  DeviceGdn d(pr, in);
  DeviceBuffer ws_buf(gdn_wy_ut_workspace_bytes(d.params));
  const GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(d.params, ws_buf.get());
  REQUIRE(launch_gdn_wy_ut_prepare(d.params, ws, nullptr) == 0);
  REQUIRE(launch_gdn_wy_ut_states(d.params, ws, nullptr) == 0);
  REQUIRE(launch_gdn_wy_ut_output_per_chunk(d.params, ws, nullptr) == 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const int64_t n = pr.shape.v_elems();
  std::vector<uint16_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
  CUDA_CHECK(cudaMemcpy(want.data(), d.o.get(), size_t(n) * 2, cudaMemcpyDeviceToHost));
  const GdnRefOutputs ref = gdn_recurrent_ref(pr.shape, to_f64(in).view(), ref_options(pr));
  const TensorMetrics m = compare_to_reference(from_device(d.o.get(), n, dt), ref.o, dt);
  INFO("version 2 o rel_l2 " << m.rel_l2);
  CHECK(m.unwritten == 0);
  CHECK(m.rel_l2 <= tolerance_for(Precision::tensor_core, dt).o_rel_l2);
  // 0: the device's choice; 1: every chunk of a head in one block; 2, 3: strided chunk sets of
  // unequal sizes; 64: more blocks than chunks (clamped to one per chunk).
  for (const int per_head : {0, 1, 2, 3, 64}) {
    INFO("blocks per head " << per_head);
    poison_device_buffer(d.o.get(), n, dt, nullptr);
    REQUIRE(launch_gdn_wy_ut_output(d.params, ws, nullptr, per_head) == 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(got.data(), d.o.get(), size_t(n) * 2, cudaMemcpyDeviceToHost));
    int64_t differ = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (got[size_t(i)] != want[size_t(i)] && differ++ == 0) first = i;
    INFO(differ << " of " << n << " elements differ, the first at " << first);
    CHECK(differ == 0);
  }
}

TEST_CASE("wy_ut's pipelined prepare kernel writes version 2's gamma, W and U0 bit for bit, whatever its blocks "
          "per head",
          "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t K = GENERATE(64, 128, 256);    // 128: the k tile and A swap regions every chunk
  const int64_t V = GENERATE(32, 96);
  const int64_t T = GENERATE(1, 65, 200, 1000);  // 1 to 16 chunks, tails of 1, 1, 8 and 40 rows
  const int terms = GENERATE(0, 1, 2);           // 0: GDN; 1: no gate (DeltaNet); 2: no delta term
  // racecheck runs one (dtype, K) per pass
  if (!selected_by_env("GDNBENCH_TEST_K", K) || !selected_by_env("GDNBENCH_TEST_DTYPE", dtype_name(dt))) return;
  Problem pr;
  pr.shape = GdnShape{2, T, 2, 4, K, V};  // q/k head h serves value heads 2h, 2h + 1; b = 1: batch offsets
  pr.dtype = dt;
  pr.use_gate = terms != 1;
  pr.use_delta = terms != 2;
  pr.use_h0 = true;  // prepare does not read h0; the launcher's checks see a full problem
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " dtype " << dtype_name(dt) << " T " << T << " K " << K << " V " << V << " gate "
               << pr.use_gate << " delta " << pr.use_delta);
  const HostInputs in = make_inputs(pr);
  DeviceGdn d(pr, in);
  const GdnShape& s = pr.shape;
  const int64_t C = kWyUtChunk, chunks = s.B * s.HV * ((T + C - 1) / C);
  // gamma, W and U lie in this order at the start of the workspace: one span of bytes (the parts
  // prepare leaves unwritten, such as W without the delta term, stay poison in both).
  const size_t workspace = gdn_wy_ut_workspace_bytes(d.params);
  DeviceBuffer want_buf(workspace), got_buf(workspace);
  const GdnWyUtWorkspace want_ws = gdn_wy_ut_workspace_view(d.params, want_buf.get());
  GdnWyUtWorkspace got_ws = gdn_wy_ut_workspace_view(d.params, got_buf.get());
  const size_t span = size_t(reinterpret_cast<const unsigned char*>(want_ws.states) -
                             static_cast<const unsigned char*>(want_buf.get()));
  auto read = [&](const void* ptr, size_t bytes) {
    std::vector<uint32_t> x(bytes / 4);
    CUDA_CHECK(cudaMemcpy(x.data(), ptr, bytes, cudaMemcpyDeviceToHost));
    return x;
  };
  auto count_differ = [](const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, int64_t& first) {
    int64_t differ = 0;
    first = -1;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i] && differ++ == 0) first = int64_t(i);
    return differ;
  };
  poison_device_buffer(want_buf.get(), int64_t(workspace / 4), DType::f32, nullptr);
  REQUIRE(launch_gdn_wy_ut_prepare_per_chunk(d.params, want_ws, nullptr) == 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<uint32_t> want = read(want_buf.get(), span);
  // Version 2 against the float64 chunked intermediates, so the bytes compared are right ones.
  {
    GdnChunkIntermediates im;
    gdn_chunked_ref(s, to_f64(in).view(), ref_options(pr), kWyUtChunk, &im);
    const TensorMetrics m = compare_to_reference(part(want_ws.U, chunks * C * s.V), im.U0, DType::f32);
    INFO("version 2 U0 rel_l2 " << m.rel_l2);
    CHECK(m.unwritten == 0);
    CHECK(m.rel_l2 <= kIntermediateBound);
  }
  // 0: the device's choice; 1: every chunk of a head in one block (at K = 128 the k tile and A
  // alternate between the two regions); 2, 3: strided chunk sets of unequal sizes; 64: more blocks
  // than chunks (clamped to one per chunk).
  for (const int per_head : {0, 1, 2, 3, 64}) {
    INFO("blocks per head " << per_head);
    poison_device_buffer(got_buf.get(), int64_t(workspace / 4), DType::f32, nullptr);
    REQUIRE(launch_gdn_wy_ut_prepare(d.params, got_ws, nullptr, per_head) == 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    int64_t first = -1;
    const int64_t differ = count_differ(read(got_buf.get(), span), want, first);
    INFO(differ << " of " << span / 4 << " words differ, the first at " << first);
    CHECK(differ == 0);
  }
  // With the test hooks (A and Tm written too, one more barrier before the next k is copied over A).
  DeviceBuffer A_want(size_t(chunks * C * C) * 4), Tm_want(size_t(chunks * C * C) * 4);
  DeviceBuffer A_got(size_t(chunks * C * C) * 4), Tm_got(size_t(chunks * C * C) * 4);
  GdnWyUtWorkspace hooked = want_ws;
  hooked.A = A_want.as<float>();
  hooked.Tm = Tm_want.as<float>();
  REQUIRE(launch_gdn_wy_ut_prepare_per_chunk(d.params, hooked, nullptr) == 0);
  got_ws.A = A_got.as<float>();
  got_ws.Tm = Tm_got.as<float>();
  poison_device_buffer(got_buf.get(), int64_t(workspace / 4), DType::f32, nullptr);
  REQUIRE(launch_gdn_wy_ut_prepare(d.params, got_ws, nullptr, 2) == 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  int64_t first = -1;
  const size_t cc = size_t(chunks * C * C) * 4;
  const int64_t differ = count_differ(read(got_buf.get(), span), want, first);
  const int64_t differ_A = count_differ(read(A_got.get(), cc), read(A_want.get(), cc), first);
  const int64_t differ_Tm = count_differ(read(Tm_got.get(), cc), read(Tm_want.get(), cc), first);
  INFO("with the hooks, 2 blocks per head: " << differ << " words of gamma, W, U differ, " << differ_A
                                              << " of A, " << differ_Tm << " of Tm");
  CHECK(differ == 0);
  CHECK(differ_A == 0);
  CHECK(differ_Tm == 0);
}

TEST_CASE("wy_ut's scan with the output beside it writes the three kernels' o and hT bit for bit", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t K = GENERATE(64, 128);
  const int64_t V = GENERATE(32, 96, 128);
  // 1 to 16 chunks: N = 1 and 2 skip the chain's waits for chunk n - 2 (the hand-offs' edges),
  // tails of 1, 1, 8 and 40 rows.
  const int64_t T = GENERATE(1, 65, 128, 200, 1000);
  const int variant = GENERATE(0, 1, 2);  // plain; no h0 and no gate; no delta term
  Problem pr;
  pr.shape = GdnShape{2, T, 2, 4, K, V};
  pr.dtype = dt;
  pr.use_h0 = variant != 1;
  pr.use_gate = variant != 1;
  pr.use_delta = variant != 2;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " dtype " << dtype_name(dt) << " T " << T << " K " << K << " V " << V << " case "
               << variant);
  const HostInputs in = make_inputs(pr);
  DeviceGdn d(pr, in);
  DeviceBuffer ws_buf(gdn_wy_ut_workspace_bytes(d.params, 1));
  const GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(d.params, ws_buf.get(), 1);
  REQUIRE(ws.scan_groups == 1);
  const int64_t n = pr.shape.v_elems(), ns = pr.shape.state_elems();
  auto outputs = [&](std::vector<uint16_t>& o, std::vector<uint32_t>& hT) {
    o.resize(size_t(n));
    hT.resize(size_t(ns));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(o.data(), d.o.get(), size_t(n) * 2, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hT.data(), d.hT.get(), size_t(ns) * 4, cudaMemcpyDeviceToHost));
    poison_device_buffer(d.o.get(), n, dt, nullptr);
    poison_device_buffer(d.hT.get(), ns, DType::f32, nullptr);
  };
  std::vector<uint16_t> want_o, got_o;
  std::vector<uint32_t> want_hT, got_hT;
  REQUIRE(launch_gdn_wy_ut_prepare(d.params, ws, nullptr) == 0);
  REQUIRE(launch_gdn_wy_ut_states(d.params, ws, nullptr) == 0);
  REQUIRE(launch_gdn_wy_ut_output(d.params, ws, nullptr) == 0);
  outputs(want_o, want_hT);
  // The fused kernel on a fresh prepare (it reads U0, which the separate scan overwrote with U).
  REQUIRE(launch_gdn_wy_ut_prepare(d.params, ws, nullptr) == 0);
  REQUIRE(launch_gdn_wy_ut_scan_output(d.params, ws, nullptr) == 0);
  outputs(got_o, got_hT);
  int64_t differ_o = 0, differ_hT = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (got_o[size_t(i)] != want_o[size_t(i)] && differ_o++ == 0) first = i;
  for (int64_t i = 0; i < ns; ++i) differ_hT += got_hT[size_t(i)] != want_hT[size_t(i)];
  INFO(differ_o << " of " << n << " elements of o differ, the first at " << first << "; " << differ_hT << " of "
                << ns << " of hT");
  CHECK(differ_o == 0);
  CHECK(differ_hT == 0);
}

TEST_CASE("wy_ut's scan with the output beside it refuses K = 256 and the two-level scan", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  for (const int64_t K : {128, 256}) {
    Problem pr;
    pr.shape = GdnShape{1, 300, 1, 1, K, 64};
    pr.dtype = DType::bf16;
    pr.seed = testutil::fresh_seed();
    const HostInputs in = make_inputs(pr);
    DeviceGdn d(pr, in);
    const int64_t G = K == 128 ? 2 : 1;  // K = 128: refused for its two groups; K = 256: for its K
    DeviceBuffer ws_buf(gdn_wy_ut_workspace_bytes(d.params, G));
    const GdnWyUtWorkspace ws = gdn_wy_ut_workspace_view(d.params, ws_buf.get(), G);
    INFO("K " << K << " G " << G);
    CHECK(launch_gdn_wy_ut_scan_output(d.params, ws, nullptr) == int(cudaErrorInvalidValue));
    d.params.wy_ut_output = WyUtOutput::in_scan;  // forced where it cannot run: refused, not run
    d.params.scan_groups = G;
    CHECK(launch_gdn_wy_ut(d.params, ws_buf.get(), nullptr) == int(cudaErrorInvalidValue));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

TEST_CASE("wy_ut matches the float64 recurrence over dtypes, lengths, head dims and h0", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t T = GENERATE(1, 63, 64, 65, 200, 1000);
  const int64_t KV = GENERATE(64, 128, 256);
  const bool h0 = GENERATE(false, true);
  Problem pr;
  pr.shape = GdnShape{2, T, 1, 2, KV, KV};
  pr.dtype = dt;
  pr.use_h0 = h0;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " dtype " << dtype_name(dt) << " T " << T << " K = V = " << KV << " h0 " << h0);
  check_outcome(pr, run_wy_ut(pr));
}

TEST_CASE("wy_ut covers grouped value heads, DeltaNet and gated linear attention", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const bool gate = GENERATE(false, true);
  const bool delta = GENERATE(false, true);
  const auto KV = GENERATE(std::pair<int64_t, int64_t>{128, 128}, std::pair<int64_t, int64_t>{64, 256},
                           std::pair<int64_t, int64_t>{256, 96});
  Problem pr;
  pr.shape = GdnShape{2, 130, 2, 4, KV.first, KV.second};  // q/k head h serves value heads 2h, 2h+1
  pr.dtype = dt;
  pr.use_gate = gate;
  pr.use_delta = delta;
  pr.use_h0 = true;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " dtype " << dtype_name(dt) << " gate " << gate << " delta " << delta
               << " K " << KV.first << " V " << KV.second);
  check_outcome(pr, run_wy_ut(pr));
}

TEST_CASE("wy_ut's two-level scan matches the float64 recurrence, whatever its groups", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  // T = 1000: 16 chunks, the last of 40 rows; groups of 8, 6, 4, 3 and 1 chunks (the last group
  // shorter at 6 and 3), with two groups the passes' edge case (pass 1 is group 0 alone, no combine).
  const int64_t groups = GENERATE(2, 3, 4, 6, 16);
  const auto KV = GENERATE(std::pair<int64_t, int64_t>{64, 64}, std::pair<int64_t, int64_t>{128, 96},
                           std::pair<int64_t, int64_t>{256, 64});
  const bool h0 = GENERATE(false, true);
  const bool delta = GENERATE(false, true);
  Problem pr;
  pr.shape = GdnShape{2, 1000, 1, 2, KV.first, KV.second};
  pr.dtype = DType::bf16;
  pr.use_h0 = h0;
  pr.use_delta = delta;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " groups " << groups << " K " << KV.first << " V " << KV.second << " h0 " << h0
               << " delta " << delta);
  check_outcome(pr, run_wy_ut(pr, groups));
}

TEST_CASE("wy_ut's two-level scan keeps the error at the rounding floor with strong decay and fp16",
          "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const int dist = GENERATE(0, 1);
  Problem pr;
  pr.shape = GdnShape{1, 4096, 2, 4, 128, 128};  // 64 chunks in 8 groups
  pr.dtype = DType::f16;
  pr.use_h0 = true;
  if (dist == 1) pr.gate_dist = GateDist::strong;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " " << pr.distributions());
  const Outcome r = run_wy_ut(pr, 8);
  check_outcome(pr, r);
  CHECK(r.o.err_vs_floor <= 1.2);
}

TEST_CASE("wy_ut stays finite and accurate under strong decay and extreme beta", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int dist = GENERATE(0, 1, 2, 3);
  Problem pr;
  pr.shape = GdnShape{1, 200, 1, 2, 128, 128};
  pr.dtype = dt;
  pr.use_h0 = true;
  if (dist == 0) pr.gate_dist = GateDist::strong;  // exp(gamma) underflows to 0 inside a chunk
  if (dist == 1) pr.gate_dist = GateDist::zero;
  if (dist == 2) pr.beta_dist = BetaDist::one;
  if (dist == 3) pr.beta_dist = BetaDist::zero;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " dtype " << dtype_name(dt) << " " << pr.distributions());
  check_outcome(pr, run_wy_ut(pr));
}

TEST_CASE("wy_ut's error stays at the dtype's rounding floor at T = 2048", "[gpu][wy_ut]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  Problem pr;
  pr.shape = GdnShape{1, 2048, 2, 4, 128, 128};
  pr.dtype = dt;
  pr.use_h0 = true;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed << " dtype " << dtype_name(dt));
  const Outcome r = run_wy_ut(pr);
  check_outcome(pr, r);
  // The products add ~1e-5 before o is rounded once: the error is the rounding's own.
  CHECK(r.o.err_vs_floor <= 1.2);
}

TEST_CASE("wy_ut indexes past 2^31 elements", "[gpu][wy_ut][slow][.]") {
  if (!gpu_or_warn()) return;
  // v and o hold B T HV V = 2^31 elements; the last value head is checked against a float64
  // recurrence of that head alone. About 30 GB of device memory and 25 GB of host memory.
  Problem pr;
  pr.shape = GdnShape{1, 262144, 1, 32, 64, 256};
  pr.dtype = DType::bf16;
  pr.use_h0 = true;
  pr.seed = testutil::fresh_seed();
  INFO("seed " << pr.seed);
  const GdnShape& s = pr.shape;
  const int64_t hv = s.HV - 1;
  HostInputs in = make_inputs(pr);
  DeviceGdn d(pr, in);
  DeviceBuffer ws(gdn_wy_ut_workspace_bytes(d.params));
  REQUIRE(launch_gdn_wy_ut(d.params, ws.get(), nullptr) == 0);
  CUDA_CHECK(cudaDeviceSynchronize());

  // Head hv alone: q, k as they are (H = 1), v, g, beta, h0 and the outputs sliced.
  GdnShape one = s;
  one.HV = 1;
  HostInputs head;
  head.q = std::move(in.q);
  head.k = std::move(in.k);
  head.v.resize(size_t(s.T * s.V));
  head.g.resize(size_t(s.T));
  head.beta.resize(size_t(s.T));
  for (int64_t t = 0; t < s.T; ++t) {
    std::copy_n(in.v.begin() + (t * s.HV + hv) * s.V, s.V, head.v.begin() + t * s.V);
    head.g[size_t(t)] = in.g[size_t(t * s.HV + hv)];
    head.beta[size_t(t)] = in.beta[size_t(t * s.HV + hv)];
  }
  head.h0.assign(in.h0.begin() + hv * s.K * s.V, in.h0.begin() + (hv + 1) * s.K * s.V);
  in = HostInputs();
  const GdnRefOutputs ref = gdn_recurrent_ref(one, to_f64(head).view(), ref_options(pr));

  std::vector<uint16_t> o_bits(size_t(s.T * s.V));
  CUDA_CHECK(cudaMemcpy2D(o_bits.data(), size_t(s.V) * 2,
                          static_cast<const uint16_t*>(d.params.o) + hv * s.V, size_t(s.HV * s.V) * 2,
                          size_t(s.V) * 2, size_t(s.T), cudaMemcpyDeviceToHost));
  std::vector<float> o(o_bits.size());
  for (size_t i = 0; i < o.size(); ++i)
    o[i] = o_bits[i] == kPoisonBitsBf16 ? poison_value_f32() : bf16_bits_to_float(o_bits[i]);
  const TensorMetrics mo = compare_to_reference(o, ref.o, pr.dtype);
  const TensorMetrics mh = compare_to_reference(part(d.params.hT + hv * s.K * s.V, s.K * s.V), ref.hT, DType::f32);
  INFO("o rel_l2 " << mo.rel_l2 << " hT rel_l2 " << mh.rel_l2);
  CHECK(mo.unwritten == 0);
  CHECK(mo.rel_l2 <= tolerance_for(Precision::tensor_core, pr.dtype).o_rel_l2);
  CHECK(mh.rel_l2 <= kStateBound);
}


TEST_CASE("wy_ut's output blocks per head fill one wave and share the chunks evenly", "[wy_ut]") {
  // An H200 at 3 resident blocks per SM: 396 slots.
  CHECK(gdn_wy_ut_output_blocks_per_head(256, 32, 396) == 12);  // T = 16384, 32 heads: 21-22 chunks
  CHECK(gdn_wy_ut_output_blocks_per_head(16, 32, 396) == 8);    // T = 1024: 2 chunks each
  CHECK(gdn_wy_ut_output_blocks_per_head(1, 32, 396) == 1);
  CHECK(gdn_wy_ut_output_blocks_per_head(256, 2048, 396) == 1);  // more heads than slots
  CHECK(gdn_wy_ut_output_blocks_per_head(1000, 1, 0) == 1);      // no occupancy reported
  const int64_t chunks = GENERATE(1, 2, 7, 64, 1000, 4096);
  const int64_t heads = GENERATE(1, 3, 32, 500);
  const int64_t slots = GENERATE(1, 132, 396, 528);
  const int64_t g = gdn_wy_ut_output_blocks_per_head(chunks, heads, slots);
  INFO("chunks " << chunks << " heads " << heads << " slots " << slots << " -> " << g);
  CHECK(g >= 1);
  CHECK(g <= chunks);
  CHECK((g * heads <= slots || g == 1));
  // The fewest blocks for their chunks per block: one block less would need more.
  const int64_t per_block = (chunks + g - 1) / g;
  if (g > 1) CHECK((chunks + g - 2) / (g - 1) > per_block);
}

TEST_CASE("wy_ut's scan takes groups only where its blocks leave most of the device idle", "[wy_ut]") {
  // An H200: 132 SMs, one scan block each at K = 128.
  CHECK(wy_ut_scan_groups_model(GdnShape{1, 16384, 32, 32, 128, 128}, 132) == 1);  // 128 blocks: full
  CHECK(wy_ut_scan_groups_model(GdnShape{1, 65536, 16, 32, 128, 128}, 132) == 1);
  CHECK(wy_ut_scan_groups_model(GdnShape{1, 16384, 4, 4, 128, 128}, 132) > 2);     // 16 blocks
  CHECK(wy_ut_scan_groups_model(GdnShape{1, 16384, 8, 8, 128, 128}, 132) > 2);     // 32 blocks
  CHECK(wy_ut_scan_groups_model(GdnShape{1, 1024, 4, 4, 128, 128}, 132) == 1);     // 16 chunks: too few
  CHECK(wy_ut_scan_groups_model(GdnShape{1, 16384, 4, 4, 128, 128}, 0) == 1);      // no device
  // Batches: the model sees B x HV heads. Run 67 measured these choices fastest against the plain
  // scan and G = 4, 8 forced (docs/log/runs-034-070.md): B = 2, HV = 2 and B = 4, HV = 1 take 5 / 9 / 9
  // groups at 4K / 16K / 64K, 8 heads 5, 16 heads the plain scan.
  for (const auto& [B, HV] : {std::pair<int64_t, int64_t>{2, 2}, {4, 1}}) {
    CHECK(wy_ut_scan_groups_model(GdnShape{B, 4096, HV, HV, 128, 128}, 132) == 5);
    CHECK(wy_ut_scan_groups_model(GdnShape{B, 16384, HV, HV, 128, 128}, 132) == 9);
    CHECK(wy_ut_scan_groups_model(GdnShape{B, 65536, HV, HV, 128, 128}, 132) == 9);
  }
  CHECK(wy_ut_scan_groups_model(GdnShape{2, 16384, 4, 4, 128, 128}, 132) == 5);
  CHECK(wy_ut_scan_groups_model(GdnShape{4, 65536, 2, 2, 128, 128}, 132) == 5);
  CHECK(wy_ut_scan_groups_model(GdnShape{4, 16384, 4, 4, 128, 128}, 132) == 1);
  const int64_t T = GENERATE(64, 1000, 8192, 65536, 1 << 20);
  const int64_t HV = GENERATE(1, 2, 8, 32, 64);
  const int64_t KV = GENERATE(64, 128, 256);
  const int64_t resident = GENERATE(1, 132, 264);
  const int64_t G = wy_ut_scan_groups_model(GdnShape{1, T, 1, HV, KV, KV}, resident);
  const int64_t N = (T + 63) / 64;
  INFO("T " << T << " HV " << HV << " K = V = " << KV << " resident " << resident << " -> " << G);
  CHECK(G >= 1);
  CHECK(G <= 32);
  if (G > 1) {
    CHECK(G >= 3);
    CHECK(N / G >= 8);                                         // groups of >= 8 chunks
    CHECK((N + (N + G - 1) / G - 1) / ((N + G - 1) / G) == G);  // none empty
    CHECK(HV * KV / 32 * 3 <= resident);  // the plain scan left two thirds of the blocks' room idle
  }
}

TEST_CASE("wy_ut accepts a supported shape before any buffer exists (the registry's question)", "[wy_ut]") {
  GdnParams p;  // every pointer null, as when the registry sizes a problem
  p.shape = GdnShape{1, 1000, 2, 4, 128, 128};
  p.dtype = DType::bf16;
  p.chunk = kWyUtChunk;
  CHECK(gdn_wy_ut_shape_unsupported(p) == nullptr);
  CHECK(gdn_wy_ut_unsupported(p) != nullptr);  // the launcher still refuses null pointers
  p.dtype = DType::f32;
  CHECK(gdn_wy_ut_shape_unsupported(p) != nullptr);
}

// The host-side rules above are defined in kernels/wy_ut/, built with CUDA only.
#else

TEST_CASE("wy_ut needs CUDA", "[gpu][wy_ut]") { WARN("skipped: built without CUDA"); }

#endif
