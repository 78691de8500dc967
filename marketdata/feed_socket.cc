// The subscriber's UDP transport: feed_socket.h has the contract.
#include "marketdata/feed_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "feed/packet.h"
#include "marketdata/subscriber.h"

namespace orderwire::marketdata {
namespace {

absl::Status Errno(const std::string& what, int error) {
  return absl::ErrnoToStatus(error, what);
}

// A numeric IPv4 or IPv6 address and a port; false if not numeric.
bool MakeAddress(const std::string& address, std::uint16_t port,
                 sockaddr_storage* out, socklen_t* length) {
  *out = {};
  sockaddr_in v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    std::memcpy(out, &v4, sizeof(v4));
    *length = sizeof(v4);
    return true;
  }
  sockaddr_in6 v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    std::memcpy(out, &v6, sizeof(v6));
    *length = sizeof(v6);
    return true;
  }
  return false;
}

absl::Status Join(int fd, int family, const FeedSocketOptions& options) {
  if (family == AF_INET) {
    ip_mreq request{};
    if (inet_pton(AF_INET, options.multicast_group.c_str(),
                  &request.imr_multiaddr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("multicast group not a numeric IPv4 address: ",
                       options.multicast_group));
    }
    request.imr_interface.s_addr = htonl(INADDR_ANY);
    if (!options.multicast_interface.empty() &&
        inet_pton(AF_INET, options.multicast_interface.c_str(),
                  &request.imr_interface) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("multicast interface not a numeric IPv4 address: ",
                       options.multicast_interface));
    }
    if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &request,
                   sizeof(request)) != 0) {
      return Errno(absl::StrCat("join ", options.multicast_group), errno);
    }
    return absl::OkStatus();
  }
  ipv6_mreq request{};
  if (inet_pton(AF_INET6, options.multicast_group.c_str(),
                &request.ipv6mr_multiaddr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("multicast group not a numeric IPv6 address: ",
                     options.multicast_group));
  }
  request.ipv6mr_interface = options.multicast_interface_index;
  if (setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &request,
                 sizeof(request)) != 0) {
    return Errno(absl::StrCat("join ", options.multicast_group), errno);
  }
  return absl::OkStatus();
}

std::uint16_t BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    return 0;
  }
  if (bound.ss_family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, &bound, sizeof(v4));
    return ntohs(v4.sin_port);
  }
  sockaddr_in6 v6{};
  std::memcpy(&v6, &bound, sizeof(v6));
  return ntohs(v6.sin6_port);
}

// Binds (joining the group, if any) a new non-blocking socket; the fd, or
// an error (the fd closed).
absl::StatusOr<int> BindSocket(const FeedSocketOptions& options,
                               const sockaddr_storage& local,
                               socklen_t local_length) {
  const int fd =
      socket(local.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket", errno);
  const int one = 1;
  // Several subscribers of one group on a host share its port.
  if (!options.multicast_group.empty()) {
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  }
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options.receive_buffer_bytes,
                   sizeof(options.receive_buffer_bytes));
  absl::Status status;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&local), local_length) != 0) {
    status = Errno(
        absl::StrCat("bind ", options.bind_address, ":", options.port), errno);
  } else if (!options.multicast_group.empty()) {
    status = Join(fd, local.ss_family, options);
  }
  if (!status.ok()) {
    close(fd);
    return status;
  }
  return fd;
}

}  // namespace

absl::StatusOr<FeedSocket> FeedSocket::Open(const FeedSocketOptions& options) {
  sockaddr_storage local{};
  socklen_t local_length = 0;
  if (!MakeAddress(options.bind_address, options.port, &local, &local_length)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bind address not a numeric IPv4 or IPv6 address: ",
                     options.bind_address));
  }
  sockaddr_storage server{};
  socklen_t server_length = 0;
  if (!MakeAddress(options.request_address, options.request_port, &server,
                   &server_length) ||
      server.ss_family != local.ss_family) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request server not a numeric address of the bind address's "
        "family: ",
        options.request_address));
  }
  const absl::StatusOr<int> fd = BindSocket(options, local, local_length);
  if (!fd.ok()) return fd.status();
  return FeedSocket(*fd, server, server_length, BoundPort(*fd));
}

FeedSocket::FeedSocket(FeedSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      server_(other.server_),
      server_length_(other.server_length_),
      local_port_(other.local_port_) {}

FeedSocket& FeedSocket::operator=(FeedSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    server_ = other.server_;
    server_length_ = other.server_length_;
    local_port_ = other.local_port_;
  }
  return *this;
}

FeedSocket::~FeedSocket() {
  if (fd_ >= 0) close(fd_);
}

absl::Status FeedSocket::Send(std::span<const std::byte> request) {
  const ssize_t sent =
      sendto(fd_, request.data(), request.size(), 0,
             reinterpret_cast<const sockaddr*>(&server_), server_length_);
  if (sent < 0) return Errno("sendto request server", errno);
  return absl::OkStatus();
}

absl::StatusOr<int> FeedSocket::Receive(Subscriber& subscriber,
                                        std::int64_t now_ns, int max) {
  int received = 0;
  while (received < max) {
    // MSG_TRUNC: the datagram's real length, so an oversize one stays so.
    const ssize_t n = recv(fd_, buffer_.data(), buffer_.size(), MSG_TRUNC);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      // An ICMP error of an earlier request (the request server not
      // there yet): the subscriber asks again; the feed goes on.
      if (errno == ECONNREFUSED) continue;
      return Errno("recv", errno);
    }
    const std::size_t size =
        std::min(static_cast<std::size_t>(n), buffer_.size());
    subscriber.OnPacket(std::span(buffer_).first(size), now_ns);
    ++received;
  }
  return received;
}

}  // namespace orderwire::marketdata
