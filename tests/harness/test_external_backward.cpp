// The backward through `gdnbench dump --pass bwd` and `gdnbench check --dq ...`: the dump holds the
// upstream gradients the harness's backwards get, the CPU backward's gradients written as an
// external kernel would pass, a perturbed or non-finite one fails, and the misuses are one-line
// usage errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/external.h"
#include "harness/io/csv.h"
#include "harness/io/csv_read.h"
#include "harness/io/errors.h"
#include "harness/io/npy.h"
#include "harness/runner.h"
#include "harness/variant.h"
#include "tests/common/external_test_util.h"
#include "tests/common/test_util.h"

namespace {

const std::vector<float>& gradient_of(const RunOutputs& out, Grad g) {
  const std::vector<float>* all[] = {&out.dq, &out.dk, &out.dv, &out.dg, &out.dbeta, &out.dh0};
  return *all[size_t(g)];
}

// Writes gradient g as an external kernel would: dq, dk, dv in the problem's dtype (bf16 bits for
// bf16), the others float32. Returns the path.
std::string write_gradient(const testutil::TempDir& dir, Grad g, const std::vector<float>& x, const Problem& p) {
  const std::string path = dir.file(std::string(grad_name(g)) + ".npy");
  const NpyType type = grad_has_dtype_floor(g) && p.dtype == DType::bf16 ? NpyType::bf16_u2 : NpyType::f4;
  write_npy(path, gradient_shape(g, p.shape), x.data(), type);
  return path;
}

// Attention's dq, dk, dv (float64, e.g. the reference) written as an external kernel would, into opt.
void write_attention_gradients(const testutil::TempDir& dir, CheckOptions& opt, const Problem& p,
                               const std::vector<double>& dq, const std::vector<double>& dk,
                               const std::vector<double>& dv) {
  const std::vector<double>* all[] = {&dq, &dk, &dv};
  for (Grad g : {Grad::dq, Grad::dk, Grad::dv}) {
    const std::vector<double>& x = *all[size_t(g)];
    opt.grad_paths[size_t(g)] = write_gradient(dir, g, std::vector<float>(x.begin(), x.end()), p);
  }
}

}  // namespace

TEST_CASE("dump --pass bwd writes dO and dhT as the harness's backwards draw them", "[external][backward]") {
  testutil::TempDir dir;
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  Problem p = testutil::external_test_problem(seed, DType::bf16, Pass::bwd);
  p.use_dht = GENERATE(true, false);
  INFO("dht " << p.use_dht);
  const std::string dump = dir.file("dump");
  dump_problem(p, dump);

  const DumpedProblem d = read_dump(dump);
  CHECK(d.problem.pass == Pass::bwd);
  CHECK(d.problem.use_dht == p.use_dht);
  Problem resolved = p;
  resolved.scale = p.resolved_scale();
  CHECK(d.problem.input_key() == resolved.input_key());  // the upstream gradients' streams included
  const HostInputs fresh = make_inputs(p);
  REQUIRE(!fresh.dout.empty());
  CHECK(d.inputs.dout == fresh.dout);  // exact: dO is stored as float32 holding bf16 values
  CHECK(d.inputs.dhT == fresh.dhT);    // empty both with --dht off
  CHECK(d.inputs.dhT.empty() == !p.use_dht);
  CHECK(d.inputs.q == fresh.q);  // the forward's inputs stay as they were

  const std::string manifest = testutil::read_text(dump + "/manifest.json");
  CHECK_THAT(manifest, Catch::Contains("\"pass\": \"bwd\""));
  CHECK_THAT(manifest, Catch::Contains(p.use_dht ? "\"dht\": true" : "\"dht\": false"));
  CHECK_THAT(manifest, Catch::Contains("\"dO\": \"dO.npy\""));
  CHECK((manifest.find("\"dhT\": \"dhT.npy\"") != std::string::npos) == p.use_dht);
  CHECK_THAT(manifest, Catch::Contains("\"loss\""));

  SECTION("a forward dump holds no dO and says pass fwd") {
    const std::string fwd = dir.file("fwd");
    dump_problem(testutil::external_test_problem(seed, DType::bf16, Pass::fwd), fwd);
    CHECK_THAT(testutil::read_text(fwd + "/manifest.json"), Catch::Contains("\"pass\": \"fwd\""));
    CHECK(read_dump(fwd).inputs.dout.empty());
    CHECK_FALSE(std::filesystem::exists(fwd + "/dO.npy"));
  }
}

TEST_CASE("check --dq ...: the CPU backward passes, a perturbed or non-finite gradient fails",
          "[external][backward]") {
  testutil::TempDir dir;
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const DType dt = GENERATE(DType::bf16, DType::f32);
  INFO(dtype_name(dt));
  const Problem p = testutil::external_test_problem(seed, dt, Pass::bwd);
  const std::string dump = dir.file("dump");
  dump_problem(p, dump);
  const DumpedProblem d = read_dump(dump);
  const RunOutputs out = testutil::run_cpu_recurrent_on(d);

  CheckOptions opt;
  opt.dir = dump;
  opt.pass = Pass::bwd;
  opt.variant = "ext:cpu";
  opt.precision = Precision::fp32_math;  // the float32 backward's class
  opt.threads = 2;
  for (Grad g : kGrads) opt.grad_paths[size_t(g)] = write_gradient(dir, g, gradient_of(out, g), p);

  SECTION("the honest gradients pass, each compared and bounded as verify --pass bwd does") {
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::pass);
    CHECK(row.reason.empty());
    CHECK(row.problem.pass == Pass::bwd);
    CHECK_FALSE(row.o.present);
    for (Grad g : kGrads) {
      INFO(grad_name(g));
      const TensorMetrics& m = row.grad[size_t(g)];
      CHECK(m.present);
      CHECK(m.rel_l2 > 0);  // float32 arithmetic or the dtype's rounding: never exactly the float64 answer
      CHECK(m.rel_l2 <= row.tol.grad_rel_l2[size_t(g)]);
    }
  }
  SECTION("a perturbed dk fails, and only dk") {
    std::vector<float> bad = out.dk;
    for (size_t i = 0; i < bad.size(); i += 5) bad[i] *= 1.05f;
    opt.grad_paths[size_t(Grad::dk)] = write_gradient(dir, Grad::dk, bad, p);
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK_THAT(row.reason, Catch::Contains("dk rel_l2"));
    CHECK_THAT(row.reason, !Catch::Contains("dq rel_l2"));
    CHECK(row.grad[size_t(Grad::dk)].rel_l2 > row.tol.grad_rel_l2[size_t(Grad::dk)]);
  }
  SECTION("a NaN in dbeta fails with its count") {
    std::vector<float> bad = out.dbeta;
    bad[bad.size() / 3] = NAN;
    opt.grad_paths[size_t(Grad::dbeta)] = write_gradient(dir, Grad::dbeta, bad, p);
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK(row.grad[size_t(Grad::dbeta)].nan_count == 1);
    CHECK_THAT(row.reason, Catch::Contains("dbeta: 1 non-finite"));
  }
  SECTION("dh0 of another head fails: the state's gradient is compared element by element") {
    std::vector<float> swapped = out.dh0;
    const long head = long(p.shape.K * p.shape.V);
    std::swap_ranges(swapped.begin(), swapped.begin() + head, swapped.begin() + head);  // heads 0 and 1
    opt.grad_paths[size_t(Grad::dh0)] = write_gradient(dir, Grad::dh0, swapped, p);
    CHECK(check_external(opt).status == Status::fail);
  }
  SECTION("a subset is judged alone, and the row says what was not given") {
    for (Grad g : kGrads)
      if (g != Grad::dk) opt.grad_paths[size_t(g)].clear();
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::pass);
    CHECK(row.grad[size_t(Grad::dk)].present);
    CHECK_FALSE(row.grad[size_t(Grad::dq)].present);
    CHECK_THAT(row.reason, Catch::Contains("not given: dq, dv, dg, dbeta, dh0"));
  }
  SECTION("the built-in tensor_core class judges gradients by the forward's contract") {
    opt.precision = Precision::tensor_core;
    CHECK(check_external(opt).status == Status::pass);  // float32 gradients: far inside it
    // dg off by 1e-3 relative: past fp32_math's 1e-4, inside tensor_core bf16's 2.5e-3 (as hT's);
    // tensor_core fp32 keeps fp32_math's bounds (a float32-accurate path).
    auto dg_scaled = [&](float f) {
      std::vector<float> x = out.dg;
      for (float& e : x) e *= f;
      opt.grad_paths[size_t(Grad::dg)] = write_gradient(dir, Grad::dg, x, p);
      return check_external(opt);
    };
    const ResultRow near = dg_scaled(1.001f);
    CHECK(near.status == (dt == DType::bf16 ? Status::pass : Status::fail));
    CHECK(near.grad[size_t(Grad::dg)].rel_l2 == Approx(1e-3).epsilon(0.01));
    const ResultRow far = dg_scaled(1.004f);
    CHECK(far.status == Status::fail);
    CHECK_THAT(far.reason, Catch::Contains("dg rel_l2"));
    opt.precision = Precision::fp32_math;
    CHECK(dg_scaled(1.001f).status == Status::fail);
  }
  SECTION("a class with no gradient bounds fails, saying so") {
    opt.precision = Precision::tensor_core_frontend;
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK_THAT(row.reason, Catch::Contains("dq: the tolerance profile has no bound for tensor_core_frontend"));
    CHECK(row.grad[size_t(Grad::dq)].present);  // measured all the same: the figures a bound needs
  }
}

TEST_CASE("check of a backward: misuses are usage errors naming what is wrong", "[external][backward]") {
  testutil::TempDir dir;
  const Problem p = testutil::external_test_problem(testutil::fresh_seed(), DType::f32, Pass::bwd);
  const std::string dump = dir.file("dump");
  dump_problem(p, dump);
  const DumpedProblem d = read_dump(dump);
  const RunOutputs out = testutil::run_cpu_recurrent_on(d);
  CheckOptions opt;
  opt.dir = dump;
  opt.pass = Pass::bwd;
  opt.precision = Precision::fp32_math;
  const std::string dk = write_gradient(dir, Grad::dk, out.dk, p);

  SECTION("no gradient at all: nothing to judge, not a PASS") {
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("give at least one of --dq"));
  }
  SECTION("a gradient of the wrong shape") {
    write_npy(dir.file("dk_short.npy"), {p.shape.B, p.shape.T - 1, p.shape.H, p.shape.K}, out.dk.data(), NpyType::f4);
    opt.grad_paths[size_t(Grad::dk)] = dir.file("dk_short.npy");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("--dk") && Catch::Contains("has shape 2x36x2x16"));
  }
  SECTION("a missing file") {
    opt.grad_paths[size_t(Grad::dq)] = dir.file("nope.npy");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("cannot read"));
  }
  SECTION("dh0 of a problem without h0, dg of one without a gate") {
    Problem q = p;
    q.use_h0 = false;
    q.use_gate = false;
    dump_problem(q, dir.file("plain"));
    opt.dir = dir.file("plain");
    opt.grad_paths[size_t(Grad::dh0)] = dir.file("dh0.npy");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("--dh0: the problem has no h0"));
    opt.grad_paths[size_t(Grad::dh0)].clear();
    opt.grad_paths[size_t(Grad::dg)] = dir.file("dg.npy");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("--dg: the problem has no gate"));
  }
  SECTION("a forward dump has no dO to differentiate against") {
    dump_problem(testutil::external_test_problem(p.seed, DType::f32, Pass::fwd), dir.file("fwd"));
    opt.dir = dir.file("fwd");
    opt.grad_paths[size_t(Grad::dk)] = dk;
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("holds no dO"));
  }
  SECTION("o under --pass bwd, gradients under --pass fwd") {
    opt.grad_paths[size_t(Grad::dk)] = dk;
    opt.o_path = dir.file("o.npy");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("--pass fwdbwd"));
    opt.pass = Pass::fwd;
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("--dk: gradients are judged under --pass bwd"));
  }
}

TEST_CASE("the binary: dump --pass bwd, check --dq ... --csv, exit codes", "[external][backward][cli]") {
  testutil::TempDir dir;
  const std::string dump = dir.file("dump");
  testutil::ProcessResult r = testutil::run_gdnbench("dump --T 40 --B 1 --H 2 --K 16 --V 16 --dtypes bf16 --h0 on "
                                                     "--pass fwdbwd --seed 7 --out '" + dump + "'");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("pass=fwdbwd dht=on"));
  const DumpedProblem d = read_dump(dump);
  REQUIRE(d.problem.pass == Pass::fwdbwd);
  const RunOutputs out = testutil::run_cpu_recurrent_on(d);
  std::string grads;
  for (Grad g : kGrads)
    grads += fmt::format(" --{} '{}'", grad_name(g), write_gradient(dir, g, gradient_of(out, g), d.problem));
  write_npy(dir.file("o.npy"), {1, 40, 2, 16}, out.o.data(), NpyType::bf16_u2);
  write_npy(dir.file("hT.npy"), {1, 2, 16, 16}, out.hT.data(), NpyType::f4);
  const std::string csv = dir.file("ext.csv");
  const std::string check = "check '" + dump + "' --precision fp32_math --csv '" + csv + "'";

  r = testutil::run_gdnbench(check + " --variant-name ext:cpu" + grads);
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("PASS ext:cpu", 0) == 0);
  CHECK_THAT(r.out, Catch::Contains("dbeta rel_l2"));
  r = testutil::run_gdnbench(check + " --variant-name ext:cpu_both --o '" + dir.file("o.npy") + "' --ht '" +
                             dir.file("hT.npy") + "'" + grads);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("o rel_l2") && Catch::Contains("dq rel_l2"));

  std::vector<float> bad = out.dk;
  for (float& x : bad) x = -x;
  write_npy(dir.file("dk_bad.npy"), {1, 40, 2, 16}, bad.data(), NpyType::f4);
  r = testutil::run_gdnbench(check + " --variant-name ext:bad --dk '" + dir.file("dk_bad.npy") + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("FAIL ext:bad", 0) == 0);

  const CsvTable t = read_gdnbench_csv(csv, {"variant", "status", "pass", "dht", "dq_rel_l2", "tol_dk", "o_rel_l2"});
  REQUIRE(t.rows.size() == 3);
  CHECK(t.cell(0, "pass") == "bwd");
  CHECK(t.cell(0, "dht") == "on");
  CHECK(t.cell(0, "status") == "PASS");
  CHECK_FALSE(t.cell(0, "dq_rel_l2").empty());
  CHECK_FALSE(t.cell(0, "tol_dk").empty());
  CHECK(t.cell(0, "o_rel_l2").empty());
  CHECK(t.cell(1, "pass") == "fwdbwd");
  CHECK_FALSE(t.cell(1, "o_rel_l2").empty());
  CHECK(t.cell(2, "status") == "FAIL");
  CHECK(t.cell(2, "dq_rel_l2").empty());  // not given, not compared

  SECTION("usage errors: exit 2, one line") {
    write_npy(dir.file("dk_wide.npy"), {1, 40, 2, 17}, out.dk.data(), NpyType::f4);
    for (const std::string& args :
         {"check '" + dump + "' --pass bwd", "check '" + dump + "' --pass bwd --o '" + dir.file("o.npy") + "'",
          "check '" + dump + "' --dk '" + dir.file("dk_wide.npy") + "'",
          "check '" + dump + "' --dk '" + dir.file("missing.npy") + "'", "check '" + dump + "' --pass back --dk x",
          std::string("dump --T 40 --pass fwd,bwd --out '") + dir.file("x") + "'",
          std::string("dump --T 40 --pass bwd --frontend on --out '") + dir.file("x") + "'"}) {
      INFO(args);
      const testutil::ProcessResult e = testutil::run_gdnbench(args);
      CHECK(e.exit_code == 2);
      CHECK(e.err_lines().size() == 1);
    }
  }
}

TEST_CASE("check --family attention judges dq, dk, dv against the float64 attention backward",
          "[external][backward][attention]") {
  testutil::TempDir dir;
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const DType dt = GENERATE(DType::bf16, DType::f32);
  INFO(dtype_name(dt));
  Problem p = testutil::external_test_problem(seed, dt, Pass::bwd);
  p.shape.HV = p.shape.H;  // attention: a value head per query head
  p.use_h0 = false;
  const std::string dump = dir.file("dump");
  dump_problem(p, dump);
  const DumpedProblem d = read_dump(dump);
  // The ideal kernel: the float64 gradients, rounded to what an external kernel writes.
  const GdnRefGradients ref = attention_gradients_for(d.problem, to_f64(d.inputs), 2);
  CheckOptions opt;
  opt.dir = dump;
  opt.pass = Pass::bwd;
  opt.variant = "ext:attention";
  opt.family = "attention";
  opt.precision = Precision::tensor_core;
  opt.threads = 2;
  write_attention_gradients(dir, opt, p, ref.dq, ref.dk, ref.dv);

  SECTION("the exact gradients pass, dq, dk and dv compared, nothing else asked for") {
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::pass);
    CHECK(row.reason.empty());
    for (Grad g : {Grad::dq, Grad::dk, Grad::dv}) CHECK(row.grad[size_t(g)].present);
    for (Grad g : {Grad::dg, Grad::dbeta, Grad::dh0}) CHECK_FALSE(row.grad[size_t(g)].present);
  }
  SECTION("dq and dk exchanged fail: each is compared with its own reference") {
    std::swap(opt.grad_paths[size_t(Grad::dq)], opt.grad_paths[size_t(Grad::dk)]);
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK_THAT(row.reason, Catch::Contains("dq rel_l2"));
  }
  SECTION("a gradient attention does not have is a usage error") {
    std::vector<float> zeros(size_t(p.shape.B * p.shape.T * p.shape.HV), 0.f);
    opt.grad_paths[size_t(Grad::dg)] = write_gradient(dir, Grad::dg, zeros, p);
    CHECK_THROWS_AS(check_external(opt), UsageError);
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("attention has no gate, beta or state"));
  }
}

TEST_CASE("check --family attention --attention-ref sampled judges whole heads of a sample, and says so",
          "[external][backward][attention]") {
  testutil::TempDir dir;
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  Problem p = testutil::external_test_problem(seed, DType::bf16, Pass::bwd);
  p.shape = GdnShape{2, 9, 10, 10, 8, 8};  // 20 heads: more than the sample's 16
  p.use_h0 = false;
  const std::string dump = dir.file("dump");
  dump_problem(p, dump);
  const DumpedProblem d = read_dump(dump);
  const GdnRefGradients ref = attention_gradients_for(d.problem, to_f64(d.inputs), 2);
  CheckOptions opt;
  opt.dir = dump;
  opt.pass = Pass::bwd;
  opt.family = "attention";
  opt.attention_ref = RefMode::sampled;
  opt.threads = 2;
  write_attention_gradients(dir, opt, p, ref.dq, ref.dk, ref.dv);
  const ResultRow row = check_external(opt);
  CHECK(row.status == Status::pass);
  CHECK(row.ref_heads == 16);
  CHECK_THAT(row.reason, Catch::Contains("gradients judged on 16 of 20 heads"));
  // A wrong dk in a sampled head fails (the first head is always in the sample).
  std::vector<double> bad = ref.dk;
  const int64_t D = p.shape.K, H = p.shape.H;
  for (int64_t t = 0; t < p.shape.T; ++t)
    for (int64_t e = 0; e < D; ++e) bad[size_t((t * H + 0) * D + e)] *= 1.1;
  write_attention_gradients(dir, opt, p, ref.dq, bad, ref.dv);
  CHECK(check_external(opt).status == Status::fail);
}
