// The metrics of a comparison with the reference (harness/metrics.h): a hand example, the
// rounding floor, non-finite and unwritten elements, partial comparisons.
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
#include "harness/io/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/rng.h"
#include "harness/runner.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "kernels/common/dtype.h"
#include "tests/common/test_util.h"


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
