#include "harness/io/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace {

const char* kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

bool same_inode(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

std::string error_text() { return std::strerror(errno); }

[[noreturn]] void refuse(const std::string& path, mode_t m) {
  throw UsageError(fmt::format("'{}' is {}, not a regular file; gdnbench writes only regular files", path,
                               kind_name(m)));
}

// Whether flock failed because another open file holds the lock (not because the filesystem has no locks).
bool lock_held_elsewhere(int fd) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return false;
  return errno == EWOULDBLOCK || errno == EAGAIN;
}

void write_all(int fd, const std::string& text, const std::string& name) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(fmt::format("cannot write '{}': {}", name, n < 0 ? error_text() : "no progress"));
    p += n;
    left -= size_t(n);
  }
}

}  // namespace

OutputFile::OutputFile(std::string path, bool create_parents) : path_(std::move(path)), target_(path_) {
  namespace fs = std::filesystem;
  if (path_.empty()) throw UsageError("an empty output path");
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path resolved = fs::canonical(path_, ec);
    if (ec) throw UsageError(fmt::format("'{}' is a symbolic link to nothing", path_));
    target_ = resolved.string();
  }
  // Refused before anything is opened: opening some devices is itself an action.
  if (::stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(path_, st.st_mode);
  const fs::path parent = fs::path(target_).parent_path();
  if (create_parents && !parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw std::runtime_error(fmt::format("cannot create the directory '{}': {}", parent.string(), ec.message()));
  }
  for (int attempt = 0; attempt < 50; ++attempt) {
    bool created = false;
    int fd = ::open(target_.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      fd = ::open(target_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
      if (fd < 0 && errno == EEXIST) continue;  // created by someone else meanwhile: lock theirs
      created = fd >= 0;
    }
    if (fd < 0) throw std::runtime_error(fmt::format("cannot open '{}': {}", path_, error_text()));
    struct stat held {};
    if (::fstat(fd, &held) != 0 || !S_ISREG(held.st_mode)) {  // replaced between stat and open
      const mode_t m = held.st_mode;
      ::close(fd);
      refuse(path_, m);
    }
    if (lock_held_elsewhere(fd)) {
      ::close(fd);
      throw OutputInUse(fmt::format("'{}' is in use by another gdnbench run (it holds the file's lock); "
                                    "wait for that run or write elsewhere", path_));
    }
    // The lock counts only if the path still names this inode (a writer's rename may have replaced it).
    struct stat now {};
    if (::stat(target_.c_str(), &now) != 0 || !same_inode(now, held)) {
      ::close(fd);
      continue;
    }
    fd_ = fd;
    existed_ = !created;
    return;
  }
  throw std::runtime_error(fmt::format("cannot lock '{}': it keeps being replaced", path_));
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      fd_(std::exchange(other.fd_, -1)),
      existed_(other.existed_),
      written_(other.written_) {}

OutputFile::~OutputFile() {
  if (fd_ < 0) return;
  // The empty file the claim created, if nothing was written into it after all.
  struct stat held {}, now {};
  if (!existed_ && !written_ && ::fstat(fd_, &held) == 0 && held.st_size == 0 &&
      ::stat(target_.c_str(), &now) == 0 && same_inode(held, now))
    ::unlink(target_.c_str());
  ::close(fd_);
}

std::string OutputFile::read_existing() const {
  std::string text;
  if (!existed_ && !written_) return text;
  char buf[1 << 16];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("cannot read '{}': {}", path_, error_text()));
    if (n == 0) break;
    text.append(buf, size_t(n));
    at += n;
  }
  return text;
}

void OutputFile::replace(const std::string& text) {
  std::string tmp = target_ + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create a temporary file beside '{}': {}", path_, error_text()));
  try {
    // Locked before it is renamed over the path, so the path's inode is never unlocked.
    ::flock(fd, LOCK_EX | LOCK_NB);
    struct stat held {};
    if (::fstat(fd_, &held) == 0) ::fchmod(fd, held.st_mode & 07777);  // mkstemp's 0600 otherwise
    write_all(fd, text, tmp);
    if (::rename(tmp.c_str(), target_.c_str()) != 0)
      throw std::runtime_error(fmt::format("cannot rename '{}' to '{}': {}", tmp, path_, error_text()));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd_);
  fd_ = fd;
  written_ = true;
}
