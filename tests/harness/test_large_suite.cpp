// suites/large.ini, the 64-bit indexing cases: every case must be past 2^31 elements in v and o,
// and every GPU variant of the registry must have a case there or a "# not here:" entry saying
// why not. The suite itself runs on a GPU machine only (README.md); this checks its contents.
#include <catch2/catch.hpp>

#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "harness/io/cli.h"
#include "tests/common/test_util.h"

namespace {

// Variant names after "# not here:" comments (up to the first ':' after the list, or the line end).
std::set<std::string> exempted(const std::string& suite_text) {
  std::set<std::string> names;
  std::istringstream in(suite_text);
  for (std::string line; std::getline(in, line);) {
    const std::string tag = "# not here:";
    if (line.rfind(tag, 0) != 0) continue;
    std::string rest = line.substr(tag.size());
    rest = rest.substr(0, rest.find(':'));
    std::string word;
    for (char c : rest + " ") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        word += c;
      } else {
        if (find_variant(word)) names.insert(word);
        word.clear();
      }
    }
  }
  return names;
}

}  // namespace

TEST_CASE("suites/large.ini: every case is past 2^31 elements, every GPU variant is covered",
          "[suites][large]") {
  bool any_cuda = false;
  for (const VariantInfo& v : variant_registry()) any_cuda = any_cuda || v.backend == Backend::cuda;
  if (!any_cuda) {
    WARN("built without CUDA: the suite names GPU variants this build does not have");
    return;
  }
  const std::string path = std::string(GDNBENCH_SOURCE_DIR) + "/suites/large.ini";
  const Invocation inv = parse_invocation({"verify", "--suite", path}, true);
  REQUIRE(!inv.cases.empty());
  std::map<std::string, int> cases_of;
  for (const Case& c : inv.cases) {
    INFO(c.variant->name << " B=" << c.problem.shape.B << " T=" << c.problem.shape.T);
    CHECK(c.explicit_variant);
    CHECK(c.variant->backend == Backend::cuda);
    CHECK(c.problem.shape.v_elems() > (int64_t(1) << 31));
    ++cases_of[c.variant->name];
  }
  const std::set<std::string> not_here = exempted(testutil::read_text(path));
  for (const VariantInfo& v : variant_registry()) {
    if (v.backend != Backend::cuda) continue;
    INFO("GPU variant " << v.name << ": add a line to suites/large.ini (or a \"# not here:\" entry "
                        "with the reason)");
    CHECK(cases_of[v.name] + int(not_here.count(v.name)) == 1);
  }
}
