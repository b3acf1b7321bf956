#include "harness/io/tolerance_file.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "harness/io/errors.h"

namespace {

constexpr const char* kLineForm =
    "PRECISION DTYPE o=BOUND hT=BOUND (either bound may be left out; gradients: dq= dk= dv= dg= dbeta= dh0=)";

// A gradient's name (dq, ..., dh0), or nullopt.
std::optional<Grad> parse_grad(const std::string& word) {
  for (Grad g : kGrads)
    if (word == grad_name(g)) return g;
  return std::nullopt;
}

// Whether `output` may be a multiple of the floor: o, and the gradients compared in the row's dtype.
bool floor_multiple_allowed(const std::string& output) {
  const std::optional<Grad> g = parse_grad(output);
  return output == "o" || (g && grad_has_dtype_floor(*g));
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::optional<DType> parse_table_dtype(const std::string& word) {
  for (DType t : kDtypes)
    if (word == dtype_name(t)) return t;
  return std::nullopt;
}

// A plain decimal number, the whole word (no inf, nan or hex).
std::optional<double> parse_number(const std::string& word) {
  if (word.empty() || word.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(word.c_str(), &end);
  if (end != word.c_str() + word.size() || !std::isfinite(x)) return std::nullopt;
  return x;
}

// The bound of `output` ("o" or "hT") written as `text`; `error` makes the UsageError naming the file and line.
template <typename Error>
Bound parse_bound(const std::string& output, const std::string& text, const Error& error) {
  const std::string suffix = "x_floor";
  const bool times_floor = text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
  const std::string number = times_floor ? text.substr(0, text.size() - suffix.size()) : text;
  const std::optional<double> x = parse_number(number);
  if (!x) throw error(fmt::format("{}={}: '{}' is not a number (a rel_l2 such as 4e-3, or a multiple of the floor such as 3x_floor)",
                           output, text, number));
  if (times_floor) {
    if (!floor_multiple_allowed(output))
      throw error(fmt::format("{}={}: {} is compared in float32, whose rounding floor says nothing of a kernel; give it a rel_l2",
                       output, text, output));
    if (!(*x >= kRoundingFloorFactor))
      throw error(fmt::format("{}={}: below {}x_floor, the least bound of every row (it could never judge one)", output, text,
                       kRoundingFloorFactor));
    return {*x, true};
  }
  if (!(*x > 0)) throw error(fmt::format("{}={}: a bound must be positive", output, text));
  if (!(*x < 1)) throw error(fmt::format("{}={}: a rel_l2 bound of 1 or more passes an output of zeros", output, text));
  return {*x, false};
}

}  // namespace

ToleranceProfile parse_tolerance_text(const std::string& text, const std::string& path) {
  const std::string name = std::filesystem::path(path).stem().string();
  if (name.empty() || name == ToleranceProfile::kBuiltinName)
    throw UsageError(fmt::format("--tolerances: {}: a profile is named after its file, and '{}' is not a name to "
                                 "take (builtin is the built-in table); rename the file",
                                 path, name));
  ToleranceProfile profile = ToleranceProfile::builtin();
  profile.set_name(name);
  std::map<std::tuple<Precision, DType, std::string>, size_t> seen;  // (precision, dtype, output) -> line
  std::istringstream in(text);
  size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const auto error = [&](const std::string& what) {
      return UsageError(fmt::format("--tolerances: {}:{}: {}", path, line_no, what));
    };
    const std::vector<std::string> words = words_of(line.substr(0, line.find('#')));
    if (words.empty()) continue;
    const std::optional<Precision> precision = parse_precision(words[0]);
    if (!precision)
      throw error(fmt::format("unknown precision class '{}' (use {})", words[0], precision_list()));
    if (words.size() < 3) throw error(fmt::format("expected {}", kLineForm));
    const std::optional<DType> dtype = parse_table_dtype(words[1]);
    if (!dtype) throw error(fmt::format("unknown dtype '{}' (use fp32, bf16 or fp16)", words[1]));
    for (size_t i = 2; i < words.size(); ++i) {
      const size_t eq = words[i].find('=');
      if (eq == std::string::npos) throw error(fmt::format("'{}' is not o=BOUND or hT=BOUND; expected {}", words[i], kLineForm));
      const std::string output = words[i].substr(0, eq);
      const std::optional<Grad> grad = parse_grad(output);
      if (output != "o" && output != "hT" && !grad)
        throw error(fmt::format("unknown output '{}' (use o, hT, dq, dk, dv, dg, dbeta or dh0)", output));
      const Bound bound = parse_bound(output, words[i].substr(eq + 1), error);
      const auto [at, fresh] = seen.emplace(std::make_tuple(*precision, *dtype, output), line_no);
      if (!fresh)
        throw error(fmt::format("{} {} {} is given twice (lines {} and {})", words[0], words[1], output, at->second, line_no));
      const std::string source = fmt::format("{}:{}", path, line_no);
      if (output == "o") profile.set_o_bound(*precision, *dtype, bound, source);
      else if (output == "hT") profile.set_ht_bound(*precision, *dtype, bound, source);
      else profile.set_grad_bound(*precision, *dtype, *grad, bound, source);
    }
  }
  if (seen.empty())
    throw UsageError(fmt::format("--tolerances: {}: no entry ({}); --tolerances builtin is the built-in table", path,
                                 kLineForm));
  return profile;
}

ToleranceProfile read_tolerance_profile(const std::string& name_or_path) {
  if (name_or_path == ToleranceProfile::kBuiltinName) return ToleranceProfile::builtin();
  const std::string c = find_named_file(name_or_path, "tolerances", ".txt");
  if (!c.empty()) {
    std::ifstream f(c, std::ios::binary);
    std::ostringstream text;
    text << f.rdbuf();
    if (!f) throw UsageError(fmt::format("--tolerances: cannot read '{}'", c));
    return parse_tolerance_text(text.str(), c);
  }
  throw UsageError(fmt::format("--tolerances: no tolerance file '{}' (a path, a name in tolerances/, or builtin)",
                               name_or_path));
}
