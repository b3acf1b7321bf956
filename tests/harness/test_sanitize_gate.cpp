// scripts/sanitize_gate.sh on the CPU backend, with a stand-in for compute-sanitizer that runs the
// program and reports a chosen error count: the summary lines, the per-variant split and the exit
// status follow what the sanitizer reports.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/common/test_util.h"

namespace {

struct ScriptResult {
  int exit_code = -1;
  std::string summary;
};

// Runs the script with `env` (shell assignments) and the stand-in sanitizer first on PATH.
ScriptResult run_sanitize_gate(const testutil::TempDir& dir, const std::string& env) {
  const std::string fake = dir.file("compute-sanitizer");
  testutil::write_text(fake,
                       "#!/usr/bin/env bash\n"
                       "while [ $# -gt 0 ] && [ \"${1#--}\" != \"$1\" ]; do shift 2; done\n"
                       "\"$@\"; rc=$?\n"
                       "echo \"========= ERROR SUMMARY: ${FAKE_ERRORS:-0} errors\"\n"
                       "[ \"${FAKE_ERRORS:-0}\" = 0 ] || exit 99\n"
                       "exit $rc\n");
  const std::string build = std::string(GDNBENCH_BINARY).substr(0, std::string(GDNBENCH_BINARY).rfind('/'));
  const std::string out = dir.file("out");
  const std::string cmd = "chmod +x '" + fake + "' && cd '" + GDNBENCH_SOURCE_DIR + "' && PATH='" + dir.path() +
                          "':$PATH GDNBENCH_BUILD='" + build + "' SANITIZE_TOOLS=memcheck SANITIZE_TIMEOUT=120 " +
                          env + " scripts/sanitize_gate.sh '" + out + "' >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  ScriptResult r;
  r.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.summary = testutil::read_text(out + "/summary.txt");
  return r;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("sanitize_gate.sh: one pass per variant when asked, exit status from the sanitizer's count",
          "[scripts][sanitize]") {
  testutil::TempDir dir;
  SECTION("per variant, clean") {
    const ScriptResult r =
        run_sanitize_gate(dir, "SANITIZE_VARIANTS=cpu_recurrent,cpu_chunked SANITIZE_PER_VARIANT=1");
    INFO(r.summary);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.summary, "memcheck_cpu_recurrent: clean; errors 0"));
    CHECK(contains(r.summary, "memcheck_cpu_chunked: clean; errors 0"));
    CHECK(contains(r.summary, "variants cpu_chunked:"));
  }
  SECTION("one pass, errors reported") {
    const ScriptResult r = run_sanitize_gate(dir, "SANITIZE_VARIANTS=cpu_recurrent FAKE_ERRORS=3");
    INFO(r.summary);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.summary, "memcheck: SANITIZER ERRORS; errors 3"));
  }
}
