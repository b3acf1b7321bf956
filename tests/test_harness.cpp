// The harness pieces: dtype conversions, counter-based inputs, metrics, timing summaries, the CSV
// writer and its schema document, FLOP/byte counts, the registry and the runner.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cost.h"
#include "harness/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/rng.h"
#include "harness/runner.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "kernels/dtype.h"
#include "tests/test_util.h"

// ---- dtype conversions ----

namespace {

// Independent bf16 oracle: the two bf16 neighbours of f (truncation and the next value away from
// zero) compared in float64; ties go to the even one.
uint16_t bf16_oracle(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t lo = uint16_t(x >> 16), hi = uint16_t(lo + 1);
  const double dlo = std::fabs(double(bf16_bits_to_float(lo)) - double(f));
  // Past the largest finite bf16 the next value is infinity; round to nearest measures the
  // distance to 2^128, where the exponent range would continue.
  const double hi_value = (hi & 0x7FFFu) == 0x7F80u ? std::copysign(std::ldexp(1.0, 128), double(f))
                                                    : double(bits_float(uint32_t(hi) << 16));
  const double dhi = std::fabs(hi_value - double(f));
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1u) ? hi : lo;
}

}  // namespace

TEST_CASE("float to bf16 rounds to nearest even", "[harness][dtype]") {
  CHECK(float_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(float_to_bf16_bits(-2.0f) == 0xC000);
  CHECK(float_to_bf16_bits(0.0f) == 0x0000);
  CHECK(float_to_bf16_bits(-0.0f) == 0x8000);
  // Ties: 1 + 2^-8 lies halfway between 0x3F80 and 0x3F81 -> even 0x3F80;
  // 1 + 3 * 2^-8 halfway between 0x3F81 and 0x3F82 -> even 0x3F82.
  CHECK(float_to_bf16_bits(bits_float(0x3F808000u)) == 0x3F80);
  CHECK(float_to_bf16_bits(bits_float(0x3F818000u)) == 0x3F82);
  CHECK(float_to_bf16_bits(bits_float(0x3F808001u)) == 0x3F81);  // just above the tie
  CHECK(float_to_bf16_bits(bits_float(0x3F807FFFu)) == 0x3F80);  // just below
  CHECK(float_to_bf16_bits(bits_float(0xBF818000u)) == 0xBF82);  // sign does not matter
  // Subnormals: float bits 0x00010000 are bf16 0x0001; 0x00008000 ties to 0, 0x00018000 to 2.
  CHECK(float_to_bf16_bits(bits_float(0x00010000u)) == 0x0001);
  CHECK(float_to_bf16_bits(bits_float(0x00008000u)) == 0x0000);
  CHECK(float_to_bf16_bits(bits_float(0x00018000u)) == 0x0002);
  CHECK(float_to_bf16_bits(bits_float(0x00008001u)) == 0x0001);
  // Overflow: FLT_MAX is past the midpoint above the largest bf16 (0x7F7F) -> infinity.
  CHECK(float_to_bf16_bits(FLT_MAX) == 0x7F80);
  CHECK(float_to_bf16_bits(-FLT_MAX) == 0xFF80);
  CHECK(float_to_bf16_bits(bits_float(0x7F7F7FFFu)) == 0x7F7F);
  CHECK(float_to_bf16_bits(INFINITY) == 0x7F80);
  CHECK(float_to_bf16_bits(-INFINITY) == 0xFF80);
  // NaN stays NaN, including payloads that live only in the low 16 bits.
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, kPoisonBitsF32}) {
    INFO("nan bits " << std::hex << nan);
    CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(bits_float(nan)))));
  }
  CHECK(std::isnan(round_to(DType::bf16, std::nanf(""))));
}

TEST_CASE("float to fp16 rounds to nearest even", "[harness][dtype]") {
  CHECK(float_to_half_bits(1.0f) == 0x3C00);
  CHECK(float_to_half_bits(-2.0f) == 0xC000);
  CHECK(float_to_half_bits(-0.0f) == 0x8000);
  CHECK(float_to_half_bits(65504.0f) == 0x7BFF);  // largest finite half
  CHECK(float_to_half_bits(65519.0f) == 0x7BFF);  // below the midpoint to 65536
  CHECK(float_to_half_bits(65520.0f) == 0x7C00);  // the midpoint ties to even = infinity
  CHECK(float_to_half_bits(-65520.0f) == 0xFC00);
  CHECK(float_to_half_bits(1e10f) == 0x7C00);
  CHECK(float_to_half_bits(INFINITY) == 0x7C00);
  CHECK(float_to_half_bits(-INFINITY) == 0xFC00);
  // Ties: 1 + 2^-11 between 1 and 1 + 2^-10 -> 1 (even); 1 + 3 * 2^-11 -> 1 + 2^-9 (0x3C02).
  CHECK(float_to_half_bits(1.0f + 0x1p-11f) == 0x3C00);
  CHECK(float_to_half_bits(1.0f + 3 * 0x1p-11f) == 0x3C02);
  CHECK(float_to_half_bits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01);
  // Rounding up carries into the exponent: 2 - 2^-12 is above the midpoint 2 - 2^-11 -> 2.
  CHECK(float_to_half_bits(2.0f - 0x1p-12f) == 0x4000);
  // Subnormals (units of 2^-24): 2^-24 -> 1; 2^-25 ties to 0; 3 * 2^-25 ties to 2; just above
  // 2^-25 -> 1; 1023.5 units tie between 0x03FF and the smallest normal 0x0400 -> 0x0400.
  CHECK(float_to_half_bits(0x1p-24f) == 0x0001);
  CHECK(float_to_half_bits(0x1p-25f) == 0x0000);
  CHECK(float_to_half_bits(3 * 0x1p-25f) == 0x0002);
  CHECK(float_to_half_bits(0x1p-25f * 1.0001f) == 0x0001);
  CHECK(float_to_half_bits(-0x1p-24f) == 0x8001);
  CHECK(float_to_half_bits(1023 * 0x1p-24f) == 0x03FF);
  CHECK(float_to_half_bits(1023.5f * 0x1p-24f) == 0x0400);
  CHECK(float_to_half_bits(0x1p-14f) == 0x0400);
  CHECK(float_to_half_bits(1e-30f) == 0x0000);
  CHECK(half_bits_to_float(0x0001) == 0x1p-24f);
  CHECK(half_bits_to_float(0x7BFF) == 65504.0f);
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFF800001u, kPoisonBitsF32}) {
    INFO("nan bits " << std::hex << nan);
    CHECK(std::isnan(half_bits_to_float(float_to_half_bits(bits_float(nan)))));
  }
}

TEST_CASE("every bf16 and fp16 value survives a round trip", "[harness][dtype]") {
  size_t bf16_bad = 0, half_bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float b = bf16_bits_to_float(uint16_t(h));
    if (std::isnan(b)) bf16_bad += !std::isnan(bf16_bits_to_float(float_to_bf16_bits(b)));
    else bf16_bad += float_to_bf16_bits(b) != h || round_to(DType::bf16, b) != b;
    const float f = half_bits_to_float(uint16_t(h));
    if (std::isnan(f)) half_bad += !std::isnan(half_bits_to_float(float_to_half_bits(f)));
    else half_bad += float_to_half_bits(f) != h || round_to(DType::f16, f) != f;
  }
  CHECK(bf16_bad == 0);
  CHECK(half_bad == 0);
}

TEST_CASE("bf16 and fp16 conversions agree with independent oracles on random floats", "[harness][dtype]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  size_t bf16_bad = 0, half_bad = 0;
  uint32_t first_bf16 = 0, first_half = 0;
  for (int i = 0; i < 400000; ++i) {
    uint32_t bits = uint32_t(rng());
    // Half the draws near the fp16 range (exponents 2^-26 .. 2^17), so subnormals and ties show.
    if (i % 2) bits = (bits & 0x807FFFFFu) | (uint32_t(101 + rng() % 44) << 23);
    if (i % 7 == 0) bits &= 0xFFFF8000u | (rng() % 2 ? 0x1000u : 0x8000u);  // force ties often
    const float f = bits_float(bits);
    if (std::isnan(f)) continue;
    if (float_to_bf16_bits(f) != bf16_oracle(f) && !bf16_bad++) first_bf16 = bits;
#ifdef __FLT16_MANT_DIG__
    const _Float16 h = static_cast<_Float16>(f);  // the compiler's conversion, round to nearest even
    uint16_t hbits;
    std::memcpy(&hbits, &h, 2);
    if (float_to_half_bits(f) != hbits && !half_bad++) first_half = bits;
#endif
  }
  INFO("first bf16 mismatch at float bits " << std::hex << first_bf16);
  CHECK(bf16_bad == 0);
  INFO("first fp16 mismatch at float bits " << std::hex << first_half);
  CHECK(half_bad == 0);
}

TEST_CASE("dtype names parse back", "[harness][dtype]") {
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    REQUIRE(parse_dtype(dtype_name(t)).has_value());
    CHECK(*parse_dtype(dtype_name(t)) == t);
  }
  CHECK(dtype_bytes(DType::f32) == 4);
  CHECK(dtype_bytes(DType::bf16) == 2);
  CHECK(dtype_bytes(DType::f16) == 2);
  CHECK_FALSE(parse_dtype("fp8").has_value());
}

// ---- counter-based inputs ----

namespace {
Problem input_problem(int64_t T, uint64_t seed) {
  Problem p;
  p.shape = GdnShape{1, T, 2, 4, 32, 24};
  p.use_h0 = true;
  p.seed = seed;
  return p;
}
}  // namespace

TEST_CASE("inputs are a pure function of the seed and the element index", "[harness][inputs]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const HostInputs a = make_inputs(input_problem(20, seed));
  SECTION("same seed, same inputs") {
    const HostInputs b = make_inputs(input_problem(20, seed));
    CHECK(a.q == b.q);
    CHECK(a.k == b.k);
    CHECK(a.v == b.v);
    CHECK(a.g == b.g);
    CHECK(a.beta == b.beta);
    CHECK(a.h0 == b.h0);
  }
  SECTION("a different seed gives different inputs") {
    const HostInputs b = make_inputs(input_problem(20, seed + 1));
    CHECK(a.q != b.q);
    CHECK(a.k != b.k);
    CHECK(a.v != b.v);
    CHECK(a.g != b.g);
    CHECK(a.beta != b.beta);
    CHECK(a.h0 != b.h0);
    CHECK(a.q != a.k);  // the tensors are separate streams
  }
  SECTION("element i does not depend on the tensor size") {
    const HostInputs b = make_inputs(input_problem(10, seed));
    auto prefix = [](const std::vector<float>& x, size_t n) { return std::vector<float>(x.begin(), x.begin() + n); };
    CHECK(prefix(a.v, b.v.size()) == b.v);
    CHECK(prefix(a.q, b.q.size()) == b.q);
    CHECK(prefix(a.k, b.k.size()) == b.k);
    CHECK(prefix(a.g, b.g.size()) == b.g);
    CHECK(prefix(a.beta, b.beta.size()) == b.beta);
    CHECK(a.h0 == b.h0);
  }
  SECTION("also for tensors large enough to be generated on several threads") {
    Problem big = input_problem(600, seed), half = input_problem(300, seed);
    big.shape.K = half.shape.K = 128;
    big.shape.V = half.shape.V = 128;  // v: 600 x 4 x 128 = 307200 elements
    const HostInputs x = make_inputs(big), y = make_inputs(half), x2 = make_inputs(big);
    CHECK(std::vector<float>(x.v.begin(), x.v.begin() + y.v.size()) == y.v);
    CHECK(std::vector<float>(x.q.begin(), x.q.begin() + y.q.size()) == y.q);
    CHECK(x.v == x2.v);
    // Element i of v is float(counter_normal(seed, 3, i)), whoever computed it (stream 3 is v;
    // pinned so a seed recorded in an old CSV still reproduces its inputs).
    for (size_t i : {size_t(0), size_t(65535), size_t(65536), size_t(153600), x.v.size() - 1})
      CHECK(x.v[i] == float(counter_normal(seed, 3, i)));
  }
  SECTION("counter draws are reproducible and in range") {
    for (uint64_t i = 0; i < 1000; ++i) {
      const double u = counter_uniform(seed, 3, i);
      CHECK((u > 0.0 && u <= 1.0));
      CHECK(counter_uniform(seed, 3, i) == u);
      CHECK(std::isfinite(counter_normal(seed, 3, i)));
    }
  }
}

TEST_CASE("input distributions are the documented ones", "[harness][inputs]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  Problem p;
  p.shape = GdnShape{2, 500, 2, 4, 64, 40};
  p.use_h0 = true;
  p.seed = seed;
  const HostInputs in = make_inputs(p);
  const GdnShape& s = p.shape;
  REQUIRE(in.q.size() == size_t(s.qk_elems()));
  REQUIRE(in.v.size() == size_t(s.v_elems()));
  REQUIRE(in.g.size() == size_t(s.gate_elems()));
  REQUIRE(in.h0.size() == size_t(s.state_elems()));

  SECTION("q and k rows are unit norm") {
    double worst = 0.0;
    for (const auto* x : {&in.q, &in.k})
      for (size_t r = 0; r < x->size(); r += size_t(s.K)) {
        double ss = 0.0;
        for (int64_t c = 0; c < s.K; ++c) ss += double((*x)[r + c]) * (*x)[r + c];
        worst = std::max(worst, std::fabs(std::sqrt(ss) - 1.0));
      }
    CHECK(worst <= 1e-6);
  }
  SECTION("v and h0 are standard normal") {
    for (const auto* x : {&in.v, &in.h0}) {
      double sum = 0.0, sq = 0.0;
      for (float e : *x) {
        sum += e;
        sq += double(e) * e;
      }
      const double mean = sum / double(x->size()), var = sq / double(x->size()) - mean * mean;
      CHECK(std::fabs(mean) < 0.05);
      CHECK(std::fabs(var - 1.0) < 0.05);
    }
  }
  SECTION("logsigmoid gates: g <= 0 with about 10% exact zeros") {
    size_t zeros = 0;
    for (float g : in.g) {
      CHECK(g <= 0.0f);
      CHECK(std::isfinite(g));
      zeros += g == 0.0f;
    }
    const double frac = double(zeros) / double(in.g.size());
    CHECK(frac > 0.07);
    CHECK(frac < 0.13);
  }
  SECTION("beta = sigmoid(N) lies strictly inside (0, 1)") {
    for (float b : in.beta) CHECK((b > 0.0f && b < 1.0f));
  }
  SECTION("strong gates lie in [-30, -10]; zero gates are 0; named betas are exact") {
    Problem q = p;
    q.gate_dist = GateDist::strong;
    q.beta_dist = BetaDist::one;
    const HostInputs strong = make_inputs(q);
    for (float g : strong.g) CHECK((g >= -30.0f && g <= -10.0f));
    for (float b : strong.beta) CHECK(b == 1.0f);
    q.gate_dist = GateDist::zero;
    q.beta_dist = BetaDist::zero;
    const HostInputs zero = make_inputs(q);
    for (float g : zero.g) CHECK(g == 0.0f);
    for (float b : zero.beta) CHECK(b == 0.0f);
  }
  SECTION("gate off and h0 off leave those tensors empty") {
    Problem q = p;
    q.use_gate = false;
    q.use_h0 = false;
    const HostInputs none = make_inputs(q);
    CHECK(none.g.empty());
    CHECK(none.h0.empty());
    CHECK(to_f64(none).view().g == nullptr);
    CHECK(to_f64(none).view().h0 == nullptr);
    CHECK(none.beta.size() == size_t(s.gate_elems()));
  }
  SECTION("16-bit problems get q, k, v rounded to their dtype") {
    for (DType t : {DType::bf16, DType::f16}) {
      Problem q = p;
      q.dtype = t;
      const HostInputs r = make_inputs(q);
      size_t bad = 0;
      for (const auto* x : {&r.q, &r.k, &r.v})
        for (float e : *x) bad += round_to(t, e) != e;
      CHECK(bad == 0);
      CHECK(r.g == in.g);  // gates stay float32
    }
  }
  SECTION("to_f64 copies exactly") {
    const RefInputsF64 f = to_f64(in);
    REQUIRE(f.v.size() == in.v.size());
    for (size_t i = 0; i < in.v.size(); ++i) REQUIRE(f.v[i] == double(in.v[i]));
    CHECK(f.view().q == f.q.data());
  }
}

// ---- metrics ----

TEST_CASE("metrics on a hand example", "[harness][metrics]") {
  // got - ref = (0, 0, 0, -1): ||err|| = 1, ||ref|| = sqrt(1 + 4 + 9 + 25) = sqrt(39).
  const std::vector<float> got = {1, 2, 3, 4};
  const std::vector<double> ref = {1, 2, 3, 5};
  const TensorMetrics m = compare_to_reference(got, ref, DType::f32);
  CHECK(m.present);
  CHECK(m.rel_l2 == Approx(1.0 / std::sqrt(39.0)).epsilon(1e-12));
  CHECK(m.max_abs == 1.0);
  CHECK(m.worst_index == 3);
  CHECK(m.nan_count == 0);
  CHECK(m.unwritten == 0);
  CHECK(m.floor_rel_l2 == 0.0);  // the reference is exact in float32
  CHECK(m.finite_ok());

  SECTION("worst index is the largest error, not the largest value") {
    const TensorMetrics w = compare_to_reference({10, -2.5f, 3}, {10, -2, 3}, DType::f32);
    CHECK(w.worst_index == 1);
    CHECK(w.max_abs == 0.5);
  }
  SECTION("an all-zero reference gives the absolute error") {
    const TensorMetrics z = compare_to_reference({3, 4}, {0, 0}, DType::f32);
    CHECK(z.rel_l2 == Approx(5.0));
  }
  SECTION("sizes must match") {
    CHECK_THROWS_AS(compare_to_reference({1, 2}, {1, 2, 3}, DType::f32), std::logic_error);
  }
}

TEST_CASE("metrics: the floor is the error of rounding the reference to the dtype", "[harness][metrics]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> ref(1000);
  for (double& r : ref) r = normal(rng);
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    INFO("dtype " << dtype_name(t));
    std::vector<float> ideal(ref.size()), worse(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      ideal[i] = round_to(t, float(ref[i]));
      worse[i] = round_to(t, float(ref[i] * (1.0 + 1e-2)));
    }
    const TensorMetrics a = compare_to_reference(ideal, ref, t);
    CHECK(a.floor_rel_l2 > 0.0);
    CHECK(a.rel_l2 == Approx(a.floor_rel_l2).epsilon(1e-12));
    CHECK(a.err_vs_floor == Approx(1.0).epsilon(1e-12));
    const TensorMetrics b = compare_to_reference(worse, ref, t);
    CHECK(b.err_vs_floor == Approx(b.rel_l2 / b.floor_rel_l2).epsilon(1e-12));
    CHECK(b.err_vs_floor > 1.0);
  }
  // The floor grows as the dtype narrows.
  const TensorMetrics f32 = compare_to_reference(std::vector<float>(ref.begin(), ref.end()), ref, DType::f32);
  const TensorMetrics f16 = compare_to_reference(std::vector<float>(ref.begin(), ref.end()), ref, DType::f16);
  const TensorMetrics bf16 = compare_to_reference(std::vector<float>(ref.begin(), ref.end()), ref, DType::bf16);
  CHECK(f32.floor_rel_l2 < f16.floor_rel_l2);
  CHECK(f16.floor_rel_l2 < bf16.floor_rel_l2);
}

TEST_CASE("metrics: NaN and inf are counted, poison is unwritten", "[harness][metrics]") {
  const float poison = poison_value_f32();
  REQUIRE(std::isnan(poison));
  REQUIRE(is_poison(poison));
  CHECK_FALSE(is_poison(std::nanf("")));  // an ordinary NaN is a written NaN
  CHECK_FALSE(is_poison(1.0f));
  const std::vector<double> ref = {1, 2, 3, 4, 5, 6};

  SECTION("non-finite written values") {
    const std::vector<float> got = {1, std::nanf(""), 3, INFINITY, 5, 7};
    const TensorMetrics m = compare_to_reference(got, ref, DType::f32);
    CHECK(m.nan_count == 2);
    CHECK(m.unwritten == 0);
    CHECK_FALSE(m.finite_ok());
    CHECK(m.rel_l2 == INFINITY);
    CHECK(m.max_abs == 1.0);  // over the finite elements only
    CHECK(m.worst_index == 5);
  }
  SECTION("poisoned elements") {
    const std::vector<float> got = {1, poison, 3, 4, poison, 6};
    const TensorMetrics m = compare_to_reference(got, ref, DType::f32);
    CHECK(m.unwritten == 2);
    CHECK(m.nan_count == 0);
    CHECK_FALSE(m.finite_ok());
    CHECK(m.rel_l2 == INFINITY);
  }
}

TEST_CASE("metrics: a partial comparison never looks good, err_vs_floor included", "[harness][metrics]") {
  // rel_l2 becomes inf when an element is unwritten or non-finite; err_vs_floor = rel_l2 / floor
  // must follow, or a FAIL row shows o_err_vs_floor ~ 1 (an ideal kernel) next to o_rel_l2 = inf.
  // 0.1 is not exact in float32, so the floor is non-zero.
  const std::vector<double> r = {0.1, 0.2, 0.3};
  for (float bad : {poison_value_f32(), std::nanf(""), INFINITY}) {
    INFO("bad element bits " << std::hex << float_bits(bad));
    const TensorMetrics m = compare_to_reference({0.1f, bad, 0.3f}, r, DType::f32);
    REQUIRE(m.floor_rel_l2 > 0.0);
    CHECK(m.rel_l2 == INFINITY);
    CHECK(m.err_vs_floor == INFINITY);
  }
}

// ---- timing ----

TEST_CASE("timing summary on a known list", "[harness][timing]") {
  // Sorted: 1 2 3 4 5. Quantiles interpolate linearly at q (n - 1): p20 at 0.8 -> 1.8, p80 at
  // 3.2 -> 4.2. Mean 3, sample variance (4 + 1 + 0 + 1 + 4) / 4 = 2.5.
  const TimingStats t = summarize_samples({5, 1, 4, 2, 3});
  CHECK(t.samples == 5);
  CHECK(t.median_ms == Approx(3.0));
  CHECK(t.min_ms == 1.0);
  CHECK(t.p20_ms == Approx(1.8));
  CHECK(t.p80_ms == Approx(4.2));
  CHECK(t.mean_ms == Approx(3.0));
  CHECK(t.cv == Approx(std::sqrt(2.5) / 3.0));
  // Even count: the median is the mean of the middle two.
  CHECK(summarize_samples({4, 1, 3, 2}).median_ms == Approx(2.5));
  const TimingStats one = summarize_samples({7});
  CHECK(one.samples == 1);
  CHECK(one.median_ms == 7.0);
  CHECK(one.cv == 0.0);
  CHECK(summarize_samples({}).samples == 0);
}

TEST_CASE("sampling stops at the noise target or a cap, never before the minimum", "[harness][timing]") {
  TimingConfig c;
  c.min_samples = 5;
  c.max_samples = 8;
  c.max_seconds = 1.0;
  c.cv_target = 0.02;
  const std::vector<double> quiet = {1, 1, 1, 1, 1};
  const std::vector<double> noisy = {1, 2, 1, 2, 1};
  CHECK_FALSE(sampling_done({1, 1, 1, 1}, 100.0, c));  // too few, whatever the time
  CHECK(sampling_done(quiet, 0.0, c));                 // noise target met
  CHECK_FALSE(sampling_done(noisy, 0.5, c));           // noisy and time left
  CHECK(sampling_done(noisy, 1.0, c));                 // time cap
  CHECK(sampling_done({1, 2, 1, 2, 1, 2, 1, 2}, 0.0, c));  // sample cap
}

namespace {
class CountingRun final : public VariantRun {
 public:
  int launches = 0;
  void poison_outputs() override {}
  void launch() override { ++launches; }
  RunOutputs read_outputs() override { return {}; }
};
}  // namespace

TEST_CASE("time_cpu_run warms up, then samples between the minimum and the cap", "[harness][timing]") {
  TimingConfig c;
  c.warmup = 3;
  c.min_samples = 4;
  c.max_samples = 9;
  c.max_seconds = 5.0;
  CountingRun run;
  const TimingStats t = time_cpu_run(run, c);
  CHECK(run.launches == c.warmup + t.samples);
  CHECK(t.samples >= c.min_samples);
  CHECK(t.samples <= c.max_samples);
  CHECK(t.min_ms <= t.median_ms);
  CHECK(t.median_ms <= t.p80_ms);
}

// ---- CSV ----

namespace {

ResultRow sample_row(Status status) {
  ResultRow r;
  r.problem.shape = GdnShape{2, 300, 4, 8, 128, 96};
  r.problem.dtype = DType::bf16;
  r.problem.use_h0 = true;
  r.problem.seed = 7;
  r.variant = "cpu_chunked";
  r.family = "gdn";
  r.backend = "cpu";
  r.precision = "fp32_math";
  r.status = status;
  r.device = "CPU: Example, \"quoted\" model";
  if (status == Status::skipped) {
    r.reason = "chunk 48 not supported (16, 32, 64)";
  } else {
    r.o = compare_to_reference({1, 2}, {1, 2.5}, DType::bf16);
    r.ht = compare_to_reference({1, 2}, {1, 2}, DType::f32);
    r.tol = tolerance_for(Precision::fp32_math, DType::bf16);
    if (status == Status::fail) r.reason = "o rel_l2 0.2 > 0.0025; line\nbreak";
    TimingStats t;
    t.samples = 10;
    t.median_ms = 2.0;
    t.min_ms = 1.5;
    r.timing = t;
    r.ceiling_gbps = 1000.0;
    r.ceiling_tflops = 50.0;
  }
  r.flops = gdn_flops(r.problem);
  r.bytes = gdn_min_bytes(r.problem);
  return r;
}

RunMeta sample_meta() {
  RunMeta m;
  m.run_id = "2025-01-01T00:00:00Z-7";
  m.timestamp = "2025-01-01T00:00:00Z";
  m.git_sha = "abc123";
  m.host = "host,with,commas";
  m.device = "CPU";
  m.command = "verify";
  m.suite = "suites/x.ini";
  m.seed = 7;
  return m;
}

size_t column_index(const std::string& name) {
  const std::vector<std::string> cols = csv_columns();
  return size_t(std::find(cols.begin(), cols.end(), name) - cols.begin());
}

std::map<std::string, std::string> as_record(const std::vector<std::string>& header,
                                             const std::vector<std::string>& fields) {
  std::map<std::string, std::string> m;
  for (size_t i = 0; i < header.size() && i < fields.size(); ++i) m[header[i]] = fields[i];
  return m;
}

}  // namespace

TEST_CASE("csv_escape quotes what needs quoting", "[harness][csv]") {
  CHECK(csv_escape("plain") == "plain");
  CHECK(csv_escape("") == "");
  CHECK(csv_escape("a,b") == "\"a,b\"");
  CHECK(csv_escape("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_escape("two\nlines") == "\"two\nlines\"");
  CHECK(csv_escape("cr\r") == "\"cr\r\"");
  // Whatever the field, parsing the escaped form gives it back.
  for (const std::string f : {"a,b", "say \"hi\", ok", "x\ny", "\"", ",,"}) {
    const auto rows = testutil::parse_csv(csv_escape(f) + "\n");
    REQUIRE(rows.size() == 1);
    REQUIRE(rows[0].size() == 1);
    CHECK(rows[0][0] == f);
  }
}

TEST_CASE("CSV header and rows follow the column list", "[harness][csv]") {
  const std::vector<std::string> cols = csv_columns();
  REQUIRE(!cols.empty());
  CHECK(cols.front() == "schema_version");
  CHECK(std::set<std::string>(cols.begin(), cols.end()).size() == cols.size());  // unique
  std::string joined;
  for (const std::string& c : cols) joined += (joined.empty() ? "" : ",") + c;
  CHECK(csv_header_line() == joined + "\n");

  for (Status st : {Status::pass, Status::fail, Status::skipped}) {
    INFO("status " << status_name(st));
    const ResultRow row = sample_row(st);
    const auto parsed = testutil::parse_csv(csv_row_line(sample_meta(), row));
    REQUIRE(parsed.size() == 1);
    REQUIRE(parsed[0].size() == cols.size());
    auto rec = as_record(cols, parsed[0]);
    CHECK(rec["schema_version"] == std::to_string(kCsvSchemaVersion));
    CHECK(rec["status"] == status_name(st));
    CHECK(rec["host"] == "host,with,commas");
    CHECK(rec["device"] == row.device);
    CHECK(rec["reason"] == row.reason);
    CHECK(rec["variant"] == "cpu_chunked");
    CHECK(rec["dtype"] == "bf16");
    CHECK(rec["T"] == "300");
    CHECK(rec["HV"] == "8");
    CHECK(rec["h0"] == "on");
    CHECK(rec["seed"] == "7");
    CHECK(std::stod(rec["flops"]) == Approx(row.flops).epsilon(1e-5));
    if (st == Status::skipped) {
      // Not applicable: empty cells.
      for (const char* c : {"o_rel_l2", "o_unwritten", "ht_rel_l2", "tol_o", "samples",
                            "time_median_ms", "tflops", "gbps", "ceiling_gbps", "frac_bw",
                            "frac_flops", "peak_device_bytes"})
        CHECK(rec[c] == "");
    } else {
      CHECK(std::stod(rec["o_rel_l2"]) == Approx(row.o.rel_l2).epsilon(1e-5));
      CHECK(rec["o_worst_index"] == "1");
      CHECK(rec["o_unwritten"] == "0");
      CHECK(rec["samples"] == "10");
      CHECK(std::stod(rec["tflops"]) == Approx(row.flops / 2e9).epsilon(1e-5));
      CHECK(std::stod(rec["gbps"]) == Approx(row.bytes / 2e6).epsilon(1e-5));
      CHECK(std::stod(rec["frac_bw"]) == Approx(row.bytes / 2e6 / 1000.0).epsilon(1e-5));
      CHECK(std::stod(rec["frac_flops"]) == Approx(row.flops / 2e9 / 50.0).epsilon(1e-5));
      CHECK(rec["peak_device_bytes"] == "");  // a CPU row allocates no device memory
    }
  }
}

namespace {
// The first backticked cell of every table row of reports/SCHEMA.md.
std::vector<std::string> schema_doc_columns() {
  const std::string text = testutil::read_text(std::string(GDNBENCH_SOURCE_DIR) + "/reports/SCHEMA.md");
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|", 0) != 0) continue;
    const size_t end = line.find('|', 1);
    if (end == std::string::npos) continue;
    std::string cell = line.substr(1, end - 1);
    cell.erase(0, cell.find_first_not_of(" \t"));
    cell.erase(cell.find_last_not_of(" \t") + 1);
    if (cell.size() > 2 && cell.front() == '`' && cell.back() == '`')
      names.push_back(cell.substr(1, cell.size() - 2));
  }
  return names;
}
}  // namespace

TEST_CASE("reports/SCHEMA.md documents exactly the CSV columns", "[harness][csv][schema]") {
  const std::vector<std::string> documented = schema_doc_columns();
  REQUIRE(!documented.empty());
  const std::vector<std::string> cols = csv_columns();
  const std::set<std::string> doc_set(documented.begin(), documented.end()), col_set(cols.begin(), cols.end());
  CHECK(doc_set.size() == documented.size());  // no column documented twice
  for (const std::string& c : cols) {
    INFO("CSV column " << c);
    CHECK(doc_set.count(c) == 1);
  }
  for (const std::string& d : documented) {
    INFO("SCHEMA.md row " << d);
    CHECK(col_set.count(d) == 1);
  }
  const std::string text = testutil::read_text(std::string(GDNBENCH_SOURCE_DIR) + "/reports/SCHEMA.md");
  CHECK(text.find("v" + std::to_string(kCsvSchemaVersion)) != std::string::npos);
}

TEST_CASE("CsvWriter leaves a valid CSV after every append", "[harness][csv]") {
  testutil::TempDir dir;
  const std::string path = dir.file("out.csv");
  CsvWriter w(path, sample_meta());
  CHECK(w.path() == path);
  CHECK(testutil::read_text(path) == csv_header_line());
  const size_t ncols = csv_columns().size();
  const Status order[] = {Status::pass, Status::fail, Status::skipped, Status::pass};
  for (size_t n = 0; n < 4; ++n) {
    w.append(sample_row(order[n]));
    const auto rows = testutil::parse_csv(testutil::read_text(path));
    REQUIRE(rows.size() == n + 2);
    for (const auto& r : rows) CHECK(r.size() == ncols);
    CHECK(rows[n + 1][column_index("status")] == status_name(order[n]));
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));  // renamed into place
  }
  CHECK_THROWS_AS(CsvWriter(dir.file("no/such/dir/x.csv"), sample_meta()), std::runtime_error);
}

// ---- FLOP and byte counts ----

TEST_CASE("documented FLOP and byte counts", "[harness][flops]") {
  Problem p;
  p.shape = GdnShape{1, 1, 1, 1, 128, 128};
  // 6 C K + 4 C V + 6 K V at C = 64: 49152 + 32768 + 98304.
  CHECK(gdn_flops(p) == 180224.0);
  p.shape = GdnShape{3, 100, 2, 4, 128, 128};
  CHECK(gdn_flops(p) == 180224.0 * 3 * 100 * 4);  // per token and value head; H does not count
  p.chunk = 16;
  CHECK(gdn_flops(p) == 180224.0 * 3 * 100 * 4);  // C = 64 for every variant
  p.shape = GdnShape{1, 1, 1, 1, 64, 32};
  CHECK(gdn_flops(p) == 6.0 * 64 * 64 + 4.0 * 64 * 32 + 6.0 * 64 * 32);

  // Causal softmax attention: 2 T^2 D per head (D = K = V).
  p.shape = GdnShape{2, 100, 3, 3, 64, 64};
  CHECK(attention_flops(p) == 2.0 * 100 * 100 * 64 * 2 * 3);

  // Minimum bytes: q, k, v read and o written once in the dtype; g, beta, h0, hT in float32.
  // B=1 T=10 H=1 HV=2 K=8 V=4, bf16, gate, delta, h0: q,k 2*80 + v,o 2*80 elements of 2 bytes
  // = 640; g, beta 2*20*4 = 160; h0, hT 2*64*4 = 512.
  p.shape = GdnShape{1, 10, 1, 2, 8, 4};
  p.dtype = DType::bf16;
  p.use_h0 = true;
  CHECK(gdn_min_bytes(p) == 640.0 + 160.0 + 512.0);
  p.use_h0 = false;
  p.use_gate = false;
  CHECK(gdn_min_bytes(p) == 640.0 + 80.0 + 256.0);
}

// ---- problem, tolerance table, registry ----

TEST_CASE("problem keys, names and scale", "[harness][problem]") {
  Problem a;
  a.shape = GdnShape{1, 64, 2, 2, 100, 64};
  a.seed = 5;
  CHECK(a.resolved_scale() == Approx(0.1));
  Problem b = a;
  b.chunk = 16;
  CHECK(a.input_key() == b.input_key());  // the chunk does not change inputs or reference
  for (auto change : {+[](Problem& p) { p.seed = 6; }, +[](Problem& p) { p.dtype = DType::bf16; },
                      +[](Problem& p) { p.use_h0 = true; }, +[](Problem& p) { p.use_delta = false; },
                      +[](Problem& p) { p.shape.T = 65; }, +[](Problem& p) { p.scale = 0.5; },
                      +[](Problem& p) { p.beta_dist = BetaDist::one; }}) {
    Problem c = a;
    change(c);
    CHECK(c.input_key() != a.input_key());
  }
  for (GateDist d : {GateDist::logsigmoid, GateDist::zero, GateDist::strong})
    CHECK(parse_gate_dist(gate_dist_name(d)) == d);
  for (BetaDist d : {BetaDist::sigmoid, BetaDist::zero, BetaDist::one})
    CHECK(parse_beta_dist(beta_dist_name(d)) == d);
  CHECK_FALSE(parse_gate_dist("weak").has_value());
  CHECK(status_name(Status::pass) == std::string("PASS"));
  CHECK(status_name(Status::fail) == std::string("FAIL"));
  CHECK(status_name(Status::skipped) == std::string("SKIPPED"));
}

TEST_CASE("every precision and dtype has a positive bound with a reason", "[harness][tolerance]") {
  for (Precision p : {Precision::fp32_math, Precision::tensor_core})
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      INFO(precision_name(p) << " " << dtype_name(t));
      const Tolerance tol = tolerance_for(p, t);
      CHECK(tol.o_rel_l2 > 0.0);
      CHECK(tol.ht_rel_l2 > 0.0);
      CHECK(tol.o_rel_l2 < 1e-2);
      CHECK(std::string(tol.reason).size() > 10);
    }
  // Narrower dtypes may not have tighter output bounds.
  CHECK(tolerance_for(Precision::fp32_math, DType::f32).o_rel_l2 <=
        tolerance_for(Precision::fp32_math, DType::f16).o_rel_l2);
  CHECK(tolerance_for(Precision::fp32_math, DType::f16).o_rel_l2 <=
        tolerance_for(Precision::fp32_math, DType::bf16).o_rel_l2);
}

TEST_CASE("the variant registry is one table of unique names", "[harness][registry]") {
  const auto& reg = variant_registry();
  REQUIRE(reg.size() >= 2);
  std::set<std::string> names;
  for (const VariantInfo& v : reg) {
    INFO("variant " << v.name);
    CHECK(names.insert(v.name).second);
    CHECK(find_variant(v.name) == &v);
    CHECK(v.create != nullptr);
    CHECK(v.unsupported != nullptr);
    CHECK(std::string(v.summary).size() > 0);
  }
  CHECK(find_variant("cpu_recurrent") != nullptr);
  CHECK(find_variant("cpu_chunked") != nullptr);
  CHECK(find_variant("cpu_chunked")->uses_chunk);
  CHECK_FALSE(find_variant("cpu_recurrent")->uses_chunk);
  CHECK(find_variant("no_such_variant") == nullptr);
}

// ---- runner ----

namespace {

// A deliberately broken kernel, to see the runner fail it.
enum class Broken { silent, zeros, throws };
Broken g_broken_mode = Broken::zeros;

class BrokenRun final : public VariantRun {
 public:
  explicit BrokenRun(const Problem& p) : o_(p.shape.v_elems()), hT_(p.shape.state_elems()) {}
  void poison_outputs() override {
    std::fill(o_.begin(), o_.end(), poison_value_f32());
    std::fill(hT_.begin(), hT_.end(), poison_value_f32());
  }
  void launch() override {
    if (g_broken_mode == Broken::throws) throw std::runtime_error("kernel exploded");
    if (g_broken_mode == Broken::zeros) {
      std::fill(o_.begin(), o_.end(), 0.0f);
      std::fill(hT_.begin(), hT_.end(), 0.0f);
    }
  }
  RunOutputs read_outputs() override { return {o_, hT_}; }

 private:
  std::vector<float> o_, hT_;
};

std::optional<std::string> never_unsupported(const Problem&) { return std::nullopt; }
std::unique_ptr<VariantRun> create_broken(const Problem& p, const HostInputs&, const RunContext&) {
  return std::make_unique<BrokenRun>(p);
}
const VariantInfo kBroken = {"broken", Family::gdn, Backend::cpu, Precision::fp32_math, false, 0,
                             "fp32", "any", never_unsupported, create_broken, "test double"};

}  // namespace

TEST_CASE("the runner fails a wrong kernel and never times it", "[harness][runner]") {
  Problem p;
  p.shape = GdnShape{1, 12, 1, 1, 16, 16};
  p.use_h0 = true;
  p.seed = testutil::fresh_seed();
  INFO("seed " << p.seed);
  const HostInputs in = make_inputs(p);
  const GdnRefOutputs ref = gdn_reference_for(p, to_f64(in), 1);
  RunOptions opt;
  opt.timed = true;
  opt.timing.min_samples = 2;
  opt.timing.max_samples = 3;
  opt.timing.warmup = 0;

  SECTION("wrong values") {
    g_broken_mode = Broken::zeros;
    const ResultRow r = run_case(Case{p, &kBroken, true}, in, ref, {}, opt);
    CHECK(r.status == Status::fail);
    CHECK(r.o.rel_l2 == Approx(1.0));
    CHECK(r.reason.find("rel_l2") != std::string::npos);
    CHECK_FALSE(r.timing.has_value());
  }
  SECTION("outputs never written") {
    g_broken_mode = Broken::silent;
    const ResultRow r = run_case(Case{p, &kBroken, true}, in, ref, {}, opt);
    CHECK(r.status == Status::fail);
    CHECK(r.o.unwritten == p.shape.v_elems());
    CHECK(r.ht.unwritten == p.shape.state_elems());
    CHECK(r.reason.find("unwritten") != std::string::npos);
    CHECK_FALSE(r.timing.has_value());
  }
  SECTION("a kernel that throws is a FAIL row, not a crash") {
    g_broken_mode = Broken::throws;
    const ResultRow r = run_case(Case{p, &kBroken, true}, in, ref, {}, opt);
    CHECK(r.status == Status::fail);
    CHECK(r.reason.find("kernel exploded") != std::string::npos);
  }
  SECTION("a correct kernel passes and is timed") {
    const ResultRow r = run_case(Case{p, find_variant("cpu_recurrent"), true}, in, ref, {}, opt);
    CHECK(r.status == Status::pass);
    CHECK(r.reason.empty());
    REQUIRE(r.timing.has_value());
    CHECK(r.timing->samples >= 2);
    CHECK(r.flops == gdn_flops(p));
  }
}

TEST_CASE("execute_cases: one row per case, references per problem, unsupported skipped", "[harness][runner]") {
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::vector<Case> cases;
  for (uint64_t s : {seed, seed + 1})
    for (int chunk : {16, 48})
      for (const char* name : {"cpu_recurrent", "cpu_chunked"}) {
        Problem p;
        p.shape = GdnShape{1, 33, 1, 2, 16, 16};
        p.chunk = chunk;
        p.seed = s;
        p.use_h0 = s != seed;  // the second problem has other inputs and another reference
        cases.push_back({p, find_variant(name), true});
      }
  RunOptions opt;
  opt.cpu_threads = 2;
  std::vector<std::string> seen;
  const RunSummary sum = execute_cases(cases, opt, [&](const ResultRow& r) { seen.push_back(r.variant); });
  REQUIRE(sum.rows.size() == cases.size());
  CHECK(seen.size() == cases.size());
  CHECK(sum.passed == 6);   // recurrent at both chunks, chunked at 16, for both seeds
  CHECK(sum.skipped == 2);  // chunked at 48
  CHECK(sum.failed == 0);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(sum.rows[i].variant == cases[i].variant->name);
    CHECK(sum.rows[i].problem.seed == cases[i].problem.seed);
    if (sum.rows[i].status == Status::skipped) {
      CHECK(sum.rows[i].reason.find("48") != std::string::npos);
      CHECK_FALSE(sum.rows[i].o.present);
    } else {
      CHECK(sum.rows[i].o.present);
      CHECK(sum.rows[i].ht.present);
      CHECK_FALSE(sum.rows[i].timing.has_value());  // verify only
    }
  }
}

TEST_CASE("no preprocessor knob chooses a kernel: the git_sha names the code that ran", "[harness][plans]") {
  // A kernel file that reads a macro of its own (#ifndef GDNBENCH_..., #if GDN_...) could build two
  // programs from one sha; plans (kernels/launch_plans.h) and --plan choose kernels instead.
  namespace fs = std::filesystem;
  const std::regex knob(R"(^\s*#\s*(if|ifdef|ifndef|elif)\b.*\b(GDNBENCH|GDN)_[A-Z0-9_]+)");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(std::string(GDNBENCH_SOURCE_DIR) + "/kernels")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cu" && ext != ".cuh" && ext != ".h" && ext != ".cpp" && ext != ".inl") continue;
    ++files;
    std::ifstream in(entry.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      // GDNBENCH_MUTATION_HOOKS plants the CPU mutation check's bugs (never in the CLI's kernels).
      if (line.find("GDNBENCH_MUTATION_HOOKS") != std::string::npos) continue;
      INFO(entry.path().string() << ":" << line_no << ": " << line);
      CHECK_FALSE(std::regex_search(line, knob));
    }
  }
  CHECK(files > 10);
}
