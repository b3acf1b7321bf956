#include "harness/cuda_frontend_variants.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "harness/cuda_run.h"
#include "harness/metrics.h"
#include "harness/rng.h"
#include "kernels/plans/launch_plans.h"
#include "kernels/frontend/frontend.h"

namespace {

// Elements of the conv cache of tensor t (q, k, v) per sequence: channels x 3.
int64_t cache_row_elems(const GdnShape& s, int t) {
  return (t == kFeV ? s.HV * s.V : s.H * s.K) * kConvCache;
}

const std::vector<float>& host_cache(const FrontEndHost& fe, int t) {
  return t == kFeQ ? fe.cache_q : t == kFeK ? fe.cache_k : fe.cache_v;
}

// 16-bit or 32-bit device elements read back as float, the poison bits mapped to the f32 poison
// (CudaRunBase::download's rule, for data gathered from a pool).
std::vector<float> bytes_to_floats(const std::vector<unsigned char>& bytes, DType dt) {
  const size_t n = bytes.size() / dtype_bytes(dt);
  std::vector<float> out(n);
  if (dt == DType::f32) {
    std::memcpy(out.data(), bytes.data(), n * 4);
    return out;
  }
  const uint16_t poison_bits = dt == DType::bf16 ? kPoisonBitsBf16 : kPoisonBitsF16;
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + 2 * i, 2);
    out[i] = bits == poison_bits ? poison_value_f32()
             : dt == DType::bf16 ? bf16_bits_to_float(bits)
                                 : half_bits_to_float(bits);
  }
  return out;
}

// Device copies of what every front-end kernel reads: projections, conv weights and biases,
// a, b, A_log, dt_bias; and o.
class CudaFrontEndRun : public CudaRunBase {
 protected:
  CudaFrontEndRun(const Problem& p, const HostInputs& in, const PlanLaunch& plan) : dtype_(p.dtype) {
    params_.scan_groups = plan.scan_groups;
    params_.wy_ut_output = plan.wy_ut_output;
    params_.fused_conv_output = plan.fused_conv_output;
    params_.decode_state = plan.decode.state;
    params_.decode_fe = plan.decode.fe;
    const FrontEndHost& fe = in.fe;
    const std::vector<float>* xs[3] = {&fe.x_q, &fe.x_k, &fe.x_v};
    const std::vector<float>* ws[3] = {&fe.w_q, &fe.w_k, &fe.w_v};
    const std::vector<float>* bs[3] = {&fe.bias_q, &fe.bias_k, &fe.bias_v};
    for (int t = 0; t < 3; ++t) {
      x_[t] = upload(*xs[t], p.dtype);
      w_[t] = upload(*ws[t], p.dtype);
      bias_[t] = upload(*bs[t], p.dtype);
      params_.x[t] = x_[t].get();
      params_.conv_w[t] = w_[t].get();
      params_.conv_bias[t] = bs[t]->empty() ? nullptr : bias_[t].get();
    }
    a_ = upload(fe.a, p.dtype);
    b_ = upload(fe.b, p.dtype);
    A_log_ = upload(fe.A_log, DType::f32);
    dt_bias_ = upload(fe.dt_bias, DType::f32);
    o_elems_ = p.shape.v_elems();
    o_ = allocate(size_t(o_elems_) * dtype_bytes(p.dtype));
    params_.shape = p.shape;
    params_.dtype = p.dtype;
    params_.a = a_.get();
    params_.b = b_.get();
    params_.A_log = A_log_.as<float>();
    params_.dt_bias = dt_bias_.as<float>();
    params_.scale = float(p.resolved_scale());
    params_.use_delta = p.use_delta;
    params_.o = o_.get();
  }

  DType dtype_;
  GdnFrontEndParams params_;
  int64_t o_elems_ = 0;
  DeviceBuffer x_[3], w_[3], bias_[3], a_, b_, A_log_, dt_bias_, o_;
};

// unfused_conv and fused_conv: caches in [B, ch, 3] (when given), final caches out, h0/hT, the
// workspace (unfused: q, k, v, g, beta + wy_ut's; fused: wy_ut's + the normalised k).
class ForwardRun final : public CudaFrontEndRun {
 public:
  ForwardRun(const Problem& p, const HostInputs& in, const PlanLaunch& plan, bool fused)
      : CudaFrontEndRun(p, in, plan), fused_(fused) {
    const GdnShape& s = p.shape;
    for (int t = 0; t < 3; ++t) {
      cache_elems_[t] = s.B * cache_row_elems(s, t);
      const std::vector<float>& c = host_cache(in.fe, t);
      cache_in_[t] = upload(c, p.dtype);
      params_.cache_in[t] = c.empty() ? nullptr : cache_in_[t].get();
      cache_out_[t] = allocate(size_t(cache_elems_[t]) * dtype_bytes(p.dtype));
      params_.cache_out[t] = cache_out_[t].get();
    }
    h0_ = upload(in.h0, DType::f32);
    params_.h0 = in.h0.empty() ? nullptr : h0_.as<float>();
    ht_elems_ = s.state_elems();
    hT_ = allocate(size_t(ht_elems_) * 4);
    params_.hT = hT_.as<float>();
    workspace_ = allocate(fused ? gdn_fused_conv_workspace_bytes(s, p.dtype, plan.scan_groups)
                                : gdn_frontend_unfused_workspace_bytes(s, p.dtype, plan.scan_groups));
  }
  void poison_outputs() override {
    poison(o_, o_elems_, dtype_);
    poison(hT_, ht_elems_, DType::f32);
    for (int t = 0; t < 3; ++t) poison(cache_out_[t], cache_elems_[t], dtype_);
  }
  void launch() override {
    CUDA_CHECK(cudaError_t(fused_ ? launch_gdn_fused_conv(params_, workspace_.get(), stream_)
                                  : launch_gdn_frontend_unfused(params_, workspace_.get(), stream_)));
  }
  RunOutputs read_outputs() override {
    synchronize();
    RunOutputs out{download(o_, o_elems_, dtype_), download(hT_, ht_elems_, DType::f32), {}};
    for (int t = 0; t < 3; ++t) {
      const std::vector<float> c = download(cache_out_[t], cache_elems_[t], dtype_);
      out.conv_cache.insert(out.conv_cache.end(), c.begin(), c.end());
    }
    return out;
  }

 private:
  bool fused_;
  int64_t cache_elems_[3] = {0, 0, 0}, ht_elems_ = 0;
  DeviceBuffer cache_in_[3], cache_out_[3], h0_, hT_, workspace_;
};

// fused_decode: the state and conv caches live in pools of decode_pool_slots(B) slots, sequence
// b at slots[b]; slots no sequence uses hold the poison, so reading a wrong slot fails.
class DecodeRun final : public CudaFrontEndRun {
 public:
  DecodeRun(const Problem& p, const HostInputs& in, const PlanLaunch& plan, bool state_bf16)
      : CudaFrontEndRun(p, in, plan), state_dtype_(state_bf16 ? DType::bf16 : DType::f32) {
    const GdnShape& s = p.shape;
    pool_slots_ = decode_pool_slots(s.B);
    slots_ = decode_slots(s.B, p.seed);
    slots_dev_ = allocate(slots_.size() * sizeof(int32_t));
    copy_to_device(slots_dev_.get(), slots_.data(), slots_dev_.bytes());
    // Row r of a pool is sequence r's part; init_* hold the B rows the pool starts from.
    state_row_ = s.HV * s.K * s.V;
    state_pool_ = allocate(size_t(pool_slots_ * state_row_) * dtype_bytes(state_dtype_));
    init_state_ = in.h0.empty() ? zeros(size_t(s.state_elems()) * dtype_bytes(state_dtype_))
                                : upload(in.h0, state_dtype_);
    for (int t = 0; t < 3; ++t) {
      cache_row_[t] = cache_row_elems(s, t);
      cache_pool_[t] = allocate(size_t(pool_slots_ * cache_row_[t]) * dtype_bytes(p.dtype));
      const std::vector<float>& c = host_cache(in.fe, t);
      init_cache_[t] = c.empty() ? zeros(size_t(s.B * cache_row_[t]) * dtype_bytes(p.dtype)) : upload(c, p.dtype);
      params_.cache_in[t] = cache_pool_[t].get();
      params_.cache_out[t] = cache_pool_[t].get();
    }
    workspace_ = allocate(gdn_decode_workspace_bytes(s));
    params_.state = state_pool_.get();
    params_.state_bf16 = state_bf16;
    params_.slots = slots_dev_.as<int32_t>();
    params_.pool_slots = pool_slots_;
  }
  // Poisons o and every pool slot, then puts the initial state and caches into the used slots:
  // each verification (and determinism) launch starts from the same in-place state.
  void poison_outputs() override {
    poison(o_, o_elems_, dtype_);
    poison(state_pool_, pool_slots_ * state_row_, state_dtype_);
    scatter(state_pool_, init_state_, state_row_ * int64_t(dtype_bytes(state_dtype_)));
    for (int t = 0; t < 3; ++t) {
      poison(cache_pool_[t], pool_slots_ * cache_row_[t], dtype_);
      scatter(cache_pool_[t], init_cache_[t], cache_row_[t] * int64_t(dtype_bytes(dtype_)));
    }
  }
  void launch() override { CUDA_CHECK(cudaError_t(launch_gdn_decode(params_, workspace_.get(), stream_))); }
  RunOutputs read_outputs() override {
    synchronize();
    RunOutputs out{download(o_, o_elems_, dtype_), gather(state_pool_, state_row_, state_dtype_), {}};
    for (int t = 0; t < 3; ++t) {
      const std::vector<float> c = gather(cache_pool_[t], cache_row_[t], dtype_);
      out.conv_cache.insert(out.conv_cache.end(), c.begin(), c.end());
    }
    return out;
  }

 private:
  // Row b of init (row_bytes each) to row slots[b] of pool, on the stream.
  void scatter(const DeviceBuffer& pool, const DeviceBuffer& init, int64_t row_bytes) {
    for (size_t b = 0; b < slots_.size(); ++b)
      CUDA_CHECK(cudaMemcpyAsync(pool.as<char>() + slots_[b] * row_bytes, init.as<char>() + int64_t(b) * row_bytes,
                                 size_t(row_bytes), cudaMemcpyDeviceToDevice, stream_));
  }
  // Rows slots[0..B) of a pool of dt elements as float, in batch order.
  std::vector<float> gather(const DeviceBuffer& pool, int64_t row_elems, DType dt) const {
    const size_t row_bytes = size_t(row_elems) * dtype_bytes(dt);
    std::vector<unsigned char> bytes(row_bytes * slots_.size());
    for (size_t b = 0; b < slots_.size(); ++b)
      CUDA_CHECK(cudaMemcpy(bytes.data() + b * row_bytes, pool.as<char>() + slots_[b] * row_bytes, row_bytes,
                            cudaMemcpyDeviceToHost));
    return bytes_to_floats(bytes, dt);
  }

  DType state_dtype_;
  int64_t pool_slots_ = 0, state_row_ = 0, cache_row_[3] = {0, 0, 0};
  std::vector<int32_t> slots_;
  DeviceBuffer slots_dev_, state_pool_, init_state_, cache_pool_[3], init_cache_[3], workspace_;
};

}  // namespace

int64_t decode_pool_slots(int64_t B) { return B + std::max<int64_t>(1, B / 2); }

std::vector<int32_t> decode_slots(int64_t B, uint64_t seed) {
  // Fisher-Yates over the pool with counter-based draws: the mapping is a function of the seed.
  std::vector<int32_t> perm(size_t(decode_pool_slots(B)));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int32_t(i);
  for (size_t i = perm.size() - 1; i > 0; --i) {
    const size_t j = std::min(i, size_t(counter_uniform(seed, 120, i) * double(i + 1)));
    std::swap(perm[i], perm[j]);
  }
  perm.resize(size_t(B));
  return perm;
}

namespace {
// Device bytes of a forward front-end problem besides the variant's workspace: raw projections,
// a, b, o and conv caches in and out in the dtype, h0 and hT in float32.
double frontend_forward_bytes(const GdnShape& s, DType dtype) {
  const double e = double(dtype_bytes(dtype)), channels = double(2 * s.H * s.K + s.HV * s.V);
  return e * double(2 * s.qk_elems() + 2 * s.v_elems() + 2 * s.gate_elems()) +
         e * double(s.B) * channels * kConvCache * 2 + 8.0 * double(s.state_elems());
}
}  // namespace

std::optional<std::string> unfused_conv_unsupported(const Problem& p) {
  const GdnShape& s = p.shape;
  if (s.B > 65535 || 2 * s.H + s.HV + 1 > 65535) return std::string("B and 2H + HV + 1 must be <= 65535");
  if (const char* why = gdn_frontend_unfused_shape_unsupported(s, p.dtype)) return std::string(why);
  const double need =
      double(gdn_frontend_unfused_workspace_bytes(s, p.dtype, wy_ut_largest_scan_groups(s))) +
      frontend_forward_bytes(s, p.dtype);
  return device_memory_shortfall(need, "q, k, v, g, beta and wy_ut's workspace");
}

std::unique_ptr<VariantRun> create_unfused_conv(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<ForwardRun>(p, in, ctx.plan, false);
}

std::optional<std::string> fused_conv_unsupported(const Problem& p) {
  if (const char* why = gdn_fused_conv_shape_unsupported(p.shape, p.dtype)) return std::string(why);
  // The workspace holds wy_ut's parts (with the most scan groups a plan may take) and the normalised k.
  const double need =
      double(gdn_fused_conv_workspace_bytes(p.shape, p.dtype, wy_ut_largest_scan_groups(p.shape))) +
      frontend_forward_bytes(p.shape, p.dtype);
  return device_memory_shortfall(need, "projections, wy_ut's workspace and the normalised k");
}

std::unique_ptr<VariantRun> create_fused_conv(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<ForwardRun>(p, in, ctx.plan, true);
}

std::optional<std::string> fused_decode_unsupported(const Problem& p) {
  const GdnShape& s = p.shape;
  if (const char* why = gdn_decode_shape_unsupported(s)) return std::string(why);
  const double e = double(dtype_bytes(p.dtype)), channels = double(2 * s.H * s.K + s.HV * s.V);
  const double slots = double(decode_pool_slots(s.B) + s.B) / double(s.B);  // pools and initial rows
  const double need = e * double(2 * s.qk_elems() + 2 * s.v_elems() + 2 * s.gate_elems()) +
                      slots * (e * double(s.B) * channels * kConvCache + 4.0 * double(s.state_elems())) +
                      double(gdn_decode_workspace_bytes(s));
  return device_memory_shortfall(need, "state and conv cache pools, front-end rows");
}

std::unique_ptr<VariantRun> create_fused_decode(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<DecodeRun>(p, in, ctx.plan, false);
}

std::unique_ptr<VariantRun> create_fused_decode_bf16state(const Problem& p, const HostInputs& in,
                                                          const RunContext& ctx) {
  return std::make_unique<DecodeRun>(p, in, ctx.plan, true);
}
