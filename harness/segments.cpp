#include "harness/segments.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

std::vector<int64_t> segment_offsets(int64_t T, int64_t segments, int64_t chunk) {
  if (T < 1 || segments < 1 || chunk < 1) throw std::invalid_argument("segment_offsets: T, segments and chunk must be positive");
  const int64_t N = (T + chunk - 1) / chunk, per = (N + segments - 1) / segments;
  std::vector<int64_t> out = {0};
  for (int64_t c = per; c < N; c += per) out.push_back(c * chunk);
  out.push_back(T);
  return out;
}

std::vector<float> segment_entry_states(int64_t rows, int64_t n, int64_t HV, int64_t K, int64_t V,
                                        const float* A, const float* B, const float* h0,
                                        std::vector<float>* final) {
  const int64_t KK = K * K, KV = K * V;
  std::vector<float> entry(size_t(rows * n * HV * KV));
  if (final) final->assign(size_t(rows * HV * KV), 0.0f);
  std::vector<float> S(static_cast<size_t>(KV)), next(static_cast<size_t>(KV));
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t h = 0; h < HV; ++h) {
      if (h0) std::copy_n(h0 + (b * HV + h) * KV, KV, S.begin());
      else std::fill(S.begin(), S.end(), 0.0f);
      for (int64_t r = 0; r < n; ++r) {
        const int64_t seg = (b * n + r) * HV + h;
        std::copy(S.begin(), S.end(), entry.begin() + seg * KV);
        const float* a = A + seg * KK;
        const float* loc = B + seg * KV;
        for (int64_t i = 0; i < K; ++i)
          for (int64_t x = 0; x < V; ++x) {
            float acc = loc[i * V + x];
            for (int64_t m = 0; m < K; ++m) acc += a[i * K + m] * S[size_t(m * V + x)];
            next[size_t(i * V + x)] = acc;
          }
        S.swap(next);
      }
      if (final) std::copy(S.begin(), S.end(), final->begin() + (b * HV + h) * KV);
    }
  return entry;
}

namespace {

// p as a packed batch of its segments: B = 1, the rows' segments in order.
Problem segments_problem(const Problem& p, const std::vector<int64_t>& offsets) {
  Problem s = p;
  s.segments = 1;
  s.seqlens.clear();
  const int64_t n = int64_t(offsets.size()) - 1;
  s.cu_seqlens.assign(1, 0);
  for (int64_t b = 0; b < p.shape.B; ++b)
    for (int64_t r = 0; r < n; ++r) s.cu_seqlens.push_back(int32_t(b * p.shape.T + offsets[size_t(r + 1)]));
  s.shape.T = p.shape.B * p.shape.T;
  s.shape.B = 1;
  s.shape.num_seqs = p.shape.B * n;
  return s;
}

// The transfer pass's problem: values of width K, the identity as initial state.
Problem transfer_problem(const Problem& packed) {
  Problem t = packed;
  t.shape.V = packed.shape.K;
  t.use_h0 = true;
  return t;
}

class SegmentedRun final : public VariantRun {
 public:
  SegmentedRun(const VariantInfo& v, const Problem& p, const HostInputs& in, const RunContext& ctx)
      : v_(v), p_(p), ctx_(ctx), offsets_(segment_offsets(p.shape.T, p.segments, p.chunk)) {
    const GdnShape& s = p.shape;
    n_ = int64_t(offsets_.size()) - 1;
    packed_ = segments_problem(p, offsets_);
    // The local pass: the inputs as they are (a batch's rows are its segments' tokens in order), no h0.
    local_in_ = in;
    local_in_.h0.clear();
    local_in_.cu_seqlens = packed_.cu_seqlens;
    Problem local = packed_;
    local.use_h0 = false;
    local_ = v.create(local, local_in_, ctx);
    // The transfer pass: v = 0 of width K, h0 = I for every segment and head.
    const Problem transfer = transfer_problem(packed_);
    transfer_in_ = local_in_;
    transfer_in_.v.assign(size_t(s.B * s.T * s.HV * s.K), 0.0f);
    transfer_in_.h0.assign(size_t(packed_.shape.num_seqs * s.HV * s.K * s.K), 0.0f);
    for (int64_t m = 0; m < packed_.shape.num_seqs * s.HV; ++m)
      for (int64_t i = 0; i < s.K; ++i) transfer_in_.h0[size_t(m * s.K * s.K + i * s.K + i)] = 1.0f;
    transfer_ = v.create(transfer, transfer_in_, ctx);
    seeded_in_ = local_in_;
    h0_ = in.h0;
  }
  void poison_outputs() override {
    local_->poison_outputs();
    transfer_->poison_outputs();
  }
  void launch() override {
    const GdnShape& s = p_.shape;
    local_->launch();
    transfer_->launch();
    local_->synchronize();
    transfer_->synchronize();
    const RunOutputs local = local_->read_outputs(), transfer = transfer_->read_outputs();
    if (local.hT.size() != size_t(packed_.shape.num_seqs * s.HV * s.K * s.V) ||
        transfer.hT.size() != size_t(packed_.shape.num_seqs * s.HV * s.K * s.K))
      throw std::runtime_error("segments: a pass returned no final state of every segment");
    seeded_in_.h0 = segment_entry_states(s.B, n_, s.HV, s.K, s.V, transfer.hT.data(), local.hT.data(),
                                         h0_.empty() ? nullptr : h0_.data());
    Problem seeded = packed_;
    seeded.use_h0 = true;
    seeded_ = v_.create(seeded, seeded_in_, ctx_);
    seeded_->poison_outputs();
    seeded_->launch();
  }
  void synchronize() override {
    if (seeded_) seeded_->synchronize();
  }
  RunOutputs read_outputs() override {
    if (!seeded_) throw std::runtime_error("segments: read before launch");
    RunOutputs seg = seeded_->read_outputs();
    // o: the packed layout is p's. hT: each row's last segment's.
    const GdnShape& s = p_.shape;
    const int64_t KV = s.K * s.V;
    RunOutputs out;
    out.o = std::move(seg.o);
    if (!seg.hT.empty()) {
      out.hT.resize(size_t(s.B * s.HV * KV));
      for (int64_t b = 0; b < s.B; ++b)
        std::copy_n(seg.hT.begin() + ((b * n_ + n_ - 1) * s.HV) * KV, s.HV * KV, out.hT.begin() + b * s.HV * KV);
    }
    return out;
  }
  int64_t peak_device_bytes() const override {
    return local_->peak_device_bytes() + transfer_->peak_device_bytes() + (seeded_ ? seeded_->peak_device_bytes() : 0);
  }

 private:
  const VariantInfo& v_;
  Problem p_, packed_;
  RunContext ctx_;
  std::vector<int64_t> offsets_;
  int64_t n_ = 0;
  HostInputs local_in_, transfer_in_, seeded_in_;
  std::vector<float> h0_;
  std::unique_ptr<VariantRun> local_, transfer_, seeded_;
};

}  // namespace

std::optional<std::string> segments_unsupported(const VariantInfo& v, const Problem& p) {
  if (p.segments <= 1) return std::nullopt;
  if (v.family != Family::gdn) return std::string("--segments: a GDN sequence split; attention has no state to hand on");
  if (p.frontend) return std::string("--segments: the front end's conv caches are not split (q, k, v, g, beta problems only)");
  if (p.packed()) return std::string("--segments: a packed batch is split by its sequences already");
  if (pass_has_backward(p.pass)) return std::string("--segments: the forward only (no split backward yet)");
  const Problem packed = segments_problem(p, segment_offsets(p.shape.T, p.segments, p.chunk));
  if (const auto why = v.unsupported(transfer_problem(packed)))
    return fmt::format("--segments: its transfer pass (V = K = {}) cannot run: {}", p.shape.K, *why);
  return v.unsupported(packed);
}

std::unique_ptr<VariantRun> create_segmented_run(const VariantInfo& v, const Problem& p, const HostInputs& in,
                                                 const RunContext& ctx) {
  return std::make_unique<SegmentedRun>(v, p, in, ctx);
}
