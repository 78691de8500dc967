// marketdata::FeedSocket on loopback unicast: feed packets sent to its port
// reach the subscriber; the subscriber's requests reach the request
// server's address from the feed socket, and a reply sent back to their
// source is applied; an oversize datagram is counted Oversize; addresses
// that are not numeric, or of mixed families, are refused at Open.
#include "marketdata/feed_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/subscriber.h"
#include "tests/feed/golden.h"

namespace orderwire::marketdata::feed_socket_test {
namespace {

namespace golden = feed::golden;

// A plain loopback UDP socket: the publisher and the request server.
class PeerSocket {
 public:
  PeerSocket() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)), 0);
    socklen_t length = sizeof(local);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &length),
              0);
    port_ = ntohs(local.sin_port);
  }
  PeerSocket(const PeerSocket&) = delete;
  PeerSocket& operator=(const PeerSocket&) = delete;
  ~PeerSocket() { close(fd_); }

  [[nodiscard]] std::uint16_t port() const { return port_; }
  void SendTo(std::uint16_t port, std::span<const std::byte> bytes) const {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(port);
    EXPECT_EQ(sendto(fd_, bytes.data(), bytes.size(), 0,
                     reinterpret_cast<sockaddr*>(&to), sizeof(to)),
              static_cast<ssize_t>(bytes.size()));
  }
  // One datagram (waits up to a second) and its source port.
  std::vector<std::byte> Receive(std::uint16_t* from_port) const {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 1000) != 1) return {};
    std::vector<std::byte> out(2048);
    sockaddr_in from{};
    socklen_t length = sizeof(from);
    const ssize_t n = recvfrom(fd_, out.data(), out.size(), 0,
                               reinterpret_cast<sockaddr*>(&from), &length);
    out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    *from_port = ntohs(from.sin_port);
    return out;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// Sends the subscriber's requests through the feed socket.
class SocketListener : public SubscriberListener {
 public:
  void SendRequest(std::span<const std::byte> request) override {
    EXPECT_TRUE(socket->Send(request).ok());
  }
  FeedSocket* socket = nullptr;
};

// Receives until `want` datagrams were handed over (a second at most).
int ReceiveAll(FeedSocket& socket, Subscriber& subscriber, int want) {
  int got = 0;
  for (int i = 0; i < 100 && got < want; ++i) {
    pollfd p{socket.fd(), POLLIN, 0};
    (void)poll(&p, 1, 10);
    const auto n = socket.Receive(subscriber, 0);
    EXPECT_TRUE(n.ok()) << n.status();
    got += n.ok() ? *n : 0;
  }
  return got;
}

TEST(FeedSocket, CarriesTheFeedRequestsAndRepliesOnLoopback) {
  PeerSocket peer;
  FeedSocketOptions options;
  options.bind_address = "127.0.0.1";
  options.request_port = peer.port();
  absl::StatusOr<FeedSocket> socket = FeedSocket::Open(options);
  ASSERT_TRUE(socket.ok()) << socket.status();
  ASSERT_NE(socket->local_port(), 0);
  SocketListener listener;
  listener.socket = &*socket;
  SubscriberOptions sub_options;
  sub_options.first_sequence = 1;
  sub_options.first_token = 7;
  Subscriber subscriber(sub_options, listener);

  peer.SendTo(socket->local_port(), golden::FromHex(golden::kStartOfFeed.hex));
  peer.SendTo(socket->local_port(), golden::FromHex(golden::kHeartbeat.hex));
  ASSERT_EQ(ReceiveAll(*socket, subscriber, 2), 2);
  EXPECT_EQ(subscriber.next_sequence(), 5U);

  std::uint16_t from_port = 0;  // the request, from the feed socket
  const std::vector<std::byte> request = peer.Receive(&from_port);
  EXPECT_EQ(request, golden::FromHex(golden::kRetransmitRequest5.hex));
  EXPECT_EQ(from_port, socket->local_port());

  std::vector<std::byte> reply = golden::FromHex(golden::kExecutedAdded.hex);
  reply[22] = std::byte{0x07};
  peer.SendTo(from_port, reply);
  ASSERT_EQ(ReceiveAll(*socket, subscriber, 1), 1);
  EXPECT_EQ(subscriber.next_sequence(), 7U);
  EXPECT_EQ(subscriber.book().order_count(), 1U);

  peer.SendTo(socket->local_port(),
              std::vector<std::byte>(feed::kMaxPacketBytes + 100));
  ASSERT_EQ(ReceiveAll(*socket, subscriber, 1), 1);
  EXPECT_EQ(subscriber.counters().malformed_for(feed::CheckCause::kOversize),
            1U);
  const auto none = socket->Receive(subscriber, 0);  // nothing waiting
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
}

TEST(FeedSocket, JoinsAMulticastGroup) {
  FeedSocketOptions options;
  options.bind_address = "0.0.0.0";
  options.multicast_group = "239.255.42.99";
  options.multicast_interface = "127.0.0.1";
  absl::StatusOr<FeedSocket> socket = FeedSocket::Open(options);
  if (!socket.ok()) GTEST_SKIP() << "no multicast here: " << socket.status();
  // The publisher: to the group, out of loopback, looped back.
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  in_addr interface {};
  interface.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &interface,
                       sizeof(interface)),
            0);
  sockaddr_in group{};
  group.sin_family = AF_INET;
  group.sin_port = htons(socket->local_port());
  ASSERT_EQ(inet_pton(AF_INET, "239.255.42.99", &group.sin_addr), 1);
  const std::vector<std::byte> packet =
      golden::FromHex(golden::kStartOfFeed.hex);
  const ssize_t sent =
      sendto(fd, packet.data(), packet.size(), 0,
             reinterpret_cast<sockaddr*>(&group), sizeof(group));
  close(fd);
  if (sent < 0) GTEST_SKIP() << "cannot send to a group here";
  SocketListener listener;
  listener.socket = &*socket;
  SubscriberOptions sub_options;
  sub_options.first_sequence = 1;
  Subscriber subscriber(sub_options, listener);
  if (ReceiveAll(*socket, subscriber, 1) != 1) {
    GTEST_SKIP() << "multicast not looped back here";
  }
  EXPECT_EQ(subscriber.next_sequence(), 5U);
}

TEST(FeedSocket, RefusesAddressesThatAreNotNumericOrMixFamilies) {
  FeedSocketOptions options;
  options.bind_address = "localhost";
  EXPECT_TRUE(absl::IsInvalidArgument(FeedSocket::Open(options).status()));
  options.bind_address = "127.0.0.1";
  options.request_address = "::1";
  EXPECT_TRUE(absl::IsInvalidArgument(FeedSocket::Open(options).status()));
  options.request_address = "127.0.0.1";
  options.multicast_group = "not-a-group";
  EXPECT_TRUE(absl::IsInvalidArgument(FeedSocket::Open(options).status()));
}

TEST(FeedSocket, ABusyPortIsABindError) {
  FeedSocketOptions options;
  options.bind_address = "127.0.0.1";
  absl::StatusOr<FeedSocket> first = FeedSocket::Open(options);
  ASSERT_TRUE(first.ok()) << first.status();
  options.port = first->local_port();
  const absl::StatusOr<FeedSocket> second = FeedSocket::Open(options);
  EXPECT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("bind"), std::string::npos);
}

}  // namespace
}  // namespace orderwire::marketdata::feed_socket_test
