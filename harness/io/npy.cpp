#include "harness/io/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "kernels/common/dtype.h"

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kPrefixLen = 10;  // magic, 2 version bytes, uint16 header length

size_t item_bytes(NpyType t) { return t == NpyType::f4 || t == NpyType::i4 ? 4 : t == NpyType::f8 ? 8 : 2; }

// The value of `key` in the header dict, as raw text up to the next top-level ',' or '}'.
// The dict is Python literal syntax; the keys NumPy writes hold no nested braces, only a tuple.
std::string dict_value(const std::string& dict, const std::string& key, const std::string& path) {
  size_t at = std::string::npos;
  for (const char* quote : {"'", "\""}) {
    at = dict.find(quote + key + quote);
    if (at != std::string::npos) break;
  }
  if (at == std::string::npos) throw NpyError(fmt::format("{}: .npy header has no '{}'", path, key));
  size_t i = dict.find(':', at);
  if (i == std::string::npos) throw NpyError(fmt::format("{}: .npy header is malformed near '{}'", path, key));
  ++i;
  int depth = 0;
  size_t j = i;
  for (; j < dict.size(); ++j) {
    const char c = dict[j];
    if (c == '(') ++depth;
    else if (c == ')') --depth;
    else if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string v = dict.substr(i, j - i);
  const auto b = v.find_first_not_of(" \t");
  const auto e = v.find_last_not_of(" \t");
  return b == std::string::npos ? "" : v.substr(b, e - b + 1);
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw NpyError(fmt::format("{}: .npy shape '{}' is not a tuple", path, text));
  std::vector<int64_t> shape;
  std::string cur;
  for (char c : text.substr(1, text.size() - 2) + ",") {
    if (c == ',') {
      if (!cur.empty()) {
        if (cur.find_first_not_of("0123456789") != std::string::npos || cur.size() > 15)
          throw NpyError(fmt::format("{}: .npy shape '{}' holds '{}'", path, text, cur));
        shape.push_back(std::stoll(cur));
      }
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  return shape;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 16 / d)
      throw NpyError("array shape too large");
    n *= d;
  }
  return n;
}

double decode(NpyType t, const unsigned char* p) {
  switch (t) {
    case NpyType::f4: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case NpyType::f8: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case NpyType::f2: return half_bits_to_float(uint16_t(p[0] | (p[1] << 8)));
    case NpyType::bf16_u2: return bf16_bits_to_float(uint16_t(p[0] | (p[1] << 8)));
    case NpyType::i4: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
  }
  return 0.0;
}

void encode(NpyType t, double x, unsigned char* p) {
  switch (t) {
    case NpyType::f4: {
      const float f = float(x);
      std::memcpy(p, &f, 4);
      return;
    }
    case NpyType::f8: std::memcpy(p, &x, 8); return;
    case NpyType::i4: {  // integers only (cu_seqlens): exact in double
      const int32_t i = int32_t(x);
      std::memcpy(p, &i, 4);
      return;
    }
    case NpyType::f2:
    case NpyType::bf16_u2: {
      const uint16_t h = t == NpyType::f2 ? float_to_half_bits(float(x)) : float_to_bf16_bits(float(x));
      p[0] = uint8_t(h & 0xFF);
      p[1] = uint8_t(h >> 8);
      return;
    }
  }
}

template <typename E>
void write_impl(const std::string& path, const std::vector<int64_t>& shape, const E* data, NpyType type) {
  const int64_t n = element_count(shape);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw NpyError(fmt::format("{}: cannot write", path));
  const std::string header = npy_header(type, shape);
  f.write(header.data(), std::streamsize(header.size()));
  const size_t item = item_bytes(type);
  std::vector<unsigned char> block;
  constexpr int64_t kBlock = 1 << 20;  // elements per write: bounded extra memory for big tensors
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t m = std::min(kBlock, n - start);
    block.resize(size_t(m) * item);
    for (int64_t i = 0; i < m; ++i) encode(type, double(data[start + i]), &block[size_t(i) * item]);
    f.write(reinterpret_cast<const char*>(block.data()), std::streamsize(block.size()));
  }
  f.flush();
  if (!f) throw NpyError(fmt::format("{}: cannot write", path));
}

}  // namespace

const char* npy_descr(NpyType t) {
  switch (t) {
    case NpyType::f4: return "<f4";
    case NpyType::f8: return "<f8";
    case NpyType::f2: return "<f2";
    case NpyType::bf16_u2: return "<u2";
    case NpyType::i4: return "<i4";
  }
  return "?";
}

int64_t NpyArray::size() const { return int64_t(values.size()); }

std::string npy_header(NpyType type, const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(2, 3)"; one dim keeps "(5,)"
  else if (shape.size() == 1) dims.pop_back();
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                 npy_descr(type), dims);
  // NumPy aligns the data to 64 bytes: pad the dict with spaces, end it with '\n'.
  const size_t total = (kPrefixLen + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - kPrefixLen - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += char(1);
  out += char(0);
  out += char(dict.size() & 0xFF);
  out += char(dict.size() >> 8);
  return out + dict;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw NpyError(fmt::format("{}: cannot read", path));
  return read_npy(f, path);
}

NpyArray read_npy(std::istream& f, const std::string& path) {
  unsigned char prefix[kPrefixLen];
  if (!f.read(reinterpret_cast<char*>(prefix), kPrefixLen) || std::memcmp(prefix, kMagic, kMagicLen) != 0)
    throw NpyError(fmt::format("{}: not a .npy file (no \\x93NUMPY magic)", path));
  if (prefix[6] != 1 || prefix[7] != 0)
    throw NpyError(fmt::format("{}: .npy format version {}.{}; only 1.0 is read (save with a smaller header)",
                               path, int(prefix[6]), int(prefix[7])));
  const size_t header_len = size_t(prefix[8]) | (size_t(prefix[9]) << 8);
  std::string dict(header_len, '\0');
  if (!f.read(dict.data(), std::streamsize(header_len)))
    throw NpyError(fmt::format("{}: .npy header is truncated", path));

  NpyArray a;
  std::string descr = dict_value(dict, "descr", path);
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"')) descr = descr.substr(1, descr.size() - 2);
  if (descr == "<f4") a.type = NpyType::f4;
  else if (descr == "<f8") a.type = NpyType::f8;
  else if (descr == "<f2") a.type = NpyType::f2;
  else if (descr == "<u2") a.type = NpyType::bf16_u2;
  else if (descr == "<i4") a.type = NpyType::i4;
  else
    throw NpyError(fmt::format("{}: .npy dtype '{}' is not read; use <f4, <f8, <f2, <u2 (bf16 bits) or <i4 "
                               "(offsets), little-endian", path, descr));
  if (dict_value(dict, "fortran_order", path) != "False")
    throw NpyError(fmt::format("{}: .npy array is in Fortran order; save it C-contiguous", path));
  a.shape = parse_shape(dict_value(dict, "shape", path), path);
  int64_t n = 0;
  try {
    n = element_count(a.shape);
  } catch (const NpyError&) {
    throw NpyError(fmt::format("{}: .npy shape is too large", path));
  }

  const size_t item = item_bytes(a.type);
  const std::streamoff data_start = f.tellg();
  f.seekg(0, std::ios::end);
  const std::streamoff data_bytes = f.tellg() - data_start;
  if (data_bytes != std::streamoff(n) * std::streamoff(item))
    throw NpyError(fmt::format("{}: .npy holds {} data bytes, its shape needs {}", path, data_bytes,
                               n * int64_t(item)));
  f.seekg(data_start);
  a.values.resize(size_t(n));
  std::vector<unsigned char> block;
  constexpr int64_t kBlock = 1 << 20;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t m = std::min(kBlock, n - start);
    block.resize(size_t(m) * item);
    if (!f.read(reinterpret_cast<char*>(block.data()), std::streamsize(block.size())))
      throw NpyError(fmt::format("{}: .npy data is truncated", path));
    for (int64_t i = 0; i < m; ++i) a.values[size_t(start + i)] = decode(a.type, &block[size_t(i) * item]);
  }
  return a;
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data, NpyType type) {
  write_impl(path, shape, data, type);
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape, const double* data, NpyType type) {
  write_impl(path, shape, data, type);
}
