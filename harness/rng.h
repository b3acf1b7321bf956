// Seeded, counter-based random numbers: draw i of stream s is a pure function of (seed, s, i),
// so a tensor's values never depend on thread count or order. Streams in use: 1-7 the GDN inputs,
// 8-9 the upstream gradients of a backward pass (dO, dhT) and 64-65 the KV cache
// (harness/inputs.cpp), 96-111 the front-end inputs (harness/frontend_inputs.cpp), 99 the ceilings' GEMM data, 120 the front-end variants' shuffle.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

// Uniform (0, 1] and standard normal draws for element `index` of tensor `stream`.
double counter_uniform(uint64_t seed, uint32_t stream, uint64_t index);
double counter_normal(uint64_t seed, uint32_t stream, uint64_t index);

// f(i) for i < n over threads; f must be a pure function of i (counter-based), so the split is moot.
template <typename F>
std::vector<float> counter_tensor(int64_t n, F f) {
  std::vector<float> x(size_t(std::max<int64_t>(n, 0)));
  const int64_t workers = std::clamp<int64_t>(n / (1 << 16), 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int64_t i = n * w / workers; i < n * (w + 1) / workers; ++i) x[size_t(i)] = f(i);
    });
  for (auto& t : pool) t.join();
  return x;
}

// n standard normal draws of `stream`, as float.
std::vector<float> normal_tensor(uint64_t seed, uint32_t stream, int64_t n);
