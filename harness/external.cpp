// `gdnbench dump` and `gdnbench check` (harness/external.h).
#include "harness/external.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

// Boost 1.74's property_tree pulls in boost/bind.hpp, which warns unless told how to place its
// placeholders; this file uses none of them.
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <fmt/format.h>

#include "harness/cli.h"
#include "harness/csv.h"
#include "harness/csv_read.h"
#include "harness/npy.h"
#include "harness/runner.h"

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
  return std::move(a.values);
}

std::string problem_text(const Problem& p) {
  const GdnShape& s = p.shape;
  return fmt::format("{} B={} T={} H={} HV={} K={} V={} gate={} delta={} h0={}", dtype_name(p.dtype), s.B,
                     s.T, s.H, s.HV, s.K, s.V, p.use_gate ? "on" : "off", p.use_delta ? "on" : "off",
                     p.use_h0 ? "on" : "off");
}

}  // namespace

void dump_problem(const Problem& p, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("cannot create directory '{}'", dir));
  const HostInputs in = make_inputs(p);
  const GdnShape& s = p.shape;
  const auto path = [&](const char* f) { return (fs::path(dir) / f).string(); };
  write_npy(path("q.npy"), dims({s.B, s.T, s.H, s.K}), in.q.data(), NpyType::f4);
  write_npy(path("k.npy"), dims({s.B, s.T, s.H, s.K}), in.k.data(), NpyType::f4);
  write_npy(path("v.npy"), dims({s.B, s.T, s.HV, s.V}), in.v.data(), NpyType::f4);
  if (p.use_gate) write_npy(path("g.npy"), dims({s.B, s.T, s.HV}), in.g.data(), NpyType::f4);
  write_npy(path("beta.npy"), dims({s.B, s.T, s.HV}), in.beta.data(), NpyType::f4);
  if (p.use_h0) write_npy(path("h0.npy"), dims({s.B, s.HV, s.K, s.V}), in.h0.data(), NpyType::f4);

  std::string files = "\"q\": \"q.npy\", \"k\": \"k.npy\", \"v\": \"v.npy\"";
  if (p.use_gate) files += ", \"g\": \"g.npy\"";
  files += ", \"beta\": \"beta.npy\"";
  if (p.use_h0) files += ", \"h0\": \"h0.npy\"";
  std::string m = "{\n";
  m += fmt::format("  \"format\": \"gdnbench-dump\",\n  \"version\": {},\n", kDumpVersion);
  m += fmt::format("  \"B\": {}, \"T\": {}, \"H\": {}, \"HV\": {}, \"K\": {}, \"V\": {},\n", s.B, s.T, s.H,
                   s.HV, s.K, s.V);
  m += fmt::format("  \"dtype\": \"{}\",\n", dtype_name(p.dtype));
  m += "  \"storage\": \"every file is float32 (<f4); q, k, v hold values exactly representable in dtype, "
       "so casting them to dtype does not round\",\n";
  m += fmt::format("  \"scale\": {:.17g},\n", p.resolved_scale());
  m += fmt::format("  \"seed\": {},\n", p.seed);
  m += fmt::format("  \"gate\": {}, \"delta\": {}, \"h0\": {},\n", json_bool(p.use_gate),
                   json_bool(p.use_delta), json_bool(p.use_h0));
  m += fmt::format("  \"gate_dist\": \"{}\", \"beta_dist\": \"{}\", \"k_norm\": {:.17g}, \"h0_scale\": {:.17g},\n",
                   gate_dist_name(p.gate_dist), beta_dist_name(p.beta_dist), p.k_norm, p.h0_scale);
  m += fmt::format("  \"distributions\": {},\n", json_string(p.distributions()));
  m += "  \"files\": {" + files + "},\n";
  m += "  \"layouts\": {\"q\": \"[B, T, H, K]\", \"k\": \"[B, T, H, K]\", \"v\": \"[B, T, HV, V]\", "
       "\"g\": \"[B, T, HV] log decay\", \"beta\": \"[B, T, HV]\", \"h0\": \"[B, HV, K, V] float32\", "
       "\"o\": \"[B, T, HV, V] in dtype\", \"hT\": \"[B, HV, K, V] float32\"},\n";
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
  } catch (const pt::ptree_error& e) {
    throw UsageError(fmt::format("check: {}: {}", manifest, e.what()));
  }
  const GdnShape& s = p.shape;
  for (int64_t x : {s.B, s.T, s.H, s.HV, s.K, s.V})
    if (x <= 0 || x > 2147483647) throw UsageError(fmt::format("check: {}: sizes must be positive ints", manifest));
  if (s.HV % s.H != 0) throw UsageError(fmt::format("check: {}: HV is not a multiple of H", manifest));
  if (!(p.scale > 0)) throw UsageError(fmt::format("check: {}: scale must be positive", manifest));
  // The command line's ranges (a manifest is another way to state a problem).
  if (const std::string bad = problem_option_error(p.scale, p.k_norm, p.h0_scale); !bad.empty())
    throw UsageError(fmt::format("check: {}: {}", manifest, bad.substr(2)));
  for (const char* key : {"q", "k", "v", "g", "beta", "h0"})
    d.files[key] = m.get<std::string>(std::string("files.") + key, "");
  return d;
}

DumpedProblem read_dump(const std::string& dir) {
  const std::string manifest = (fs::path(dir) / "manifest.json").string();
  if (!fs::is_regular_file(manifest))
    throw UsageError(fmt::format("check: no '{}' (make the directory with gdnbench dump)", manifest));
  std::ifstream mf(manifest, std::ios::binary);
  if (!mf) throw UsageError(fmt::format("check: {}: not valid JSON ({}: cannot open file)", manifest, manifest));
  std::ostringstream text;
  text << mf.rdbuf();
  const DumpManifest m = parse_dump_manifest(text.str(), manifest);
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
  in.q = read_input(dir, file("q"), "q", dims({s.B, s.T, s.H, s.K}));
  in.k = read_input(dir, file("k"), "k", dims({s.B, s.T, s.H, s.K}));
  in.v = read_input(dir, file("v"), "v", dims({s.B, s.T, s.HV, s.V}));
  if (p.use_gate) in.g = read_input(dir, file("g"), "g", dims({s.B, s.T, s.HV}));
  in.beta = read_input(dir, file("beta"), "beta", dims({s.B, s.T, s.HV}));
  if (p.use_h0) in.h0 = read_input(dir, file("h0"), "h0", dims({s.B, s.HV, s.K, s.V}));
  return d;
}

ResultRow check_external(const CheckOptions& opt) {
  const DumpedProblem d = read_dump(opt.dir);
  const Problem& p = d.problem;
  const GdnShape& s = p.shape;
  const bool is_gdn = opt.family == "gdn";
  if (!is_gdn && opt.family != "attention")
    throw UsageError(fmt::format("check: --family '{}' is not gdn or attention", opt.family));
  if (!is_gdn && s.H != s.HV) throw UsageError("check: --family attention needs H == HV");

  ResultRow row;
  row.problem = p;
  row.variant = opt.variant;
  row.family = opt.family;
  row.backend = "ext";
  row.precision = precision_name(opt.precision);
  row.device = opt.device;
  row.flops = is_gdn ? gdn_flops(p) : attention_flops(p);
  row.bytes = is_gdn ? gdn_min_bytes(p) : attention_min_bytes(p);
  row.tol = tolerance_for(opt.precision, p.dtype);

  const std::vector<double> o_ext = read_output(opt.o_path, "--o", dims({s.B, s.T, s.HV, s.V}));
  std::vector<double> hT_ext;
  if (!opt.ht_path.empty()) {
    if (!is_gdn) throw UsageError("check: --ht is for --family gdn only");
    hT_ext = read_output(opt.ht_path, "--ht", opt.ht_vk ? dims({s.B, s.HV, s.V, s.K}) : dims({s.B, s.HV, s.K, s.V}));
    if (opt.ht_vk) {  // to the canonical K x V layout
      std::vector<double> kv(hT_ext.size());
      for (int64_t bh = 0; bh < s.B * s.HV; ++bh)
        for (int64_t i = 0; i < s.K; ++i)
          for (int64_t j = 0; j < s.V; ++j) kv[(bh * s.K + i) * s.V + j] = hT_ext[(bh * s.V + j) * s.K + i];
      hT_ext.swap(kv);
    }
  }

  std::vector<double> ref_o;
  GdnRefOutputs gdn_ref;
  const RefInputsF64 ref_in = to_f64(d.inputs);
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
  row.tol.o_rel_l2 = rounding_floor_bound(row.tol.o_rel_l2, row.o.floor_rel_l2);  // as `verify` judges
  if (!hT_ext.empty()) row.ht = compare_to_reference(std::vector<float>(hT_ext.begin(), hT_ext.end()), gdn_ref.hT, DType::f32);

  const std::vector<std::string> problems = output_problems(row, p.dtype);  // as `verify` judges
  row.status = problems.empty() ? Status::pass : Status::fail;
  for (const std::string& x : problems) row.reason += (row.reason.empty() ? "" : "; ") + x;
  if (!opt.ref_o_path.empty())
    row.reason += (row.reason.empty() ? "" : "; ") + std::string("o judged against --ref-o (float64 computed outside gdnbench)");
  return row;
}

std::string dump_usage_text() {
  return "usage: gdnbench dump [problem options as for run: --T --B --H --HV --K --V --dtypes --gate --delta\n"
         "                      --h0 --gate-dist --beta-dist --scale --k-norm --h0-scale --seed] --out DIR\n"
         "  Writes one problem's inputs (q, k, v, g, beta, h0 as float32 .npy, values exact in the dtype)\n"
         "  and manifest.json to DIR. The options must describe exactly one problem (no lists).\n"
         "  Without --suite no suite is read: the defaults of gdnbench run --help apply.\n";
}

std::string check_usage_text() {
  return "usage: gdnbench check DIR --o o.npy [--ht hT.npy] [--ht-layout kv|vk] [--variant-name NAME]\n"
         "                      [--family gdn|attention] [--precision tensor_core|fp32_math]\n"
         "                      [--ref-o ref.npy] [--device NAME] [--csv OUT.csv] [--threads N]\n"
         "  Judges an external output against the float64 reference of the inputs in DIR (from\n"
         "  gdnbench dump), with the metrics and tolerance table of gdnbench verify. o: [B, T, HV, V]\n"
         "  as <f4, <f8, <f2 or <u2 (bf16 bits); hT: [B, HV, K, V] (vk: [B, HV, V, K]). --ref-o: a\n"
         "  float64 o computed elsewhere (attention too large for the CPU reference). --csv: append\n"
         "  the verdict as a row of the CSV schema (untimed). Exit 0 PASS, 1 FAIL, 2 usage error.\n";
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
  try {
    dump_problem(*distinct[0], inv.out_path);
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
  const Flags f = parse_flags(args, {"--o", "--ht", "--ht-layout", "--variant-name", "--family", "--precision",
                                     "--ref-o", "--device", "--csv", "--threads"},
                              "check", "see gdnbench check --help");
  if (f.positional.size() != 1) throw UsageError("check: give one dump directory; see gdnbench check --help");
  if (!f.values.count("--o")) throw UsageError("check: --o o.npy is required");
  CheckOptions opt;
  opt.dir = f.positional[0];
  const auto get = [&](const char* k, const std::string& def) { return f.values.count(k) ? f.values.at(k) : def; };
  opt.o_path = get("--o", "");
  opt.ht_path = get("--ht", "");
  const std::string layout = get("--ht-layout", "kv");
  if (layout != "kv" && layout != "vk") throw UsageError("check: --ht-layout must be kv or vk");
  opt.ht_vk = layout == "vk";
  opt.ref_o_path = get("--ref-o", "");
  opt.variant = get("--variant-name", "external");
  if (opt.variant.empty()) throw UsageError("check: --variant-name must not be empty");
  opt.family = get("--family", "gdn");
  const std::string prec = get("--precision", "tensor_core");
  if (prec != "tensor_core" && prec != "fp32_math") throw UsageError("check: --precision must be tensor_core or fp32_math");
  opt.precision = prec == "tensor_core" ? Precision::tensor_core : Precision::fp32_math;
  opt.device = get("--device", "external");
  const std::string threads = get("--threads", "0");
  if (threads.empty() || threads.size() > 6 || threads.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("check: --threads must be a non-negative integer");
  opt.threads = std::stoi(threads) > 0 ? std::stoi(threads) : int(std::max(1u, std::thread::hardware_concurrency()));

  const ResultRow row = check_external(opt);
  const Problem& p = row.problem;
  std::string line = fmt::format("{} {} {} {}: o rel_l2 {:.3g} (bound {:.3g}, {:.2f}x the rounding floor)",
                                 status_name(row.status), opt.variant, opt.family, problem_text(p), row.o.rel_l2,
                                 row.tol.o_rel_l2, row.o.err_vs_floor);
  if (row.ht.present) line += fmt::format(", hT rel_l2 {:.3g} (bound {:.3g})", row.ht.rel_l2, row.tol.ht_rel_l2);
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
    }
    meta.command = "check";
    meta.suite = opt.dir;
    meta.seed = p.seed;
    meta.run_id = fmt::format("{}-{:x}", meta.timestamp, p.seed);
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
