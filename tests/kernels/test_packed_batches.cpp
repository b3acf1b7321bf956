// Packed batches (cu_seqlens, B = 1, a state per sequence) in the float64 references and the CPU
// kernels: a packed batch is its sequences run one by one, each from its own h0, and nothing of
// one sequence reaches the next.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/cpu_variants.h"
#include "harness/inputs.h"
#include "reference/gdn_backward_reference.h"
#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"

namespace {

// Lengths around the chunk (1, C-1, C, C+1 for C = 64) so that sequences start inside chunks of the
// packed layout (at 1 and 193) and on their edges.
const std::vector<int32_t> kLengths = {1, 63, 64, 65, 130};

std::vector<int32_t> offsets_of(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> cu = {0};
  for (int32_t n : lengths) cu.push_back(cu.back() + n);
  return cu;
}

template <typename E>
std::vector<E> part(const std::vector<E>& x, int64_t first, int64_t count) {
  return std::vector<E>(x.begin() + first, x.begin() + first + count);
}

// Sequence n of packed float64 inputs as a batch of its own (its tokens, its h0).
testutil::GdnData sequence_data(const testutil::GdnData& d, const std::vector<int32_t>& cu, int64_t n) {
  testutil::GdnData one = testutil::slice_gdn(d, cu[n], cu[n + 1]);
  one.shape.num_seqs = 0;
  const int64_t state = d.shape.HV * d.shape.K * d.shape.V;
  one.h0 = part(d.h0, n * state, state);
  return one;
}

}  // namespace

TEST_CASE("a packed batch's float64 reference is its sequences' references one by one", "[reference][packed]") {
  const bool h0 = GENERATE(false, true);
  const bool chunked = GENERATE(false, true);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " h0 " << h0 << " chunked " << chunked);
  const std::vector<int32_t> cu = offsets_of(kLengths);
  GdnShape s{1, cu.back(), 2, 4, 16, 12};
  s.num_seqs = int64_t(kLengths.size());
  const testutil::GdnData d = testutil::random_gdn(s, seed);
  GdnRefInputs in = d.view(true, h0);
  in.cu_seqlens = cu.data();
  const GdnRefOptions opt;
  const auto reference = [&](const GdnShape& shape, const GdnRefInputs& x) {
    return chunked ? gdn_chunked_ref(shape, x, opt, 64) : gdn_recurrent_ref(shape, x, opt);
  };
  const GdnRefOutputs packed = reference(s, in);
  REQUIRE(packed.hT.size() == size_t(s.num_seqs * s.HV * s.K * s.V));
  for (int64_t n = 0; n < s.num_seqs; ++n) {
    INFO("sequence " << n);
    const testutil::GdnData one = sequence_data(d, cu, n);
    const GdnRefOutputs alone = reference(one.shape, one.view(true, h0));
    const int64_t token = s.HV * s.V, state = s.HV * s.K * s.V;
    CHECK(part(packed.o, cu[n] * token, (cu[n + 1] - cu[n]) * token) == alone.o);
    CHECK(part(packed.hT, n * state, state) == alone.hT);
  }
  // The same tokens as one sequence carry the state across every boundary: o differs from the
  // second sequence on.
  GdnShape unpacked = s;
  unpacked.num_seqs = 0;
  const GdnRefOutputs one_sequence = reference(unpacked, d.view(true, h0));
  const int64_t from = cu[1] * s.HV * s.V;
  CHECK(testutil::rel_l2(part(one_sequence.o, 0, from), part(packed.o, 0, from)) <= 1e-12);
  CHECK(testutil::rel_l2(part(one_sequence.o, from, s.v_elems() - from), part(packed.o, from, s.v_elems() - from)) > 1e-2);
}

TEST_CASE("a packed batch's float64 gradients are its sequences' gradients one by one", "[reference][packed]") {
  const bool chunked = GENERATE(false, true);
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed << " chunked " << chunked);
  const std::vector<int32_t> lengths = {1, 17, 16, 40};
  const std::vector<int32_t> cu = offsets_of(lengths);
  GdnShape s{1, cu.back(), 1, 2, 8, 8};
  s.num_seqs = int64_t(lengths.size());
  const testutil::GdnData d = testutil::random_gdn(s, seed);
  const testutil::GdnData up = testutil::random_gdn(s, seed + 1);  // dout from its v, dhT from its h0
  GdnRefInputs in = d.view();
  in.cu_seqlens = cu.data();
  const GdnRefOptions opt;
  const auto gradients = [&](const GdnShape& shape, const GdnRefInputs& x, const GdnRefGradInputs& gx) {
    return chunked ? gdn_chunked_backward_ref(shape, x, gx, opt, 16) : gdn_recurrent_backward_ref(shape, x, gx, opt);
  };
  const GdnRefGradients packed = gradients(s, in, GdnRefGradInputs{up.v.data(), up.h0.data()});
  for (int64_t n = 0; n < s.num_seqs; ++n) {
    INFO("sequence " << n);
    const testutil::GdnData one = sequence_data(d, cu, n), one_up = sequence_data(up, cu, n);
    const GdnRefGradients alone = gradients(one.shape, one.view(), GdnRefGradInputs{one_up.v.data(), one_up.h0.data()});
    const int64_t len = cu[n + 1] - cu[n], state = s.HV * s.K * s.V;
    CHECK(part(packed.dq, cu[n] * s.H * s.K, len * s.H * s.K) == alone.dq);
    CHECK(part(packed.dv, cu[n] * s.HV * s.V, len * s.HV * s.V) == alone.dv);
    CHECK(part(packed.dg, cu[n] * s.HV, len * s.HV) == alone.dg);
    CHECK(part(packed.dh0, n * state, state) == alone.dh0);
  }
}

TEST_CASE("the CPU kernels run a packed batch as its sequences one by one", "[cpu][packed]") {
  const bool chunked = GENERATE(false, true);
  const int chunk = GENERATE(16, 64);
  const bool h0 = GENERATE(false, true);
  Problem p;
  p.shape = GdnShape{1, 1, 2, 4, 16, 12};
  p.seqlens = "1,63,64,65,130";
  p.use_h0 = h0;
  p.chunk = chunk;
  p.seed = testutil::fresh_seed();
  resolve_packed(p);
  INFO("seed " << p.seed << " chunked " << chunked << " chunk " << chunk << " h0 " << h0);
  REQUIRE(p.shape.num_seqs == 5);
  const auto create = chunked ? create_cpu_chunked : create_cpu_recurrent;
  const auto run = [&](const Problem& problem, const HostInputs& in) {
    RunContext ctx;
    ctx.cpu_threads = 3;
    std::unique_ptr<VariantRun> r = create(problem, in, ctx);
    r->poison_outputs();
    r->launch();
    return r->read_outputs();
  };
  const HostInputs in = make_inputs(p);
  const RunOutputs packed = run(p, in);
  const GdnShape& s = p.shape;
  for (int64_t n = 0; n < s.num_seqs; ++n) {
    INFO("sequence " << n);
    const int64_t t0 = p.cu_seqlens[n], len = p.cu_seqlens[n + 1] - t0, state = s.HV * s.K * s.V;
    Problem one = p;
    one.seqlens.clear();
    one.cu_seqlens.clear();
    one.shape.num_seqs = 0;
    one.shape.T = len;
    HostInputs x;
    x.q = part(in.q, t0 * s.H * s.K, len * s.H * s.K);
    x.k = part(in.k, t0 * s.H * s.K, len * s.H * s.K);
    x.v = part(in.v, t0 * s.HV * s.V, len * s.HV * s.V);
    x.g = part(in.g, t0 * s.HV, len * s.HV);
    x.beta = part(in.beta, t0 * s.HV, len * s.HV);
    if (h0) x.h0 = part(in.h0, n * state, state);
    const RunOutputs alone = run(one, x);
    // Bit for bit: cpu_chunked's chunks start at the sequence's first token, as they do alone.
    CHECK(part(packed.o, t0 * s.HV * s.V, len * s.HV * s.V) == alone.o);
    CHECK(part(packed.hT, n * state, state) == alone.hT);
  }
}
