// libFuzzer target: arbitrary bytes as a tolerance file through parse_tolerance_text, the path
// `--tolerances FILE` takes. A UsageError is the expected answer to bad input; a profile it accepts
// must judge with finite positive bounds and read back from its canonical text as the same contract.
// Built by scripts/fuzz.sh (GDNBENCH_FUZZ=ON, clang).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/io/errors.h"
#include "harness/io/tolerance_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ToleranceProfile p =
        parse_tolerance_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.txt");
    for (Precision pr : kPrecisions)
      for (DType t : kDtypes) {
        const Tolerance tol = p.bounds(pr, t, 1e-3);
        if (!(tol.o_rel_l2 > 0) || !std::isfinite(tol.o_rel_l2) || !(tol.ht_rel_l2 > 0) || !(tol.ht_rel_l2 < 1))
          __builtin_trap();
      }
    if (parse_tolerance_text(p.canonical_text(), "fuzz.txt").hash() != p.hash()) __builtin_trap();
  } catch (const UsageError&) {
  }
  return 0;
}
