// scripts/gate_plan_coverage.py on small plan lists and gate CSVs: a row's options are placed in
// their stages by name (a backward row names only its backward stage), an option no PASS row ran
// is missing, and a FAIL row or an option the list lacks fails the check.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/common/test_util.h"

namespace {

// Two stages of one GPU variant, as `gdnbench list --plans` prints them, and a CPU variant.
const char* const kPlans =
    "variant                  stage      option                     dtypes\n"
    "recurrent                form       long_k64                   fp32,bf16\n"
    "recurrent                backward   backward_k64               fp32\n"
    "cpu_recurrent            order      sequential                 fp32\n";

struct Coverage {
  int exit_code = -1;
  std::string out;
};

// The script on kPlans and a CSV of `rows` (variant,dtype,status,plan lines).
Coverage coverage(const std::string& rows) {
  testutil::TempDir dir;
  testutil::write_text(dir.file("plans.txt"), kPlans);
  testutil::write_text(dir.file("gate.csv"), "variant,dtype,status,plan\n" + rows);
  const std::string cmd = std::string("cd '") + GDNBENCH_SOURCE_DIR + "' && /usr/bin/python3 scripts/gate_plan_coverage.py '" +
                          dir.file("plans.txt") + "' '" + dir.file("gate.csv") + "' >'" + dir.file("out") + "' 2>&1";
  const int status = std::system(cmd.c_str());
  Coverage c;
  c.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  c.out = testutil::read_text(dir.file("out"));
  return c;
}

const std::string kForward = "recurrent,fp32,PASS,long_k64\nrecurrent,bf16,PASS,long_k64\n";

}  // namespace

TEST_CASE("gate_plan_coverage places each option in its stage by name", "[plans][scripts]") {
  SECTION("a backward row alone reaches the backward stage") {
    const Coverage c = coverage(kForward + "recurrent,fp32,PASS,backward_k64\n");
    INFO(c.out);
    CHECK(c.exit_code == 0);
    CHECK_THAT(c.out, Catch::Contains("3 (variant, stage, option, dtype) reached, 0 missing"));
  }
  SECTION("a forward-and-backward row reaches both, a detail after the options is no option") {
    const Coverage c = coverage("recurrent,bf16,PASS,long_k64\nrecurrent,fp32,PASS,long_k64/backward_k64 (x=1)\n");
    INFO(c.out);
    CHECK(c.exit_code == 0);
  }
  SECTION("an option no PASS row ran is missing") {
    const Coverage c = coverage(kForward + "recurrent,fp32,SKIPPED,backward_k64\n");
    CHECK(c.exit_code == 1);
    CHECK_THAT(c.out, Catch::Contains("not reached: recurrent stage 1 backward_k64 fp32"));
  }
  SECTION("an option the list does not have fails: a list of another build proves nothing") {
    const Coverage c = coverage(kForward + "recurrent,fp32,PASS,backward_k64\nrecurrent,fp32,PASS,backward_k128\n");
    CHECK(c.exit_code == 1);
    CHECK_THAT(c.out, Catch::Contains("not in the plans list: recurrent backward_k128"));
  }
  SECTION("a FAIL row fails") {
    const Coverage c = coverage(kForward + "recurrent,fp32,PASS,backward_k64\nrecurrent,fp32,FAIL,long_k64\n");
    CHECK(c.exit_code == 1);
    CHECK_THAT(c.out, Catch::Contains("1 FAIL"));
  }
}

TEST_CASE("list --plans prints recurrent's backward stage, one option per K bucket", "[plans][cli]") {
  const testutil::ProcessResult r = testutil::run_gdnbench("list --plans");
  REQUIRE(r.exit_code == 0);
  for (const char* option : {"backward_k64", "backward_k128", "backward_k256"}) {
    INFO(option);
    CHECK_THAT(r.out, Catch::Matches("[\\s\\S]*\\nrecurrent +backward +" + std::string(option) +
                                     " +fp32,bf16,fp16\\n[\\s\\S]*"));
  }
}
