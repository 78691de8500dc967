// orderwire::marketdata::FeedSocket: a thin UDP transport for a Subscriber
// (subscriber.h): one non-blocking socket that receives the feed (bound to
// a unicast port, or a member of a multicast group) and the request
// server's replies, and sends the subscriber's requests to the request
// server from that same socket (MARKETDATA.md "Retransmission": replies
// come back to the source address and port).
//
// Use: in the caller's loop, poll(2) fd() for input; Receive() hands every
// waiting datagram to the subscriber; the subscriber's listener calls
// Send() from SendRequest; Poll the subscriber for its timers.
//
// Errors: Open() returns InvalidArgument for an address that is not a
// numeric IPv4 or IPv6 one (or a group of the other family than the bind
// address), and the errno text of a socket call that fails (bind, join).
// Send() and Receive() return the errno of a failed call (EAGAIN is not
// one: nothing waiting; nor, to Receive, ECONNREFUSED: the ICMP answer to
// an earlier request, skipped); a request lost is asked again by the
// subscriber's timer. A datagram larger than the feed's largest packet is
// handed over at kMaxPacketBytes + 1 bytes, so that the subscriber counts it
// Oversize.
//
// Costs: Open() allocates; Send() and Receive() allocate nothing (one
// system call per datagram, into the socket's own buffer). Threading: one
// thread at a time; the socket is the caller's to poll.
#ifndef ORDERWIRE_MARKETDATA_FEED_SOCKET_H_
#define ORDERWIRE_MARKETDATA_FEED_SOCKET_H_

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "feed/packet.h"
#include "marketdata/subscriber.h"

namespace orderwire::marketdata {

struct FeedSocketOptions {
  // The local address and port the feed is sent to (port 0: any, as tests
  // use). Numeric IPv4 or IPv6; "0.0.0.0" or "::" for every interface.
  std::string bind_address = "0.0.0.0";
  std::uint16_t port = 0;
  // A multicast group to join (empty: unicast), of the bind address's
  // family; for IPv4, the interface's address ("": the kernel's choice);
  // for IPv6, the interface index (0: the kernel's choice).
  std::string multicast_group;
  std::string multicast_interface;
  unsigned multicast_interface_index = 0;
  // The request server (serve --md-request-listen), numeric, same family.
  std::string request_address = "127.0.0.1";
  std::uint16_t request_port = 0;
  // SO_RCVBUF: room for a burst of the feed while the caller is busy.
  int receive_buffer_bytes = 4 << 20;
};

class FeedSocket {
 public:
  [[nodiscard]] static absl::StatusOr<FeedSocket> Open(
      const FeedSocketOptions& options);

  FeedSocket(FeedSocket&& other) noexcept;
  FeedSocket& operator=(FeedSocket&& other) noexcept;
  FeedSocket(const FeedSocket&) = delete;
  FeedSocket& operator=(const FeedSocket&) = delete;
  ~FeedSocket();

  // The socket, for the caller's poll(2) or epoll (input).
  [[nodiscard]] int fd() const noexcept { return fd_; }
  // The port bound (the one chosen when options.port was 0).
  [[nodiscard]] std::uint16_t local_port() const noexcept {
    return local_port_;
  }

  // Sends one request to the request server. Errors: the errno of a
  // failed sendto (EAGAIN included: the request is dropped). No
  // allocation.
  absl::Status Send(std::span<const std::byte> request);
  // Hands every datagram waiting, at most `max`, to subscriber.OnPacket
  // with `now_ns`, and returns how many. Errors: the errno of a failed
  // receive (not EAGAIN, EINTR or ECONNREFUSED). No allocation.
  [[nodiscard]] absl::StatusOr<int> Receive(Subscriber& subscriber,
                                            std::int64_t now_ns, int max = 64);

 private:
  FeedSocket(int fd, const sockaddr_storage& server, socklen_t server_length,
             std::uint16_t local_port) noexcept
      : fd_(fd),
        server_(server),
        server_length_(server_length),
        local_port_(local_port) {}

  int fd_ = -1;
  sockaddr_storage server_{};
  socklen_t server_length_ = 0;
  std::uint16_t local_port_ = 0;
  // One byte more than the largest packet: a larger datagram stays larger.
  std::array<std::byte, feed::kMaxPacketBytes + 1> buffer_{};
};

}  // namespace orderwire::marketdata

#endif  // ORDERWIRE_MARKETDATA_FEED_SOCKET_H_
