#include "harness/rng.h"

#include <cmath>

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

double counter_uniform(uint64_t seed, uint32_t stream, uint64_t index) {
  const uint64_t h = splitmix64(splitmix64(seed ^ (uint64_t(stream) << 56)) ^ index);
  return (double(h >> 11) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]
}

double counter_normal(uint64_t seed, uint32_t stream, uint64_t index) {
  const double u1 = counter_uniform(seed, stream, 2 * index);
  const double u2 = counter_uniform(seed, stream, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

std::vector<float> normal_tensor(uint64_t seed, uint32_t stream, int64_t n) {
  return counter_tensor(n, [=](int64_t i) { return float(counter_normal(seed, stream, uint64_t(i))); });
}
