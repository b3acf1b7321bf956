// [gpu] tests: every CUDA variant against the float64 reference over a shape grid. Without a
// GPU (or in a build without CUDA) each test says why in a warning and checks nothing else.
#include <catch2/catch.hpp>

#include <random>

#include "harness/gpu_runtime.h"
#include "harness/runner.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/test_util.h"
#ifdef GDNBENCH_HAVE_CUDA
#include "harness/cuda_check.h"
#include "harness/device_buffer.h"
#include "kernels/chunked/chunked_stages.h"
#include "kernels/common/cuda_kernels.h"
#endif

namespace {

using gputest::gpu_or_warn;
using gputest::verify_on_gpu;

uint64_t fresh_seed() { return (uint64_t(std::random_device{}()) << 32) | std::random_device{}(); }

}  // namespace

TEST_CASE("recurrent matches the float64 reference on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::f32, DType::bf16, DType::f16);
  const int64_t T = GENERATE(1, 15, 16, 17, 100);
  const auto KV = GENERATE(std::pair<int64_t, int64_t>{64, 64}, std::pair<int64_t, int64_t>{100, 72},
                           std::pair<int64_t, int64_t>{128, 128}, std::pair<int64_t, int64_t>{256, 256});
  const bool h0 = GENERATE(false, true);
  Problem p;
  p.shape = GdnShape{2, T, 1, 2, KV.first, KV.second};
  p.dtype = dt;
  p.use_h0 = h0;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " dtype " << dtype_name(dt) << " T " << T << " K " << KV.first);
  const ResultRow row = verify_on_gpu("recurrent", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
  CHECK(row.ht.unwritten == 0);
}

TEST_CASE("GPU timing flushes the L2 as --l2-flush says and records how it timed", "[gpu][timing]") {
  if (!gpu_or_warn()) return;
  const L2Flush flush = GENERATE(L2Flush::write, L2Flush::clean, L2Flush::off);
  const bool graph = GENERATE(false, true);
  Problem p;
  p.shape = GdnShape{2, 33, 1, 2, 64, 64};
  p.dtype = DType::bf16;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " flush " << l2_flush_name(flush) << " graph " << graph);
  const VariantInfo* v = find_variant("recurrent");
  REQUIRE(v != nullptr);
  RunOptions opt;
  opt.gpu = query_gpu();
  opt.cpu_threads = 4;
  opt.timed = true;
  opt.timing.l2_flush = flush;
  opt.timing.cuda_graph = graph;
  opt.timing.min_samples = 3;
  opt.timing.max_seconds = 0.05;
  const ResultRow row = verify_single_case(Case{p, v, true}, opt, make_inputs(p));
  INFO(row.reason);
  REQUIRE(row.status == Status::pass);
  REQUIRE(row.timing.has_value());
  CHECK(row.timing->l2_flush == l2_flush_name(flush));
  CHECK(row.timing->timer == (graph ? "graph" : "events"));
  CHECK(row.timing->samples >= 3);
  CHECK(row.timing->median_ms > 0.0);
}

TEST_CASE("recurrent covers DeltaNet and gated linear attention on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const bool gate = GENERATE(false, true);
  const bool delta = GENERATE(false, true);
  Problem p;
  p.shape = GdnShape{1, 70, 2, 2, 64, 64};
  p.use_gate = gate;
  p.use_delta = delta;
  p.use_h0 = true;
  p.seed = fresh_seed();
  INFO("seed " << p.seed);
  const ResultRow row = verify_on_gpu("recurrent", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
}

TEST_CASE("recurrent decode runs more than 65535 heads (B * HV past gridDim.y)", "[gpu]") {
  if (!gpu_or_warn()) return;
  // T <= 8 takes the decode kernel, one block row per head: 1100 x 64 = 70400 heads must fold
  // into gridDim.z instead of failing to launch.
  const int64_t T = GENERATE(1, 3);
  Problem p;
  p.shape = GdnShape{1100, T, 64, 64, 16, 16};
  p.dtype = DType::bf16;
  p.use_h0 = true;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " T " << T);
  const ResultRow row = verify_on_gpu("recurrent", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
  CHECK(row.ht.unwritten == 0);
}

TEST_CASE("attn_naive matches float64 causal attention on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const DType dt = GENERATE(DType::f32, DType::bf16, DType::f16);
  const int64_t T = GENERATE(1, 7, 64, 257);
  Problem p;
  p.shape = GdnShape{2, T, 3, 3, 64, 64};
  p.dtype = dt;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " T " << T);
  const ResultRow row = verify_on_gpu("attn_naive", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
}

TEST_CASE("chunked matches the float64 reference on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  // dtype x T x C in full (72 cases); head dims and h0 rotate so every T and every C meets every
  // (K, V) pair, and every (C, K, V) meets h0 on and off.
  static const DType kDtypes[] = {DType::f32, DType::bf16, DType::f16};
  static const int64_t kT[] = {1, 15, 16, 17, 63, 64, 65, 200};
  static const int kC[] = {16, 32, 64};
  static const int64_t kKV[][2] = {{64, 64}, {100, 72}, {128, 128}, {256, 256}};
  const int di = GENERATE(0, 1, 2);
  const int ti = GENERATE(range(0, 8));
  const int ci = GENERATE(0, 1, 2);
  const int kvi = (ti + ci + di) % 4;
  const bool h0 = (ti / 4 + ci + di) % 2 == 0;
  Problem p;
  p.shape = GdnShape{2, kT[ti], 1, 2, kKV[kvi][0], kKV[kvi][1]};
  p.dtype = kDtypes[di];
  p.chunk = kC[ci];
  p.use_h0 = h0;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " dtype " << dtype_name(p.dtype) << " T " << p.shape.T << " C " << p.chunk
                << " K " << p.shape.K << " V " << p.shape.V << " h0 " << h0);
  const ResultRow row = verify_on_gpu("chunked", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
  CHECK(row.o.unwritten == 0);
  CHECK(row.ht.unwritten == 0);
}

TEST_CASE("chunked covers DeltaNet, gated linear attention and grouped value heads on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const bool gate = GENERATE(false, true);
  const bool delta = GENERATE(false, true);
  const int C = GENERATE(16, 32, 64);
  Problem p;
  p.shape = GdnShape{1, 70, 2, 6, 64, 72};  // three value heads per q/k head
  p.use_gate = gate;
  p.use_delta = delta;
  p.use_h0 = true;
  p.chunk = C;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " gate " << gate << " delta " << delta << " C " << C);
  const ResultRow row = verify_on_gpu("chunked", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
}

TEST_CASE("chunked stays finite under strong decay and extreme beta on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  const auto dists = GENERATE(std::pair<GateDist, BetaDist>{GateDist::strong, BetaDist::sigmoid},
                              std::pair<GateDist, BetaDist>{GateDist::zero, BetaDist::one},
                              std::pair<GateDist, BetaDist>{GateDist::logsigmoid, BetaDist::zero});
  Problem p;
  p.shape = GdnShape{1, 100, 1, 2, 64, 64};
  p.gate_dist = dists.first;
  p.beta_dist = dists.second;
  p.use_h0 = true;
  p.chunk = 32;
  p.seed = fresh_seed();
  INFO("seed " << p.seed << " " << gate_dist_name(dists.first) << " " << beta_dist_name(dists.second));
  const ResultRow row = verify_on_gpu("chunked", p);
  INFO(row.reason);
  CHECK(row.status == Status::pass);
}

#ifdef GDNBENCH_HAVE_CUDA
TEST_CASE("chunked gives a reason for head dims and chunk sizes it cannot run") {
  const VariantInfo* v = find_variant("chunked");
  REQUIRE(v != nullptr);
  CHECK(v->uses_chunk);
  Problem p;
  p.shape = GdnShape{1, 64, 1, 1, 257, 64};
  CHECK(v->unsupported(p).value_or("").find("256") != std::string::npos);
  p.shape = GdnShape{1, 64, 1, 1, 64, 300};
  CHECK(v->unsupported(p).value_or("").find("256") != std::string::npos);
  p.shape = GdnShape{1, 64, 1, 1, 64, 64};
  p.chunk = 128;
  CHECK(v->unsupported(p).value_or("").find("chunk 128") != std::string::npos);
}

namespace {

using gputest::to_device;

std::vector<float> to_host(const float* device, size_t n) { return gputest::from_device(device, int64_t(n)); }

}  // namespace

TEST_CASE("chunked stages match the float64 chunked intermediates on the GPU", "[gpu]") {
  if (!gpu_or_warn()) return;
  Problem p;
  p.shape = GdnShape{1, 150, 1, 2, 64, 64};  // 5 chunks, the last one 22 rows long
  p.chunk = 32;
  p.use_h0 = true;
  p.seed = fresh_seed();
  INFO("seed " << p.seed);
  const GdnShape& s = p.shape;
  const HostInputs in = make_inputs(p);
  const RefInputsF64 ref_in = to_f64(in);
  GdnRefOptions ro;
  ro.scale = p.resolved_scale();
  GdnChunkIntermediates keep;
  const GdnRefOutputs ref = gdn_chunked_ref(s, ref_in.view(), ro, p.chunk, &keep);

  const DeviceBuffer q = to_device(in.q), k = to_device(in.k), v = to_device(in.v),
                     g = to_device(in.g), beta = to_device(in.beta), h0 = to_device(in.h0);
  DeviceBuffer o(size_t(s.v_elems()) * sizeof(float)), hT(size_t(s.state_elems()) * sizeof(float));
  GdnParams gp;
  gp.shape = s;
  gp.dtype = DType::f32;
  gp.q = q.get();
  gp.k = k.get();
  gp.v = v.get();
  gp.g = g.as<float>();
  gp.beta = beta.as<float>();
  gp.h0 = h0.as<float>();
  gp.o = o.get();
  gp.hT = hT.as<float>();
  gp.scale = float(p.resolved_scale());
  gp.chunk = p.chunk;
  DeviceBuffer ws(gdn_chunked_workspace_bytes(gp));
  // All-ones bytes are NaN floats: an element a stage forgets to write fails.
  CUDA_CHECK(cudaMemset(ws.get(), 0xFF, ws.bytes()));
  CUDA_CHECK(cudaMemset(o.get(), 0xFF, o.bytes()));
  CUDA_CHECK(cudaMemset(hT.get(), 0xFF, hT.bytes()));
  const ChunkedWorkspaceView view = chunked_workspace_view(gp, ws.get());
  REQUIRE(keep.num_chunks == chunked_num_chunks(gp));

  auto check = [](const char* name, const float* device, const std::vector<double>& want) {
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = to_host(device, want.size());
    INFO(name << ": rel_l2 " << testutil::rel_l2(got, want));
    CHECK(testutil::all_finite(got));
    CHECK(testutil::rel_l2(got, want) < 1e-5);
  };
  CUDA_CHECK(cudaError_t(launch_chunked_gamma(gp, view, nullptr)));
  check("gamma", view.gamma, keep.gamma);
  CUDA_CHECK(cudaError_t(launch_chunked_ut_transform(gp, view, nullptr)));
  check("T_inv", view.T_inv, keep.T_inv);
  CUDA_CHECK(cudaError_t(launch_chunked_wy(gp, view, nullptr)));
  check("W", view.W, keep.W);
  check("U0", view.U0, keep.U0);
  CUDA_CHECK(cudaError_t(launch_chunked_scan(gp, view, nullptr)));
  check("U", view.U, keep.U);
  check("chunk states", view.states, keep.chunk_states);
  check("hT", hT.as<float>(), ref.hT);
  CUDA_CHECK(cudaError_t(launch_chunked_output(gp, view, nullptr)));
  check("o", o.as<float>(), ref.o);
}
#endif
