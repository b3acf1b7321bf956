// [gpu] tests of the front-end variants (kernels/frontend/frontend.cu, kernels/decode/, fused_conv in
// kernels/wy_ut/) against the float64 front end + recurrence: conv caches in and out, tails,
// grouped value heads, decode batches up to 512 through a shuffled slot pool, decode applied T
// times == the forward, and fused_conv == unfused_conv on the same inputs.
// Without a GPU (or in a build without CUDA) each test says why in a warning and checks nothing.
// About 600 lines on purpose: one file for the front-end variants, which share its helpers.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <random>
#include <string>

#include "harness/gpu_runtime.h"
#include "harness/runner.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/test_util.h"
#ifdef GDNBENCH_HAVE_CUDA
#include "harness/cuda_check.h"
#include "harness/device_buffer.h"
#include "kernels/frontend/frontend.h"
#endif

namespace {

using gputest::gpu_or_warn;
using gputest::verify_on_gpu;
using gputest::decode_fe_kernel_on_device;
using gputest::decode_state_kernel_on_device;

Problem frontend_problem(GdnShape shape, DType dt, bool h0) {
  Problem p;
  p.shape = shape;
  p.dtype = dt;
  p.use_h0 = h0;
  p.frontend = true;
  p.seed = testutil::fresh_seed();
  return p;
}

void check_row(const ResultRow& row) {
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
  CHECK(row.ht.unwritten == 0);
  CHECK(row.conv.present);
  CHECK(row.conv.rel_l2 == 0.0);
}

}  // namespace

TEST_CASE("unfused_conv matches the float64 front end + recurrence on the GPU", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  static const int64_t kT[] = {1, 3, 8, 63, 64, 65, 200};
  static const int64_t kKV[][2] = {{64, 64}, {128, 128}, {256, 256}, {64, 96}};
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int ti = GENERATE(range(0, 7));
  const int kvi = GENERATE(range(0, 4));
  // Without h0, a few fresh tokens give o = a few q.k products: only T >= 8 there.
  const bool h0 = kT[ti] < 8 || (ti + kvi) % 2 == 0;
  const Problem p = frontend_problem(GdnShape{2, kT[ti], 1, 2, kKV[kvi][0], kKV[kvi][1]}, dt, h0);
  INFO("seed " << p.seed << " " << dtype_name(dt) << " T " << p.shape.T << " K " << p.shape.K << " V "
                << p.shape.V << " h0 " << h0);
  check_row(verify_on_gpu("unfused_conv", p));
}

TEST_CASE("unfused_conv with grouped value heads and a batch on the GPU", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  const bool delta = GENERATE(true, false);
  Problem p = frontend_problem(GdnShape{3, 100, 2, 6, 64, 64}, DType::bf16, true);
  p.use_delta = delta;
  INFO("seed " << p.seed << " delta " << delta);
  check_row(verify_on_gpu("unfused_conv", p));
}

TEST_CASE("fused_conv matches the float64 front end + recurrence on the GPU", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  // Chunk tails and the first chunk's conv halo (T < 3 reads the initial cache only); V from one
  // 32-column block to 256.
  static const int64_t kT[] = {1, 2, 3, 8, 63, 64, 65, 200};
  static const int64_t kKV[][2] = {{64, 64}, {128, 128}, {64, 96}, {128, 256}, {128, 32}};
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int ti = GENERATE(range(0, 8));
  const int kvi = GENERATE(range(0, 5));
  // Without h0 (and so without initial conv caches), a few fresh tokens give o = a few q.k
  // products: only T >= 8 there.
  const bool h0 = kT[ti] < 8 || (ti + kvi) % 2 == 0;
  const Problem p = frontend_problem(GdnShape{2, kT[ti], 1, 2, kKV[kvi][0], kKV[kvi][1]}, dt, h0);
  INFO("seed " << p.seed << " " << dtype_name(dt) << " T " << p.shape.T << " K " << p.shape.K << " V "
                << p.shape.V << " h0 " << h0);
  check_row(verify_on_gpu("fused_conv", p));
}

TEST_CASE("fused_conv with grouped value heads and a batch on the GPU", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  // HV / H = 3 value heads share each q/k head: the final q/k conv caches must be written once,
  // exactly (check_row: conv rel_l2 == 0), and every value head must see the same k.
  const bool delta = GENERATE(true, false);
  const int64_t T = GENERATE(100, 130);
  Problem p = frontend_problem(GdnShape{3, T, 2, 6, 64, 64}, DType::bf16, true);
  p.use_delta = delta;
  INFO("seed " << p.seed << " T " << T << " delta " << delta);
  check_row(verify_on_gpu("fused_conv", p));
}

TEST_CASE("fused_conv refuses K = 256 and fp32 with a reason", "[frontend][registry]") {
  const VariantInfo* v = find_variant("fused_conv");
  if (!v) {
    WARN("skipped: a build without CUDA has no fused_conv");
    return;
  }
  Problem p = frontend_problem(GdnShape{1, 64, 1, 1, 256, 256}, DType::bf16, true);
  const std::optional<std::string> k256 = v->unsupported(p);
  REQUIRE(k256.has_value());
  CHECK(k256->find("K in {64, 128}") != std::string::npos);
  p.shape.K = 128;
  p.shape.V = 128;
  p.dtype = DType::f32;
  CHECK(v->unsupported(p).has_value());
}

#ifdef GDNBENCH_HAVE_CUDA
TEST_CASE("fused_conv refuses final conv caches that overlap the initial ones", "[frontend]") {
  // prepare writes the final caches while other blocks, and the output kernel after it, read the
  // initial ones. Refused before any launch, so the pointers are never dereferenced: no GPU needed.
  const GdnShape s{2, 100, 2, 4, 64, 64};
  alignas(16) static unsigned char fake[3][1 << 16];
  GdnFrontEndParams fe;
  fe.shape = s;
  fe.dtype = DType::bf16;
  for (int t = 0; t < 3; ++t) {
    fe.x[t] = fe.conv_w[t] = fake[0];
    fe.cache_in[t] = fake[1] + 4096 * t;
    fe.cache_out[t] = fake[2] + 4096 * t;
  }
  fe.a = fe.b = fake[0];
  fe.A_log = fe.dt_bias = reinterpret_cast<const float*>(fake[0]);
  fe.o = fake[0];
  const int64_t k_cache_bytes = s.B * s.H * s.K * kConvCache * 2;  // 1536
  SECTION("in place") { fe.cache_out[kFeK] = const_cast<void*>(fe.cache_in[kFeK]); }
  SECTION("partly: one tensor's final cache runs into another's initial cache") {
    fe.cache_out[kFeQ] = const_cast<unsigned char*>(static_cast<const unsigned char*>(fe.cache_in[kFeK])) -
                         (k_cache_bytes - 2);
  }
  CHECK(launch_gdn_fused_conv(fe, fake[0], nullptr) == int(cudaErrorInvalidValue));
}

TEST_CASE("fused_conv refuses projections, conv weights, biases or a workspace not 16-byte aligned",
          "[frontend]") {
  // The tile builders load and store 8 channels (16 bytes) at a time. Refused before any launch,
  // so the pointers are never dereferenced: no GPU needed.
  const GdnShape s{2, 100, 2, 4, 64, 64};
  alignas(16) static unsigned char fake[1 << 12];
  unsigned char* const off = fake + 2;  // a bf16 element boundary, not a 16-byte one
  GdnFrontEndParams fe;
  fe.shape = s;
  fe.dtype = DType::bf16;
  for (int t = 0; t < 3; ++t) {
    fe.x[t] = fe.conv_w[t] = fake;
    fe.conv_bias[t] = fake;
  }
  fe.a = fe.b = fake;
  fe.A_log = fe.dt_bias = reinterpret_cast<const float*>(fake);
  fe.o = fake;
  void* workspace = fake;
  const int t = GENERATE(kFeQ, kFeK, kFeV);
  SECTION("a projection") { fe.x[t] = off; }
  SECTION("conv weights") { fe.conv_w[t] = off; }
  SECTION("a conv bias") { fe.conv_bias[t] = off; }
  SECTION("the workspace") { workspace = off; }
  INFO("tensor " << t);
  CHECK(launch_gdn_fused_conv(fe, workspace, nullptr) == int(cudaErrorInvalidValue));
}
#endif

TEST_CASE("fused_conv's o, hT and conv caches agree with unfused_conv's on the same inputs", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  // T = 2: the final caches keep one row of the initial cache (or of zeros without one). The
  // 48-head shapes at T = 1000 give the pipelined kernels (version 3) several chunks per block
  // (one wave of blocks over 48 heads), so a chunk's raw rows arrive while the one before computes;
  // V = 192: version 2's kernels.
  const int64_t T = GENERATE(2, 5, 64, 200, 1000);
  const bool h0 = GENERATE(true, false);
  const auto shape = GENERATE(std::array<int64_t, 4>{2, 4, 128, 64}, std::array<int64_t, 4>{4, 24, 128, 64},
                              std::array<int64_t, 4>{4, 24, 64, 96}, std::array<int64_t, 4>{2, 4, 64, 192});
  if ((T == 1000) != (shape[1] == 24)) return;  // the big shapes at T = 1000 only, and only they
  const Problem p = frontend_problem(GdnShape{2, T, shape[0], shape[1], shape[2], shape[3]}, dt, h0);
  INFO("seed " << p.seed << " " << dtype_name(dt) << " T " << T << " H " << shape[0] << " HV " << shape[1] << " K "
                << shape[2] << " V " << shape[3] << " h0 " << h0 << " pipelined "
                << (fused_conv_output(p.shape, FusedConvOutput::automatic) == FusedConvOutput::pipelined));
  const HostInputs in = make_inputs(p);
  RunOutputs out[2];
  const char* names[2] = {"unfused_conv", "fused_conv"};
  for (int i = 0; i < 2; ++i) {
    const VariantInfo* v = find_variant(names[i]);
    REQUIRE(v != nullptr);
    REQUIRE_FALSE(v->unsupported(p).has_value());
    std::unique_ptr<VariantRun> run = v->create(p, in, RunContext{});
    run->poison_outputs();
    run->launch();
    out[i] = run->read_outputs();
  }
  // fused_conv builds its q, k, v tiles with the front-end kernel's operations in the same order
  // (fe_roll's, or fe_convert_tile's on the raw rows in shared memory: the same lanes summing a
  // row's squares), and wy_ut's kernels then run the same products on the same bits: o and hT are
  // unfused_conv's, bit for bit.
  CHECK(out[1].o == out[0].o);
  CHECK(out[1].hT == out[0].hT);
  // The conv caches are copies of input rows: the same bits.
  CHECK(out[1].conv_cache == out[0].conv_cache);
}

TEST_CASE("fused_decode matches the float64 reference on the GPU", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  // K = 32, V = 136: the lane kernel with K < kK = 64, and a second block whose warps 5-7 lie
  // past V (j0 >= V) next to a partial column group.
  static const int64_t kKV[][2] = {{64, 64}, {100, 72}, {128, 128}, {256, 256}, {32, 136}};
  const char* variant = GENERATE("fused_decode", "fused_decode_bf16state");
  const DType dt = GENERATE(DType::f32, DType::bf16, DType::f16);
  const int64_t T = GENERATE(1, 2, 5, 8);
  const int kvi = GENERATE(range(0, 5));
  const bool h0 = (T + kvi) % 2 == 0 || T == 1;
  const Problem p = frontend_problem(GdnShape{3, T, 2, 4, kKV[kvi][0], kKV[kvi][1]}, dt, h0);
  INFO("seed " << p.seed << " " << variant << " " << dtype_name(dt) << " T " << T << " K " << p.shape.K
                << " V " << p.shape.V << " h0 " << h0);
  check_row(verify_on_gpu(variant, p));
}

TEST_CASE("fused_decode at serving batch sizes through a shuffled slot pool on the GPU", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  const int64_t B = GENERATE(1, 8, 64, 512);
  const bool delta = GENERATE(true, false);
  Problem p = frontend_problem(GdnShape{B, 1, 4, 8, 128, 128}, DType::bf16, true);
  p.use_delta = delta;
  INFO("seed " << p.seed << " B " << B << " delta " << delta);
  check_row(verify_on_gpu("fused_decode", p));
}

// The scalar front-end kernel's several-rows-per-block shape (T = 1, large B x heads, K not a
// multiple of 8), with a last block of 3 rows (B = 515), in every dtype; smaller batches and T > 1
// take one row per block, K and V multiples of 8 the vector kernel (the tests above).
TEST_CASE("fused_decode's front end with several batch rows per block matches the float64 reference",
          "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
#ifdef GDNBENCH_HAVE_CUDA
  const DType dt = GENERATE(DType::bf16, DType::f16, DType::f32);
  const GdnShape shape{515, 1, 4, 8, 100, 72};
  REQUIRE((decode_fe_kernel_on_device(shape, dt)) == "rows");
  CHECK((decode_fe_kernel_on_device(GdnShape{8, 1, 4, 8, 100, 72}, dt)) == "row");
  CHECK((decode_fe_kernel_on_device(GdnShape{515, 2, 4, 8, 100, 72}, dt)) == "row");
  const bool half = dt != DType::f32;  // the vector kernel's dtypes
  CHECK((decode_fe_kernel_on_device(GdnShape{515, 1, 4, 8, 128, 128}, dt)) == (half ? "vector" : "rows"));
  CHECK((decode_fe_kernel_on_device(GdnShape{515, 4, 4, 8, 32, 136}, dt)) == (half ? "vector" : "row"));
  CHECK((decode_fe_kernel_on_device(GdnShape{515, 5, 4, 8, 128, 128}, dt)) == "row");
  CHECK((decode_fe_kernel_on_device(GdnShape{1, 1, 4, 8, 128, 128}, dt)) == "row");
  Problem p = frontend_problem(shape, dt, true);
  INFO("seed " << p.seed << " dtype " << dtype_name(dt));
  check_row(verify_on_gpu("fused_decode", p));
#endif
}

// Each of fused_decode's state kernels where the launcher chooses it (kernels/decode/): version
// 8's stream (a bf16 pool, K = 128, 1200 slices: several rounds of every block's stages; T = 8
// with two stages of a V = 96 slice), the split-column kernel (a bf16 pool with few slices or
// K < 128, V past 128), version 5's lane kernel (a float32 pool; capped for 2 blocks per SM where
// its grid fits one wave of those; otherwise where V is off a multiple of 4, in 2-warp blocks at
// T = 1, with partial blocks at V = 66 and 70), the quad kernel (a float32 pool outside one-wave
// grids, V a multiple of 4; a partial block at V = 72, zero rows at K = 100) and the block kernel
// (K = 256).
TEST_CASE("fused_decode's state kernels each match the float64 reference where chosen", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
#ifdef GDNBENCH_HAVE_CUDA
  struct Case {
    int64_t B, T, K, V;
    bool bf16_pool;
    const char* kernel;
  };
  static const Case kCases[] = {
      {300, 1, 128, 128, true, "stream"}, {300, 3, 128, 128, true, "stream"}, {300, 8, 128, 96, true, "stream"},
      {3, 1, 128, 128, true, "split"},    {300, 2, 100, 72, true, "split"},   {5, 3, 32, 136, true, "split"},
      {300, 2, 128, 70, false, "lane_wide"}, {5, 2, 64, 64, false, "lane64"},      {5, 1, 256, 256, true, "block"},
      {5, 2, 128, 128, false, "lane_one_wave"}, {3, 1, 100, 72, false, "lane_one_wave"},
      {300, 1, 128, 70, false, "lane_narrow"},  {300, 1, 100, 66, false, "lane_narrow"},
      {200, 1, 128, 70, false, "lane_narrow"},  {300, 2, 128, 128, false, "quad"},
      {300, 1, 128, 128, false, "quad"},        {300, 1, 100, 72, false, "quad"},
      {300, 8, 100, 72, false, "quad"},
  };
  const int ci = GENERATE(range(0, 18));
  const DType dt = GENERATE(DType::bf16, DType::f32);
  const Case& c = kCases[ci];
  const GdnShape shape{c.B, c.T, 2, 4, c.K, c.V};
  const std::string kernel = decode_state_kernel_on_device(shape, c.bf16_pool);
  REQUIRE(!kernel.empty());
  REQUIRE(std::string(kernel) == c.kernel);
  const Problem p = frontend_problem(shape, dt, ci % 2 == 0);
  INFO("seed " << p.seed << " " << kernel << " " << dtype_name(dt) << " B " << c.B << " T " << c.T << " K " << c.K
                << " V " << c.V);
  check_row(verify_on_gpu(c.bf16_pool ? "fused_decode_bf16state" : "fused_decode", p));
#endif
}

// The stream kernel's shared memory grows with T; a larger T launched again after a smaller one
// was first asked for must still get its own (T = 7 and 2: no other test takes the stream there).
TEST_CASE("fused_decode's stream kernel runs a larger T again after a smaller one", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
#ifdef GDNBENCH_HAVE_CUDA
  for (const int64_t T : {7, 2, 7}) {
    const GdnShape shape{300, T, 2, 4, 128, 128};
    const std::string kernel = decode_state_kernel_on_device(shape, true);
    REQUIRE(!kernel.empty());
    REQUIRE(std::string(kernel) == "stream");
    const Problem p = frontend_problem(shape, DType::bf16, true);
    INFO("seed " << p.seed << " T " << T);
    check_row(verify_on_gpu("fused_decode_bf16state", p));
  }
#endif
}

#ifdef GDNBENCH_HAVE_CUDA
namespace {

std::vector<float> from_device_as(const DeviceBuffer& d, size_t n, DType dt) {
  std::vector<float> x(n);
  if (dt == DType::f32) {
    CUDA_CHECK(cudaMemcpy(x.data(), d.get(), n * 4, cudaMemcpyDeviceToHost));
    return x;
  }
  std::vector<uint16_t> bits(n);
  CUDA_CHECK(cudaMemcpy(bits.data(), d.get(), n * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) x[i] = dt == DType::bf16 ? bf16_bits_to_float(bits[i]) : half_bits_to_float(bits[i]);
  return x;
}

// A decode driver over the kernel API: pools of exactly B slots in reverse order (slot B-1-b),
// state float32, conv caches in dtype. launch() runs tokens [t0, t1) of the problem's inputs.
struct DecodeDriver {
  Problem p;
  const HostInputs& in;
  DeviceBuffer w[3], bias[3], A_log, dt_bias, state, cache[3], slots, workspace;
  // The projections one element past a 16-byte boundary: not a vector front end's (kernels/decode/).
  bool misaligned_x = false;

  DecodeDriver(const Problem& problem, const HostInputs& inputs) : p(problem), in(inputs) {
    const GdnShape& s = p.shape;
    const FrontEndHost& fe = in.fe;
    const std::vector<float>* ws[3] = {&fe.w_q, &fe.w_k, &fe.w_v};
    const std::vector<float>* bs[3] = {&fe.bias_q, &fe.bias_k, &fe.bias_v};
    const std::vector<float>* cs[3] = {&fe.cache_q, &fe.cache_k, &fe.cache_v};
    std::vector<int32_t> slot(size_t(s.B));
    for (int64_t b = 0; b < s.B; ++b) slot[size_t(b)] = int32_t(s.B - 1 - b);
    for (int t = 0; t < 3; ++t) {
      w[t] = gputest::to_device(*ws[t], p.dtype);
      bias[t] = gputest::to_device(*bs[t], p.dtype);
      cache[t] = gputest::to_device(reorder(*cs[t], slot), p.dtype);
    }
    A_log = gputest::to_device(fe.A_log, DType::f32);
    dt_bias = gputest::to_device(fe.dt_bias, DType::f32);
    state = gputest::to_device(reorder(in.h0, slot), DType::f32);
    slots = DeviceBuffer(slot.size() * 4);
    CUDA_CHECK(cudaMemcpy(slots.get(), slot.data(), slots.bytes(), cudaMemcpyHostToDevice));
    workspace = DeviceBuffer(gdn_decode_workspace_bytes(s));
  }
  // Row b of a [B, row] tensor to row B-1-b.
  static std::vector<float> reorder(const std::vector<float>& x, const std::vector<int32_t>& slot) {
    const size_t row = x.size() / slot.size();
    std::vector<float> out(x.size());
    for (size_t b = 0; b < slot.size(); ++b)
      std::memcpy(out.data() + size_t(slot[b]) * row, x.data() + b * row, row * sizeof(float));
    return out;
  }
  // o of tokens [t0, t1), [B, t1 - t0, HV, V].
  std::vector<float> launch(int64_t t0, int64_t t1) {
    const GdnShape& s = p.shape;
    const FrontEndHost& fe = in.fe;
    const int64_t cqk = s.H * s.K, cv = s.HV * s.V, n = t1 - t0;
    DeviceBuffer x[3] = {gputest::to_device(testutil::slice_tokens(fe.x_q, s.B, s.T, cqk, t0, t1), p.dtype),
                         gputest::to_device(testutil::slice_tokens(fe.x_k, s.B, s.T, cqk, t0, t1), p.dtype),
                         gputest::to_device(testutil::slice_tokens(fe.x_v, s.B, s.T, cv, t0, t1), p.dtype)};
    DeviceBuffer a = gputest::to_device(testutil::slice_tokens(fe.a, s.B, s.T, s.HV, t0, t1), p.dtype);
    DeviceBuffer b = gputest::to_device(testutil::slice_tokens(fe.b, s.B, s.T, s.HV, t0, t1), p.dtype);
    DeviceBuffer o(size_t(s.B * n * cv) * dtype_bytes(p.dtype));
    const size_t elem = dtype_bytes(p.dtype), shift = misaligned_x ? elem : 0;
    if (misaligned_x)
      for (DeviceBuffer& xt : x) {
        DeviceBuffer moved(xt.bytes() + elem);
        CUDA_CHECK(cudaMemcpy(moved.as<char>() + shift, xt.get(), xt.bytes(), cudaMemcpyDeviceToDevice));
        xt = std::move(moved);
      }
    GdnFrontEndParams fp;
    fp.shape = s;
    fp.shape.T = n;
    fp.dtype = p.dtype;
    for (int t = 0; t < 3; ++t) {
      fp.x[t] = x[t].as<char>() + shift;
      fp.conv_w[t] = w[t].get();
      fp.conv_bias[t] = bias[t].get();
      fp.cache_in[t] = cache[t].get();
      fp.cache_out[t] = cache[t].get();
    }
    fp.a = a.get();
    fp.b = b.get();
    fp.A_log = A_log.as<float>();
    fp.dt_bias = dt_bias.as<float>();
    fp.scale = float(p.resolved_scale());
    fp.use_delta = p.use_delta;
    fp.o = o.get();
    fp.state = state.get();
    fp.slots = slots.as<int32_t>();
    fp.pool_slots = s.B;
    CUDA_CHECK(cudaError_t(launch_gdn_decode(fp, workspace.get(), nullptr)));
    CUDA_CHECK(cudaDeviceSynchronize());
    return from_device_as(o, size_t(s.B * n * cv), p.dtype);
  }
  // o of all T tokens, [B, T, HV, V], from T launches of one token each.
  std::vector<float> launch_token_by_token() {
    const GdnShape& s = p.shape;
    const int64_t cv = s.HV * s.V;
    std::vector<float> o(size_t(s.v_elems()));
    for (int64_t t = 0; t < s.T; ++t) {
      const std::vector<float> ot = launch(t, t + 1);
      for (int64_t b = 0; b < s.B; ++b)
        std::copy(ot.begin() + b * cv, ot.begin() + (b + 1) * cv, o.begin() + (b * s.T + t) * cv);
    }
    return o;
  }
  // The state [B, HV, K, V] and the caches (q, k, v concatenated) in batch order.
  std::vector<float> final_state() const {
    const GdnShape& s = p.shape;
    return unorder(from_device_as(state, size_t(s.state_elems()), DType::f32));
  }
  std::vector<float> final_caches() const {
    const GdnShape& s = p.shape;
    std::vector<float> out;
    for (int t = 0; t < 3; ++t) {
      const int64_t ch = t == 2 ? s.HV * s.V : s.H * s.K;
      const std::vector<float> c = unorder(from_device_as(cache[t], size_t(s.B * ch * kConvCache), p.dtype));
      out.insert(out.end(), c.begin(), c.end());
    }
    return out;
  }
  std::vector<float> unorder(const std::vector<float>& x) const {
    const size_t B = size_t(p.shape.B), row = x.size() / B;
    std::vector<float> out(x.size());
    for (size_t b = 0; b < B; ++b) std::memcpy(out.data() + b * row, x.data() + (B - 1 - b) * row, row * sizeof(float));
    return out;
  }
};

// T launches of one token against one T-token launch of the same inputs: o, the state and the conv
// caches bit for bit (the same float32 operations in the same order whether the state waits in
// registers or in the float32 pool between tokens), and the float64 forward over the T tokens
// within the fp32_math bounds (the caches exact: copies of inputs). The comparisons are flags: on
// a mismatch Catch would print every element of vectors this long.
void check_steps_equal_one_launch(const Problem& p) {
  const HostInputs in = make_inputs(p);
  const GdnRefOutputs ref = gdn_reference_for(p, to_f64(in), 4);
  DecodeDriver steps(p, in);
  const std::vector<float> o_steps = steps.launch_token_by_token();
  DecodeDriver once(p, in);
  const std::vector<float> o_once = once.launch(0, p.shape.T);
  const bool o_equal = o_steps == o_once, state_equal = steps.final_state() == once.final_state(),
             caches_equal = steps.final_caches() == once.final_caches();
  CHECK(o_equal);
  CHECK(state_equal);
  CHECK(caches_equal);
  const Tolerance tol = tolerance_for(Precision::fp32_math, p.dtype);
  CHECK(testutil::rel_l2(o_steps, ref.o) <= tol.o_rel_l2);
  CHECK(testutil::rel_l2(steps.final_state(), ref.hT) <= tol.ht_rel_l2);
  CHECK(testutil::rel_l2(steps.final_caches(), ref.conv_cache) == 0.0);
}

}  // namespace

TEST_CASE("fused_decode applied T times equals one T-token launch and the float64 forward", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::f32, DType::bf16);
  const int64_t T = GENERATE(2, 5, 8);
  // K = 64 and 128: the lane-per-column state kernel (kK = 64, 128); 256: the block kernel.
  const int64_t K = GENERATE(64, 128, 256);
  const Problem p = frontend_problem(GdnShape{4, T, 2, 4, K, 64}, dt, true);
  INFO("seed " << p.seed << " " << dtype_name(dt) << " T " << T << " K " << K);
  check_steps_equal_one_launch(p);
}

// The quad state kernel takes both the one-token launches and the T-token one at B = 200, as does
// the vector front end (bf16, T <= 4): token by token equals one launch bit for bit, and both the
// float64 forward.
TEST_CASE("fused_decode's quad kernel applied T times equals one T-token launch", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  const int64_t T = GENERATE(2, 4);
  const Problem p = frontend_problem(GdnShape{200, T, 2, 4, 128, 64}, DType::bf16, true);
  INFO("seed " << p.seed << " T " << T);
  GdnShape one = p.shape;
  one.T = 1;
  for (const GdnShape& s : {one, p.shape}) {
    const std::string kernel = decode_state_kernel_on_device(s, false);
    REQUIRE(!kernel.empty());
    REQUIRE(std::string(kernel) == "quad");
    REQUIRE((decode_fe_kernel_on_device(s, DType::bf16)) == "vector");
  }
  check_steps_equal_one_launch(p);
}

// Version 14's one-launch step (gdn_decode_quad_fe_kernel: T = 1, H = HV, K = V = 128, 16-bit
// inputs, a float32 pool): token by token it must give the bits of one T-token launch, which runs
// the vector front end and then the quad kernel, and both the float64 forward (B = 200: grids past
// one wave, whose blocks prefetch later blocks' slices into L2, version 15). With the projections
// off their 16-byte boundary the same shape takes the two-kernel path with the scalar front end,
// within the forward's bounds. Where any condition fails the quad kernel (or, in one-wave grids,
// the lane kernel) follows a front-end kernel as before.
TEST_CASE("fused_decode's one-launch step (quad_fe) equals the two-kernel path bit for bit", "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t T = GENERATE(2, 3);
  const Problem p = frontend_problem(GdnShape{200, T, 4, 4, 128, 128}, dt, true);
  INFO("seed " << p.seed << " " << dtype_name(dt) << " T " << T);
  GdnShape one = p.shape;
  one.T = 1;
  const auto state_kernel = [](const GdnShape& s, DType d) {
    return decode_state_kernel_on_device(s, false, d);
  };
  REQUIRE(state_kernel(one, dt) == "quad_fe");
  REQUIRE(state_kernel(p.shape, dt) == "quad");  // T > 1
  CHECK(state_kernel(one, DType::f32) == "quad");  // 32-bit inputs
  CHECK(state_kernel(GdnShape{200, 1, 2, 4, 128, 128}, dt) == "quad");  // H != HV
  CHECK(state_kernel(GdnShape{200, 1, 4, 4, 128, 64}, dt) == "quad");  // V != 128
  CHECK(state_kernel(GdnShape{3, 1, 4, 4, 128, 128}, dt) == "quad_fe");  // one wave: one launch too
  CHECK((decode_state_kernel_on_device(one, true, dt)) != "quad_fe");  // a bf16 pool
  check_steps_equal_one_launch(p);

  const HostInputs in = make_inputs(p);
  const GdnRefOutputs ref = gdn_reference_for(p, to_f64(in), 4);
  const Tolerance tol = tolerance_for(Precision::fp32_math, dt);
  DecodeDriver misaligned(p, in);
  misaligned.misaligned_x = true;
  const std::vector<float> o = misaligned.launch_token_by_token();
  CHECK(testutil::rel_l2(o, ref.o) <= tol.o_rel_l2);
  CHECK(testutil::rel_l2(misaligned.final_state(), ref.hT) <= tol.ht_rel_l2);
  CHECK(testutil::rel_l2(misaligned.final_caches(), ref.conv_cache) == 0.0);

  // A one-wave grid (B = 3) token by token: quad_fe's launches against the float64 forward.
  const Problem small = frontend_problem(GdnShape{3, T, 4, 4, 128, 128}, dt, true);
  INFO("small seed " << small.seed);
  const HostInputs small_in = make_inputs(small);
  const GdnRefOutputs small_ref = gdn_reference_for(small, to_f64(small_in), 4);
  DecodeDriver small_steps(small, small_in);
  const std::vector<float> small_o = small_steps.launch_token_by_token();
  CHECK(testutil::rel_l2(small_o, small_ref.o) <= tol.o_rel_l2);
  CHECK(testutil::rel_l2(small_steps.final_state(), small_ref.hT) <= tol.ht_rel_l2);
  CHECK(testutil::rel_l2(small_steps.final_caches(), small_ref.conv_cache) == 0.0);
}

// The vector front end (16-bit inputs, K and V multiples of 8) token by token, against one 3-token
// launch (bit for bit: the same operations per token) and the float64 forward; and with the
// projections moved off their 16-byte boundary, the scalar kernel on the same inputs, within the
// forward's bounds. The conv caches exact in both (copies of inputs).
TEST_CASE("fused_decode's vector front end, and its scalar fallback for misaligned projections",
          "[gpu][frontend]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::bf16, DType::f16);
  const int64_t T = 3;
  // B = 96: a grid of 72 blocks, one-piece stores; B = 1200: 375 blocks, whole-sector stores of
  // the caches, and of the rows but for HV = 3 (rows off 16-byte boundaries).
  static const GdnShape kShapes[] = {{96, T, 2, 4, 128, 64}, {1200, T, 1, 3, 64, 64}, {1200, T, 1, 2, 64, 64}};
  const Problem p = frontend_problem(kShapes[GENERATE(0, 1, 2)], dt, true);
  GdnShape one = p.shape;
  one.T = 1;
  REQUIRE((decode_fe_kernel_on_device(one, dt)) == "vector");
  REQUIRE((decode_fe_kernel_on_device(p.shape, dt)) == "vector");
  INFO("seed " << p.seed << " " << dtype_name(dt) << " B " << p.shape.B << " HV " << p.shape.HV);
  const HostInputs in = make_inputs(p);
  const GdnRefOutputs ref = gdn_reference_for(p, to_f64(in), 4);
  const Tolerance tol = tolerance_for(Precision::fp32_math, dt);
  for (const bool misaligned : {false, true}) {
    DecodeDriver steps(p, in);
    steps.misaligned_x = misaligned;
    const std::vector<float> o = steps.launch_token_by_token();
    INFO("misaligned " << misaligned);
    CHECK(testutil::rel_l2(o, ref.o) <= tol.o_rel_l2);
    CHECK(testutil::rel_l2(steps.final_state(), ref.hT) <= tol.ht_rel_l2);
    CHECK(testutil::rel_l2(steps.final_caches(), ref.conv_cache) == 0.0);
    if (!misaligned) {
      DecodeDriver once(p, in);
      CHECK(once.launch(0, T) == o);
      CHECK(once.final_state() == steps.final_state());
      CHECK(once.final_caches() == steps.final_caches());
    }
  }
}
#endif
