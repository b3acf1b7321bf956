// The CPU backend's one thread pool: work(i, worker) for every item i in [0, items), items dealt
// round robin over min(threads, items) std::threads (one item per call, no queue: the items of the
// CPU kernels are (b, hv) heads of equal cost); threads <= 1 runs them in order on the caller.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

template <typename Fn>
void cpu_parallel_for(int64_t items, int threads, Fn&& work) {
  if (threads <= 1 || items <= 1) {
    for (int64_t i = 0; i < items; ++i) work(i, 0);
    return;
  }
  const int n = int(std::min<int64_t>(threads, items));
  std::vector<std::thread> pool;
  pool.reserve(n);
  for (int w = 0; w < n; ++w)
    pool.emplace_back([&, w] {
      for (int64_t i = w; i < items; i += n) work(i, w);
    });
  for (auto& t : pool) t.join();
}
