// gdnbench._core: the harness for Python, not a second implementation of it. The problems of the
// command line and the suites (harness/io/cli.h, the same flags), their seeded inputs
// (harness/inputs.h), the float64 reference (harness/runner.h) and the judgement of outputs given
// from outside with `verify`'s metrics, bounds and rules (compare_to_reference, forward_bounds,
// output_problems), and the CSV rows of the harness's schema. python/gdnbench/__init__.py builds
// verify() and the layouts of other libraries on it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness/inputs.h"
#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/io/errors.h"
#include "harness/io/tolerance_file.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/runner.h"
#include "harness/tolerance.h"
#include "harness/variant.h"

namespace py = pybind11;

namespace {

using Shape = std::vector<py::ssize_t>;

// One problem, its inputs drawn once, on first use (a suite's problems are listed before any runs).
class PyProblem {
 public:
  explicit PyProblem(Problem p) : p_(std::move(p)) {}
  const Problem& problem() const { return p_; }
  const HostInputs& inputs() const {
    if (p_.frontend)
      throw py::value_error("a front-end problem: its inputs are raw projections, not q, k, v (gdnbench dump --frontend on)");
    if (!in_) in_ = std::make_shared<HostInputs>(make_inputs(p_));
    return *in_;
  }
  std::string describe() const {
    const GdnShape& s = p_.shape;
    std::string t = std::string(dtype_name(p_.dtype)) + " B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) +
                    " H=" + std::to_string(s.H) + " HV=" + std::to_string(s.HV) + " K=" + std::to_string(s.K) +
                    " V=" + std::to_string(s.V) + (p_.use_gate ? " gate" : " no-gate") +
                    (p_.use_delta ? " delta" : " no-delta") + (p_.use_h0 ? " h0" : "");
    if (p_.packed()) t += " seqlens=" + seqlens_text(p_.cu_seqlens);
    if (p_.frontend) t += " frontend";
    if (p_.pass != Pass::fwd) t += std::string(" pass=") + pass_name(p_.pass);
    return t + " | " + p_.distributions();
  }

 private:
  Problem p_;
  mutable std::shared_ptr<HostInputs> in_;
};

// The verdict on one problem's outputs: the harness's row, kept whole for the CSV.
struct Verdict {
  ResultRow row;
};

template <typename T>
py::array_t<T> to_array(const std::vector<T>& x, const Shape& shape) {
  py::array_t<T> a(shape);
  std::copy(x.begin(), x.end(), a.mutable_data());
  return a;
}

// x as float32 in the canonical layout `shape`, any float type (float64 is rounded: o is judged
// as values of the problem's dtype, as `check` reads it).
std::vector<float> read_output(const py::handle& x, const char* what, const Shape& shape) {
  const auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(x);
  if (!a) throw py::value_error(std::string(what) + ": not an array of numbers");
  const Shape got(a.shape(), a.shape() + a.ndim());
  if (got != shape) {
    auto text = [](const Shape& s) {
      std::string t = "(";
      for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
      return t + ")";
    };
    throw py::value_error(std::string(what) + ": shape " + text(got) + " is not " + text(shape));
  }
  return std::vector<float>(a.data(), a.data() + a.size());
}

bool build_has_cuda_variants() {
  return std::any_of(variant_registry().begin(), variant_registry().end(),
                     [](const VariantInfo& v) { return v.backend == Backend::cuda; });
}

// The distinct problems of `verify ARGS` in their order: the cases of every variant and plan on
// one input set are one problem here (a function outside the harness has no plan).
std::vector<PyProblem> problems(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"verify"};
  argv.insert(argv.end(), args.begin(), args.end());
  const Invocation inv = parse_invocation(argv, build_has_cuda_variants());
  if (inv.command == "help") throw py::value_error(inv.help_text);
  std::vector<PyProblem> out;
  std::set<std::string> seen;
  for (const Case& c : inv.cases)
    if (seen.insert(c.problem.input_key() + "/" + pass_name(c.problem.pass)).second) out.emplace_back(c.problem);
  return out;
}

py::dict inputs_dict(const PyProblem& pp) {
  const Problem& p = pp.problem();
  const GdnShape& s = p.shape;
  const HostInputs& in = pp.inputs();
  py::dict d;
  d["q"] = to_array(in.q, {s.B, s.T, s.H, s.K});
  d["k"] = to_array(in.k, {s.B, s.T, s.H, s.K});
  d["v"] = to_array(in.v, {s.B, s.T, s.HV, s.V});
  d["g"] = p.use_gate ? py::object(to_array(in.g, {s.B, s.T, s.HV})) : py::none();
  d["beta"] = to_array(in.beta, {s.B, s.T, s.HV});
  d["h0"] = p.use_h0 ? py::object(to_array(in.h0, {s.sequences(), s.HV, s.K, s.V})) : py::none();
  d["cu_seqlens"] = p.packed() ? py::object(to_array(in.cu_seqlens, {py::ssize_t(in.cu_seqlens.size())})) : py::none();
  return d;
}

GdnRefOutputs reference_of(const PyProblem& pp, int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));  // 0: every core, as --threads
  if (pp.problem().pass != Pass::fwd)
    throw py::value_error("a backward problem: the module judges forwards (gdnbench check --dq ... judges gradients)");
  return gdn_reference_for(pp.problem(), to_f64(pp.inputs()), threads);
}

py::dict reference_dict(const PyProblem& pp, int threads) {
  const GdnShape& s = pp.problem().shape;
  const GdnRefOutputs ref = reference_of(pp, threads);
  py::dict d;
  d["o"] = to_array(ref.o, {s.B, s.T, s.HV, s.V});
  d["hT"] = to_array(ref.hT, {s.sequences(), s.HV, s.K, s.V});
  return d;
}

ToleranceProfile profile_of(const std::string& tolerances) {
  return tolerances.empty() || tolerances == ToleranceProfile::kBuiltinName ? ToleranceProfile::builtin()
                                                                             : read_tolerance_profile(tolerances);
}

// o [B, T, HV, V] and hT [sequences, HV, K, V] (K x V states; None: not judged, and the row says so).
Verdict judge(const PyProblem& pp, const py::handle& o, const py::handle& hT, const std::string& precision_text,
              const std::string& tolerances, const std::string& variant, int threads) {
  const Problem& p = pp.problem();
  const GdnShape& s = p.shape;
  const auto precision = parse_precision(precision_text);
  if (!precision) throw py::value_error("precision: '" + precision_text + "' is not a precision class (gdnbench list --tolerances)");
  const ToleranceProfile profile = profile_of(tolerances);
  // o is judged in the problem's dtype: a wider o (numpy's float32) is rounded to it first, as a
  // kernel writing the dtype rounds (exact for an o already in it; past fp16's range it is inf).
  std::vector<float> o_got = read_output(o, "o", {s.B, s.T, s.HV, s.V});
  for (float& x : o_got) x = round_to(p.dtype, x);
  std::vector<float> ht_got;
  if (!hT.is_none()) ht_got = read_output(hT, "hT", {s.sequences(), s.HV, s.K, s.V});

  Verdict v;
  ResultRow& row = v.row;
  row.problem = p;
  row.variant = variant;
  row.family = "gdn";
  row.backend = "python";
  row.precision = precision_name(*precision);
  row.device = "python";
  const GdnRefOutputs ref = reference_of(pp, threads);
  row.o = compare_to_reference(o_got, ref.o, p.dtype);
  if (!ht_got.empty()) row.ht = compare_to_reference(ht_got, ref.hT, DType::f32);
  row.tol = forward_bounds(profile, *precision, p.dtype, row.o.floor_rel_l2, &ref);
  row.ref_rows = s.T;
  row.ref_heads = s.sequences() * s.HV;
  set_verdict(row, output_problems(row, p.dtype));
  if (ht_got.empty()) row.reason += (row.reason.empty() ? "" : "; ") + std::string("hT not given: o judged alone");
  return v;
}

// A row with no comparison: a problem the caller does not run (SKIPPED), or one whose run raised (FAIL).
Verdict unjudged(const PyProblem& pp, const std::string& variant, Status status, const std::string& reason) {
  Verdict v;
  v.row.problem = pp.problem();
  v.row.variant = variant;
  v.row.family = "gdn";
  v.row.backend = "python";
  v.row.device = "python";
  v.row.status = status;
  v.row.reason = reason;
  return v;
}

py::object optional_metric(const TensorMetrics& m, double x) { return m.present ? py::object(py::float_(x)) : py::none(); }

std::string csv_text(const std::vector<Verdict>& rows, const py::dict& meta_fields) {
  RunMeta meta;
  auto field = [&](const char* key) {
    return meta_fields.contains(key) ? py::str(meta_fields[key]).cast<std::string>() : std::string();
  };
  meta.run_id = field("run_id");
  meta.timestamp = field("timestamp");
  meta.git_sha = field("git_sha");
  meta.host = field("host");
  meta.device = "python";
  meta.command = "python-verify";
  meta.suite = field("suite");
  const ToleranceProfile profile = profile_of(field("tolerances"));
  meta.tolerances = profile.name();
  meta.tolerances_hash = profile.hash();
  std::string text = csv_header_line();
  for (const Verdict& v : rows) text += csv_row_line(meta, v.row);
  return text;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "gdnbench's problems, seeded inputs, float64 reference and judgement (see the gdnbench package)";
  py::register_exception<UsageError>(m, "UsageError", PyExc_ValueError);

  py::class_<PyProblem>(m, "Problem")
      .def_property_readonly("B", [](const PyProblem& p) { return p.problem().shape.B; })
      .def_property_readonly("T", [](const PyProblem& p) { return p.problem().shape.T; })
      .def_property_readonly("H", [](const PyProblem& p) { return p.problem().shape.H; })
      .def_property_readonly("HV", [](const PyProblem& p) { return p.problem().shape.HV; })
      .def_property_readonly("K", [](const PyProblem& p) { return p.problem().shape.K; })
      .def_property_readonly("V", [](const PyProblem& p) { return p.problem().shape.V; })
      .def_property_readonly("sequences", [](const PyProblem& p) { return p.problem().shape.sequences(); })
      .def_property_readonly("dtype", [](const PyProblem& p) { return std::string(dtype_name(p.problem().dtype)); })
      .def_property_readonly("scale", [](const PyProblem& p) { return p.problem().resolved_scale(); })
      .def_property_readonly("use_gate", [](const PyProblem& p) { return p.problem().use_gate; })
      .def_property_readonly("use_delta", [](const PyProblem& p) { return p.problem().use_delta; })
      .def_property_readonly("use_h0", [](const PyProblem& p) { return p.problem().use_h0; })
      .def_property_readonly("packed", [](const PyProblem& p) { return p.problem().packed(); })
      .def_property_readonly("frontend", [](const PyProblem& p) { return p.problem().frontend; })
      .def_property_readonly("pass_", [](const PyProblem& p) { return std::string(pass_name(p.problem().pass)); })
      .def_property_readonly("seed", [](const PyProblem& p) { return p.problem().seed; })
      .def("describe", &PyProblem::describe)
      .def("__repr__", [](const PyProblem& p) { return "<gdnbench.Problem " + p.describe() + ">"; })
      .def("inputs", &inputs_dict,
           "q, k [B, T, H, K], v [B, T, HV, V], g (log decay) and beta [B, T, HV], h0 [sequences, HV, K, V] "
           "as float32 arrays holding values exact in the problem's dtype; g, h0, cu_seqlens None where absent")
      .def("reference", &reference_dict, py::arg("threads") = 0,
           "the float64 o [B, T, HV, V] and hT [sequences, HV, K, V]")
      .def("judge", &judge, py::arg("o"), py::arg("hT") = py::none(), py::arg("precision") = "tensor_core",
           py::arg("tolerances") = "builtin", py::arg("variant") = "python", py::arg("threads") = 0,
           "o and hT (K x V states) in gdnbench's layouts against the float64 reference, as verify judges")
      .def("skipped", [](const PyProblem& p, const std::string& variant, const std::string& reason) {
        return unjudged(p, variant, Status::skipped, reason);
      }, py::arg("variant"), py::arg("reason"))
      .def("failed", [](const PyProblem& p, const std::string& variant, const std::string& reason) {
        return unjudged(p, variant, Status::fail, reason);
      }, py::arg("variant"), py::arg("reason"));

  py::class_<Verdict>(m, "Verdict")
      .def_property_readonly("status", [](const Verdict& v) { return std::string(status_name(v.row.status)); })
      .def_property_readonly("passed", [](const Verdict& v) { return v.row.status == Status::pass; })
      .def_property_readonly("reason", [](const Verdict& v) { return v.row.reason; })
      .def_property_readonly("o_rel_l2", [](const Verdict& v) { return optional_metric(v.row.o, v.row.o.rel_l2); })
      .def_property_readonly("o_floor_rel_l2", [](const Verdict& v) { return optional_metric(v.row.o, v.row.o.floor_rel_l2); })
      .def_property_readonly("o_err_vs_floor", [](const Verdict& v) { return optional_metric(v.row.o, v.row.o.err_vs_floor); })
      .def_property_readonly("o_bound", [](const Verdict& v) { return v.row.tol.o_rel_l2; })
      .def_property_readonly("ht_rel_l2", [](const Verdict& v) { return optional_metric(v.row.ht, v.row.ht.rel_l2); })
      .def_property_readonly("ht_bound", [](const Verdict& v) { return v.row.tol.ht_rel_l2; })
      .def_property_readonly("variant", [](const Verdict& v) { return v.row.variant; })
      .def("__repr__", [](const Verdict& v) {
        return "<gdnbench.Verdict " + std::string(status_name(v.row.status)) +
               (v.row.reason.empty() ? "" : ": " + v.row.reason) + ">";
      });

  m.def("problems", &problems, py::arg("args"),
        "the distinct problems of `gdnbench verify ARGS` (the same flags and suites), in order");
  m.def("csv_text", &csv_text, py::arg("verdicts"), py::arg("meta"),
        "the verdicts as gdnbench's CSV (header and rows); meta: run_id, timestamp, git_sha, host, suite, tolerances");
  m.def("set_data_dir", &set_data_dir, py::arg("dir"),
        "where suites/, claims/ and tolerances/ are found by name after the current directory");
  m.def("find_suite", [](const std::string& name) { return find_named_file(name, "suites", ".ini"); },
        py::arg("name"), "the file a suite name resolves to (\"\" if none)");
  m.def("check_judge_options", [](const std::string& precision, const std::string& tolerances) {
    if (!parse_precision(precision))
      throw py::value_error("precision: '" + precision + "' is not a precision class (gdnbench list --tolerances)");
    profile_of(tolerances);
  }, py::arg("precision"), py::arg("tolerances"), "raises ValueError unless both name what judge() takes");
}
