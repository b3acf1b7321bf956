// Warp-level tensor-core primitives for sm_80 and later: mma.sync m16n8k16 (bf16/fp16 operands,
// float32 accumulation), ldmatrix, and the cp.async copies that feed their shared tiles (and the
// other kernels' shared-memory stages). Only the PTX lives here; fragment index math stays with the
// kernels. The bulk copies and mbarriers are in bulk_copy.cuh, the rest of the PTX in ptx.cuh. Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16"), g = lane / 4, t = 2 (lane % 4):
//   A 16x16 row-major, 4 registers: a0 (g, t..t+1), a1 (g+8, t..), a2 (g, t+8..), a3 (g+8, t+8..)
//   B 16x8, 2 registers:             b0 (k = t..t+1, n = g), b1 (k = t+8..t+9, n = g)
//   C 16x8 float32, 4 values:        c0 c1 (g, t..t+1), c2 c3 (g+8, t..t+1)
// A register holds two 16-bit values, the lower column (or k) in the low half.
// ldmatrix .x4: lane 8 m + r gives the address of row r of 8x8 matrix m (16 contiguous bytes);
// lane 4 r + w receives word w of row r of each matrix (with .trans: of each column).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace tc {

template <typename T>
struct Mma;

template <>
struct Mma<__nv_bfloat16> {
  // d += a b
  static __device__ __forceinline__ void run(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  // x in the low half, y in the high half, each rounded to nearest even.
  static __device__ __forceinline__ uint32_t pack(float x, float y) {
    __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t u) {
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&u));
  }
};

template <>
struct Mma<__half> {
  static __device__ __forceinline__ void run(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  static __device__ __forceinline__ uint32_t pack(float x, float y) {
    __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t u) {
    return __half22float2(*reinterpret_cast<__half2*>(&u));
  }
};

// Four 8x8 matrices of 16-bit values from shared memory; p: this lane's row address (16-byte
// aligned). The "memory" clobber keeps the load after the stores a __syncthreads() published.
// addr: the row's shared-memory address (a kernel that keeps its tiles' addresses as 32-bit
// shared offsets passes them as they are).
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void* p) {
  ldsm_x4(r, uint32_t(__cvta_generic_to_shared(p)));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const void* p) {
  ldsm_x4_trans(r, uint32_t(__cvta_generic_to_shared(p)));
}

// 16 bytes global -> shared without a register round trip; valid == false zero-fills the 16 bytes
// and reads nothing (src-size 0), so `src` need only be some valid address.
__device__ __forceinline__ void cp_async16(uint32_t smem_addr, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  cp_async16(uint32_t(__cvta_generic_to_shared(dst)), src, valid);
}
// 16 bytes global -> shared, all of them (no src-size operand), cached in L2 only.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(uint32_t(__cvta_generic_to_shared(dst))),
               "l"(src)
               : "memory");
}
// 4 bytes global -> shared (.ca: the 4-byte size allows no .cg).
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(uint32_t(__cvta_generic_to_shared(dst))), "l"(src)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits for all of this thread's copies (committed or not); a barrier must follow before other
// threads read what they copied.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// cp_async_commit and cp_async_wait_all in one asm statement.
__device__ __forceinline__ void cp_async_commit_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
}
// Waits for this thread's copies until at most N groups are pending; a barrier must follow
// before other threads read what they copied.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

}  // namespace tc
