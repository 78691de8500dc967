// See http.h.
#include "tests/support/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace orderwire::test_support {

absl::StatusOr<std::string> HttpRequest(std::uint16_t port,
                                        const std::string& method,
                                        const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  auto fail = [fd](const char* what) {
    const int error = errno;
    ::close(fd);
    return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
  };
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                sizeof(address)) != 0) {
    return fail("connect");
  }
  const std::string request =
      absl::StrCat(method, " ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (::write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    return fail("write");
  }
  std::string answer;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("read");
    if (n == 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

}  // namespace orderwire::test_support
