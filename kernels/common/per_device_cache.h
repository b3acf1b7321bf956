// One value per CUDA device, asked of the runtime once per device and kept: the launchers that
// run once per decoded token (fused_decode) would otherwise put an occupancy or attribute query on
// every launch path. Host-only; lock-free (relaxed atomics: two threads that both miss compute the
// same answer and both store it).
#pragma once
#include <atomic>

template <typename V>
class PerDeviceCache {
 public:
  static constexpr int kMaxDevices = 64;  // devices past this are asked every time

  // The value kept for `device`, or V{} where none is (not asked yet, or out of range).
  V get(int device) const {
    return in_range(device) ? values_[device].load(std::memory_order_relaxed) : V{};
  }
  void put(int device, V value) {
    if (in_range(device)) values_[device].store(value, std::memory_order_relaxed);
  }

 private:
  static bool in_range(int device) { return device >= 0 && device < kMaxDevices; }
  std::atomic<V> values_[kMaxDevices] = {};
};
