// What every reader of user input shares: the error of a user's mistake, the list splitter (the
// command line, suite files, CSVs, claims files, reports) and the flag reader of the commands
// that take their arguments by hand (report, claims, compare).
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

// args[i] is `flag VALUE` (then i moves onto VALUE) or `flag=VALUE`: VALUE into dst, true.
// Anything else: false. A flag without its value is a UsageError naming `command`.
bool take_flag_value(const std::vector<std::string>& args, size_t& i, const std::string& flag, std::string& dst,
                     const std::string& command);

// A file named on the command line: NAME itself if it is a file; else, for a bare name (no '/'),
// FOLDER/NAME.EXT here, then under the data folder (set_data_dir: an installed package's copy of
// the suites, claims and tolerance profiles), then in the source tree. "" if none.
std::string find_named_file(const std::string& name, const std::string& folder, const std::string& ext);

// Where an installed copy of suites/, claims/ and tolerances/ lives ("" : none, the default). The
// Python package sets its own, so a wheel finds its suites by name wherever it is imported.
void set_data_dir(const std::string& dir);
