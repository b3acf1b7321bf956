// libFuzzer target: arbitrary bytes as the manifest.json of a dump directory through
// parse_dump_manifest, the part of read_dump (`gdnbench check DIR`) that reads the manifest; the
// .npy files it names go through read_npy, which fuzz_npy covers. A UsageError is the expected
// answer to bad input; any other exception escapes and libFuzzer reports it as a crash, as it does
// sanitizer findings. Built by scripts/fuzz.sh (GDNBENCH_FUZZ=ON, clang).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/io/cli.h"
#include "harness/external.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const DumpManifest m =
        parse_dump_manifest(std::string(reinterpret_cast<const char*>(data), size), "fuzz/manifest.json");
    const GdnShape& s = m.problem.shape;  // what read_dump and check_external rely on
    for (int64_t x : {s.B, s.T, s.H, s.HV, s.K, s.V})
      if (x <= 0 || x > 2147483647) __builtin_trap();
    if (s.HV % s.H != 0 || !(m.problem.scale > 0) || !std::isfinite(m.problem.scale)) __builtin_trap();
    for (const char* key : {"q", "k", "v", "g", "beta", "h0"})
      if (!m.files.count(key)) __builtin_trap();
  } catch (const UsageError&) {
  }
  return 0;
}
