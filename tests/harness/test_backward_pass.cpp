// The pass axis (--pass fwd|bwd|fwdbwd, --dht): parsing, the inputs it adds without changing the
// forward's, the CPU backwards judged against the float64 gradients, the SKIPPED rows of variants
// without a backward, poisoned gradients, and the CSV readers (schema v4 and older, resume, compare)
// telling the passes apart.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "harness/analysis/compare.h"
#include "harness/cpu_variants.h"
#include "harness/io/csv.h"
#include "harness/io/csv_read.h"
#include "harness/io/resume.h"
#include "harness/io/tolerance_file.h"
#include "harness/runner.h"
#include "harness/skip.h"
#include "tests/common/cli_test_util.h"
#include "tests/common/test_util.h"

namespace {

using clitest::parse;

Problem small_problem(Pass pass) {
  Problem p;
  p.shape = GdnShape{2, 21, 2, 4, 16, 8};
  p.use_h0 = true;
  p.chunk = 16;
  p.seed = 77;
  p.pass = pass;
  return p;
}

RunOptions cpu_options() {
  RunOptions opt;
  opt.cpu_threads = 2;
  opt.check_determinism = true;
  return opt;
}

// The variant as registered, but declaring no backward: a forward-only variant.
VariantInfo forward_only(const char* name) {
  VariantInfo v = *find_variant(name);
  v.has_backward = false;
  return v;
}

// A run that returns dq with one element unwritten (the poison left in it): a backward that skips
// an element.
class DropsOneGradient final : public VariantRun {
 public:
  DropsOneGradient(std::unique_ptr<VariantRun> inner, Grad which) : inner_(std::move(inner)), which_(which) {}
  void poison_outputs() override { inner_->poison_outputs(); }
  void launch() override { inner_->launch(); }
  RunOutputs read_outputs() override {
    RunOutputs out = inner_->read_outputs();
    std::vector<float>& g = which_ == Grad::dq ? out.dq : which_ == Grad::dg ? out.dg : out.dh0;
    g.back() = poison_value_f32();
    return out;
  }

 private:
  std::unique_ptr<VariantRun> inner_;
  Grad which_;
};

template <Grad which>
std::unique_ptr<VariantRun> create_dropping(const Problem& p, const HostInputs& in, const RunContext& ctx) {
  return std::make_unique<DropsOneGradient>(create_cpu_recurrent(p, in, ctx), which);
}

RunMeta meta_for(uint64_t seed) {
  RunMeta m;
  m.run_id = "r";
  m.command = "verify";
  m.suite = "s";
  m.seed = seed;
  m.tolerances = ToleranceProfile::builtin().name();
  m.tolerances_hash = ToleranceProfile::builtin().hash();
  return m;
}

ResultRow row_of(const Problem& p, Status status) {
  ResultRow r;
  r.problem = p;
  r.variant = "cpu_recurrent";
  r.family = "gdn";
  r.status = status;
  return r;
}

}  // namespace

TEST_CASE("--pass is a list axis, fwd by default; --dht multiplies only the backward passes", "[harness][pass]") {
  SECTION("the default is the forward, as before the axis") {
    const Invocation inv = parse({"verify", "--variants", "cpu_recurrent", "--dtypes", "fp32", "--T", "8"});
    REQUIRE(inv.cases.size() == 1);
    CHECK(inv.cases[0].problem.pass == Pass::fwd);
  }
  SECTION("each pass a case; dht on and off for the backward ones only") {
    const Invocation inv =
        parse({"verify", "--variants", "cpu_recurrent", "--dtypes", "fp32", "--T", "8", "--pass", "fwd,bwd,fwdbwd",
               "--dht", "on,off"});
    REQUIRE(inv.cases.size() == 5);
    CHECK(std::count_if(inv.cases.begin(), inv.cases.end(), [](const Case& c) { return c.problem.pass == Pass::fwd; }) == 1);
    CHECK(std::count_if(inv.cases.begin(), inv.cases.end(),
                        [](const Case& c) { return c.problem.pass == Pass::bwd && !c.problem.use_dht; }) == 1);
    CHECK(std::count_if(inv.cases.begin(), inv.cases.end(),
                        [](const Case& c) { return c.problem.pass == Pass::fwdbwd && c.problem.use_dht; }) == 1);
  }
  SECTION("a bad value is a usage error naming the flag and the values") {
    CHECK_THROWS_WITH(parse({"verify", "--pass", "fwd,sideways"}),
                      Catch::Contains("--pass: unknown value 'sideways' (use fwd, bwd, fwdbwd)"));
    CHECK_THROWS_WITH(parse({"verify", "--pass", "fwd,,bwd"}), Catch::Contains("--pass: empty item"));
    CHECK_THROWS_WITH(parse({"verify", "--pass", "bwd", "--dht", "maybe"}), Catch::Contains("--dht: 'maybe' is not on or off"));
  }
  SECTION("the binary: one line on stderr and exit 2") {
    const testutil::ProcessResult r = testutil::run_gdnbench("verify --pass backward --no-progress");
    CHECK(r.exit_code == 2);
    REQUIRE(r.err_lines().size() == 1);
    CHECK_THAT(r.err_lines()[0], Catch::Contains("--pass: unknown value 'backward'"));
  }
}

TEST_CASE("a backward pass draws dO and dhT apart: the forward inputs are those of the forward", "[harness][pass]") {
  const Problem fwd = small_problem(Pass::fwd);
  Problem bwd = small_problem(Pass::bwd);
  // The forward's key as it was before the axis: the pass adds to it only for a backward.
  CHECK(fwd.input_key() == "2/21/2/4/16/8/fp32/gtrue/dtrue/htrue/logsigmoid/sigmoid/0/77/kn1/h0s1/ctx0");
  CHECK(bwd.input_key() == fwd.input_key() + "/grad/dhttrue");
  Problem no_dht = bwd;
  no_dht.use_dht = false;
  CHECK(no_dht.input_key() != bwd.input_key());

  const HostInputs a = make_inputs(fwd), b = make_inputs(bwd), c = make_inputs(no_dht);
  CHECK(a.q == b.q);
  CHECK(a.k == b.k);
  CHECK(a.v == b.v);
  CHECK(a.g == b.g);
  CHECK(a.beta == b.beta);
  CHECK(a.h0 == b.h0);
  CHECK(a.dout.empty());
  CHECK(a.dhT.empty());
  CHECK(int64_t(b.dout.size()) == fwd.shape.v_elems());
  CHECK(int64_t(b.dhT.size()) == fwd.shape.state_elems());
  CHECK(b.dout != b.v);  // a stream of its own, not a copy of an input's
  CHECK(c.dout == b.dout);
  CHECK(c.dhT.empty());
}

TEST_CASE("the CPU backwards pass against the float64 gradients, every feature", "[harness][pass]") {
  const char* variant = GENERATE("cpu_recurrent", "cpu_chunked");
  const Pass pass = GENERATE(Pass::bwd, Pass::fwdbwd);
  const bool gate = GENERATE(true, false), delta = GENERATE(true, false), h0 = GENERATE(true, false);
  const DType dtype = GENERATE(DType::f32, DType::bf16);
  Problem p = small_problem(pass);
  p.use_gate = gate;
  p.use_delta = delta;
  p.use_h0 = h0;
  p.dtype = dtype;
  p.use_dht = h0;  // both settings of dhT over the feature grid
  INFO(variant << " " << pass_name(pass) << " gate " << gate << " delta " << delta << " h0 " << h0 << " "
               << dtype_name(dtype));
  const ResultRow row = verify_single_case(Case{p, find_variant(variant), true}, cpu_options(), make_inputs(p));
  INFO(row.reason);
  REQUIRE(row.status == Status::pass);
  CHECK(row.deterministic == "yes");
  CHECK(row.o.present == (pass == Pass::fwdbwd));
  CHECK(row.ht.present == (pass == Pass::fwdbwd));
  for (Grad g : kGrads) {
    const TensorMetrics& m = row.grad[size_t(g)];
    INFO(grad_name(g));
    // dg exists only with a gate, dh0 only with h0: absent ones are not compared, not passed.
    const bool exists = (g != Grad::dg || gate) && (g != Grad::dh0 || h0);
    CHECK(m.present == exists);
    if (!exists) continue;
    CHECK(m.compared > 0);
    CHECK(m.rel_l2 <= row.tol.grad_rel_l2[size_t(g)]);
    CHECK(row.tol.grad_rel_l2[size_t(g)] > 0);
    if (g == Grad::dbeta && !delta) CHECK(m.rel_l2 == 0.0);  // beta unread: its gradient exactly zero
  }
}

TEST_CASE("backward rows of a variant without a backward are SKIPPED with the reason", "[harness][pass]") {
  const VariantInfo v = forward_only("cpu_chunked");
  for (Pass pass : {Pass::bwd, Pass::fwdbwd}) {
    const Problem p = small_problem(pass);
    const ResultRow row = verify_single_case(Case{p, &v, true}, cpu_options(), make_inputs(p));
    CHECK(row.status == Status::skipped);
    CHECK_THAT(row.reason, Catch::StartsWith("no backward pass"));
  }
  const Problem fwd = small_problem(Pass::fwd);
  CHECK(!skip_reason(v, fwd, GpuInfo{}));
  CHECK(verify_single_case(Case{fwd, &v, true}, cpu_options(), make_inputs(fwd)).status == Status::pass);
}

TEST_CASE("an unwritten gradient element fails the row", "[harness][pass]") {
  const Grad which = GENERATE(Grad::dq, Grad::dg, Grad::dh0);
  VariantInfo v = *find_variant("cpu_recurrent");
  v.create = which == Grad::dq ? create_dropping<Grad::dq> : which == Grad::dg ? create_dropping<Grad::dg>
                                                                                : create_dropping<Grad::dh0>;
  const Problem p = small_problem(Pass::bwd);
  const ResultRow row = verify_single_case(Case{p, &v, true}, cpu_options(), make_inputs(p));
  CHECK(row.status == Status::fail);
  CHECK_THAT(row.reason, Catch::Contains(std::string(grad_name(which)) + ": 0 non-finite, 1 unwritten"));
}

TEST_CASE("a backward row without a gradient bound fails instead of passing unjudged", "[harness][pass]") {
  ToleranceProfile none = parse_tolerance_text("fp32_math fp32 o=1e-5\n", "p.txt");
  // No way to state "no bound" in a file (a bound must be positive), so the check is on the rule:
  // grad_bound_at gives 0 where an entry has no gradient bound, and 0 fails.
  CHECK(none.grad_bound_at(Precision::tensor_core_frontend, DType::bf16, Grad::dq, 1e-3) == 0.0);
  CHECK(none.grad_bound_at(Precision::tensor_core, DType::bf16, Grad::dg, 1e-3) == Approx(2.5e-3));
  CHECK(none.grad_bound_at(Precision::fp32_math, DType::bf16, Grad::dq, 1e-3) == Approx(2.5e-3));
  CHECK(none.grad_bound_at(Precision::fp32_math, DType::bf16, Grad::dq, 2e-3) == Approx(3e-3));  // 1.5 floors
  ResultRow row = row_of(small_problem(Pass::bwd), Status::pass);
  row.precision = "tensor_core_frontend";
  row.grad[size_t(Grad::dq)].present = true;
  row.grad[size_t(Grad::dq)].compared = row.grad[size_t(Grad::dq)].referenced = 10;
  const std::vector<std::string> problems = output_problems(row, DType::bf16);
  REQUIRE(!problems.empty());
  CHECK_THAT(problems[0], Catch::Contains("no bound for tensor_core_frontend bf16"));
}

TEST_CASE("tolerance files state gradient bounds; the float32 ones take no floor multiple", "[harness][pass]") {
  const ToleranceProfile p = parse_tolerance_text("fp32_math bf16 dq=3x_floor dg=2e-4\n", "grads.txt");
  CHECK(p.grad_bound(Precision::fp32_math, DType::bf16, Grad::dq).times_floor);
  CHECK(p.grad_bound(Precision::fp32_math, DType::bf16, Grad::dg).value == 2e-4);
  CHECK(p.hash() != ToleranceProfile::builtin().hash());
  CHECK_THROWS_WITH(parse_tolerance_text("fp32_math bf16 dh0=3x_floor\n", "g.txt"),
                    Catch::Contains("dh0 is compared in float32"));
  // The built-in table's gradient bounds are part of its canonical text, which reads back the same.
  CHECK_THAT(ToleranceProfile::builtin().canonical_text(), Catch::Contains("dbeta="));
  CHECK(parse_tolerance_text(ToleranceProfile::builtin().canonical_text(), "copy.txt").hash() ==
        ToleranceProfile::builtin().hash());
}

TEST_CASE("schema v4 records the pass; readers take older rows as forward rows", "[harness][pass][csv]") {
  REQUIRE(kCsvSchemaVersion >= 4);  // v5 added seqlens beside it
  const std::vector<std::string> cols = csv_columns();
  for (const char* c : {"pass", "dht", "tol_dq", "dq_rel_l2", "dq_floor_rel_l2", "dh0_rel_l2", "dbeta_floor_rel_l2"})
    CHECK(std::find(cols.begin(), cols.end(), c) != cols.end());

  ResultRow bwd = row_of(small_problem(Pass::bwd), Status::pass);
  bwd.grad[size_t(Grad::dk)].present = true;
  bwd.grad[size_t(Grad::dk)].rel_l2 = 1.25e-7;
  bwd.tol.grad_rel_l2[size_t(Grad::dk)] = 5e-6;
  const ResultRow fwd = row_of(small_problem(Pass::fwd), Status::pass);
  const std::string text = csv_header_line() + csv_row_line(meta_for(77), fwd) + csv_row_line(meta_for(77), bwd);
  const CsvTable t = parse_gdnbench_csv(text, "v4.csv", {"pass"});
  REQUIRE(t.rows.size() == 2);
  CHECK(row_pass(t, 0) == "fwd");
  CHECK(t.cell(0, "dht") == "");
  CHECK(t.cell(0, "dk_rel_l2") == "");  // empty for forward rows
  CHECK(row_pass(t, 1) == "bwd");
  CHECK(t.cell(1, "dht") == "on");
  CHECK(t.number(1, "dk_rel_l2") == 1.25e-7);
  CHECK(t.number(1, "tol_dk") == 5e-6);
  CHECK(t.cell(1, "dq_rel_l2") == "");  // not compared

  // A v3 file: no pass column; its rows are forward rows.
  const std::string v3 = "schema_version,variant,dtype,status\n3,cpu_recurrent,fp32,PASS\n";
  const CsvTable old = parse_gdnbench_csv(v3, "v3.csv", {});
  CHECK(row_pass(old, 0) == "fwd");
}

TEST_CASE("--resume and compare tell a case's passes apart", "[harness][pass][csv]") {
  const uint64_t seed = 77;
  const ResultRow fwd = row_of(small_problem(Pass::fwd), Status::pass);
  const std::string csv = csv_header_line() + csv_row_line(meta_for(seed), fwd);

  SECTION("resume: the forward row done, the backward cases of the same problem still to run") {
    Invocation inv;
    inv.seed = seed;
    inv.seed_given = true;
    for (Pass pass : {Pass::fwd, Pass::bwd, Pass::fwdbwd}) inv.cases.push_back({small_problem(pass), find_variant("cpu_recurrent"), true});
    const ResumeState st = apply_resume_text(inv, csv, "out.csv");
    CHECK(st.skipped_cases == 1);
    REQUIRE(inv.cases.size() == 2);
    CHECK(inv.cases[0].problem.pass == Pass::bwd);
    CHECK(inv.cases[1].problem.pass == Pass::fwdbwd);
  }
  SECTION("compare: a backward row is not the forward row of the same problem") {
    const ResultRow bwd = row_of(small_problem(Pass::bwd), Status::pass);
    const CsvTable base = parse_gdnbench_csv(csv, "base.csv", {});
    const CsvTable fresh =
        parse_gdnbench_csv(csv_header_line() + csv_row_line(meta_for(seed), fwd) + csv_row_line(meta_for(seed), bwd),
                           "new.csv", {});
    const CompareResult r = compare_tables(base, fresh, CompareOptions{});
    REQUIRE(r.rows.size() == 2);
    CHECK(r.rows[0].verdict == CompareVerdict::untimed);  // fwd against fwd
    CHECK(r.rows[1].verdict == CompareVerdict::only_new);
    CHECK_THAT(r.rows[1].key, Catch::Contains("pass=bwd"));
  }
  SECTION("compare: a v3 forward row matches a v4 one") {
    std::string v3 = "schema_version,variant,dtype,B,T,status,suite,device\n3,cpu_recurrent,fp32,2,21,PASS,s,\n";
    std::string v4 = "schema_version,variant,dtype,B,T,status,suite,device,pass,dht\n4,cpu_recurrent,fp32,2,21,PASS,s,,fwd,\n";
    const CompareResult r =
        compare_tables(parse_gdnbench_csv(v3, "a.csv", {}), parse_gdnbench_csv(v4, "b.csv", {}), CompareOptions{});
    REQUIRE(r.rows.size() == 1);
    CHECK(r.rows[0].verdict == CompareVerdict::untimed);
  }
}
