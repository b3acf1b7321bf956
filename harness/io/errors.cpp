#include "harness/io/errors.h"

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
