// Warpgroup tensor-core products on sm_90a (wgmma.mma_async): fp16 operands, float32 accumulation,
// one warpgroup (128 threads, warps 4w .. 4w + 3) issuing each together. Only the PTX and the
// shared-memory descriptor live here; the tile layouts stay with the kernels.
// Layouts (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"), warp w of the
// warpgroup, g = lane / 4, t = 2 (lane % 4):
//   D 64 x N float32, N / 2 values a thread: d[4 j + 0, 1] (16 w + g, 8 j + t .. t + 1),
//     d[4 j + 2, 3] (16 w + g + 8, 8 j + t ..): mma.sync's C order per 8-column tile.
//   A 64 x 16 from registers, 4 a thread: mma.sync's A fragment of rows 16 w .. 16 w + 15, so the
//     columns 16 s .. 16 s + 15 of a D, converted in pairs, are the A of the next product.
//   A or B in shared memory, K-major without swizzle: 8 x 8 core matrices of 128 contiguous bytes
//     (8 rows of M or N, each 8 consecutive K elements); the descriptor gives the byte strides
//     between core matrices adjacent in K and adjacent in M or N.
// Every wgmma reads or accumulates registers asynchronously: between the issue and the wait that
// covers it, the compiler must neither reuse nor touch them (keep_live after the wait keeps them
// allocated until then; the asm's own operands order the issue after the writes before it).
#pragma once
#include <cstdint>

namespace wg {

__device__ __forceinline__ uint64_t desc_kmajor(const void* smem, uint32_t k_stride_bytes, uint32_t mn_stride_bytes) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return uint64_t((addr >> 4) & 0x3FFFu) | (uint64_t((k_stride_bytes >> 4) & 0x3FFFu) << 16) |
         (uint64_t((mn_stride_bytes >> 4) & 0x3FFFu) << 32);
}
// Orders this thread's register writes before the next wgmma reads them (issue before any group).
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Until at most kPending of this warpgroup's committed groups are still running (oldest first).
template <int kPending>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Makes this thread's shared-memory writes visible to the async proxy (wgmma's operand reads);
// before the barrier that hands the tile to the warpgroup that issues the product.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Pins registers after a wait: the compiler neither moves their reads above it nor reuses them
// before it.
template <int kN>
__device__ __forceinline__ void keep_live(float (&r)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int kN>
__device__ __forceinline__ void keep_live(uint32_t (&r)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
template <int kM, int kN>
__device__ __forceinline__ void keep_live(uint32_t (&r)[kM][kN]) {
#pragma unroll
  for (int i = 0; i < kM; ++i) keep_live(r[i]);
}

// d (64 x 64) += or = scale_a * A (64 x 16, registers) * B (16 x 64, K-major descriptor).
template <int kScaleA>
__device__ __forceinline__ void wgmma_rs_m64n64k16_f16(float (&d)[32], const uint32_t (&a)[4], uint64_t b, bool accumulate) {
  static_assert(kScaleA == 1 || kScaleA == -1, "wgmma scales A by 1 or -1");
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, %38, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int(accumulate)), "n"(kScaleA)
      : "memory");
}

// d (64 x 128) += or = scale_a * A (64 x 16, registers) * B (16 x 128, K-major descriptor).
template <int kScaleA>
__device__ __forceinline__ void wgmma_rs_m64n128k16_f16(float (&d)[64], const uint32_t (&a)[4], uint64_t b, bool accumulate) {
  static_assert(kScaleA == 1 || kScaleA == -1, "wgmma scales A by 1 or -1");
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, %70, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int(accumulate)), "n"(kScaleA)
      : "memory");
}

// d (64 x 64) += or = A (64 x 16, K-major descriptor) * B (16 x 64, K-major descriptor).
__device__ __forceinline__ void wgmma_ss_m64n64k16_f16(float (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(int(accumulate))
      : "memory");
}

}  // namespace wg
