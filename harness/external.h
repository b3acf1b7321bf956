// External implementations (FLA's Triton kernels, PyTorch SDPA, ...) judged by the harness:
//   gdnbench dump  [problem options] --out DIR   one problem's inputs as .npy + manifest.json
//   gdnbench check DIR --o o.npy [--ht hT.npy]   the float64 reference of those inputs, the same
//                                                 metrics and tolerance table; PASS/FAIL, a CSV row
//   gdnbench check DIR --dq dq.npy ...           a backward's gradients against the float64 backward
//
// The dump directory (format "gdnbench-dump", version 1):
//   manifest.json  shape (B T H HV K V), dtype, scale, seed, gate/delta/h0, distributions, file names
//   q.npy k.npy    [B, T, H, K]   float32 (<f4) holding values exactly representable in `dtype`:
//   v.npy          [B, T, HV, V]  cast them to `dtype` (bf16/fp16) and no rounding happens
//   g.npy          [B, T, HV]     float32 log decay (only when gate is on)
//   beta.npy       [B, T, HV]     float32
//   h0.npy         [B, HV, K, V]  float32, K x V state (only when h0 is on)
// A backward pass ("pass": "bwd" or "fwdbwd"; dump --pass bwd) adds the upstream gradients of the
// loss L = sum(dO .* o) + sum(dhT .* hT), drawn from the seed as the harness's backwards get them:
//   dO.npy         [B, T, HV, V]  float32 holding values exact in `dtype`
//   dhT.npy        [B, HV, K, V]  float32 (only with "dht": true; dump --dht off: L reads no hT)
// and `check --dq --dk --dv --dg --dbeta --dh0` takes the gradients in the inputs' layouts (dq, dk
// [B, T, H, K], dv [B, T, HV, V], dg, dbeta [B, T, HV], dh0 [B, HV, K, V]), any float type.
// A front-end problem ("frontend": true; dump --frontend on) has instead of q, k, v, g, beta the
// raw projections and front-end parameters of harness/frontend_inputs.h: x_q.npy x_k.npy
// [B, T, H*K], x_v.npy [B, T, HV*V], a.npy b.npy [B, T, HV], A_log.npy dt_bias.npy [HV],
// w_q.npy w_k.npy [H*K, 4], w_v.npy [HV*V, 4], bias_q.npy bias_k.npy [H*K], bias_v.npy [HV*V],
// and with h0 on cache_q.npy cache_k.npy [B, H*K, 3], cache_v.npy [B, HV*V, 3] (and h0.npy).
// float32 storage was chosen over bf16 bits so any consumer (NumPy, torch) reads the files
// without a bf16 type, losslessly. `check` reads these files back (what the external code saw),
// never regenerates them, and accepts o as <f4, <f8, <f2 or <u2 (bf16 bits), hT as any float type.
#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>

#include "harness/inputs.h"
#include "harness/problem.h"
#include "harness/reference_sample.h"
#include "harness/result.h"

// Writes the inputs of `p` (make_inputs) and the manifest into `dir` (created). Throws
// std::runtime_error when it cannot write.
void dump_problem(const Problem& p, const std::string& dir);

// A dump directory read back: the problem it describes and the inputs in its files.
struct DumpedProblem {
  Problem problem;
  HostInputs inputs;
};
// Throws UsageError (harness/io/errors.h) with one line when the directory, manifest or a file is wrong.
DumpedProblem read_dump(const std::string& dir);
// The manifest alone, from its text (what read_dump reads through); `manifest` names the file in
// the errors. Throws UsageError as read_dump does (also on JSON nested deeper than 64 levels, which
// the JSON parser would recurse through). files: "q", "k", "v", "g", "beta", "h0" and the front-end
// keys (x_q, ..., cache_v) to the names the manifest gives ("" where it gives none).
struct DumpManifest {
  Problem problem;
  std::map<std::string, std::string> files;
};
DumpManifest parse_dump_manifest(const std::string& text, const std::string& manifest);

struct CheckOptions {
  std::string dir;
  // What is judged: the forward's o (and hT), the gradients of the backward, or both. A backward
  // check needs a dump of a backward pass (its dO, dhT) and one gradient at least.
  Pass pass = Pass::fwd;
  std::string o_path, ht_path;  // ht_path empty: hT not judged; o_path: required with the forward
  bool ht_vk = false;           // hT stored as [B, HV, V, K] (V x K state)
  std::string ref_o_path;       // float64 o computed elsewhere (large attention problems)
  // Front-end dumps: the final q, k, v conv caches ([B, channels, 3] each), or empty: not judged.
  std::vector<std::string> cache_paths;
  // The backward's gradients (kGrads order: --dq --dk --dv --dg --dbeta --dh0) in gdnbench's layouts,
  // each a .npy path or empty: not judged (and named in the row's reason).
  std::array<std::string, kGradCount> grad_paths;
  std::string variant = "external";
  std::string family = "gdn";   // gdn | attention
  Precision precision = Precision::tensor_core;
  ToleranceProfile tolerances = ToleranceProfile::builtin();  // --tolerances
  std::string device = "external";
  int threads = 1;
  // --attention-ref: the float64 attention backward on every head (full), on a sample of whole
  // heads (sampled), or sampled past its budget (automatic), as verify's --attention-ref.
  RefMode attention_ref = RefMode::automatic;
};
// Judges the external output against the float64 reference. Throws UsageError on bad files.
ResultRow check_external(const CheckOptions& opt);

// The sub-commands; args are those after "dump" / "check". `meta` carries the run metadata for
// the CSV row that `check --csv` appends. Throw UsageError on bad use.
int run_dump(const std::vector<std::string>& args);
int run_check(const std::vector<std::string>& args, RunMeta meta);
std::string dump_usage_text();
std::string check_usage_text();
