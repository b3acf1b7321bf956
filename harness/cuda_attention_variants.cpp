// Registry hooks of the fused softmax-attention baselines: attn_flash (prefill, no T x T memory)
// and attn_decode (one new token against a KV cache, split over the keys).
#include <unistd.h>

#include <fmt/format.h>

#include "harness/cuda_run.h"
#include "harness/cuda_variants.h"
#include "kernels/common/cuda_kernels.h"

namespace {

AttnParams attn_params_for(const Problem& p) {
  const GdnShape& s = p.shape;
  AttnParams ap;
  ap.dtype = p.dtype;
  ap.B = s.B;
  ap.T = s.T;
  ap.H = s.HV;
  ap.D = s.K;
  ap.Dv = s.V;
  ap.scale = float(p.resolved_scale());
  ap.causal = true;
  return ap;
}

AttnDecodeParams decode_params_for(const Problem& p, int num_splits) {
  const GdnShape& s = p.shape;
  AttnDecodeParams dp;
  dp.dtype = p.dtype;
  dp.B = s.B;
  dp.H = s.HV;
  dp.D = s.K;
  dp.context = p.context;
  dp.scale = float(p.resolved_scale());
  dp.num_splits = num_splits;
  return dp;
}

int device_sm_count() {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// The SMs where there is a device; without one (the shape checks of tests/kernels/test_plans.cpp), 0: the
// workspace is then sized for one split, and the memory check has no device to compare with.
int device_sm_count_or_zero() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

int decode_splits_for(const Problem& p) {
  return attn_decode_num_splits(p.shape.B, p.shape.HV, p.context + 1, device_sm_count());
}

class AttnFlashRun : public CudaRunBase {
 public:
  AttnFlashRun(const Problem& p, const HostInputs& in) : params_(attn_params_for(p)) {
    q_ = upload(in.q, p.dtype);
    k_ = upload(in.k, p.dtype);
    v_ = upload(in.v, p.dtype);
    o_elems_ = p.shape.v_elems();
    o_ = allocate(size_t(o_elems_) * dtype_bytes(p.dtype));
    params_.q = q_.get();
    params_.k = k_.get();
    params_.v = v_.get();
    params_.o = o_.get();
  }
  void poison_outputs() override { poison(o_, o_elems_, params_.dtype); }
  void launch() override { CUDA_CHECK(cudaError_t(launch_attn_flash(params_, stream_))); }
  RunOutputs read_outputs() override {
    synchronize();
    RunOutputs out;
    out.o = download(o_, o_elems_, params_.dtype);
    return out;
  }

 private:
  AttnParams params_;
  int64_t o_elems_ = 0;
  DeviceBuffer q_, k_, v_, o_;
};

class AttnDecodeRun : public CudaRunBase {
 public:
  AttnDecodeRun(const Problem& p, const HostInputs& in) : params_(decode_params_for(p, decode_splits_for(p))) {
    q_ = upload(in.q, p.dtype);
    k_ = upload(in.k, p.dtype);
    v_ = upload(in.v, p.dtype);
    k_cache_ = upload(in.k_cache, p.dtype);
    v_cache_ = upload(in.v_cache, p.dtype);
    o_elems_ = p.shape.v_elems();
    o_ = allocate(size_t(o_elems_) * dtype_bytes(p.dtype));
    workspace_ = allocate(attn_decode_workspace_bytes(params_));
    params_.q = q_.get();
    params_.k = k_.get();
    params_.v = v_.get();
    params_.k_cache = k_cache_.get();
    params_.v_cache = v_cache_.get();
    params_.o = o_.get();
  }
  void poison_outputs() override { poison(o_, o_elems_, params_.dtype); }
  void launch() override {
    CUDA_CHECK(cudaError_t(launch_attn_decode(params_, workspace_.get(), stream_)));
  }
  RunOutputs read_outputs() override {
    synchronize();
    RunOutputs out;
    out.o = download(o_, o_elems_, params_.dtype);
    return out;
  }

 private:
  AttnDecodeParams params_;
  int64_t o_elems_ = 0;
  DeviceBuffer q_, k_, v_, k_cache_, v_cache_, o_, workspace_;
};

}  // namespace

std::optional<std::string> attn_flash_unsupported(const Problem& p) {
  if (p.context > 0)
    return std::string("attn_flash is prefill without a KV cache (context 0); decode over a cache is attn_decode");
  if (const char* why = attn_flash_shape_unsupported(attn_params_for(p))) return std::string(why);
  const GdnShape& s = p.shape;
  return device_memory_shortfall(double(dtype_bytes(p.dtype)) * double(2 * s.qk_elems() + 2 * s.v_elems()),
                          "q, k, v and o");
}

std::unique_ptr<VariantRun> create_attn_flash(const Problem& p, const HostInputs& in, const RunContext&) {
  return std::make_unique<AttnFlashRun>(p, in);
}

std::optional<std::string> attn_decode_unsupported(const Problem& p) {
  const GdnShape& s = p.shape;
  if (s.T != 1)
    return fmt::format("attn_decode takes one new token per sequence (T = 1, any --context), not T = {}", s.T);
  if (s.K != s.V) return std::string("K and V must be equal");
  if (const char* why = attn_decode_shape_unsupported(decode_params_for(p, 1))) return std::string(why);
  // The harness holds the cache as float on the host (inputs and reference) plus a 16-bit staging
  // copy of one tensor while it uploads.
  const double cache_elems = double(s.B) * double(p.context) * double(s.HV) * double(s.K);
  const double host_need = 4.0 * 2.0 * cache_elems + 2.0 * cache_elems;
  const double host_total = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  if (host_total > 0 && host_need > 0.8 * host_total)
    return fmt::format("needs {} of host memory (the float KV cache the reference reads), host has {}",
                       gib_text(host_need), gib_text(host_total));
  const double e = double(dtype_bytes(p.dtype));
  const double need = e * (2.0 * cache_elems + double(2 * s.qk_elems() + 2 * s.v_elems())) +
                      double(attn_decode_workspace_bytes(decode_params_for(
                          p, attn_decode_num_splits(s.B, s.HV, p.context + 1, device_sm_count_or_zero()))));
  return device_memory_shortfall(need, "KV cache, q, k, v, o and split partials");
}

std::unique_ptr<VariantRun> create_attn_decode(const Problem& p, const HostInputs& in, const RunContext&) {
  return std::make_unique<AttnDecodeRun>(p, in);
}
