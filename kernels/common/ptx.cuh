// The PTX wrappers that are neither tensor-core operations, cp.async (tensor_core.cuh) nor bulk
// copies and mbarriers (bulk_copy.cuh): Programmatic Dependent Launch (griddepcontrol, sm_90), named barriers,
// loads with cache or ordering qualifiers that no C++ spelling gives, and the approximate exp2.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ptx {

// Lets the grid launched after this one (with the programmatic stream serialisation attribute)
// start now; without the call it starts as this grid's blocks exit.
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
// Until the grid this one depends on has completed and its writes are visible; returns at once in
// a grid launched without the attribute.
__device__ __forceinline__ void wait_prior_grid() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// Named barriers (bar.sync / bar.arrive, ids 1-15; 0 is __syncthreads'): `count` threads, a
// multiple of 32, take part in each phase. sync waits for the phase to complete (acquire and
// release); arrive counts this thread in without waiting (release): the producer's half of a
// producer-consumer hand-off between warps of one block.
__device__ __forceinline__ void named_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Four floats from shared memory (16-byte aligned) by a load the compiler neither merges with an
// earlier load of the same address nor removes.
__device__ __forceinline__ float4 lds_volatile_v4(const float* p) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  float4 v;
  asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(s));
  return v;
}

// 16 bytes from global memory no one writes during the kernel, not kept in L1 (read once).
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

// 2^x by ex2.approx.ftz (relative error ~2^-22; denormal results flushed to zero).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace ptx
