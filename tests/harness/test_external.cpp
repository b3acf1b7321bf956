// External implementations: the .npy reader/writer, `gdnbench dump` and `gdnbench check` (a CPU
// variant's output written as an external kernel would passes; a corrupted one fails).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "harness/io/cli.h"
#include "harness/io/csv.h"
#include "harness/io/csv_read.h"
#include "harness/external.h"
#include "harness/io/npy.h"
#include "harness/rng.h"
#include "harness/variant.h"
#include "tests/common/external_test_util.h"
#include "tests/common/test_util.h"

namespace {

// A .npy file with a hand-made header, for the refusals.
void write_raw_npy(const std::string& path, int major, const std::string& dict, size_t data_bytes) {
  std::string s("\x93NUMPY", 6);
  s += char(major);
  s += char(0);
  std::string d = dict;
  while ((10 + d.size() + 1) % 64) d += ' ';
  d += '\n';
  s += char(d.size() & 0xFF);
  s += char(d.size() >> 8);
  s += d;
  s.append(data_bytes, '\0');
  testutil::write_text(path, s);
}

std::vector<int64_t> o_shape(const GdnShape& s) { return {s.B, s.T, s.HV, s.V}; }
std::vector<int64_t> ht_shape(const GdnShape& s) { return {s.B, s.HV, s.K, s.V}; }

}  // namespace

TEST_CASE("npy: every dtype round-trips, headers are v1.0 and 64-byte aligned", "[npy]") {
  testutil::TempDir dir;
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  std::vector<float> x;
  for (int i = 0; i < 1000; ++i) x.push_back(float(counter_normal(seed, 9, uint64_t(i)) * 100.0));
  const std::vector<int64_t> shape = {10, 4, 25};
  for (NpyType t : {NpyType::f4, NpyType::f8, NpyType::f2, NpyType::bf16_u2}) {
    INFO(npy_descr(t));
    const std::string path = dir.file("a.npy");
    write_npy(path, shape, x.data(), t);
    const NpyArray a = read_npy(path);
    CHECK(a.type == t);
    CHECK(a.shape == shape);
    REQUIRE(a.size() == 1000);
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = t == NpyType::f2         ? double(round_to(DType::f16, x[i]))
                          : t == NpyType::bf16_u2 ? double(round_to(DType::bf16, x[i]))
                                                   : double(x[i]);
      if (a.values[i] != want) FAIL("element " << i << ": " << a.values[i] << " != " << want);
    }
    const std::string text = testutil::read_text(path);
    CHECK(text.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
    const size_t header = 10 + (size_t(uint8_t(text[8])) | (size_t(uint8_t(text[9])) << 8));
    CHECK(header % 64 == 0);
    CHECK(text[header - 1] == '\n');
    CHECK(text.size() == header + 1000 * (t == NpyType::f4 ? 4 : t == NpyType::f8 ? 8 : 2));
    CHECK(text.find(std::string("'descr': '") + npy_descr(t) + "'") != std::string::npos);
  }
  SECTION("float64 keeps every bit; 1-d and 0-d shapes are Python tuples") {
    const std::vector<double> d = {1.0 / 3.0, -1e-300, 12345.678901234567};
    write_npy(dir.file("d.npy"), {3}, d.data(), NpyType::f8);
    const NpyArray a = read_npy(dir.file("d.npy"));
    CHECK(a.values == d);
    CHECK(npy_header(NpyType::f4, {5}).find("'shape': (5,)") != std::string::npos);
    CHECK(npy_header(NpyType::f4, {}).find("'shape': ()") != std::string::npos);
    write_npy(dir.file("s.npy"), {}, d.data(), NpyType::f8);
    CHECK(read_npy(dir.file("s.npy")).values == std::vector<double>{d[0]});
  }
}

TEST_CASE("npy: bad files are refused with one line saying what is wrong", "[npy]") {
  testutil::TempDir dir;
  const std::string p = dir.file("bad.npy");
  SECTION("not a .npy file") {
    testutil::write_text(p, "hello, world");
    CHECK_THROWS_WITH(read_npy(p), Catch::Contains("not a .npy file"));
    CHECK_THROWS_WITH(read_npy(dir.file("missing.npy")), Catch::Contains("cannot read"));
  }
  SECTION("version 2.0 header") {
    write_raw_npy(p, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8);
    CHECK_THROWS_WITH(read_npy(p), Catch::Contains("version 2.0"));
  }
  SECTION("big-endian, integer and complex dtypes") {
    for (const char* d : {">f4", "<i8", "<c8", "|u1", "<V2"}) {
      write_raw_npy(p, 1, std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (2,), }", 16);
      CHECK_THROWS_WITH(read_npy(p), Catch::Contains(std::string("dtype '") + d + "'"));
    }
  }
  SECTION("Fortran order") {
    write_raw_npy(p, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16);
    CHECK_THROWS_WITH(read_npy(p), Catch::Contains("Fortran order"));
  }
  SECTION("data shorter or longer than the shape, malformed shape") {
    write_raw_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 20);
    CHECK_THROWS_WITH(read_npy(p), Catch::Contains("holds 20 data bytes, its shape needs 24"));
    write_raw_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 28);
    CHECK_THROWS_AS(read_npy(p), NpyError);
    write_raw_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, x), }", 12);
    CHECK_THROWS_WITH(read_npy(p), Catch::Contains("shape"));
    write_raw_npy(p, 1, "{'descr': '<f4', 'fortran_order': False}", 4);
    CHECK_THROWS_WITH(read_npy(p), Catch::Contains("no 'shape'"));
  }
}

TEST_CASE("dump then check: the CPU variant's output passes, a corrupted one fails", "[external]") {
  testutil::TempDir dir;
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  const DType dt = GENERATE(DType::bf16, DType::f32);
  INFO(dtype_name(dt));
  const Problem p = testutil::external_test_problem(seed, dt);
  const std::string dump = dir.file("dump");
  dump_problem(p, dump);

  const DumpedProblem d = read_dump(dump);
  Problem resolved = p;
  resolved.scale = p.resolved_scale();  // the manifest records the scale used, never "default"
  CHECK(d.problem.input_key() == resolved.input_key());
  const HostInputs fresh = make_inputs(p);
  CHECK(d.inputs.q == fresh.q);  // the files hold exactly what the harness's kernels see
  CHECK(d.inputs.v == fresh.v);
  CHECK(d.inputs.g == fresh.g);
  CHECK(d.inputs.h0 == fresh.h0);

  const RunOutputs out = testutil::run_cpu_recurrent_on(d);
  const GdnShape& s = p.shape;
  const NpyType o_type = dt == DType::bf16 ? NpyType::bf16_u2 : NpyType::f4;
  write_npy(dir.file("o.npy"), o_shape(s), out.o.data(), o_type);
  write_npy(dir.file("hT.npy"), ht_shape(s), out.hT.data(), NpyType::f4);

  CheckOptions opt;
  opt.dir = dump;
  opt.o_path = dir.file("o.npy");
  opt.ht_path = dir.file("hT.npy");
  opt.variant = "ext:cpu";
  opt.precision = Precision::fp32_math;
  SECTION("the honest output passes with the verify metrics") {
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::pass);
    CHECK(row.o.present);
    CHECK(row.ht.present);
    CHECK(row.o.rel_l2 <= row.tol.o_rel_l2);
    CHECK(row.o.rel_l2 > 0);  // rounded to the dtype or float32 arithmetic: never exactly 0
    CHECK(row.backend == "ext");
    CHECK(row.variant == "ext:cpu");
  }
  SECTION("hT stored V x K passes with --ht-layout vk and fails without it") {
    std::vector<float> vk(out.hT.size());
    for (int64_t bh = 0; bh < s.B * s.HV; ++bh)
      for (int64_t i = 0; i < s.K; ++i)
        for (int64_t j = 0; j < s.V; ++j) vk[(bh * s.V + j) * s.K + i] = out.hT[(bh * s.K + i) * s.V + j];
    write_npy(dir.file("hT_vk.npy"), {s.B, s.HV, s.V, s.K}, vk.data(), NpyType::f4);
    opt.ht_path = dir.file("hT_vk.npy");
    opt.ht_vk = true;
    CHECK(check_external(opt).status == Status::pass);
    opt.ht_vk = false;
    CHECK_THROWS_AS(check_external(opt), UsageError);  // [.., V, K] is not [.., K, V] here (V != K)
  }
  SECTION("a corrupted o fails: one element off, or a NaN") {
    std::vector<float> bad = out.o;
    bad[bad.size() / 2] += 1.0f;
    write_npy(dir.file("o.npy"), o_shape(s), bad.data(), o_type);
    ResultRow row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK_THAT(row.reason, Catch::Contains("o rel_l2"));
    CHECK(row.o.worst_index == int64_t(bad.size() / 2));
    bad = out.o;
    bad[3] = NAN;
    write_npy(dir.file("o.npy"), o_shape(s), bad.data(), NpyType::f4);
    row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK(row.o.nan_count == 1);
  }
  SECTION("a corrupted hT fails") {
    std::vector<float> bad = out.hT;
    for (size_t i = 0; i < bad.size(); i += 7) bad[i] *= 1.01f;
    write_npy(dir.file("hT.npy"), ht_shape(s), bad.data(), NpyType::f4);
    const ResultRow row = check_external(opt);
    CHECK(row.status == Status::fail);
    CHECK_THAT(row.reason, Catch::Contains("hT rel_l2"));
  }
  SECTION("wrong shapes, a missing file, a broken manifest: usage errors") {
    write_npy(dir.file("short.npy"), {s.B, s.T - 1, s.HV, s.V}, out.o.data(), NpyType::f4);
    opt.o_path = dir.file("short.npy");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("shape"));
    opt.o_path = dir.file("nope.npy");
    CHECK_THROWS_AS(check_external(opt), UsageError);
    opt.o_path = dir.file("o.npy");
    opt.dir = dir.file("not_a_dump");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("manifest.json"));
    opt.dir = dump;
    testutil::write_text(dump + "/manifest.json", "{\"format\": \"gdnbench-dump\", \"version\": 1");
    CHECK_THROWS_WITH(check_external(opt), Catch::Contains("not valid JSON"));
  }
}

TEST_CASE("the binary: dump, check with --csv, exit codes", "[external][cli]") {
  testutil::TempDir dir;
  const std::string dump = dir.file("dump");
  testutil::ProcessResult r = testutil::run_gdnbench(
      "dump --T 40 --B 1 --H 2 --K 16 --V 16 --dtypes bf16 --h0 on --seed 7 --out '" + dump + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote") != std::string::npos);
  const std::string manifest = testutil::read_text(dump + "/manifest.json");
  CHECK(manifest.find("\"seed\": 7,") != std::string::npos);
  CHECK(manifest.find("\"dtype\": \"bf16\"") != std::string::npos);

  const DumpedProblem d = read_dump(dump);
  CHECK(d.problem.shape.T == 40);
  const RunOutputs out = testutil::run_cpu_recurrent_on(d);
  write_npy(dir.file("o.npy"), o_shape(d.problem.shape), out.o.data(), NpyType::bf16_u2);
  write_npy(dir.file("hT.npy"), ht_shape(d.problem.shape), out.hT.data(), NpyType::f4);
  const std::string csv = dir.file("ext.csv");
  r = testutil::run_gdnbench("check '" + dump + "' --o '" + dir.file("o.npy") + "' --ht '" + dir.file("hT.npy") +
                             "' --variant-name ext:cpu --device 'GPU, X' --csv '" + csv + "'");
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("PASS ext:cpu", 0) == 0);

  std::vector<float> bad = out.o;
  for (float& x : bad) x = -x;
  write_npy(dir.file("bad.npy"), o_shape(d.problem.shape), bad.data(), NpyType::f4);
  r = testutil::run_gdnbench("check '" + dump + "' --o '" + dir.file("bad.npy") + "' --variant-name ext:bad --csv '" + csv + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("FAIL ext:bad", 0) == 0);

  const CsvTable t = read_gdnbench_csv(csv, {"variant", "status", "o_rel_l2", "device", "seed", "command"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.header == csv_columns());
  CHECK(t.cell(0, "variant") == "ext:cpu");
  CHECK(t.cell(0, "status") == "PASS");
  CHECK(t.cell(0, "device") == "GPU, X");
  CHECK(t.cell(0, "seed") == "7");
  CHECK(t.cell(0, "command") == "check");
  CHECK(t.cell(0, "backend") == "ext");
  CHECK(t.cell(1, "status") == "FAIL");
  CHECK(t.cell(1, "time_median_ms").empty());

  SECTION("usage errors: exit 2, one line") {
    for (const std::string& args :
         {std::string("dump --T 40,80 --out '") + dir.file("x") + "'", std::string("dump --T 40"),
          "check '" + dump + "'", "check '" + dump + "' --o '" + dir.file("o.npy") + "' --bogus 1",
          "check '" + dump + "' --o '" + dir.file("o.npy") + "' --ht-layout xy",
          "check '" + dir.file("nowhere") + "' --o '" + dir.file("o.npy") + "'"}) {
      INFO(args);
      const testutil::ProcessResult e = testutil::run_gdnbench(args);
      CHECK(e.exit_code == 2);
      CHECK(e.err_lines().size() == 1);
    }
  }
}

TEST_CASE("dump then check a packed batch: cu_seqlens.npy, a state per sequence", "[external][packed]") {
  testutil::TempDir dir;
  const uint64_t seed = testutil::fresh_seed();
  INFO("seed " << seed);
  Problem p = testutil::external_test_problem(seed, DType::bf16);
  p.seqlens = "1,17,64,5";
  resolve_packed(p);
  const std::string dump = dir.file("dump");
  dump_problem(p, dump);
  const NpyArray cu = read_npy(dir.file("dump/cu_seqlens.npy"));
  CHECK(cu.type == NpyType::i4);
  CHECK(cu.values == std::vector<double>{0, 1, 18, 82, 87});

  const DumpedProblem d = read_dump(dump);
  Problem resolved = p;
  resolved.scale = p.resolved_scale();
  CHECK(d.problem.input_key() == resolved.input_key());
  CHECK(d.inputs.cu_seqlens == p.cu_seqlens);
  REQUIRE(d.inputs.h0.size() == size_t(4 * p.shape.HV * p.shape.K * p.shape.V));
  const RunOutputs out = testutil::run_cpu_recurrent_on(d);
  const GdnShape& s = p.shape;
  write_npy(dir.file("o.npy"), o_shape(s), out.o.data(), NpyType::bf16_u2);
  write_npy(dir.file("hT.npy"), {s.num_seqs, s.HV, s.K, s.V}, out.hT.data(), NpyType::f4);
  CheckOptions opt;
  opt.dir = dump;
  opt.o_path = dir.file("o.npy");
  opt.ht_path = dir.file("hT.npy");
  opt.variant = "ext:cpu";
  opt.precision = Precision::fp32_math;
  CHECK(check_external(opt).status == Status::pass);
  // The same tokens run as one sequence (the state carried across the boundaries) fail.
  Problem flat = d.problem;
  flat.seqlens.clear();
  flat.cu_seqlens.clear();
  flat.shape.num_seqs = 0;
  DumpedProblem one = d;
  one.problem = flat;
  one.inputs.cu_seqlens.clear();
  one.inputs.h0.resize(size_t(s.HV * s.K * s.V));
  const RunOutputs carried = testutil::run_cpu_recurrent_on(one);
  write_npy(dir.file("o.npy"), o_shape(s), carried.o.data(), NpyType::bf16_u2);
  opt.ht_path.clear();
  CHECK(check_external(opt).status == Status::fail);
  // Offsets that do not end at T are refused.
  const std::vector<double> short_cu = {0, 1, 18, 82, 86};
  write_npy(dir.file("dump/cu_seqlens.npy"), {5}, short_cu.data(), NpyType::i4);
  CHECK_THROWS_WITH(check_external(opt), Catch::Contains("cu_seqlens must be"));
}
