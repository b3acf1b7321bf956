#include "harness/io/errors.h"

#include <filesystem>
#include <system_error>

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ' && c != '\t') {
      cur += c;
    }
  }
  return out;
}

bool take_flag_value(const std::vector<std::string>& args, size_t& i, const std::string& flag, std::string& dst,
                     const std::string& command) {
  const std::string& a = args[i];
  if (a == flag) {
    if (i + 1 >= args.size()) throw UsageError(command + ": " + flag + " needs a value");
    dst = args[++i];
    return true;
  }
  if (a.rfind(flag + "=", 0) == 0) {
    dst = a.substr(flag.size() + 1);
    return true;
  }
  return false;
}

namespace {
std::string& data_dir() {
  static std::string dir;
  return dir;
}
}  // namespace

void set_data_dir(const std::string& dir) { data_dir() = dir; }

std::string find_named_file(const std::string& name, const std::string& folder, const std::string& ext) {
  std::vector<std::string> candidates = {name};
  if (name.find('/') == std::string::npos) {
    candidates.push_back(folder + "/" + name + ext);
    if (!data_dir().empty()) candidates.push_back(data_dir() + "/" + folder + "/" + name + ext);
#ifdef GDNBENCH_SOURCE_DIR
    candidates.push_back(std::string(GDNBENCH_SOURCE_DIR) + "/" + folder + "/" + name + ext);
#endif
  }
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) return c;
  }
  return "";
}
