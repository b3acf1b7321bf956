// The command line and suite files (harness/io/cli.h). Over 600 lines on purpose: one Boost
// options description serves flags, suite keys and grid lines, and the parsers, the case
// expansion and the help texts all read it through the helpers of one anonymous namespace.
#include "harness/io/cli.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <boost/make_shared.hpp>
#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "harness/io/tolerance_file.h"
#include "harness/segments.h"

namespace po = boost::program_options;

namespace {

// Sizes and counts are ints further down (chunk, samples, threads): larger values are refused, not
// truncated. A problem's largest tensor must be addressable, and an invocation's grids may not
// expand beyond kMaxCases (a few lines of a suite can otherwise ask for billions of cases).
constexpr int64_t kMaxValue = 2147483647;
constexpr double kMaxElements = 9007199254740992.0;  // 2^53
constexpr size_t kMaxCases = 100000;

po::options_description option_description() {
  po::options_description d("Options (lists are comma-separated; every list is an axis)");
  auto s = [](const char* def) { return po::value<std::string>()->default_value(def); };
  d.add_options()
      ("help,h", "print this help")
      ("plans", "list: every variant's launch plans, by stage, and (on a GPU) the device facts they read")
      ("suite", po::value<std::string>(), "suite file, or a name in suites/ (default: default)")
      ("grid", po::value<std::vector<std::string>>()->composing(),
       "a further set of flags expanded as its own grid (usually in suite files)")
      ("variants", s("auto"), "variant names, or auto: every variant this machine can run")
      ("dtypes", s("fp32"), "fp32, bf16, fp16")
      ("B", s("1"), "batch sizes")
      ("T", s("256"), "sequence lengths")
      ("seqlens", s("none"), "a packed batch (B = 1, T the total, h0 and hT per sequence, as FLA's cu_seqlens): "
                             "its sequences' lengths (1,63,64,65,1000 or 1024*16: one batch, not an axis), or "
                             "random:N:LO-HI (N lengths uniform in [LO, HI], drawn from the seed); none: not packed. "
                             "--T beside it (on the same grid line, or both on the command line) must be the total")
      ("context", s("0"), "tokens already in the KV cache before the T new ones (attention decode; "
                          "GDN variants ignore it)")
      ("H", s("2"), "q/k heads")
      ("HV", s("same"), "value heads (multiples of H); same: HV = H")
      ("K", s("64"), "key head dims")
      ("V", s("64"), "value head dims")
      ("chunk", s("64"), "chunk sizes (chunked variants only)")
      ("plan", s("auto"), "launch plans to force (gdnbench list --plans names them): auto, or option names "
                          "joined by '/' (e.g. stream/rows, two_level_pair); a variant whose plan cannot run "
                          "the problem gives a SKIPPED row; with --variants auto only the variants that have "
                          "the plan are picked")
      ("segments", s("1"), "GDN forward as R segments of each row on chunk boundaries, the states between them "
                           "exchanged (the one-device form of a context-parallel split; harness/segments.h): "
                           "1 (whole), or up to 64")
      ("gate", s("on"), "on, off (off: no g tensor, DeltaNet)")
      ("delta", s("on"), "on, off (off: gated linear attention)")
      ("h0", s("off"), "on, off (initial state)")
      ("frontend", s("off"), "on, off (on: raw projections and front-end parameters; the variant runs the "
                             "conv, SiLU, L2 norm and gates; gate off and other gate/beta distributions are dropped)")
      ("pass", s("fwd"), "fwd, bwd, fwdbwd: the forward; the backward (every input's gradient from the inputs and "
                         "a seeded dO, against the float64 backward); or both, timed as one region. A variant "
                         "without a backward gives SKIPPED rows for bwd and fwdbwd")
      ("dht", s("on"), "on, off: backward passes also draw dhT, so the loss reads hT (off: dL/dhT = 0); moot "
                       "for fwd")
      ("gate-dist", s("logsigmoid"), "logsigmoid, zero, strong")
      ("beta-dist", s("sigmoid"), "sigmoid, zero, one")
      ("scale", s("0"), "softmax/readout scale; 0: K^-1/2")
      ("k-norm", s("1"), "L2 norm of every k row (adversarial: > sqrt(2) with beta 1 grows the state)")
      ("h0-scale", s("1"), "h0 is drawn as this times N(0, 1)")
      ("seed", s("random"), "input seed (random: drawn fresh and recorded in the CSV)")
      ("out", s("reports/latest.csv"), "CSV output path")
      ("resume", "keep the rows of an existing --out CSV and run only the cases it lacks "
                 "(without --seed, the seed of that CSV)")
      ("tolerances", s("builtin"), "the pass bounds rows are judged by: builtin (docs/TOLERANCES.md), or a "
                                   "tolerance file (a path, or a name in tolerances/) whose entries replace the "
                                   "built-in ones; its name and hash are recorded in every row")
      ("junit", po::value<std::string>(), "also write the verdicts as JUnit XML to this path")
      ("json", po::value<std::string>(), "also write the rows and their environment (build, CUDA, GPU, CPU, load) as JSON to this path")
      ("threads", s("0"), "CPU backend threads; 0: all cores")
      ("warmup", s("2"), "timing: warm-up runs")
      ("min-samples", s("10"), "timing: minimum samples")
      ("max-samples", s("200"), "timing: maximum samples")
      ("max-seconds", s("2"), "timing: cap on sampling per case")
      ("cv-target", s("0.02"), "timing: stop once the coefficient of variation is at or under this")
      ("l2-flush", s("write"), "timing: the L2 before each GPU sample: write (a memset of twice its size, as "
                               "Triton's do_bench and nvbench; the timed kernel pays the write-back of its dirty "
                               "lines, 3-5 us on an H200), clean (the memset, then a read of it: the kernel pays for "
                               "its own traffic only) or off; recorded in the CSV's l2_flush column")
      ("no-flush", "timing: --l2-flush off")
      ("graph", "timing: time replays of a CUDA graph of the launch")
      ("no-ceilings", "run: do not measure the device ceilings first (no fraction columns)")
      ("no-progress", "do not print progress to stderr")
      ("allow-empty", "exit 0 when every case was SKIPPED (without it a run that verified nothing exits 4)")
      ("determinism", s("auto"), "launch each passing case twice and compare o and hT bitwise: on, "
                                 "off; auto: on for verify, off for run")
      ("attention-ref", s("auto"), "attention cases: float64 reference of every query row (full), or of a "
                                   "fixed sample of rows per head (sampled: first, last, around every "
                                   "64-row tile edge, strided); auto: full while B*H*T^2*D < 2^32")
      ("gdn-ref", s("auto"), "GDN cases: float64 recurrence of every (b, hv) head (full), or of a fixed "
                             "sample of heads (sampled: the first, the last and evenly spaced ones, at most "
                             "16, within 2^32 state updates); auto: full while B*HV*T*K*V < 2^32");
  return d;
}

std::string opt(const po::variables_map& vm, const char* name) {
  return vm[name].as<std::string>();
}

// --l2-flush, with --no-flush as another way to say off.
L2Flush parse_l2_flush_options(const po::variables_map& vm) {
  const std::string text = opt(vm, "l2-flush");
  const std::optional<L2Flush> flush = parse_l2_flush(text);
  if (!flush) throw UsageError(fmt::format("--l2-flush: '{}' is not write, clean or off", text));
  if (!vm.count("no-flush")) return *flush;
  if (!vm["l2-flush"].defaulted() && *flush != L2Flush::off)
    throw UsageError(fmt::format("--no-flush contradicts --l2-flush {}", text));
  return L2Flush::off;
}

int64_t parse_int(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--{}: '{}' is not an integer", flag, text));
  }
}

// A seed is any uint64 (random seeds use all 64 bits and the CSV records them so): digits only.
uint64_t parse_seed(const std::string& text) {
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  try {
    if (digits) return uint64_t(std::stoull(text));
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--seed: '{}' is not random or an integer in [0, 2^64)", text));
}

double parse_double(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size() || !std::isfinite(v)) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--{}: '{}' is not a finite number", flag, text));
  }
}

std::vector<bool> parse_onoff_list(const std::string& flag, const std::string& value) {
  std::vector<bool> out;
  for (const std::string& x : split_list(value)) {
    if (x == "on") out.push_back(true);
    else if (x == "off") out.push_back(false);
    else throw UsageError(fmt::format("--{}: '{}' is not on or off", flag, x));
  }
  return out;
}

template <typename T, typename Parse>
std::vector<T> parse_named_list(const std::string& flag, const std::string& value, Parse parse,
                                const char* allowed) {
  std::vector<T> out;
  for (const std::string& x : split_list(value)) {
    const auto parsed = parse(x);
    if (!parsed) throw UsageError(fmt::format("--{}: unknown value '{}' (use {})", flag, x, allowed));
    out.push_back(*parsed);
  }
  return out;
}

// Boost.Program_options 1.74 builds what() by replacing placeholders such as %canonical_option%
// with what the user typed, from the start of the text again after each replacement: typed text
// that holds a placeholder makes what() loop forever (found by tests/fuzz/fuzz_cli_args with
// `--h%original_token%`). When the input holds a '%', the message is made here instead.
UsageError po_usage_error(const po::error& e, const std::string& where, bool input_has_percent) {
  if (input_has_percent)
    if (const auto* named = dynamic_cast<const po::error_with_option_name*>(&e)) {
      std::string name = named->get_option_name();
      if (name.find('%') != std::string::npos) name = "(a name with '%')";
      return UsageError(fmt::format("{}: option {} is unknown, repeated or malformed", where, name));
    }
  return UsageError(fmt::format("{}: {}", where, e.what()));  // po::error itself substitutes nothing
}

bool has_percent(const std::vector<std::string>& texts) {
  return std::any_of(texts.begin(), texts.end(),
                     [](const std::string& t) { return t.find('%') != std::string::npos; });
}

// Flags are spelled out: an abbreviation (--va for --variants) is unknown, not guessed, so a flag
// added later never changes what an old command line means. A token that is not a flag or a
// flag's value (`T=64`) is refused, not ignored.
po::parsed_options parse_tokens(const std::vector<std::string>& tokens,
                                const po::options_description& desc, const char* where) {
  po::parsed_options parsed(&desc);
  try {
    parsed = po::command_line_parser(tokens)
                 .options(desc)
                 .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                 .run();
  } catch (const po::error& e) {
    throw po_usage_error(e, where, has_percent(tokens));
  }
  for (const po::option& o : parsed.options)
    if (o.position_key >= 0) {
      const std::string token = o.original_tokens.empty() ? (o.value.empty() ? "" : o.value[0]) : o.original_tokens[0];
      throw UsageError(fmt::format("{}: unexpected argument '{}' (flags are --name value or --name=value)", where, token));
    }
  return parsed;
}

// po::store rejects e.g. an option given twice; that is the user's mistake, not a crash.
void store_or_usage(const po::parsed_options& parsed, po::variables_map& vm, const char* where) {
  try {
    po::store(parsed, vm);
  } catch (const po::error& e) {
    std::vector<std::string> typed;
    for (const po::option& o : parsed.options) {
      typed.push_back(o.string_key);
      typed.insert(typed.end(), o.value.begin(), o.value.end());
      typed.insert(typed.end(), o.original_tokens.begin(), o.original_tokens.end());
    }
    throw po_usage_error(e, where, has_percent(typed));
  }
}

// The words of a grid line: split at blanks, where '...' or "..." keeps blanks in a word (the
// quotes are dropped). A quote left open is refused: the words after it cannot be known.
std::vector<std::string> split_grid_words(const std::string& s, const std::string& where) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
      else word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      if (in_word) out.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) throw UsageError(fmt::format("{}: unbalanced {} quote", where, quote == '"' ? "double" : "single"));
  if (in_word) out.push_back(word);
  return out;
}

// A list with an empty item (`32,,64`, `64,`) is refused as `,,` alone is: the same for every
// list. A value of blanks only is left to the caller's "empty list".
void reject_empty_items(const std::string& flag, const std::string& value) {
  if (value.find_first_not_of(" \t") == std::string::npos) return;
  std::string item;
  for (char c : value + ",") {
    if (c != ',') {
      if (c != ' ' && c != '\t') item += c;
      continue;
    }
    if (item.empty()) throw UsageError(fmt::format("--{}: empty item in '{}'", flag, value));
    item.clear();
  }
}

std::vector<int64_t> parse_nonnegative_list(const std::string& flag, const std::string& value) {
  reject_empty_items(flag, value);
  std::vector<int64_t> out;
  for (const std::string& x : split_list(value)) {
    const int64_t v = parse_int(flag, x);
    if (v < 0) throw UsageError(fmt::format("--{}: {} is negative", flag, v));
    if (v > kMaxValue) throw UsageError(fmt::format("--{}: {} is too large (at most {})", flag, v, kMaxValue));
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(fmt::format("--{}: empty list", flag));
  return out;
}

// --seqlens of a grid: the spec text ("" for none), checked, with B and T agreeing with it: B = 1, and
// a --T given beside it (T_given) the total. A --T elsewhere (a command line reducing a suite's range)
// is for the suite's other lines.
std::string packed_spec(const po::variables_map& vm, bool T_given, uint64_t seed, const std::vector<int64_t>& Bs,
                        const std::vector<int64_t>& Ts, int64_t& total) {
  const std::string text = opt(vm, "seqlens");
  if (text == "none") return "";
  std::string error;
  const SeqlensSpec spec = parse_seqlens(text, &error);
  if (!error.empty()) throw UsageError(error);
  if (Bs.size() != 1 || Bs[0] != 1)
    throw UsageError(fmt::format("--seqlens: a packed batch has B = 1 (its sequences lie along T), not --B {}", opt(vm, "B")));
  total = 0;
  for (int64_t len : seqlens_lengths(spec, seed)) total += len;
  if (T_given && (Ts.size() != 1 || Ts[0] != total))
    throw UsageError(fmt::format("--seqlens: the lengths total T = {}, not --T {} (leave --T out)", total, opt(vm, "T")));
  return text;
}

// Expands one fully-merged option set into cases. T_given: --T on the command line or the grid line.
void expand_grid(const po::variables_map& vm, bool cuda_available, uint64_t seed, bool T_given,
                 std::vector<Case>& cases) {
  for (const char* list : {"variants", "dtypes", "gate", "delta", "h0", "frontend", "gate-dist", "beta-dist", "plan",
                           "pass", "dht"})
    reject_empty_items(list, opt(vm, list));  // the size lists check theirs as they parse
  const auto Bs = parse_positive_list("B", opt(vm, "B"));
  const auto segs = parse_positive_list("segments", opt(vm, "segments"));
  for (int64_t r : segs)
    if (r > kMaxSegments) throw UsageError(fmt::format("--segments: {} is more than {}", r, kMaxSegments));
  const auto Ts0 = parse_positive_list("T", opt(vm, "T"));
  int64_t packed_T = 0;
  const std::string seqlens = packed_spec(vm, T_given, seed, Bs, Ts0, packed_T);
  const auto Ts = seqlens.empty() ? Ts0 : std::vector<int64_t>{packed_T};
  const auto contexts = parse_nonnegative_list("context", opt(vm, "context"));
  const auto Hs = parse_positive_list("H", opt(vm, "H"));
  const std::string hv_text = opt(vm, "HV");
  const auto HVs = hv_text == "same" ? std::vector<int64_t>{0} : parse_positive_list("HV", hv_text);
  const auto Ks = parse_positive_list("K", opt(vm, "K"));
  const auto Vs = parse_positive_list("V", opt(vm, "V"));
  const auto chunks = parse_positive_list("chunk", opt(vm, "chunk"));
  const auto dtypes = parse_named_list<DType>("dtypes", opt(vm, "dtypes"), parse_dtype, "fp32, bf16, fp16");
  const auto gates = parse_onoff_list("gate", opt(vm, "gate"));
  const auto deltas = parse_onoff_list("delta", opt(vm, "delta"));
  const auto h0s = parse_onoff_list("h0", opt(vm, "h0"));
  const auto frontends = parse_onoff_list("frontend", opt(vm, "frontend"));
  const auto gate_dists = parse_named_list<GateDist>("gate-dist", opt(vm, "gate-dist"),
                                                     parse_gate_dist, "logsigmoid, zero, strong");
  const auto beta_dists = parse_named_list<BetaDist>("beta-dist", opt(vm, "beta-dist"),
                                                     parse_beta_dist, "sigmoid, zero, one");
  const auto passes = parse_named_list<Pass>("pass", opt(vm, "pass"), parse_pass, "fwd, bwd, fwdbwd");
  const auto dhts = parse_onoff_list("dht", opt(vm, "dht"));
  if (passes.empty()) throw UsageError("--pass: empty list");
  if (dhts.empty()) throw UsageError("--dht: empty list");
  const double scale = parse_double("scale", opt(vm, "scale"));
  const double k_norm = parse_double("k-norm", opt(vm, "k-norm"));
  const double h0_scale = parse_double("h0-scale", opt(vm, "h0-scale"));
  if (const std::string bad = problem_option_error(scale, k_norm, h0_scale); !bad.empty()) throw UsageError(bad);

  std::vector<std::string> plans = split_list(opt(vm, "plan"));
  if (plans.empty()) throw UsageError("--plan: empty list");
  for (const std::string& plan : plans) {
    if (plan == "auto") continue;
    if (split_plan_request(plan).empty()) throw UsageError(fmt::format("--plan: '{}' names no plan", plan));
    const bool known = std::any_of(variant_plans().begin(), variant_plans().end(),
                                   [&](const VariantPlans& vp) { return plan_request_applies(vp, plan); });
    if (!known)
      throw UsageError(fmt::format("--plan: no variant has the plan '{}' (gdnbench list --plans lists them)", plan));
  }

  std::vector<std::pair<const VariantInfo*, bool>> variants;
  const std::string vtext = opt(vm, "variants");
  if (vtext == "auto") {
    for (const VariantInfo& v : variant_registry())
      if (v.backend == Backend::cpu ? !cuda_available : cuda_available) variants.push_back({&v, false});
  } else {
    if (split_list(vtext).empty())
      throw UsageError("--variants: empty selection (name variants, or auto; gdnbench list shows them)");
    for (const std::string& name : split_list(vtext)) {
      const VariantInfo* v = find_variant(name);
      if (!v) throw UsageError(fmt::format("--variants: unknown variant '{}' (gdnbench list shows them)", name));
      variants.push_back({v, true});
    }
  }

  // An upper bound of the cases this grid adds (the gate, delta and chunk rules drop some).
  double bound = 1.0;
  for (size_t n : {Bs.size(), Ts.size(), contexts.size(), Hs.size(), HVs.size(), Ks.size(), Vs.size(), chunks.size(),
                   dtypes.size(), gates.size(), deltas.size(), h0s.size(), gate_dists.size(),
                   beta_dists.size(), variants.size(), frontends.size(), plans.size(), passes.size(), dhts.size(),
                   segs.size()})
    bound *= double(n);
  bound += double(cases.size());  // those of the grids before
  if (bound > double(kMaxCases))
    throw UsageError(fmt::format("the grids expand to up to {:.3g} cases, more than {}; split them "
                                 "into several runs", bound, kMaxCases));
  const auto largest = [](const std::vector<int64_t>& xs) { return double(*std::max_element(xs.begin(), xs.end())); };
  const double heads = std::max(largest(Hs), HVs.front() == 0 ? 0.0 : largest(HVs));
  const double tokens = largest(Ts) + largest(contexts);  // the KV cache holds context + T
  const double per_head = std::max({largest(Ks) * largest(Vs), tokens * largest(Ks), tokens * largest(Vs)});
  if (largest(Bs) * heads * per_head > kMaxElements)
    throw UsageError("the sizes give a tensor of more than 2^53 elements; use smaller B, T, H, HV, K or V");

  for (int64_t H : Hs)
    for (int64_t HV0 : HVs) {
      const int64_t HV = HV0 == 0 ? H : HV0;
      if (HV % H != 0)
        throw UsageError(fmt::format("--HV: {} is not a multiple of --H {}", HV, H));
      for (int64_t B : Bs) for (int64_t T : Ts) for (int64_t context : contexts)
      for (int64_t K : Ks) for (int64_t V : Vs)
      for (DType dt : dtypes) for (bool gate : gates) for (bool delta : deltas) for (bool h0 : h0s)
      for (GateDist gd : gate_dists) for (BetaDist bd : beta_dists) for (bool fe : frontends)
      for (Pass pass : passes) for (bool dht : dhts)
      for (const std::string& plan : plans) for (int64_t segments : segs)
      for (auto [variant, is_explicit] : variants)
      for (size_t ci = 0; ci < chunks.size(); ++ci) {
        // Picked by auto, a variant runs a forced plan only where it has one of that name.
        if (!is_explicit && plan != "auto") {
          const VariantPlans* vp = find_variant_plans(variant->name);
          if (!vp || !plan_request_applies(*vp, plan)) break;
        }
        if (!variant->uses_chunk && ci > 0) break;  // the chunk axis only multiplies chunked variants
        if (!gate && gd != gate_dists.front()) continue;  // no gate: the gate distribution is moot
        if (!delta && bd != beta_dists.front()) continue;  // no delta term: beta is unused
        if (!pass_has_backward(pass) && dht != dhts.front()) continue;  // the forward reads no dhT
        // The front end derives g and beta from a and b: no gate-off case, one distribution.
        if (fe && (!gate || gd != gate_dists.front() || bd != beta_dists.front())) continue;
        Problem p;
        p.shape = GdnShape{B, T, H, HV, K, V};
        p.dtype = dt;
        p.use_gate = gate;
        p.use_delta = delta;
        p.use_h0 = h0;
        p.gate_dist = gd;
        p.beta_dist = bd;
        p.chunk = variant->fixed_chunk > 0 ? variant->fixed_chunk : int(chunks[ci]);
        p.scale = scale;
        p.k_norm = k_norm;
        p.h0_scale = h0_scale;
        p.context = context;
        p.seed = seed;
        p.frontend = fe;
        p.plan = plan;
        p.segments = segments;
        p.pass = pass;
        p.use_dht = dht;
        p.seqlens = seqlens;
        resolve_packed(p);
        cases.push_back({p, variant, is_explicit});
      }
    }
}

}  // namespace

std::vector<int64_t> parse_positive_list(const std::string& flag, const std::string& value) {
  reject_empty_items(flag, value);
  std::vector<int64_t> out;
  for (const std::string& x : split_list(value)) {
    const int64_t v = parse_int(flag, x);
    if (v <= 0) throw UsageError(fmt::format("--{}: {} is not positive", flag, v));
    if (v > kMaxValue) throw UsageError(fmt::format("--{}: {} is too large (at most {})", flag, v, kMaxValue));
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(fmt::format("--{}: empty list", flag));
  return out;
}

std::string resolve_suite_path(const std::string& name) {
  const std::string path = find_named_file(name, "suites", ".ini");
  if (path.empty()) throw UsageError(fmt::format("--suite: no suite file '{}' (see suites/ for the suites)", name));
  return path;
}

std::string usage_text() {
  std::ostringstream out;
  out << "usage: gdnbench <command> [options]\n\n"
         "commands:\n"
         "  list      print the variant registry\n"
         "  run       verify every case, then time the ones that pass; write the CSV\n"
         "  verify    verify only (no timing); exit 1 if any case fails\n"
         "  ceilings  measure copy bandwidth and cuBLAS GEMM rates of the GPU\n"
         "  report    gdnbench report A.csv [B.csv ...] [--out FILE] [--plots DIR]: markdown report\n"
         "            (accuracy, timing against the floor, slope fits, crossovers, regressions against\n"
         "            later CSVs; --claims FILE adds the verdicts of the claims, --anchors FILE forward\n"
         "            times measured outside the harness)\n"
         "  claims    gdnbench claims A.csv [B.csv ...] [--claims FILE]: judge the claims of\n"
         "            claims/gdn_claims.ini (REPRODUCED / NOT REPRODUCED / NOT MEASURABLE HERE);\n"
         "            exit 0 whatever the verdicts, 2 on a usage error\n"
         "  compare   gdnbench compare BASE.csv NEW.csv [--threshold 5%]: match two runs' rows by case;\n"
         "            exit 1 on a regression (SLOWER past threshold and noise, NEW FAIL, LOST)\n"
         "  dump      gdnbench dump [problem options] --out DIR: one problem's inputs as .npy + manifest\n"
         "  check     gdnbench check DIR --o o.npy [--ht hT.npy]: judge an external kernel's output\n"
         "            (exit 0 PASS, 1 FAIL); see gdnbench dump --help, gdnbench check --help\n\n"
         "exit codes: 0 all checks passed, 1 a check failed, 2 usage error, 3 runtime error,\n"
         "            4 nothing verified (every case SKIPPED; --allow-empty makes that 0),\n"
         "            130 interrupted (SIGINT/SIGTERM; the CSV holds the finished cases)\n\n"
         "gdnbench <command> --help: that command's usage. The defaults below are the options' own; a\n"
         "suite replaces them (run and verify read suites/default.ini without --suite): gdnbench run --help\n"
         "and gdnbench verify --help show the values that run.\n\n"
      << option_description();
  return out.str();
}

namespace {

constexpr const char* kCommands = "list, run, verify, ceilings, report, claims, compare, dump or check";

const char* kExitCodes =
    "exit codes: 0 all checks passed, 1 a check failed, 2 usage error, 3 runtime error,\n"
    "            4 nothing verified (every case SKIPPED; --allow-empty makes that 0),\n"
    "            130 interrupted (SIGINT/SIGTERM; the CSV holds the finished cases)\n";

std::string list_help_text() {
  return "usage: gdnbench list [--plans]\n"
         "  Prints the variant registry: each variant's name, backend, family and what it runs.\n"
         "  --plans: every variant's launch plans, by stage (the names --plan takes), and on a GPU the\n"
         "  device facts the plans read.\n";
}

std::string ceilings_help_text() {
  return "usage: gdnbench ceilings [--out FILE] [--l2-flush write|clean|off] [--no-flush]\n"
         "  Measures the GPU's copy bandwidth and cuBLAS bf16 and fp32 GEMM rates (a CUDA device is\n"
         "  needed: exit 3 without one) and writes them as CSV.\n"
         "  --out FILE    the CSV (default: reports/ceilings.csv)\n"
         "  --l2-flush    the L2 before each sample, as for run (default: write); --no-flush: off\n";
}

// run --help and verify --help: the options with the values that run. Where the suite (--suite,
// or suites/default.ini without it) sets an option, its value is shown in place of the option's
// default, and the suite's grid lines are listed.
std::string run_help_text(const std::string& command, const po::options_description& desc,
                          const po::parsed_options& suite, const std::string& suite_path) {
  std::map<std::string, std::string> set;
  std::vector<std::string> grids;
  for (const po::option& o : suite.options) {
    std::string value;
    for (const std::string& v : o.value) value += (value.empty() ? "" : " ") + v;
    if (o.string_key == "grid") grids.push_back(value);
    else set[o.string_key] = value;
  }
  po::options_description shown(fmt::format("Options (lists are comma-separated; every list is an axis); "
                                            "shown with the values that run, \"from {}\" where the suite sets one",
                                            suite_path));
  for (const boost::shared_ptr<po::option_description>& od : desc.options()) {
    const auto it = set.find(od->long_name());
    if (it == set.end()) {
      shown.add(od);
    } else if (od->semantic()->max_tokens() == 0) {
      shown.add(boost::make_shared<po::option_description>(
          od->long_name().c_str(), new po::untyped_value(true),
          fmt::format("[set by {}] {}", suite_path, od->description()).c_str()));
    } else {
      shown.add(boost::make_shared<po::option_description>(
          od->long_name().c_str(),
          po::value<std::string>()->default_value(it->second, fmt::format("{}, from {}", it->second, suite_path)),
          od->description().c_str()));
    }
  }
  std::ostringstream out;
  out << "usage: gdnbench " << command << " [--suite NAME] [options]\n";
  if (command == "run")
    out << "  Verifies every case against the float64 reference, then times the ones that pass; writes\n"
           "  the CSV (--out).\n";
  else
    out << "  Verifies every case against the float64 reference (no timing); writes the CSV (--out);\n"
           "  exit 1 if any case fails.\n";
  out << "  The cases: the values below (a flag on the command line replaces the suite's value, which\n"
         "  replaces the option's default)";
  if (grids.empty()) {
    out << ".\n";
  } else {
    out << ", and each grid line of the suite as a further set of cases on top of them:\n";
    for (const std::string& g : grids) out << "    grid = " << g << "\n";
  }
  out << "  Suite: " << suite_path
      << (set.empty() && grids.empty() ? " (sets nothing)" : "") << "; --suite NAME --help shows another's values.\n\n"
      << shown << "\n" << kExitCodes;
  return out.str();
}

// parse_invocation, with the suite from `suite_stream` when it is given instead of the --suite file.
Invocation parse_invocation_impl(const std::vector<std::string>& args, bool cuda_available,
                                 std::istream* suite_stream, const std::string& suite_name) {
  Invocation inv;
  if (args.empty()) throw UsageError(fmt::format("no command given (use {}; --help for more)", kCommands));
  inv.command = args[0];
  if (inv.command == "--help" || inv.command == "-h" || inv.command == "help") {
    inv.command = "help";
    inv.help_text = usage_text();
    return inv;
  }
  if (inv.command != "list" && inv.command != "run" && inv.command != "verify" &&
      inv.command != "ceilings")
    throw UsageError(fmt::format("unknown command '{}' (use {}; --help for more)", inv.command, kCommands));

  const po::options_description desc = option_description();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  const po::parsed_options cli = parse_tokens(rest, desc, "command line");
  po::variables_map cli_vm;
  store_or_usage(cli, cli_vm, "command line");
  const bool help = cli_vm.count("help") > 0;  // run and verify: after the suite, whose values it shows
  if (help && (inv.command == "list" || inv.command == "ceilings")) {
    inv.help_text = inv.command == "list" ? list_help_text() : ceilings_help_text();
    inv.command = "help";
    return inv;
  }
  if (inv.command == "list") {
    inv.list_plans = cli_vm.count("plans") > 0;
    return inv;
  }
  if (inv.command == "ceilings") {
    inv.out_path = cli_vm["out"].defaulted() ? "reports/ceilings.csv" : opt(cli_vm, "out");
    inv.timing.l2_flush = parse_l2_flush_options(cli_vm);
    return inv;
  }

  std::ifstream suite_file;
  if (suite_stream) {
    inv.suite_path = suite_name;
  } else {
    inv.suite_path = resolve_suite_path(cli_vm.count("suite") ? cli_vm["suite"].as<std::string>() : "default");
    suite_file.open(inv.suite_path);
    if (!suite_file) throw UsageError(fmt::format("--suite: cannot read '{}'", inv.suite_path));
    suite_stream = &suite_file;
  }
  std::ostringstream suite_text;
  suite_text << suite_stream->rdbuf();
  po::parsed_options suite = [&] {
    std::istringstream in(suite_text.str());
    try {
      return po::parse_config_file(in, desc);
    } catch (const po::error& e) {
      throw po_usage_error(e, inv.suite_path, suite_text.str().find('%') != std::string::npos);
    }
  }();
  if (help) {
    inv.help_text = run_help_text(inv.command, desc, suite, inv.suite_path);
    inv.command = "help";
    return inv;
  }

  // Settings that are not axes come from command line > suite > default.
  po::variables_map base;
  store_or_usage(cli, base, "command line");
  store_or_usage(suite, base, inv.suite_path.c_str());
  const std::string seed_text = opt(base, "seed");
  inv.seed_given = seed_text != "random";
  inv.resume = base.count("resume") > 0;
  inv.seed = seed_text == "random" ? (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}()
                                   : parse_seed(seed_text);
  inv.out_path = opt(base, "out");
  if (base.count("junit")) inv.junit_path = base["junit"].as<std::string>();
  if (base.count("json")) inv.json_path = base["json"].as<std::string>();
  const int64_t threads = parse_int("threads", opt(base, "threads"));
  if (threads < 0 || threads > kMaxValue) throw UsageError("--threads: must be 0 (all cores) or a positive int");
  inv.cpu_threads = threads > 0 ? int(threads) : int(std::max(1u, std::thread::hardware_concurrency()));
  inv.progress = !base.count("no-progress");
  inv.allow_empty = base.count("allow-empty") > 0;
  inv.measure_ceilings = !base.count("no-ceilings");
  const std::string determinism = opt(base, "determinism");
  if (determinism != "auto" && determinism != "on" && determinism != "off")
    throw UsageError(fmt::format("--determinism: '{}' is not auto, on or off", determinism));
  inv.check_determinism = determinism == "on" || (determinism == "auto" && inv.command == "verify");
  const std::string attention_ref = opt(base, "attention-ref");
  const auto attention_ref_mode = parse_ref_mode(attention_ref);
  if (!attention_ref_mode)
    throw UsageError(fmt::format("--attention-ref: '{}' is not full, sampled or auto", attention_ref));
  inv.attention_ref = *attention_ref_mode;
  const std::string gdn_ref = opt(base, "gdn-ref");
  const auto gdn_ref_mode = parse_ref_mode(gdn_ref);
  if (!gdn_ref_mode) throw UsageError(fmt::format("--gdn-ref: '{}' is not full, sampled or auto", gdn_ref));
  inv.gdn_ref = *gdn_ref_mode;
  inv.tolerances = read_tolerance_profile(opt(base, "tolerances"));
  const int64_t warmup = parse_int("warmup", opt(base, "warmup"));
  if (warmup > kMaxValue) throw UsageError(fmt::format("--warmup: {} is too large", warmup));
  inv.timing.warmup = int(std::max<int64_t>(warmup, -1));  // negative: refused below
  inv.timing.min_samples = int(parse_positive_list("min-samples", opt(base, "min-samples"))[0]);
  inv.timing.max_samples = int(parse_positive_list("max-samples", opt(base, "max-samples"))[0]);
  inv.timing.max_seconds = parse_double("max-seconds", opt(base, "max-seconds"));
  inv.timing.cv_target = parse_double("cv-target", opt(base, "cv-target"));
  inv.timing.l2_flush = parse_l2_flush_options(base);
  inv.timing.cuda_graph = base.count("graph") > 0;
  if (inv.timing.warmup < 0) throw UsageError("--warmup: must not be negative");
  if (!(inv.timing.max_seconds > 0))
    throw UsageError(fmt::format("--max-seconds: {} is not positive (seconds of sampling per case)", opt(base, "max-seconds")));
  if (!(inv.timing.cv_target >= 0))
    throw UsageError(fmt::format("--cv-target: {} is negative (0: sample until --max-samples or --max-seconds)",
                                 opt(base, "cv-target")));
  if (inv.timing.max_samples < inv.timing.min_samples)
    throw UsageError("--max-samples: must be at least --min-samples");

  std::vector<std::string> grids;
  if (base.count("grid")) grids = base["grid"].as<std::vector<std::string>>();
  if (grids.empty()) grids.push_back("");
  for (const std::string& g : grids) {
    const std::string where = fmt::format("grid '{}'", g);
    po::variables_map vm;
    const po::parsed_options grid = parse_tokens(split_grid_words(g, where), desc, where.c_str());
    store_or_usage(cli, vm, "command line");
    store_or_usage(grid, vm, where.c_str());
    store_or_usage(suite, vm, inv.suite_path.c_str());
    const auto gives = [](const po::parsed_options& po_set, const char* name) {
      return std::any_of(po_set.options.begin(), po_set.options.end(),
                         [&](const po::option& o) { return o.string_key == name; });
    };
    // --T beside --seqlens: on this grid line, or on the command line with the command line's --seqlens.
    const bool T_given = gives(grid, "T") || (gives(cli, "T") && gives(cli, "seqlens"));
    expand_grid(vm, cuda_available, inv.seed, T_given, inv.cases);
  }
  return inv;
}

}  // namespace

Invocation parse_invocation(const std::vector<std::string>& args, bool cuda_available) {
  return parse_invocation_impl(args, cuda_available, nullptr, "");
}

Invocation parse_invocation_with_suite(const std::vector<std::string>& args, bool cuda_available,
                                       std::istream& suite, const std::string& suite_name) {
  return parse_invocation_impl(args, cuda_available, &suite, suite_name);
}
