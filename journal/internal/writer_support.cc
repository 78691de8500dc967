// Helpers shared by the parts of the JournalWriter; see writer_support.h.
#include "journal/internal/writer_support.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

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

}  // namespace orderwire::journal::internal
