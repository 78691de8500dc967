// See http.h.
#include "tests/support/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace orderwire::test_support {
namespace {

using Clock = std::chrono::steady_clock;

// Waits until `fd` has `events` or `deadline` passes (false).
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd entry{.fd = fd, .events = events, .revents = 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(left.count()));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

}  // namespace

absl::StatusOr<std::string> HttpRequest(std::uint16_t port,
                                        const std::string& method,
                                        const std::string& path,
                                        std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  const int fd =
      ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  auto fail = [fd](const char* what, int error) {
    ::close(fd);
    return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
  };
  auto late = [fd, timeout](const char* what) {
    ::close(fd);
    return absl::DeadlineExceededError(absl::StrCat(
        "no answer within ", timeout.count(), " ms: waiting for ", what));
  };
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                sizeof(address)) != 0) {
    if (errno != EINPROGRESS) return fail("connect", errno);
    if (!WaitFor(fd, POLLOUT, deadline)) return late("the connection");
    int error = 0;
    socklen_t length = sizeof(error);
    (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) return fail("connect", error);
  }
  const std::string request =
      absl::StrCat(method, " ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  // A few dozen bytes into an empty send buffer: one send takes them all.
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return fail("write", errno);
  }
  std::string answer;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      answer.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return fail("read", errno);
    if (!WaitFor(fd, POLLIN, deadline)) return late("the answer");
  }
  ::close(fd);
  return answer;
}

}  // namespace orderwire::test_support
