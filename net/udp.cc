// UDP batch sockets; see udp.h.
#include "net/udp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/udp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/datagram.h"

namespace orderwire::net {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

const SocketCalls kRealCalls{};

// Room for one UDP_SEGMENT control message (a u16 gso_size).
struct alignas(cmsghdr) SegmentControl {
  char bytes[CMSG_SPACE(sizeof(std::uint16_t))];
};
// Room for the UDP_GRO control message of a received slot (an int).
struct alignas(cmsghdr) GroControl {
  char bytes[CMSG_SPACE(sizeof(int))];
};

}  // namespace

std::string_view SendPathName(SendPath path) {
  switch (path) {
    case SendPath::kAuto:
      return "auto";
    case SendPath::kSendmmsg:
      return "sendmmsg";
    case SendPath::kSegmented:
      return "gso";
  }
  return "?";
}

bool ParseSendPath(std::string_view name, SendPath* path) {
  for (const SendPath p :
       {SendPath::kAuto, SendPath::kSendmmsg, SendPath::kSegmented}) {
    if (name == SendPathName(p)) {
      *path = p;
      return true;
    }
  }
  return false;
}

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

std::string Endpoint::Address() const {
  char text[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET,
              &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof(text));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6,
              &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

std::string Endpoint::ToString() const {
  if (family() == AF_INET) return absl::StrFormat("%s:%d", Address(), port());
  if (family() == AF_INET6) {
    return absl::StrFormat("[%s]:%d", Address(), port());
  }
  return "(no address)";
}

bool Endpoint::IsMulticast() const {
  if (family() == AF_INET) {
    return IN_MULTICAST(
        ntohl(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr));
  }
  if (family() == AF_INET6) {
    return IN6_IS_ADDR_MULTICAST(
        &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
  }
  return false;
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
  Storage(std::size_t capacity, std::size_t slot_size, bool coalesced)
      : slot_bytes(slot_size),
        bytes(capacity * slot_size),
        iovecs(capacity),
        headers(capacity),
        peers(capacity),
        segmented(capacity),
        segmented_iovecs(capacity),
        segment_controls(capacity),
        segments_in(capacity),
        gro_controls(coalesced ? capacity : 0),
        segment_sizes(capacity, 0) {
    for (std::size_t i = 0; i < capacity; ++i) {
      iovecs[i].iov_base = bytes.data() + i * slot_size;
      iovecs[i].iov_len = slot_size;
      msghdr& h = headers[i].msg_hdr;
      h.msg_iov = &iovecs[i];
      h.msg_iovlen = 1;
      h.msg_name = &peers[i].storage;
      h.msg_namelen = sizeof(peers[i].storage);
    }
  }
  std::size_t slot_bytes;
  std::vector<std::byte> bytes;
  std::vector<iovec> iovecs;
  std::vector<mmsghdr> headers;
  std::vector<Endpoint> peers;
  // SendSegmented's messages: one per run, their iovecs (one per datagram,
  // pointing into `bytes`), control messages and datagram counts.
  std::vector<mmsghdr> segmented;
  std::vector<iovec> segmented_iovecs;
  std::vector<SegmentControl> segment_controls;
  std::vector<std::uint32_t> segments_in;
  // A Coalesced batch: each slot's UDP_GRO control message, and the
  // gso_size it carried (0: one datagram).
  std::vector<GroControl> gro_controls;
  std::vector<std::uint32_t> segment_sizes;
};

DatagramBatch::DatagramBatch(std::size_t capacity, Coalesced coalesced)
    : capacity_(capacity),
      slot_bytes_(coalesced == Coalesced::kYes ? kMaxCoalescedBytes
                                               : codec::kMaxDatagramSize),
      storage_(std::make_unique<Storage>(capacity, slot_bytes_,
                                         coalesced == Coalesced::kYes)) {}

DatagramBatch::~DatagramBatch() = default;

std::span<std::byte> DatagramBatch::buffer(std::size_t i) {
  return {storage_->bytes.data() + i * slot_bytes_, slot_bytes_};
}

std::span<const std::byte> DatagramBatch::datagram(std::size_t i) const {
  return {storage_->bytes.data() + i * slot_bytes_,
          storage_->headers[i].msg_len};
}

std::size_t DatagramBatch::segment_size(std::size_t i) const {
  return storage_->segment_sizes[i];
}

std::size_t DatagramBatch::SplitDatagrams(
    std::size_t i, std::span<std::span<const std::byte>> out,
    std::size_t used) const {
  const std::span<const std::byte> all = datagram(i);
  const std::size_t step = segment_size(i) == 0 ? all.size() : segment_size(i);
  if (all.empty() && used < out.size()) {
    out[used++] = all;  // an empty datagram is still one
    return used;
  }
  for (std::size_t at = 0; at < all.size() && used < out.size(); at += step) {
    out[used++] = all.subspan(at, std::min(step, all.size() - at));
  }
  return used;
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

UdpSocket::UdpSocket(UdpSocket&& other) noexcept
    : fd_(other.fd_), calls_(other.calls_) {
  other.fd_ = -1;
}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    calls_ = other.calls_;
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
  const bool coalesced = !s.gro_controls.empty();
  for (std::size_t i = 0; i < max; ++i) {
    s.iovecs[i].iov_len = s.slot_bytes;
    msghdr& h = s.headers[i].msg_hdr;
    h.msg_namelen = sizeof(s.peers[i].storage);
    h.msg_flags = 0;
    if (coalesced) {
      h.msg_control = s.gro_controls[i].bytes;
      h.msg_controllen = sizeof(s.gro_controls[i].bytes);
    }
  }
  // MSG_TRUNC in the flags reports datagrams longer than the buffer.
  const int n = ::recvmmsg(fd_, s.headers.data(), static_cast<unsigned>(max),
                           MSG_DONTWAIT, nullptr);
  if (n < 0) return -errno;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    s.peers[k].length = s.headers[k].msg_hdr.msg_namelen;
    s.segment_sizes[k] = 0;
    if (!coalesced) continue;
    msghdr& h = s.headers[k].msg_hdr;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
        int gso_size = 0;
        std::memcpy(&gso_size, CMSG_DATA(c), sizeof(gso_size));
        if (gso_size > 0)
          s.segment_sizes[k] = static_cast<std::uint32_t>(gso_size);
      }
    }
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
  const SocketCalls& calls = calls_ != nullptr ? *calls_ : kRealCalls;
  const int n = calls.sendmmsg(fd_, s.headers.data() + first,
                               static_cast<unsigned>(count), MSG_DONTWAIT);
  return n < 0 ? -errno : n;
}

bool UdpSocket::SupportsSegmentation(std::string* why) const {
  const SocketCalls& calls = calls_ != nullptr ? *calls_ : kRealCalls;
  int gso_size = 0;
  socklen_t length = sizeof(gso_size);
  if (calls.getsockopt(fd_, SOL_UDP, UDP_SEGMENT, &gso_size, &length) == 0) {
    return true;
  }
  if (why != nullptr) {
    *why = absl::StrFormat("getsockopt(UDP_SEGMENT): %s", ErrnoText(errno));
  }
  return false;
}

int UdpSocket::SendSegmented(DatagramBatch& batch,
                             std::span<const std::uint32_t> order,
                             std::size_t* messages) {
  if (messages != nullptr) *messages = 0;
  if (order.size() > batch.capacity()) order = order.first(batch.capacity());
  if (order.empty()) return 0;
  DatagramBatch::Storage& s = *batch.storage_;
  std::size_t message_count = 0;
  std::size_t i = 0;
  while (i < order.size()) {
    const std::uint32_t first = order[i];
    const Endpoint& peer = s.peers[first];
    const std::size_t gso_size = s.iovecs[first].iov_len;
    iovec* const iov = s.segmented_iovecs.data() + i;
    std::size_t segments = 0;
    std::size_t bytes = 0;
    // The run: same peer, each gso_size bytes; a shorter one ends it.
    while (i < order.size() && segments < kMaxSegmentsPerSend) {
      const std::uint32_t slot = order[i];
      const std::size_t length = s.iovecs[slot].iov_len;
      if (segments > 0 &&
          (length > gso_size || bytes + length > kMaxSegmentedBytes ||
           !(s.peers[slot] == peer))) {
        break;
      }
      iov[segments] = s.iovecs[slot];
      ++segments;
      bytes += length;
      ++i;
      if (length < gso_size) break;
    }
    mmsghdr& m = s.segmented[message_count];
    m.msg_len = 0;
    msghdr& h = m.msg_hdr;
    h.msg_name = const_cast<sockaddr_storage*>(&peer.storage);
    h.msg_namelen = peer.length;
    h.msg_iov = iov;
    h.msg_iovlen = segments;
    h.msg_flags = 0;
    if (segments > 1) {
      SegmentControl& control = s.segment_controls[message_count];
      h.msg_control = control.bytes;
      h.msg_controllen = sizeof(control.bytes);
      cmsghdr* const c = CMSG_FIRSTHDR(&h);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
      const auto size = static_cast<std::uint16_t>(gso_size);
      std::memcpy(CMSG_DATA(c), &size, sizeof(size));
    } else {
      h.msg_control = nullptr;
      h.msg_controllen = 0;
    }
    s.segments_in[message_count] = static_cast<std::uint32_t>(segments);
    ++message_count;
  }
  const SocketCalls& calls = calls_ != nullptr ? *calls_ : kRealCalls;
  const int n =
      calls.sendmmsg(fd_, s.segmented.data(),
                     static_cast<unsigned>(message_count), MSG_DONTWAIT);
  if (n < 0) return -errno;
  if (messages != nullptr) *messages = static_cast<std::size_t>(n);
  std::size_t sent = 0;
  for (int m = 0; m < n; ++m)
    sent += s.segments_in[static_cast<std::size_t>(m)];
  return static_cast<int>(sent);
}

void UdpSocket::set_calls_for_testing(const SocketCalls* calls) {
  calls_ = calls;
}

bool UdpSocket::EnableGro(std::string* why) {
  const int on = 1;
  if (::setsockopt(fd_, SOL_UDP, UDP_GRO, &on, sizeof(on)) == 0) return true;
  if (why != nullptr) {
    *why = absl::StrFormat("setsockopt(UDP_GRO): %s", ErrnoText(errno));
  }
  return false;
}

bool UdpSocket::WaitReadable(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace orderwire::net
