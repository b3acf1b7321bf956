// An output path that gdnbench writes (the --out CSV, check --csv, --junit, report --out, ceilings
// --out) without harming what is there:
// - an existing path that is not a regular file (a device, FIFO, socket or directory) is refused
//   before anything is opened for writing; a symbolic link is followed to the file it names;
// - every write goes to a temporary file with a unique name (mkstemp, `<path>.tmp.XXXXXX`) in the
//   same directory, then is renamed over the path, so a reader sees the old contents or the new;
// - an advisory lock (flock) is held on the file for the object's lifetime, so a second gdnbench
//   on the same path fails at once instead of both writing it.
// The lock is on the file itself. A rename gives the path a new inode, so each temporary file is
// locked before it is renamed over the path and the previous one is let go only after that: the
// inode at the path is locked at every moment, and no lock file is left beside the output. A
// process that locked an inode the path no longer names (a rename in between) sees that and tries
// again, so it finds the new inode locked.
#pragma once
#include <string>

#include "harness/io/errors.h"

// The path is locked by another process (another gdnbench on the same output).
struct OutputInUse : UsageError {
  using UsageError::UsageError;
};

class OutputFile {
 public:
  // Claims `path`: refuses an existing path that is not a regular file (UsageError), locks it
  // (OutputInUse when another process holds it). A missing file is created empty (the lock needs
  // an inode) and removed again if nothing is written; with create_parents, missing directories
  // above it are created first. The messages name the path and start with none of the callers'
  // flags.
  explicit OutputFile(std::string path, bool create_parents = false);
  ~OutputFile();
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Replaces the contents with `text` (temporary file, then rename); std::runtime_error when it
  // cannot be written (the path then keeps its previous contents).
  void replace(const std::string& text);
  // What the file held when it was claimed ("" for a file it created).
  std::string read_existing() const;
  bool existed() const { return existed_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;    // as given
  std::string target_;  // the file written: path_ with a symbolic link resolved
  int fd_ = -1;         // the locked inode currently at target_
  bool existed_ = false;
  bool written_ = false;
};
