// The launch plans of kernels/plans/launch_plans.h. Every condition here is the one the kernels need
// (a shape their instances cover, an alignment) or a measured rule of thumb about speed (a grid
// against the device's resident blocks); the latter are what --plan overrides.
#include "kernels/plans/launch_plans.h"

#include <algorithm>

namespace {

const std::vector<DType> kAllDtypes = {DType::f32, DType::bf16, DType::f16};
const std::vector<DType> k16BitDtypes = {DType::bf16, DType::f16};

std::string k_suffix(int64_t K) { return "_k" + std::to_string(K); }

// The option of `stage` that a request names, or "" when none does.
std::string requested_option(const std::vector<std::string>& tokens, const PlanStage& stage) {
  for (const std::string& t : tokens)
    for (const PlanOption& o : stage.options)
      if (plan_token_matches(t, o.name)) return t;
  return "";
}

// A request naming an option of no stage of the variant.
std::string foreign_token(const std::vector<std::string>& tokens, const std::vector<PlanStage>& stages) {
  for (const std::string& t : tokens) {
    bool known = false;
    for (const PlanStage& st : stages)
      for (const PlanOption& o : st.options) known = known || plan_token_matches(t, o.name);
    if (!known) return t;
  }
  return "";
}

std::string option_list(const std::vector<PlanStage>& stages) {
  std::string out;
  for (const PlanStage& st : stages) {
    out += (out.empty() ? "" : "; ") + st.name + ":";
    for (const PlanOption& o : st.options) out += " " + o.name;
  }
  return out;
}

PlanChoice refuse(std::string why) {
  PlanChoice c;
  c.unsupported = std::move(why);
  return c;
}

// The checks every plan function starts with: a request names options of this variant only.
bool request_known(const std::string& request, const std::vector<PlanStage>& stages, PlanChoice& refused) {
  const std::string bad = foreign_token(split_plan_request(request), stages);
  if (bad.empty()) return true;
  refused = refuse("--plan " + bad + " is not one of this variant's plans (" + option_list(stages) + ")");
  return false;
}

// A forced token that the chosen option does not match: the request cannot run this problem.
bool forced_elsewhere(const std::string& token, const std::string& chosen) {
  return !token.empty() && !plan_token_matches(token, chosen);
}

}  // namespace

std::string PlanChoice::name() const {
  std::string out;
  for (const std::string& o : options) out += (out.empty() ? "" : "/") + o;
  return detail.empty() ? out : out + " (" + detail + ")";
}

std::vector<std::string> split_plan_request(const std::string& request) {
  std::vector<std::string> out;
  if (request.empty() || request == "auto") return out;
  std::string cur;
  for (char c : request + "/") {
    if (c == '/') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool plan_token_matches(const std::string& token, const std::string& option) {
  if (token == option) return true;
  if (option.size() <= token.size() || option.compare(0, token.size(), token) != 0) return false;
  // The rest names only the instance: "_k<digits>" or "_t<digits>" (a K or T template instance),
  // "_partial" (K below the instance's), "_sync" (the block kernel without cp.async).
  const std::string rest = option.substr(token.size());
  const bool sized = rest.size() > 2 && (rest.rfind("_k", 0) == 0 || rest.rfind("_t", 0) == 0) &&
                     rest.find_first_not_of("0123456789", 2) == std::string::npos;
  return sized || rest == "_partial" || rest == "_sync";
}

// ---- recurrent

RecurrentForm recurrent_form(const GdnShape& s, RecurrentForm forced) {
  if (forced != RecurrentForm::automatic) return forced;
  if (s.T <= kRecurrentDecodeMaxT) return RecurrentForm::decode;
  return s.T >= kRecurrentLongFrom ? RecurrentForm::long_seq : RecurrentForm::short_seq;
}

int recurrent_k_bucket(int64_t K) { return K <= 64 ? 64 : K <= 128 ? 128 : 256; }

int recurrent_backward_lanes(int64_t K) { return recurrent_k_bucket(K) / kRecurrentBackwardRowsPerLane; }

// Named from the lanes the launcher takes, so the recorded option is the instance that ran.
std::string recurrent_backward_option(int64_t K) {
  return "backward" + k_suffix(int64_t(recurrent_backward_lanes(K)) * kRecurrentBackwardRowsPerLane);
}

namespace {
const char* recurrent_form_name(RecurrentForm f) {
  switch (f) {
    case RecurrentForm::decode: return "decode";
    case RecurrentForm::short_seq: return "short";
    case RecurrentForm::long_seq: return "long";
    case RecurrentForm::automatic: break;
  }
  return "auto";
}
}  // namespace

std::vector<PlanStage> recurrent_plan_stages() {
  PlanStage form{"form", {}}, backward{"backward", {}};
  for (RecurrentForm f : {RecurrentForm::decode, RecurrentForm::short_seq, RecurrentForm::long_seq})
    for (int k : {64, 128, 256}) form.options.push_back({recurrent_form_name(f) + k_suffix(k), kAllDtypes});
  for (int k : {64, 128, 256}) backward.options.push_back({recurrent_backward_option(k), kAllDtypes});
  return {form, backward};
}

PlanChoice recurrent_plan(const GdnShape& s, const std::string& request, PlanPasses passes) {
  const std::vector<PlanStage> stages = recurrent_plan_stages();
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  const std::vector<std::string> tokens = split_plan_request(request);
  const std::string token = requested_option(tokens, stages[0]);
  const std::string backward_token = requested_option(tokens, stages[1]);
  if (!passes.forward && !token.empty()) return refuse("--plan " + token + ": --pass bwd runs no forward kernel");
  if (!passes.backward && !backward_token.empty())
    return refuse("--plan " + backward_token + ": the backward runs with --pass bwd or fwdbwd only");
  if (passes.forward) {
    RecurrentForm forced = RecurrentForm::automatic;
    for (RecurrentForm f : {RecurrentForm::decode, RecurrentForm::short_seq, RecurrentForm::long_seq})
      if (!token.empty() && plan_token_matches(token, recurrent_form_name(f) + k_suffix(recurrent_k_bucket(s.K))))
        forced = f;
    if (!token.empty() && forced == RecurrentForm::automatic)
      return refuse("--plan " + token + ": K = " + std::to_string(s.K) + " takes the k" +
                    std::to_string(recurrent_k_bucket(s.K)) + " instances");
    if (forced == RecurrentForm::decode && s.T > kRecurrentDecodeMaxT)
      return refuse("--plan decode: the decode kernel takes T <= 8");
    c.options.push_back(recurrent_form_name(recurrent_form(s, forced)) + k_suffix(recurrent_k_bucket(s.K)));
  }
  if (passes.backward) {
    const std::string option = recurrent_backward_option(s.K);
    if (forced_elsewhere(backward_token, option))
      return refuse("--plan " + backward_token + ": K = " + std::to_string(s.K) + " takes " + option);
    c.options.push_back(option);
  }
  return c;
}

// ---- chunked

std::vector<PlanStage> chunked_plan_stages() {
  PlanStage chunk{"chunk", {}}, scan{"scan", {}};
  for (int c : {16, 32, 64}) chunk.options.push_back({"c" + std::to_string(c), kAllDtypes});
  for (int k : {64, 128, 256}) scan.options.push_back({"scan" + k_suffix(k), kAllDtypes});
  return {chunk, scan};
}

PlanChoice chunked_plan(const GdnShape& s, int chunk, const std::string& request) {
  const std::vector<PlanStage> stages = chunked_plan_stages();
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  c.options = {"c" + std::to_string(chunk), "scan" + k_suffix(recurrent_k_bucket(s.K))};
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string token = requested_option(split_plan_request(request), stages[i]);
    if (forced_elsewhere(token, c.options[i]))
      return refuse("--plan " + token + ": chunked has one plan per shape (" + c.name() + " here)");
  }
  return c;
}

// ---- wy_ut's scan

namespace {
constexpr int64_t kWyUtChunkSize = 64, kWyUtValueBlock = 32;
int64_t chunks_per_group(int64_t N, int64_t G) { return (N + G - 1) / G; }
int64_t groups_with_chunks(int64_t N, int64_t G) { return (N + chunks_per_group(N, G) - 1) / chunks_per_group(N, G); }
int64_t resident_for_k(const PlanDevice& dev, int64_t K) {
  return dev.wy_ut_scan_resident[K <= 64 ? 0 : K <= 128 ? 1 : 2];
}
const char* scan_form_name(int64_t G) { return G <= 1 ? "plain" : G == 2 ? "two_level_pair" : "two_level"; }

// The scan stage's options: the three forms at each K, and where `with_output` the plain scan
// with the output beside it (K <= 128).
std::vector<PlanOption> scan_options(std::initializer_list<int> Ks, bool with_output) {
  std::vector<PlanOption> out;
  for (const char* form : {"plain", "two_level_pair", "two_level"})
    for (int k : Ks) out.push_back({form + k_suffix(k), k16BitDtypes});
  if (with_output) {
    for (int k : Ks)
      if (k <= 128) out.push_back({"plain_with_output" + k_suffix(k), k16BitDtypes});
    for (int k : Ks)
      if (k <= 128) out.push_back({"wgmma_chain" + k_suffix(k), k16BitDtypes});
  }
  return out;
}

// The scan stage of wy_ut, unfused_conv and fused_conv: the request's form, else the model's.
// `output`: where wy_ut's output runs (nullptr: fused_conv, whose output is always separate).
PlanChoice scan_choice(const GdnShape& s, const std::string& token, const PlanDevice& dev, int64_t& groups,
                       WyUtOutput* output) {
  const int64_t N = wy_ut_chunks(s);
  const int64_t model = wy_ut_scan_groups(s, 0, resident_for_k(dev, s.K));
  int64_t G = model;
  WyUtOutput forced = WyUtOutput::automatic;
  if (!token.empty()) forced = WyUtOutput::separate;
  if (output && token.rfind("wgmma_chain", 0) == 0) {
    if (!wy_ut_wgmma_chain_fits(s, 1))
      return refuse("--plan " + token + ": the wgmma chain takes K in {64, 128} and V a multiple of 64");
    if (!plan_token_matches(token, "wgmma_chain" + k_suffix(s.K)))
      return refuse("--plan " + token + ": K = " + std::to_string(s.K) + " takes the k" + std::to_string(s.K) +
                    " instances");
    if (!dev.sm90a) return refuse("--plan " + token + ": the wgmma chain needs an sm_90 device");
    groups = 1;
    *output = WyUtOutput::wgmma_chain;
    PlanChoice c;
    c.options = {"wgmma_chain" + k_suffix(s.K)};
    return c;
  }
  if (output && token.rfind("plain_with_output", 0) == 0) {
    if (s.K > 128) return refuse("--plan " + token + ": the output beside the scan takes K <= 128");
    if (!plan_token_matches(token, "plain_with_output" + k_suffix(s.K)))
      return refuse("--plan " + token + ": K = " + std::to_string(s.K) + " takes the k" + std::to_string(s.K) +
                    " instances");
    G = 1;
    forced = WyUtOutput::in_scan;
  } else if (!token.empty()) {
    if (plan_token_matches(token, "plain" + k_suffix(s.K))) G = 1;
    else if (plan_token_matches(token, "two_level_pair" + k_suffix(s.K))) G = 2;
    else if (plan_token_matches(token, "two_level" + k_suffix(s.K))) G = model >= 3 ? model : std::min<int64_t>(4, N);
    else return refuse("--plan " + token + ": K = " + std::to_string(s.K) + " takes the k" + std::to_string(s.K) + " instances");
    if (G > 1) G = wy_ut_scan_groups(s, G, 0);
    const bool pair = plan_token_matches(token, "two_level_pair" + k_suffix(s.K));
    if ((pair && G != 2) || (!pair && token.rfind("two_level", 0) == 0 && G < 3))
      return refuse("--plan " + token + ": " + std::to_string(N) + " chunks of 64 are too few for it (" +
                    (pair ? "2" : "3") + " groups of chunks)");
  }
  groups = G;
  const bool in_scan = output && wy_ut_output(s, G, forced) == WyUtOutput::in_scan;
  if (output) *output = in_scan ? WyUtOutput::in_scan : WyUtOutput::separate;
  PlanChoice c;
  c.options = {(in_scan ? std::string("plain_with_output") : std::string(scan_form_name(G))) + k_suffix(s.K)};
  if (G > 1) c.detail = "G=" + std::to_string(G);
  return c;
}
}  // namespace

bool wy_ut_output_in_scan_fits(const GdnShape& s, int64_t groups) { return s.K <= 128 && groups == 1; }
bool wy_ut_wgmma_chain_fits(const GdnShape& s, int64_t groups) {
  return (s.K == 64 || s.K == 128) && s.V >= 64 && s.V % 64 == 0 && groups == 1;
}

WyUtOutput wy_ut_output(const GdnShape& s, int64_t groups, WyUtOutput forced) {
  if (forced != WyUtOutput::automatic) return forced;
  // Automatic: beside the scan for 64 < K <= 128, 15-19% faster at T = 1K..64K; at K <= 64 the
  // separate output is 3-4% faster (docs/log/runs-112-.md, run 116).
  return wy_ut_output_in_scan_fits(s, groups) && s.K > 64 ? WyUtOutput::in_scan : WyUtOutput::separate;
}

int64_t wy_ut_chunks(const GdnShape& s) { return (s.T + kWyUtChunkSize - 1) / kWyUtChunkSize; }

int64_t wy_ut_scan_groups_model(const GdnShape& s, int64_t resident_blocks) {
  if (resident_blocks < 1 || s.B < 1 || s.HV < 1 || s.K < kWyUtValueBlock || s.V < kWyUtValueBlock || s.T < 1)
    return 1;
  const int64_t N = wy_ut_chunks(s), heads = s.B * s.HV, value = s.V / kWyUtValueBlock,
                transition = s.K / kWyUtValueBlock;
  auto waves = [&](int64_t blocks) { return (blocks + resident_blocks - 1) / resident_blocks; };
  const int64_t plain = waves(value * heads) * N;
  int64_t best = plain, best_groups = 1;
  for (int64_t G = 3; G <= 32 && G <= N / 8; ++G) {
    if (groups_with_chunks(N, G) != G) continue;  // an empty group: a smaller G has the same steps
    const int64_t per_group = chunks_per_group(N, G);
    const int64_t pass1 = waves(((G - 1) * value + (G - 2) * transition) * heads);
    const int64_t pass3 = waves((G - 1) * value * heads);
    // Steps: both passes' waves, the combine (~1 step a group) and its and pass 3's launches (~2).
    const int64_t cost = (pass1 + pass3) * per_group + (G - 2) + 2;
    if (cost < best) best = cost, best_groups = G;
  }
  return 5 * best <= 4 * plain ? best_groups : 1;
}

int64_t wy_ut_scan_groups(const GdnShape& s, int64_t requested, int64_t resident_blocks) {
  if (s.B < 1 || s.T < 1) return 1;
  const int64_t N = wy_ut_chunks(s);
  int64_t G = requested > 0 ? requested : wy_ut_scan_groups_model(s, resident_blocks);
  G = std::min({G, N, 65535 / s.B + 1});
  return G <= 1 ? 1 : groups_with_chunks(N, G);
}

int64_t wy_ut_largest_scan_groups(const GdnShape& s) {
  // The model tries G up to min(32, N / 8); a forced two_level takes min(4, N) below that.
  const int64_t N = wy_ut_chunks(s);
  return wy_ut_scan_groups(s, std::max<int64_t>(4, std::min<int64_t>(32, N / 8)), 0);
}

std::vector<PlanStage> wy_ut_plan_stages() { return {PlanStage{"scan", scan_options({64, 128, 256}, true)}}; }

PlanChoice wy_ut_plan(const GdnShape& s, const std::string& request, const PlanDevice& dev, int64_t& groups,
                      WyUtOutput& output) {
  const std::vector<PlanStage> stages = wy_ut_plan_stages();
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  return scan_choice(s, requested_option(split_plan_request(request), stages[0]), dev, groups, &output);
}

std::vector<PlanStage> fused_conv_plan_stages() {
  return {PlanStage{"output", {{"pipelined_k64", k16BitDtypes}, {"pipelined_k128", k16BitDtypes},
                               {"per_chunk", k16BitDtypes}}},
          PlanStage{"scan", scan_options({64, 128}, false)}};
}

FusedConvOutput fused_conv_output(const GdnShape& s, FusedConvOutput forced) {
  if (forced != FusedConvOutput::automatic) return forced;
  return s.K <= 128 && s.V <= 128 ? FusedConvOutput::pipelined : FusedConvOutput::per_chunk;
}

PlanChoice fused_conv_plan(const GdnShape& s, const std::string& request, const PlanDevice& dev, int64_t& groups,
                           FusedConvOutput& output) {
  const std::vector<PlanStage> stages = fused_conv_plan_stages();
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  const std::vector<std::string> tokens = split_plan_request(request);
  const std::string out_token = requested_option(tokens, stages[0]);
  FusedConvOutput forced = FusedConvOutput::automatic;
  if (!out_token.empty()) forced = out_token == "per_chunk" ? FusedConvOutput::per_chunk : FusedConvOutput::pipelined;
  output = fused_conv_output(s, forced);
  if (output == FusedConvOutput::pipelined && !(s.K <= 128 && s.V <= 128))
    return refuse("--plan " + out_token + ": the pipelined output takes K, V <= 128");
  const std::string out_name = output == FusedConvOutput::per_chunk ? "per_chunk" : "pipelined" + k_suffix(s.K);
  if (forced_elsewhere(out_token, out_name))
    return refuse("--plan " + out_token + ": K = " + std::to_string(s.K) + " takes " + out_name);
  PlanChoice scan = scan_choice(s, requested_option(tokens, stages[1]), dev, groups, nullptr);
  if (!scan.unsupported.empty()) return scan;
  scan.options.insert(scan.options.begin(), out_name);
  return scan;
}

// ---- fused_decode

int64_t decode_lane_blocks(const GdnShape& s, int warps) {
  // Grid (column groups, heads over y and z): y at most 65535, z the rest rounded up.
  const int64_t groups = (s.V + 31) / 32, w = std::min<int64_t>(groups, warps);
  const int64_t heads = s.B * s.HV, y = std::min<int64_t>(heads, 65535), z = (heads + y - 1) / y;
  return (groups + w - 1) / w * y * z;
}

int64_t decode_fe_vec_blocks(const GdnShape& s) {
  constexpr int kThreads = 128, kChannels = 8;
  auto blocks = [&](int64_t rows, int64_t D) {
    int shift = 0;
    while ((int64_t(1) << shift) * kChannels < D) ++shift;
    const int64_t per_block = kThreads >> shift;
    return (rows + per_block - 1) / per_block;
  };
  return blocks(s.B * 2 * s.H, s.K) + blocks(s.B * s.HV, s.V);
}

bool decode_block_async(const GdnShape& s, bool state_bf16, bool pool_aligned) {
  return s.V % (state_bf16 ? 8 : 4) == 0 && pool_aligned;
}

bool decode_state_full(const GdnShape& s, DecodeStateKernel k) {
  switch (k) {
    case DecodeStateKernel::lane64: return s.K == 64;
    case DecodeStateKernel::lane_one_wave:
    case DecodeStateKernel::quad:
    case DecodeStateKernel::lane_narrow:
    case DecodeStateKernel::lane_wide:
    case DecodeStateKernel::split: return s.K == 128;
    default: return true;
  }
}

namespace {

}  // namespace

const char* decode_state_kernel_name(DecodeStateKernel k) {
  switch (k) {
    case DecodeStateKernel::block: return "block";
    case DecodeStateKernel::quad_fe: return "quad_fe";
    case DecodeStateKernel::lane_one_wave: return "lane_one_wave";
    case DecodeStateKernel::quad: return "quad";
    case DecodeStateKernel::lane_narrow: return "lane_narrow";
    case DecodeStateKernel::lane_wide: return "lane_wide";
    case DecodeStateKernel::lane64: return "lane64";
    case DecodeStateKernel::split: return "split";
    case DecodeStateKernel::stream: return "stream";
    case DecodeStateKernel::automatic: break;
  }
  return "auto";
}
const char* decode_fe_kernel_name(DecodeFeKernel k) {
  switch (k) {
    case DecodeFeKernel::fused: return "fused";
    case DecodeFeKernel::vector: return "vector";
    case DecodeFeKernel::rows: return "rows";
    case DecodeFeKernel::row: return "row";
    case DecodeFeKernel::automatic: break;
  }
  return "auto";
}

namespace {

const char* decode_state_name(DecodeStateKernel k) { return decode_state_kernel_name(k); }
const char* decode_fe_name(DecodeFeKernel k) { return decode_fe_kernel_name(k); }

// The state kernels a pool's plan can choose.
std::vector<DecodeStateKernel> decode_state_kernels(bool state_bf16) {
  if (state_bf16) return {DecodeStateKernel::block, DecodeStateKernel::split, DecodeStateKernel::stream};
  return {DecodeStateKernel::block,       DecodeStateKernel::quad_fe,    DecodeStateKernel::lane_one_wave,
          DecodeStateKernel::quad,        DecodeStateKernel::lane_narrow, DecodeStateKernel::lane_wide,
          DecodeStateKernel::lane64};
}

// The option name of a state kernel on this shape: its instance (_partial where K is below the
// instance's K, _sync for the block kernel without cp.async).
std::string decode_state_option(const DecodePlanInputs& in, DecodeStateKernel k) {
  std::string name = decode_state_name(k);
  if (k == DecodeStateKernel::block && !decode_block_async(in.shape, in.state_bf16, in.pool_aligned)) name += "_sync";
  if (!decode_state_full(in.shape, k)) name += "_partial";
  return name;
}

std::string decode_fe_option(const DecodePlanInputs& in, DecodeFeKernel k) {
  if (k == DecodeFeKernel::vector) return in.shape.T == 1 ? "vector_t1" : "vector_t4";
  return decode_fe_name(k);
}

// What a state kernel needs of the problem (nullptr: it can run it).
const char* decode_state_cannot(const DecodePlanInputs& in, DecodeStateKernel k) {
  const GdnShape& s = in.shape;
  const bool float_pool = !in.state_bf16;
  switch (k) {
    case DecodeStateKernel::block: return nullptr;
    case DecodeStateKernel::quad_fe:
      if (!float_pool || in.dtype == DType::f32 || s.T != 1 || s.H != s.HV || s.K != 128 || s.V != 128 ||
          !in.pool_aligned || !in.fe_aligned)
        return "quad_fe takes a float32 pool, 16-bit inputs, T = 1, H = HV, K = V = 128, aligned tensors";
      return nullptr;
    case DecodeStateKernel::quad:
      if (!float_pool || s.K <= 64 || s.K > 128 || s.V % 4 != 0 || !in.pool_aligned)
        return "quad takes a float32 pool, 64 < K <= 128, V a multiple of 4";
      return nullptr;
    case DecodeStateKernel::lane_one_wave:
    case DecodeStateKernel::lane_wide:
      if (!float_pool || s.K <= 64 || s.K > 128) return "the 128-row lane kernels take a float32 pool, 64 < K <= 128";
      return nullptr;
    case DecodeStateKernel::lane_narrow:
      if (!float_pool || s.K <= 64 || s.K > 128 || s.T != 1)
        return "lane_narrow takes a float32 pool, 64 < K <= 128, T = 1";
      return nullptr;
    case DecodeStateKernel::lane64:
      if (!float_pool || s.K > 64) return "lane64 takes a float32 pool, K <= 64";
      return nullptr;
    case DecodeStateKernel::split:
      if (float_pool || s.K > 128) return "split takes a bf16 pool, K <= 128";
      return nullptr;
    case DecodeStateKernel::stream:
      if (float_pool || s.K != 128 || s.V > 128 || (s.K * s.V * 2) % 16 != 0 || !in.pool_aligned)
        return "stream takes a bf16 pool, K = 128, V <= 128";
      return nullptr;
    case DecodeStateKernel::automatic: break;
  }
  return "no such state kernel";
}

const char* decode_fe_cannot(const DecodePlanInputs& in, DecodeStateKernel state, DecodeFeKernel k) {
  const GdnShape& s = in.shape;
  if (state == DecodeStateKernel::quad_fe) return k == DecodeFeKernel::fused ? nullptr : "quad_fe runs the front end itself";
  switch (k) {
    case DecodeFeKernel::fused: return "only quad_fe fuses the front end";
    case DecodeFeKernel::vector:
      if (in.dtype == DType::f32 || s.K % 8 != 0 || s.V % 8 != 0 || s.T > kDecodeFeVecMaxTokens || !in.fe_aligned)
        return "the vector front end takes 16-bit inputs, K and V multiples of 8, T <= 4, aligned tensors";
      return nullptr;
    case DecodeFeKernel::rows:
      if (s.T != 1) return "the rows front end takes T = 1";
      return nullptr;
    case DecodeFeKernel::row: return nullptr;
    case DecodeFeKernel::automatic: break;
  }
  return "no such front-end kernel";
}

}  // namespace

DecodePlan decode_plan(const DecodePlanInputs& in, const PlanDevice& dev, DecodePlan forced, std::string* why) {
  const GdnShape& s = in.shape;
  DecodePlan plan;
  plan.state = forced.state;
  if (plan.state != DecodeStateKernel::automatic) {
    if (const char* no = decode_state_cannot(in, plan.state)) {
      if (why) *why = no;
      return DecodePlan{};
    }
    // A device that was asked and holds no stream block at this T (its shared memory grows with T).
    if (plan.state == DecodeStateKernel::stream && dev.sms > 0 && dev.decode_stream_per_sm < 1) {
      if (why) *why = "the stream kernel fits no block per SM at this T on this device";
      return DecodePlan{};
    }
  } else if (s.K > 128) {
    plan.state = DecodeStateKernel::block;
  } else if (in.state_bf16) {
    // The stream where its persistent blocks have enough slices to walk: kDecodeStreamMinUnitsPerSm per SM.
    const bool stream = !decode_state_cannot(in, DecodeStateKernel::stream) && dev.decode_stream_per_sm >= 1 &&
                        s.B * s.HV >= int64_t(kDecodeStreamMinUnitsPerSm) * dev.sms;
    plan.state = stream ? DecodeStateKernel::stream : DecodeStateKernel::split;
  } else if (s.K <= 64) {
    plan.state = DecodeStateKernel::lane64;
  } else if (!decode_state_cannot(in, DecodeStateKernel::quad_fe)) {
    plan.state = DecodeStateKernel::quad_fe;  // one launch, in any number of waves
  } else if (decode_lane_blocks(s, kDecodeOneWaveWarps) <= int64_t(kDecodeOneWaveBlocksPerSm) * dev.sms) {
    plan.state = DecodeStateKernel::lane_one_wave;
  } else if (!decode_state_cannot(in, DecodeStateKernel::quad)) {
    plan.state = DecodeStateKernel::quad;
  } else {
    plan.state = s.T == 1 ? DecodeStateKernel::lane_narrow : DecodeStateKernel::lane_wide;
  }

  plan.fe = forced.fe;
  if (plan.fe != DecodeFeKernel::automatic) {
    if (const char* no = decode_fe_cannot(in, plan.state, plan.fe)) {
      if (why) *why = no;
      return DecodePlan{};
    }
  } else if (plan.state == DecodeStateKernel::quad_fe) {
    plan.fe = DecodeFeKernel::fused;
  } else if (!decode_fe_cannot(in, plan.state, DecodeFeKernel::vector) && 2 * decode_fe_vec_blocks(s) >= dev.sms) {
    // A grid of at least half the SMs in blocks: below that the one-row kernel is as fast.
    plan.fe = DecodeFeKernel::vector;
  } else if (s.T == 1 && (2 * s.H + s.HV) * s.B > 2 * dev.decode_fe_row_resident) {
    // Four batch rows per block where one row per block would need more than two waves.
    plan.fe = DecodeFeKernel::rows;
  } else {
    plan.fe = DecodeFeKernel::row;
  }
  return plan;
}

std::vector<PlanStage> decode_plan_stages(bool state_bf16) {
  PlanStage state{"state", {}}, fe{"frontend", {}};
  for (DecodeStateKernel k : decode_state_kernels(state_bf16)) {
    const std::vector<DType>& dts = k == DecodeStateKernel::quad_fe ? k16BitDtypes : kAllDtypes;
    const std::string name = decode_state_name(k);
    state.options.push_back({name, dts});
    if (k == DecodeStateKernel::block) state.options.push_back({name + "_sync", dts});
    if (!decode_state_full(GdnShape{1, 1, 1, 1, 1, 1}, k)) state.options.push_back({name + "_partial", dts});
  }
  if (!state_bf16) fe.options.push_back({"fused", k16BitDtypes});
  fe.options.push_back({"vector_t1", k16BitDtypes});
  fe.options.push_back({"vector_t4", k16BitDtypes});
  fe.options.push_back({"rows", kAllDtypes});
  fe.options.push_back({"row", kAllDtypes});
  return {state, fe};
}

PlanChoice decode_plan_choice(const DecodePlanInputs& in, const std::string& request, const PlanDevice& dev,
                              DecodePlan& plan) {
  const std::vector<PlanStage> stages = decode_plan_stages(in.state_bf16);
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  const std::vector<std::string> tokens = split_plan_request(request);
  const std::string state_token = requested_option(tokens, stages[0]), fe_token = requested_option(tokens, stages[1]);
  DecodePlan forced;
  for (DecodeStateKernel k : decode_state_kernels(in.state_bf16))
    if (!state_token.empty() && state_token.rfind(decode_state_name(k), 0) == 0 &&
        plan_token_matches(state_token, decode_state_option(in, k)))
      forced.state = k;
  for (DecodeFeKernel k : {DecodeFeKernel::fused, DecodeFeKernel::vector, DecodeFeKernel::rows, DecodeFeKernel::row})
    if (!fe_token.empty() && plan_token_matches(fe_token, decode_fe_option(in, k))) forced.fe = k;
  if (!state_token.empty() && forced.state == DecodeStateKernel::automatic)
    return refuse("--plan " + state_token + ": this shape takes another instance of it");
  if (!fe_token.empty() && forced.fe == DecodeFeKernel::automatic)
    return refuse("--plan " + fe_token + ": this shape takes another instance of it");
  std::string why;
  plan = decode_plan(in, dev, forced, &why);
  if (!why.empty()) return refuse("--plan " + request + ": " + why);
  c.options = {decode_state_option(in, plan.state), decode_fe_option(in, plan.fe)};
  return c;
}

// ---- attention

std::vector<PlanStage> attn_flash_plan_stages() {
  PlanStage st{"head_dim", {}};
  for (int d : {64, 128, 256}) st.options.push_back({"d" + std::to_string(d), k16BitDtypes});
  return {st};
}

PlanChoice attn_flash_plan(const GdnShape& s, const std::string& request) {
  const std::vector<PlanStage> stages = attn_flash_plan_stages();
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  c.options = {"d" + std::to_string(s.K)};
  const std::string token = requested_option(split_plan_request(request), stages[0]);
  if (forced_elsewhere(token, c.options[0])) return refuse("--plan " + token + ": K = " + std::to_string(s.K));
  return c;
}

int64_t attn_decode_splits(int64_t B, int64_t H, int64_t L, int sms) {
  constexpr int64_t kBlocksPerSm = 8, kMinKeysPerSplit = 256, kMaxSplits = 1024;
  const int64_t pairs = B * H > 0 ? B * H : 1;
  const int64_t target_blocks = int64_t(sms > 0 ? sms : 1) * kBlocksPerSm * 4;  // about four waves
  int64_t splits = (target_blocks + pairs - 1) / pairs;
  splits = std::min({splits, (L + kMinKeysPerSplit - 1) / kMinKeysPerSplit, kMaxSplits});
  return splits < 1 ? 1 : splits;
}

std::vector<PlanStage> attn_decode_plan_stages() {
  PlanStage split{"split", {}};
  for (int d : {64, 128, 256}) split.options.push_back({"split_d" + std::to_string(d), k16BitDtypes});
  return {split, PlanStage{"combine", {{"one_split", k16BitDtypes}, {"combine", k16BitDtypes}}}};
}

PlanChoice attn_decode_plan(const GdnShape& s, int64_t context, const std::string& request, const PlanDevice& dev) {
  const std::vector<PlanStage> stages = attn_decode_plan_stages();
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  const int64_t splits = attn_decode_splits(s.B, s.HV, context + s.T, dev.sms);
  c.options = {"split_d" + std::to_string(s.K), splits > 1 ? "combine" : "one_split"};
  c.detail = "splits=" + std::to_string(splits);
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string token = requested_option(split_plan_request(request), stages[i]);
    if (forced_elsewhere(token, c.options[i]))
      return refuse("--plan " + token + ": the split count follows the cache length and the device");
  }
  return c;
}

std::vector<PlanStage> attn_naive_plan_stages() { return {PlanStage{"gemm", {{"cublas", kAllDtypes}}}}; }

PlanChoice attn_naive_plan(const std::string& request) {
  const std::vector<PlanStage> stages = attn_naive_plan_stages();
  PlanChoice c;
  if (!request_known(request, stages, c)) return c;
  c.options = {"cublas"};
  return c;
}
