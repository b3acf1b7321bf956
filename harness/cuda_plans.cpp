// The device facts of the plans (harness/plans.h): asked of the kernels' own queries, the ones
// their launchers use, so a row's plan is the one its launch takes.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <cuda_runtime.h>

#include "harness/cuda_check.h"
#include "harness/plans.h"
#include "kernels/frontend/frontend.h"
#include "kernels/wy_ut/wy_ut.h"

PlanDevice plan_device_for(const std::string& variant, const Problem& p) {
  PlanDevice dev;
  int e = 0;
  if (variant == "wy_ut" || variant == "unfused_conv" || variant == "fused_conv")
    e = gdn_wy_ut_plan_device(p.shape, p.dtype, dev);
  else if (variant == "fused_decode" || variant == "fused_decode_bf16state")
    e = gdn_decode_plan_device(p.shape, p.dtype, variant == "fused_decode_bf16state", dev);
  else if (variant == "attn_decode") {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&dev.sms, cudaDevAttrMultiProcessorCount, device));
  }
  if (e != 0) throw std::runtime_error(fmt::format("{}: the device facts of its plan could not be asked (CUDA error {})",
                                                   variant, e));
  return dev;
}
