#include "service/feed_publisher.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/clock.h"

namespace orderwire::service {
namespace {

// sendmmsg takes at most UIO_MAXIOV entries a call.
constexpr std::size_t kMaxEntriesPerCall = 1024;

absl::Status SetOption(int fd, int level, int name, const void* value,
                       socklen_t size, std::string_view what) {
  if (::setsockopt(fd, level, name, value, size) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--md-%s: the kernel refused it: %s", what, std::strerror(errno)));
  }
  return absl::OkStatus();
}

void SleepNs(std::int64_t ns) {
  timespec ts{.tv_sec = ns / 1'000'000'000, .tv_nsec = ns % 1'000'000'000};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace

// The packets queued for one send, and the message headers that send each
// to every target (entry p * targets + t: packet p to target t).
struct FeedPublisher::Buffers {
  std::array<std::array<std::byte, feed::kMaxPacketBytes>, kFeedPacketsPerSend>
      packets{};
  std::array<iovec, kFeedPacketsPerSend> iov{};
  std::array<std::byte, feed::kPacketHeaderSize> control{};
  iovec control_iov{};
  std::vector<mmsghdr> entries;
};

absl::StatusOr<std::unique_ptr<FeedPublisher>> FeedPublisher::Open(
    FeedPublisherOptions options) {
  if (options.targets.empty()) {
    return absl::InvalidArgumentError("--md-target: no destination");
  }
  if (options.targets.size() > kMaxFeedTargets) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--md-target: %d destinations, at most %d",
                        options.targets.size(), kMaxFeedTargets));
  }
  const int family = options.targets.front().family();
  for (const net::Endpoint& target : options.targets) {
    if (target.family() != family) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--md-target: %s and %s are of different address families (one "
          "socket sends to all: give IPv4 or IPv6 destinations only)",
          options.targets.front().ToString(), target.ToString()));
    }
    if (target.IsMulticast() && options.targets.size() > 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--md-target: %s is a multicast group: give one group, or a list "
          "of unicast destinations",
          target.ToString()));
    }
    if (target.port() == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--md-target: %s has no port", target.ToString()));
    }
  }
  if (options.multicast_ttl < 0 || options.multicast_ttl > 255) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--md-ttl: %d is not 0 to 255", options.multicast_ttl));
  }
  absl::StatusOr<net::Endpoint> any =
      net::Endpoint::Parse(family == AF_INET ? "0.0.0.0:0" : "[::]:0");
  if (!any.ok()) return any.status();
  absl::StatusOr<net::UdpSocket> socket =
      net::UdpSocket::Bind(*any, net::UdpSocket::Options{
                                     .receive_buffer_bytes = 1 << 16,
                                     .send_buffer_bytes = 8 << 20,
                                     .non_blocking = true,
                                 });
  if (!socket.ok()) {
    return absl::Status(socket.status().code(),
                        absl::StrFormat("--md-target: the sending socket: %s",
                                        socket.status().message()));
  }
  std::unique_ptr<FeedPublisher> publisher(
      new FeedPublisher(std::move(options), *std::move(socket)));
  if (absl::Status s = publisher->ConfigureMulticast(); !s.ok()) return s;
  return publisher;
}

FeedPublisher::FeedPublisher(FeedPublisherOptions options,
                             net::UdpSocket socket)
    : options_(std::move(options)),
      socket_(std::move(socket)),
      buffers_(std::make_unique<Buffers>()) {
  const std::size_t targets = options_.targets.size();
  buffers_->entries.resize(kFeedPacketsPerSend * targets);
  for (std::size_t p = 0; p < kFeedPacketsPerSend; ++p) {
    buffers_->iov[p].iov_base = buffers_->packets[p].data();
    for (std::size_t t = 0; t < targets; ++t) {
      msghdr& header = buffers_->entries[p * targets + t].msg_hdr;
      header = msghdr{};
      // sendmmsg does not write the names or the iovecs it is given.
      header.msg_name = const_cast<sockaddr*>(options_.targets[t].addr());
      header.msg_namelen = options_.targets[t].length;
      header.msg_iov = &buffers_->iov[p];
      header.msg_iovlen = 1;
    }
  }
  buffers_->control_iov.iov_base = buffers_->control.data();
}

FeedPublisher::~FeedPublisher() = default;

absl::Status FeedPublisher::ConfigureMulticast() {
  const int fd = socket_.fd();
  const std::string& interface = options_.multicast_interface;
  if (options_.targets.front().family() == AF_INET) {
    const int ttl = options_.multicast_ttl;
    if (absl::Status s = SetOption(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl,
                                   sizeof(ttl), "ttl");
        !s.ok()) {
      return s;
    }
    if (interface.empty()) return absl::OkStatus();
    ip_mreqn request{};
    if (::inet_pton(AF_INET, interface.c_str(), &request.imr_address) != 1) {
      request.imr_ifindex =
          static_cast<int>(::if_nametoindex(interface.c_str()));
      if (request.imr_ifindex == 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "--md-interface: '%s' is neither an IPv4 address nor the name of "
            "an interface of this host",
            interface));
      }
    }
    return SetOption(fd, IPPROTO_IP, IP_MULTICAST_IF, &request, sizeof(request),
                     "interface");
  }
  const int hops = options_.multicast_ttl;
  if (absl::Status s = SetOption(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops,
                                 sizeof(hops), "ttl");
      !s.ok()) {
    return s;
  }
  if (interface.empty()) return absl::OkStatus();
  const auto index = static_cast<int>(::if_nametoindex(interface.c_str()));
  if (index == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--md-interface: '%s' is not the name of an interface of this host "
        "(IPv6 multicast takes a name)",
        interface));
  }
  return SetOption(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &index, sizeof(index),
                   "interface");
}

std::size_t FeedPublisher::unicast_targets() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(options_.targets.begin(), options_.targets.end(),
                    [](const net::Endpoint& t) { return !t.IsMulticast(); }));
}

std::string FeedPublisher::description() const {
  const net::Endpoint& first = options_.targets.front();
  if (options_.targets.size() == 1 && first.IsMulticast()) {
    return absl::StrFormat(
        "market data: multicast to %s, ttl %d, interface %s, heartbeat %d ms",
        first.ToString(), options_.multicast_ttl,
        options_.multicast_interface.empty() ? "by route"
                                             : options_.multicast_interface,
        options_.heartbeat_ns / 1'000'000);
  }
  std::vector<std::string> names;
  names.reserve(options_.targets.size());
  for (const net::Endpoint& target : options_.targets) {
    names.push_back(target.ToString());
  }
  return absl::StrFormat("market data: to %s, heartbeat %d ms",
                         absl::StrJoin(names, ", "),
                         options_.heartbeat_ns / 1'000'000);
}

void FeedPublisher::Start(std::uint64_t session, std::uint64_t next_sequence,
                          std::int64_t now_ns) {
  session_ = session;
  next_sequence_ = next_sequence;
  queued_ = 0;
  if (ring_ != nullptr) ring_->Reset(next_sequence);
  builder_.emplace(buffers_->packets[0]);
  builder_->BeginData(session_, next_sequence_);
  Heartbeat(now_ns);
}

void FeedPublisher::Add(std::span<const state::FeedMessage> messages) {
  for (const state::FeedMessage& message : messages) {
    if (message.sequence != next_sequence_) [[unlikely]] {
      // Never renumbered: a packet holds consecutive messages, so the
      // next one starts at the message's own number (a subscriber sees
      // the gap and asks). Only a bug makes this happen; it is counted.
      ++stats_.sequence_breaks;
      if (!builder_->empty()) ClosePacket();
      next_sequence_ = message.sequence;
      builder_->BeginData(session_, next_sequence_);
    }
    if (!builder_->FitsLength(message.bytes.size())) ClosePacket();
    // A message the state machine made always fits an empty packet and is
    // of a kind a Data packet carries (feed_producer.h); one that does not
    // is left out as a gap, never renumbered over.
    if (builder_->AppendMessage(message.bytes) != codec::CodecError::kOk)
        [[unlikely]] {
      ++stats_.sequence_breaks;
      if (!builder_->empty()) ClosePacket();
      builder_->BeginData(session_, next_sequence_ + 1);
    }
    ++next_sequence_;
  }
}

void FeedPublisher::ClosePacket() {
  const std::span<const std::byte> packet = builder_->Finish();
  if (!packet.empty()) {
    if (ring_ != nullptr) {
      ring_->Append(builder_->next_sequence() - builder_->count(),
                    builder_->count(), packet.subspan(feed::kPacketHeaderSize));
    }
    buffers_->iov[queued_].iov_len = packet.size();
    stats_.messages += builder_->count();
    ++stats_.packets;
    ++queued_;
    if (queued_ == kFeedPacketsPerSend) SendQueued(base::MonotonicNs());
  }
  builder_.emplace(buffers_->packets[queued_]);
  builder_->BeginData(session_, next_sequence_);
}

std::uint64_t FeedPublisher::Flush(std::int64_t now_ns,
                                   std::uint64_t answerable_ns) {
  if (!builder_.has_value()) return 0;
  if (!builder_->empty()) ClosePacket();
  if (queued_ == 0) return 0;
  SendQueued(now_ns);
  // The pass's records are whole and sent: the snapshot replica may
  // follow up to here.
  if (ring_ != nullptr) ring_->Commit();
  const std::uint64_t sent_ns = base::RealtimeNs();
  if (answerable_ns == 0) return 0;
  // A clock stepped back between the two reads counts as 0.
  return sent_ns > answerable_ns ? sent_ns - answerable_ns : 1;
}

void FeedPublisher::SendQueued(std::int64_t now_ns) {
  const std::size_t total = queued_ * options_.targets.size();
  std::size_t done = 0;
  while (done < total) {
    const std::size_t batch = std::min(total - done, kMaxEntriesPerCall);
    const int taken = ::sendmmsg(socket_.fd(), &buffers_->entries[done],
                                 static_cast<unsigned>(batch), 0);
    if (taken >= 0) {
      NoteSent(static_cast<std::size_t>(taken));
      done += static_cast<std::size_t>(taken);
      continue;
    }
    const int error = errno;
    if (error == EINTR) continue;
    // Lost, each counted (a subscriber asks for it again): with the socket
    // buffer full everything left of this send, else the one entry the
    // kernel refused (sendmmsg reports an entry's error once the entries
    // before it are taken).
    const std::size_t lost =
        error == EAGAIN || error == ENOBUFS ? total - done : 1;
    NoteFailures(lost, error);
    done += lost;
  }
  queued_ = 0;
  builder_.emplace(buffers_->packets[0]);
  builder_->BeginData(session_, next_sequence_);
  next_heartbeat_ns_ = now_ns + options_.heartbeat_ns;
}

void FeedPublisher::NoteSent(std::size_t datagrams) {
  stats_.datagrams += datagrams;
  if (datagrams > 0) failing_ = false;
}

void FeedPublisher::NoteFailures(std::size_t datagrams, int error) {
  stats_.send_failures += datagrams;
  if (failing_) return;
  failing_ = true;
  const std::string line = absl::StrFormat(
      "market data: the kernel did not take a packet (%s): lost packets are "
      "counted, subscribers ask for them again; said again only after a send "
      "succeeds",
      std::strerror(error));
  if (options_.on_event) {
    options_.on_event(line);
  } else {
    std::fprintf(stderr, "orderwire serve: %s\n", line.c_str());
  }
}

void FeedPublisher::SendControl(std::span<const std::byte> packet,
                                std::int64_t now_ns) {
  buffers_->control_iov.iov_len = packet.size();
  for (const net::Endpoint& target : options_.targets) {
    msghdr header{};
    header.msg_name = const_cast<sockaddr*>(target.addr());
    header.msg_namelen = target.length;
    header.msg_iov = &buffers_->control_iov;
    header.msg_iovlen = 1;
    ssize_t sent = 0;
    do {
      sent = ::sendmsg(socket_.fd(), &header, 0);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) {
      NoteFailures(1, errno);
    } else {
      NoteSent(1);
    }
  }
  next_heartbeat_ns_ = now_ns + options_.heartbeat_ns;
}

void FeedPublisher::Heartbeat(std::int64_t now_ns) {
  const codec::Result<std::size_t> size =
      feed::EncodeHeartbeat(buffers_->control, session_, next_sequence_);
  ++stats_.heartbeats;
  SendControl(std::span(buffers_->control).first(*size), now_ns);
}

void FeedPublisher::End() {
  if (!builder_.has_value()) return;  // never started: nothing was sent
  const std::int64_t now_ns = base::MonotonicNs();
  Flush(now_ns, 0);
  const codec::Result<std::size_t> size =
      feed::EncodeEndOfSession(buffers_->control, session_, next_sequence_);
  for (int i = 0; i < kEndOfSessionRepeats; ++i) {
    if (i > 0) SleepNs(kEndOfSessionGapNs);
    ++stats_.end_of_session;
    SendControl(std::span(buffers_->control).first(*size), base::MonotonicNs());
  }
}

}  // namespace orderwire::service
