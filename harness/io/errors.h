// What every reader of user input shares: the error of a user's mistake and the list splitter
// (the command line, suite files, CSVs, claims files, reports).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

// A mistake of the user (bad flag, value, file): one line on stderr, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "a, b,,c " -> {"a", "b", "c"}: comma-separated, blanks and empty items dropped.
std::vector<std::string> split_list(const std::string& s);
