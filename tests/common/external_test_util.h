// The pieces the tests of `dump` and `check` share: a small problem with every awkward feature, and
// cpu_recurrent run on a dump's inputs as an external kernel would run on its copy of them.
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>

#include "harness/external.h"
#include "harness/problem.h"
#include "harness/variant.h"

namespace testutil {

inline Problem external_test_problem(uint64_t seed, DType dt, Pass pass = Pass::fwd) {
  Problem p;
  p.shape = GdnShape{2, 37, 2, 4, 16, 24};  // B > 1, T past a chunk and a multiple of none, GVA
  p.dtype = dt;
  p.use_h0 = true;
  p.seed = seed;
  p.pass = pass;
  return p;
}

// cpu_recurrent on the dumped inputs (and upstream gradients, for a backward dump).
inline RunOutputs run_cpu_recurrent_on(const DumpedProblem& d) {
  const VariantInfo* v = find_variant("cpu_recurrent");
  REQUIRE(v);
  if (pass_has_backward(d.problem.pass)) REQUIRE(v->has_backward);
  RunContext ctx;
  ctx.cpu_threads = 2;
  auto run = v->create(d.problem, d.inputs, ctx);
  run->poison_outputs();
  run->launch();
  return run->read_outputs();
}

}  // namespace testutil
