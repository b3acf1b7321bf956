// Outputs that never harm a file (harness/io/output_file.h) and interrupts that stop a long case
// (harness/runner.h): the binary on FIFOs, sockets, directories, symbolic links and locked files
// made in temporary directories (never a real device), and SIGINT/SIGTERM during long cases.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "harness/io/csv.h"
#include "harness/io/npy.h"
#include "reference/gdn_reference.h"
#include "tests/common/test_util.h"

namespace {

namespace fs = std::filesystem;

// The exit status of a shell command run from the source directory (-1 when it did not exit).
int shell(const std::string& body) {
  const std::string cmd = std::string("cd '") + GDNBENCH_SOURCE_DIR + "' && (" + body + ")";
  const int status = std::system(cmd.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// gdnbench with `args`, killed after 60 s: the code before these checks blocked on a FIFO forever.
testutil::ProcessResult gdnbench_bounded(const std::string& args, const testutil::TempDir& tmp) {
  const std::string out = tmp.file("stdout"), err = tmp.file("stderr");
  testutil::ProcessResult r;
  r.exit_code = shell("timeout -s KILL 60 '" + std::string(GDNBENCH_BINARY) + "' " + args + " >'" + out +
                      "' 2>'" + err + "' </dev/null");
  r.out = testutil::read_text(out);
  r.err = testutil::read_text(err);
  return r;
}

bool is_fifo(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

std::string make_fifo(const testutil::TempDir& tmp, const std::string& name) {
  const std::string p = tmp.file(name);
  REQUIRE(::mkfifo(p.c_str(), 0600) == 0);
  return p;
}

// A bound UNIX socket at `name` (closed again; the socket file stays).
std::string make_socket(const testutil::TempDir& tmp, const std::string& name) {
  const std::string p = tmp.file(name);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(p.size() < sizeof addr.sun_path);
  std::strncpy(addr.sun_path, p.c_str(), sizeof addr.sun_path - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  REQUIRE(bound);
  return p;
}

std::vector<std::string> leftovers(const testutil::TempDir& tmp, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().filename().string());
  return found;
}

const char* kTinyVerify = "verify --variants cpu_recurrent --dtypes bf16 --T 8 --K 8 --V 8 --no-progress";

// A run whose second case samples for hours (100000 samples of a ~0.1 s launch) after a first case
// that is SKIPPED at once (chunk 48 is not supported) and so is written before the long one starts.
std::string long_run_args(const std::string& csv) {
  return "run --variants cpu_chunked,cpu_recurrent --chunk 48 --dtypes bf16 --T 1024 --H 2 --K 128 --V 128 "
         "--min-samples 100000 --max-samples 100000 --cv-target 0 --max-seconds 100000 --no-progress --out '" +
         csv + "'";
}

// Shell: waits up to `seconds` for $pid to end; exits 99 (after killing it) if it did not.
std::string wait_or_kill_shell(int seconds) {
  return "for i in $(seq " + std::to_string(seconds * 20) +
         "); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done; "
         "if kill -0 $pid 2>/dev/null; then kill -KILL $pid; wait $pid; exit 99; fi; wait $pid; exit $?";
}

}  // namespace

TEST_CASE("--out that is not a regular file is refused and left as it is", "[cli][outputs]") {
  testutil::TempDir tmp;
  SECTION("a FIFO") {
    const std::string fifo = make_fifo(tmp, "out.csv");
    const auto r = gdnbench_bounded(std::string(kTinyVerify) + " --out '" + fifo + "'", tmp);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is a FIFO, not a regular file") != std::string::npos);
    CHECK(r.err_lines().size() == 1);
    CHECK(is_fifo(fifo));  // not replaced by a CSV
  }
  SECTION("a socket") {
    const std::string sock = make_socket(tmp, "out.csv");
    const auto r = gdnbench_bounded(std::string(kTinyVerify) + " --out '" + sock + "'", tmp);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is a socket, not a regular file") != std::string::npos);
    struct stat st {};
    REQUIRE(::lstat(sock.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
  }
  SECTION("a directory") {
    const std::string dir = tmp.file("out.csv");
    fs::create_directories(dir);
    const auto r = gdnbench_bounded(std::string(kTinyVerify) + " --out '" + dir + "'", tmp);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is a directory, not a regular file") != std::string::npos);
    CHECK(fs::is_directory(dir));
  }
  CHECK(leftovers(tmp, "out.csv.tmp").empty());
}

TEST_CASE("--junit, report --out and check --csv refuse a FIFO without blocking on it", "[cli][outputs]") {
  testutil::TempDir tmp;
  const std::string csv = tmp.file("v.csv");
  SECTION("--junit") {
    const std::string fifo = make_fifo(tmp, "v.xml");
    const auto r = gdnbench_bounded(std::string(kTinyVerify) + " --out '" + csv + "' --junit '" + fifo + "'", tmp);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--junit") != std::string::npos);
    CHECK(r.err.find("is a FIFO, not a regular file") != std::string::npos);
    CHECK(is_fifo(fifo));
    CHECK_FALSE(fs::exists(csv));  // refused before the first case, not after the last
  }
  SECTION("--resume reads --out only once it is claimed: a FIFO is refused, not read") {
    const std::string fifo = make_fifo(tmp, "r.csv");
    const auto r = gdnbench_bounded(std::string(kTinyVerify) + " --resume --out '" + fifo + "'", tmp);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is a FIFO, not a regular file") != std::string::npos);
    CHECK(is_fifo(fifo));
  }
  SECTION("report --out") {
    REQUIRE(testutil::run_gdnbench(std::string(kTinyVerify) + " --out '" + csv + "'").exit_code == 0);
    const std::string fifo = make_fifo(tmp, "report.md");
    const auto r = gdnbench_bounded("report '" + csv + "' --out '" + fifo + "'", tmp);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("report: --out") != std::string::npos);
    CHECK(r.err.find("is a FIFO, not a regular file") != std::string::npos);
    CHECK(is_fifo(fifo));
  }
  SECTION("check --csv") {
    const std::string dump = tmp.file("dump");
    REQUIRE(testutil::run_gdnbench("dump --T 8 --B 1 --H 1 --K 8 --V 8 --dtypes bf16 --seed 3 --out '" + dump + "'")
                .exit_code == 0);
    const std::vector<float> zeros(8 * 8, 0.0f);
    write_npy(tmp.file("o.npy"), {1, 8, 1, 8}, zeros.data(), NpyType::f4);
    const std::string fifo = make_fifo(tmp, "ext.csv");
    const auto r = gdnbench_bounded("check '" + dump + "' --o '" + tmp.file("o.npy") + "' --csv '" + fifo + "'", tmp);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("check: --csv") != std::string::npos);
    CHECK(r.err.find("is a FIFO, not a regular file") != std::string::npos);
    CHECK(is_fifo(fifo));
  }
}

TEST_CASE("--out through a symbolic link writes the file it names; another's <out>.tmp is untouched",
          "[cli][outputs]") {
  testutil::TempDir tmp;
  const std::string real = tmp.file("real.csv"), link = tmp.file("link.csv");
  testutil::write_text(real, "an older file\n");
  fs::create_symlink(real, link);
  testutil::write_text(tmp.file("link.csv.tmp"), "not gdnbench's\n");
  testutil::write_text(tmp.file("real.csv.tmp"), "not gdnbench's either\n");
  const auto r = testutil::run_gdnbench(std::string(kTinyVerify) + " --out '" + link + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_symlink(link));
  const auto rows = testutil::parse_csv(testutil::read_text(real));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == csv_columns());
  // The temporary files have unique names: a file that happens to be called <out>.tmp stays.
  CHECK(testutil::read_text(tmp.file("link.csv.tmp")) == "not gdnbench's\n");
  CHECK(testutil::read_text(tmp.file("real.csv.tmp")) == "not gdnbench's either\n");
  CHECK(leftovers(tmp, "real.csv.tmp.").empty());
  CHECK(leftovers(tmp, "link.csv.tmp.").empty());

  const std::string dangling = tmp.file("dangling.csv");
  fs::create_symlink(tmp.file("nowhere/x.csv"), dangling);
  const auto d = testutil::run_gdnbench(std::string(kTinyVerify) + " --out '" + dangling + "'");
  CHECK(d.exit_code == 2);
  CHECK(d.err.find("symbolic link to nothing") != std::string::npos);
}

TEST_CASE("a second gdnbench on the same --out fails at once and leaves the file alone", "[cli][outputs]") {
  testutil::TempDir tmp;
  const std::string csv = tmp.file("shared.csv");
  const std::string second_out = tmp.file("second.out"), second_err = tmp.file("second.err");
  const std::string snapshot = tmp.file("snapshot.csv");
  // The first run sits in its long case; the second, on the same --out, must fail with exit 2 (the
  // wait caps it at 60 s) and must not have changed the file the first holds.
  const int rc = shell("'" + std::string(GDNBENCH_BINARY) + "' " + long_run_args(csv) +
                       " >/dev/null 2>&1 & pid=$!; " + testutil::wait_for_csv_rows_shell(csv) + "cp '" + csv + "' '" +
                       snapshot + "'; timeout -s KILL 60 '" + GDNBENCH_BINARY + "' " + kTinyVerify + " --out '" + csv +
                       "' >'" + second_out + "' 2>'" + second_err + "'; second=$?; kill -INT $pid; " +
                       "for i in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done; " +
                       "kill -KILL $pid 2>/dev/null; wait $pid; exit $second");
  CHECK(rc == 2);
  const std::string err = testutil::read_text(second_err);
  CHECK(err.find("--out: '" + csv + "' is in use by another gdnbench run") != std::string::npos);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK(testutil::read_text(csv) == testutil::read_text(snapshot));
  CHECK(leftovers(tmp, "shared.csv.tmp").empty());
}

TEST_CASE("check --csv validates the CSV it appends to and leaves a bad one as it is", "[cli][outputs][external]") {
  testutil::TempDir tmp;
  const std::string dump = tmp.file("dump");
  REQUIRE(testutil::run_gdnbench("dump --T 8 --B 1 --H 1 --K 8 --V 8 --dtypes bf16 --seed 3 --out '" + dump + "'")
              .exit_code == 0);
  const std::vector<float> zeros(8 * 8, 0.0f);
  write_npy(tmp.file("o.npy"), {1, 8, 1, 8}, zeros.data(), NpyType::f4);
  const std::string csv = tmp.file("ext.csv");
  const std::string check = "check '" + dump + "' --o '" + tmp.file("o.npy") + "' --csv '" + csv + "'";
  REQUIRE(testutil::run_gdnbench(check).exit_code == 1);  // a zero o fails, and is appended
  REQUIRE(testutil::run_gdnbench(check).exit_code == 1);
  const std::string good = testutil::read_text(csv);
  REQUIRE(testutil::parse_csv(good).size() == 3);

  SECTION("cut short in its last row") {
    testutil::write_text(csv, good.substr(0, good.size() - 7));
  }
  SECTION("a row missing fields") {
    const size_t last = good.rfind('\n', good.size() - 2) + 1;
    testutil::write_text(csv, good.substr(0, last) + good.substr(last, (good.size() - last) / 2) + "\n");
  }
  SECTION("a row of another schema_version") {
    const size_t last = good.rfind('\n', good.size() - 2) + 1;
    const std::string version = std::to_string(kCsvSchemaVersion);
    REQUIRE(good.compare(last, version.size() + 1, version + ",") == 0);
    testutil::write_text(csv, good.substr(0, last) + "9" + good.substr(last + version.size()));
  }
  SECTION("another program's CSV") {
    testutil::write_text(csv, "a,b,schema_version\n1,2,2\n");
  }
  const std::string before = testutil::read_text(csv);
  const auto r = testutil::run_gdnbench(check);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("check: --csv: '" + csv + "' is not a gdnbench CSV of schema v") != std::string::npos);
  CHECK(r.err_lines().size() == 1);
  CHECK(testutil::read_text(csv) == before);
}

TEST_CASE("the float64 references stop once their cancel flag is set", "[reference][interrupt]") {
  std::atomic<bool> cancel{false};
  struct Unhook {
    ~Unhook() { set_reference_cancel_flag(nullptr); }
  } unhook;
  set_reference_cancel_flag(&cancel);
  GdnShape s;
  s.T = 32768;
  s.H = s.HV = 2;
  const testutil::GdnData d = testutil::random_gdn(s, testutil::fresh_seed());
  GdnRefOptions opt;
  opt.threads = 2;
  GdnShape small = s;
  small.T = 16;
  const testutil::GdnData ds = testutil::random_gdn(small, 1);
  CHECK_NOTHROW(gdn_recurrent_ref(small, ds.view(), opt));  // not set: it computes

  // Set while it runs (a full run takes seconds): it stops within a few steps of each head.
  const auto start = std::chrono::steady_clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel.store(true);
  });
  CHECK_THROWS_AS(gdn_recurrent_ref(s, d.view(), opt), ReferenceCancelled);
  setter.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK_THROWS_AS(attention_ref(1, 4096, 2, 64, 64, d.q.data(), d.k.data(), d.v.data(), 0.0, true, 2),
                  ReferenceCancelled);
  CHECK_THROWS_AS(attention_cache_rows_ref(1, 4096, 0, 2, 64, 64, d.q.data(), d.k.data(), d.v.data(), nullptr,
                                           nullptr, 0.0, {0, 100, 4095}, 2),
                  ReferenceCancelled);
  set_reference_cancel_flag(nullptr);
  CHECK_NOTHROW(gdn_recurrent_ref(small, ds.view(), opt));  // unhooked: computes again
}

TEST_CASE("SIGINT inside a long case stops it at once: exit 130, the CSV of the finished cases",
          "[cli][interrupt]") {
  testutil::TempDir tmp;
  const std::string csv = tmp.file("partial.csv");
  const auto start = std::chrono::steady_clock::now();
  // The second case would sample for hours; the signal lands in it (or in its reference).
  const int rc = shell("'" + std::string(GDNBENCH_BINARY) + "' " + long_run_args(csv) + " >/dev/null 2>&1 & pid=$!; " +
                       testutil::wait_for_csv_rows_shell(csv) + "sleep 1; kill -INT $pid; " + wait_or_kill_shell(10));
  CHECK(rc == 130);  // 99: still running 10 s after the signal
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(40));
  const auto rows = testutil::parse_csv(testutil::read_text(csv));
  REQUIRE(rows.size() == 2);  // the header and the finished (SKIPPED) case; the interrupted one not
  CHECK(rows[0] == csv_columns());
  CHECK(rows[1].size() == rows[0].size());
  CHECK(leftovers(tmp, "partial.csv.tmp").empty());
}

TEST_CASE("a second signal ends an interrupted run at once", "[cli][interrupt]") {
  testutil::TempDir tmp;
  const std::string csv = tmp.file("partial.csv");
  // Both signals are made pending while the process is stopped, so neither can be handled alone
  // (on a loaded machine the run could otherwise finish its interruption between two kills). On
  // SIGCONT, SIGINT is taken first (the lower number) and restores the default actions; the
  // SIGTERM behind it then ends the process: the shell reports 128 + 15.
  const int rc = shell("'" + std::string(GDNBENCH_BINARY) + "' " + long_run_args(csv) + " >/dev/null 2>&1 & pid=$!; " +
                       testutil::wait_for_csv_rows_shell(csv) +
                       "sleep 1; kill -STOP $pid; kill -INT $pid; kill -TERM $pid; kill -CONT $pid; " +
                       wait_or_kill_shell(10));
  CHECK(rc == 128 + SIGTERM);
  const auto rows = testutil::parse_csv(testutil::read_text(csv));
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].size() == rows[0].size());
}
