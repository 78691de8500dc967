// Helpers shared by the parts of the JournalWriter; see writer_support.h.
#include "journal/internal/writer_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"

namespace orderwire::journal::internal {

std::string ErrnoText(int err) {
  return absl::StrFormat("%s (errno %d)", std::strerror(err), err);
}

absl::Status ErrnoStatus(int err, std::string_view what) {
  return absl::ErrnoToStatus(err,
                             absl::StrFormat("%s: %s", what, ErrnoText(err)));
}

int PwriteAll(int fd, const std::byte* data, std::size_t length,
              std::uint64_t offset) {
  while (length > 0) {
    const ssize_t n = ::pwrite(fd, data, length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data += n;
    length -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return 0;
}

absl::StatusOr<std::optional<std::vector<std::byte>>> ReadSmallFile(
    const std::string& path, std::size_t max_bytes) {
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::optional<std::vector<std::byte>>();
    return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  }
  std::vector<std::byte> bytes(max_bytes + 1);
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd.get(), bytes.data() + got, bytes.size() - got,
                              static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrFormat("read %s", path));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
  return std::optional<std::vector<std::byte>>(std::move(bytes));
}

absl::Status PublishSmallFile(const std::string& directory, int dir_fd,
                              std::string_view temp_name, std::string_view name,
                              std::span<const std::byte> bytes) {
  const std::string tmp = absl::StrFormat("%s/%s", directory, temp_name);
  const std::string path = absl::StrFormat("%s/%s", directory, name);
  base::UniqueFd fd(
      ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", tmp));
  if (const int err = PwriteAll(fd.get(), bytes.data(), bytes.size(), 0);
      err != 0) {
    return ErrnoStatus(err, absl::StrFormat("write %s", tmp));
  }
  if (::fdatasync(fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fdatasync %s", tmp));
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("rename %s to %s", tmp, path));
  }
  if (::fsync(dir_fd) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", directory));
  }
  return absl::OkStatus();
}

}  // namespace orderwire::journal::internal
