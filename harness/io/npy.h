// Minimal NumPy .npy files (format version 1.0), the exchange format with external kernels
// (`gdnbench dump` / `gdnbench check`, scripts/ext_runner.py). Little-endian, C order only:
//   <f4 float32, <f8 float64, <f2 float16, <u2 bfloat16 bit patterns (NumPy has no bfloat16;
//   by this project's convention a <u2 array always holds bf16 bits), <i4 int32 (cu_seqlens).
// Anything else (big-endian, Fortran order, other dtypes, version 2/3 headers) is refused with a
// one-line NpyError that says what was found and what is accepted.
#pragma once
#include <cstdint>
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class NpyType { f4, f8, f2, bf16_u2, i4 };
const char* npy_descr(NpyType t);  // "<f4", "<f8", "<f2", "<u2", "<i4"

struct NpyArray {
  NpyType type = NpyType::f4;
  std::vector<int64_t> shape;
  std::vector<double> values;  // every element, converted exactly (bf16 and fp16 fit in double)
  int64_t size() const;
};

// Throws NpyError naming `path` on anything it cannot read exactly.
NpyArray read_npy(const std::string& path);
// The same from a seekable binary stream (what the path version reads through); `name` is the
// file named in the errors. Refuses a shape whose data the stream does not hold before allocating.
NpyArray read_npy(std::istream& in, const std::string& name);

// Writes n = prod(shape) elements converted to `type` (to bf16/fp16 with round to nearest even;
// exact for values already representable). Throws NpyError when the file cannot be written.
void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data, NpyType type);
void write_npy(const std::string& path, const std::vector<int64_t>& shape, const double* data, NpyType type);

// The header text of a v1.0 file for these (exposed for tests): magic, version, length, dict,
// padded with spaces and a final '\n' to a multiple of 64 bytes.
std::string npy_header(NpyType type, const std::vector<int64_t>& shape);
