// Launch plans: each CUDA variant's choice of kernels for a problem, as a pure host function of
// the shape, the dtype and a few facts of the device. The launchers of kernels/<variant>/ call these
// functions when a plan is left automatic; the harness calls the same functions, forces a plan
// with --plan, records the plan of every row (the CSV's plan column) and enumerates every plan a
// variant can choose (tests/test_plans.cpp proves the gate reaches each one). No preprocessor
// macro chooses a kernel. Host-only: no CUDA headers.
//
// A plan is one option per stage; stages are separate launches (or separate template
// parameters) that a bug can hide in independently, so the gate must reach every option of every
// stage for every input dtype the option takes. Option names carry the template instance where
// one kernel has several (`two_level_k256`, `lane_one_wave_partial`), so that "reached" means
// "that machine code ran".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"
#include "reference/gdn_shape.h"

struct PlanOption {
  std::string name;
  std::vector<DType> dtypes;  // input dtypes that can take it
};
struct PlanStage {
  std::string name;
  std::vector<PlanOption> options;
};

// A chosen plan: one option name per stage that runs (in the order of the variant's stages: a
// forward row runs no backward stage, a backward row no forward one; option names are distinct
// across a variant's stages, so each names its stage), an optional detail (a size the plan fixed,
// such as the scan's groups), or the reason a forced plan cannot run this problem.
struct PlanChoice {
  std::vector<std::string> options;
  std::string detail;
  std::string unsupported;  // non-empty: the forced plan cannot run this problem
  std::string name() const;  // "lane_narrow/row", "two_level_k128 (G=32)"
};

// A --plan request: option names (or their prefixes before "_k<digits>"/"_partial"/"_sync"),
// separated by '/', each naming one stage's option; stages not named are chosen as usual.
// "auto" or "" requests nothing.
std::vector<std::string> split_plan_request(const std::string& request);
// Whether a request token names the option (`two_level` names `two_level_k128`).
bool plan_token_matches(const std::string& token, const std::string& option);

// What the plans read of the device: its SMs and the occupancy of the kernels whose grids decide.
struct PlanDevice {
  int sms = 0;
  // wy_ut's scan state kernel, blocks resident at once (SMs x blocks per SM), by K 64, 128, 256.
  int64_t wy_ut_scan_resident[3] = {0, 0, 0};
  bool sm90a = false;  // compute capability 9.0: the wgmma kernels run
  // fused_decode: blocks of the one-row front-end kernel resident at once at this shape's block
  // size; blocks of the stream state kernel per SM at this T (0: it cannot run).
  int64_t decode_fe_row_resident = 0;
  int decode_stream_per_sm = 0;
};

// Which passes a row runs (the harness's --pass): the stages of the other pass do not run.
struct PlanPasses {
  bool forward = true;
  bool backward = false;
};

// ---- recurrent (kernels/recurrent/recurrent.cu): the T form (decode T <= 8, short, long from T = 256) and
// the K bucket of its register tiles (64, 128, 256). Its backward (kernels/recurrent_backward/) is a
// stage of its own: one instance per K bucket, each value column of S and dS in bucket / 16 lanes
// of 16 rows.
enum class RecurrentForm : int8_t { automatic, decode, short_seq, long_seq };
constexpr int64_t kRecurrentDecodeMaxT = 8;
constexpr int64_t kRecurrentLongFrom = 256;
constexpr int kRecurrentBackwardRowsPerLane = 16;
RecurrentForm recurrent_form(const GdnShape& s, RecurrentForm forced);
int recurrent_k_bucket(int64_t K);
int recurrent_backward_lanes(int64_t K);                // 4, 8, 16: the instance the launcher runs
std::string recurrent_backward_option(int64_t K);       // its plan option, "backward_k128"
std::vector<PlanStage> recurrent_plan_stages();         // form, backward
PlanChoice recurrent_plan(const GdnShape& s, const std::string& request, PlanPasses passes);

// ---- chunked (kernels/chunked/chunked.cu): no choice but the template instances of the shape: the
// chunk C of the gamma/UT/WY/output kernels and the K bucket of the scan.
std::vector<PlanStage> chunked_plan_stages();
PlanChoice chunked_plan(const GdnShape& s, int chunk, const std::string& request);

// ---- wy_ut's scan (wy_ut, unfused_conv, fused_conv): the plain sequential scan over chunks
// (G = 1), or the two-level scan over G groups of chunks: G = 2 needs no combine kernel, G >= 3
// runs it. The cost model picks G from the resident blocks; a forced two_level takes the model's
// G where it is >= 3, else min(4, chunks).
int64_t wy_ut_scan_groups_model(const GdnShape& s, int64_t resident_blocks);
// The groups a launch runs: `requested` > 0 as given, else the model's; then at most one per
// chunk, B (G - 1) within the grid's 65535, and the fewest groups holding the same chunks.
int64_t wy_ut_scan_groups(const GdnShape& s, int64_t requested, int64_t resident_blocks);
int64_t wy_ut_chunks(const GdnShape& s);  // ceil(T / 64)
// The most groups any scan plan can take at this shape on any device: the memory checks size the
// workspace with it, so a forced plan that would not fit is SKIPPED before anything is allocated.
int64_t wy_ut_largest_scan_groups(const GdnShape& s);
// Where wy_ut's output runs: its own kernel after the scan (separate), or beside the plain scan
// in one warp-specialised kernel (in_scan: K <= 128 and G = 1; the scan stage's
// plain_with_output option). Automatic: in_scan for 64 < K <= 128 and G = 1, where it is the
// faster (docs/log/runs-112-.md).
// Or, on sm_90a, the chain on warpgroup products (chain_wgmma: the scan and the output in one
// kernel of 64 value columns a block, kernels/wy_ut/chain_wgmma.cuh): K in {64, 128}, V a multiple
// of 64, G = 1; taken only when forced (the scan stage's wgmma_chain option) until it is measured
// the faster.
enum class WyUtOutput : int8_t { automatic, separate, in_scan, wgmma_chain };
bool wy_ut_output_in_scan_fits(const GdnShape& s, int64_t groups);  // K <= 128 and G = 1
bool wy_ut_wgmma_chain_fits(const GdnShape& s, int64_t groups);     // K in {64, 128}, V % 64 = 0, G = 1
WyUtOutput wy_ut_output(const GdnShape& s, int64_t groups, WyUtOutput forced);
std::vector<PlanStage> wy_ut_plan_stages();
// The plan and, in `groups` and `output`, the scan's G and the output's place for the launch
// (GdnParams::scan_groups, GdnParams::wy_ut_output).
PlanChoice wy_ut_plan(const GdnShape& s, const std::string& request, const PlanDevice& dev, int64_t& groups,
                      WyUtOutput& output);
// unfused_conv: the front end (one kernel) then wy_ut: wy_ut's stages.
// fused_conv: the output stage (pipelined at K, V <= 128 in the K's instance; per_chunk otherwise)
// and the scan (K in {64, 128}).
enum class FusedConvOutput : int8_t { automatic, pipelined, per_chunk };
std::vector<PlanStage> fused_conv_plan_stages();
PlanChoice fused_conv_plan(const GdnShape& s, const std::string& request, const PlanDevice& dev, int64_t& groups,
                           FusedConvOutput& output);
FusedConvOutput fused_conv_output(const GdnShape& s, FusedConvOutput forced);

// ---- fused_decode (kernels/decode/): the state kernel and the front-end kernel in front of it.
enum class DecodeStateKernel : int8_t {
  automatic, block, quad_fe, lane_one_wave, quad, lane_narrow, lane_wide, lane64, split, stream
};
enum class DecodeFeKernel : int8_t { automatic, fused, vector, rows, row };
struct DecodePlanInputs {
  GdnShape shape;
  DType dtype = DType::bf16;
  bool state_bf16 = false;
  bool pool_aligned = true;  // the state pool on a 16-byte boundary
  bool fe_aligned = true;    // projections, caches, taps and biases on 16-byte boundaries
};
struct DecodePlan {
  DecodeStateKernel state = DecodeStateKernel::automatic;
  DecodeFeKernel fe = DecodeFeKernel::automatic;
};
// The decode kernels' structural limits, shared with the plan: the lane kernel's one-wave cap
// (LaneOneWave: 4 warps, 2 blocks per SM), the stream's K and slices per SM, the vector front
// end's largest T and grid.
constexpr int kDecodeOneWaveBlocksPerSm = 2;
constexpr int kDecodeOneWaveWarps = 4;
constexpr int kDecodeStreamMinUnitsPerSm = 4;
constexpr int kDecodeFeVecMaxTokens = 4;
int64_t decode_lane_blocks(const GdnShape& s, int warps);  // the lane kernel's grid, in blocks
int64_t decode_fe_vec_blocks(const GdnShape& s);           // the vector front end's grid
// The automatic choice (forced kernels as given where `forced` names them); `why` is set, and the
// plan left automatic, where a forced kernel cannot run the problem.
DecodePlan decode_plan(const DecodePlanInputs& in, const PlanDevice& dev, DecodePlan forced, std::string* why);
const char* decode_state_kernel_name(DecodeStateKernel k);  // "lane_narrow" (no instance suffix)
const char* decode_fe_kernel_name(DecodeFeKernel k);        // "vector", "rows", "row", "fused"
// Whether the block kernel moves the state with cp.async (V a whole number of 16-byte pieces).
bool decode_block_async(const GdnShape& s, bool state_bf16, bool pool_aligned);
// Whether a kernel instance covers K exactly (its _partial option otherwise).
bool decode_state_full(const GdnShape& s, DecodeStateKernel k);
std::vector<PlanStage> decode_plan_stages(bool state_bf16);
PlanChoice decode_plan_choice(const DecodePlanInputs& in, const std::string& request, const PlanDevice& dev,
                              DecodePlan& plan);

// ---- attention baselines: the head-dim instances and, for attn_decode, whether the combine runs.
std::vector<PlanStage> attn_flash_plan_stages();
PlanChoice attn_flash_plan(const GdnShape& s, const std::string& request);
int64_t attn_decode_splits(int64_t B, int64_t H, int64_t L, int sms);
std::vector<PlanStage> attn_decode_plan_stages();
PlanChoice attn_decode_plan(const GdnShape& s, int64_t context, const std::string& request, const PlanDevice& dev);
std::vector<PlanStage> attn_naive_plan_stages();
PlanChoice attn_naive_plan(const std::string& request);
