// `gdnbench dump` and `gdnbench check` (harness/external.h).
// About 750 lines on purpose: `dump` and `check` share the manifest, its layouts and their checks,
// for the forward and the backward alike.
#include "harness/external.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

// Boost 1.74's property_tree pulls in boost/bind.hpp, which warns unless told how to place its
// placeholders; this file uses none of them.
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <fmt/format.h>

#include "harness/io/cli.h"
#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/io/csv_read.h"
#include "harness/io/npy.h"
#include "harness/io/tolerance_file.h"
#include "harness/reference_sample.h"
#include "harness/runner.h"
#include "kernels/frontend/frontend.h"

namespace fs = std::filesystem;

namespace {

constexpr int kDumpVersion = 1;

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", int(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}
const char* json_bool(bool b) { return b ? "true" : "false"; }

// Flag parsing shared by dump and check: `--name value` or `--name=value`.
struct Flags {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;
};
Flags parse_flags(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
                  const char* command, const std::string& usage) {
  Flags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      f.positional.push_back(a);
      continue;
    }
    const auto eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (std::find(with_value.begin(), with_value.end(), name) == with_value.end())
      throw UsageError(fmt::format("{}: unknown flag '{}'; {}", command, name, usage));
    if (f.values.count(name)) throw UsageError(fmt::format("{}: {} given twice", command, name));
    if (eq != std::string::npos) {
      f.values[name] = a.substr(eq + 1);
    } else {
      if (i + 1 >= args.size()) throw UsageError(fmt::format("{}: {} needs a value", command, name));
      f.values[name] = args[++i];
    }
  }
  return f;
}

std::vector<int64_t> dims(std::initializer_list<int64_t> d) { return std::vector<int64_t>(d); }

// The tensor `what` of the dump: read, shape checked, converted to float (exact: float32 files).
std::vector<float> read_input(const std::string& dir, const std::string& file, const char* what,
                              const std::vector<int64_t>& shape) {
  NpyArray a;
  try {
    a = read_npy((fs::path(dir) / file).string());
  } catch (const NpyError& e) {
    throw UsageError(fmt::format("check: {}", e.what()));
  }
  if (a.shape != shape)
    throw UsageError(fmt::format("check: {} has shape {}, the manifest says {}", what,
                                 fmt::join(a.shape, "x"), fmt::join(shape, "x")));
  return std::vector<float>(a.values.begin(), a.values.end());
}

std::vector<double> read_output(const std::string& path, const char* what, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& alt_shape = {}) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const NpyError& e) {
    throw UsageError(fmt::format("check: {}", e.what()));
  }
  if (a.shape != shape && (alt_shape.empty() || a.shape != alt_shape))
    throw UsageError(fmt::format("check: {} ({}) has shape {}, expected {}", what, path,
                                 fmt::join(a.shape, "x"), fmt::join(shape, "x")));
  if (a.type == NpyType::i4) throw UsageError(fmt::format("check: {} ({}) holds integers (<i4), not an output", what, path));
  return std::move(a.values);
}

std::string problem_text(const Problem& p) {
  const GdnShape& s = p.shape;
  return fmt::format("{} B={} T={} H={} HV={} K={} V={} gate={} delta={} h0={}", dtype_name(p.dtype), s.B,
                     s.T, s.H, s.HV, s.K, s.V, p.use_gate ? "on" : "off", p.use_delta ? "on" : "off",
                     p.use_h0 ? "on" : "off") + (p.frontend ? " frontend=on" : "") +
         (pass_has_backward(p.pass) ? fmt::format(" pass={} dht={}", pass_name(p.pass), p.use_dht ? "on" : "off") : "");
}

// The files of a front-end problem's inputs (harness/frontend_inputs.h), in the manifest's order:
// the raw projections, the gate and beta projections, A_log, dt_bias, the conv weights and biases,
// and (h0 on: the problem continues a sequence) the initial conv caches. h0 is written as always.
struct FrontEndFile {
  const char* key;
  std::vector<int64_t> shape;
  std::vector<float> FrontEndHost::*member;
};
std::vector<FrontEndFile> frontend_files(const Problem& p) {
  const GdnShape& s = p.shape;
  const int64_t cqk = s.H * s.K, cv = s.HV * s.V;
  using F = FrontEndHost;
  std::vector<FrontEndFile> f = {
      {"x_q", {s.B, s.T, cqk}, &F::x_q},   {"x_k", {s.B, s.T, cqk}, &F::x_k},
      {"x_v", {s.B, s.T, cv}, &F::x_v},    {"a", {s.B, s.T, s.HV}, &F::a},
      {"b", {s.B, s.T, s.HV}, &F::b},      {"A_log", {s.HV}, &F::A_log},
      {"dt_bias", {s.HV}, &F::dt_bias},    {"w_q", {cqk, kConvWidth}, &F::w_q},
      {"w_k", {cqk, kConvWidth}, &F::w_k}, {"w_v", {cv, kConvWidth}, &F::w_v},
      {"bias_q", {cqk}, &F::bias_q},       {"bias_k", {cqk}, &F::bias_k},
      {"bias_v", {cv}, &F::bias_v}};
  if (p.use_h0) {
    f.push_back({"cache_q", {s.B, cqk, kConvCache}, &F::cache_q});
    f.push_back({"cache_k", {s.B, cqk, kConvCache}, &F::cache_k});
    f.push_back({"cache_v", {s.B, cv, kConvCache}, &F::cache_v});
  }
  return f;
}

// Every key a manifest's files may name.
std::vector<std::string> manifest_file_keys() {
  std::vector<std::string> keys = {"q", "k", "v", "g", "beta", "h0", "dO", "dhT", "cu_seqlens"};
  Problem fe;
  fe.use_h0 = true;
  for (const FrontEndFile& f : frontend_files(fe)) keys.push_back(f.key);
  return keys;
}

}  // namespace

void dump_problem(const Problem& p, const std::string& dir) {
  const HostInputs in = make_inputs(p);  // first: a problem too large for host memory creates no directory
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("cannot create directory '{}'", dir));
  const GdnShape& s = p.shape;
  const auto path = [&](const char* f) { return (fs::path(dir) / f).string(); };
  std::string files;
  // Each file written is named in the manifest's files (a tensor the problem lacks is neither).
  const auto put = [&](const char* key, const std::vector<int64_t>& shape, const std::vector<float>& x) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (int64_t(x.size()) != n)  // never write past a tensor: make_inputs made another kind of problem
      throw std::logic_error(fmt::format("dump: {} holds {} elements, its shape {} needs {}", key, x.size(),
                                         fmt::join(shape, "x"), n));
    const std::string file = std::string(key) + ".npy";
    write_npy(path(file.c_str()), shape, x.data(), NpyType::f4);
    files += fmt::format("{}\"{}\": \"{}\"", files.empty() ? "" : ", ", key, file);
  };
  if (p.frontend) {
    for (const FrontEndFile& f : frontend_files(p)) put(f.key, f.shape, in.fe.*(f.member));
  } else {
    put("q", dims({s.B, s.T, s.H, s.K}), in.q);
    put("k", dims({s.B, s.T, s.H, s.K}), in.k);
    put("v", dims({s.B, s.T, s.HV, s.V}), in.v);
    if (p.use_gate) put("g", dims({s.B, s.T, s.HV}), in.g);
    put("beta", dims({s.B, s.T, s.HV}), in.beta);
  }
  if (p.use_h0) put("h0", dims({s.sequences(), s.HV, s.K, s.V}), in.h0);
  if (pass_has_backward(p.pass)) {  // the upstream gradients the harness's backwards are given
    put("dO", dims({s.B, s.T, s.HV, s.V}), in.dout);
    if (p.use_dht) put("dhT", dims({s.sequences(), s.HV, s.K, s.V}), in.dhT);
  }
  if (p.packed()) {  // int32, FLA's and FlashQLA's cu_seqlens as they take it
    write_npy(path("cu_seqlens.npy"), dims({s.num_seqs + 1}),
              std::vector<double>(p.cu_seqlens.begin(), p.cu_seqlens.end()).data(), NpyType::i4);
    files += ", \"cu_seqlens\": \"cu_seqlens.npy\"";
  }
  std::string m = "{\n";
  m += fmt::format("  \"format\": \"gdnbench-dump\",\n  \"version\": {},\n", kDumpVersion);
  m += fmt::format("  \"B\": {}, \"T\": {}, \"H\": {}, \"HV\": {}, \"K\": {}, \"V\": {},\n", s.B, s.T, s.H,
                   s.HV, s.K, s.V);
  m += fmt::format("  \"dtype\": \"{}\",\n", dtype_name(p.dtype));
  if (p.packed())
    m += fmt::format("  \"num_seqs\": {},\n  \"packed\": \"B = 1; sequence n is tokens cu_seqlens[n] .. "
                     "cu_seqlens[n+1]-1 (cu_seqlens.npy, int32, num_seqs + 1 offsets), with state n of h0 and hT "
                     "([num_seqs, HV, K, V]); no state crosses a boundary\",\n", s.num_seqs);
  if (p.frontend)
    m += "  \"storage\": \"every file is float32 (<f4); all but A_log and dt_bias (float32 parameters) hold values "
         "exactly representable in dtype, so casting them to dtype does not round\",\n";
  else
    m += "  \"storage\": \"every file is float32 (<f4); q, k, v hold values exactly representable in dtype, "
         "so casting them to dtype does not round\",\n";
  m += fmt::format("  \"scale\": {:.17g},\n", p.resolved_scale());
  m += fmt::format("  \"seed\": {},\n", p.seed);
  m += fmt::format("  \"gate\": {}, \"delta\": {}, \"h0\": {}, \"frontend\": {},\n", json_bool(p.use_gate),
                   json_bool(p.use_delta), json_bool(p.use_h0), json_bool(p.frontend));
  m += fmt::format("  \"gate_dist\": \"{}\", \"beta_dist\": \"{}\", \"k_norm\": {:.17g}, \"h0_scale\": {:.17g},\n",
                   gate_dist_name(p.gate_dist), beta_dist_name(p.beta_dist), p.k_norm, p.h0_scale);
  m += fmt::format("  \"distributions\": {},\n", json_string(p.distributions()));
  m += fmt::format("  \"pass\": \"{}\",\n", pass_name(p.pass));
  if (pass_has_backward(p.pass)) m += fmt::format("  \"dht\": {},\n", json_bool(p.use_dht));
  m += "  \"files\": {" + files + "},\n";
  if (p.frontend) {
    m += "  \"layouts\": {\"x_q\": \"[B, T, H*K]\", \"x_k\": \"[B, T, H*K]\", \"x_v\": \"[B, T, HV*V]\", "
         "\"a\": \"[B, T, HV]\", \"b\": \"[B, T, HV]\", \"A_log\": \"[HV] float32\", \"dt_bias\": \"[HV] float32\", "
         "\"w_q\": \"[H*K, 4]\", \"w_k\": \"[H*K, 4]\", \"w_v\": \"[HV*V, 4]\", \"bias_q\": \"[H*K]\", "
         "\"bias_k\": \"[H*K]\", \"bias_v\": \"[HV*V]\", \"cache_q\": \"[B, H*K, 3]\", \"cache_k\": \"[B, H*K, 3]\", "
         "\"cache_v\": \"[B, HV*V, 3]\", \"h0\": \"[B, HV, K, V] float32\", \"o\": \"[B, T, HV, V] in dtype\", "
         "\"hT\": \"[B, HV, K, V] float32\", \"final caches\": \"as cache_q, cache_k, cache_v\"},\n";
    m += "  \"frontend_ops\": \"channel c = head * dim + i; per channel y_t = bias + sum_i w[i] x_{t-3+i} (tap 3 the "
         "current token; inputs before t = 0 from the cache, oldest first, zeros without one), then SiLU; q, k L2 "
         "normalised per head (x / sqrt(sum x^2 + 1e-6)); g = -exp(A_log) softplus(a + dt_bias); beta = sigmoid(b); "
         "the final caches hold the last 3 inputs\",\n";
  } else {
    m += "  \"layouts\": {\"q\": \"[B, T, H, K]\", \"k\": \"[B, T, H, K]\", \"v\": \"[B, T, HV, V]\", "
         "\"g\": \"[B, T, HV] log decay\", \"beta\": \"[B, T, HV]\", \"h0\": \"[B, HV, K, V] float32\", "
         "\"o\": \"[B, T, HV, V] in dtype\", \"hT\": \"[B, HV, K, V] float32\"";
    if (pass_has_backward(p.pass))
      m += ", \"dO\": \"[B, T, HV, V] in dtype\", \"dhT\": \"[B, HV, K, V] float32\", "
           "\"dq\": \"[B, T, H, K] in dtype\", \"dk\": \"[B, T, H, K] in dtype\", \"dv\": \"[B, T, HV, V] in dtype\", "
           "\"dg\": \"[B, T, HV] float32, of the log decay\", \"dbeta\": \"[B, T, HV] float32\", "
           "\"dh0\": \"[B, HV, K, V] float32\"";
    m += "},\n";
    if (pass_has_backward(p.pass))
      m += std::string("  \"loss\": \"L = sum(dO .* o)") + (p.use_dht ? " + sum(dhT .* hT)" : "") +
           "; the gradients are dL/dq, dL/dk, dL/dv, dL/dg, dL/dbeta, dL/dh0 (dq, dk summed over the value "
           "heads of their q/k head)\",\n";
  }
  m += "  \"recurrence\": \"S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T; "
       "o_t = S_t^T (scale q_t)\"\n}\n";
  std::ofstream f(path("manifest.json"), std::ios::trunc);
  f << m;
  if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", path("manifest.json")));
}

// The deepest nesting of [ and { outside strings. property_tree's JSON parser recurses once per
// level, so a file of a few ten thousand '[' would overflow the stack: such text is refused first.
static size_t json_nesting(const std::string& text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

DumpManifest parse_dump_manifest(const std::string& text, const std::string& manifest) {
  namespace pt = boost::property_tree;
  constexpr size_t kMaxNesting = 64;  // gdnbench dump writes 2 levels
  if (json_nesting(text) > kMaxNesting)
    throw UsageError(fmt::format("check: {}: not valid JSON (nested deeper than {} levels)", manifest, kMaxNesting));
  pt::ptree m;
  try {
    std::istringstream in(text);
    pt::read_json(in, m);
  } catch (const pt::file_parser_error& e) {  // worded as read_json of the file would
    const std::string where = e.line() > 0 ? fmt::format("{}({})", manifest, e.line()) : manifest;
    throw UsageError(fmt::format("check: {}: not valid JSON ({}: {})", manifest, where, e.message()));
  } catch (const pt::ptree_error& e) {
    throw UsageError(fmt::format("check: {}: not valid JSON ({})", manifest, e.what()));
  }
  DumpManifest d;
  Problem& p = d.problem;
  try {
    if (m.get<std::string>("format") != "gdnbench-dump" || m.get<int>("version") != kDumpVersion)
      throw UsageError(fmt::format("check: {}: not a gdnbench-dump version {} manifest", manifest, kDumpVersion));
    p.shape = GdnShape{m.get<int64_t>("B"), m.get<int64_t>("T"), m.get<int64_t>("H"), m.get<int64_t>("HV"),
                       m.get<int64_t>("K"), m.get<int64_t>("V")};
    const auto dt = parse_dtype(m.get<std::string>("dtype"));
    if (!dt) throw UsageError(fmt::format("check: {}: unknown dtype '{}'", manifest, m.get<std::string>("dtype")));
    p.dtype = *dt;
    p.scale = m.get<double>("scale");
    p.seed = m.get<uint64_t>("seed");
    p.use_gate = m.get<bool>("gate");
    p.use_delta = m.get<bool>("delta");
    p.use_h0 = m.get<bool>("h0");
    const auto gd = parse_gate_dist(m.get<std::string>("gate_dist"));
    const auto bd = parse_beta_dist(m.get<std::string>("beta_dist"));
    if (!gd || !bd) throw UsageError(fmt::format("check: {}: unknown gate_dist or beta_dist", manifest));
    p.gate_dist = *gd;
    p.beta_dist = *bd;
    p.k_norm = m.get<double>("k_norm");
    p.h0_scale = m.get<double>("h0_scale");
    p.frontend = m.get<bool>("frontend", false);  // manifests written before front-end dumps lack it
    const std::string pass = m.get<std::string>("pass", "fwd");  // nor backward dumps: those are forward
    const auto ps = parse_pass(pass);
    if (!ps) throw UsageError(fmt::format("check: {}: unknown pass '{}' (fwd, bwd, fwdbwd)", manifest, pass));
    p.pass = *ps;
    if (pass_has_backward(p.pass)) p.use_dht = m.get<bool>("dht");
    p.shape.num_seqs = m.get<int64_t>("num_seqs", 0);  // a packed batch (cu_seqlens.npy); 0 before them
  } catch (const pt::ptree_error& e) {
    throw UsageError(fmt::format("check: {}: {}", manifest, e.what()));
  }
  const GdnShape& s = p.shape;
  for (int64_t x : {s.B, s.T, s.H, s.HV, s.K, s.V})
    if (x <= 0 || x > 2147483647) throw UsageError(fmt::format("check: {}: sizes must be positive ints", manifest));
  if (s.HV % s.H != 0) throw UsageError(fmt::format("check: {}: HV is not a multiple of H", manifest));
  if (s.num_seqs < 0 || s.num_seqs > s.T || (s.num_seqs > 0 && (s.B != 1 || p.frontend)))
    throw UsageError(fmt::format("check: {}: num_seqs must be in [0, T], a packed batch B = 1 without a front end", manifest));
  if (!(p.scale > 0)) throw UsageError(fmt::format("check: {}: scale must be positive", manifest));
  // The command line's ranges (a manifest is another way to state a problem).
  if (const std::string bad = problem_option_error(p.scale, p.k_norm, p.h0_scale); !bad.empty())
    throw UsageError(fmt::format("check: {}: {}", manifest, bad.substr(2)));
  // The front end derives g and beta from a and b (gdnbench dump writes no other such problem).
  if (p.frontend && !p.use_gate)
    throw UsageError(fmt::format("check: {}: a front-end problem needs gate true", manifest));
  if (p.frontend && pass_has_backward(p.pass))
    throw UsageError(fmt::format("check: {}: a front-end problem has no backward (pass fwd)", manifest));
  for (const std::string& key : manifest_file_keys())
    d.files[key] = m.get<std::string>("files." + key, "");
  return d;
}

namespace {

DumpManifest read_manifest(const std::string& dir) {
  const std::string manifest = (fs::path(dir) / "manifest.json").string();
  if (!fs::is_regular_file(manifest))
    throw UsageError(fmt::format("check: no '{}' (make the directory with gdnbench dump)", manifest));
  std::ifstream mf(manifest, std::ios::binary);
  if (!mf) throw UsageError(fmt::format("check: {}: not valid JSON ({}: cannot open file)", manifest, manifest));
  std::ostringstream text;
  text << mf.rdbuf();
  return parse_dump_manifest(text.str(), manifest);
}

}  // namespace

DumpedProblem read_dump(const std::string& dir) {
  const std::string manifest = (fs::path(dir) / "manifest.json").string();
  const DumpManifest m = read_manifest(dir);
  DumpedProblem d;
  d.problem = m.problem;
  const Problem& p = d.problem;
  const GdnShape& s = p.shape;
  const auto file = [&](const char* key) {
    const std::string& name = m.files.at(key);
    if (name.empty()) throw UsageError(fmt::format("check: {}: files.{} missing", manifest, key));
    return name;
  };
  HostInputs& in = d.inputs;
  if (p.frontend) {
    for (const FrontEndFile& f : frontend_files(p)) in.fe.*(f.member) = read_input(dir, file(f.key), f.key, f.shape);
  } else {
    in.q = read_input(dir, file("q"), "q", dims({s.B, s.T, s.H, s.K}));
    in.k = read_input(dir, file("k"), "k", dims({s.B, s.T, s.H, s.K}));
    in.v = read_input(dir, file("v"), "v", dims({s.B, s.T, s.HV, s.V}));
    if (p.use_gate) in.g = read_input(dir, file("g"), "g", dims({s.B, s.T, s.HV}));
    in.beta = read_input(dir, file("beta"), "beta", dims({s.B, s.T, s.HV}));
  }
  if (p.packed()) {  // rising from 0 to T, every sequence non-empty, as the reference needs
    NpyArray a;
    try {
      a = read_npy((fs::path(dir) / file("cu_seqlens")).string());
    } catch (const NpyError& e) {
      throw UsageError(fmt::format("check: {}", e.what()));
    }
    const std::vector<double>& cu = a.values;
    bool ok = a.shape == dims({s.num_seqs + 1}) && cu.front() == 0.0 && cu.back() == double(s.T);
    for (size_t n = 0; ok && n + 1 < cu.size(); ++n) ok = cu[n + 1] > cu[n] && cu[n + 1] == double(int32_t(cu[n + 1]));
    if (!ok)
      throw UsageError(fmt::format("check: {}: cu_seqlens must be num_seqs + 1 = {} integers rising from 0 to T = {}",
                                   manifest, s.num_seqs + 1, s.T));
    d.problem.cu_seqlens.assign(cu.begin(), cu.end());
    in.cu_seqlens = d.problem.cu_seqlens;
  }
  if (p.use_h0) in.h0 = read_input(dir, file("h0"), "h0", dims({s.sequences(), s.HV, s.K, s.V}));
  if (pass_has_backward(p.pass)) {
    in.dout = read_input(dir, file("dO"), "dO", dims({s.B, s.T, s.HV, s.V}));
    if (p.use_dht) in.dhT = read_input(dir, file("dhT"), "dhT", dims({s.sequences(), s.HV, s.K, s.V}));
  }
  return d;
}

namespace {

// A front-end problem's final conv caches (check --cache-q --cache-k --cache-v): copies of inputs,
// so, as `verify` judges them, exact or wrong. Marks the row FAIL with the reason when they differ.
void judge_conv_caches(const CheckOptions& opt, const Problem& p, const GdnRefOutputs& ref, ResultRow& row) {
  if (opt.cache_paths.empty()) return;
  if (ref.conv_cache.empty())
    throw UsageError("check: the final conv caches need gdnbench's float64 reference: give --ht with --ref-o");
  const GdnShape& s = p.shape;
  const int64_t cqk = s.H * s.K, cv = s.HV * s.V;
  const char* flags[3] = {"--cache-q", "--cache-k", "--cache-v"};
  std::vector<float> got;
  for (int i = 0; i < 3; ++i) {
    const std::vector<double> x = read_output(opt.cache_paths[size_t(i)], flags[i],
                                              dims({s.B, i < 2 ? cqk : cv, kConvCache}));
    got.insert(got.end(), x.begin(), x.end());
  }
  row.conv = compare_to_reference(got, ref.conv_cache, p.dtype);
  std::string bad;
  if (!row.conv.finite_ok()) bad = fmt::format("conv cache: {} non-finite", row.conv.nan_count + row.conv.unwritten);
  else if (row.conv.rel_l2 != 0.0) bad = fmt::format("conv cache rel_l2 {:.3g}, must be exact", row.conv.rel_l2);
  if (bad.empty()) return;
  row.status = Status::fail;
  row.reason += (row.reason.empty() ? "" : "; ") + bad;
}

}  // namespace

namespace {

// Attention has no gate, beta or state: its gradients are dq, dk and dv.
bool gradient_exists(Grad g, const Problem& p, bool is_gdn) {
  if (!is_gdn) return grad_has_dtype_floor(g);
  return (g != Grad::dg || p.use_gate) && (g != Grad::dh0 || p.use_h0);
}

// What a check of pass `opt.pass` on the dump's problem `dumped` may be given; UsageError otherwise.
void check_what_is_judged(const CheckOptions& opt, const Problem& dumped, bool is_gdn) {
  const bool forward = pass_has_forward(opt.pass), backward = pass_has_backward(opt.pass);
  const std::string pass = fmt::format("--pass {}", pass_name(opt.pass));
  if (forward && opt.o_path.empty()) throw UsageError(fmt::format("check: {}: --o o.npy is required", pass));
  if (!forward && (!opt.o_path.empty() || !opt.ht_path.empty() || !opt.ref_o_path.empty() || !opt.cache_paths.empty()))
    throw UsageError("check: --pass bwd judges the gradients alone; give --pass fwdbwd to judge o and hT too");
  bool any = false;
  for (Grad g : kGrads) {
    if (opt.grad_paths[size_t(g)].empty()) continue;
    any = true;
    if (!backward)
      throw UsageError(fmt::format("check: --{}: gradients are judged under --pass bwd or fwdbwd", grad_name(g)));
    if (!gradient_exists(g, dumped, is_gdn))
      throw UsageError(is_gdn ? fmt::format("check: --{}: the problem has no {}, so no {}", grad_name(g),
                                            g == Grad::dg ? "gate" : "h0", grad_name(g))
                              : fmt::format("check: --{}: attention has no gate, beta or state (its gradients: "
                                            "dq, dk, dv)", grad_name(g)));
  }
  if (!backward) return;
  if (!pass_has_backward(dumped.pass))
    throw UsageError(fmt::format("check: {}: the dump holds no dO (make it with gdnbench dump --pass bwd)", pass));
  if (!any)
    throw UsageError(fmt::format("check: {}: give at least one of --dq --dk --dv --dg --dbeta --dh0", pass));
}

// The forward's o (and hT) against the reference, into row.o, row.ht and row.tol.
void judge_forward(const CheckOptions& opt, const Problem& p, const RefInputsF64& ref_in, bool is_gdn,
                   GdnRefOutputs& gdn_ref, ResultRow& row) {
  const GdnShape& s = p.shape;
  const std::vector<double> o_ext = read_output(opt.o_path, "--o", dims({s.B, s.T, s.HV, s.V}));
  std::vector<double> hT_ext;
  if (!opt.ht_path.empty()) {
    if (!is_gdn) throw UsageError("check: --ht is for --family gdn only");
    hT_ext = read_output(opt.ht_path, "--ht", opt.ht_vk ? dims({s.sequences(), s.HV, s.V, s.K})
                                                        : dims({s.sequences(), s.HV, s.K, s.V}));
    if (opt.ht_vk) {  // to the canonical K x V layout
      std::vector<double> kv(hT_ext.size());
      for (int64_t bh = 0; bh < s.sequences() * s.HV; ++bh)
        for (int64_t i = 0; i < s.K; ++i)
          for (int64_t j = 0; j < s.V; ++j) kv[(bh * s.K + i) * s.V + j] = hT_ext[(bh * s.V + j) * s.K + i];
      hT_ext.swap(kv);
    }
  }

  std::vector<double> ref_o;
  if (!opt.ref_o_path.empty()) {
    ref_o = read_output(opt.ref_o_path, "--ref-o", dims({s.B, s.T, s.HV, s.V}));
    if (!opt.ht_path.empty()) gdn_ref = gdn_reference_for(p, ref_in, opt.threads);  // hT needs ours
  } else if (is_gdn) {
    gdn_ref = gdn_reference_for(p, ref_in, opt.threads);
    ref_o = gdn_ref.o;
  } else {
    ref_o = attention_reference_for(p, ref_in, opt.threads);
  }

  // NaN never compares as the poison: external outputs cannot be "unwritten", only non-finite.
  const std::vector<float> o_f(o_ext.begin(), o_ext.end());
  row.o = compare_to_reference(o_f, ref_o, p.dtype);
  row.tol = forward_bounds(opt.tolerances, opt.precision, p.dtype, row.o.floor_rel_l2,
                           is_gdn && opt.ref_o_path.empty() ? &gdn_ref : nullptr);  // as `verify` judges
  if (!hT_ext.empty()) row.ht = compare_to_reference(std::vector<float>(hT_ext.begin(), hT_ext.end()), gdn_ref.hT, DType::f32);
}

// The gradients given against the float64 backward (the reference of `verify --pass bwd`), into
// row.grad and row.tol.grad_rel_l2. Every file is read before the reference is computed, so a
// wrong one stops the check at once.
void judge_gradients(const CheckOptions& opt, const Problem& p, const RefInputsF64& ref_in, bool is_gdn, ResultRow& row,
                     std::vector<std::string>& problems) {
  std::array<std::vector<float>, kGradCount> got;
  for (Grad g : kGrads) {
    const std::string& path = opt.grad_paths[size_t(g)];
    if (path.empty()) continue;
    const std::string flag = fmt::format("--{}", grad_name(g));
    const std::vector<double> x = read_output(path, flag.c_str(), gradient_shape(g, p.shape));
    got[size_t(g)].assign(x.begin(), x.end());
  }
  // Attention's float64 backward on whole heads, sampled past its budget as `verify` samples it.
  const GdnRefGradients ref =
      is_gdn ? gdn_gradients_for(p, ref_in, opt.threads)
             : attention_gradients_for(p, ref_in, opt.threads, attention_grad_heads(p, opt.attention_ref));
  if (!ref.heads.empty()) {
    row.ref_heads = int64_t(ref.heads.size());
    row.reason += (row.reason.empty() ? "" : "; ") +
                  fmt::format("gradients judged on {} of {} heads (sampled: the float64 attention backward past its budget)",
                              ref.heads.size(), p.shape.B * p.shape.HV);
  }
  for (Grad g : kGrads)
    if (!opt.grad_paths[size_t(g)].empty())
      compare_gradient(row, g, got[size_t(g)], ref, opt.precision, opt.tolerances, problems);
}

}  // namespace

ResultRow check_external(const CheckOptions& opt) {
  const DumpedProblem d = read_dump(opt.dir);
  const bool is_gdn = opt.family == "gdn";
  if (!is_gdn && opt.family != "attention")
    throw UsageError(fmt::format("check: --family '{}' is not gdn or attention", opt.family));
  if (!is_gdn && d.problem.frontend)
    throw UsageError("check: --family attention: the dump is a front-end problem (raw projections, no q, k, v)");
  if (!is_gdn && d.problem.shape.H != d.problem.shape.HV) throw UsageError("check: --family attention needs H == HV");
  if (!opt.cache_paths.empty() && !d.problem.frontend)
    throw UsageError("check: --cache-q/--cache-k/--cache-v are for front-end dumps (gdnbench dump --frontend on)");
  check_what_is_judged(opt, d.problem, is_gdn);
  Problem p = d.problem;
  p.pass = opt.pass;  // the row is of the pass judged (its cost and CSV columns); the inputs are the dump's

  ResultRow row;
  row.problem = p;
  row.variant = opt.variant;
  row.family = opt.family;
  row.backend = "ext";
  row.precision = precision_name(opt.precision);
  row.device = opt.device;
  // An implementation outside the registry moves what the family's count says; a front-end one
  // what a front-end variant with a float32 state moves; a registered variant's name, its own count.
  const VariantInfo* known = find_variant(opt.variant);
  double (*min_bytes)(const Problem&) = is_gdn && p.frontend ? frontend_min_bytes_f32_state : nullptr;
  if (known && known->family == (is_gdn ? Family::gdn : Family::attention) && known->min_bytes)
    min_bytes = known->min_bytes;
  const CaseCost cost = case_cost(is_gdn ? Family::gdn : Family::attention, min_bytes, p);
  row.flops = cost.flops;
  row.bytes = cost.bytes;

  const RefInputsF64 ref_in = to_f64(d.inputs);
  GdnRefOutputs gdn_ref;
  std::vector<std::string> problems;
  if (pass_has_forward(p.pass)) judge_forward(opt, p, ref_in, is_gdn, gdn_ref, row);
  else row.tol = opt.tolerances.bounds(opt.precision, p.dtype, NAN);  // as `verify --pass bwd`: no o bound used
  if (pass_has_backward(p.pass)) judge_gradients(opt, p, ref_in, is_gdn, row, problems);

  for (std::string& x : output_problems(row, p.dtype)) problems.push_back(std::move(x));  // as `verify` judges
  set_verdict(row, problems);
  judge_conv_caches(opt, p, gdn_ref, row);
  if (!opt.ref_o_path.empty())
    row.reason += (row.reason.empty() ? "" : "; ") + std::string("o judged against --ref-o (float64 computed outside gdnbench)");
  if (pass_has_backward(p.pass)) {  // a PASS rests on the gradients given: say which were not
    std::vector<std::string> absent;
    for (Grad g : kGrads)
      if (gradient_exists(g, p, is_gdn) && opt.grad_paths[size_t(g)].empty()) absent.push_back(grad_name(g));
    if (!absent.empty())
      row.reason += (row.reason.empty() ? "" : "; ") + fmt::format("not given: {}", fmt::join(absent, ", "));
  }
  return row;
}

std::string dump_usage_text() {
  return "usage: gdnbench dump [problem options as for run: --T --B --H --HV --K --V --dtypes --gate --delta\n"
         "                      --h0 --frontend --gate-dist --beta-dist --scale --k-norm --h0-scale --seed\n"
         "                      --pass --dht --seqlens] --out DIR\n"
         "  Writes one problem's inputs (q, k, v, g, beta, h0 as float32 .npy, values exact in the dtype)\n"
         "  and manifest.json to DIR. The options must describe exactly one problem (no lists).\n"
         "  --pass bwd or fwdbwd: also the upstream gradients the harness's backwards get, dO (as o) and,\n"
         "  unless --dht off, dhT (as hT), for gdnbench check --dq ... (the manifest gives the loss).\n"
         "  A packed batch (--seqlens) adds cu_seqlens.npy (int32, num_seqs + 1 offsets); h0, hT, dhT\n"
         "  and dh0 are then [num_seqs, HV, K, V], one state per sequence.\n"
         "  --frontend on: the raw projections and front-end parameters instead of q, k, v, g, beta\n"
         "  (x_q x_k x_v a b A_log dt_bias w_q w_k w_v bias_q bias_k bias_v, with h0 on also the conv\n"
         "  caches cache_q cache_k cache_v; manifest.json gives their layouts and the front end's ops).\n"
         "  Without --suite no suite is read: the option defaults of gdnbench run --help apply\n"
         "  (not the values of suites/default.ini).\n";
}

std::string check_usage_text() {
  return "usage: gdnbench check DIR --o o.npy [--ht hT.npy] [--ht-layout kv|vk] [--variant-name NAME]\n"
         "                      [--pass fwd|bwd|fwdbwd] [--dq dq.npy --dk dk.npy --dv dv.npy --dg dg.npy\n"
         "                       --dbeta dbeta.npy --dh0 dh0.npy]\n"
         "                      [--family gdn|attention] [--precision P] [--ref-o ref.npy]\n"
         "                      [--device NAME] [--csv OUT.csv] [--threads N]\n"
         "                      [--cache-q q.npy --cache-k k.npy --cache-v v.npy] [--tolerances FILE]\n"
         "  Judges an external output against the float64 reference of the inputs in DIR (from\n"
         "  gdnbench dump), with the metrics and tolerance table of gdnbench verify. o: [B, T, HV, V]\n"
         "  as <f4, <f8, <f2 or <u2 (bf16 bits); hT: [B, HV, K, V] (vk: [B, HV, V, K]). --ref-o: a\n"
         "  float64 o computed elsewhere (attention too large for the CPU reference). --csv: append\n"
         "  the verdict as a row of the CSV schema (untimed). --precision: the row of the tolerance\n"
         "  table (fp32_math, tensor_core, tensor_core_split, tensor_core_frontend, bf16_state;\n"
         "  default tensor_core, or tensor_core_frontend for a front-end dump). A front-end dump\n"
         "  (dump --frontend on): the reference runs the front end too; --cache-q/k/v: the final conv\n"
         "  caches [B, channels, 3], which must be exact. --tolerances FILE: judge by a tolerance file (a path, or a name in\n"
         "  tolerances/; default builtin, docs/TOLERANCES.md); the verdict and the row name it.\n"
         "  Gradients (a dump of dump --pass bwd or fwdbwd, which holds dO and dhT): --dq --dk --dv\n"
         "  --dg --dbeta --dh0, any of them (dg with a gate, dh0 with h0), in the inputs' layouts (dq, dk\n"
         "  [B, T, H, K], dv [B, T, HV, V], dg, dbeta [B, T, HV], dh0 [B, HV, K, V]), judged against the\n"
         "  float64 backward by the bounds of verify --pass bwd (fp32_math and tensor_core have them).\n"
         "  --family attention: dq, dk, dv of causal attention (q, k, v of the dump, dO as its dout),\n"
         "  against the float64 attention backward, on whole heads sampled past its budget\n"
         "  (--attention-ref full|sampled|auto, default auto, as verify's).\n"
         "  --pass: what is judged; without it, what is given: o (fwd), gradients (bwd), or both (fwdbwd).\n"
         "  Exit 0 PASS, 1 FAIL, 2 usage error.\n";
}

int run_dump(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      fmt::print("{}", dump_usage_text());
      return 0;
    }
  const bool has_out = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--out" || a.rfind("--out=", 0) == 0;
  });
  if (!has_out) throw UsageError("dump: --out DIR is required; see gdnbench dump --help");
  const bool has_suite = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--suite" || a.rfind("--suite=", 0) == 0;
  });
  std::vector<std::string> verify_args = {"verify"};
  verify_args.insert(verify_args.end(), args.begin(), args.end());
  std::istringstream no_suite;
  const Invocation inv = has_suite ? parse_invocation(verify_args, false)
                                   : parse_invocation_with_suite(verify_args, false, no_suite, "(none)");
  std::vector<const Problem*> distinct;
  std::vector<std::string> keys;
  for (const Case& c : inv.cases)
    if (std::find(keys.begin(), keys.end(), c.problem.input_key()) == keys.end()) {
      keys.push_back(c.problem.input_key());
      distinct.push_back(&c.problem);
    }
  if (distinct.size() != 1)
    throw UsageError(fmt::format("dump: the options describe {} problems; give one value per option", distinct.size()));
  if (distinct[0]->context > 0)
    throw UsageError("dump: --context is not dumped (the KV cache of attention decode); use --context 0");
  if (distinct[0]->frontend && pass_has_backward(distinct[0]->pass))
    throw UsageError("dump: --pass bwd: a front-end problem has no backward; use --frontend off or --pass fwd");
  try {
    dump_problem(*distinct[0], inv.out_path);
  } catch (const std::bad_alloc&) {  // the problem, not --out: say its sizes and the bytes asked for
    throw std::runtime_error("dump: " + inputs_out_of_memory(*distinct[0], false));
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("dump: --out: {}", e.what()));
  }
  fmt::print("wrote {} ({}, seed {})\n", inv.out_path, problem_text(*distinct[0]), distinct[0]->seed);
  return 0;
}

int run_check(const std::vector<std::string>& args, RunMeta meta) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      fmt::print("{}", check_usage_text());
      return 0;
    }
  std::vector<std::string> flags = {"--o", "--ht", "--ht-layout", "--variant-name", "--family", "--precision",
                                    "--ref-o", "--device", "--csv", "--threads", "--cache-q", "--cache-k",
                                    "--cache-v", "--tolerances", "--pass", "--attention-ref"};
  for (Grad g : kGrads) flags.push_back(fmt::format("--{}", grad_name(g)));
  const Flags f = parse_flags(args, flags, "check", "see gdnbench check --help");
  if (f.positional.size() != 1) throw UsageError("check: give one dump directory; see gdnbench check --help");
  CheckOptions opt;
  opt.dir = f.positional[0];
  const auto get = [&](const char* k, const std::string& def) { return f.values.count(k) ? f.values.at(k) : def; };
  bool any_gradient = false;
  for (Grad g : kGrads) {
    opt.grad_paths[size_t(g)] = get(fmt::format("--{}", grad_name(g)).c_str(), "");
    any_gradient = any_gradient || !opt.grad_paths[size_t(g)].empty();
  }
  // Without --pass: what the files given are of (o, the gradients, or both).
  if (f.values.count("--pass")) {
    const std::optional<Pass> pass = parse_pass(f.values.at("--pass"));
    if (!pass) throw UsageError("check: --pass must be fwd, bwd or fwdbwd");
    opt.pass = *pass;
  } else if (!f.values.count("--o") && !any_gradient) {
    throw UsageError("check: --o o.npy is required (or a backward's gradients, --dq ...); see gdnbench check --help");
  } else {
    opt.pass = !any_gradient ? Pass::fwd : f.values.count("--o") ? Pass::fwdbwd : Pass::bwd;
  }
  opt.o_path = get("--o", "");
  opt.ht_path = get("--ht", "");
  const std::string layout = get("--ht-layout", "kv");
  if (layout != "kv" && layout != "vk") throw UsageError("check: --ht-layout must be kv or vk");
  opt.ht_vk = layout == "vk";
  opt.ref_o_path = get("--ref-o", "");
  const int caches = int(f.values.count("--cache-q") + f.values.count("--cache-k") + f.values.count("--cache-v"));
  if (caches != 0 && caches != 3)
    throw UsageError("check: give all of --cache-q, --cache-k and --cache-v (the final conv caches) or none");
  if (caches == 3) opt.cache_paths = {f.values.at("--cache-q"), f.values.at("--cache-k"), f.values.at("--cache-v")};
  opt.variant = get("--variant-name", "external");
  if (opt.variant.empty()) throw UsageError("check: --variant-name must not be empty");
  opt.family = get("--family", "gdn");
  // The default row of the tolerance table: that of the harness's variants of the dump's kind (a
  // front-end dump: tensor_core_frontend, q, k, v rounded to the dtype after the front end).
  const std::string prec = f.values.count("--precision") ? f.values.at("--precision")
                           : read_manifest(opt.dir).problem.frontend ? "tensor_core_frontend"
                                                                     : "tensor_core";
  const std::optional<Precision> precision = parse_precision(prec);
  if (!precision)
    throw UsageError(fmt::format("check: --precision must be {}", precision_list()));
  opt.precision = *precision;
  try {
    opt.tolerances = read_tolerance_profile(get("--tolerances", ToleranceProfile::kBuiltinName));
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("check: {}", e.what()));
  }
  opt.device = get("--device", "external");
  const std::string attention_ref = get("--attention-ref", "auto");
  const std::optional<RefMode> mode = parse_ref_mode(attention_ref);
  if (!mode) throw UsageError(fmt::format("check: --attention-ref: '{}' is not full, sampled or auto", attention_ref));
  opt.attention_ref = *mode;
  const std::string threads = get("--threads", "0");
  if (threads.empty() || threads.size() > 6 || threads.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("check: --threads must be a non-negative integer");
  opt.threads = std::stoi(threads) > 0 ? std::stoi(threads) : int(std::max(1u, std::thread::hardware_concurrency()));

  const ResultRow row = check_external(opt);
  const Problem& p = row.problem;
  std::vector<std::string> measured;
  if (row.o.present)
    measured.push_back(fmt::format("o rel_l2 {:.3g} (bound {:.3g}, {:.2f}x the rounding floor)", row.o.rel_l2,
                                   row.tol.o_rel_l2, row.o.err_vs_floor));
  if (row.ht.present) measured.push_back(fmt::format("hT rel_l2 {:.3g} (bound {:.3g})", row.ht.rel_l2, row.tol.ht_rel_l2));
  for (Grad g : kGrads)
    if (row.grad[size_t(g)].present)
      measured.push_back(fmt::format("{} rel_l2 {:.3g} (bound {:.3g})", grad_name(g), row.grad[size_t(g)].rel_l2,
                                     row.tol.grad_rel_l2[size_t(g)]));
  std::string line = fmt::format("{} {} {} {}: {}", status_name(row.status), opt.variant, opt.family, problem_text(p),
                                 fmt::join(measured, ", "));
  line += fmt::format("; tolerances {} {}", opt.tolerances.name(), opt.tolerances.hash());
  if (!row.reason.empty()) line += "; " + row.reason;
  fmt::print("{}\n", line);

  if (f.values.count("--csv")) {
    const std::string out = f.values.at("--csv");
    // Claimed (a regular file or none, locked), then read and validated whole under the lock: a
    // file cut short or of another schema is refused and left as it is, not appended to.
    std::optional<OutputFile> file;
    std::string existing;
    try {
      file.emplace(out, true);
      existing = file->read_existing();
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("check: --csv: {}", e.what()));
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("check: --csv: cannot write '{}' ({})", out, e.what()));
    }
    if (!existing.empty()) {
      try {
        CsvWriter::check_appendable(existing);
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("check: --csv: '{}' is not a gdnbench CSV of schema v{} to append to: {}", out,
                                     kCsvSchemaVersion, e.what()));
      }
      const std::string other = first_row_of_another_profile(parse_gdnbench_csv(existing, out, {}, "check"),
                                                             opt.tolerances.name(), opt.tolerances.hash());
      if (!other.empty())
        throw UsageError(fmt::format("check: --csv: '{}' {}, this check by {} {} (one CSV, one contract: give its "
                                     "--tolerances, or another --csv)",
                                     out, other, opt.tolerances.name(), opt.tolerances.hash()));
    }
    meta.command = "check";
    meta.suite = opt.dir;
    meta.seed = p.seed;
    meta.run_id = fmt::format("{}-{:x}", meta.timestamp, p.seed);
    meta.tolerances = opt.tolerances.name();
    meta.tolerances_hash = opt.tolerances.hash();
    try {
      CsvWriter w(std::move(*file), meta, existing);
      w.append(row);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("check: --csv: {}", e.what()));
    }
    fmt::print("appended to {}\n", out);
  }
  return row.status == Status::pass ? 0 : 1;
}
