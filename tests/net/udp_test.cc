// The UDP transport (net/udp.h): endpoints, and batches of datagrams sent
// and received over loopback with sendmmsg/recvmmsg.
#include "net/udp.h"

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "codec/datagram.h"
#include "gtest/gtest.h"

namespace orderwire::net {
namespace {

TEST(Endpoint, ParsesIpv4Ipv6AndNames) {
  const auto v4 = Endpoint::Parse("127.0.0.1:7400");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->port(), 7400);
  EXPECT_EQ(v4->family(), AF_INET);
  EXPECT_EQ(v4->ToString(), "127.0.0.1:7400");
  const auto v6 = Endpoint::Parse("[::1]:9");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->family(), AF_INET6);
  EXPECT_EQ(v6->port(), 9);
  EXPECT_TRUE(*Endpoint::Parse("127.0.0.1:1") ==
              *Endpoint::Parse("127.0.0.1:1"));
  EXPECT_FALSE(*Endpoint::Parse("127.0.0.1:1") ==
               *Endpoint::Parse("127.0.0.1:2"));
}

TEST(Endpoint, RejectsWhatIsNotHostPort) {
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999",
                          "127.0.0.1:x", "[::1:7400"}) {
    EXPECT_FALSE(Endpoint::Parse(bad).ok()) << "'" << bad << "'";
  }
}

TEST(UdpSocket, SendsAndReceivesABatchOverLoopback) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const Endpoint to = *b->LocalEndpoint();
  const Endpoint from = *a->LocalEndpoint();

  constexpr std::size_t kCount = 8;
  DatagramBatch tx(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    const std::span<std::byte> buffer = tx.buffer(i);
    ASSERT_EQ(buffer.size(), codec::kMaxDatagramSize);
    std::memset(buffer.data(), static_cast<int>(i + 1), 10 + i);
    tx.set_length(i, 10 + i);
    tx.set_peer(i, to);
  }
  ASSERT_EQ(a->Send(tx, kCount), static_cast<int>(kCount));

  DatagramBatch rx(kCount);
  std::size_t received = 0;
  while (received < kCount) {
    ASSERT_TRUE(b->WaitReadable(1000)) << "only " << received << " arrived";
    const int n = b->Receive(rx, kCount);
    ASSERT_GT(n, 0);
    for (int k = 0; k < n; ++k, ++received) {
      const auto slot = static_cast<std::size_t>(k);
      ASSERT_EQ(rx.datagram(slot).size(), 10 + received);
      EXPECT_EQ(rx.datagram(slot)[0], static_cast<std::byte>(received + 1));
      EXPECT_FALSE(rx.truncated(slot));
      EXPECT_TRUE(rx.peer(slot) == from);
    }
  }
  // Nothing more: a non-blocking receive says so.
  EXPECT_EQ(b->Receive(rx, kCount), -EAGAIN);
}

TEST(UdpSocket, MarksADatagramLongerThanTheProtocolAllowsAsTruncated) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  const Endpoint to = *b->LocalEndpoint();
  std::byte big[codec::kMaxDatagramSize + 100] = {};
  ASSERT_EQ(sendto(a->fd(), big, sizeof(big), 0, to.addr(), to.length),
            static_cast<ssize_t>(sizeof(big)));
  DatagramBatch rx(1);
  ASSERT_TRUE(b->WaitReadable(1000));
  ASSERT_EQ(b->Receive(rx, 1), 1);
  EXPECT_TRUE(rx.truncated(0));
}

}  // namespace
}  // namespace orderwire::net
