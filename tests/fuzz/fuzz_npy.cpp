// libFuzzer target: arbitrary bytes as a .npy file through read_npy(stream, name), the reader that
// `gdnbench check` uses for every input and output file. An NpyError is the expected answer to bad
// input; any other exception escapes and libFuzzer reports it as a crash, as it does sanitizer
// findings and allocations past -rss_limit_mb (a header claiming more elements than the bytes that
// follow must be refused before anything is allocated). Built by scripts/fuzz.sh
// (GDNBENCH_FUZZ=ON, clang).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "harness/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size), std::ios::binary);
  try {
    const NpyArray a = read_npy(in, "fuzz.npy");
    int64_t n = 1;  // what the callers rely on: values hold exactly prod(shape) elements
    for (int64_t d : a.shape) {
      if (d < 0) __builtin_trap();
      n *= d;
    }
    if (n != a.size()) __builtin_trap();
  } catch (const NpyError&) {
  }
  return 0;
}
