// Helpers shared by the test files: fresh seeds, random float64 GDN inputs, token slicing,
// norms, a small RFC 4180 CSV reader, temporary directories and running the gdnbench binary.
#pragma once
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/io/csv_read.h"
#include "reference/gdn_reference.h"

namespace testutil {

// A seed nobody chose: every run of the suite sees new inputs. Tests INFO() it.
inline uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ uint64_t(rd());
}

// Shell that waits (up to 60 s) until the CSV at `path` holds its header and one finished case,
// so a test interrupts a background run after real progress, not after a guessed sleep that a
// loaded machine may not honour.
inline std::string wait_for_csv_rows_shell(const std::string& path) {
  return "for i in $(seq 1200); do [ -f '" + path + "' ] && [ $(wc -l < '" + path +
         "') -ge 2 ] && break; sleep 0.05; done; ";
}

// ||x - ref|| / ||ref|| (||x - ref|| when ref is all zero).
template <typename A, typename B>
double rel_l2(const std::vector<A>& x, const std::vector<B>& ref) {
  if (x.size() != ref.size()) return INFINITY;
  double err2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]) - double(ref[i]);
    err2 += d * d;
    ref2 += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(err2) / (ref2 > 0.0 ? std::sqrt(ref2) : 1.0);
}

template <typename A, typename B>
double max_abs_diff(const std::vector<A>& x, const std::vector<B>& ref) {
  if (x.size() != ref.size()) return INFINITY;
  double m = 0.0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(double(x[i]) - double(ref[i])));
  return m;
}

template <typename T>
bool all_finite(const std::vector<T>& x) {
  return std::all_of(x.begin(), x.end(), [](T v) { return std::isfinite(double(v)); });
}

// Float64 GDN inputs in the canonical layouts, drawn from a seeded generator:
// q, k unit-norm rows; v, h0 ~ N(0, 1); g = logsigmoid(x)/8 with ~10% exact zeros; beta in
// (0.05, 0.95).
struct GdnData {
  GdnShape shape;
  std::vector<double> q, k, v, g, beta, h0;
  GdnRefInputs view(bool use_gate = true, bool use_h0 = true) const {
    GdnRefInputs r;
    r.q = q.data();
    r.k = k.data();
    r.v = v.data();
    r.g = use_gate && !g.empty() ? g.data() : nullptr;
    r.beta = beta.data();
    r.h0 = use_h0 && !h0.empty() ? h0.data() : nullptr;
    return r;
  }
};

inline void normalise_rows(std::vector<double>& x, int64_t row) {
  for (size_t r = 0; r < x.size(); r += size_t(row)) {
    double ss = 0.0;
    for (int64_t c = 0; c < row; ++c) ss += x[r + c] * x[r + c];
    const double inv = 1.0 / std::sqrt(ss);
    for (int64_t c = 0; c < row; ++c) x[r + c] *= inv;
  }
}

inline GdnData random_gdn(const GdnShape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  GdnData d;
  d.shape = s;
  auto fill = [&](std::vector<double>& x, int64_t n) {
    x.resize(size_t(n));
    for (double& e : x) e = normal(rng);
  };
  fill(d.q, s.qk_elems());
  fill(d.k, s.qk_elems());
  fill(d.v, s.v_elems());
  fill(d.h0, s.state_elems());
  normalise_rows(d.q, s.K);
  normalise_rows(d.k, s.K);
  d.g.resize(size_t(s.gate_elems()));
  for (double& e : d.g) {
    const double x = normal(rng);
    e = unit(rng) < 0.1 ? 0.0 : -std::log1p(std::exp(-x)) / 8.0;
  }
  d.beta.resize(size_t(s.gate_elems()));
  for (double& e : d.beta) e = 0.05 + 0.9 * unit(rng);
  return d;
}

// Tokens [t0, t1) of a [B, T, heads, row] tensor.
template <typename E>
std::vector<E> slice_tokens(const std::vector<E>& x, int64_t B, int64_t T, int64_t per_token,
                            int64_t t0, int64_t t1) {
  std::vector<E> out;
  if (x.empty()) return out;
  out.reserve(size_t(B * (t1 - t0) * per_token));
  for (int64_t b = 0; b < B; ++b)
    out.insert(out.end(), x.begin() + (b * T + t0) * per_token, x.begin() + (b * T + t1) * per_token);
  return out;
}

// Tokens [t0, t1) of every per-token tensor; h0 is kept as it is (the caller decides).
inline GdnData slice_gdn(const GdnData& d, int64_t t0, int64_t t1) {
  const GdnShape& s = d.shape;
  GdnData out;
  out.shape = s;
  out.shape.T = t1 - t0;
  out.q = slice_tokens(d.q, s.B, s.T, s.H * s.K, t0, t1);
  out.k = slice_tokens(d.k, s.B, s.T, s.H * s.K, t0, t1);
  out.v = slice_tokens(d.v, s.B, s.T, s.HV * s.V, t0, t1);
  out.g = slice_tokens(d.g, s.B, s.T, s.HV, t0, t1);
  out.beta = slice_tokens(d.beta, s.B, s.T, s.HV, t0, t1);
  out.h0 = d.h0;
  return out;
}

// Repeats each q/k head `group` times so head h' = hv serves exactly value head hv: the GVA
// problem (H, HV) becomes the plain problem (HV, HV).
inline std::vector<double> repeat_heads(const std::vector<double>& x, const GdnShape& s) {
  std::vector<double> out;
  out.reserve(size_t(s.B * s.T * s.HV * s.K));
  for (int64_t bt = 0; bt < s.B * s.T; ++bt)
    for (int64_t hv = 0; hv < s.HV; ++hv) {
      const auto row = x.begin() + (bt * s.H + hv / s.group()) * s.K;
      out.insert(out.end(), row, row + s.K);
    }
  return out;
}

// RFC 4180: quoted fields may hold commas, doubled quotes and newlines.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  return parse_csv_text(text);
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    namespace fs = std::filesystem;
    path_ = (fs::temp_directory_path() / ("gdnbench_test_" + std::to_string(fresh_seed()))).string();
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A suite file in a temporary directory; an empty suite isolates a test from suites/default.ini.
struct SuiteFile {
  TempDir dir;
  std::string path;
  explicit SuiteFile(const std::string& text) : path(dir.file("suite.ini")) { write_text(path, text); }
};

struct ProcessResult {
  int exit_code = -1;
  std::string out, err;
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
};

// Runs the real gdnbench binary from the source directory with `args` (shell words).
inline ProcessResult run_gdnbench(const std::string& args) {
  TempDir tmp;
  const std::string out = tmp.file("stdout"), err = tmp.file("stderr");
  const std::string cmd = std::string("cd '") + GDNBENCH_SOURCE_DIR + "' && '" + GDNBENCH_BINARY +
                          "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  ProcessResult r;
  r.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

// The CSV written by the binary as header + records keyed by column name.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string cell(size_t row, const std::string& column) const {
    const size_t i = size_t(std::find(header.begin(), header.end(), column) - header.begin());
    return i < header.size() && i < rows[row].size() ? rows[row][i] : "<no column " + column + ">";
  }
};
inline Csv read_csv(const std::string& path) {
  auto all = testutil::parse_csv(testutil::read_text(path));
  Csv c;
  if (all.empty()) return c;
  c.header = all.front();
  c.rows.assign(all.begin() + 1, all.end());
  return c;
}

// Feature combinations the float64 references' chunked/recurrent comparisons cover (forward and
// backward).
struct RefConfig {
  const char* name;
  int64_t B, H, HV;
  bool gate, delta, h0;
};
inline const RefConfig kRefConfigs[] = {
    {"gdn", 1, 1, 1, true, true, false},
    {"gdn+h0", 1, 1, 1, true, true, true},
    {"gva HV=2H, B=2, h0", 2, 2, 4, true, true, true},
    {"gate off (DeltaNet), h0", 1, 1, 1, false, true, true},
    {"delta off (GLA), h0", 1, 1, 1, true, false, true},
    {"gate off and delta off (linear attention)", 1, 2, 2, false, false, false},
};

}  // namespace testutil
