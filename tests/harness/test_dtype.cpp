// Dtype conversions: float to bf16 and fp16 round to nearest even, round trips, independent
// oracles, dtype names.
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
