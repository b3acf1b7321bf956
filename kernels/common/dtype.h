// Element types of q, k, v and o, with host-side bit-exact conversions (round to nearest even),
// so the CPU backend can emulate bf16/fp16 storage and the harness can upload device buffers.
// g, beta, h0 and hT are float32 in every dtype. Host-only.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

enum class DType { f32, bf16, f16 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
  }
  return "?";
}

inline std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "fp32" || s == "float32" || s == "f32") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "float16" || s == "f16") return DType::f16;
  return std::nullopt;
}

inline size_t dtype_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x0040u);  // quiet NaN
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16_bits_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u);
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above round to infinity
  if (a < 0x38800000u) {                         // below 2^-14: a half subnormal (units of 2^-24)
    const float scaled = bits_float(a) * 16777216.0f;  // exact: power-of-two scaling
    return sign | uint16_t(std::nearbyint(scaled));    // 1024 lands on the smallest normal
  }
  uint32_t h = ((((a >> 23) - 127u + 15u) << 10) | ((a & 0x7FFFFFu) >> 13));
  const uint32_t rest = a & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return sign | uint16_t(h);
}
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) {
    const float v = float(m) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (e == 31) return bits_float(sign | 0x7F800000u | (m << 13));
  return bits_float(sign | ((e - 15u + 127u) << 23) | (m << 13));
}

// The value of f after a round trip through dtype t.
inline float round_to(DType t, float f) {
  switch (t) {
    case DType::f32: return f;
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(f));
    case DType::f16: return half_bits_to_float(float_to_half_bits(f));
  }
  return f;
}
