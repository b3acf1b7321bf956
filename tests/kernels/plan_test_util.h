// What the plan tests share: the H200's device facts and the gate's cases.
#pragma once
#include <vector>

#include "harness/io/cli.h"
#include "kernels/plans/launch_plans.h"

namespace plan_test {

// The H200's facts as its kernels' budgets give them (132 SMs; wy_ut's scan kernel holds 92.5 KiB
// of shared memory at K = 64, 150.5 KiB at K = 128 and 158.3 KiB at K = 256 of an SM's 228 KiB:
// 2, 1 and 1 blocks per SM; fused_decode's one-row front end at K = V = 128 holds 10 blocks per SM
// by its registers (kernels/decode/); the stream kernel's register cap is set for 3). They are
// not measured here: `gdnbench list --plans` prints what the device says. So the gate's reach must
// not hang on them: it is checked at half and twice them too.
inline PlanDevice h200_facts(double factor = 1.0) {
  PlanDevice d;
  d.sms = int(132 * factor);
  d.wy_ut_scan_resident[0] = int64_t(264 * factor);
  d.wy_ut_scan_resident[1] = int64_t(132 * factor);
  d.wy_ut_scan_resident[2] = int64_t(132 * factor);
  d.decode_fe_row_resident = int64_t(1320 * factor);
  d.decode_stream_per_sm = 3;
  d.sm90a = true;
  return d;
}

// The gate's cases as on a GPU machine (--variants auto picks the CUDA variants), then as on a CPU one.
inline std::vector<Case> gate_cases() {
  std::vector<Case> cases = parse_invocation({"verify", "--suite", "gate", "--seed", "1"}, true).cases;
  for (const Case& c : parse_invocation({"verify", "--suite", "gate", "--seed", "1"}, false).cases) cases.push_back(c);
  return cases;
}

}  // namespace plan_test
