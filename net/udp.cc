// UDP batch sockets; see udp.h.
#include "net/udp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/datagram.h"

namespace orderwire::net {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

absl::StatusOr<Endpoint> Endpoint::Parse(std::string_view host_port) {
  std::string host;
  std::string port;
  if (!host_port.empty() && host_port.front() == '[') {
    const std::size_t close = host_port.find(']');
    if (close == std::string_view::npos || close + 1 >= host_port.size() ||
        host_port[close + 1] != ':') {
      return absl::InvalidArgumentError(
          absl::StrFormat("'%s' is not [IPV6]:PORT", host_port));
    }
    host = std::string(host_port.substr(1, close - 1));
    port = std::string(host_port.substr(close + 2));
  } else {
    const std::size_t colon = host_port.rfind(':');
    if (colon == std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrFormat("'%s' is not HOST:PORT", host_port));
    }
    host = std::string(host_port.substr(0, colon));
    port = std::string(host_port.substr(colon + 1));
  }
  char* end = nullptr;
  const long port_number = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || port_number < 0 || port_number > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s': port '%s' is not a number from 0 to 65535", host_port, port));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                             port.c_str(), &hints, &result);
  if (rc != 0 || result == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s': cannot resolve host '%s': %s", host_port, host,
                        gai_strerror(rc)));
  }
  Endpoint endpoint;
  std::memcpy(&endpoint.storage, result->ai_addr, result->ai_addrlen);
  endpoint.length = result->ai_addrlen;
  freeaddrinfo(result);
  return endpoint;
}

std::uint16_t Endpoint::port() const {
  if (family() == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  }
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

std::string Endpoint::ToString() const {
  char text[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET,
              &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof(text));
    return absl::StrFormat("%s:%d", text, port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6,
              &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof(text));
    return absl::StrFormat("[%s]:%d", text, port());
  }
  return "(no address)";
}

bool Endpoint::operator==(const Endpoint& other) const {
  if (family() != other.family()) return false;
  if (family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    const auto* b = reinterpret_cast<const sockaddr_in*>(&other.storage);
    return a->sin_port == b->sin_port &&
           a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    const auto* b = reinterpret_cast<const sockaddr_in6*>(&other.storage);
    return a->sin6_port == b->sin6_port &&
           std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) == 0;
  }
  return length == other.length;
}

struct DatagramBatch::Storage {
  explicit Storage(std::size_t capacity)
      : bytes(capacity * codec::kMaxDatagramSize),
        iovecs(capacity),
        headers(capacity),
        peers(capacity) {
    for (std::size_t i = 0; i < capacity; ++i) {
      iovecs[i].iov_base = bytes.data() + i * codec::kMaxDatagramSize;
      iovecs[i].iov_len = codec::kMaxDatagramSize;
      msghdr& h = headers[i].msg_hdr;
      h.msg_iov = &iovecs[i];
      h.msg_iovlen = 1;
      h.msg_name = &peers[i].storage;
      h.msg_namelen = sizeof(peers[i].storage);
    }
  }
  std::vector<std::byte> bytes;
  std::vector<iovec> iovecs;
  std::vector<mmsghdr> headers;
  std::vector<Endpoint> peers;
};

DatagramBatch::DatagramBatch(std::size_t capacity)
    : capacity_(capacity), storage_(std::make_unique<Storage>(capacity)) {}

DatagramBatch::~DatagramBatch() = default;

std::span<std::byte> DatagramBatch::buffer(std::size_t i) {
  return {storage_->bytes.data() + i * codec::kMaxDatagramSize,
          codec::kMaxDatagramSize};
}

std::span<const std::byte> DatagramBatch::datagram(std::size_t i) const {
  return {storage_->bytes.data() + i * codec::kMaxDatagramSize,
          storage_->headers[i].msg_len};
}

void DatagramBatch::set_length(std::size_t i, std::size_t length) {
  storage_->iovecs[i].iov_len = length;
  storage_->headers[i].msg_len = static_cast<unsigned>(length);
}

const Endpoint& DatagramBatch::peer(std::size_t i) const {
  return storage_->peers[i];
}

void DatagramBatch::set_peer(std::size_t i, const Endpoint& peer) {
  storage_->peers[i] = peer;
  storage_->headers[i].msg_hdr.msg_namelen = peer.length;
}

bool DatagramBatch::truncated(std::size_t i) const {
  return (storage_->headers[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
}

absl::StatusOr<UdpSocket> UdpSocket::Bind(const Endpoint& local,
                                          const Options& options) {
  const int type =
      SOCK_DGRAM | SOCK_CLOEXEC | (options.non_blocking ? SOCK_NONBLOCK : 0);
  const int fd = ::socket(local.family(), type, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrFormat("socket(): %s", ErrnoText(errno)));
  }
  UdpSocket socket(fd);
  // Ask for big buffers; as root, force them past net.core.*mem_max.
  for (const auto& [opt, force, bytes] :
       {std::tuple{SO_RCVBUF, SO_RCVBUFFORCE, options.receive_buffer_bytes},
        std::tuple{SO_SNDBUF, SO_SNDBUFFORCE, options.send_buffer_bytes}}) {
    if (bytes <= 0) continue;
    if (::setsockopt(fd, SOL_SOCKET, force, &bytes, sizeof(bytes)) != 0) {
      ::setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes));
    }
  }
  if (::bind(fd, local.addr(), local.length) != 0) {
    return absl::UnavailableError(
        absl::StrFormat("bind %s: %s", local.ToString(), ErrnoText(errno)));
  }
  return socket;
}

UdpSocket::UdpSocket(UdpSocket&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<Endpoint> UdpSocket::LocalEndpoint() const {
  Endpoint endpoint;
  endpoint.length = sizeof(endpoint.storage);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&endpoint.storage),
                    &endpoint.length) != 0) {
    return absl::UnavailableError(
        absl::StrFormat("getsockname: %s", ErrnoText(errno)));
  }
  return endpoint;
}

int UdpSocket::Receive(DatagramBatch& batch, std::size_t max) {
  DatagramBatch::Storage& s = *batch.storage_;
  if (max > batch.capacity()) max = batch.capacity();
  for (std::size_t i = 0; i < max; ++i) {
    s.iovecs[i].iov_len = codec::kMaxDatagramSize;
    s.headers[i].msg_hdr.msg_namelen = sizeof(s.peers[i].storage);
    s.headers[i].msg_hdr.msg_flags = 0;
  }
  // MSG_TRUNC in the flags reports datagrams longer than the buffer.
  const int n = ::recvmmsg(fd_, s.headers.data(), static_cast<unsigned>(max),
                           MSG_DONTWAIT, nullptr);
  if (n < 0) return -errno;
  for (int i = 0; i < n; ++i) {
    s.peers[static_cast<std::size_t>(i)].length =
        s.headers[static_cast<std::size_t>(i)].msg_hdr.msg_namelen;
  }
  return n;
}

int UdpSocket::Send(DatagramBatch& batch, std::size_t count) {
  return SendRange(batch, 0, count);
}

int UdpSocket::SendRange(DatagramBatch& batch, std::size_t first,
                         std::size_t count) {
  if (count == 0) return 0;
  DatagramBatch::Storage& s = *batch.storage_;
  const int n = ::sendmmsg(fd_, s.headers.data() + first,
                           static_cast<unsigned>(count), MSG_DONTWAIT);
  return n < 0 ? -errno : n;
}

bool UdpSocket::WaitReadable(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace orderwire::net
