// Bulk copies global -> shared (cp.async.bulk, sm_90) that complete on an mbarrier in shared
// memory: the PTX only; which thread arrives, expects and waits stays with the kernels.
// A phase of a barrier initialised with `count` completes when `count` arrivals were made and every
// byte announced by arrive_expect_tx has landed (the byte count may run ahead of the announcements
// while arrivals are still pending, so each thread may announce its own bytes before its copies).
#pragma once
#include <cstdint>

namespace bulk {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// kCount arrivals per phase. One thread, before any use; a barrier (and the fence below) before other threads use it.
template <uint32_t kCount>
__device__ __forceinline__ void mbarrier_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "n"(kCount) : "memory");
}
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// This thread's arrival on the current phase, announcing `bytes` more to land before it completes.
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) by the bulk-copy engine; they count
// against `bar`'s announced bytes when they land.
__device__ __forceinline__ void copy(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(smem)),
               "l"(gmem), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
// A hint: `bytes` (a multiple of 16, the address 16-byte aligned) from global memory into L2 by
// the bulk-copy engine; nothing waits for it or is told when it lands.
__device__ __forceinline__ void prefetch_l2(const void* gmem, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(gmem), "r"(bytes) : "memory");
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred P;\n mbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n selp.u32 %0, 1, 0, P;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

}  // namespace bulk
