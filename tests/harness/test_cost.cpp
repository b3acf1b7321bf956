// The FLOP and byte counts of a case (harness/cost.h, docs/DESIGN.md section 4).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cost.h"
#include "harness/io/csv.h"
#include "harness/gpu_runtime.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/result.h"
#include "harness/rng.h"
#include "harness/runner.h"
#include "harness/timing.h"
#include "harness/tolerance.h"
#include "harness/variant.h"
#include "kernels/common/dtype.h"
#include "tests/common/test_util.h"


// ---- FLOP and byte counts ----

TEST_CASE("documented FLOP and byte counts", "[harness][flops]") {
  Problem p;
  p.shape = GdnShape{1, 1, 1, 1, 128, 128};
  // 6 C K + 4 C V + 6 K V at C = 64: 49152 + 32768 + 98304.
  CHECK(gdn_flops(p) == 180224.0);
  p.shape = GdnShape{3, 100, 2, 4, 128, 128};
  CHECK(gdn_flops(p) == 180224.0 * 3 * 100 * 4);  // per token and value head; H does not count
  p.chunk = 16;
  CHECK(gdn_flops(p) == 180224.0 * 3 * 100 * 4);  // C = 64 for every variant
  p.shape = GdnShape{1, 1, 1, 1, 64, 32};
  CHECK(gdn_flops(p) == 6.0 * 64 * 64 + 4.0 * 64 * 32 + 6.0 * 64 * 32);

  // Causal softmax attention: 2 T^2 D per head (D = K = V).
  p.shape = GdnShape{2, 100, 3, 3, 64, 64};
  CHECK(attention_flops(p) == 2.0 * 100 * 100 * 64 * 2 * 3);

  // Minimum bytes: q, k, v read and o written once in the dtype; g, beta, h0, hT in float32.
  // B=1 T=10 H=1 HV=2 K=8 V=4, bf16, gate, delta, h0: q,k 2*80 + v,o 2*80 elements of 2 bytes
  // = 640; g, beta 2*20*4 = 160; h0, hT 2*64*4 = 512.
  p.shape = GdnShape{1, 10, 1, 2, 8, 4};
  p.dtype = DType::bf16;
  p.use_h0 = true;
  CHECK(gdn_min_bytes(p) == 640.0 + 160.0 + 512.0);
  p.use_h0 = false;
  p.use_gate = false;
  CHECK(gdn_min_bytes(p) == 640.0 + 80.0 + 256.0);
}
